/* test_plan.c — facet_plan_make against numbers computed by hand from the configs
 * (the arithmetic is written out next to each value). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul_internal.h"
#include "model/facts.h"
#include "model/plan.h"

static facet_facts F;
static facet_plan P;

static void read_cfg(const char *model) {
    char dir[1024];
    facet_error err;
    snprintf(dir, sizeof dir, "%s/configs/%s", FACET_TEST_DATA, model);
    assert_int_equal(facet_facts_read(dir, &F, &err), FACET_OK);
}

static void from_text(const char *text) {
    json_error_t je;
    facet_error err;
    json_t *j = json_loads(text, 0, &je);
    assert_non_null(j);
    assert_int_equal(facet_facts_from_json(j, NULL, "config.json", &F, &err), FACET_OK);
    json_decref(j);
}

static void plan(int64_t ctx, int64_t batch, int fmt, uint64_t mem) {
    facet_plan_opts o = {.ctx = ctx, .batch = batch, .weights = fmt, .mem_available = mem};
    facet_error err;
    facet_status st = facet_plan_make(&F, &o, &P, &err);
    if (st) fprintf(stderr, "%s\n", err.message);
    assert_int_equal(st, FACET_OK);
}

/* Dense GQA: Llama-3.2-1B (L=16, hidden 2048, 32 q / 8 kv heads of 64, ffn 8192,
 * vocab 128256, tied). */
static void test_dense_gqa(void **state) {
    (void)state;
    read_cfg("meta-llama__Llama-3.2-1B-Instruct__resaved");
    plan(4096, 4, FACET_WF_F32, 8ull << 30);
    /* embed 128256*2048 = 262668288; per layer q,o 2*2048*2048 + k,v 2*512*2048 +
     * gate,up,down 3*8192*2048 = 60817408 matrix + 2*2048 norm; final norm 2048:
     * 262668288 + 16*(60817408 + 4096) + 2048 = 1235814400 (HF's published count) */
    assert_int_equal(P.n_params, 1235814400ull);
    assert_int_equal(P.weight_bytes[FACET_WF_F32], 4943257600ull);
    /* bf16: matrices 2 B (1235746816 * 2) + vectors 4 B (67584 * 4) */
    assert_int_equal(P.weight_bytes[FACET_WF_BF16], 2471763968ull);
    assert_int_equal(P.weight_bytes[FACET_WF_F16], 2471763968ull);
    /* int8: 1 B per matrix element + one f16 scale per 32 = 1235746816 * 1.0625 + 270336
     * (every dim here is a multiple of 16 rows / 32 inputs: no packing padding) */
    assert_int_equal(P.weight_bytes[FACET_WF_Q8], 1313251328ull);
    /* q4: half a byte per matrix element + one f16 scale per 32, the tied embedding (the
     * output projection; 2048 inputs, a multiple of 256) in Q6_K blocks of 210 bytes per
     * 256: (1235746816 - 262668288) * 0.5625 + 262668288 / 256 * 210 + 270336 */
    assert_int_equal(P.weight_bytes[FACET_WF_Q4], 763097088ull);
    /* k = 2 * 8 * 64 * 4 = 4096 B per layer and position; naive 16 * 4096 */
    assert_int_equal(P.kv_bytes_per_layer_position, 4096);
    assert_int_equal(P.kv_bytes_per_token_naive, 65536);
    assert_int_equal(P.kv_bytes_per_sequence, 65536ull * 4096);
    assert_true(P.kv_bytes_per_token_actual == 65536.0);
    /* total: 4943257600 + 4 * 268435456 */
    assert_int_equal(P.total_bytes, 6016999424ull);
    assert_int_equal(P.fits, 1);
    /* (8 GiB - 4943257600) / 268435456 = 13.58 */
    assert_int_equal(P.max_batch_at_ctx, 13);
    /* (8 GiB - 4943257600) / (4 * 65536) = 13910.97 positions; the cache allocates whole
     * groups of 16, so 13904 is the largest context whose groups fit (13920 > 13910) */
    assert_int_equal(P.max_ctx_at_batch, 13904);
    assert_int_equal(P.n_groups, 1);
    assert_int_equal(P.weights, FACET_WF_F32);
    /* a machine too small for the weights */
    plan(4096, 1, FACET_WF_F32, 1ull << 30);
    assert_int_equal(P.fits, 0);
    assert_int_equal(P.max_ctx_at_batch, 0);
    assert_int_equal(P.max_batch_at_ctx, 0);
}

