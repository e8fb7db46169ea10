/* test_facts_probe.c — weight facts from safetensors headers, on small checkpoints this
 * test writes itself (header + zero data, the format of the safetensors spec). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/safetensors.h"
#include "model/facts.h"
#include "model/gguf_checkpoint.h"
#include "model/probe.h"
#include "model/tensors.h"

typedef struct spec {
    int qkv_bias, o_bias, qk_norm, lm_head, bias_only_layer0, bad_k_shape, dtype_bf16;
    int tie_config;
    int tie_absent;         /* omit tie_word_embeddings (the class default applies) */
    const char *model_type; /* NULL: llama */
} spec;

static char dir[256];
static facet_facts F;

static void add(char *hdr, size_t cap, uint64_t *off, const char *name, int64_t r, int64_t c,
                const char *dt) {
    uint64_t n = (uint64_t)r * (uint64_t)(c ? c : 1) * (strcmp(dt, "F32") ? 2 : 4);
    char shape[64];
    if (c) snprintf(shape, sizeof shape, "[%lld,%lld]", (long long)r, (long long)c);
    else snprintf(shape, sizeof shape, "[%lld]", (long long)r);
    snprintf(hdr + strlen(hdr), cap - strlen(hdr),
             "%s\"%s\":{\"dtype\":\"%s\",\"shape\":%s,\"data_offsets\":[%llu,%llu]}",
             hdr[1] ? "," : "", name, dt, shape, (unsigned long long)*off,
             (unsigned long long)(*off + n));
    *off += n;
}

