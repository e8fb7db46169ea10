/*
 * Allocation failure in constrained decoding (alloc_fail.h, facet_grammar.h): a JSON
 * schema compiled to GBNF and parsed; then, with that grammar, a matcher created, fed a
 * document, and the token mask of the bundled stories260k vocabulary computed at each
 * of its steps (the vocabulary's trie built in the same run).
 *
 * Every failed run must return FACET_E_NOMEM (or -1 where the API returns a count) with
 * nothing to free (the sweep runs under the sanitizer build too), and the run without a
 * failure gives the output of a run that never failed: the same GBNF text, and the same
 * number of allowed tokens at each step. Exhaustive: every n up to the first run
 * without a failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc_fail.h"
#include "facet_grammar.h"
#include "facet_tokenizer.h"

#define MODEL_DIR FACET_SOURCE_DIR "/models/stories260k"

static const char k_schema[] =
    "{\"$defs\":{\"p\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\"}},"
    "\"required\":[\"x\"]}},\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\","
    "\"maxLength\":4},\"b\":{\"enum\":[\"one\",2]},\"c\":{\"$ref\":\"#/$defs/p\"},"
    "\"d\":{\"type\":\"array\",\"items\":{\"type\":\"boolean\"}}},\"required\":[\"a\"]}";
static const char *const k_doc[] = {"{\"a\":", "\"hi\",", " \"b\": 2, \"c\": {\"x\": -12},",
                                    " \"d\": [true]}"};

typedef struct {
    facet_tokenizer *tok;
    char *gbnf_want;
    int counts[8], counts_want[8];
    int n_counts;
} ctx;

static int op(void *p) {
    ctx *c = p;
    facet_error err = {0};
    char *gbnf = NULL;
    facet_grammar *g = NULL;
    facet_grammar_vocab *v = NULL;
    facet_grammar_matcher *m = NULL;
    uint8_t *allowed = NULL;
    c->n_counts = 0;
    facet_status st = facet_json_schema_to_gbnf(k_schema, strlen(k_schema), &gbnf, &err);
    if (st == FACET_OK) {
        if (c->gbnf_want) assert_string_equal(gbnf, c->gbnf_want);
        st = facet_grammar_parse(gbnf, strlen(gbnf), &g, &err);
    }
    int n_vocab = facet_tokenizer_vocab_size(c->tok);
    if (st == FACET_OK) st = facet_grammar_vocab_create(c->tok, n_vocab, &v, &err);
    if (st == FACET_OK) st = facet_grammar_matcher_create(g, &m, &err);
    if (st == FACET_OK && !(allowed = malloc((size_t)n_vocab))) st = FACET_E_NOMEM;
    for (int i = 0; i < 4 && st == FACET_OK; i++) {
        int n = facet_grammar_matcher_mask(m, v, NULL, 0, allowed);
        if (n < 0) {
            st = FACET_E_NOMEM;
            break;
        }
        c->counts[c->n_counts++] = n;
        int rc = facet_grammar_matcher_accept(m, k_doc[i], strlen(k_doc[i]));
        if (rc < 0) st = FACET_E_NOMEM;
        else assert_int_equal(rc, 1);
    }
    if (st == FACET_OK) assert_true(facet_grammar_matcher_finished(m));
    free(allowed);
    facet_grammar_matcher_free(m);
    facet_grammar_vocab_free(v);
    facet_grammar_free(g);
    free(gbnf);
    return st;
}

static void check(void *p, long n, int status) {
    ctx *c = p;
    if (n > 0) {
        if (status != FACET_E_NOMEM)
            fail_msg("allocation %ld failed: %s, expected FACET_E_NOMEM", n,
                     facet_status_name(status));
        return;
    }
    assert_int_equal(status, FACET_OK);
    assert_int_equal(c->n_counts, 4);
    for (int i = 0; i < 4; i++) assert_int_equal(c->counts[i], c->counts_want[i]);
}

static void test_grammar_nomem(void **state) {
    (void)state;
    ctx c = {0};
    assert_int_equal(facet_tokenizer_load(MODEL_DIR, &c.tok, NULL), FACET_OK);
    assert_int_equal(op(&c), FACET_OK); /* the outputs of a run that never failed */
    memcpy(c.counts_want, c.counts, sizeof c.counts);
    assert_int_equal(facet_json_schema_to_gbnf(k_schema, strlen(k_schema), &c.gbnf_want, NULL),
                     FACET_OK);
    long runs = alloc_fail_sweep(op, check, &c, 0, 1);
    print_message("schema + grammar + trie + 4 masks: %ld runs\n", runs);
    free(c.gbnf_want);
    facet_tokenizer_free(c.tok);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_grammar_nomem)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