/* Mistral-7B-v0.1: window 4096 on all 32 layers, max_position_embeddings 32768. */
static void test_mistral_window(void **state) {
    (void)state;
    from_text("{\"architectures\":[\"MistralForCausalLM\"],\"model_type\":\"mistral\","
              "\"hidden_size\":4096,\"intermediate_size\":14336,\"num_hidden_layers\":32,"
              "\"num_attention_heads\":32,\"num_key_value_heads\":8,\"vocab_size\":32000,"
              "\"max_position_embeddings\":32768,\"sliding_window\":4096,"
              "\"rope_theta\":10000.0,\"rms_norm_eps\":1e-05,\"tie_word_embeddings\":false}");
    plan(8192, 1, FACET_WF_F32, 64ull << 30);
    assert_int_equal(P.n_params, 7241732096ull); /* Mistral 7B's published count */
    assert_int_equal(P.kv_bytes_per_layer_position, 8192); /* 2 * 8 * 128 * 4 */
    assert_int_equal(P.kv_bytes_per_token_naive, 262144); /* 32 * 8192 */
    assert_int_equal(P.n_sliding_layers, 32);
    assert_int_equal(P.n_global_layers, 0);
    assert_int_equal(P.window, 4096);
    /* 32 layers * min(8192, 4096) * 8192 */
    assert_int_equal(P.kv_bytes_per_sequence, 1073741824ull);
    assert_true(P.kv_bytes_per_token_actual == 131072.0);
    plan(2048, 1, FACET_WF_F32, 64ull << 30); /* below the window: naive */
    assert_int_equal(P.kv_bytes_per_sequence, 536870912ull);
    /* the KV of a windowed model stops growing: every ctx fits once weights do */
    plan(32768, 1, FACET_WF_F32, 64ull << 30);
    assert_int_equal(P.max_ctx_at_batch, 32768);
    assert_int_equal(P.kv_bytes_per_sequence, 1073741824ull);
}

/* Gemma 3 (medgemma-27b text_config): 62 layers, every 6th global, window 1024,
 * 16 kv heads of 128. */
