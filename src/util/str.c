/* str.c — the growable byte string (str.h). */
#include "util/str.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int facet_str_reserve(facet_str *s, size_t extra) {
    if (s->failed) return -1;
    if (extra > SIZE_MAX - 1 - s->len) {
        s->failed = FACET_STR_NOMEM;
        return -1;
    }
    if (s->limit && s->len + extra > s->limit) {
        s->failed = FACET_STR_OVER;
        return -1;
    }
    size_t need = s->len + extra + 1;
    if (need <= s->cap) return 0;
    size_t cap = s->cap ? s->cap : 32;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(s->data, cap);
    if (!p) {
        s->failed = FACET_STR_NOMEM;
        return -1;
    }
    if (!s->data) p[0] = '\0';
    s->data = p;
    s->cap = cap;
    return 0;
}

int facet_str_append(facet_str *s, const void *p, size_t n) {
    if (facet_str_reserve(s, n)) return -1;
    if (n) memcpy(s->data + s->len, p, n);
    s->len += n;
    s->data[s->len] = '\0';
    return 0;
}

int facet_str_appendz(facet_str *s, const char *z) { return facet_str_append(s, z, strlen(z)); }

int facet_str_putc(facet_str *s, char c) { return facet_str_append(s, &c, 1); }

int facet_str_vappendf(facet_str *s, const char *fmt, va_list ap) {
    if (s->failed) return -1;
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        s->failed = FACET_STR_NOMEM;
        return -1;
    }
    if ((size_t)n < sizeof small) return facet_str_append(s, small, (size_t)n);
    if (facet_str_reserve(s, (size_t)n)) return -1;
    vsnprintf(s->data + s->len, (size_t)n + 1, fmt, ap);
    s->len += (size_t)n;
    return 0;
}

int facet_str_appendf(facet_str *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = facet_str_vappendf(s, fmt, ap);
    va_end(ap);
    return rc;
}

void facet_str_truncate(facet_str *s, size_t n) {
    if (n >= s->len) return;
    s->len = n;
    s->data[n] = '\0';
}

const char *facet_str_cstr(const facet_str *s) { return s->data ? s->data : ""; }

char *facet_str_take(facet_str *s) {
    char *p = s->failed ? NULL : s->data;
    if (s->failed) free(s->data);
    else if (!p) p = calloc(1, 1);
    size_t limit = s->limit;
    memset(s, 0, sizeof *s);
    s->limit = limit;
    return p;
}

void facet_str_free(facet_str *s) {
    free(s->data);
    size_t limit = s->limit;
    memset(s, 0, sizeof *s);
    s->limit = limit;
}
