/*
 * str.h — the one growable byte string of the code base (after Redis's sds and SQLite's
 * StrAccum, in our own form).
 *
 * A facet_str is a plain struct, zero-initialised to the empty string
 * (`facet_str s = {0};`). `data` is NUL-terminated whenever it is non-NULL (the NUL is
 * not counted in `len`), so `s.data` may be passed to C string functions once anything
 * was appended; an untouched string has data == NULL (use facet_str_cstr for "").
 *
 * Errors are sticky: an append that cannot allocate, or that would pass `limit` bytes
 * (0 = no limit), appends nothing, sets `failed` (FACET_STR_NOMEM or FACET_STR_OVER)
 * and returns -1; every later append also returns -1, so a writer may append many
 * pieces and check once at the end. Contents already appended stay valid.
 *
 * Growth doubles the capacity (amortised O(1) appends); sizes are checked against
 * overflow before any arithmetic. Ownership: the struct owns `data` (malloc'd); free it
 * with facet_str_free, or take it with facet_str_take.
 */
#ifndef FACET_UTIL_STR_H
#define FACET_UTIL_STR_H

#include <stdarg.h>
#include <stddef.h>

enum { FACET_STR_OK = 0, FACET_STR_NOMEM = 1, FACET_STR_OVER = 2 };

typedef struct facet_str {
    char *data;    /* NUL-terminated bytes, or NULL before the first append        */
    size_t len;    /* bytes, not counting the NUL                                   */
    size_t cap;    /* bytes allocated (including room for the NUL)                   */
    size_t limit;  /* most bytes `len` may reach; 0: no limit                       */
    int failed;    /* FACET_STR_OK, or the first failure (sticky)                   */
} facet_str;

/* Make room for `extra` more bytes (and the NUL). 0 ok, -1 failed (see above). */
int facet_str_reserve(facet_str *s, size_t extra);

/* Append n bytes of p (which may contain NULs). 0 ok, -1 failed. */
int facet_str_append(facet_str *s, const void *p, size_t n);

/* Append a NUL-terminated string. 0 ok, -1 failed. */
int facet_str_appendz(facet_str *s, const char *z);

/* Append one byte. 0 ok, -1 failed. */
int facet_str_putc(facet_str *s, char c);

/* Append printf-formatted text. 0 ok, -1 failed (also on an encoding error). */
int facet_str_appendf(facet_str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int facet_str_vappendf(facet_str *s, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Drop the bytes after the first n (n <= len); keeps the allocation and the error. */
void facet_str_truncate(facet_str *s, size_t n);

/* The contents as a C string: data, or "" when nothing was appended. */
const char *facet_str_cstr(const facet_str *s);

/* Hand the buffer to the caller (NUL-terminated; an allocated "" when empty, NULL when
 * even that cannot be allocated or the string failed) and reset s to empty, keeping
 * its limit. The caller frees the result with free(). */
char *facet_str_take(facet_str *s);

/* Free the buffer and reset s to empty (limit kept, error cleared). */
void facet_str_free(facet_str *s);

#endif
