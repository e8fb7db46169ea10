/*
 * test_engine_moe.c — the mixture-of-experts FFN (src/engine/ffn_moe.c):
 *   - routing on hand-worked logits: the k largest, ties to the lower expert index, the
 *     weights of each routing rule;
 *   - on a shrunk Qwen2-MoE checkpoint (8 experts, top-2, a shared expert with its gate,
 *     a dense layer among sparse ones), a shrunk Mixtral one and a shrunk gpt-oss one
 *     (32 experts, top-4, sinks, windows of 8, biases), written by the float64
 *     reference's generator (tests/ref/gen_checkpoint.py) into a temporary folder: a
 *     sequence's logits are bit for bit the same prefilled alone, decoded one token at a
 *     time, interleaved with two other sequences in batched decode steps, and a
 *     600-token prompt in one call (chunks of FACET_FORWARD_CHUNK) equals it fed in
 *     pieces of 97; for float32 and bf16 weights;
 *   - the plan's weight bytes (`facet plan`, the server's KV budget) equal what the
 *     engine allocated for the checkpoint in that format. (Agreement with the float64 reference
 *     itself: tests/e2e/test_reference_moe.py.)
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/moe_route.h"
#include "facet.h"
#include "io/safetensors.h"
#include "model/facts.h"
#include "model/plan.h"
#include "model/probe.h"

#define V 512
#define N_LONG 600

static char dir[64];

/* ---- routing ---- */

static void test_route_ties_and_weights(void **state) {
    (void)state;
    int ids[3];
    float w[3];
    /* experts 1, 3 and 5 tie at 2.0: the lower indices win, in index order */
    const float l[6] = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f, 2.0f};
    facet_moe_route(l, 6, 2, FACET_ROUTER_TOPK_SOFTMAX, 1, ids, w);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 3);
    assert_float_equal(w[0], 0.5f, 1e-7f);
    assert_float_equal(w[1], 0.5f, 1e-7f);
    /* softmax then top-k without renormalization: p_j over all six:
     * sum = e^0.5 + 3 e^2 + e^-1 + e^1 = 1.6487213 + 22.1671683 + 0.3678794 + 2.7182818 */
    facet_moe_route(l, 6, 3, FACET_ROUTER_SOFTMAX_TOPK, 0, ids, w);
    assert_int_equal(ids[2], 5);
    double sum = 1.6487212707 + 3 * 7.3890560989 + 0.3678794412 + 2.7182818285;
    assert_float_equal(w[0], (float)(7.3890560989 / sum), 1e-6f);
    /* renormalized: the three tied experts share 1 */
    facet_moe_route(l, 6, 3, FACET_ROUTER_SOFTMAX_TOPK, 1, ids, w);
    assert_float_equal(w[2], 1.0f / 3.0f, 1e-7f);
    /* distinct logits: decreasing order, softmax over the two chosen (e^1 / (e^1 + e^0)) */
    const float m[4] = {0.0f, -3.0f, 1.0f, -0.5f};
    facet_moe_route(m, 4, 2, FACET_ROUTER_TOPK_SOFTMAX, 1, ids, w);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 0);
    assert_float_equal(w[0], (float)(2.718281828 / (2.718281828 + 1.0)), 1e-7f);
}

/* ---- batches and chunks on generated checkpoints ---- */

static const char *const QWEN2_MOE =
    "{\"architectures\": [\"Qwen2MoeForCausalLM\"], \"model_type\": \"qwen2_moe\","
    " \"hidden_size\": 64, \"intermediate_size\": 96, \"moe_intermediate_size\": 32,"
    " \"shared_expert_intermediate_size\": 48, \"num_experts\": 8, \"num_experts_per_tok\": 2,"
    " \"num_hidden_layers\": 3, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
    " \"decoder_sparse_step\": 1, \"mlp_only_layers\": [1], \"norm_topk_prob\": false,"
    " \"max_position_embeddings\": 1024, \"rope_theta\": 10000.0, \"rms_norm_eps\": 1e-6,"
    " \"vocab_size\": 512, \"tie_word_embeddings\": false, \"hidden_act\": \"silu\","
    " \"bos_token_id\": 1, \"eos_token_id\": 2, \"torch_dtype\": \"float32\"}";

static int sh(const char *cmd) {
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "failed (%d): %s\n", rc, cmd);
    return rc;
}

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/facet-moe-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char path[256], cmd[2048];
    snprintf(path, sizeof path, "%s/qwen2_moe.json", dir);
    FILE *fp = fopen(path, "w");
    if (!fp) return -1;
    fputs(QWEN2_MOE, fp);
    fclose(fp);
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 " FACET_SOURCE_DIR "/tests/ref/gen_checkpoint.py %s %s/qwen2_moe "
             ">/dev/null && /usr/bin/python3 " FACET_SOURCE_DIR "/tests/ref/gen_checkpoint.py "
             FACET_SOURCE_DIR "/tests/data/configs/mistralai__Mixtral-8x7B-v0.1 %s/mixtral "
             "--layers 2 --vocab 512 >/dev/null && /usr/bin/python3 " FACET_SOURCE_DIR
             "/tests/ref/gen_checkpoint.py " FACET_SOURCE_DIR
             "/tests/data/configs/openai__gpt-oss-20b %s/gpt_oss --layers 3 --vocab 512 "
             "--set quantization_config=null --set sliding_window=8 >/dev/null && "
             "/usr/bin/python3 " FACET_SOURCE_DIR "/tests/ref/mla_ref.py " FACET_SOURCE_DIR
             "/tests/data/configs/deepseek-ai__DeepSeek-V3/config.json %s/deepseek_v3 "
             "--set experts=32 --set first_k_dense_replace=1 --set max_position_embeddings=2048",
             path, dir, dir, dir, dir);
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

