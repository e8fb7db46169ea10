/*
 * test_engine_mamba.c — the Mamba and Mamba-2 mixers' state through the public API
 * (issue 26), on shrunk state-spaces/mamba-130m-hf and Mamba-Codestral-shaped (2 groups)
 * checkpoints written by tests/ref/mamba_ref.py. A
 * sequence's logits must be bit for bit the same
 *   - prefilled alone in one batch, or in a chunk of 7 then one token at a time (the
 *     conv window and SSM state carried between calls),
 *   - interleaved entry by entry with two other sequences (each its own state),
 *   - decoded in a batch of three sequences or alone,
 *   - for a 600-token prompt, in one call (three forward chunks) or in pieces of 97;
 * and (Mamba-2, the shapes) 8 sequences decoded in one batch, a 2,048-token
 * prompt in calls of 256; a reset starts the state from zero again (same logits as a
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

#define V 512
#define N_LONG 600

static char dir[64];

static int sh(const char *cmd) {
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "failed (%d): %s\n", rc, cmd);
    return rc;
}

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

static int teardown(void **state) {
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return sh(cmd) ? -1 : 0;
}

enum { NSEQ = 3 };
static const int len[NSEQ] = {30, 9, 20};
static const int first[NSEQ] = {21, 1, 13};

static int32_t tok(int seq, int i) { return (int32_t)(3 + (seq * 131 + i * 37 + i * i) % 500); }

static facet_session *session(facet_model *m, int n_seq, int n_ctx) {
    facet_error err = {0};
    facet_session *s;
    facet_session_options so = {.n_seq_max = n_seq, .n_ctx = n_ctx, .kv_type = FACET_KV_F32};
    assert_int_equal(facet_session_create(m, &so, &s, &err), FACET_OK);
    return s;
}

static void forward(facet_session *s, int n, const int32_t *t, const int32_t *q, float *out) {
    facet_error err = {0};
    facet_batch b = {.n_tokens = n, .tokens = t, .seq_ids = q, .want_logits = NULL};
    facet_status st = facet_forward(s, &b, out, &err);
    if (st != FACET_OK) fprintf(stderr, "forward: %s\n", err.message);
    assert_int_equal(st, FACET_OK);
}

/* name: "mamba" or "mamba2"; state: the bytes of one sequence's state by hand */
static void run_model(const char *name, facet_weight_format wf, uint64_t state_bytes) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    facet_error err = {0};
    facet_model *m = NULL;
    facet_load_options lo = {.n_threads = 2, .weights = wf, .no_cache = 1};
    if (facet_model_load(path, &lo, &m, &err) != FACET_OK) fail_msg("load %s: %s", path, err.message);
    { /* the plan counts what the engine allocated: weights, and the state per sequence */
        static facet_facts f;
        static facet_plan p;
        st_checkpoint ck;
        assert_int_equal(facet_facts_read(path, &f, &err), FACET_OK);
        assert_int_equal(st_checkpoint_open(path, &ck, &err), FACET_OK);
        assert_int_equal(facet_facts_probe(&f, &ck, &err), FACET_OK);
        st_checkpoint_close(&ck);
        facet_plan_opts po = {.ctx = 0, .batch = 1, .weights = facet_plan_weights(wf),
                              .mem_available = 1ull << 30};
        assert_int_equal(facet_plan_make(&f, &po, &p, &err), FACET_OK);
        facet_model_info info;
        facet_model_get_info(m, &info);
        assert_int_equal(info.weight_bytes, p.weight_bytes[p.weights]);
        assert_int_equal(p.state_bytes_per_sequence, state_bytes);
        assert_int_equal(p.kv_bytes_per_sequence, 0);
    }

    float *alone[NSEQ], *out = malloc(sizeof(float) * V * N_LONG);
    int32_t *t = malloc(sizeof(int32_t) * N_LONG), *q = calloc(N_LONG, sizeof(int32_t));
    for (int s = 0; s < NSEQ; s++) { /* alone, one batch */
        facet_session *ss = session(m, 1, 64);
        alone[s] = malloc(sizeof(float) * V * (size_t)len[s]);
        for (int i = 0; i < len[s]; i++) t[i] = tok(s, i);
        forward(ss, len[s], t, q, alone[s]);
        facet_session_free(ss);
    }
    { /* sequence 0: a chunk of 7, then one token at a time; then reset, cut, release */
        facet_session *ss = session(m, 1, 64);
        for (int i = 0; i < 7; i++) t[i] = tok(0, i);
        forward(ss, 7, t, q, out);
        assert_memory_equal(out, alone[0], sizeof(float) * V * 7);
        for (int i = 7; i < len[0]; i++) {
            t[0] = tok(0, i);
            forward(ss, 1, t, q, out);
            if (memcmp(out, alone[0] + (size_t)i * V, sizeof(float) * V))
                fail_msg("%s: decode of position %d differs from the prefill", name, i);
        }
        /* a state cannot be cut back to a nonzero length */
        assert_int_equal(facet_seq_truncate(ss, 0, 5, &err), FACET_E_UNSUPPORTED);
        assert_int_equal(facet_seq_length(ss, 0), len[0]);
        /* reset: the state starts from zero, as in a fresh session */
        assert_int_equal(facet_seq_reset(ss, 0, &err), FACET_OK);
        for (int i = 0; i < len[0]; i++) t[i] = tok(0, i);
        forward(ss, len[0], t, q, out);
        assert_memory_equal(out, alone[0], sizeof(float) * V * (size_t)len[0]);
        /* cut to 0 is a reset; release frees the state and the next use starts afresh */
        assert_int_equal(facet_seq_truncate(ss, 0, 0, &err), FACET_OK);
        forward(ss, 3, t, q, out);
        assert_memory_equal(out, alone[0], sizeof(float) * V * 3);
        assert_int_equal(facet_seq_release(ss, 0, &err), FACET_OK);
        forward(ss, 3, t, q, out);
        assert_memory_equal(out, alone[0], sizeof(float) * V * 3);
        facet_session_free(ss);
    }
    { /* interleaved: entry k of a batch is sequence k % 3's next token while it has one */
        facet_session *ss = session(m, NSEQ, 64);
        int at[NSEQ] = {0, 0, 0};
        for (int b = 0; b < 2; b++) {
            int n = 0, pos[64];
            for (int more = 1; more;) {
                more = 0;
                for (int s = 0; s < NSEQ; s++) {
                    int end = b == 0 ? first[s] : len[s];
                    if (at[s] < end) {
                        t[n] = tok(s, at[s]);
                        q[n] = s;
                        pos[n++] = at[s]++;
                        more = 1;
                    }
                }
            }
            forward(ss, n, t, q, out);
            for (int k = 0; k < n; k++)
                if (memcmp(out + (size_t)k * V, alone[q[k]] + (size_t)pos[k] * V,
                           sizeof(float) * V))
                    fail_msg("%s: batch %d entry %d (sequence %d position %d) differs from "
                             "the sequence alone", name, b, k, q[k], pos[k]);
        }
        /* batched decode steps: one token of each sequence per step */
        facet_session *solo[NSEQ];
        for (int s = 0; s < NSEQ; s++) {
            solo[s] = session(m, 1, 64);
            for (int i = 0; i < len[s]; i++) {
                t[i] = tok(s, i);
                q[i] = 0;
            }
            forward(solo[s], len[s], t, q, out);
        }
        float *one = malloc(sizeof(float) * V);
        for (int step = 0; step < 8; step++) {
            int32_t bt[NSEQ], bq[NSEQ], z = 0;
            for (int s = 0; s < NSEQ; s++) {
                bt[s] = tok(s, 100 + step * 7 + s);
                bq[s] = s;
            }
            forward(ss, NSEQ, bt, bq, out);
            for (int s = 0; s < NSEQ; s++) {
                forward(solo[s], 1, &bt[s], &z, one);
                if (memcmp(out + (size_t)s * V, one, sizeof(float) * V))
                    fail_msg("%s: decode step %d, sequence %d: batched differs from alone",
                             name, step, s);
            }
        }
        free(one);
        for (int s = 0; s < NSEQ; s++) facet_session_free(solo[s]);
        facet_session_free(ss);
    }
    { /* a 600-token prompt: one call vs pieces of 97 */
        float *pieces = malloc(sizeof(float) * V * N_LONG);
        for (int i = 0; i < N_LONG; i++) {
            t[i] = tok(1, i);
            q[i] = 0;
        }
        facet_session *ss = session(m, 1, 1024);
        forward(ss, N_LONG, t, q, out);
        facet_session_free(ss);
        ss = session(m, 1, 1024);
        for (int i = 0; i < N_LONG; i += 97)
            forward(ss, N_LONG - i < 97 ? N_LONG - i : 97, t + i, q, pieces + (size_t)i * V);
        facet_session_free(ss);
        for (int i = 0; i < N_LONG; i++)
            if (memcmp(out + (size_t)i * V, pieces + (size_t)i * V, sizeof(float) * V))
                fail_msg("%s: position %d of a 600-token prompt differs between one call "
                         "and pieces of 97", name, i);
        free(pieces);
    }
    for (int s = 0; s < NSEQ; s++) free(alone[s]);
    free(out);
    free(t);
    free(q);
    facet_model_free(m);
}

/* Mamba: 3 layers x d_inner 128 x (conv_kernel 4 - 1 + state_size 16) floats */
#define MAMBA_STATE (3ull * 128 * (3 + 16) * 4)
/* Mamba-2: 3 layers x ((128 + 2 groups x 16) conv channels x 3 + 128 x 16) floats */
#define MAMBA2_STATE (3ull * ((128 + 2 * 2 * 16) * 3 + 128 * 16) * 4)

static void test_mamba_batches_f32(void **state) {
    (void)state;
    run_model("mamba", FACET_WEIGHTS_F32, MAMBA_STATE);
}

static void test_mamba_batches_bf16(void **state) {
    (void)state;
    run_model("mamba", FACET_WEIGHTS_BF16, MAMBA_STATE);
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
    run_model("mamba2", FACET_WEIGHTS_F32, MAMBA2_STATE);
    run_model("mamba2", FACET_WEIGHTS_INT8, MAMBA2_STATE);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_mamba_batches_f32),
                                       cmocka_unit_test(test_mamba_batches_bf16),
                                       cmocka_unit_test(test_mamba2_batches),
                                       cmocka_unit_test(test_acceptance_shapes)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
