/*
 * test_engine_mamba.c — the Mamba and Mamba-2 mixers' state through the public API
 * (issue 26), on shrunk state-spaces/mamba-130m-hf and Mamba-Codestral-shaped (2 groups)
 * checkpoints written by tests/ref/mamba_ref.py. A
 * sequence's logits must be the same (within 1e-5 of the row's largest logit: Mamba-2's
 * SSD blocks are cut where a call cuts; bit for bit for Mamba-1)
 *   - prefilled alone in one batch, or in a chunk of 7 then one token at a time (the
 *     conv window and SSM state carried between calls),
 *   - interleaved entry by entry with two other sequences (each its own state),
 *   - for a 600-token prompt, in one call (three forward chunks) or in pieces of 97;
 * bit for bit decoded in a batch of three sequences or alone,
 * and (Mamba-2, the shapes) 8 sequences decoded in one batch, a 2,048-token
 * prompt in calls of 256 (a multiple of the SSD block: bit for bit); a reset starts the
 * state from zero again (same logits as a
 * fresh session), a cut back
 * to a nonzero length is refused (a state cannot rewind), a release frees the state.
 * Values against float64: tests/e2e/test_reference_mamba.py.
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
    snprintf(dir, sizeof dir, "/tmp/facet-mamba-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 " FACET_SOURCE_DIR "/tests/ref/mamba_ref.py write mamba-130m "
             "%s/mamba >/dev/null && /usr/bin/python3 " FACET_SOURCE_DIR
             "/tests/ref/mamba_ref.py write mamba2-codestral %s/mamba2 >/dev/null", dir, dir);
    return sh(cmd) ? -1 : 0;
}

/* Mamba: 3 layers x d_inner 128 x (conv_kernel 4 - 1 + state_size 16) floats */
#define MAMBA_STATE (3ull * 128 * (3 + 16) * 4)
/* Mamba-2: 3 layers x ((128 + 2 groups x 16) conv channels x 3 + 128 x 16) floats */
#define MAMBA2_STATE (3ull * ((128 + 2 * 2 * 16) * 3 + 128 * 16) * 4)

static void test_mamba_batches_f32(void **state) {
    (void)state;
    cuts_exact = 1;
    run_model("mamba", FACET_WEIGHTS_F32, MAMBA_STATE, 0);
    cuts_exact = 0;
}

static void test_mamba_batches_bf16(void **state) {
    (void)state;
    cuts_exact = 1;
    run_model("mamba", FACET_WEIGHTS_BF16, MAMBA_STATE, 0);
    cuts_exact = 0;
}

/* The acceptance shapes: 8 sequences decoded in one batch for 8 steps, each
 * bit-identical to the sequence alone; a 2,048-token prompt prefilled in calls of 256
 * bit-identical to one call (so within any tolerance). */
static void test_acceptance_shapes(void **state) {
    (void)state;
    enum { S = 8, LONG = 2048 };
    char path[256];
    snprintf(path, sizeof path, "%s/mamba2", dir);
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

static void test_mamba2_batches(void **state) {
    (void)state;
    run_model("mamba2", FACET_WEIGHTS_F32, MAMBA2_STATE, 0);
    run_model("mamba2", FACET_WEIGHTS_INT8, MAMBA2_STATE, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_mamba_batches_f32),
                                       cmocka_unit_test(test_mamba_batches_bf16),
                                       cmocka_unit_test(test_mamba2_batches),
                                       cmocka_unit_test(test_acceptance_shapes)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
