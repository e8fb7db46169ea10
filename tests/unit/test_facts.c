/* test_facts.c — config.json -> facts, checked against the values written in the real
 * configs of tests/data/configs (and their INDEX.md) and the transformers class defaults. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/facts.h"
#include "model/table.h"

static facet_facts F; /* large; one static instance */

static void read_ok(const char *model) {
    char dir[1024];
    facet_error err;
    snprintf(dir, sizeof dir, "%s/configs/%s", FACET_TEST_DATA, model);
    facet_status st = facet_facts_read(dir, &F, &err);
    if (st != FACET_OK) fprintf(stderr, "%s: %s\n", model, err.message);
    assert_int_equal(st, FACET_OK);
}

static facet_status from_text(const char *text, facet_error *err) {
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    assert_non_null(j);
    facet_status st = facet_facts_from_json(j, NULL, "config.json", &F, err);
    json_decref(j);
    return st;
}

static int has_key(const char *key) {
    for (int i = 0; i < F.n_config_keys; i++)
        if (!strcmp(F.config_keys[i].key, key)) return 1;
    return 0;
}

static void test_llama32_1b(void **state) {
    (void)state;
    read_ok("meta-llama__Llama-3.2-1B-Instruct__resaved");
    assert_string_equal(F.model_type, "llama");
    assert_string_equal(F.architecture, "LlamaForCausalLM");
    assert_int_equal(F.hidden_size, 2048);
    assert_int_equal(F.num_hidden_layers, 16);
    assert_int_equal(F.num_attention_heads, 32);
    assert_int_equal(F.num_key_value_heads, 8);
    assert_int_equal(F.head_dim, 64);
    assert_true(F.head_dim_explicit);
    assert_int_equal(F.vocab_size, 128256);
    assert_int_equal(F.intermediate_size, 8192);
    assert_int_equal(F.max_position_embeddings, 131072);
    assert_int_equal(F.rope_type, FACET_ROPE_LLAMA3);
    assert_true(F.rope_theta == 500000.0);
    assert_true(F.rope_factor == 32.0);
    assert_true(F.rope_low_freq_factor == 1.0);
    assert_true(F.rope_high_freq_factor == 4.0);
    assert_int_equal(F.rope_original_max_position_embeddings, 8192);
    assert_true(F.rms_norm_eps == 1e-5);
    assert_int_equal(F.act, FACET_ACT_SILU);
    assert_int_equal(F.tie_word_embeddings, 1);
    assert_int_equal(F.qkv_bias, 0);
    assert_int_equal(F.qk_norm, 0);
    assert_int_equal(F.bos_token_id, 128000);
    assert_int_equal(F.n_eos, 3);
    assert_int_equal(F.eos_token_ids[0], 128001);
    assert_int_equal(F.eos_token_ids[1], 128008);
    assert_int_equal(F.eos_token_ids[2], 128009);
    assert_true(fabs(F.attn_scale - 0.125) < 1e-15);
    assert_true(F.partial_rotary_factor == 1.0);
    assert_int_equal(F.n_sliding_layers, 0);
    assert_int_equal(F.sliding_window, 0);
    assert_true(F.family_known);
    /* keys kept for the table to classify, none consumed twice */
    assert_true(has_key("pretraining_tp"));
    assert_true(has_key("torch_dtype"));
    assert_false(has_key("hidden_size"));
    assert_false(has_key("rope_scaling"));
}

static void test_llama2_defaults(void **state) {
    (void)state;
    read_ok("meta-llama__Llama-2-7b-hf"); /* no rope_theta, no num_key_value_heads? */
    assert_int_equal(F.num_key_value_heads, 32);
    assert_int_equal(F.head_dim, 128); /* 4096 / 32 */
    assert_false(F.head_dim_explicit);
    assert_true(F.rope_theta == 10000.0); /* LlamaConfig default */
    assert_int_equal(F.rope_type, FACET_ROPE_DEFAULT);
    assert_int_equal(F.tie_word_embeddings, 0);
    assert_int_equal(F.bos_token_id, 1);
    assert_int_equal(F.n_eos, 1);
    assert_int_equal(F.eos_token_ids[0], 2);
}

static void test_qwen25_v5_rope_parameters(void **state) {
    (void)state;
    read_ok("Qwen__Qwen2.5-1.5B-Instruct__resaved");
    assert_string_equal(F.model_type, "qwen2");
    assert_true(F.rope_theta == 1000000.0); /* from rope_parameters */
    assert_int_equal(F.rope_type, FACET_ROPE_DEFAULT);
    assert_int_equal(F.head_dim, 128);      /* 1536 / 12 */
    assert_int_equal(F.num_key_value_heads, 2);
    assert_int_equal(F.qkv_bias, 1);        /* Qwen2 attention: q/k/v bias, no o bias */
    assert_int_equal(F.o_bias, 0);
    assert_int_equal(F.tie_word_embeddings, 1);
    assert_int_equal(F.sliding_window, 0);  /* null */
    assert_int_equal(F.n_sliding_layers, 0);
    /* eos: config 151645 first, then generation_config adds 151643 */
    assert_int_equal(F.n_eos, 2);
    assert_int_equal(F.eos_token_ids[0], 151645);
    assert_int_equal(F.eos_token_ids[1], 151643);
    assert_false(has_key("rope_parameters"));
    assert_false(has_key("layer_types"));
}

static void test_qwen_distill_window_disabled(void **state) {
    (void)state;
    read_ok("deepseek-ai__DeepSeek-R1-Distill-Qwen-32B");
    assert_int_equal(F.sliding_window, 131072);
    assert_int_equal(F.window_inert, 1); /* use_sliding_window false */
    assert_int_equal(F.n_sliding_layers, 0);
    assert_int_equal(F.head_dim, 128);
    assert_int_equal(F.num_key_value_heads, 8);
}

static void test_qwen3(void **state) {
    (void)state;
    read_ok("Qwen__Qwen3-8B__resaved");
    assert_int_equal(F.head_dim, 128);
    assert_int_equal(F.qk_norm, 1);   /* Qwen3 modeling: q_norm/k_norm */
    assert_int_equal(F.qkv_bias, 0);  /* attention_bias false */
    assert_int_equal(F.n_sliding_layers, 0);
    assert_int_equal(F.tie_word_embeddings, 0);
    assert_true(has_key("dtype"));
}

static void test_smollm3_no_rope_layers(void **state) {
    (void)state;
    read_ok("HuggingFaceTB__SmolLM3-3B");
    /* no_rope_layers: 1 = RoPE, 0 = none; every 4th layer (3, 7, ...) has none */
    assert_int_equal(F.n_no_rope_layers, 9);
    for (int i = 0; i < 36; i++) assert_int_equal(F.layer_no_rope[i], (i + 1) % 4 == 0);
    assert_int_equal(F.n_sliding_layers, 0);
}

static void test_medgemma_text_config(void **state) {
    (void)state;
    read_ok("google__medgemma-27b-it");
    assert_string_equal(F.model_type, "gemma3");
    assert_string_equal(F.text_model_type, "gemma3_text");
    assert_int_equal(F.text_config, 1);
    assert_true(F.family_known); /* the table profiles gemma3 (its text decoder) */
    assert_int_equal(F.hidden_size, 5376);
    assert_int_equal(F.num_hidden_layers, 62);
    assert_int_equal(F.head_dim, 128);
    assert_int_equal(F.num_key_value_heads, 16);
    assert_int_equal(F.sliding_window, 1024);
    assert_int_equal(F.window_inert, 0);
    assert_int_equal(F.n_sliding_layers, 52); /* 62 layers, every 6th full: 10 full */
    assert_int_equal(F.layer_sliding[0], 1);
    assert_int_equal(F.layer_sliding[5], 0);
    assert_int_equal(F.layer_sliding[61], 1);
    assert_int_equal(F.rope_type, FACET_ROPE_LINEAR);
    assert_true(F.rope_factor == 8.0);
    assert_true(F.rope_theta == 1000000.0);
    assert_true(F.rope_local_base_freq == 10000.0);
    assert_true(fabs(F.attn_scale - 1.0 / sqrt(168.0)) < 1e-15);
    assert_int_equal(F.act, FACET_ACT_GELU_TANH);
    assert_int_equal(F.norm_weight_offset, 1);
    assert_int_equal(F.post_norms, 1);
    assert_int_equal(F.qk_norm, 1);
    assert_true(fabs(F.embedding_multiplier - sqrt(5376.0)) < 1e-12);
    assert_int_equal(F.tie_word_embeddings, 1); /* Gemma3 class default */
    assert_int_equal(F.bos_token_id, 2);
    assert_int_equal(F.n_eos, 2);
    assert_int_equal(F.eos_token_ids[0], 1);
    assert_int_equal(F.eos_token_ids[1], 106);
    assert_true(has_key("vision_config"));
}

