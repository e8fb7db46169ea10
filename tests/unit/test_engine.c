/*
 * test_engine.c — the bundled stories260k model reproduces its published greedy ids
 * (tests/data/stories260k/expected.json, from two independent float64 references and
 * llama2.c's own expectation), and the session API keeps its promises: batched decode
 * equals decoding alone, context overflow is a typed error that changes nothing.
 */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "facet.h"

#define MODEL_DIR FACET_SOURCE_DIR "/models/stories260k"
#define EXPECTED FACET_TEST_DATA "/stories260k/expected.json"

static facet_model *model;
static json_t *expected;

static int setup(void **state) {
    (void)state;
    facet_error err = {0};
    facet_load_options lo = {.n_threads = 2};
    if (facet_model_load(MODEL_DIR, &lo, &model, &err) != FACET_OK) {
        fprintf(stderr, "load: %s\n", err.message);
        return -1;
    }
    json_error_t je;
    expected = json_load_file(EXPECTED, 0, &je);
    return expected ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    facet_model_free(model);
    json_decref(expected);
    return 0;
}

static int32_t *ids_of(const json_t *arr, size_t *n) {
    *n = json_array_size(arr);
    int32_t *ids = malloc(*n * sizeof *ids);
    for (size_t i = 0; i < *n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(arr, i));
    return ids;
}

/* KV cache type of the sessions greedy() creates (the batched tests set it). */
static facet_kv_type g_kv = FACET_KV_AUTO;

/* Greedy-generate n_new ids after prompt into out. */
static void greedy(const int32_t *prompt, size_t n_prompt, int n_new, int32_t *out) {
    facet_error err = {0};
    facet_session *s;
    facet_session_options so = {.n_seq_max = 1, .kv_type = g_kv};
    assert_int_equal(facet_session_create(model, &so, &s, &err), FACET_OK);
    float logits[512];
    assert_int_equal(facet_prefill(s, 0, prompt, n_prompt, logits, &err), FACET_OK);
    int32_t seq = 0;
    for (int i = 0; i < n_new; i++) {
        out[i] = facet_sample_greedy(logits, 512);
        assert_int_equal(facet_decode(s, 1, &seq, &out[i], logits, &err), FACET_OK);
    }
    facet_session_free(s);
}

static void test_greedy_from_bos(void **state) {
    (void)state;
    json_t *g = json_object_get(expected, "greedy_from_bos");
    size_t n_in, n_exp;
    int32_t *in = ids_of(json_object_get(g, "input_ids"), &n_in);
    int32_t *exp = ids_of(json_object_get(g, "generated_ids"), &n_exp);
    assert_int_equal(n_exp, 200);
    int32_t got[200];
    greedy(in, n_in, 200, got);
    for (size_t i = 0; i < n_exp; i++) {
        if (got[i] != exp[i]) fail_msg("step %zu: got %d, expected %d", i, got[i], exp[i]);
    }
    free(in);
    free(exp);
}

static void test_greedy_prompts(void **state) {
    (void)state;
    json_t *prompts = json_object_get(expected, "prompts");
    assert_true(json_array_size(prompts) >= 2);
    size_t i;
    json_t *p;
    json_array_foreach(prompts, i, p) {
        size_t n_in, n_exp;
        int32_t *in = ids_of(json_object_get(p, "prompt_ids"), &n_in);
        int32_t *exp = ids_of(json_object_get(p, "generated_ids"), &n_exp);
        int32_t *got = malloc(n_exp * sizeof *got);
        greedy(in, n_in, (int)n_exp, got);
        for (size_t k = 0; k < n_exp; k++)
            if (got[k] != exp[k])
                fail_msg("prompt %zu step %zu: got %d, expected %d", i, k, got[k], exp[k]);
        free(in);
        free(exp);
        free(got);
    }
}

/* The first generated position's top-5 logits match the float64 reference. */
static void test_first_logits(void **state) {
    (void)state;
    json_t *g = json_object_get(expected, "greedy_from_bos");
    json_t *top5 = json_object_get(g, "top5_first");
    facet_error err = {0};
    facet_session *s;
    assert_int_equal(facet_session_create(model, NULL, &s, &err), FACET_OK);
    float logits[512];
    int32_t bos = 1;
    assert_int_equal(facet_prefill(s, 0, &bos, 1, logits, &err), FACET_OK);
    size_t i;
    json_t *e;
    json_array_foreach(top5, i, e) {
        int id = (int)json_integer_value(json_array_get(e, 0));
        double ref = json_real_value(json_array_get(e, 1));
        assert_true(fabs(logits[id] - ref) < 1e-4 * fabs(ref));
    }
    facet_session_free(s);
}

