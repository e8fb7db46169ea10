/* grammar_internal.h — the compiled form of a facet_grammar, shared by the parser
 * (gbnf_parse.c), the matcher (matcher.c) and the token masker (token_mask.c).
 *
 * Every rule is a list of alternatives; every alternative a sequence of elements ending
 * with GRAM_END, all stored in one array `elems`. Repetitions and groups were rewritten
 * into generated rules by the parser, so an element is only a character class or a
 * reference to a rule. */
#ifndef FACET_GRAMMAR_INTERNAL_H
#define FACET_GRAMMAR_INTERNAL_H

#include <stdint.h>

#include "facet_grammar.h"
#include "util/str.h"
#include "util/vec.h"

enum { GRAM_END = 0, GRAM_CHAR = 1, GRAM_REF = 2 };

typedef struct gram_elem {
    int32_t type; /* GRAM_END, GRAM_CHAR, GRAM_REF                           */
    int32_t arg;  /* GRAM_CHAR: index into classes; GRAM_REF: rule index      */
} gram_elem;

typedef struct gram_range {
    uint32_t lo, hi; /* code points, inclusive */
} gram_range;

typedef struct gram_class {
    int32_t first, n; /* ranges[first .. first + n)                           */
    int32_t negated;  /* matches the code points outside the ranges           */
} gram_class;

typedef struct gram_rule {
    int32_t first_alt, n_alts; /* alt_start[first_alt .. first_alt + n_alts)  */
} gram_rule;

struct facet_grammar {
    FACET_VEC(gram_elem) elems;
    FACET_VEC(gram_range) ranges;
    FACET_VEC(gram_class) classes;
    FACET_VEC(int32_t) alt_start; /* index in elems of each alternative's first element */
    FACET_VEC(gram_rule) rules;
    int32_t root;
};

/* Append to out the rules of a JSON schema as one rule `name` (its helper rules named
 * NAME-rN), without the shared JSON rules (ws, json-string, json-value, ...) of
 * facet_grammar_json_base_gbnf, which the caller appends once: several schemas in one
 * grammar (the tool calls of a request). Errors: as facet_json_schema_to_gbnf. */
facet_status facet_json_schema_gbnf_rule(const char *schema, size_t len, const char *name,
                                         facet_str *out, facet_error *err);
const char *facet_grammar_json_base_gbnf(void);

/* 1 when class c of g matches code point cp. */
int gram_class_match(const facet_grammar *g, int32_t c, uint32_t cp);

/* 1 when class c of g matches some code point in [lo, hi]. */
int gram_class_overlaps(const facet_grammar *g, int32_t c, uint32_t lo, uint32_t hi);

#endif

/* ---- the matcher (matcher.c) ---------------------------------------------------------
 * A stack is a chain of nodes (pos, parent): pos indexes elems (the next element to
 * match at that level), node 0 is the empty stack (the grammar is complete). Nodes are
 * hash-consed, so equal stacks have equal ids and a set of stacks is a sorted id list.
 * Every stack in a set has a GRAM_CHAR at its top, or is node 0. */
typedef struct gram_node {
    int32_t pos, parent;
} gram_node;

typedef FACET_VEC(int32_t) gram_set;

/* A point in the text: the set, and a code point begun but not finished. */
typedef struct gram_state {
    gram_set set;
    uint32_t pv;  /* bits of the partial code point so far                      */
    int32_t prem; /* continuation bytes still expected (0: none pending)         */
    int32_t plen; /* the pending character's whole length in bytes (2..4)        */
} gram_state;

typedef struct gram_mask_cache gram_mask_cache;

struct facet_grammar_matcher {
    const facet_grammar *g;
    FACET_VEC(gram_node) nodes;
    int32_t *tab;     /* open-addressed hash of nodes: node id or -1        */
    size_t tab_cap;   /* power of two                                       */
    gram_state cur;   /* the committed state                                */
    gram_state *lvl;  /* scratch states, one per byte depth of a token      */
    size_t n_lvl;
    gram_mask_cache *cache; /* token_mask.c                                  */
    uint32_t work;    /* stack expansions of the current step (GRAM_MAX_WORK) */
};

/* At most this many stack expansions for one code point: an ambiguous grammar (say
 * `root ::= [a-z] root* [a-z]* root*`) multiplies its parse stacks with every byte, so a
 * step past the bound fails (-1) instead of running for minutes on hostile input. */
#define GRAM_MAX_WORK 65536u

/* Advance state `in` over byte b into `out` (out's set is overwritten). Returns 1 alive,
 * 0 dead (no stack accepts it), -1 out of memory. */
int gram_step_byte(facet_grammar_matcher *m, const gram_state *in, uint8_t b, gram_state *out);

/* Copy a state (0 ok, -1 out of memory). */
int gram_state_copy(gram_state *dst, const gram_state *src);

/* The scratch state for depth d, allocated on demand (NULL out of memory). */
gram_state *gram_level(facet_grammar_matcher *m, size_t d);

/* Drop the nodes no committed stack uses, when the arena passed its bound (which also
 * invalidates the mask cache: token_mask.c's gram_cache_clear). */
int gram_maybe_compact(facet_grammar_matcher *m);

void gram_cache_free(gram_mask_cache *c);
void gram_cache_clear(gram_mask_cache *c);