static void test_phi35_longrope(void **state) {
    (void)state;
    read_ok("microsoft__Phi-3.5-mini-instruct");
    assert_int_equal(F.rope_type, FACET_ROPE_LONGROPE);
    assert_string_equal(F.rope_type_name, "longrope");
    assert_int_equal(F.n_rope_short, 48);
    assert_int_equal(F.n_rope_long, 48);
    assert_true(F.rope_short_factor[0] == 1.0);
    assert_true(F.rope_long_factor[47] == 64.83999633789062);
    assert_int_equal(F.rope_original_max_position_embeddings, 4096);
    assert_int_equal(F.head_dim, 96);
    assert_int_equal(F.window_inert, 1); /* 262144 >= 131072 */
    assert_int_equal(F.n_eos, 3);        /* 32000, then 32007, 32001 */
    assert_int_equal(F.eos_token_ids[0], 32000);
    assert_int_equal(F.eos_token_ids[1], 32007);
    assert_int_equal(F.eos_token_ids[2], 32001);
}

static void test_gemma_hidden_activation(void **state) {
    (void)state;
    read_ok("google__gemma-2b-it");
    /* current transformers: GemmaMLP is LlamaMLP, ACT2FN[hidden_act] = "gelu" (erf) */
    assert_int_equal(F.act, FACET_ACT_GELU);
    assert_int_equal(F.head_dim, 256);
    assert_int_equal(F.num_key_value_heads, 1);
    assert_int_equal(F.tie_word_embeddings, 1);
}

/* MambaConfig (issue 26): every layer a Mamba mixer; intermediate_size = expand x hidden;
 * the state-spaces keys MambaConfig does not read are consumed (n_layer must agree) */
static void test_mamba(void **state) {
    (void)state;
    read_ok("state-spaces__mamba-2.8b-hf");
    assert_string_equal(F.model_type, "mamba");
    assert_true(F.family_known);
    assert_int_equal(F.n_ssm_layers, 64);
    assert_int_equal(F.layer_ssm[63], 1);
    assert_int_equal(F.ssm_inner, 5120);
    assert_int_equal(F.ssm_state_size, 16);
    assert_int_equal(F.ssm_conv_kernel, 4);
    assert_int_equal(F.ssm_dt_rank, 160);
    assert_int_equal(F.ssm_conv_bias, 1);
    assert_int_equal(F.ssm_proj_bias, 0);
    assert_int_equal(F.num_attention_heads, 0);
    assert_true(F.rms_norm_eps == 1e-5);
    assert_int_equal(F.tie_word_embeddings, 1);
}

/* FalconConfig (issue 28): falcon-7b-instruct's values by hand; the class's layout keys
 * (FalconAttention): multi_query is one KV head, the new decoder architecture
 * num_kv_heads with two norms by default, and the combinations the modeling code cannot
 * build are refused by key. */
static void test_falcon(void **state) {
    (void)state;
    read_ok("tiiuae__falcon-7b-instruct");
    assert_true(F.family_known);
    assert_int_equal(F.hidden_size, 4544);
    assert_int_equal(F.num_attention_heads, 71);
    assert_int_equal(F.num_key_value_heads, 1); /* multi_query */
    assert_int_equal(F.head_dim, 64);
    assert_int_equal(F.intermediate_size, 4 * 4544); /* ffn_hidden_size absent */
    assert_int_equal(F.max_position_embeddings, 2048);
    assert_int_equal(F.act, FACET_ACT_GELU);
    assert_true(F.layer_norm && F.ffn_ungated && F.parallel_residual && F.parallel_one_norm);
    assert_false(F.qkv_bias);
    assert_true(F.rms_norm_eps == 1e-5);
    assert_int_equal(F.tie_word_embeddings, 1);
    /* left to the table: seven bookkeeping keys; alibi (false) is read (read_falcon) */
    assert_int_equal(F.n_config_keys, 7);
    assert_true(!has_key("alibi") && !F.alibi && !has_key("multi_query") && !has_key("parallel_attn") &&
                !has_key("apply_residual_connection_post_layernorm"));
    facet_error err;
    assert_int_equal(from_text("{\"model_type\": \"falcon\", \"hidden_size\": 256, "
                               "\"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
                               "\"vocab_size\": 512, \"new_decoder_architecture\": true, "
                               "\"num_kv_heads\": 2, \"ffn_hidden_size\": 96, \"bias\": true}", &err),
                     FACET_OK);
    assert_int_equal(F.num_key_value_heads, 2);
    assert_true(F.parallel_residual && !F.parallel_one_norm); /* ln_attn and ln_mlp */
    assert_int_equal(F.intermediate_size, 96);
    assert_true(F.qkv_bias && F.o_bias);
    assert_int_equal(from_text("{\"model_type\": \"falcon\", \"hidden_size\": 256, "
                               "\"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
                               "\"vocab_size\": 512, \"new_decoder_architecture\": true, "
                               "\"num_ln_in_parallel_attn\": 1}", &err),
                     FACET_OK);
    assert_int_equal(F.num_key_value_heads, 8);
    assert_true(F.parallel_one_norm);
    assert_int_equal(from_text("{\"model_type\": \"falcon\", \"hidden_size\": 256, "
                               "\"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
                               "\"vocab_size\": 512, \"multi_query\": false, "
                               "\"parallel_attn\": false}", &err),
                     FACET_OK);
    assert_int_equal(F.num_key_value_heads, 8);
    assert_false(F.parallel_residual);
    assert_int_equal(from_text("{\"model_type\": \"falcon\", \"hidden_size\": 256, "
                               "\"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
                               "\"vocab_size\": 512, \"new_decoder_architecture\": true, "
                               "\"parallel_attn\": false}", &err),
                     FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "parallel_attn is false"));
    assert_int_equal(from_text("{\"model_type\": \"falcon\", \"hidden_size\": 256, "
                               "\"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
                               "\"vocab_size\": 512, \"multi_query\": false, \"num_kv_heads\": 2}",
                               &err),
                     FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "num_kv_heads is 2"));
}

/* BloomConfig (issue 28): its n_layer / n_head spellings, the MLP fixed at 4 x hidden, ALiBi
 * (no layer rotates), the embeddings' LayerNorm; the Megatron keys it never reads are
 * consumed; apply_residual_connection_post_layernorm runs only false. */
static void test_bloom(void **state) {
    (void)state;
    facet_error err;
    const char *cfg = "{\"model_type\": \"bloom\", \"hidden_size\": 1024, \"n_layer\": 24, "
                      "\"n_head\": 16, \"vocab_size\": 250880, \"n_inner\": null, "
                      "\"offset_alibi\": 100, \"skip_bias_add\": true, "
                      "\"apply_residual_connection_post_layernorm\": %s}";
    char text[512];
    snprintf(text, sizeof text, cfg, "false");
    assert_int_equal(from_text(text, &err), FACET_OK);
    assert_int_equal(F.num_hidden_layers, 24);
    assert_int_equal(F.num_attention_heads, 16);
    assert_int_equal(F.head_dim, 64);
    assert_int_equal(F.intermediate_size, 4096);
    assert_true(F.alibi && F.alibi_bias_max == 8.0 && F.embed_norm && F.layer_norm);
    assert_int_equal(F.n_no_rope_layers, 24);
    assert_int_equal(F.act, FACET_ACT_GELU_TANH);
    assert_int_equal(F.tie_word_embeddings, 1);
    assert_int_equal(F.n_config_keys, 0);
    snprintf(text, sizeof text, cfg, "true");
    assert_int_equal(from_text(text, &err), FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "apply_residual_connection_post_layernorm is true"));
}

