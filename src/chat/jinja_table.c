/*
 * jinja_table.c — lookup in the interpreter's name tables (filters, tests, methods):
 * arrays of rows whose first member is the name (const char *), sorted by strcmp so a
 * name is found by binary search, and each row's list of accepted keyword arguments.
 */
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"

static int by_name(const void *key, const void *row) { return strcmp((const char *)key, *(const char *const *)row); }

const void *jx_table_find(const void *rows, size_t n, size_t row_size, const char *name) {
    return bsearch(name, rows, n, row_size, by_name);
}

int jx_table_sorted(const void *rows, size_t n, size_t row_size) {
    const char *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *name = *(const char *const *)((const char *)rows + i * row_size);
        if (prev && strcmp(prev, name) >= 0) return 0;
        prev = name;
    }
    return 1;
}

const char *jx_unexpected_kw(const char *const *accepted, char *const *kwn, size_t nkw) {
    if (!accepted) return NULL;
    for (size_t k = 0; k < nkw; k++) {
        int ok = 0;
        for (size_t i = 0; accepted[i] && !ok; i++) ok = !strcmp(accepted[i], kwn[k]);
        if (!ok) return kwn[k];
    }
    return NULL;
}

jv *jx_arg(const jargs *f, size_t i, const char *name) {
    if (i < f->n) return &f->a[i];
    for (size_t k = 0; name && k < f->nkw; k++)
        if (!strcmp(f->kwn[k], name)) return &f->kwv[k];
    return NULL;
}
