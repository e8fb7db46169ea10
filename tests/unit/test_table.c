/* test_table.c — verdicts of the capability table: refusals name fact, value and range;
 * every refusal is listed; probe-decided facts are pending on a bare config. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "io/safetensors.h"
#include "model/facts.h"
#include "backend/backend.h"
#include "model/table.h"

static facet_facts F;
static facet_verdict V;

#define BASE "\"model_type\":\"llama\",\"architectures\":[\"LlamaForCausalLM\"]," \
             "\"hidden_size\":256,\"num_hidden_layers\":2,\"num_attention_heads\":4," \
             "\"vocab_size\":512,\"intermediate_size\":512,\"max_position_embeddings\":1024"

static void judge_text(const char *text, const char *backend) {
    json_error_t je;
    facet_error err;
    json_t *j = json_loads(text, 0, &je);
    if (!j) fprintf(stderr, "bad test JSON: %s\n", je.text);
    assert_non_null(j);
    assert_int_equal(facet_facts_from_json(j, NULL, "config.json", &F, &err), FACET_OK);
    json_decref(j);
    facet_judge(&F, backend, &V);
}

static const facet_refusal *refusal(const char *fact) {
    for (int i = 0; i < V.n_refusals; i++)
        if (!strcmp(V.refusals[i].fact, fact)) return &V.refusals[i];
    return NULL;
}

static void probed(uint32_t dtypes) {
    F.probed = 1;
    F.dtype_mask = dtypes;
    F.has_lm_head = 1;
    F.tie_word_embeddings = 0;
    facet_judge(&F, "cpu", &V);
}

/* MiniCPM 4's sparse_config (InfLLM v2 sparse attention once a sequence passes its
 * dense_len) is refused by key; null is off and runs. */
static void test_minicpm_sparse_config(void **state) {
    (void)state;
#define MINICPM "\"model_type\":\"minicpm\",\"architectures\":[\"MiniCPMForCausalLM\"]," \
                "\"hidden_size\":256,\"num_hidden_layers\":2,\"num_attention_heads\":4," \
                "\"vocab_size\":512,\"intermediate_size\":512,\"scale_emb\":12"
    judge_text("{" MINICPM ",\"sparse_config\":{\"dense_len\":8192,\"topk\":64}}", "cpu");
    assert_int_equal(V.status, FACET_VERDICT_REFUSED);
    assert_non_null(refusal("sparse_config"));
    judge_text("{" MINICPM ",\"sparse_config\":null}", "cpu");
    assert_int_equal(V.status, FACET_VERDICT_PENDING_PROBE);
#undef MINICPM
}

static void test_supported_and_pending(void **state) {
    (void)state;
    judge_text("{" BASE "}", "cpu");
    assert_int_equal(V.status, FACET_VERDICT_PENDING_PROBE);
    assert_int_equal(V.n_refusals, 0);
    assert_string_equal(V.profile, "llama");
    assert_int_equal(V.n_pending, 9);
    assert_string_equal(V.pending[V.n_pending - 1], "weight dtypes");
    probed((1u << ST_BF16) | (1u << ST_F32));
    assert_int_equal(V.status, FACET_VERDICT_SUPPORTED);
    assert_int_equal(V.n_pending, 0);
    facet_error err;
    assert_int_equal(facet_verdict_error(&V, &err), FACET_OK);
}

static void test_head_dim_range(void **state) {
    (void)state;
    judge_text("{" BASE ",\"head_dim\":6}", "cpu");
    assert_int_equal(V.status, FACET_VERDICT_REFUSED);
    assert_string_equal(V.refusals[0].text,
                        "REFUSED: head_dim=6 is not supported on cpu (supported: 8..256, even)");
    judge_text("{" BASE ",\"head_dim\":65}", "cpu");
    assert_non_null(refusal("head_dim"));
    judge_text("{" BASE ",\"head_dim\":258}", "cpu");
    assert_non_null(refusal("head_dim"));
    judge_text("{" BASE ",\"head_dim\":96}", "cpu"); /* even, inside 8..256 */
    assert_null(refusal("head_dim"));
    judge_text("{" BASE ",\"head_dim\":96}", "vulkan"); /* the shaders take any even head_dim */
    assert_null(refusal("head_dim"));
    judge_text("{" BASE ",\"head_dim\":6}", "vulkan");
    assert_string_equal(refusal("head_dim")->text,
                        "REFUSED: head_dim=6 is not supported on vulkan (supported: 8..256, even)");
}