/* Three sequences decoded in one batch give the same ids as each decoded alone, with
 * the KV cache type g_kv. */
static void batched_matches_alone(void) {
    json_t *prompts = json_object_get(expected, "prompts");
    enum { NSEQ = 3, STEPS = 40 };
    facet_error err = {0};
    facet_session *s;
    facet_session_options so = {.n_seq_max = NSEQ, .kv_type = g_kv};
    assert_int_equal(facet_session_create(model, &so, &s, &err), FACET_OK);
    assert_int_equal(facet_session_kv_type(s), g_kv == FACET_KV_AUTO ? FACET_KV_F32 : g_kv);
    float logits[NSEQ * 512];
    int32_t next[NSEQ], seqs[NSEQ];
    int32_t batched[NSEQ][STEPS], alone[NSEQ][STEPS];
    for (int q = 0; q < NSEQ; q++) {
        size_t n_in;
        /* sequence 2 repeats prompt 0 at a different slot: slots must not interact */
        int32_t *in = ids_of(json_object_get(json_array_get(prompts, q % 2), "prompt_ids"), &n_in);
        assert_int_equal(facet_prefill(s, q, in, n_in, logits + q * 512, &err), FACET_OK);
        next[q] = facet_sample_greedy(logits + q * 512, 512);
        seqs[q] = q;
        greedy(in, n_in, STEPS, alone[q]);
        free(in);
    }
    for (int t = 0; t < STEPS; t++) {
        for (int q = 0; q < NSEQ; q++) batched[q][t] = next[q];
        assert_int_equal(facet_decode(s, NSEQ, seqs, next, logits, &err), FACET_OK);
        for (int q = 0; q < NSEQ; q++) next[q] = facet_sample_greedy(logits + q * 512, 512);
    }
    for (int q = 0; q < NSEQ; q++)
        for (int t = 0; t < STEPS; t++) assert_int_equal(batched[q][t], alone[q][t]);
    facet_session_free(s);
}

static void test_batched_decode_matches_alone(void **state) {
    (void)state;
    g_kv = FACET_KV_AUTO; /* f32 weights: an f32 cache */
    batched_matches_alone();
}

/* 16-bit caches: batch invariance holds too; the ids agree with the published ones
 * up to the first step whose float64 top-2 margin is small (the bundled model's smallest
 * margins are in expected.json), and an unknown type is refused. */
static void test_kv_cache_16bit(void **state) {
    (void)state;
    static const facet_kv_type types[] = {FACET_KV_BF16, FACET_KV_F16};
    for (int k = 0; k < 2; k++) {
        g_kv = types[k];
        batched_matches_alone();
        json_t *g = json_object_get(expected, "greedy_from_bos");
        size_t n_in, n_exp;
        int32_t *in = ids_of(json_object_get(g, "input_ids"), &n_in);
        int32_t *exp = ids_of(json_object_get(g, "generated_ids"), &n_exp);
        int32_t got[32];
        greedy(in, n_in, 32, got);
        for (int i = 0; i < 32; i++)
            if (got[i] != exp[i])
                fail_msg("kv %s step %d: got %d, expected %d", facet_kv_type_name(g_kv), i, got[i],
                         exp[i]);
        free(in);
        free(exp);
    }
    g_kv = FACET_KV_AUTO;
    facet_error err = {0};
    facet_session *s = NULL;
    facet_session_options so = {.n_seq_max = 1, .kv_type = (facet_kv_type)9};
    assert_int_equal(facet_session_create(model, &so, &s, &err), FACET_E_INVALID_ARGUMENT);
    assert_null(s);
    assert_non_null(strstr(err.message, "kv_type=9"));
}