/* hidden 8, 2 heads of 4, 1 kv head, vocab 16, intermediate 12, 2 layers */
static void write_checkpoint(const spec *s) {
    snprintf(dir, sizeof dir, "/tmp/facet_probe_XXXXXX");
    assert_non_null(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *fp = fopen(path, "w");
    fprintf(fp, "{\"model_type\":\"%s\",\"hidden_size\":8,\"num_hidden_layers\":2,"
                "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"vocab_size\":16,"
                "\"intermediate_size\":12,\"max_position_embeddings\":64,\"head_dim\":4%s%s}",
            s->model_type ? s->model_type : "llama", s->tie_absent ? "" : ",\"tie_word_embeddings\":",
            s->tie_absent ? "" : s->tie_config ? "true" : "false");
    fclose(fp);
    char hdr[8192] = "{";
    uint64_t off = 0;
    const char *dt = s->dtype_bf16 ? "BF16" : "F32";
    add(hdr, sizeof hdr, &off, "model.embed_tokens.weight", 16, 8, dt);
    add(hdr, sizeof hdr, &off, "model.norm.weight", 8, 0, "F32");
    if (s->lm_head) add(hdr, sizeof hdr, &off, "lm_head.weight", 16, 8, dt);
    for (int l = 0; l < 2; l++) {
        char n[128];
#define T(suffix, r, c, d)                                                             \
    snprintf(n, sizeof n, "model.layers.%d.%s", l, suffix);                            \
    add(hdr, sizeof hdr, &off, n, r, c, d)
        T("input_layernorm.weight", 8, 0, "F32");
        T("post_attention_layernorm.weight", 8, 0, "F32");
        T("self_attn.q_proj.weight", 8, 8, dt);
        T("self_attn.k_proj.weight", s->bad_k_shape ? 8 : 4, 8, dt);
        T("self_attn.v_proj.weight", 4, 8, dt);
        T("self_attn.o_proj.weight", 8, 8, dt);
        T("mlp.gate_proj.weight", 12, 8, dt);
        T("mlp.up_proj.weight", 12, 8, dt);
        T("mlp.down_proj.weight", 8, 12, dt);
        if (s->qkv_bias && (l == 0 || !s->bias_only_layer0)) {
            T("self_attn.q_proj.bias", 8, 0, dt);
            T("self_attn.k_proj.bias", 4, 0, dt);
            T("self_attn.v_proj.bias", 4, 0, dt);
        }
        if (s->o_bias) { T("self_attn.o_proj.bias", 8, 0, dt); }
        if (s->qk_norm) {
            T("self_attn.q_norm.weight", 4, 0, "F32");
            T("self_attn.k_norm.weight", 4, 0, "F32");
        }
#undef T
    }
    strcat(hdr, "}");
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    fp = fopen(path, "wb");
    uint64_t n = strlen(hdr);
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(n >> (8 * i));
    fwrite(le, 1, 8, fp);
    fwrite(hdr, 1, n, fp);
    for (uint64_t i = 0; i < off; i++) fputc(0, fp);
    fclose(fp);
}

static void cleanup(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    rmdir(dir);
}

static facet_status probe(const spec *s, facet_error *err) {
    write_checkpoint(s);
    facet_status st = facet_facts_read(dir, &F, err);
    assert_int_equal(st, FACET_OK);
    st_checkpoint ck;
    st = st_checkpoint_open(dir, &ck, err);
    assert_int_equal(st, FACET_OK);
    st = facet_facts_probe(&F, &ck, err);
    st_checkpoint_close(&ck);
    cleanup();
    return st;
}

static int has_note(const char *needle) {
    for (int i = 0; i < F.n_notes; i++)
        if (strstr(F.notes[i].text, needle)) return 1;
    return 0;
}

static void test_plain_untied(void **state) {
    (void)state;
    facet_error err;
    spec s = {.lm_head = 1};
    assert_int_equal(probe(&s, &err), FACET_OK);
    assert_int_equal(F.probed, 1);
    assert_int_equal(F.qkv_bias, 0);
    assert_int_equal(F.o_bias, 0);
    assert_int_equal(F.qk_norm, 0);
    assert_int_equal(F.has_lm_head, 1);
    assert_int_equal(F.tie_word_embeddings, 0);
    assert_int_equal(F.fused_qkv, 0);
    assert_int_equal(F.dtype_mask, 1u << ST_F32);
    /* bytes: embed 128 + lm_head 128 + norm 8 + per layer (8+8 + 64+32+32+64 + 96*3) */
    uint64_t per_layer = 16 + 64 + 32 + 32 + 64 + 96 * 3;
    assert_int_equal(F.weight_bytes, 4 * (128 + 128 + 8 + 2 * per_layer));
    assert_int_equal(F.n_notes, 0);
}

static void test_biases_norms_tied(void **state) {
    (void)state;
    facet_error err;
    spec s = {.qkv_bias = 1, .o_bias = 1, .qk_norm = 1, .lm_head = 0, .tie_config = 1,
              .dtype_bf16 = 1};
    assert_int_equal(probe(&s, &err), FACET_OK);
    assert_int_equal(F.qkv_bias, 1);
    assert_int_equal(F.o_bias, 1);
    assert_int_equal(F.qk_norm, 1);
    assert_int_equal(F.has_lm_head, 0);
    assert_int_equal(F.tie_word_embeddings, 1);
    assert_int_equal(F.dtype_mask, (1u << ST_F32) | (1u << ST_BF16));
    assert_true(has_note("q/k/v bias: config implies absent, tensors present"));
    assert_true(has_note("qk-norm"));
}

/* An untied config without lm_head.weight: transformers would make a random head, so
 * there is nothing right to compute (issue 17; it used to run with the embeddings). */
static void test_untied_without_head_refused(void **state) {
    (void)state;
    facet_error err;
    spec s = {.lm_head = 0, .tie_config = 0};
    assert_int_equal(probe(&s, &err), FACET_E_NOT_FOUND);
    assert_non_null(strstr(err.message, "checkpoint has no lm_head.weight, but "
                                        "tie_word_embeddings is false (config.json)"));
    /* llama's class default is untied: omitting the key is the same promise */
    spec d = {.lm_head = 0, .tie_absent = 1};
    assert_int_equal(probe(&d, &err), FACET_E_NOT_FOUND);
    assert_non_null(strstr(err.message, "tie_word_embeddings is false (the config class's "
                                        "default; config.json omits the key)"));
    /* a class whose default is tied (smollm3) needs no head; a present head still wins
     * over tie=true */
    spec t = {.lm_head = 0, .tie_absent = 1, .model_type = "smollm3"};
    assert_int_equal(probe(&t, &err), FACET_OK);
    assert_int_equal(F.tie_word_embeddings, 1);
    spec h = {.lm_head = 1, .tie_config = 1};
    assert_int_equal(probe(&h, &err), FACET_OK);
    assert_int_equal(F.tie_word_embeddings, 0);
    assert_true(has_note("tie_word_embeddings=true but lm_head.weight is present; tensors win"));
}

/* A class whose modeling code applies q_norm/k_norm (qwen3) and a file without them. */
static void test_promised_norm_missing_refused(void **state) {
    (void)state;
    facet_error err;
    spec s = {.lm_head = 1, .tie_config = 0, .model_type = "qwen3"};
    assert_int_equal(probe(&s, &err), FACET_E_NOT_FOUND);
    assert_non_null(strstr(err.message, "checkpoint has no model.layers.0.self_attn.q_norm.weight, "
                                        "but the qwen3 modeling code applies q_norm and k_norm"));
    spec ok = {.lm_head = 1, .tie_config = 0, .model_type = "qwen3", .qk_norm = 1};
    assert_int_equal(probe(&ok, &err), FACET_OK);
    assert_int_equal(F.qk_norm, 1);
}

static void test_inconsistent_layers(void **state) {
    (void)state;
    facet_error err;
    spec s = {.qkv_bias = 1, .bias_only_layer0 = 1, .lm_head = 1};
    assert_int_equal(probe(&s, &err), FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "model.layers.1.self_attn.q_proj.bias is absent"));
}