/* MptConfig (issue 28): d_model / n_heads / n_layers / max_seq_len, attn_config's
 * softmax_scale; what MptModel fixes must hold its value (refused by key otherwise). */
static void test_mpt(void **state) {
    (void)state;
    facet_error err;
    const char *cfg = "{\"model_type\": \"mpt\", \"d_model\": 4096, \"n_heads\": 32, "
                      "\"n_layers\": 32, \"max_seq_len\": 2048, \"vocab_size\": 50432, "
                      "\"expansion_ratio\": 4, \"no_bias\": true, \"learned_pos_emb\": true, "
                      "\"norm_type\": \"low_precision_layernorm\", "
                      "\"attn_config\": {\"alibi\": true, \"alibi_bias_max\": 8, %s}}";
    char text[768];
    snprintf(text, sizeof text, cfg, "\"softmax_scale\": 0.25, \"qk_ln\": false");
    assert_int_equal(from_text(text, &err), FACET_OK);
    assert_int_equal(F.hidden_size, 4096);
    assert_int_equal(F.num_hidden_layers, 32);
    assert_int_equal(F.head_dim, 128);
    assert_int_equal(F.intermediate_size, 16384);
    assert_int_equal(F.max_position_embeddings, 2048);
    assert_true(F.alibi && F.layer_norm && F.ffn_ungated && F.attn_scale == 0.25);
    assert_int_equal(F.act, FACET_ACT_GELU);
    assert_int_equal(F.n_config_keys, 0);
    snprintf(text, sizeof text, cfg, "\"qk_ln\": true");
    assert_int_equal(from_text(text, &err), FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "attn_config.qk_ln is true"));
    snprintf(text, sizeof text, cfg, "\"clip_qkv\": 6");
    assert_int_equal(from_text(text, &err), FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "attn_config.clip_qkv is 6"));
}

/* GPTJConfig (issue 28): GPT-J-6B's shape keys, rotary_dim 64 of head_dim 256 (a quarter,
 * in pairs), one norm in parallel, untied; rotary_dim past the head is refused by key. */
static void test_gptj(void **state) {
    (void)state;
    facet_error err;
    const char *cfg = "{\"model_type\": \"gptj\", \"n_embd\": 4096, \"n_head\": 16, "
                      "\"n_layer\": 28, \"n_positions\": 2048, \"n_inner\": null, "
                      "\"vocab_size\": 50400, \"rotary\": true, \"rotary_dim\": %d, "
                      "\"activation_function\": \"gelu_new\", \"tie_word_embeddings\": false}";
    char text[512];
    snprintf(text, sizeof text, cfg, 64);
    assert_int_equal(from_text(text, &err), FACET_OK);
    assert_int_equal(F.head_dim, 256);
    assert_int_equal(F.intermediate_size, 16384);
    assert_true(F.partial_rotary_factor == 0.25 && F.rope_interleaved);
    assert_true(F.parallel_residual && F.parallel_one_norm && F.layer_norm && F.ffn_ungated);
    assert_int_equal(F.act, FACET_ACT_GELU_TANH);
    assert_int_equal(F.tie_word_embeddings, 0);
    assert_int_equal(F.n_config_keys, 0);
    snprintf(text, sizeof text, cfg, 512);
    assert_int_equal(from_text(text, &err), FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "rotary_dim is 512"));
}

/* CohereConfig (issue 28): logit_scale 0.0625 is a logits divisor of 16, interleaved
 * rotary, one bias-free LayerNorm in parallel; use_qk_norm is refused by key. */
static void test_cohere(void **state) {
    (void)state;
    facet_error err;
    const char *cfg = "{\"model_type\": \"cohere\", \"hidden_size\": 8192, "
                      "\"num_hidden_layers\": 40, \"num_attention_heads\": 64, "
                      "\"intermediate_size\": 22528, \"vocab_size\": 256000, "
                      "\"logit_scale\": 0.0625, \"use_qk_norm\": %s}";
    char text[512];
    snprintf(text, sizeof text, cfg, "false");
    assert_int_equal(from_text(text, &err), FACET_OK);
    assert_true(F.logits_scaling == 16.0 && F.rope_interleaved && F.layer_norm);
    assert_true(F.parallel_residual && F.parallel_one_norm && !F.ffn_ungated);
    assert_int_equal(F.tie_word_embeddings, 1);
    assert_int_equal(F.n_config_keys, 0);
    snprintf(text, sizeof text, cfg, "true");
    assert_int_equal(from_text(text, &err), FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "use_qk_norm is true"));
}

/* Cohere2Config (issue 28): Cohere's block with layer i windowed iff (i + 1) %
 * sliding_window_pattern (default 4), or by layer_types; Cohere2Attention rotates only
 * the windowed layers, so the full ones have no positions, a window past the context
 * (inert) still rotates its layers and a null window rotates none (hand-worked). */
#define COHERE2_BASE "\"model_type\": \"cohere2\", \"hidden_size\": 256, " \
                     "\"num_hidden_layers\": 8, \"num_attention_heads\": 8, " \
                     "\"intermediate_size\": 512, \"vocab_size\": 512"
static void test_cohere2(void **state) {
    (void)state;
    facet_error err;
    static const uint8_t by4[8] = {1, 1, 1, 0, 1, 1, 1, 0}, alt[8] = {0, 1, 0, 1, 0, 1, 0, 1};
    /* class defaults: window 4096, pattern 4, logit_scale 0.0625, tied */
    assert_int_equal(from_text("{" COHERE2_BASE "}", &err), FACET_OK);
    assert_true(F.sliding_window == 4096 && F.n_sliding_layers == 6 && F.n_no_rope_layers == 2);
    assert_true(F.logits_scaling == 16.0 && F.rope_interleaved && F.layer_norm);
    assert_true(F.parallel_residual && F.parallel_one_norm && F.tie_word_embeddings);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(F.layer_sliding[i], by4[i]);
        assert_int_equal(F.layer_no_rope[i], !by4[i]);
    }
    /* layer_types wins where sliding_window_pattern is absent */
    assert_int_equal(from_text("{" COHERE2_BASE ", \"layer_types\": [\"full_attention\", "
                               "\"sliding_attention\", \"full_attention\", \"sliding_attention\", "
                               "\"full_attention\", \"sliding_attention\", \"full_attention\", "
                               "\"sliding_attention\"]}", &err), FACET_OK);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(F.layer_sliding[i], alt[i]);
        assert_int_equal(F.layer_no_rope[i], !alt[i]);
    }
    /* a window past max_position_embeddings never binds, yet its layers rotate */
    assert_int_equal(from_text("{" COHERE2_BASE ", \"sliding_window_pattern\": 2, "
                               "\"sliding_window\": 8192, \"max_position_embeddings\": 8192}",
                               &err), FACET_OK);
    assert_true(F.window_inert && F.n_sliding_layers == 0 && F.n_no_rope_layers == 4);
    for (int i = 0; i < 8; i++) assert_int_equal(F.layer_no_rope[i], alt[i]); /* odd layers full */
    /* no window: Cohere2Attention.sliding_window is None everywhere, no layer rotates */
    assert_int_equal(from_text("{" COHERE2_BASE ", \"sliding_window\": null}", &err), FACET_OK);
    assert_true(F.n_sliding_layers == 0 && F.n_no_rope_layers == 8);
    /* the two spellings disagreeing, whether or not the window binds */
    assert_int_equal(from_text("{" COHERE2_BASE ", \"sliding_window\": null, "
                               "\"sliding_window_pattern\": 4, \"layer_types\": [\"full_attention\", "
                               "\"sliding_attention\", \"full_attention\", \"sliding_attention\", "
                               "\"full_attention\", \"sliding_attention\", \"full_attention\", "
                               "\"sliding_attention\"]}", &err), FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "layer_types[0]"));
    /* a null sliding_window_pattern beside layer_types names nothing (transformers >= 4.53
     * never reads it there) */
    assert_int_equal(from_text("{" COHERE2_BASE ", \"sliding_window_pattern\": null, "
                               "\"layer_types\": [\"full_attention\", "
                               "\"sliding_attention\", \"full_attention\", \"sliding_attention\", "
                               "\"full_attention\", \"sliding_attention\", \"full_attention\", "
                               "\"sliding_attention\"]}", &err), FACET_OK);
    assert_true(F.n_sliding_layers == 4 && F.layer_no_rope[0] && !F.layer_no_rope[1]);
    /* head_dim other than hidden_size / heads: Cohere2Config overwrites it */
    assert_int_equal(from_text("{" COHERE2_BASE ", \"head_dim\": 64}", &err), FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "head_dim is 64"));
    assert_int_equal(from_text("{" COHERE2_BASE ", \"head_dim\": 32}", &err), FACET_OK);
}