static void test_gemma3_local_global(void **state) {
    (void)state;
    read_cfg("google__medgemma-27b-it");
    plan(8192, 1, FACET_WF_BF16, 1ull << 40);
    /* bf16 weights: the KV cache follows them in bf16, 2 B per element */
    assert_int_equal(P.kv_type, FACET_KV_BF16);
    assert_int_equal(P.kv_bytes_per_layer_position, 8192); /* 2 * 16 * 128 * 2 */
    assert_int_equal(P.kv_bytes_per_token_naive, 507904); /* 62 * 8192 */
    assert_int_equal(P.n_global_layers, 10);
    assert_int_equal(P.n_sliding_layers, 52);
    /* 8192 * (10 * 8192 + 52 * min(8192, 1024)) = 8192 * 135168 */
    assert_int_equal(P.kv_bytes_per_sequence, 1107296256ull);
    assert_true(P.kv_bytes_per_token_actual == 135168.0);
    plan(512, 1, FACET_WF_BF16, 1ull << 40); /* below the window: 62 * 512 * 8192 */
    assert_int_equal(P.kv_bytes_per_sequence, 260046848ull);
    /* an f32 cache asked for: 4 B per element, twice the bytes */
    facet_plan_opts o = {.ctx = 8192, .batch = 1, .weights = FACET_WF_BF16,
                         .mem_available = 1ull << 40, .kv_cache = FACET_KV_F32};
    facet_error err;
    assert_int_equal(facet_plan_make(&F, &o, &P, &err), FACET_OK);
    assert_int_equal(P.kv_type, FACET_KV_F32);
    assert_int_equal(P.kv_bytes_per_layer_position, 16384); /* 2 * 16 * 128 * 4 */
    assert_int_equal(P.kv_bytes_per_sequence, 2214592512ull); /* 16384 * 135168 */
    o.kv_cache = (facet_kv_type)7;
    assert_int_equal(facet_plan_make(&F, &o, &P, &err), FACET_E_INVALID_ARGUMENT);
    /* auto per weight format: f32 -> f32, f16 -> f16, int8 -> bf16 */
    plan(512, 1, FACET_WF_F32, 1ull << 40);
    assert_int_equal(P.kv_type, FACET_KV_F32);
    plan(512, 1, FACET_WF_F16, 1ull << 40);
    assert_int_equal(P.kv_type, FACET_KV_F16);
    plan(512, 1, FACET_WF_Q8, 1ull << 40);
    assert_int_equal(P.kv_type, FACET_KV_BF16);
    plan(512, 1, FACET_WF_BF16, 1ull << 40);
    /* groups: 5 windowed, 1 global, ... , and 2 windowed at the end */
    assert_int_equal(P.n_groups, 21);
    assert_int_equal(P.groups[0].first, 0);
    assert_int_equal(P.groups[0].last, 4);
    assert_int_equal(P.groups[1].first, 5);
    assert_int_equal(P.groups[1].sliding, 0);
    /* each group names what a session runs there: the kinds and the kernels the CPU
     * backend resolves (medgemma-27b: head_dim 128, a bf16 cache for bf16 weights) */
    char want[128];
    snprintf(want, sizeof want, "mixer attention (%s), ffn dense (%s)",
             facet_attention_kernel_name(facet_attn_path_for(facet_cpu()), FACET_KV_BF16, 128),
             facet_ukernel_select(FACET_WF_BF16)->name);
    for (int i = 0; i < P.n_groups; i++) assert_string_equal(P.groups[i].kernels, want);
}

/* Multi-head latent attention: DeepSeek-V2-Lite's shape (public config.json: 27 layers,
 * 16 heads, kv_lora_rank 512, qk_rope 64, qk_nope 128, v 128). The cache holds one slot
 * of kv_lora_rank + qk_rope_head_dim values per layer and position, whatever the heads:
 * (512 + 64) x 2 bytes (bf16) = 1152 a layer, 27 x 1152 = 31104 a token. */
static void test_mla_latent_cache(void **state) {
    (void)state;
    from_text("{\"model_type\":\"deepseek_v2\",\"vocab_size\":102400,\"hidden_size\":2048,"
              "\"intermediate_size\":10944,\"moe_intermediate_size\":1408,"
              "\"num_hidden_layers\":27,\"num_attention_heads\":16,\"num_key_value_heads\":16,"
              "\"n_shared_experts\":2,\"n_routed_experts\":64,\"num_experts_per_tok\":6,"
              "\"first_k_dense_replace\":1,\"kv_lora_rank\":512,\"q_lora_rank\":null,"
              "\"qk_rope_head_dim\":64,\"v_head_dim\":128,\"qk_nope_head_dim\":128,"
              "\"max_position_embeddings\":163840}");
    plan(4096, 1, FACET_WF_BF16, 1ull << 40);
    assert_int_equal(P.kv_bytes_per_layer_position, 1152);
    assert_int_equal(P.kv_bytes_per_token_naive, 31104);
    assert_int_equal(P.kv_bytes_per_sequence, 31104ull * 4096);
    /* per-head K and V would be 16 x (128 + 64 + 128) x 2 = 10240 bytes a layer */
    assert_non_null(strstr(P.kv_layout, "10240 bytes a layer"));
    /* DeepSeek-V3 (issue 25's figure): (512 + 64) x 61 layers x 2 bytes = 70,272 */
    read_cfg("deepseek-ai__DeepSeek-V3");
    plan(4096, 1, FACET_WF_BF16, 1ull << 45);
    assert_int_equal(P.kv_bytes_per_token_naive, 70272);
}