static void test_gqa_divisor(void **state) {
    (void)state;
    judge_text("{" BASE ",\"num_key_value_heads\":3}", "cpu");
    assert_int_equal(V.status, FACET_VERDICT_REFUSED);
    assert_string_equal(refusal("num_key_value_heads")->text,
                        "REFUSED: num_key_value_heads=3 is not supported on cpu (supported: a "
                        "divisor of num_attention_heads=4)");
    judge_text("{" BASE ",\"num_key_value_heads\":8}", "cpu"); /* more kv than q heads */
    assert_non_null(refusal("num_key_value_heads"));
    judge_text("{" BASE ",\"num_key_value_heads\":1}", "cpu"); /* MQA */
    assert_int_equal(V.status, FACET_VERDICT_PENDING_PROBE);
}

/* The vulkan column: refused by name in a binary built without it, else judged by its
 * ranges like the cpu's. */
static void test_vulkan_built_or_refused(void **state) {
    (void)state;
    judge_text("{" BASE ",\"head_dim\":64}", "vulkan");
    if (facet_vulkan_built()) {
        assert_int_equal(V.status, FACET_VERDICT_PENDING_PROBE);
    } else {
        assert_int_equal(V.status, FACET_VERDICT_REFUSED);
        assert_string_equal(V.refusals[0].text,
                            "REFUSED: backend=vulkan is not built into this binary");
    }
    /* what its shaders do not serve yet, named with the fact and the supported range */
#define MAMBA "\"model_type\":\"mamba\",\"architectures\":[\"MambaForCausalLM\"]," \
              "\"hidden_size\":64,\"num_hidden_layers\":2,\"vocab_size\":100," \
              "\"intermediate_size\":128"
    judge_text("{" MAMBA "}", "vulkan");
    assert_string_equal(refusal("state-space mixer")->text,
                        "REFUSED: state-space mixer=mamba is not supported on vulkan (supported: "
                        "none)");
    judge_text("{" MAMBA "}", "cpu");
    assert_null(refusal("state-space mixer"));
    /* and what they serve since the classic decoders' shaders: the erf gelu */
    judge_text("{" BASE ",\"hidden_act\":\"gelu\"}", "vulkan");
    assert_null(refusal("hidden_act"));
    judge_text("{" BASE "}", "tpu");
    assert_string_equal(V.refusals[0].text,
                        "REFUSED: backend=tpu is not supported (supported: cpu, vulkan)");
}

static void test_math_facts_refused_all_listed(void **state) {
    (void)state;
    judge_text("{" BASE ",\"rope_scaling\":{\"rope_type\":\"dynamic\",\"factor\":4.0},"
               "\"hidden_act\":\"relu6\",\"mlp_bias\":true,\"use_alibi\":true,"
               "\"partial_rotary_factor\":0.03}", "cpu");
    assert_int_equal(V.status, FACET_VERDICT_REFUSED);
    assert_non_null(strstr(refusal("rope_type")->text,
                           "REFUSED: rope_type=dynamic is not supported on cpu (supported: "));
    assert_null(strstr(refusal("rope_type")->supported, "dynamic"));
    assert_non_null(strstr(refusal("rope_type")->supported, "yarn"));
    assert_string_equal(refusal("hidden_act")->value, "relu6");
    assert_null(refusal("mlp_bias")); /* gate/up/down biases run on the cpu */
    assert_string_equal(refusal("use_alibi")->value, "true");
    assert_string_equal(refusal("partial_rotary_factor")->value, "0.03");
    assert_int_equal(V.n_refusals, 4);
    /* what the CPU engine runs since the families landed: no refusal for these */
    judge_text("{" BASE ",\"rope_scaling\":{\"rope_type\":\"yarn\",\"factor\":4.0},"
               "\"hidden_act\":\"gelu\",\"partial_rotary_factor\":0.5}", "cpu");
    assert_null(refusal("rope_type"));
    assert_null(refusal("hidden_act"));
    assert_null(refusal("partial_rotary_factor"));
    /* a rope type nobody knows */
    judge_text("{" BASE ",\"rope_scaling\":{\"type\":\"ntk-by-parts\",\"factor\":2}}", "cpu");
    assert_string_equal(refusal("rope_type")->value, "ntk-by-parts");
    /* a live sliding window runs on the CPU (ring KV cache) and on vulkan */
    judge_text("{" BASE ",\"model_type\":\"mistral\",\"architectures\":[\"MistralForCausalLM\"],"
               "\"sliding_window\":256}", "cpu");
    assert_null(refusal("sliding_window"));
    judge_text("{" BASE ",\"model_type\":\"mistral\",\"architectures\":[\"MistralForCausalLM\"],"
               "\"sliding_window\":256}", "vulkan");
    assert_null(refusal("sliding_window"));
    /* the same key in a class that does not read it */
    judge_text("{" BASE ",\"sliding_window\":256}", "cpu");
    assert_non_null(refusal("sliding_window"));
}