/* BaichuanConfig (issue 28): the position scheme and the output head from the keys the
 * releases' configuration classes define (facts.c read_baichuan). */
#define BAICHUAN_BASE "\"model_type\": \"baichuan\", \"hidden_size\": 256, \"num_hidden_layers\": 2, " \
                      "\"num_attention_heads\": 8, \"intermediate_size\": 512"
static void test_baichuan(void **state) {
    (void)state;
    facet_error err;
    /* the corpus's Baichuan2-13B-Chat: model_max_length alone (ALiBi), vocab 125696 */
    read_ok("baichuan-inc__Baichuan2-13B-Chat");
    assert_true(F.family_known && F.alibi && F.no_rope && !F.alibi_pre_scale);
    assert_true(F.alibi_bias_max == 8.0 && F.max_position_embeddings == 4096);
    assert_true(F.lm_head_l2_norm && !F.qkv_bias && !F.o_bias && !F.tie_word_embeddings);
    assert_int_equal(F.head_dim, 128);
    /* Baichuan2-7B's keys: max_position_embeddings decides (rotary); model_max_length
     * beside it is the tokenizer's */
    assert_int_equal(from_text("{" BAICHUAN_BASE ", \"vocab_size\": 125696, "
                               "\"max_position_embeddings\": 4096, \"model_max_length\": 2048}", &err),
                     FACET_OK);
    assert_true(!F.alibi && !F.no_rope && F.lm_head_l2_norm && F.max_position_embeddings == 4096);
    /* Baichuan 1 (13B): vocab 64000, no z_loss_weight: a plain lm_head */
    assert_int_equal(from_text("{" BAICHUAN_BASE ", \"vocab_size\": 64000, \"model_max_length\": 4096}", &err),
                     FACET_OK);
    assert_true(F.alibi && !F.lm_head_l2_norm);
    /* Baichuan 2's class key marks NormHead whatever the vocabulary */
    assert_int_equal(from_text("{" BAICHUAN_BASE ", \"vocab_size\": 512, \"z_loss_weight\": 0, "
                               "\"model_max_length\": 4096}", &err),
                     FACET_OK);
    assert_true(F.lm_head_l2_norm);
    /* ambiguous: neither position key; a vocabulary of neither release */
    assert_int_equal(from_text("{" BAICHUAN_BASE ", \"vocab_size\": 64000}", &err), FACET_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "max_position_embeddings"));
    assert_non_null(strstr(err.message, "model_max_length"));
    assert_int_equal(from_text("{" BAICHUAN_BASE ", \"vocab_size\": 512, \"model_max_length\": 4096}", &err),
                     FACET_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "vocab_size 512"));
    assert_non_null(strstr(err.message, "z_loss_weight"));
    /* NormHead shares no rows with the embeddings */
    assert_int_equal(from_text("{" BAICHUAN_BASE ", \"vocab_size\": 125696, \"model_max_length\": 4096, "
                               "\"tie_word_embeddings\": true}", &err),
                     FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "tie_word_embeddings"));
}

/* FalconConfig's alibi (falcon-rw-1b): ALiBi scaled with q.k, no rotary. */
static void test_falcon_alibi(void **state) {
    (void)state;
    facet_error err;
    assert_int_equal(from_text("{\"model_type\": \"falcon\", \"alibi\": true, \"bias\": true, "
                               "\"hidden_size\": 2048, \"num_hidden_layers\": 24, "
                               "\"num_attention_heads\": 32, \"multi_query\": false, "
                               "\"parallel_attn\": false, \"vocab_size\": 50304}", &err),
                     FACET_OK);
    assert_true(F.alibi && F.alibi_pre_scale && F.no_rope && F.alibi_bias_max == 8.0);
    assert_true(F.attn_scale == 1.0 / 8.0 && F.num_key_value_heads == 32 && !F.lm_head_l2_norm);
    assert_false(has_key("alibi")); /* read, not left for the table to refuse */
}

/* InternLM2Config (issue 28): internlm2-chat-7b's values by hand; `bias` (default true)
 * decides the wqkv / wo biases. */
static void test_internlm2(void **state) {
    (void)state;
    read_ok("internlm__internlm2-chat-7b");
    assert_true(F.family_known);
    assert_int_equal(F.num_key_value_heads, 8);
    assert_int_equal(F.head_dim, 128);
    assert_true(F.rope_theta == 1e6 && F.rms_norm_eps == 1e-5);
    assert_false(F.qkv_bias || F.o_bias || F.layer_norm);
    assert_int_equal(F.tie_word_embeddings, 0);
    facet_error err;
    assert_int_equal(from_text("{\"model_type\": \"internlm2\", \"hidden_size\": 256, "
                               "\"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
                               "\"intermediate_size\": 512, \"vocab_size\": 512}", &err),
                     FACET_OK);
    assert_true(F.qkv_bias && F.o_bias && F.rms_norm_eps == 1e-6);
}

/* MiniCPMConfig (issue 28): MiniCPM-2B's muP keys become the multipliers, by hand:
 * scale_emb 12; scale_depth 1.4 / sqrt(40 layers); logits / (2304 / 256) = / 9. Absent,
 * each is 1 (so logits / hidden_size); a non-positive one is refused by key. */
static void test_minicpm(void **state) {
    (void)state;
    facet_error err;
#define MINICPM "{\"model_type\": \"minicpm\", \"hidden_size\": 2304, \"num_hidden_layers\": 40, " \
                "\"num_attention_heads\": 36, \"intermediate_size\": 5760, \"vocab_size\": 122753"
    assert_int_equal(from_text(MINICPM ", \"scale_emb\": 12, \"dim_model_base\": 256, "
                                       "\"scale_depth\": 1.4}", &err), FACET_OK);
    assert_true(F.family_known);
    assert_true(F.embedding_multiplier == 12.0);
    assert_true(fabs(F.residual_multiplier - 1.4 / sqrt(40.0)) < 1e-15);
    assert_true(F.logits_scaling == 9.0);
    assert_int_equal(F.tie_word_embeddings, 1);
    assert_true(F.rms_norm_eps == 1e-6 && F.rope_theta == 10000.0);
    assert_int_equal(from_text(MINICPM "}", &err), FACET_OK);
    assert_true(F.embedding_multiplier == 1.0 && F.logits_scaling == 2304.0);
    assert_true(fabs(F.residual_multiplier - 1.0 / sqrt(40.0)) < 1e-15);
    assert_int_not_equal(from_text(MINICPM ", \"dim_model_base\": 0}", &err), FACET_OK);
    assert_non_null(strstr(err.message, "dim_model_base"));
#undef MINICPM
}

/* FalconH1Config (issue 26) by hand: the class defaults (mamba_d_ssm 1024 unless null,
 * then mamba_expand x hidden; mamba_d_head "auto"; 128 heads, 1 group, state 256; the
 * norm off), the muP keys as facts (lm_head_multiplier as 1 / logits_scaling), the
 * norm's placement, the biases, every layer an attention layer with a Mamba-2 beside it. */