/* Window-inert: DeepSeek-R1-Distill-Qwen-32B names sliding_window 131072 but
 * use_sliding_window is false: every layer global. */
static void test_window_inert(void **state) {
    (void)state;
    read_cfg("deepseek-ai__DeepSeek-R1-Distill-Qwen-32B");
    plan(32768, 2, FACET_WF_BF16, 1ull << 40);
    assert_int_equal(P.n_sliding_layers, 0);
    assert_int_equal(P.kv_bytes_per_token_naive, 262144); /* 64 * 2 * 8 * 128 * 2 (bf16) */
    assert_int_equal(P.kv_bytes_per_sequence, 262144ull * 32768);
    assert_int_equal(P.weights, FACET_WF_BF16);
    assert_int_equal(P.total_bytes, P.weight_bytes[FACET_WF_BF16] + 2 * 262144ull * 32768);
    /* a window at max_position_embeddings is inert too */
    from_text("{\"model_type\":\"mistral\",\"hidden_size\":64,\"intermediate_size\":128,"
              "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
              "\"vocab_size\":100,\"max_position_embeddings\":4096,\"sliding_window\":4096}");
    plan(4096, 1, FACET_WF_F32, 1ull << 30);
    assert_int_equal(P.n_sliding_layers, 0);
    assert_int_equal(P.kv_bytes_per_sequence, 2ull * 2 * 2 * 16 * 4 * 4096);
}

/* Packing padding: rows to a multiple of 16, inputs to a multiple of 32 (stories260k-like
 * dims: hidden 64, intermediate 172, vocab 512, 8 heads of 8, 4 kv heads). */
static void test_packing_padding(void **state) {
    (void)state;
    from_text("{\"model_type\":\"llama\",\"hidden_size\":64,\"intermediate_size\":172,"
              "\"num_hidden_layers\":5,\"num_attention_heads\":8,\"num_key_value_heads\":4,"
              "\"vocab_size\":512,\"max_position_embeddings\":512,\"tie_word_embeddings\":true}");
    plan(0, 1, FACET_WF_F32, 1ull << 30);
    /* embed 512x64; per layer q,o 64x64, k,v 32x64, gate,up 172->176 rows x 64,
     * down 64 x 172->192 inputs; vectors 2*64 per layer + 64 */
    uint64_t mat = 512 * 64 + 5 * (2 * 64 * 64 + 2 * 32 * 64 + 2 * 176 * 64 + 64 * 192);
    assert_int_equal(P.weight_bytes[FACET_WF_F32], 4 * mat + 4 * (5 * 128 + 64));
    assert_int_equal(P.weight_bytes[FACET_WF_BF16], 2 * mat + 4 * (5 * 128 + 64));
    assert_int_equal(P.weight_bytes[FACET_WF_Q8], mat + mat / 16 + 4 * (5 * 128 + 64));
    /* q4: the tied embedding, the output projection, int8 (64 inputs: not Q6_K's 256s) */
    assert_int_equal(P.weight_bytes[FACET_WF_Q4],
                     (mat - 512 * 64) / 16 * 9 + 512 * 64 / 16 * 17 + 4 * (5 * 128 + 64));
    /* parameters count the real (unpadded) elements */
    assert_int_equal(P.n_params, 512 * 64 + 5 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 172 * 64 + 128) + 64);
}