static void run_model(const char *name, facet_weight_format wf) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    facet_error err = {0};
    facet_model *m = NULL;
    facet_load_options lo = {.n_threads = 2, .weights = wf, .no_cache = 1};
    if (facet_model_load(path, &lo, &m, &err) != FACET_OK) fail_msg("load %s: %s", path, err.message);
    { /* the plan counts what the engine allocated */
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
        assert_int_equal(info.decode_bytes, p.decode_bytes_per_token);
        assert_true(p.n_active_params < p.n_params && info.decode_bytes < info.weight_bytes);
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
    { /* sequence 0: a chunk of 7, then one token at a time */
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
                    fail_msg("%s: decode step %d, sequence %d: batched differs from alone", name,
                             step, s);
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
                fail_msg("%s: position %d of a 600-token prompt differs between one call and "
                         "pieces of 97", name, i);
        free(pieces);
    }
    for (int s = 0; s < NSEQ; s++) free(alone[s]);
    free(out);
    free(t);
    free(q);
    facet_model_free(m);
}

static void test_qwen2_moe_batches(void **state) {
    (void)state;
    run_model("qwen2_moe", FACET_WEIGHTS_F32);
    run_model("qwen2_moe", FACET_WEIGHTS_BF16);
}

static void test_mixtral_batches(void **state) {
    (void)state;
    run_model("mixtral", FACET_WEIGHTS_F32);
    run_model("mixtral", FACET_WEIGHTS_INT8);
}

/* gpt-oss: attention sinks, sliding layers (window 8: the 30-token sequences wrap the
 * ring; the 600-token prompt's chunks read ring views), biases, the clamped SwiGLU */
static void test_gpt_oss_batches(void **state) {
    (void)state;
    run_model("gpt_oss", FACET_WEIGHTS_F32);
    run_model("gpt_oss", FACET_WEIGHTS_BF16);
}

/* DeepSeek-V3 (issue 25): latent attention over a latent cache, noaux_tc routing with
 * the correction bias, a dense first layer, a shared expert */
static void test_deepseek_v3_batches(void **state) {
    (void)state;
    run_model("deepseek_v3", FACET_WEIGHTS_F32);
    run_model("deepseek_v3", FACET_WEIGHTS_BF16);
}

/* DeepSeek's routing on hand-worked logits: sigmoid scores, the bias in the choice only,
 * 4 groups of 2 ranked by their top-2 sums, 2 kept (masked experts score 0), top 2,
 * renormalized and scaled; then greedy softmax (one group) scaled, not renormalized. */
static void test_route_grouped(void **state) {
    (void)state;
    const float l[8] = {0.0f, 1.0f, 3.0f, -2.0f, 0.5f, 0.5f, -1.0f, 2.0f};
    const float bias[8] = {0, 0, -0.9f, 0, 0, 0, 0, 0};
    int ids[2];
    float w[2];
    /* s = sigmoid: .5 .731 .953 .119 .622 .622 .269 .881; choice = s + bias: group sums
     * 1.231, .172, 1.245, 1.150 -> groups 2 and 0; choices .5 .731 0 0 .622 .622 0 0 */
    facet_moe_route_grouped(l, bias, 8, 2, 1, 4, 2, 1, 2.0, ids, w);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 4); /* tied with 5: the lower index */
    double s1 = 1 / (1 + exp(-1.0)), s4 = 1 / (1 + exp(-0.5));
    assert_float_equal(w[0], (float)(2.0 * s1 / (s1 + s4)), 1e-6f);
    assert_float_equal(w[1], (float)(2.0 * s4 / (s1 + s4)), 1e-6f);
    /* softmax, group-limited by each group's largest score, one group kept: group 1
     * (max logit 3) -> experts 2, 3, weights p * 16 (not renormalized) */
    facet_moe_route_grouped(l, NULL, 8, 2, 0, 4, 1, 0, 16.0, ids, w);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 3);
    double z = 0;
    for (int e = 0; e < 8; e++) z += exp(l[e]);
    assert_float_equal(w[0], (float)(16.0 * exp(3.0) / z), 1e-6f);
    assert_float_equal(w[1], (float)(16.0 * exp(-2.0) / z), 1e-6f);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_route_ties_and_weights),
                                       cmocka_unit_test(test_route_grouped),
                                       cmocka_unit_test(test_deepseek_v3_batches),
                                       cmocka_unit_test(test_qwen2_moe_batches),
                                       cmocka_unit_test(test_mixtral_batches),
                                       cmocka_unit_test(test_gpt_oss_batches)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