static void test_falcon_h1(void **state) {
    (void)state;
    facet_error err;
#define FALCON_H1 "{\"model_type\": \"falcon_h1\", \"hidden_size\": 1024, " \
                  "\"num_hidden_layers\": 4, \"num_attention_heads\": 8, " \
                  "\"num_key_value_heads\": 2, \"head_dim\": 64, \"intermediate_size\": 2048, " \
                  "\"vocab_size\": 32784"
    assert_int_equal(from_text(FALCON_H1 "}", &err), FACET_OK);
    assert_true(F.family_known && F.ssm_parallel && F.ssm_version == 2 && F.ssm_ffn);
    assert_int_equal(F.n_ssm_layers, 0);
    assert_int_equal(F.ssm_inner, 1024);
    assert_int_equal(F.ssm_heads, 128);
    assert_int_equal(F.ssm_head_dim, 8);
    assert_int_equal(F.ssm_groups, 1);
    assert_int_equal(F.ssm_state_size, 256);
    assert_int_equal(F.ssm_norm, FACET_SSM_NORM_NONE);
    assert_true(F.mup && F.key_multiplier == 1.0 && F.logits_scaling == 1.0);
    assert_int_equal(F.tie_word_embeddings, 0);
    assert_int_equal(from_text("{\"model_type\": \"falcon_h1\", \"hidden_size\": 1024, "
                               "\"num_hidden_layers\": 4, \"num_attention_heads\": 16, "
                               "\"intermediate_size\": 2048, \"vocab_size\": 32784}", &err),
                     FACET_OK);
    assert_int_equal(F.num_key_value_heads, 8); /* FalconH1Config's default, not the heads */
    assert_int_equal(from_text(FALCON_H1 ", \"mamba_d_ssm\": null, \"mamba_n_heads\": 32, "
                                         "\"mamba_n_groups\": 4, \"mamba_rms_norm\": true, "
                                         "\"mamba_proj_bias\": true, \"projectors_bias\": true, "
                                         "\"lm_head_multiplier\": 0.0390625, "
                                         "\"embedding_multiplier\": 5.5, \"key_multiplier\": 0.25, "
                                         "\"ssm_multipliers\": [1, 2, 3, 4, 5], "
                                         "\"mlp_multipliers\": [0.5, 0.75], "
                                         "\"mamba_use_mlp\": true, \"attn_layer_indices\": null}",
                               &err), FACET_OK);
    assert_int_equal(F.ssm_inner, 2048); /* mamba_expand 2 x hidden */
    assert_int_equal(F.ssm_head_dim, 64);
    assert_int_equal(F.ssm_norm, FACET_SSM_NORM_BEFORE_GATE);
    assert_true(F.ssm_in_bias && F.ssm_out_bias && !F.ssm_proj_bias);
    assert_true(F.logits_scaling == 25.6 && F.embedding_multiplier == 5.5);
    assert_true(F.key_multiplier == 0.25 && F.ssm_mup[0] == 1.0 && F.ssm_mup[4] == 5.0);
    assert_true(F.mlp_gate_multiplier == 0.5 && F.mlp_down_multiplier == 0.75);
    assert_false(has_key("mamba_use_mlp") || has_key("attn_layer_indices"));
    assert_int_equal(from_text(FALCON_H1 ", \"mamba_rms_norm\": true, "
                                         "\"mamba_norm_before_gate\": false}", &err), FACET_OK);
    assert_int_equal(F.ssm_norm, FACET_SSM_NORM_GATED);
    assert_int_not_equal(from_text(FALCON_H1 ", \"ssm_multipliers\": [1, 2]}", &err), FACET_OK);
    assert_non_null(strstr(err.message, "ssm_multipliers"));
    assert_int_not_equal(from_text(FALCON_H1 ", \"mamba_d_head\": 16}", &err), FACET_OK);
    assert_non_null(strstr(err.message, "mamba_d_head"));
#undef FALCON_H1
}

/* ExaoneConfig (issue 28): its own keys by hand — num_layers, activation_function,
 * layer_norm_epsilon (the RMSNorm eps), intermediate_size null = 4 x hidden; tied by
 * default; no biases whatever attention_bias says (the modeling code has none). */
static void test_exaone(void **state) {
    (void)state;
    facet_error err;
    assert_int_equal(from_text("{\"model_type\": \"exaone\", \"hidden_size\": 2560, "
                               "\"num_layers\": 30, \"num_attention_heads\": 32, "
                               "\"num_key_value_heads\": 8, \"intermediate_size\": null, "
                               "\"layer_norm_epsilon\": 1e-5, \"activation_function\": \"silu\", "
                               "\"vocab_size\": 102400}", &err),
                     FACET_OK);
    assert_true(F.family_known);
    assert_int_equal(F.num_hidden_layers, 30);
    assert_int_equal(F.intermediate_size, 4 * 2560);
    assert_int_equal(F.head_dim, 80);
    assert_true(F.rms_norm_eps == 1e-5 && F.rope_theta == 10000.0);
    assert_int_equal(F.tie_word_embeddings, 1);
    assert_false(F.qkv_bias || F.o_bias || F.mlp_bias || F.layer_norm);
    assert_int_not_equal(from_text("{\"model_type\": \"exaone\", \"hidden_size\": 2560, "
                                   "\"num_attention_heads\": 32, \"intermediate_size\": 7168, "
                                   "\"vocab_size\": 102400}", &err),
                         FACET_OK);
    assert_non_null(strstr(err.message, "num_layers"));
}

/* QWenConfig (issue 28): Qwen-7B by hand — kv_channels is head_dim, the MLP is
 * intermediate_size / 2 = 11008 wide, the context seq_length (8192, not
 * max_position_embeddings 32768), rotary_emb_base the rope base, c_attn's bias always and
 * c_proj's never; no_bias false is refused by key. */
static void test_qwen(void **state) {
    (void)state;
    read_ok("Qwen__Qwen-7B");
    assert_true(F.family_known);
    assert_int_equal(F.head_dim, 128);
    assert_int_equal(F.intermediate_size, 11008);
    assert_int_equal(F.max_position_embeddings, 8192);
    assert_true(F.rope_theta == 10000.0 && F.rms_norm_eps == 1e-6);
    assert_true(F.qkv_bias && !F.o_bias && !F.mlp_bias && F.c_attn_linear);
    assert_int_equal(F.tie_word_embeddings, 0);
    facet_error err;
    assert_int_not_equal(from_text("{\"model_type\": \"qwen\", \"hidden_size\": 256, "
                                   "\"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
                                   "\"intermediate_size\": 512, \"vocab_size\": 512, "
                                   "\"seq_length\": 2048, \"no_bias\": false}", &err),
                         FACET_OK);
    assert_non_null(strstr(err.message, "no_bias"));
}

/* ChatGLMConfig (issue 28): chatglm3-6b by hand — kv_channels 128 the head, 2 multi-query
 * groups as KV heads with query_key_value in [q; k; v] blocks, ffn_hidden_size 13696,
 * padded_vocab_size 65024, the context seq_length 8192, RMSNorm eps layernorm_epsilon,
 * rotary on pairs over half the head at 10000, add_qkv_bias only; every other key read or
 * inert (none left for the table). GLM-4-9B-chat's config as transformers 4.43 saved it
 * (vocab_size and num_hidden_layers beside padded_vocab_size / num_layers, which are what
 * the model reads): base 10000 x rope_ratio 500. The class's switches, and what it
 * refuses by key. */
#define GLM_BASE "{\"model_type\": \"chatglm\", \"hidden_size\": 256, \"num_layers\": 2, " \
                 "\"num_attention_heads\": 8, \"kv_channels\": 32, \"ffn_hidden_size\": 512, " \
                 "\"padded_vocab_size\": 512, \"seq_length\": 4096"
