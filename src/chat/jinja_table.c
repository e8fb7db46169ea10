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

int jx_check_kw(jctx *cx, const jnode *at, const char *const *accepted, const jargs *f, const char *name,
                const char *suffix) {
    for (size_t k = 0; accepted && k < f->nkw; k++) {
        int ok = 0;
        for (size_t i = 0; accepted[i] && !ok; i++) ok = !strcmp(accepted[i], f->kwn[k]);
        if (!ok)
            return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: %s%s got an unexpected keyword argument '%s'", name,
                           suffix, f->kwn[k]);
    }
    return 0;
}

jv *jx_arg(const jargs *f, size_t i, const char *name) {
    if (i < f->n) return &f->a[i];
    for (size_t k = 0; name && k < f->nkw; k++)
        if (!strcmp(f->kwn[k], name)) return &f->kwv[k];
    return NULL;
}
