/*
 * verdict_rows.h — the per-fact rows of the judge (verdict.c), shared with the table
 * printer (table_print.c) so printed ranges and judged ranges are one code path.
 */
#ifndef FACET_MODEL_VERDICT_ROWS_H
#define FACET_MODEL_VERDICT_ROWS_H

#include <stddef.h>

#include "model/table_internal.h"

typedef struct facet_row {
    const char *fact;   /* the fact's name as refusals print it                        */
    int probed;         /* 1: decided by the tensor probe (pending on a bare config)    */
    /* 1 when f's value is inside c's range; writes the value text into v */
    int (*check)(const facet_facts *f, const facet_caps *c, char *v, size_t n);
    /* writes c's supported range (f may be NULL: the generic form) */
    void (*range)(const facet_caps *c, const facet_facts *f, char *b, size_t n);
} facet_row;

extern const facet_row facet_rows[];
extern const int facet_n_rows;

/* The rule classifying config key `key`, or NULL when the table does not list it. */
const facet_key_rule *facet_key_rule_find(const char *key);

/* Nonzero when an unlisted key's name contains a math word (facet_math_words). */
int facet_key_is_suspect(const char *key);

#endif