static void test_chatglm(void **state) {
    (void)state;
    read_ok("THUDM__chatglm3-6b");
    assert_true(F.family_known);
    assert_int_equal(F.num_hidden_layers, 28);
    assert_int_equal(F.head_dim, 128);
    assert_int_equal(F.num_key_value_heads, 2);
    assert_true(F.qkv_fused_blocks);
    assert_int_equal(F.intermediate_size, 13696);
    assert_int_equal(F.vocab_size, 65024);
    assert_int_equal(F.max_position_embeddings, 8192);
    assert_true(F.rms_norm_eps == 1e-5 && !F.layer_norm);
    assert_true(F.rope_theta == 10000.0 && F.partial_rotary_factor == 0.5 && F.rope_interleaved);
    assert_true(F.qkv_bias && !F.o_bias && !F.mlp_bias);
    assert_int_equal(F.tie_word_embeddings, 0);
    /* left for the table, all inert: _name_or_path, auto_map, use_cache, torch_dtype,
     * transformers_version, pad_token_id */
    assert_int_equal(F.n_config_keys, 6);
    assert_false(has_key("apply_query_key_layer_scaling") || has_key("original_rope") ||
                 has_key("add_qkv_bias") || has_key("rmsnorm"));
    facet_error err;
    assert_int_equal(from_text(GLM_BASE ", \"multi_query_attention\": true, "
                               "\"multi_query_group_num\": 2, \"rope_ratio\": 500, "
                               "\"num_hidden_layers\": 2, \"vocab_size\": 512}", &err),
                     FACET_OK);
    assert_true(F.rope_theta == 5e6);
    assert_int_equal(F.num_key_value_heads, 2);
    assert_false(has_key("num_hidden_layers") || has_key("vocab_size"));
    /* the class defaults: no multi-query (one [q_h; k_h; v_h] group per head), RMSNorm,
     * no biases; rmsnorm false: LayerNorm; add_bias_linear: dense and MLP biases */
    assert_int_equal(from_text(GLM_BASE ", \"rmsnorm\": false, \"add_bias_linear\": true}", &err),
                     FACET_OK);
    assert_int_equal(F.num_key_value_heads, 8);
    assert_false(F.qkv_fused_blocks || F.qkv_bias);
    assert_true(F.layer_norm && F.o_bias && F.mlp_bias);
    static const char *const refused[][2] = {
        {", \"apply_residual_connection_post_layernorm\": true}",
         "apply_residual_connection_post_layernorm"},
        {", \"post_layer_norm\": false}", "post_layer_norm"},
        {", \"quantization_bit\": 4}", "quantization_bit"},
        {", \"pre_seq_len\": 128}", "pre_seq_len"},
        {", \"multi_query_attention\": true, \"multi_query_group_num\": 3}",
         "multi_query_group_num"},
        {", \"ffn_hidden_size\": null}", "ffn_hidden_size"},
        {", \"position_encoding_2d\": true}", "ChatGLM-6B"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s", GLM_BASE, refused[i][0]);
        /* a key given twice (ffn_hidden_size): the later (null) wins in jansson */
        assert_int_not_equal(from_text(text, &err), FACET_OK);
        assert_non_null(strstr(err.message, refused[i][1]));
    }
}
#undef GLM_BASE

static void test_outside_families_read_leniently(void **state) {
    (void)state;
    read_ok("../outside/rwkv");
    assert_string_equal(F.model_type, "rwkv");
    assert_false(F.family_known);
    assert_true(F.n_notes > 0); /* num_attention_heads missing: a note, not an error */
    read_ok("deepseek-ai__DeepSeek-V3");
    /* deepseek_v3 is a config class now (issue 25): its latent-attention and routing
     * keys are facts; the verdict refuses them by name (test_conform.py) */
    assert_false(has_key("kv_lora_rank"));
    assert_false(has_key("rope_scaling.mscale"));
    assert_int_equal(F.kv_lora_rank, 512);
    assert_int_equal(F.q_lora_rank, 1536);
    assert_int_equal(F.first_k_dense_replace, 3);
    assert_int_equal(F.n_sparse_layers, 58);                /* 61 - 3 dense */
    assert_int_equal(F.shared_expert_intermediate_size, 2048); /* 1 x 2048 */
    assert_true(F.routed_scaling_factor == 2.5);
    assert_int_equal(F.norm_topk_prob, 1);
    assert_string_equal(F.topk_method, "noaux_tc");
    assert_string_equal(F.scoring_func, "sigmoid");
    assert_false(has_key("n_group")); /* read as facts (issue 25's routing) */
    assert_int_equal(F.n_group, 8);
    assert_int_equal(F.topk_group, 4);
    assert_int_equal(F.moe_router, FACET_ROUTER_GROUPED);
    assert_true(F.moe_sigmoid && F.moe_score_bias);
    /* hand-worked: m = 0.1 * 1.0 * ln 40 + 1 = 1.3688879; scale = m^2 / sqrt(192) */
    assert_true(fabs(F.attn_scale - 1.3688879 * 1.3688879 / 13.8564065) < 1e-6);
    assert_int_equal(F.rope_type, FACET_ROPE_YARN);
}

/* DeepSeek-V2-Lite's public config.json (deepseek-ai/DeepSeek-V2-Lite), written inline:
 * no q_lora_rank, yarn with mscale = mscale_all_dim = 0.707, first layer dense. */
#define DSV2_LITE                                                                          \
    "{\"model_type\":\"deepseek_v2\",\"architectures\":[\"DeepseekV2ForCausalLM\"],"      \
    "\"vocab_size\":102400,\"hidden_size\":2048,\"intermediate_size\":10944,"              \
    "\"moe_intermediate_size\":1408,\"num_hidden_layers\":27,\"num_attention_heads\":16,"  \
    "\"num_key_value_heads\":16,\"n_shared_experts\":2,\"n_routed_experts\":64,"           \
    "\"routed_scaling_factor\":1.0,\"kv_lora_rank\":512,\"q_lora_rank\":null,"             \
    "\"qk_rope_head_dim\":64,\"v_head_dim\":128,\"qk_nope_head_dim\":128,"                 \
    "\"topk_method\":\"%s\",\"n_group\":1,\"topk_group\":1,\"num_experts_per_tok\":6,"     \
    "\"moe_layer_freq\":1,\"first_k_dense_replace\":1,\"norm_topk_prob\":false,"           \
    "\"scoring_func\":\"softmax\",\"aux_loss_alpha\":0.001,\"seq_aux\":true,"              \
    "\"hidden_act\":\"silu\",\"max_position_embeddings\":163840,\"rms_norm_eps\":1e-06,"   \
    "\"rope_theta\":10000,\"rope_scaling\":{\"beta_fast\":32,\"beta_slow\":1,"             \
    "\"factor\":40,\"mscale\":0.707,\"mscale_all_dim\":0.707,"                             \
    "\"original_max_position_embeddings\":4096,\"type\":\"yarn\"},"                        \
    "\"attention_bias\":false,\"bos_token_id\":100000,\"eos_token_id\":100001,"            \
    "\"tie_word_embeddings\":false}"

static void test_deepseek_v2_lite(void **state) {
    (void)state;
    facet_error err;
    char text[2048];
    snprintf(text, sizeof text, DSV2_LITE, "greedy");
    assert_int_equal(from_text(text, &err), FACET_OK);
    assert_int_equal(F.q_lora_rank, 0); /* null: plain q_proj */
    assert_int_equal(F.kv_lora_rank, 512);
    assert_int_equal(F.qk_nope_head_dim, 128);
    assert_int_equal(F.qk_rope_head_dim, 64);
    assert_int_equal(F.v_head_dim, 128);
    assert_int_equal(F.num_experts, 64);
    assert_int_equal(F.num_experts_per_tok, 6);
    assert_int_equal(F.moe_intermediate_size, 1408);
    assert_int_equal(F.n_shared_experts, 2);
    assert_int_equal(F.shared_expert_intermediate_size, 2816); /* 2 x 1408 */
    assert_int_equal(F.moe_router, FACET_ROUTER_GROUPED);
    assert_int_equal(F.n_group, 1);
    assert_false(F.moe_sigmoid || F.moe_score_bias);
    assert_int_equal(F.norm_topk_prob, 0);
    assert_int_equal(F.layer_sparse[0], 0); /* first_k_dense_replace 1 */
    assert_int_equal(F.layer_sparse[1], 1);
    assert_int_equal(F.n_sparse_layers, 26);
    assert_int_equal(F.rope_type, FACET_ROPE_YARN);
    /* hand-worked: m = 0.1 * 0.707 * ln 40 + 1 = 1.2608043; scale = m^2 / sqrt(192) */
    assert_true(fabs(F.attn_scale - 1.2608043 * 1.2608043 / 13.8564065) < 1e-6);
    assert_true(fabs(F.rope_attention_factor - 1.0) < 1e-12); /* mscale / mscale_all_dim */
    assert_false(has_key("rope_scaling.mscale"));
    assert_false(has_key("rope_scaling.mscale_all_dim"));
    assert_false(has_key("n_group")); /* greedy never reads it */
    facet_verdict v;
    facet_judge(&F, "cpu", &v); /* latent attention and greedy routing run (issue 25) */
    assert_int_equal(v.status, FACET_VERDICT_PENDING_PROBE);

    /* group-limited routing runs too, with n_group dividing the experts */
    snprintf(text, sizeof text, DSV2_LITE, "group_limited_greedy");
    assert_int_equal(from_text(text, &err), FACET_OK);
    assert_int_equal(F.n_group, 1);
    facet_judge(&F, "cpu", &v);
    assert_int_equal(v.status, FACET_VERDICT_PENDING_PROBE);
    /* ... but not with n_group 5 (64 experts), nor a method the class never runs: each
     * refused by the fact's name */
    F.n_group = 5;
    facet_judge(&F, "cpu", &v);
    assert_int_equal(v.n_refusals, 1);
    assert_string_equal(v.refusals[0].fact, "n_group");
    snprintf(text, sizeof text, DSV2_LITE, "noaux_tc");
    assert_int_equal(from_text(text, &err), FACET_OK);
    facet_judge(&F, "cpu", &v);
    assert_int_equal(v.n_refusals, 1);
    assert_string_equal(v.refusals[0].fact, "topk_method");
    assert_string_equal(v.refusals[0].value, "noaux_tc");
}

static void test_mistral_class_default_window(void **state) {
    (void)state;
    facet_error err;
    /* MistralConfig: sliding_window defaults to 4096 when absent */
    assert_int_equal(from_text("{\"model_type\":\"mistral\",\"hidden_size\":4096,"
                               "\"num_hidden_layers\":32,\"num_attention_heads\":32,"
                               "\"num_key_value_heads\":8,\"vocab_size\":32000,"
                               "\"intermediate_size\":14336,\"max_position_embeddings\":32768}",
                               &err), FACET_OK);
    assert_int_equal(F.sliding_window, 4096);
    assert_int_equal(F.n_sliding_layers, 32);
    assert_int_equal(F.window_inert, 0);
    /* window >= max_position_embeddings: inert */
    assert_int_equal(from_text("{\"model_type\":\"mistral\",\"hidden_size\":64,"
                               "\"num_hidden_layers\":2,\"num_attention_heads\":4,"
                               "\"vocab_size\":10,\"intermediate_size\":8,"
                               "\"max_position_embeddings\":4096,\"sliding_window\":4096}",
                               &err), FACET_OK);
    assert_int_equal(F.window_inert, 1);
    assert_int_equal(F.n_sliding_layers, 0);
    /* Qwen2 use_sliding_window + max_window_layers: layers >= max_window_layers slide */
    assert_int_equal(from_text("{\"model_type\":\"qwen2\",\"hidden_size\":64,"
                               "\"num_hidden_layers\":4,\"num_attention_heads\":4,"
                               "\"vocab_size\":10,\"intermediate_size\":8,"
                               "\"max_position_embeddings\":4096,\"sliding_window\":16,"
                               "\"use_sliding_window\":true,\"max_window_layers\":2}",
                               &err), FACET_OK);
    assert_int_equal(F.n_sliding_layers, 2);
    assert_int_equal(F.layer_sliding[1], 0);
    assert_int_equal(F.layer_sliding[2], 1);
}

#define BASE "\"model_type\":\"llama\",\"num_hidden_layers\":2,\"num_attention_heads\":4," \
             "\"vocab_size\":10,\"intermediate_size\":8"

static void expect_error(const char *text, facet_status want, const char *needle) {
    facet_error err;
    facet_status st = from_text(text, &err);
    if (st != want || !strstr(err.message, needle))
        fprintf(stderr, "got %d '%s' for %s\n", st, err.message, text);
    assert_int_equal(st, want);
    assert_non_null(strstr(err.message, needle));
    assert_null(strchr(err.message, '\n'));
}

static void test_bad_inputs(void **state) {
    (void)state;
    expect_error("{" BASE ",\"hidden_size\":\"64\"}", FACET_E_FORMAT,
                 "hidden_size is \"64\" (string), expected a positive integer");
    expect_error("{" BASE ",\"hidden_size\":0}", FACET_E_FORMAT, "hidden_size is 0");
    expect_error("{" BASE ",\"hidden_size\":-64}", FACET_E_FORMAT, "hidden_size is -64");
    expect_error("{" BASE ",\"hidden_size\":64.0}", FACET_E_FORMAT, "hidden_size is 64.0");
    expect_error("{" BASE "}", FACET_E_NOT_FOUND, "required key hidden_size is missing");
    expect_error("{" BASE ",\"hidden_size\":64,\"num_key_value_heads\":0}", FACET_E_FORMAT,
                 "num_key_value_heads is 0");
    expect_error("{" BASE ",\"hidden_size\":64,\"rms_norm_eps\":\"x\"}", FACET_E_FORMAT,
                 "rms_norm_eps");
    expect_error("{" BASE ",\"hidden_size\":64,\"tie_word_embeddings\":1}", FACET_E_FORMAT,
                 "tie_word_embeddings is 1 (integer), expected true or false");
    expect_error("{" BASE ",\"hidden_size\":64,\"eos_token_id\":\"2\"}", FACET_E_FORMAT,
                 "eos_token_id");
    expect_error("{" BASE ",\"hidden_size\":64,\"rope_scaling\":{\"rope_type\":\"llama3\","
                 "\"factor\":8}}", FACET_E_NOT_FOUND, "rope_scaling.low_freq_factor");
    expect_error("{" BASE ",\"hidden_size\":64,\"layer_types\":[\"full_attention\"]}",
                 FACET_E_FORMAT, "layer_types");
    expect_error("{" BASE ",\"hidden_size\":64,\"num_hidden_layers\":5000}", FACET_E_FORMAT,
                 "<= 1024");
    expect_error("[1,2]", FACET_E_FORMAT, "expected a JSON object");
    expect_error("{\"hidden_size\":64}", FACET_E_NOT_FOUND, "model_type");
}

#define L3 "\"factor\":8,\"low_freq_factor\":1,\"high_freq_factor\":4," \
           "\"original_max_position_embeddings\":8192"

/* Two spellings of one rope fact that disagree: transformers v4 and v5 read different
 * ones, so the config is ambiguous and refused naming both keys and values (issue 17);
 * spellings that agree stay accepted. */
static void test_rope_spellings_disagree(void **state) {
    (void)state;
    facet_error err;
    expect_error("{" BASE ",\"hidden_size\":64,\"rope_scaling\":{\"rope_type\":\"llama3\","
                 "\"type\":\"linear\"," L3 "}}", FACET_E_FORMAT,
                 "config.json: rope_scaling.rope_type=\"llama3\" and rope_scaling.type=\"linear\" "
                 "disagree");
    expect_error("{" BASE ",\"hidden_size\":64,\"rope_scaling\":{\"rope_type\":\"yarn\","
                 "\"type\":\"llama3\"," L3 "}}", FACET_E_FORMAT,
                 "rope_scaling.rope_type=\"yarn\" and rope_scaling.type=\"llama3\" disagree");
    expect_error("{" BASE ",\"hidden_size\":64,"
                 "\"rope_scaling\":{\"rope_type\":\"linear\",\"factor\":32},"
                 "\"rope_parameters\":{\"rope_type\":\"linear\",\"factor\":16,"
                 "\"rope_theta\":10000}}", FACET_E_FORMAT,
                 "rope_scaling.factor=32 and rope_parameters.factor=16 disagree");
    expect_error("{" BASE ",\"hidden_size\":64,"
                 "\"rope_scaling\":{\"rope_type\":\"linear\",\"factor\":2},"
                 "\"rope_parameters\":{\"rope_theta\":10000}}", FACET_E_FORMAT,
                 "rope_scaling.rope_type=\"linear\" and rope_parameters.rope_type=absent");
    expect_error("{" BASE ",\"hidden_size\":64,\"rope_theta\":500000,"
                 "\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":10000}}",
                 FACET_E_FORMAT, "rope_theta=500000 and rope_parameters.rope_theta=10000");
    expect_error("{" BASE ",\"hidden_size\":64,\"partial_rotary_factor\":0.5,"
                 "\"rope_parameters\":{\"rope_type\":\"default\",\"partial_rotary_factor\":0.25}}",
                 FACET_E_FORMAT, "partial_rotary_factor=0.5 and "
                 "rope_parameters.partial_rotary_factor=0.25");
    expect_error("{" BASE ",\"hidden_size\":64,\"original_max_position_embeddings\":4096,"
                 "\"rope_scaling\":{\"rope_type\":\"llama3\"," L3 "}}", FACET_E_FORMAT,
                 "original_max_position_embeddings=4096 and "
                 "rope_scaling.original_max_position_embeddings=8192");
    /* agreeing spellings: the same type under both names, the same numbers written
     * differently, rope_scaling repeated in rope_parameters (which adds rope_theta) */
    assert_int_equal(from_text("{" BASE ",\"hidden_size\":64,\"rope_scaling\":{\"rope_type\":"
                               "\"llama3\",\"type\":\"llama3\"," L3 "}}", &err), FACET_OK);
    assert_int_equal(F.rope_type, FACET_ROPE_LLAMA3);
    assert_int_equal(from_text("{" BASE ",\"hidden_size\":64,\"rope_theta\":10000,"
                               "\"rope_scaling\":{\"type\":\"linear\",\"factor\":4},"
                               "\"rope_parameters\":{\"rope_type\":\"linear\",\"factor\":4.0,"
                               "\"rope_theta\":10000.0}}", &err), FACET_OK);
    assert_int_equal(F.rope_type, FACET_ROPE_LINEAR);
    assert_true(F.rope_factor == 4.0);
    assert_int_equal(from_text("{" BASE ",\"hidden_size\":64,\"rope_scaling\":{\"type\":\"su\","
                               "\"rope_type\":\"longrope\",\"short_factor\":[1],"
                               "\"long_factor\":[2]}}", &err), FACET_OK);
    /* a family outside the table reads leniently: a note, not an error */
    assert_int_equal(from_text("{\"model_type\":\"mystery\",\"hidden_size\":64,"
                               "\"num_hidden_layers\":2,\"num_attention_heads\":4,"
                               "\"vocab_size\":10,\"intermediate_size\":8,\"rope_scaling\":"
                               "{\"rope_type\":\"yarn\",\"type\":\"linear\",\"factor\":2}}",
                               &err), FACET_OK);
    int noted = 0;
    for (int i = 0; i < F.n_notes; i++)
        noted |= strstr(F.notes[i].text, "rope_scaling.type=\"linear\" disagree") != NULL;
    assert_true(noted);
}