static void test_shape_mismatch(void **state) {
    (void)state;
    facet_error err;
    spec s = {.bad_k_shape = 1, .lm_head = 1};
    assert_int_equal(probe(&s, &err), FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "model.layers.0.self_attn.k_proj.weight has shape "
                                        "[8, 8], expected [4, 8]"));
}

/* The tensor table is consistent: every slot has a row (facet_tensor_slot gives the
 * first; the others are the same tensor's spellings in other expert layouts, with the
 * same shape and kind), and a fused or 3-D row's parts add up to its rows (for a config
 * whose dims all differ, so a wrong part shows). */
static void test_tensor_table(void **state) {
    (void)state;
    facet_facts f;
    memset(&f, 0, sizeof f);
    f.hidden_size = 96, f.intermediate_size = 200, f.vocab_size = 1000;
    f.num_attention_heads = 6, f.num_key_value_heads = 2, f.head_dim = 16;
    f.num_experts = 5, f.moe_intermediate_size = 40, f.shared_expert_intermediate_size = 56;
    int seen[FACET_TS_COUNT] = {0};
    for (size_t i = 0; i < facet_tensor_count; i++) {
        const facet_tensor_row *r = &facet_tensor_rows[i];
        if (r->slot != FACET_TS_FUSED) {
            assert_true(r->slot >= 0 && r->slot < FACET_TS_COUNT);
            const facet_tensor_row *first = facet_tensor_slot(r->slot);
            if (seen[r->slot]++) {
                assert_true(first < r);
                assert_int_equal(first->dims[0], r->dims[0]);
                assert_int_equal(first->dims[1], r->dims[1]);
                assert_int_equal(first->matrix, r->matrix);
                /* a Mamba layer's norm fills the attention layers' input-norm slot: a
                 * layer holds one or the other (FACET_SCOPE_SSM) */
                if (r->scope != FACET_SCOPE_SSM) assert_int_equal(first->scope, r->scope);
            } else {
                assert_ptr_equal(first, r);
            }
            continue;
        }
        if (!r->experts3d) assert_ptr_equal(facet_tensor_fused((facet_tfused)r->fused), r);
        if (r->experts3d && !r->matrix) { /* per-expert vectors (gpt-oss biases): equal parts */
            for (int p = 0; p < r->n_split; p++) {
                assert_null(facet_tensor_slot(r->split[p]));
                seen[r->split[p]]++;
            }
            continue;
        }
        if (r->transposed) { /* W^T per expert: the parts split the stored columns */
            int64_t cols = 0;
            for (int p = 0; p < r->n_split; p++) {
                const facet_tensor_row *part = facet_tensor_slot(r->split[p]);
                assert_int_equal(part->dims[1], r->dims[0]);
                cols += facet_tdim_value(part->dims[0], &f, 0);
            }
            assert_int_equal(cols, facet_tdim_value(r->dims[1], &f, 0));
            continue;
        }
        int64_t sum = 0;
        for (int p = 0; p < r->n_split; p++) {
            const facet_tensor_row *part = facet_tensor_slot(r->split[p]);
            assert_int_equal(part->matrix, r->matrix);
            assert_int_equal(part->dims[1], r->dims[1]);
            sum += facet_tdim_value(part->dims[0], &f, 0);
        }
        assert_int_equal(sum, facet_tdim_value(r->dims[0], &f, 0));
    }
    for (int s = 0; s < FACET_TS_COUNT; s++) assert_true(seen[s] >= 1);
    /* the hand-worked values: qkv = (6 + 2 * 2) * 16, gate_up = 2 * 200 */
    assert_int_equal(facet_tdim_value(facet_tensor_fused(FACET_TF_QKV_PROJ)->dims[0], &f, 0), 160);
    assert_int_equal(facet_tdim_value(FACET_TD_FFN2, &f, 0), 400);
    assert_int_equal(facet_tdim_value(FACET_TD_Q_NORM, &f, 1), 96);
    assert_int_equal(facet_tdim_value(FACET_TD_K_NORM, &f, 0), 16);
}