/* Going past the context is FACET_E_CONTEXT and leaves the sequence unchanged. */
static void test_context_overflow(void **state) {
    (void)state;
    facet_error err = {0};
    facet_session *s;
    facet_session_options so = {.n_seq_max = 1, .n_ctx = 8};
    assert_int_equal(facet_session_create(model, &so, &s, &err), FACET_OK);
    int32_t ids[9] = {1, 403, 407, 261, 378, 432, 383, 286, 261};
    assert_int_equal(facet_prefill(s, 0, ids, 9, NULL, &err), FACET_E_CONTEXT);
    assert_non_null(strstr(err.message, "context of 8"));
    assert_int_equal(facet_seq_length(s, 0), 0);
    assert_int_equal(facet_prefill(s, 0, ids, 8, NULL, &err), FACET_OK);
    assert_int_equal(facet_seq_length(s, 0), 8);
    int32_t seq = 0, tok = 5;
    float logits[512];
    assert_int_equal(facet_decode(s, 1, &seq, &tok, logits, &err), FACET_E_CONTEXT);
    /* bad ids are typed errors too */
    assert_int_equal(facet_seq_reset(s, 0, &err), FACET_OK);
    tok = 512;
    assert_int_equal(facet_decode(s, 1, &seq, &tok, logits, &err), FACET_E_INVALID_ARGUMENT);
    seq = 3;
    tok = 5;
    assert_int_equal(facet_decode(s, 1, &seq, &tok, logits, &err), FACET_E_INVALID_ARGUMENT);
    facet_session_free(s);
}

/* facet_seq_release frees a sequence's KV memory; the sequence then starts over and
 * gives the same logits as before, bit for bit (a served slot reused after release). */
static void test_seq_release(void **state) {
    (void)state;
    facet_error err = {0};
    facet_session *s;
    facet_session_options so = {.n_seq_max = 2, .n_ctx = 256};
    assert_int_equal(facet_session_create(model, &so, &s, &err), FACET_OK);
    int32_t ids[100];
    for (int i = 0; i < 100; i++) ids[i] = 3 + (i * 37) % 500;
    float a[512], b[512];
    assert_int_equal(facet_prefill(s, 1, ids, 100, a, &err), FACET_OK);
    assert_int_equal(facet_seq_release(s, 1, &err), FACET_OK);
    assert_int_equal(facet_seq_length(s, 1), 0);
    assert_int_equal(facet_seq_release(s, 1, &err), FACET_OK); /* twice: nothing to free */
    assert_int_equal(facet_prefill(s, 1, ids, 100, b, &err), FACET_OK);
    assert_memory_equal(a, b, sizeof a);
    assert_int_equal(facet_seq_release(s, 2, &err), FACET_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "sequence id 2 out of range [0, 2)"));
    facet_session_free(s);
}

/* facet_seq_truncate keeps a prefix: a sequence that held 100 tokens, cut to 60 and fed
 * a different tail of 40 (in chunks other than the first run's), gives the logits of
 * that whole sequence prefilled from nothing, bit for bit (a server's prefix cache
 * reuses a finished request's KV this way). Out-of-range lengths are typed errors. */
static void test_seq_truncate(void **state) {
    (void)state;
    facet_error err = {0};
    facet_session *s;
    facet_session_options so = {.n_seq_max = 2, .n_ctx = 256};
    assert_int_equal(facet_session_create(model, &so, &s, &err), FACET_OK);
    int32_t ids[100], other[100];
    for (int i = 0; i < 100; i++) {
        ids[i] = 3 + (i * 37) % 500;
        other[i] = i < 60 ? ids[i] : 3 + (i * 91) % 500;
    }
    float a[512], b[512];
    assert_int_equal(facet_prefill(s, 0, ids, 100, NULL, &err), FACET_OK);
    assert_int_equal(facet_seq_truncate(s, 0, 101, &err), FACET_E_INVALID_ARGUMENT);
    assert_int_equal(facet_seq_truncate(s, 0, -1, &err), FACET_E_INVALID_ARGUMENT);
    assert_int_equal(facet_seq_truncate(s, 2, 0, &err), FACET_E_INVALID_ARGUMENT);
    assert_int_equal(facet_seq_truncate(s, 0, 60, &err), FACET_OK);
    assert_int_equal(facet_seq_length(s, 0), 60);
    assert_int_equal(facet_prefill(s, 0, other + 60, 25, NULL, &err), FACET_OK);
    assert_int_equal(facet_prefill(s, 0, other + 85, 15, a, &err), FACET_OK);
    assert_int_equal(facet_prefill(s, 1, other, 100, b, &err), FACET_OK);
    assert_memory_equal(a, b, sizeof a);
    facet_session_free(s);
}