/* layer_types beside the key older transformers derived the windowed layers from. */
static void test_window_spellings_disagree(void **state) {
    (void)state;
    facet_error err;
#define QW "\"model_type\":\"qwen2\",\"hidden_size\":64,\"num_hidden_layers\":2," \
           "\"num_attention_heads\":4,\"vocab_size\":10,\"intermediate_size\":8," \
           "\"max_position_embeddings\":100,\"sliding_window\":4"
    expect_error("{" QW ",\"use_sliding_window\":true,\"max_window_layers\":1,\"layer_types\":"
                 "[\"sliding_attention\",\"full_attention\"]}", FACET_E_FORMAT,
                 "layer_types[0]=\"sliding_attention\" and max_window_layers=1 disagree");
    assert_int_equal(from_text("{" QW ",\"use_sliding_window\":true,\"max_window_layers\":1,"
                               "\"layer_types\":[\"full_attention\",\"sliding_attention\"]}",
                               &err), FACET_OK);
    assert_int_equal(F.n_sliding_layers, 1);
    /* an inert window (use_sliding_window false) is not compared: Qwen2.5's own configs
     * carry max_window_layers 21 with 28 full_attention layers */
    assert_int_equal(from_text("{" QW ",\"use_sliding_window\":false,\"max_window_layers\":1,"
                               "\"layer_types\":[\"full_attention\",\"full_attention\"]}",
                               &err), FACET_OK);
#define G3 "\"model_type\":\"gemma3_text\",\"hidden_size\":64,\"num_hidden_layers\":3," \
           "\"num_attention_heads\":4,\"vocab_size\":10,\"intermediate_size\":8," \
           "\"max_position_embeddings\":100,\"sliding_window\":4"
    expect_error("{" G3 ",\"sliding_window_pattern\":3,\"layer_types\":[\"sliding_attention\","
                 "\"full_attention\",\"full_attention\"]}", FACET_E_FORMAT,
                 "layer_types[1]=\"full_attention\" and sliding_window_pattern=3 disagree");
    assert_int_equal(from_text("{" G3 ",\"sliding_window_pattern\":3,\"layer_types\":["
                               "\"sliding_attention\",\"sliding_attention\",\"full_attention\"]}",
                               &err), FACET_OK);
    assert_int_equal(F.n_sliding_layers, 2);
    /* a multimodal wrapper's tie_word_embeddings against its text_config's */
    expect_error("{\"model_type\":\"gemma3\",\"tie_word_embeddings\":false,\"text_config\":{"
                 G3 ",\"tie_word_embeddings\":true}}", FACET_E_FORMAT,
                 "tie_word_embeddings=false and text_config.tie_word_embeddings=true disagree");
    assert_int_equal(from_text("{\"model_type\":\"gemma3\",\"tie_word_embeddings\":true,"
                               "\"text_config\":{" G3 ",\"tie_word_embeddings\":true}}", &err),
                     FACET_OK);
}