/* The plan's matmul path is the kernel facet_matmul dispatches to, at every CPU level. */
static void test_matmul_paths_match_kernels(void **state) {
    (void)state;
    static const char *const levels[] = {"scalar", "avx2", "avx512", NULL};
    for (int l = 0; levels[l]; l++) {
        setenv("FACET_CPU", levels[l], 1);
        facet_cpu_refresh();
        for (int fmt = 0; fmt < FACET_WF_COUNT; fmt++)
            assert_string_equal(facet_plan_matmul_path(fmt), facet_ukernel_select((facet_wformat)fmt)->name);
    }
    unsetenv("FACET_CPU");
    facet_cpu_refresh();
}

static void test_bad_options(void **state) {
    (void)state;
    read_cfg("meta-llama__Llama-2-7b-hf");
    facet_error err;
    facet_plan_opts o = {.ctx = 5000, .batch = 1, .weights = FACET_PLAN_AUTO, .mem_available = 1};
    assert_int_equal(facet_plan_make(&F, &o, &P, &err), FACET_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "max_position_embeddings (4096)"));
    o.ctx = 10;
    o.batch = -1;
    assert_int_equal(facet_plan_make(&F, &o, &P, &err), FACET_E_INVALID_ARGUMENT);
    int fmt;
    assert_int_equal(facet_plan_format_parse("int8", &fmt), 0);
    assert_int_equal(fmt, FACET_WF_Q8);
    assert_int_equal(facet_plan_format_parse("q4", &fmt), 0);
    assert_int_equal(fmt, FACET_WF_Q4);
    assert_int_equal(facet_plan_format_parse("q5", &fmt), -1);
    /* a family read leniently (no num_attention_heads, no intermediate_size) has no plan */
    read_cfg("../outside/rwkv");
    o.ctx = 0;
    o.batch = 1;
    assert_int_equal(facet_plan_make(&F, &o, &P, &err), FACET_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "facts incomplete"));
}

/* Mamba (issue 26): no KV cache; a fixed state per sequence, by hand: 64 layers x
 * d_inner 5120 x (conv_kernel 4 - 1 + state_size 16) float32 = 24,903,680 bytes. */
static void test_mamba_state(void **state) {
    (void)state;
    read_cfg("state-spaces__mamba-2.8b-hf");
    facet_plan_opts o = {.ctx = 4096, .batch = 8, .weights = FACET_WF_F32,
                         .mem_available = 64ull << 30};
    facet_error err;
    assert_int_equal(facet_plan_make(&F, &o, &P, &err), FACET_OK);
    assert_int_equal(P.kv_bytes_per_sequence, 0);
    assert_int_equal(P.kv_bytes_per_token_naive, 0);
    assert_int_equal(P.state_bytes_per_sequence, 64ull * 5120 * 19 * 4);
    assert_int_equal(P.total_bytes, P.weight_bytes[FACET_WF_F32] + 8 * 64ull * 5120 * 19 * 4);
    /* parameters by hand: embeddings 50280 x 2560 (tied) + final norm 2560 + per layer
     * in_proj 10240 x 2560, x_proj 192 x 5120, dt_proj 5120 x 160, out_proj 2560 x 5120,
     * norm 2560, conv 5120 x 4 + bias 5120, dt bias 5120, A_log 5120 x 16, D 5120 */
    uint64_t layer = 10240ull * 2560 + 192ull * 5120 + 5120ull * 160 + 2560ull * 5120 + 2560 +
                     5120ull * 4 + 5120 + 5120 + 5120ull * 16 + 5120;
    assert_int_equal(P.n_params, 50280ull * 2560 + 2560 + 64 * layer);
    /* the context does not change the state */
    o.ctx = 16;
    assert_int_equal(facet_plan_make(&F, &o, &P, &err), FACET_OK);
    assert_int_equal(P.state_bytes_per_sequence, 64ull * 5120 * 19 * 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_gqa),
        cmocka_unit_test(test_mamba_state),
        cmocka_unit_test(test_mistral_window),
        cmocka_unit_test(test_gemma3_local_global),
        cmocka_unit_test(test_window_inert),
        cmocka_unit_test(test_mla_latent_cache),
        cmocka_unit_test(test_packing_padding),
        cmocka_unit_test(test_matmul_paths_match_kernels),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