static void test_unmodeled_keys(void **state) {
    (void)state;
    judge_text("{" BASE ",\"use_alibi\":true,\"num_local_experts\":8,\"kv_lora_rank\":512,"
               "\"is_encoder_decoder\":true,\"rope_scaling\":{\"rope_type\":\"llama3\","
               "\"factor\":8,\"low_freq_factor\":1,\"high_freq_factor\":4,"
               "\"original_max_position_embeddings\":256,\"mscale\":0.7},"
               "\"foo_scale\":3,\"my_custom_tag\":\"x\",\"pad_token_id\":0}", "cpu");
    assert_string_equal(refusal("use_alibi")->value, "true");
    assert_string_equal(refusal("num_local_experts")->value, "8");
    assert_string_equal(refusal("kv_lora_rank")->value, "512");
    assert_string_equal(refusal("is_encoder_decoder")->value, "true");
    assert_string_equal(refusal("rope_scaling.mscale")->value, "0.7");
    assert_non_null(strstr(refusal("foo_scale")->text, "an unknown key that may change the math"));
    assert_null(refusal("my_custom_tag"));
    assert_null(refusal("pad_token_id"));
    assert_null(refusal("rope_type")); /* llama3 itself is supported */
    assert_string_equal(V.ignored, "my_custom_tag");
    /* switched off: null, false, 0, empty */
    judge_text("{" BASE ",\"use_alibi\":false,\"quantization_config\":null,"
               "\"num_local_experts\":0,\"pruned_heads\":{}}", "cpu");
    assert_int_equal(V.status, FACET_VERDICT_PENDING_PROBE);
    judge_text("{" BASE ",\"pruned_heads\":{\"0\":[1]}}", "cpu");
    assert_non_null(refusal("pruned_heads"));
    /* the PretrainedConfig attributes older transformers saved into every config */
    judge_text("{" BASE ",\"chunk_size_feed_forward\":0,\"add_cross_attention\":false,"
               "\"cross_attention_hidden_size\":null,\"is_decoder\":false,\"num_beams\":1,"
               "\"length_penalty\":1.0,\"top_k\":50,\"top_p\":1.0,\"temperature\":1.0,"
               "\"output_scores\":false,\"tie_encoder_decoder\":false,"
               "\"is_encoder_decoder\":false,\"prefix\":null,\"bad_words_ids\":null}", "cpu");
    assert_int_equal(V.status, FACET_VERDICT_PENDING_PROBE);
}

static void test_outside_families(void **state) {
    (void)state;
    judge_text("{\"model_type\":\"rwkv\",\"hidden_size\":64,\"state_size\":16}", "cpu");
    assert_string_equal(V.refusals[0].text,
                        "REFUSED: model_type=rwkv is not supported on cpu (supported: llama, "
                        "mistral, qwen2, qwen3, gemma, gemma2, gemma3_text, gemma3, phi3, olmo2, "
                        "smollm3, granite, mixtral, qwen2_moe, qwen3_moe, olmoe, granitemoe, "
                        "granitemoeshared, gpt_oss, deepseek_v2, deepseek_v3, kimi_k2, mamba, mamba2, granitemoehybrid, bamba, falcon_h1, jamba, lfm2, nemotron_h, qwen3_next, gpt_neox, phi, gpt2, olmo, starcoder2, stablelm, stablelm_epoch, falcon, bloom, mpt, gptj, cohere, cohere2, internlm2, minicpm, qwen, chatglm, exaone, baichuan)");
    assert_string_equal(refusal("state_size")->value, "16");
    /* a model_type we know with a head the table does not run */
    judge_text("{" BASE ",\"architectures\":[\"LlamaForSequenceClassification\"]}", "cpu");
    assert_string_equal(refusal("architectures")->value, "LlamaForSequenceClassification");
    /* NoPE keys outside a class that reads them change the math unread */
    judge_text("{" BASE ",\"no_rope_layer_interval\":4}", "cpu");
    assert_non_null(refusal("no_rope_layer_interval"));
}

