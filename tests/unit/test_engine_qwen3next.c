/*
 * test_engine_qwen3next.c — Qwen3-Next's gated delta-rule state and gated attention's KV
 * together through the public API (issue 26), on the shrunk Qwen3-Next-80B-A3B
 * checkpoint written by tests/ref/qwen3next_ref.py (3 delta-rule layers, 1 attention
 * layer, 8 experts + a shared expert on each): the invariances of seq_invariance.h bit for
 * bit (chunked prefill, interleaved and batched decode, reset, cut, release), the plan's
 * weight and state bytes equal to what the engine holds; and the acceptance
 * shapes: 8 sequences decoded in one batch each bit-identical to the sequence alone, a
 * 2,048-token prompt prefilled in calls of 256 bit-identical to one call. Values against
 * float64: tests/e2e/test_reference_qwen3next.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "facet.h"
#include "io/safetensors.h"
#include "model/facts.h"
#include "model/plan.h"
#include "model/probe.h"

#include "seq_invariance.h"

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/facet-qwen3next-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 " FACET_SOURCE_DIR "/tests/ref/qwen3next_ref.py write %s/q3n "
             ">/dev/null", dir);
    return sh(cmd) ? -1 : 0;
}

/* 3 delta-rule layers x ((2 x 2 key heads x 16 + 4 value heads x 16) conv channels x
 * (4 - 1) + 4 x 16 value channels x 16 key dims) floats */
#define Q3N_STATE (3ull * ((2 * 2 * 16 + 4 * 16) * 3 + 4 * 16 * 16) * 4)

static void test_qwen3next_f32(void **state) {
    (void)state;
    run_model("q3n", FACET_WEIGHTS_F32, Q3N_STATE, KV_NONZERO);
}

static void test_qwen3next_int8(void **state) {
    (void)state;
    run_model("q3n", FACET_WEIGHTS_INT8, Q3N_STATE, KV_NONZERO);
}

/* The acceptance shapes: 8 sequences decoded in one batch for 8 steps, each
 * bit-identical to the sequence alone; a 2,048-token prompt prefilled in calls of 256
 * bit-identical to one call (so within any tolerance). */
static void test_acceptance_shapes(void **state) {
    (void)state;
    enum { S = 8, LONG = 2048 };
    char path[256];
    snprintf(path, sizeof path, "%s/q3n", dir);
    facet_error err = {0};
    facet_model *m = NULL;
    facet_load_options lo = {.n_threads = 2, .weights = FACET_WEIGHTS_F32, .no_cache = 1};
    if (facet_model_load(path, &lo, &m, &err) != FACET_OK) fail_msg("load: %s", err.message);
    float *out = malloc(sizeof(float) * V * LONG), *one = malloc(sizeof(float) * V * LONG);
    int32_t *t = malloc(sizeof(int32_t) * LONG), *q = calloc(LONG, sizeof(int32_t));
    facet_session *all = session(m, S, 2048), *solo[S];
    for (int s = 0; s < S; s++) { /* prompts of 5 + s tokens, in both */
        solo[s] = session(m, 1, 2048);
        for (int i = 0; i < 5 + s; i++) t[i] = tok(s, i), q[i] = s;
        forward(all, 5 + s, t, q, out);
        for (int i = 0; i < 5 + s; i++) q[i] = 0;
        forward(solo[s], 5 + s, t, q, out);
    }
    for (int step = 0; step < 8; step++) {
        int32_t bt[S], bq[S], z = 0;
        for (int s = 0; s < S; s++) bt[s] = tok(s, 50 + step), bq[s] = s;
        forward(all, S, bt, bq, out);
        for (int s = 0; s < S; s++) {
            forward(solo[s], 1, &bt[s], &z, one);
            if (memcmp(out + (size_t)s * V, one, sizeof(float) * V))
                fail_msg("decode step %d, sequence %d of 8: batched differs from alone", step, s);
        }
    }
    for (int s = 0; s < S; s++) facet_session_free(solo[s]);
    facet_session_free(all);
    for (int i = 0; i < LONG; i++) t[i] = tok(2, i), q[i] = 0;
    facet_session *a = session(m, 1, 2048), *b = session(m, 1, 2048);
    forward(a, LONG, t, q, out);
    for (int i = 0; i < LONG; i += 256) forward(b, 256, t + i, q, one + (size_t)i * V);
    assert_memory_equal(out, one, sizeof(float) * V * LONG);
    facet_session_free(a);
    facet_session_free(b);
    free(out);
    free(one);
    free(t);
    free(q);
    facet_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_qwen3next_f32),
                                       cmocka_unit_test(test_qwen3next_int8),
                                       cmocka_unit_test(test_acceptance_shapes)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
