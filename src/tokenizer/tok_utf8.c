/* tok_utf8.c — UTF-8 validation, decoding, Rust-compatible lossy conversion and the
 * character classes the `tokenizers` library takes from Rust's char methods. */
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tokenizer_internal.h"

size_t tok_utf8_seqlen(unsigned char c) {
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 1;
}

/* Length of the valid sequence at s[i], 0 when invalid; *partial gets the length of
 * the maximal valid prefix of an invalid/truncated sequence (the Unicode "maximal
 * subpart", at least 1). */
static size_t valid_at_t(const unsigned char *s, size_t len, size_t i, size_t *partial, int *truncated) {
    unsigned char c = s[i];
    *partial = 1;
    *truncated = 0;
    if (c < 0x80) return 1;
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c == 0xE0) need = 2, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) need = 2;
    else if (c == 0xED) need = 2, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF) need = 2;
    else if (c == 0xF0) need = 3, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) need = 3;
    else if (c == 0xF4) need = 3, hi = 0x8F;
    else return 0;
    for (size_t k = 1; k <= need; k++) {
        if (i + k >= len) {
            *truncated = 1;
            return 0;
        }
        unsigned char d = s[i + k];
        if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) return 0;
        *partial = k + 1;
    }
    return need + 1;
}

static size_t valid_at(const unsigned char *s, size_t len, size_t i, size_t *partial) {
    int t;
    return valid_at_t(s, len, i, partial, &t);
}

size_t tok_utf8_invalid_at(const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, partial;
    while (i < len) {
        if (u[i] < 0x80) { i++; continue; }
        size_t n = valid_at(u, len, i, &partial);
        if (!n) return i;
        i += n;
    }
    return len;
}

int32_t tok_utf8_decode(const char *s, size_t len, size_t i, size_t *n) {
    const unsigned char *u = (const unsigned char *)s;
    unsigned char c = u[i];
    if (c < 0x80 || i + 1 >= len) { *n = 1; return c; }
    if (c < 0xE0) { *n = 2; return ((c & 0x1F) << 6) | (u[i + 1] & 0x3F); }
    if (c < 0xF0) {
        if (i + 2 >= len) { *n = 1; return c; }
        *n = 3;
        return ((c & 0x0F) << 12) | ((u[i + 1] & 0x3F) << 6) | (u[i + 2] & 0x3F);
    }
    if (i + 3 >= len) { *n = 1; return c; }
    *n = 4;
    return ((c & 0x07) << 18) | ((u[i + 1] & 0x3F) << 12) | ((u[i + 2] & 0x3F) << 6) | (u[i + 3] & 0x3F);
}

size_t tok_utf8_encode(int32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) { o[0] = 0xC0 | (cp >> 6); o[1] = 0x80 | (cp & 0x3F); return 2; }
    if (cp < 0x10000) {
        o[0] = 0xE0 | (cp >> 12); o[1] = 0x80 | ((cp >> 6) & 0x3F); o[2] = 0x80 | (cp & 0x3F);
        return 3;
    }
    o[0] = 0xF0 | (cp >> 18); o[1] = 0x80 | ((cp >> 12) & 0x3F);
    o[2] = 0x80 | ((cp >> 6) & 0x3F); o[3] = 0x80 | (cp & 0x3F);
    return 4;
}

int tok_utf8_lossy_append(facet_str *out, const unsigned char *s, size_t len) {
    size_t i = 0, run = 0, partial;
    if (facet_str_reserve(out, len)) return -1;
    while (i < len) {
        if (s[i] < 0x80) { i++; continue; }
        size_t n = valid_at(s, len, i, &partial);
        if (n) { i += n; continue; }
        if (facet_str_append(out, s + run, i - run)) return -1;
        if (facet_str_append(out, "\xEF\xBF\xBD", 3)) return -1;
        i += partial;
        run = i;
    }
    return facet_str_append(out, s + run, len - run);
}

size_t tok_utf8_lossy_decided(facet_str *out, const unsigned char *s, size_t len) {
    size_t i = 0, run = 0, partial;
    int truncated;
    while (i < len) {
        if (s[i] < 0x80) { i++; continue; }
        size_t n = valid_at_t(s, len, i, &partial, &truncated);
        if (n) { i += n; continue; }
        if (truncated) break; /* a valid start cut short by the end: undecided */
        if (facet_str_append(out, s + run, i - run) || facet_str_append(out, "\xEF\xBF\xBD", 3)) return (size_t)-1;
        i += partial;
        run = i;
    }
    if (facet_str_append(out, s + run, i - run)) return (size_t)-1;
    return i;
}

int tok_is_whitespace(int32_t cp) {
    if (cp >= 0x09 && cp <= 0x0D) return 1;
    switch (cp) {
    case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F:
    case 0x205F: case 0x3000:
        return 1;
    default: return cp >= 0x2000 && cp <= 0x200A;
    }
}

int tok_is_punctuation(int32_t cp) {
    if (cp < 0x80)
        return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
               (cp >= 123 && cp <= 126);
    utf8proc_category_t c = utf8proc_category(cp);
    return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}