static void test_file_errors(void **state) {
    (void)state;
    facet_error err;
    char path[1024];
    assert_int_equal(facet_facts_read("/nonexistent-dir-xyz", &F, &err), FACET_E_IO);
    assert_non_null(strstr(err.message, "config.json"));
    snprintf(path, sizeof path, "%s/configs/INDEX.md", FACET_TEST_DATA); /* not JSON */
    assert_int_equal(facet_facts_read(path, &F, &err), FACET_E_PARSE);
    /* a bare config.json file (generation_config.json beside it is read too) */
    snprintf(path, sizeof path, "%s/configs/Qwen__Qwen2.5-1.5B-Instruct__resaved/config.json",
             FACET_TEST_DATA);
    assert_int_equal(facet_facts_read(path, &F, &err), FACET_OK);
    assert_int_equal(F.n_eos, 2);
}

static void test_notes(void **state) {
    (void)state;
    facet_facts f;
    memset(&f, 0, sizeof f);
    for (int i = 0; i < 20; i++) facet_facts_note(&f, "note %d", i);
    assert_int_equal(f.n_notes, 16);
    assert_string_equal(f.notes[15].text, "note 15");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama32_1b),
        cmocka_unit_test(test_llama2_defaults),
        cmocka_unit_test(test_qwen25_v5_rope_parameters),
        cmocka_unit_test(test_qwen_distill_window_disabled),
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_deepseek_v2_lite),
        cmocka_unit_test(test_smollm3_no_rope_layers),
        cmocka_unit_test(test_medgemma_text_config),
        cmocka_unit_test(test_phi35_longrope),
        cmocka_unit_test(test_gemma_hidden_activation),
        cmocka_unit_test(test_mamba),
        cmocka_unit_test(test_falcon),
        cmocka_unit_test(test_bloom),
        cmocka_unit_test(test_mpt),
        cmocka_unit_test(test_gptj),
        cmocka_unit_test(test_cohere),
        cmocka_unit_test(test_cohere2),
        cmocka_unit_test(test_internlm2),
        cmocka_unit_test(test_baichuan),
        cmocka_unit_test(test_falcon_alibi),
        cmocka_unit_test(test_minicpm),
        cmocka_unit_test(test_falcon_h1),
        cmocka_unit_test(test_exaone),
        cmocka_unit_test(test_qwen),
        cmocka_unit_test(test_chatglm),
        cmocka_unit_test(test_outside_families_read_leniently),
        cmocka_unit_test(test_mistral_class_default_window),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_rope_spellings_disagree),
        cmocka_unit_test(test_window_spellings_disagree),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_notes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