/* GGUF names through the table: the names llama.cpp writes, and the two it gives several
 * tensors (ffn_norm: the norm before the FFN; ffn_up: fused in Phi-3) resolved by facts. */
static void test_tensor_gguf_names(void **state) {
    (void)state;
    facet_facts f;
    memset(&f, 0, sizeof f);
    f.pre_norms = 1;
    static const struct {
        const char *gguf;
        int layer, post_norms, fused_gate_up;
        const char *hf;
    } cases[] = {
        {"token_embd.weight", 0, 0, 0, "embed_tokens.weight"},
        {"output_norm.weight", 0, 0, 0, "norm.weight"},
        {"output.weight", 0, 0, 0, "lm_head.weight"},
        {"attn_norm.weight", 1, 0, 0, "input_layernorm.weight"},
        {"attn_qkv.bias", 1, 0, 0, "self_attn.qkv_proj.bias"},
        {"attn_output.weight", 1, 0, 0, "self_attn.o_proj.weight"},
        {"ffn_norm.weight", 1, 0, 0, "post_attention_layernorm.weight"},   /* Llama */
        {"ffn_norm.weight", 1, 1, 0, "pre_feedforward_layernorm.weight"},  /* Gemma 2/3 */
        {"post_attention_norm.weight", 1, 1, 0, "post_attention_layernorm.weight"},
        {"post_ffw_norm.weight", 1, 1, 0, "post_feedforward_layernorm.weight"},
        {"ffn_up.weight", 1, 0, 0, "mlp.up_proj.weight"},
        {"ffn_up.weight", 1, 0, 1, "mlp.gate_up_proj.weight"},             /* Phi-3 */
        {"ffn_up.bias", 1, 0, 0, "mlp.up_proj.bias"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        f.post_norms = cases[i].post_norms;
        f.fused_gate_up = cases[i].fused_gate_up;
        const facet_tensor_row *r = facet_tensor_from_gguf(cases[i].gguf, cases[i].layer, &f);
        assert_non_null(r);
        assert_string_equal(r->name, cases[i].hf);
        assert_int_equal(r->root == FACET_TR_LAYER, cases[i].layer);
    }
    assert_null(facet_tensor_from_gguf("attn_norm.weight", 0, &f)); /* a layer name at the top */
    assert_null(facet_tensor_from_gguf("token_embd.weight", 1, &f));
    /* experts: 3-D, one kind each, on the mixture-of-experts layers (issue 27) */
    const facet_tensor_row *x = facet_tensor_from_gguf("ffn_gate_exps.weight", 1, &f);
    assert_non_null(x);
    assert_string_equal(x->name, "mlp.experts.gate_proj");
    assert_true(x->experts3d && x->scope == FACET_SCOPE_SPARSE);
    assert_string_equal(facet_tensor_from_gguf("ffn_down_exps.weight", 1, &f)->name,
                        "mlp.experts.down_proj");
    assert_string_equal(facet_tensor_from_gguf("ffn_gate_inp.weight", 1, &f)->name,
                        "mlp.gate.weight");
    /* shared experts (deepseek2's ffn_*_shexp) and latent attention's tensors (issue 25) */
    assert_string_equal(facet_tensor_from_gguf("ffn_gate_shexp.weight", 1, &f)->name,
                        "mlp.shared_expert.gate_proj.weight");
    assert_string_equal(facet_tensor_from_gguf("exp_probs_b.bias", 1, &f)->name,
                        "mlp.gate.e_score_correction_bias");
    f.kv_lora_rank = 32;
    static const struct {
        const char *gguf, *hf;
    } mla[] = {
        {"attn_q_a.weight", "self_attn.q_a_proj.weight"},
        {"attn_q_a_norm.weight", "self_attn.q_a_layernorm.weight"},
        {"attn_q_b.weight", "self_attn.q_b_proj.weight"},
        {"attn_kv_a_mqa.weight", "self_attn.kv_a_proj_with_mqa.weight"},
        {"attn_kv_a_norm.weight", "self_attn.kv_a_layernorm.weight"},
        {"attn_kv_b.weight", "self_attn.kv_b_proj.weight"},
        {"attn_q.weight", "self_attn.q_proj.weight"},
        {"attn_output.weight", "self_attn.o_proj.weight"},
    };
    for (size_t i = 0; i < sizeof mla / sizeof mla[0]; i++)
        assert_string_equal(facet_tensor_from_gguf(mla[i].gguf, 1, &f)->name, mla[i].hf);
    /* the split attn_k_b / attn_v_b are joined by the checkpoint view, not the table */
    assert_null(facet_tensor_from_gguf("attn_k_b.weight", 1, &f));
    assert_true(facet_gguf_tensor_known("blk.3.attn_k_b.weight"));
    assert_true(facet_gguf_tensor_known("blk.3.attn_v_b.weight"));
    /* gpt-oss (issue 27): its sinks, router bias and per-expert biases; the norm before
     * the experts is post_attention_norm, taken as post_attention_layernorm */
    static const struct {
        const char *gguf, *hf;
    } oss[] = {
        {"attn_sinks.weight", "self_attn.sinks"},
        {"ffn_gate_inp.bias", "mlp.gate.bias"},
        {"ffn_gate_exps.bias", "mlp.experts.gate_proj_bias"},
        {"ffn_up_exps.bias", "mlp.experts.up_proj_bias"},
        {"ffn_down_exps.bias", "mlp.experts.down_proj_bias"},
        {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    };
    for (size_t i = 0; i < sizeof oss / sizeof oss[0]; i++)
        assert_string_equal(facet_tensor_from_gguf(oss[i].gguf, 1, &f)->name, oss[i].hf);
    /* state-space mixers (issue 26): ssm_dt.bias is Mamba's dt_proj.bias and Mamba-2's
     * dt_bias by the facts; ssm_a / ssm_d carry no .weight suffix */
    static const struct {
        const char *gguf;
        int version;
        const char *hf;
    } ssm[] = {
        {"ssm_in.weight", 2, "mixer.in_proj.weight"},
        {"ssm_conv1d.weight", 2, "mixer.conv1d.weight"},
        {"ssm_conv1d.bias", 2, "mixer.conv1d.bias"},
        {"ssm_dt.bias", 2, "mixer.dt_bias"},
        {"ssm_dt.bias", 1, "mixer.dt_proj.bias"},
        {"ssm_dt.weight", 1, "mixer.dt_proj.weight"},
        {"ssm_x.weight", 1, "mixer.x_proj.weight"},
        {"ssm_a", 2, "mixer.A_log"},
        {"ssm_d", 2, "mixer.D"},
        {"ssm_norm.weight", 2, "mixer.norm.weight"},
        {"ssm_out.weight", 2, "mixer.out_proj.weight"},
    };
    memset(&f, 0, sizeof f);
    for (size_t i = 0; i < sizeof ssm / sizeof ssm[0]; i++) {
        f.ssm_version = ssm[i].version;
        f.ssm_conv_bias = 1;
        assert_string_equal(facet_tensor_from_gguf(ssm[i].gguf, 1, &f)->name, ssm[i].hf);
    }
    /* LFM2's names are aliases the checkpoint view resolves */
    assert_true(facet_gguf_tensor_known("blk.0.shortconv.in_proj.weight"));
    assert_true(facet_gguf_tensor_known("blk.0.shortconv.conv.weight"));
    assert_true(facet_gguf_tensor_known("blk.0.shortconv.out_proj.weight"));
    assert_true(facet_gguf_tensor_known("token_embd_norm.weight"));
    assert_false(facet_gguf_tensor_known("blk.0.shortconv.cong.weight"));
    /* Falcon-H1's FFN norm has no .weight suffix in llama.cpp's files */
    assert_true(facet_gguf_tensor_known("blk.0.ffn_norm"));
    /* Jamba's dt / B / C RMSNorms */
    memset(&f, 0, sizeof f);
    f.ssm_version = 1;
    f.ssm_dbc_norm = 1;
    assert_string_equal(facet_tensor_from_gguf("ssm_dt_norm.weight", 1, &f)->name,
                        "mixer.dt_layernorm.weight");
    assert_string_equal(facet_tensor_from_gguf("ssm_b_norm.weight", 1, &f)->name,
                        "mixer.b_layernorm.weight");
    assert_string_equal(facet_tensor_from_gguf("ssm_c_norm.weight", 1, &f)->name,
                        "mixer.c_layernorm.weight");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_untied),
        cmocka_unit_test(test_biases_norms_tied),
        cmocka_unit_test(test_untied_without_head_refused),
        cmocka_unit_test(test_promised_norm_missing_refused),
        cmocka_unit_test(test_inconsistent_layers),
        cmocka_unit_test(test_shape_mismatch),
        cmocka_unit_test(test_tensor_table),
        cmocka_unit_test(test_tensor_gguf_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
