/*
 * test_engine_window.c — sliding-window layers on the one attention kernel, through the
 * public API: the bundled stories260k weights under a Mistral config with a window of 5
 * (every layer sliding; at n_ctx 64 each layer holds a ring of 16 rows, so a 30-token
 * sequence wraps it). A sequence's logits must be bit for bit the same
 *   - prefilled alone in one batch,
 *   - prefilled in a chunk of 7 then decoded one token at a time (a ring layer's decode
 *     reads the ring; its prefill reads a view of the ring plus the chunk's own rows),
 *   - interleaved entry by entry with two other sequences in two batches (groups whose
 *     entries are not adjacent; several ring views in one chunk; a group of one entry),
 * for a float32, a bf16 and an f16 cache. (The arithmetic of a query depends on its own keys
 * alone: test_kernels_attention checks the kernel's window, ring and views against
 * float64 on every CPU path; test_engine_window.py checks the windowed model against
 * the float64 reference.)
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "facet.h"

#define MODEL_DIR FACET_SOURCE_DIR "/models/stories260k"
#define V 512

static char dir[64];
static facet_model *model;

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/facet-window-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (symlink(MODEL_DIR "/model.safetensors", path) != 0) return -1;
    json_error_t je;
    json_t *c = json_load_file(MODEL_DIR "/config.json", 0, &je);
    if (!c) return -1;
    json_object_set_new(c, "architectures", json_pack("[s]", "MistralForCausalLM"));
    json_object_set_new(c, "model_type", json_string("mistral"));
    json_object_set_new(c, "sliding_window", json_integer(5));
    const char *drop[] = {"mlp_bias", "pretraining_tp", "attention_bias", "head_dim"};
    for (size_t i = 0; i < 4; i++) json_object_del(c, drop[i]);
    snprintf(path, sizeof path, "%s/config.json", dir);
    int rc = json_dump_file(c, path, 0);
    json_decref(c);
    if (rc != 0) return -1;
    facet_error err = {0};
    facet_load_options lo = {.n_threads = 2, .weights = FACET_WEIGHTS_F32, .no_cache = 1};
    if (facet_model_load(dir, &lo, &model, &err) != FACET_OK) {
        fprintf(stderr, "load: %s\n", err.message);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    facet_model_free(model);
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
    return 0;
}

enum { NSEQ = 3 };
static const int len[NSEQ] = {30, 9, 20};       /* tokens of each sequence */
static const int first[NSEQ] = {21, 1, 13};     /* of them in the first batch */

static int32_t tok(int seq, int i) { return (int32_t)(3 + (seq * 131 + i * 37 + i * i) % 500); }

static facet_session *session(int n_seq, facet_kv_type kv) {
    facet_error err = {0};
    facet_session *s;
    facet_session_options so = {.n_seq_max = n_seq, .n_ctx = 64, .kv_type = kv};
    assert_int_equal(facet_session_create(model, &so, &s, &err), FACET_OK);
    return s;
}

/* Run n entries (tokens t, sequences q), every entry's logits into out. */
static void forward(facet_session *s, int n, const int32_t *t, const int32_t *q, float *out) {
    facet_error err = {0};
    facet_batch b = {.n_tokens = n, .tokens = t, .seq_ids = q, .want_logits = NULL};
    facet_status st = facet_forward(s, &b, out, &err);
    if (st != FACET_OK) fprintf(stderr, "forward: %s\n", err.message);
    assert_int_equal(st, FACET_OK);
}

static void run_kv(facet_kv_type kv) {
    float *alone[NSEQ], *out = malloc(sizeof(float) * V * 64);
    int32_t t[64], q[64];
    for (int s = 0; s < NSEQ; s++) { /* alone, one batch */
        facet_session *ss = session(1, kv);
        alone[s] = malloc(sizeof(float) * V * (size_t)len[s]);
        for (int i = 0; i < len[s]; i++) {
            t[i] = tok(s, i);
            q[i] = 0;
        }
        forward(ss, len[s], t, q, alone[s]);
        facet_session_free(ss);
    }
    { /* sequence 0: a chunk of 7, then one token at a time */
        facet_session *ss = session(1, kv);
        for (int i = 0; i < 7; i++) {
            t[i] = tok(0, i);
            q[i] = 0;
        }
        forward(ss, 7, t, q, out);
        assert_memory_equal(out, alone[0], sizeof(float) * V * 7);
        for (int i = 7; i < len[0]; i++) {
            t[0] = tok(0, i);
            forward(ss, 1, t, q, out);
            if (memcmp(out, alone[0] + (size_t)i * V, sizeof(float) * V))
                fail_msg("kv %s: decode of position %d differs from the prefill",
                         facet_kv_type_name(kv), i);
        }
        facet_session_free(ss);
    }
    /* interleaved: entry k of the batch is sequence k % 3's next token, while it has one */
    facet_session *ss = session(NSEQ, kv);
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
            if (memcmp(out + (size_t)k * V, alone[q[k]] + (size_t)pos[k] * V, sizeof(float) * V))
                fail_msg("kv %s: batch %d entry %d (sequence %d position %d) differs from "
                         "the sequence alone", facet_kv_type_name(kv), b, k, q[k], pos[k]);
    }
    facet_session_free(ss);
    for (int s = 0; s < NSEQ; s++) free(alone[s]);
    free(out);
}

static void test_window_batches(void **state) {
    (void)state;
    run_kv(FACET_KV_F32);
    run_kv(FACET_KV_BF16);
    run_kv(FACET_KV_F16); /* rounded as the bf16 rows are, by another converter */
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_window_batches)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
