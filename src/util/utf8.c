/* utf8.c — UTF-8 validation. */
#include "util/utf8.h"

#include <stdint.h>

/* Length of the valid sequence starting at s[i], or 0 if invalid/truncated. */
static size_t seq_len(const unsigned char *s, size_t i, size_t len) {
    unsigned c = s[i];
    if (c < 0x80) return 1;
    size_t n;
    uint32_t cp, min;
    if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if (i + n > len) return 0;
    for (size_t k = 1; k < n; k++) {
        if ((s[i + k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

size_t facet_utf8_validate(const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        size_t n = seq_len(s, i, len);
        if (!n) return i;
        i += n;
    }
    return len;
}

size_t facet_utf8_incomplete_tail(const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned c = s[len - back];
        if ((c & 0xC0) == 0x80) continue; /* continuation: keep looking for the lead */
        size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
        return need > back ? back : 0;
    }
    return 0;
}