/* facet_seq_copy: sequence 1 takes the first 70 tokens of sequence 0 (which holds 100)
 * and is fed a different tail; its logits equal that whole sequence prefilled from
 * nothing in sequence 2, bit for bit, and sequence 0 is untouched (its next logits as
 * before). Bad ids and lengths are typed errors. */
static void test_seq_copy(void **state) {
    (void)state;
    facet_error err = {0};
    facet_session *s;
    facet_session_options so = {.n_seq_max = 3, .n_ctx = 256};
    assert_int_equal(facet_session_create(model, &so, &s, &err), FACET_OK);
    int32_t ids[101], other[100];
    for (int i = 0; i < 101; i++) ids[i] = 3 + (i * 37) % 500;
    for (int i = 0; i < 100; i++) other[i] = i < 70 ? ids[i] : 3 + (i * 91) % 500;
    float a[512], b[512], c[512], d[512];
    assert_int_equal(facet_prefill(s, 0, ids, 100, NULL, &err), FACET_OK);
    assert_int_equal(facet_seq_copy(s, 0, 0, 10, &err), FACET_E_INVALID_ARGUMENT);
    assert_int_equal(facet_seq_copy(s, 0, 3, 10, &err), FACET_E_INVALID_ARGUMENT);
    assert_int_equal(facet_seq_copy(s, 0, 1, 101, &err), FACET_E_INVALID_ARGUMENT);
    assert_int_equal(facet_seq_copy(s, 0, 1, 70, &err), FACET_OK);
    assert_int_equal(facet_seq_length(s, 1), 70);
    assert_int_equal(facet_prefill(s, 1, other + 70, 30, a, &err), FACET_OK);
    assert_int_equal(facet_prefill(s, 2, other, 100, b, &err), FACET_OK);
    assert_memory_equal(a, b, sizeof a);
    /* the source goes on unchanged */
    assert_int_equal(facet_prefill(s, 0, ids + 100, 1, c, &err), FACET_OK);
    assert_int_equal(facet_seq_release(s, 2, &err), FACET_OK);
    assert_int_equal(facet_prefill(s, 2, ids, 101, d, &err), FACET_OK);
    assert_memory_equal(c, d, sizeof c);
    facet_session_free(s);
}

static void test_status_names(void **state) {
    (void)state;
    assert_string_equal(facet_status_name(FACET_OK), "FACET_OK");
    assert_string_equal(facet_status_name(FACET_E_CONTEXT), "FACET_E_CONTEXT");
    assert_string_equal(facet_status_name(12345), "FACET_E_UNKNOWN");
    assert_string_equal(facet_status_name(-1), "FACET_E_UNKNOWN");
}

static void test_top_logprobs(void **state) {
    (void)state;
    float logits[6] = {1.0f, 3.0f, 3.0f, -2.0f, 0.5f, 2.0f};
    int32_t ids[4];
    double lp[4];
    assert_int_equal(facet_top_logprobs(logits, 6, 4, ids, lp), 4);
    /* ties keep the lower id first; values are log_softmax */
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 2);
    assert_int_equal(ids[2], 5);
    assert_int_equal(ids[3], 0);
    double lse = log(exp(1.0) + 2 * exp(3.0) + exp(-2.0) + exp(0.5) + exp(2.0));
    assert_true(fabs(lp[0] - (3.0 - lse)) < 1e-12);
    assert_true(fabs(lp[3] - (1.0 - lse)) < 1e-12);
    assert_int_equal(facet_sample_greedy(logits, 6), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_from_bos),
        cmocka_unit_test(test_greedy_prompts),
        cmocka_unit_test(test_first_logits),
        cmocka_unit_test(test_batched_decode_matches_alone),
        cmocka_unit_test(test_kv_cache_16bit),
        cmocka_unit_test(test_context_overflow),
        cmocka_unit_test(test_seq_release),
        cmocka_unit_test(test_seq_truncate),
        cmocka_unit_test(test_seq_copy),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_top_logprobs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