static void test_probed_facts(void **state) {
    (void)state;
    judge_text("{" BASE "}", "cpu");
    probed((1u << ST_F32) | (1u << ST_I8));
    assert_int_equal(V.status, FACET_VERDICT_REFUSED);
    assert_string_equal(refusal("weight dtypes")->text,
                        "REFUSED: weight dtypes=I8 is not supported on cpu (supported: F32, F16, BF16)");
    judge_text("{" BASE "}", "cpu");
    F.fused_qkv = 1; /* Phi-3's fused projection: split at load */
    probed(1u << ST_F32);
    assert_null(refusal("fused qkv_proj"));
    assert_int_equal(V.status, FACET_VERDICT_SUPPORTED);
    facet_judge(&F, "vulkan", &V); /* split at load: the vulkan matmuls see three */
    assert_null(refusal("fused qkv_proj"));
}

static void test_format_and_error(void **state) {
    (void)state;
    judge_text("{" BASE ",\"head_dim\":6,\"num_key_value_heads\":3}", "cpu");
    char buf[2048];
    size_t n = facet_verdict_format(&V, buf, sizeof buf);
    assert_int_equal(n, strlen(buf));
    assert_non_null(strstr(buf, "REFUSED: num_key_value_heads=3"));
    assert_non_null(strstr(buf, "\nREFUSED: head_dim=6"));
    char tiny[16];
    facet_verdict_format(&V, tiny, sizeof tiny);
    assert_int_equal(strlen(tiny), 15);
    facet_error err;
    assert_int_equal(facet_verdict_error(&V, &err), FACET_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "; REFUSED: head_dim=6"));
    assert_null(strchr(err.message, '\n'));
    assert_string_equal(facet_verdict_status_name(FACET_VERDICT_PENDING_PROBE),
                        "supported-pending-probe");
    assert_true(facet_table_has_profile("qwen3"));
    assert_true(facet_table_has_profile("gemma3"));
    assert_true(facet_table_has_profile("mamba"));
    assert_true(facet_table_has_profile("mamba2"));
    assert_false(facet_table_has_profile("rwkv"));
}

/* Every corpus config of a profiled family that is supported (pending the probe). */
static void test_corpus_supported(void **state) {
    (void)state;
    static const char *const ok[] = {
        "HuggingFaceTB__SmolLM2-135M__resaved", "Qwen__Qwen2-0.5B__resaved",
        "Qwen__Qwen2.5-0.5B-Instruct__resaved", "Qwen__Qwen2.5-0.5B__resaved",
        "Qwen__Qwen2.5-1.5B-Instruct__resaved", "Qwen__Qwen3-0.6B__dims",
        "Qwen__Qwen3-1.7B__resaved", "Qwen__Qwen3-8B__resaved",
        "TinyLlama__TinyLlama-1.1B-Chat-v1.0__resaved",
        "deepseek-ai__DeepSeek-R1-Distill-Qwen-32B", "instructlab__granite-7b-lab",
        "meta-llama__Llama-2-70b-chat-hf", "meta-llama__Llama-2-7b-hf",
        "meta-llama__Llama-3.2-1B-Instruct__resaved", "meta-llama__Llama-3.2-3B-Instruct",
        "meta-llama__Meta-Llama-3-8B", "mistralai__Devstral-Small-2507",
        "mistralai__Mistral-7B-Instruct-v0.3"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char dir[1024];
        facet_error err;
        snprintf(dir, sizeof dir, "%s/configs/%s", FACET_TEST_DATA, ok[i]);
        assert_int_equal(facet_facts_read(dir, &F, &err), FACET_OK);
        facet_judge(&F, "cpu", &V);
        if (V.status != FACET_VERDICT_PENDING_PROBE)
            fprintf(stderr, "%s: %s\n", ok[i], V.refusals[0].text);
        assert_int_equal(V.status, FACET_VERDICT_PENDING_PROBE);
        facet_judge(&F, "vulkan", &V); /* dense llama-class: what the shaders run */
        assert_int_equal(V.status, facet_vulkan_built() ? FACET_VERDICT_PENDING_PROBE
                                                        : FACET_VERDICT_REFUSED);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_supported_and_pending),
        cmocka_unit_test(test_head_dim_range),
        cmocka_unit_test(test_gqa_divisor),
        cmocka_unit_test(test_vulkan_built_or_refused),
        cmocka_unit_test(test_math_facts_refused_all_listed),
        cmocka_unit_test(test_unmodeled_keys),
        cmocka_unit_test(test_outside_families),
        cmocka_unit_test(test_minicpm_sparse_config),
        cmocka_unit_test(test_probed_facts),
        cmocka_unit_test(test_format_and_error),
        cmocka_unit_test(test_corpus_supported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
