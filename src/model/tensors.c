/*
 * tensors.c — the checkpoint tensor table (see tensors.h). Names follow the Hugging
 * Face modeling code's module paths (model.layers.N.self_attn.q_proj.weight, ...).
 */
#include "model/tensors.h"

#include <stdio.h>
#include <string.h>

/* When the loader needs a row: predicates on the probed facts. */
static int always(const facet_facts *f) { (void)f; return 1; }
static int fused_qkv(const facet_facts *f) { return f->fused_qkv; }
static int split_qkv(const facet_facts *f) {
    return !f->fused_qkv && !f->fused_qkv_heads && !f->conv1d && !f->kv_lora_rank;
}
/* latent attention (DeepSeek): q from q_proj, or q_a_proj -> q_a_layernorm -> q_b_proj */
static int mla(const facet_facts *f) { return f->kv_lora_rank > 0; }
static int mla_q_plain(const facet_facts *f) { return mla(f) && !f->q_lora_rank; }
static int mla_q_lora(const facet_facts *f) { return mla(f) && f->q_lora_rank > 0; }
static int plain_o(const facet_facts *f) { return !f->conv1d && !mla(f); }
static int score_bias(const facet_facts *f) { return f->moe_score_bias; }
static int qkv_bias(const facet_facts *f) {
    return f->qkv_bias && !f->fused_qkv_heads && !f->conv1d && !f->fused_qkv;
}
static int fused_qkv_bias(const facet_facts *f) { return f->qkv_bias && f->fused_qkv; }
static int conv1d(const facet_facts *f) { return f->conv1d; }
static int conv1d_qkv_bias(const facet_facts *f) { return f->conv1d && f->qkv_bias; }
static int conv1d_o_bias(const facet_facts *f) { return f->conv1d && f->o_bias; }
static int conv1d_mlp_bias(const facet_facts *f) { return f->conv1d && f->mlp_bias; }
static int not_conv1d(const facet_facts *f) { return !f->conv1d; }
static int pos_embed(const facet_facts *f) { return f->pos_embed_learned; }
static int embed_norm(const facet_facts *f) { return f->embed_norm; }
static int qkv_heads(const facet_facts *f) { return f->fused_qkv_heads; }
static int qkv_heads_bias(const facet_facts *f) { return f->fused_qkv_heads && f->qkv_bias; }
static int norm_bias(const facet_facts *f) { return f->norm_bias; }
static int ffn_norm(const facet_facts *f) { return !f->parallel_one_norm && !f->norm_no_weight; }
static int norm_weight(const facet_facts *f) { return !f->norm_no_weight; }
static int pre_norm_weight(const facet_facts *f) { return f->pre_norms && !f->norm_no_weight; }
static int ffn_norm_bias(const facet_facts *f) { return f->norm_bias && !f->parallel_one_norm; }
static int lm_head_bias(const facet_facts *f) { return f->lm_head_bias && f->has_lm_head; }
static int pre_norm_bias(const facet_facts *f) { return f->pre_norms && f->norm_bias; }
static int gated(const facet_facts *f) { return !f->fused_gate_up && !f->ffn_ungated; }
static int fused_gate_up_bias(const facet_facts *f) { return f->fused_gate_up && f->mlp_bias; }
static int up_rows(const facet_facts *f) { return !f->fused_gate_up && !f->conv1d; }
static int gate_bias(const facet_facts *f) {
    return f->mlp_bias && !f->ffn_ungated && !f->fused_gate_up;
}
static int o_bias(const facet_facts *f) { return f->o_bias && !f->conv1d; }
static int qk_norm(const facet_facts *f) { return f->qk_norm; }
static int pre_ffn_norm(const facet_facts *f) { return f->post_norms && f->pre_norms; }
static int post_norms(const facet_facts *f) { return f->post_norms; }
static int fused_gate_up(const facet_facts *f) { return f->fused_gate_up; }
static int mlp_bias(const facet_facts *f) { return f->mlp_bias && !f->conv1d; }
static int up_bias(const facet_facts *f) { return mlp_bias(f) && !f->fused_gate_up; }
static int lm_head(const facet_facts *f) { return f->has_lm_head; }
static int w123(const facet_facts *f) { return f->experts_layout == FACET_EXPERTS_W123; }
static int proj(const facet_facts *f) { return f->experts_layout == FACET_EXPERTS_PROJ; }
static int fused3d(const facet_facts *f) { return f->experts_layout == FACET_EXPERTS_FUSED; }
static int gptoss(const facet_facts *f) { return f->experts_layout == FACET_EXPERTS_GPTOSS; }
static int sinks(const facet_facts *f) { return f->attn_sinks; }
static int split3d(const facet_facts *f) { return f->experts_layout == FACET_EXPERTS_SPLIT3D; }
static int split3d_biases(const facet_facts *f) { return split3d(f) && f->moe_biases; }
static int down_bias(const facet_facts *f) { return gptoss(f) || split3d_biases(f); }
static int mlp_gate(const facet_facts *f) { return proj(f) || fused3d(f) || split3d(f); }
static int down3d(const facet_facts *f) { return fused3d(f) || split3d(f); }
static int granite3d(const facet_facts *f) { return f->experts_layout == FACET_EXPERTS_GRANITE; }
static int jamba(const facet_facts *f) { return f->experts_layout == FACET_EXPERTS_JAMBA; }
static int mixer_experts(const facet_facts *f) { return f->experts_layout == FACET_EXPERTS_MIXER; }
static int mixer3d(const facet_facts *f) { return f->experts_layout == FACET_EXPERTS_MIXER3D; }
static int mixer_router(const facet_facts *f) { return mixer_experts(f) || mixer3d(f); }
static int dbc_norm(const facet_facts *f) { return f->ssm_version == 1 && f->ssm_dbc_norm; }
static int shared_mlp(const facet_facts *f) {
    return f->shared_expert_intermediate_size > 0 && !granite3d(f);
}
/* an ungated shared expert (Nemotron-H's, facts ffn_ungated) has no gate_proj */
static int shared_mlp_gated(const facet_facts *f) { return shared_mlp(f) && !f->ffn_ungated; }
static int shared_gate(const facet_facts *f) { return shared_mlp(f) && f->shared_expert_gate; }
static int granite_shared(const facet_facts *f) {
    return f->shared_expert_intermediate_size > 0 && granite3d(f);
}

static int conv_bias(const facet_facts *f) { return f->ssm_conv_bias; }
/* MambaBlock's own norm; a hybrid's recurrent layer has input_layernorm instead */
static int ssm_block_norm(const facet_facts *f) { return !f->ssm_ffn; }
static int mamba1(const facet_facts *f) { return f->ssm_version == 1; }
static int mamba2(const facet_facts *f) { return f->ssm_version == 2; }
static int ssm_in_bias(const facet_facts *f) { return mamba2(f) && f->ssm_in_bias; }
static int ssm_out_bias(const facet_facts *f) { return mamba2(f) && f->ssm_out_bias; }
/* Mamba-2's output norm has a weight unless it is off (Falcon-H1's mamba_rms_norm) */
static int mamba2_norm(const facet_facts *f) {
    return mamba2(f) && f->ssm_norm != FACET_SSM_NORM_NONE;
}
/* a selective scan (Mamba, Mamba-2), not LFM2's short convolution */
static int selective(const facet_facts *f) { return f->ssm_version == 1 || f->ssm_version == 2; }
/* Qwen3-Next's gated delta rule (Qwen3NextGatedDeltaNet, linear_attn.*) */
static int gated_delta(const facet_facts *f) { return f->ssm_version == 4; }

/* a float32 vector / a weight matrix with a slot of its own; G: its GGUF name */
#define VEC(root_, name_, gguf_, d0, slot_, when_)                                          \
    {.root = root_, .name = name_, .gguf = gguf_, .dims = {d0, FACET_TD_NONE}, .matrix = 0,  \
     .slot = slot_, .fused = -1, .when = when_}
#define MAT(root_, name_, gguf_, d0, d1, slot_, when_)                                      \
    {.root = root_, .name = name_, .gguf = gguf_, .dims = {d0, d1}, .matrix = 1,             \
     .slot = slot_, .fused = -1, .when = when_}
#define L FACET_TR_LAYER
#define H FACET_TD_HIDDEN
/* a dense-FFN / a mixture-of-experts layer's matrix */
#define DENSE(...) {__VA_ARGS__, .scope = FACET_SCOPE_DENSE}
#define SMAT(name_, gguf_, d0, d1, slot_, when_)                                             \
    {.root = L, .name = name_, .gguf = gguf_, .dims = {d0, d1}, .matrix = 1, .slot = slot_,  \
     .fused = -1, .when = when_, .scope = FACET_SCOPE_SPARSE}
/* one matrix per expert: NAME E.TAIL */
#define EXPERT(name_, tail_, d0, d1, slot_, when_)                                          \
    {.root = L, .name = name_, .tail = tail_, .dims = {d0, d1}, .matrix = 1, .slot = slot_,  \
     .fused = -1, .when = when_, .scope = FACET_SCOPE_SPARSE}
/* a 3-D [E, d0, d1] tensor split per expert into n parts along d0 */
#define EXPERTS3D(name_, gguf_, d0, d1, n_, s0, s1, when_)                                  \
    {.root = L, .name = name_, .gguf = gguf_, .dims = {d0, d1}, .matrix = 1,                 \
     .slot = FACET_TS_FUSED,                                                                \
     .fused = -1, .n_split = n_, .split = {s0, s1}, .when = when_,                          \
     .scope = FACET_SCOPE_SPARSE, .experts3d = 1}
#define EF FACET_TD_EFFN
/* the shared expert: Qwen2-MoE's mlp.shared_expert.*, DeepSeek's mlp.shared_experts.*,
 * Nemotron-H's mixer.shared_experts.* */
#define SHARED(tail_, gguf_, d0, d1, slot_, when_)                                          \
    {.root = L, .name = "mlp.shared_expert." tail_, .alt = "mlp.shared_experts." tail_,      \
     .alt2 = "mixer.shared_experts." tail_, .gguf = gguf_,                                   \
     .dims = {d0, d1}, .matrix = 1, .slot = slot_, .fused = -1, .when = when_,               \
     .scope = FACET_SCOPE_SPARSE}

/* a Mamba layer's row (MambaBlock: norm, mixer.*; a Granite 4 hybrid's mamba.*) */
#define SSMG(name_, gguf_, d0, d1, matrix_, slot_, when_)                                   \
    {.root = L, .name = "mixer." name_, .alt = "mamba." name_, .gguf = gguf_, .dims = {d0, d1}, \
     .matrix = matrix_, .slot = slot_, .fused = -1, .when = when_, .scope = FACET_SCOPE_SSM}
#define SSM(name_, d0, d1, matrix_, slot_, when_) SSMG(name_, NULL, d0, d1, matrix_, slot_, when_)
#define SI FACET_TD_SSM_INNER

const facet_tensor_row facet_tensor_rows[] = {
    /* Mamba: backbone.embeddings; GPT-NeoX: gpt_neox.embed_in */
    {.root = FACET_TR_MODEL, .name = "embed_tokens.weight", .alt = "embeddings.weight",
     .alt2 = "embed_in.weight", .alt3 = "wte.weight" /* GPT-2 */,
     .alt4 = "word_embeddings.weight" /* Falcon, BLOOM */,
     .alt5 = "tok_embeddings.weight" /* InternLM2 */,
     .alt6 = "embedding.word_embeddings.weight" /* ChatGLM */,
     .gguf = "token_embd.weight", .dims = {FACET_TD_VOCAB, H}, .matrix = 1,
     .slot = FACET_TS_EMBED_TOKENS, .fused = -1, .when = always},
    {.root = FACET_TR_MODEL, .name = "wpe.weight", .dims = {FACET_TD_POSITIONS, H}, .matrix = 1,
     .slot = FACET_TS_POS_EMBED, .fused = -1, .when = pos_embed},
    /* BLOOM: a LayerNorm on the embeddings */
    VEC(FACET_TR_MODEL, "word_embeddings_layernorm.weight", NULL, H, FACET_TS_EMBED_NORM, embed_norm),
    VEC(FACET_TR_MODEL, "word_embeddings_layernorm.bias", NULL, H, FACET_TS_EMBED_NORM_BIAS, embed_norm),
    {.root = L, .name = "input_layernorm.weight", .alt = "ln_1.weight" /* GPT-2 */,
     .alt2 = "ln_attn.weight" /* Falcon's new_decoder_architecture */,
     .alt3 = "norm_1.weight" /* MPT */, .alt4 = "attention_norm.weight" /* InternLM2 */,
     .alt5 = "operator_norm.weight" /* LFM2 */, .alt6 = "norm.weight" /* Nemotron-H */,
     .gguf = "attn_norm.weight", .dims = {H, FACET_TD_NONE}, .slot = FACET_TS_INPUT_LAYERNORM,
     .fused = -1, .when = pre_norm_weight},
    {.root = L, .name = "input_layernorm.bias", .alt = "ln_1.bias", .alt2 = "ln_attn.bias",
     .gguf = "attn_norm.bias",
     .dims = {H, FACET_TD_NONE}, .slot = FACET_TS_INPUT_LAYERNORM_BIAS, .fused = -1,
     .when = pre_norm_bias},
    /* per KV group j, rows [q heads of the group; k_j; v_j]: GPT-NeoX (one head per
     * group: view(heads, 3 * head_dim)), Falcon (multi_query: one group; the new
     * decoder architecture: num_kv_heads groups) */
    {.root = L, .name = "attention.query_key_value.weight",
     .alt = "self_attention.query_key_value.weight", .alt2 = "attention.wqkv.weight" /* InternLM2 */,
     .dims = {FACET_TD_QKV, H},
     .matrix = 1, .slot = FACET_TS_FUSED, .fused = FACET_TF_QKV_HEADS, .n_split = 3,
     .split = {FACET_TS_Q_PROJ, FACET_TS_K_PROJ, FACET_TS_V_PROJ}, .when = qkv_heads,
     .heads_interleaved = 1},
    {.root = L, .name = "attention.query_key_value.bias",
     .alt = "self_attention.query_key_value.bias", .alt2 = "attention.wqkv.bias",
     .dims = {FACET_TD_QKV, FACET_TD_NONE},
     .matrix = 0, .slot = FACET_TS_FUSED, .fused = FACET_TF_QKV_HEADS_BIAS, .n_split = 3,
     .split = {FACET_TS_Q_BIAS, FACET_TS_K_BIAS, FACET_TS_V_BIAS}, .when = qkv_heads_bias,
     .heads_interleaved = 1},
    /* Phi-3: rows are q, then k, then v */
    {.root = L, .name = "self_attn.qkv_proj.weight", .alt = "attn.Wqkv.weight" /* MPT */,
     .alt2 = "attn.c_attn.weight" /* QWen (a Linear, facts c_attn_linear) */,
     .alt3 = "self_attention.query_key_value.weight" /* ChatGLM (facts qkv_fused_blocks) */,
     .alt4 = "self_attn.W_pack.weight" /* Baichuan */,
     .gguf = "attn_qkv.weight",
     .dims = {FACET_TD_QKV, H}, .matrix = 1, .slot = FACET_TS_FUSED, .fused = FACET_TF_QKV_PROJ,
     .n_split = 3, .split = {FACET_TS_Q_PROJ, FACET_TS_K_PROJ, FACET_TS_V_PROJ}, .when = fused_qkv},
    /* Nemotron-H: every layer's block is its mixer.* */
    {.root = L, .name = "self_attn.q_proj.weight", .alt = "attn.q_proj.weight" /* GPT-J */,
     .alt2 = "attn.attention.q_proj.weight" /* EXAONE */,
     .alt6 = "mixer.q_proj.weight", .gguf = "attn_q.weight",
     .dims = {FACET_TD_QG, H}, .matrix = 1, .slot = FACET_TS_Q_PROJ, .fused = -1, .when = split_qkv},
    {.root = L, .name = "self_attn.k_proj.weight", .alt = "attn.k_proj.weight",
     .alt2 = "attn.attention.k_proj.weight" /* EXAONE */,
     .alt6 = "mixer.k_proj.weight", .gguf = "attn_k.weight",
     .dims = {FACET_TD_KV, H}, .matrix = 1, .slot = FACET_TS_K_PROJ, .fused = -1, .when = split_qkv},
    {.root = L, .name = "self_attn.v_proj.weight", .alt = "attn.v_proj.weight",
     .alt2 = "attn.attention.v_proj.weight" /* EXAONE */,
     .alt6 = "mixer.v_proj.weight", .gguf = "attn_v.weight",
     .dims = {FACET_TD_KV, H}, .matrix = 1, .slot = FACET_TS_V_PROJ, .fused = -1, .when = split_qkv},
    /* a fused bias decides qkv_bias; loaded split where the weight is fused too (QWen) */
    {.root = L, .name = "self_attn.qkv_proj.bias", .alt = "attn.c_attn.bias" /* QWen */,
     .alt2 = "self_attention.query_key_value.bias" /* ChatGLM */, .gguf = "attn_qkv.bias",
     .dims = {FACET_TD_QKV, FACET_TD_NONE}, .matrix = 0, .slot = FACET_TS_FUSED,
     .fused = FACET_TF_QKV_BIAS, .n_split = 3,
     .split = {FACET_TS_Q_BIAS, FACET_TS_K_BIAS, FACET_TS_V_BIAS}, .when = fused_qkv_bias},
    {.root = L, .name = "self_attn.q_proj.bias", .alt6 = "mixer.q_proj.bias", .gguf = "attn_q.bias",
     .dims = {FACET_TD_QG, FACET_TD_NONE}, .slot = FACET_TS_Q_BIAS, .fused = -1, .when = qkv_bias},
    {.root = L, .name = "self_attn.k_proj.bias", .alt6 = "mixer.k_proj.bias", .gguf = "attn_k.bias",
     .dims = {FACET_TD_KV, FACET_TD_NONE}, .slot = FACET_TS_K_BIAS, .fused = -1, .when = qkv_bias},
    {.root = L, .name = "self_attn.v_proj.bias", .alt6 = "mixer.v_proj.bias", .gguf = "attn_v.bias",
     .dims = {FACET_TD_KV, FACET_TD_NONE}, .slot = FACET_TS_V_BIAS, .fused = -1, .when = qkv_bias},
    {.root = L, .name = "self_attn.o_proj.weight", .alt = "attention.dense.weight",
     .alt2 = "self_attn.dense.weight" /* Phi */, .alt3 = "self_attention.dense.weight" /* Falcon */,
     .alt4 = "attn.out_proj.weight" /* MPT */, .alt7 = "attention.wo.weight" /* InternLM2 */,
     .alt8 = "attn.attention.out_proj.weight" /* EXAONE */,
     .alt9 = "attn.c_proj.weight" /* QWen (GPT-2's Conv1D one has its own row) */,
     .alt5 = "self_attn.out_proj.weight" /* LFM2 */, .alt6 = "mixer.o_proj.weight",
     .gguf = "attn_output.weight", .dims = {H, FACET_TD_Q}, .matrix = 1, .slot = FACET_TS_O_PROJ,
     .fused = -1, .when = plain_o},
    /* latent attention (DeepseekV2Attention / DeepseekV3Attention) */
    MAT(L, "self_attn.q_proj.weight", "attn_q.weight", FACET_TD_MLA_Q, H, FACET_TS_MLA_Q_PROJ, mla_q_plain),
    MAT(L, "self_attn.q_a_proj.weight", "attn_q_a.weight", FACET_TD_Q_LORA, H, FACET_TS_Q_A_PROJ, mla_q_lora),
    VEC(L, "self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight", FACET_TD_Q_LORA, FACET_TS_Q_A_NORM, mla_q_lora),
    MAT(L, "self_attn.q_b_proj.weight", "attn_q_b.weight", FACET_TD_MLA_Q, FACET_TD_Q_LORA, FACET_TS_Q_B_PROJ,
        mla_q_lora),
    MAT(L, "self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight", FACET_TD_KV_A, H, FACET_TS_KV_A_PROJ, mla),
    VEC(L, "self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight", FACET_TD_KV_LORA, FACET_TS_KV_A_NORM, mla),
    MAT(L, "self_attn.kv_b_proj.weight", "attn_kv_b.weight", FACET_TD_KV_B, FACET_TD_KV_LORA, FACET_TS_KV_B_PROJ,
        mla),
    MAT(L, "self_attn.o_proj.weight", "attn_output.weight", H, FACET_TD_MLA_O, FACET_TS_MLA_O_PROJ, mla),
    {.root = L, .name = "self_attn.o_proj.bias", .alt = "attention.dense.bias",
     .alt2 = "self_attn.dense.bias", .alt3 = "self_attention.dense.bias",
     .alt6 = "mixer.o_proj.bias", .alt7 = "attention.wo.bias", .gguf = "attn_output.bias", .dims = {H, FACET_TD_NONE}, .slot = FACET_TS_O_BIAS,
     .fused = -1, .when = o_bias},
    VEC(L, "self_attn.sinks", "attn_sinks.weight", FACET_TD_HEADS, FACET_TS_SINKS, sinks),
    /* GPT-2: Conv1D weights [in, out], transposed at load; c_attn's columns q | k | v */
    {.root = L, .name = "attn.c_attn.weight", .dims = {FACET_TD_QKV, H}, .matrix = 1,
     .slot = FACET_TS_FUSED, .fused = FACET_TF_C_ATTN, .n_split = 3,
     .split = {FACET_TS_Q_PROJ, FACET_TS_K_PROJ, FACET_TS_V_PROJ}, .when = conv1d, .conv1d = 1},
    {.root = L, .name = "attn.c_attn.bias", .dims = {FACET_TD_QKV, FACET_TD_NONE}, .matrix = 0,
     .slot = FACET_TS_FUSED, .fused = FACET_TF_C_ATTN_BIAS, .n_split = 3,
     .split = {FACET_TS_Q_BIAS, FACET_TS_K_BIAS, FACET_TS_V_BIAS}, .when = conv1d_qkv_bias,
     .conv1d = 1},
    {.root = L, .name = "attn.c_proj.weight", .dims = {H, FACET_TD_Q}, .matrix = 1,
     .slot = FACET_TS_O_PROJ, .fused = -1, .when = conv1d, .conv1d = 1},
    {.root = L, .name = "attn.c_proj.bias", .dims = {H, FACET_TD_NONE}, .slot = FACET_TS_O_BIAS,
     .fused = -1, .when = conv1d_o_bias, .conv1d = 1},
    /* LFM2: q_layernorm / k_layernorm */
    {.root = L, .name = "self_attn.q_norm.weight", .alt5 = "self_attn.q_layernorm.weight",
     .gguf = "attn_q_norm.weight", .dims = {FACET_TD_Q_NORM, FACET_TD_NONE},
     .slot = FACET_TS_Q_NORM, .fused = -1, .when = qk_norm},
    {.root = L, .name = "self_attn.k_norm.weight", .alt5 = "self_attn.k_layernorm.weight",
     .gguf = "attn_k_norm.weight", .dims = {FACET_TD_K_NORM, FACET_TD_NONE},
     .slot = FACET_TS_K_NORM, .fused = -1, .when = qk_norm},
    /* the norm before the FFN in pre-norm families; on the attention output in post-norm
     * ones, whose norm before the FFN is pre_feedforward_layernorm (GGUF's ffn_norm) */
    {.root = L, .name = "post_attention_layernorm.weight", .alt = "ln_2.weight",
     .alt2 = "ln_mlp.weight" /* Falcon's new_decoder_architecture */,
     .alt3 = "norm_2.weight" /* MPT */, .alt4 = "pre_ff_layernorm.weight" /* Bamba */,
     .alt5 = "ffn_norm.weight" /* LFM2 */, .alt6 = "norm.weight" /* Nemotron-H's MLP layers */, .gguf = "ffn_norm.weight",
     .gguf_post = "post_attention_norm.weight", .dims = {H, FACET_TD_NONE}, .matrix = 0,
     .slot = FACET_TS_POST_ATTENTION_LAYERNORM, .fused = -1, .when = ffn_norm},
    {.root = L, .name = "post_attention_layernorm.bias", .alt = "ln_2.bias", .alt2 = "ln_mlp.bias",
     .gguf = "ffn_norm.bias",
     .dims = {H, FACET_TD_NONE}, .slot = FACET_TS_POST_ATTENTION_LAYERNORM_BIAS, .fused = -1,
     .when = ffn_norm_bias},
    VEC(L, "pre_feedforward_layernorm.weight", "ffn_norm.weight", H,
        FACET_TS_PRE_FEEDFORWARD_LAYERNORM, pre_ffn_norm),
    VEC(L, "post_feedforward_layernorm.weight", "post_ffw_norm.weight", H,
        FACET_TS_POST_FEEDFORWARD_LAYERNORM, post_norms),
    /* Phi-3: rows are gate, then up */
    /* Granite 4.0-H without experts: shared_mlp.input_linear (gate, then up) */
    /* ChatGLM: mlp.dense_h_to_4h, chunk(2) -> silu(gate) * up (NeoX's ungated one of
     * that name is up alone: the probe tells them apart by ffn_ungated) */
    DENSE(.root = L, .name = "mlp.gate_up_proj.weight", .alt = "shared_mlp.input_linear.weight",
          .alt2 = "mlp.dense_h_to_4h.weight" /* ChatGLM */, .gguf = "ffn_up.weight",
          .dims = {FACET_TD_FFN2, H}, .matrix = 1, .slot = FACET_TS_FUSED,
          .fused = FACET_TF_GATE_UP_PROJ, .n_split = 2,
          .split = {FACET_TS_GATE_PROJ, FACET_TS_UP_PROJ}, .when = fused_gate_up),
    /* LFM2's feed_forward: w1 gate, w3 up, w2 down; Bamba's: gate_proj, up_proj, down_proj */
    DENSE(.root = L, .name = "mlp.gate_proj.weight", .alt = "feed_forward.gate_proj.weight",
          .alt5 = "feed_forward.w1.weight", .alt2 = "mlp.c_fc_0.weight" /* EXAONE */,
          .alt3 = "mlp.w2.weight" /* QWen: c_proj(w1 x * silu(w2 x)) */,
          .gguf = "ffn_gate.weight",
          .dims = {FACET_TD_FFN, H}, .matrix = 1, .slot = FACET_TS_GATE_PROJ, .fused = -1,
          .when = gated),
    /* ungated MLPs (facts ffn_ungated): up is NeoX's dense_h_to_4h, down dense_4h_to_h */
    DENSE(.root = L, .name = "mlp.up_proj.weight", .alt = "mlp.dense_h_to_4h.weight",
          .alt2 = "mlp.fc1.weight" /* Phi */, .alt3 = "mlp.c_fc.weight" /* StarCoder2 */,
          .alt4 = "ffn.up_proj.weight" /* MPT */, .alt7 = "mlp.fc_in.weight" /* GPT-J */,
          .alt5 = "feed_forward.w3.weight", .alt6 = "mixer.up_proj.weight" /* Nemotron-H */,
          .alt8 = "feed_forward.up_proj.weight" /* Bamba */, .alt9 = "mlp.c_fc_1.weight" /* EXAONE */,
          .alt10 = "mlp.w1.weight" /* QWen */,
          .gguf = "ffn_up.weight",
          .dims = {FACET_TD_FFN, H}, .matrix = 1, .slot = FACET_TS_UP_PROJ, .fused = -1,
          .when = up_rows),
    DENSE(.root = L, .name = "mlp.down_proj.weight", .alt = "mlp.dense_4h_to_h.weight",
          .alt2 = "mlp.fc2.weight", .alt3 = "mlp.c_proj.weight",
          .alt4 = "shared_mlp.output_linear.weight" /* Granite 4.0-H dense */,
          .alt5 = "feed_forward.w2.weight", .alt6 = "mixer.down_proj.weight",
          .alt7 = "ffn.down_proj.weight" /* MPT */, .alt8 = "mlp.fc_out.weight" /* GPT-J */,
          .alt9 = "feed_forward.down_proj.weight" /* Bamba */,
          .gguf = "ffn_down.weight",
          .dims = {H, FACET_TD_FFN}, .matrix = 1, .slot = FACET_TS_DOWN_PROJ, .fused = -1,
          .when = not_conv1d),
    /* ChatGLM's add_bias_linear: dense_h_to_4h's bias, gate then up */
    DENSE(.root = L, .name = "mlp.gate_up_proj.bias", .alt = "mlp.dense_h_to_4h.bias",
          .dims = {FACET_TD_FFN2, FACET_TD_NONE}, .matrix = 0, .slot = FACET_TS_FUSED,
          .fused = FACET_TF_GATE_UP_BIAS, .n_split = 2,
          .split = {FACET_TS_GATE_BIAS, FACET_TS_UP_BIAS}, .when = fused_gate_up_bias),
    /* Llama's mlp_bias: gate, up and down all carry a bias */
    DENSE(.root = L, .name = "mlp.gate_proj.bias",
          .alt = "feed_forward.gate_proj.bias" /* Falcon-H1's mlp_bias */, .gguf = "ffn_gate.bias",
          .dims = {FACET_TD_FFN, FACET_TD_NONE}, .slot = FACET_TS_GATE_BIAS, .fused = -1,
          .when = gate_bias),
    DENSE(.root = L, .name = "mlp.up_proj.bias", .alt = "mlp.dense_h_to_4h.bias",
          .alt2 = "mlp.fc1.bias", .alt3 = "mlp.c_fc.bias", .alt4 = "mlp.fc_in.bias",
          .alt6 = "mixer.up_proj.bias", .alt7 = "feed_forward.up_proj.bias" /* Falcon-H1 */,
          .gguf = "ffn_up.bias",
          .dims = {FACET_TD_FFN, FACET_TD_NONE}, .slot = FACET_TS_UP_BIAS, .fused = -1,
          .when = up_bias),
    DENSE(.root = L, .name = "mlp.down_proj.bias", .alt = "mlp.dense_4h_to_h.bias",
          .alt2 = "mlp.fc2.bias", .alt3 = "mlp.c_proj.bias", .alt4 = "mlp.fc_out.bias",
          .alt6 = "mixer.down_proj.bias", .alt7 = "feed_forward.down_proj.bias" /* Falcon-H1 */,
          .gguf = "ffn_down.bias",
          .dims = {H, FACET_TD_NONE}, .slot = FACET_TS_DOWN_BIAS, .fused = -1, .when = mlp_bias),
    DENSE(.root = L, .name = "mlp.c_fc.weight", .dims = {FACET_TD_FFN, H}, .matrix = 1,
          .slot = FACET_TS_UP_PROJ, .fused = -1, .when = conv1d, .conv1d = 1),
    DENSE(.root = L, .name = "mlp.c_fc.bias", .dims = {FACET_TD_FFN, FACET_TD_NONE},
          .slot = FACET_TS_UP_BIAS, .fused = -1, .when = conv1d_mlp_bias, .conv1d = 1),
    DENSE(.root = L, .name = "mlp.c_proj.weight", .dims = {H, FACET_TD_FFN}, .matrix = 1,
          .slot = FACET_TS_DOWN_PROJ, .fused = -1, .when = conv1d, .conv1d = 1),
    DENSE(.root = L, .name = "mlp.c_proj.bias", .dims = {H, FACET_TD_NONE},
          .slot = FACET_TS_DOWN_BIAS, .fused = -1, .when = conv1d_mlp_bias, .conv1d = 1),
    /* mixture-of-experts layers: the router, by layout */
    SMAT("block_sparse_moe.gate.weight", NULL, FACET_TD_EXPERTS, H,
         FACET_TS_ROUTER, w123),
    SMAT("mlp.gate.weight", "ffn_gate_inp.weight", FACET_TD_EXPERTS, H, FACET_TS_ROUTER,
         mlp_gate),
    SMAT("block_sparse_moe.router.layer.weight", NULL, FACET_TD_EXPERTS, H, FACET_TS_ROUTER,
         granite3d),
    SMAT("mlp.router.weight", NULL, FACET_TD_EXPERTS, H, FACET_TS_ROUTER, gptoss),
    SMAT("mixer.gate.weight", NULL, FACET_TD_EXPERTS, H, FACET_TS_ROUTER, mixer_router),
    {.root = L, .name = "mlp.router.bias", .dims = {FACET_TD_EXPERTS, FACET_TD_NONE},
     .slot = FACET_TS_ROUTER_BIAS, .fused = -1, .when = gptoss, .scope = FACET_SCOPE_SPARSE},
    /* the experts: Mixtral's w1 (gate), w3 (up), w2 (down) */
    EXPERT("block_sparse_moe.experts.", "w1.weight", EF, H, FACET_TS_EXPERT_GATE, w123),
    EXPERT("block_sparse_moe.experts.", "w3.weight", EF, H, FACET_TS_EXPERT_UP, w123),
    EXPERT("block_sparse_moe.experts.", "w2.weight", H, EF, FACET_TS_EXPERT_DOWN, w123),
    SMAT("feed_forward.router.weight", NULL, FACET_TD_EXPERTS, H, FACET_TS_ROUTER, jamba),
    EXPERT("feed_forward.experts.", "gate_proj.weight", EF, H, FACET_TS_EXPERT_GATE, jamba),
    EXPERT("feed_forward.experts.", "up_proj.weight", EF, H, FACET_TS_EXPERT_UP, jamba),
    EXPERT("feed_forward.experts.", "down_proj.weight", H, EF, FACET_TS_EXPERT_DOWN, jamba),
    /* Nemotron-H's NemotronHExperts, as the released checkpoints store them: up and
     * down alone (ungated) */
    EXPERT("mixer.experts.", "up_proj.weight", EF, H, FACET_TS_EXPERT_UP, mixer_experts),
    EXPERT("mixer.experts.", "down_proj.weight", H, EF, FACET_TS_EXPERT_DOWN, mixer_experts),
    /* and as transformers 5's NemotronHExperts parameters: [E, I, H] / [E, H, I] */
    EXPERTS3D("mixer.experts.up_proj", NULL, EF, H, 1, FACET_TS_EXPERT_UP, 0, mixer3d),
    EXPERTS3D("mixer.experts.down_proj", NULL, H, EF, 1, FACET_TS_EXPERT_DOWN, 0, mixer3d),
    EXPERT("mlp.experts.", "gate_proj.weight", EF, H, FACET_TS_EXPERT_GATE, proj),
    EXPERT("mlp.experts.", "up_proj.weight", EF, H, FACET_TS_EXPERT_UP, proj),
    EXPERT("mlp.experts.", "down_proj.weight", H, EF, FACET_TS_EXPERT_DOWN, proj),
    /* 3-D: each expert's rows are gate then up (chunk(2) of the projection) */
    EXPERTS3D("mlp.experts.gate_up_proj", NULL, FACET_TD_EFFN2, H, 2, FACET_TS_EXPERT_GATE,
              FACET_TS_EXPERT_UP, fused3d),
    EXPERTS3D("mlp.experts.down_proj", "ffn_down_exps.weight", H, EF, 1, FACET_TS_EXPERT_DOWN, 0, down3d),
    /* 3-D, one kind each (GGUF's ffn_gate_exps, ffn_up_exps; ffn_down_exps above) */
    EXPERTS3D("mlp.experts.gate_proj", "ffn_gate_exps.weight", EF, H, 1, FACET_TS_EXPERT_GATE, 0, split3d),
    EXPERTS3D("mlp.experts.up_proj", "ffn_up_exps.weight", EF, H, 1, FACET_TS_EXPERT_UP, 0, split3d),
    EXPERTS3D("block_sparse_moe.input_linear.weight", NULL, FACET_TD_EFFN2, H, 2,
              FACET_TS_EXPERT_GATE, FACET_TS_EXPERT_UP, granite3d),
    EXPERTS3D("block_sparse_moe.output_linear.weight", NULL, H, EF, 1, FACET_TS_EXPERT_DOWN, 0,
              granite3d),
    /* gpt-oss: x @ W per expert, gate and up columns interleaved; a bias on each */
    {.root = L, .name = "mlp.experts.gate_up_proj", .dims = {H, FACET_TD_EFFN2}, .matrix = 1,
     .slot = FACET_TS_FUSED, .fused = -1, .n_split = 2,
     .split = {FACET_TS_EXPERT_GATE, FACET_TS_EXPERT_UP}, .when = gptoss,
     .scope = FACET_SCOPE_SPARSE, .experts3d = 1, .transposed = 1, .interleaved = 1},
    {.root = L, .name = "mlp.experts.gate_up_proj_bias", .dims = {FACET_TD_EFFN2, FACET_TD_NONE},
     .slot = FACET_TS_FUSED, .fused = -1, .n_split = 2,
     .split = {FACET_TS_EXPERT_GATE_BIAS, FACET_TS_EXPERT_UP_BIAS}, .when = gptoss,
     .scope = FACET_SCOPE_SPARSE, .experts3d = 1, .interleaved = 1},
    {.root = L, .name = "mlp.experts.down_proj", .dims = {EF, H}, .matrix = 1,
     .slot = FACET_TS_FUSED, .fused = -1, .n_split = 1, .split = {FACET_TS_EXPERT_DOWN},
     .when = gptoss, .scope = FACET_SCOPE_SPARSE, .experts3d = 1, .transposed = 1},
    {.root = L, .name = "mlp.experts.down_proj_bias", .gguf = "ffn_down_exps.bias",
     .dims = {H, FACET_TD_NONE}, .slot = FACET_TS_FUSED, .fused = -1, .n_split = 1,
     .split = {FACET_TS_EXPERT_DOWN_BIAS}, .when = down_bias, .scope = FACET_SCOPE_SPARSE, .experts3d = 1},
    /* GGUF gpt-oss: the router's bias and each expert's gate/up biases, [E, width] (the
     * down bias: mlp.experts.down_proj_bias above) */
    {.root = L, .name = "mlp.gate.bias", .gguf = "ffn_gate_inp.bias",
     .dims = {FACET_TD_EXPERTS, FACET_TD_NONE}, .slot = FACET_TS_ROUTER_BIAS, .fused = -1,
     .when = split3d_biases, .scope = FACET_SCOPE_SPARSE},
    {.root = L, .name = "mlp.experts.gate_proj_bias", .gguf = "ffn_gate_exps.bias",
     .dims = {EF, FACET_TD_NONE}, .slot = FACET_TS_FUSED, .fused = -1, .n_split = 1,
     .split = {FACET_TS_EXPERT_GATE_BIAS}, .when = split3d_biases,
     .scope = FACET_SCOPE_SPARSE, .experts3d = 1},
    {.root = L, .name = "mlp.experts.up_proj_bias", .gguf = "ffn_up_exps.bias",
     .dims = {EF, FACET_TD_NONE}, .slot = FACET_TS_FUSED, .fused = -1, .n_split = 1,
     .split = {FACET_TS_EXPERT_UP_BIAS}, .when = split3d_biases,
     .scope = FACET_SCOPE_SPARSE, .experts3d = 1},
    /* the shared expert (Qwen2-MoE, gated; Granite-MoE-shared, ungated and fused) */
    SHARED("gate_proj.weight", "ffn_gate_shexp.weight", FACET_TD_SFFN, H, FACET_TS_SHARED_GATE,
           shared_mlp_gated),
    SHARED("up_proj.weight", "ffn_up_shexp.weight", FACET_TD_SFFN, H, FACET_TS_SHARED_UP,
           shared_mlp),
    SHARED("down_proj.weight", "ffn_down_shexp.weight", H, FACET_TD_SFFN, FACET_TS_SHARED_DOWN,
           shared_mlp),
    /* DeepseekV3TopkRouter's (NemotronHTopkRouter's) per-expert bias of the choice */
    {.root = L, .name = "mlp.gate.e_score_correction_bias",
     .alt = "mixer.gate.e_score_correction_bias", .gguf = "exp_probs_b.bias", .dims = {FACET_TD_EXPERTS, FACET_TD_NONE},
     .slot = FACET_TS_ROUTER_SCORE_BIAS, .fused = -1, .when = score_bias,
     .scope = FACET_SCOPE_SPARSE},
    SMAT("mlp.shared_expert_gate.weight", NULL, FACET_TD_ONE, H, FACET_TS_SHARED_EXPERT_GATE,
         shared_gate),
    {.root = L, .name = "shared_mlp.input_linear.weight", .dims = {FACET_TD_SFFN2, H},
     .matrix = 1, .slot = FACET_TS_FUSED, .fused = FACET_TF_SHARED_INPUT, .n_split = 2,
     .split = {FACET_TS_SHARED_GATE, FACET_TS_SHARED_UP}, .when = granite_shared,
     .scope = FACET_SCOPE_SPARSE},
    SMAT("shared_mlp.output_linear.weight", NULL, H, FACET_TD_SFFN, FACET_TS_SHARED_DOWN,
         granite_shared),
    /* Mamba layers (MambaBlock): norm, then the mixer's tensors */
    {.root = L, .name = "norm.weight", .dims = {H, FACET_TD_NONE}, .slot = FACET_TS_INPUT_LAYERNORM,
     .fused = -1, .when = ssm_block_norm, .scope = FACET_SCOPE_SSM},
    /* Qwen3-Next's in_proj_qkvz as stored: per key head q, k, then its value heads' v and
     * z (Qwen3NextGatedDeltaNet.fix_query_key_value_ordering reads it so) */
    {.root = L, .name = "mixer.in_proj.weight", .alt = "mamba.in_proj.weight",
     .alt5 = "conv.in_proj.weight" /* LFM2 */, .alt2 = "linear_attn.in_proj_qkvz.weight", .gguf = "ssm_in.weight", .dims = {FACET_TD_SSM_IN_PROJ, H}, .matrix = 1,
     .slot = FACET_TS_SSM_IN_PROJ, .fused = -1, .when = always, .scope = FACET_SCOPE_SSM},
    {.root = L, .name = "mixer.conv1d.weight", .alt = "mamba.conv1d.weight",
     .alt5 = "conv.conv.weight" /* LFM2 */, .alt2 = "linear_attn.conv1d.weight" /* Qwen3-Next */, .gguf = "ssm_conv1d.weight" /* [K, C] */,
     .dims = {FACET_TD_SSM_CONV_DIM, FACET_TD_SSM_CONV},
     .matrix = 0, .slot = FACET_TS_SSM_CONV_W, .fused = -1, .when = always,
     .scope = FACET_SCOPE_SSM, .conv3d = 1},
    SSMG("conv1d.bias", "ssm_conv1d.bias", FACET_TD_SSM_CONV_DIM, FACET_TD_NONE, 0, FACET_TS_SSM_CONV_B,
        conv_bias),
    /* Mamba: dt from x_proj through dt_proj */
    SSMG("x_proj.weight", "ssm_x.weight", FACET_TD_SSM_XPROJ, SI, 1, FACET_TS_SSM_X_PROJ, mamba1),
    SSMG("dt_proj.weight", "ssm_dt.weight", SI, FACET_TD_SSM_DT_RANK, 1, FACET_TS_SSM_DT_PROJ, mamba1),
    SSMG("dt_proj.bias", "ssm_dt.bias", FACET_TD_SSM_PARAM, FACET_TD_NONE, 0, FACET_TS_SSM_DT_BIAS, mamba1),
    /* Mamba-2: dt from in_proj, one bias per head */
    SSMG("dt_bias", "ssm_dt.bias", FACET_TD_SSM_PARAM, FACET_TD_NONE, 0, FACET_TS_SSM_DT_BIAS, mamba2),
    /* GGUF: ssm_a holds A = -exp(A_log) (Mamba-2: [1, heads]), ssm_d D (Mamba-2: [1, heads]),
     * ssm_norm Mamba-2's gated norm as [inner / groups, groups]; the checkpoint view turns
     * them back (gguf_checkpoint.c) */
    SSMG("A_log", "ssm_a", FACET_TD_SSM_PARAM, FACET_TD_SSM_A_COLS, 0, FACET_TS_SSM_A_LOG, selective),
    SSMG("D", "ssm_d", FACET_TD_SSM_PARAM, FACET_TD_NONE, 0, FACET_TS_SSM_D, selective),
    SSMG("norm.weight", "ssm_norm.weight", FACET_TD_SSM_GNORM, FACET_TD_NONE, 0, FACET_TS_SSM_GNORM, mamba2_norm),
    /* Falcon-H1's projection biases (mamba_proj_bias, projectors_bias) */
    SSM("in_proj.bias", FACET_TD_SSM_IN_PROJ, FACET_TD_NONE, 0, FACET_TS_SSM_IN_BIAS, ssm_in_bias),
    SSM("out_proj.bias", H, FACET_TD_NONE, 0, FACET_TS_SSM_OUT_BIAS, ssm_out_bias),
    /* Jamba: RMSNorms of dt, B and C (GGUF: ssm_{dt,b,c}_norm) */
    SSMG("dt_layernorm.weight", "ssm_dt_norm.weight", FACET_TD_SSM_DT_RANK, FACET_TD_NONE, 0,
         FACET_TS_SSM_DT_NORM, dbc_norm),
    SSMG("b_layernorm.weight", "ssm_b_norm.weight", FACET_TD_SSM_STATE, FACET_TD_NONE, 0,
         FACET_TS_SSM_B_NORM, dbc_norm),
    SSMG("c_layernorm.weight", "ssm_c_norm.weight", FACET_TD_SSM_STATE, FACET_TD_NONE, 0,
         FACET_TS_SSM_C_NORM, dbc_norm),
    /* Qwen3-Next: linear_attn.in_proj_ba, dt_bias, A_log (one per value head), the gated
     * norm (one head's width, shared by the heads) */
    {.root = L, .name = "linear_attn.in_proj_ba.weight", .dims = {FACET_TD_SSM_BA, H},
     .matrix = 1, .slot = FACET_TS_SSM_BA, .fused = -1, .when = gated_delta,
     .scope = FACET_SCOPE_SSM},
    {.root = L, .name = "linear_attn.dt_bias", .dims = {FACET_TD_SSM_PARAM, FACET_TD_NONE},
     .slot = FACET_TS_SSM_DT_BIAS, .fused = -1, .when = gated_delta, .scope = FACET_SCOPE_SSM},
    {.root = L, .name = "linear_attn.A_log", .dims = {FACET_TD_SSM_PARAM, FACET_TD_SSM_A_COLS},
     .slot = FACET_TS_SSM_A_LOG, .fused = -1, .when = gated_delta, .scope = FACET_SCOPE_SSM},
    {.root = L, .name = "linear_attn.norm.weight", .dims = {FACET_TD_SSM_GNORM, FACET_TD_NONE},
     .slot = FACET_TS_SSM_GNORM, .fused = -1, .when = gated_delta, .scope = FACET_SCOPE_SSM},
    {.root = L, .name = "mixer.out_proj.weight", .alt = "mamba.out_proj.weight",
     .alt5 = "conv.out_proj.weight" /* LFM2 */, .alt2 = "linear_attn.out_proj.weight", .gguf = "ssm_out.weight", .dims = {H, SI}, .matrix = 1,
     .slot = FACET_TS_SSM_OUT_PROJ, .fused = -1, .when = always, .scope = FACET_SCOPE_SSM},
    /* Mamba: backbone.norm_f; GPT-NeoX: gpt_neox.final_layer_norm */
    {.root = FACET_TR_MODEL, .name = "norm.weight", .alt = "norm_f.weight",
     .alt2 = "final_layer_norm.weight", .alt3 = "final_layernorm.weight" /* Phi */,
     .alt4 = "ln_f.weight" /* GPT-2 */, .alt5 = "embedding_norm.weight" /* LFM2 */,
     .alt6 = "encoder.final_layernorm.weight" /* ChatGLM */, .gguf = "output_norm.weight", .dims = {H, FACET_TD_NONE}, .matrix = 0,
     .slot = FACET_TS_NORM, .fused = -1, .when = norm_weight},
    {.root = FACET_TR_MODEL, .name = "norm.bias", .alt = "final_layer_norm.bias",
     .alt2 = "final_layernorm.bias", .alt3 = "ln_f.bias",
     .alt4 = "encoder.final_layernorm.bias" /* ChatGLM */, .gguf = "output_norm.bias", .dims = {H, FACET_TD_NONE}, .slot = FACET_TS_NORM_BIAS,
     .fused = -1, .when = norm_bias},
    /* present means untied, whatever tie_word_embeddings says (probe.c) */
    {.root = FACET_TR_TOP, .name = "lm_head.weight", .alt = "language_model.lm_head.weight",
     .alt2 = "embed_out.weight", /* GPT-NeoX */ .alt3 = "output.weight" /* InternLM2 */,
     .alt4 = "transformer.output_layer.weight" /* ChatGLM */, .gguf = "output.weight", .dims = {FACET_TD_VOCAB, H}, .matrix = 1, .slot = FACET_TS_LM_HEAD,
     .fused = -1, .when = lm_head},
    {.root = FACET_TR_TOP, .name = "lm_head.bias", .dims = {FACET_TD_VOCAB, FACET_TD_NONE},
     .slot = FACET_TS_LM_HEAD_BIAS, .fused = -1, .when = lm_head_bias},
};
const size_t facet_tensor_count = sizeof facet_tensor_rows / sizeof facet_tensor_rows[0];

#undef L
#undef H
#undef EF
#undef DENSE
#undef SMAT
#undef EXPERT
#undef EXPERTS3D
#undef SSM
#undef SI

/* The attention block's rows (projections, their biases and norms, sinks). */
static int attention_row(const facet_tensor_row *r) {
    switch (r->slot) {
    case FACET_TS_Q_PROJ: case FACET_TS_K_PROJ: case FACET_TS_V_PROJ: case FACET_TS_O_PROJ:
    case FACET_TS_Q_BIAS: case FACET_TS_K_BIAS: case FACET_TS_V_BIAS: case FACET_TS_O_BIAS:
    case FACET_TS_Q_NORM: case FACET_TS_K_NORM: case FACET_TS_SINKS:
        return 1;
    case FACET_TS_FUSED:
        return r->fused == FACET_TF_QKV_PROJ || r->fused == FACET_TF_QKV_BIAS ||
               r->fused == FACET_TF_QKV_HEADS || r->fused == FACET_TF_QKV_HEADS_BIAS ||
               r->fused == FACET_TF_C_ATTN || r->fused == FACET_TF_C_ATTN_BIAS;
    default:
        return 0;
    }
}

int facet_tensor_in_layer(const facet_tensor_row *r, const facet_facts *f, int64_t layer) {
    if (r->root != FACET_TR_LAYER) return 0;
    int ssm = layer >= 0 && layer < FACET_MAX_LAYERS && f->layer_ssm[layer];
    /* Falcon-H1: every layer holds a Mamba-2 mixer's rows beside attention's */
    if (r->scope == FACET_SCOPE_SSM) return ssm || f->ssm_parallel;
    /* a recurrent layer: its mixer's rows alone, or (hybrids) every row but attention's */
    if (ssm && (!f->ssm_ffn || attention_row(r))) return 0;
    /* single-block layers (Nemotron-H): an FFN-only layer has no attention rows nor the
     * mixer's norm; a mixer-only one no FFN rows nor the FFN's norm */
    int blk = layer >= 0 && layer < FACET_MAX_LAYERS ? f->layer_block[layer] : FACET_BLOCK_BOTH;
    if (blk == FACET_BLOCK_FFN &&
        (attention_row(r) || r->slot == FACET_TS_INPUT_LAYERNORM ||
         r->slot == FACET_TS_INPUT_LAYERNORM_BIAS))
        return 0;
    if (blk == FACET_BLOCK_MIXER &&
        (r->scope == FACET_SCOPE_DENSE || r->scope == FACET_SCOPE_SPARSE ||
         r->slot == FACET_TS_POST_ATTENTION_LAYERNORM ||
         r->slot == FACET_TS_POST_ATTENTION_LAYERNORM_BIAS))
        return 0;
    int sparse = layer >= 0 && layer < FACET_MAX_LAYERS && f->layer_sparse[layer];
    return r->scope == FACET_SCOPE_ALL || (r->scope == FACET_SCOPE_SPARSE) == sparse;
}

const facet_tensor_row *facet_tensor_slot(facet_tslot s) {
    for (size_t i = 0; i < facet_tensor_count; i++)
        if (facet_tensor_rows[i].slot == s) return &facet_tensor_rows[i];
    return NULL;
}

const facet_tensor_row *facet_tensor_fused(facet_tfused id) {
    for (size_t i = 0; i < facet_tensor_count; i++)
        if (facet_tensor_rows[i].slot == FACET_TS_FUSED && facet_tensor_rows[i].fused == (int)id)
            return &facet_tensor_rows[i];
    return NULL;
}

int64_t facet_tdim_value(facet_tdim d, const facet_facts *f, int full_qk_norm) {
    int64_t q = f->num_attention_heads * f->head_dim, kv = f->num_key_value_heads * f->head_dim;
    switch (d) {
    case FACET_TD_NONE: return 0;
    case FACET_TD_HIDDEN: return f->hidden_size;
    case FACET_TD_POSITIONS: return f->max_position_embeddings;
    case FACET_TD_FFN: return f->intermediate_size;
    case FACET_TD_FFN2: return 2 * f->intermediate_size;
    case FACET_TD_VOCAB: return f->vocab_size;
    case FACET_TD_Q: return q;
    case FACET_TD_KV: return kv;
    case FACET_TD_QKV: return q + 2 * kv;
    case FACET_TD_Q_NORM: return full_qk_norm ? q : f->head_dim;
    case FACET_TD_K_NORM: return full_qk_norm ? kv : f->head_dim;
    case FACET_TD_ONE: return 1;
    case FACET_TD_EXPERTS: return f->num_experts;
    case FACET_TD_EFFN: return f->moe_intermediate_size;
    case FACET_TD_EFFN2: return 2 * f->moe_intermediate_size;
    case FACET_TD_SFFN: return f->shared_expert_intermediate_size;
    case FACET_TD_SFFN2: return 2 * f->shared_expert_intermediate_size;
    case FACET_TD_HEADS: return f->num_attention_heads;
    case FACET_TD_SSM_INNER: return f->ssm_inner;
    case FACET_TD_SSM_IN_PROJ:
        return f->ssm_version == 2
                   ? 2 * f->ssm_inner + 2 * f->ssm_groups * f->ssm_state_size + f->ssm_heads
               : f->ssm_version == 4 ? 2 * f->ssm_inner + 2 * f->ssm_groups * f->ssm_state_size
                                     : (f->ssm_version == 3 ? 3 : 2) * f->ssm_inner;
    case FACET_TD_SSM_CONV_DIM:
        return f->ssm_inner + (f->ssm_version == 2 || f->ssm_version == 4
                                   ? 2 * f->ssm_groups * f->ssm_state_size : 0);
    case FACET_TD_SSM_PARAM:
        return f->ssm_version == 2 || f->ssm_version == 4 ? f->ssm_heads : f->ssm_inner;
    case FACET_TD_SSM_A_COLS:
        return f->ssm_version == 2 || f->ssm_version == 4 ? 0 : f->ssm_state_size;
    case FACET_TD_SSM_BA: return 2 * f->ssm_heads;
    case FACET_TD_SSM_GNORM: return f->ssm_version == 4 ? f->ssm_head_dim : f->ssm_inner;
    case FACET_TD_QG: return f->attn_output_gate ? 2 * q : q;
    case FACET_TD_SSM_XPROJ: return f->ssm_dt_rank + 2 * f->ssm_state_size;
    case FACET_TD_SSM_DT_RANK: return f->ssm_dt_rank;
    case FACET_TD_SSM_STATE: return f->ssm_state_size;
    case FACET_TD_SSM_CONV: return f->ssm_conv_kernel;
    case FACET_TD_MLA_Q: return f->num_attention_heads * (f->qk_nope_head_dim + f->qk_rope_head_dim);
    case FACET_TD_Q_LORA: return f->q_lora_rank;
    case FACET_TD_KV_A: return f->kv_lora_rank + f->qk_rope_head_dim;
    case FACET_TD_KV_LORA: return f->kv_lora_rank;
    case FACET_TD_KV_B: return f->num_attention_heads * (f->qk_nope_head_dim + f->v_head_dim);
    case FACET_TD_MLA_O: return f->num_attention_heads * f->v_head_dim;
    }
    return 0;
}

const char *facet_tdim_name(facet_tdim d) {
    switch (d) {
    case FACET_TD_NONE: return "";
    case FACET_TD_HIDDEN: return "hidden_size";
    case FACET_TD_POSITIONS: return "max_position_embeddings";
    case FACET_TD_FFN: return "intermediate_size";
    case FACET_TD_FFN2: return "2 * intermediate_size";
    case FACET_TD_VOCAB: return "vocab_size";
    case FACET_TD_Q: return "num_attention_heads * head_dim";
    case FACET_TD_KV: return "num_key_value_heads * head_dim";
    case FACET_TD_QKV: return "(num_attention_heads + 2 * num_key_value_heads) * head_dim";
    case FACET_TD_Q_NORM: return "head_dim (or num_attention_heads * head_dim)";
    case FACET_TD_K_NORM: return "head_dim (or num_key_value_heads * head_dim)";
    case FACET_TD_ONE: return "1";
    case FACET_TD_EXPERTS: return "num_experts";
    case FACET_TD_EFFN: return "the experts' intermediate size";
    case FACET_TD_EFFN2: return "2 * the experts' intermediate size";
    case FACET_TD_SFFN: return "the shared expert's intermediate size";
    case FACET_TD_SFFN2: return "2 * the shared expert's intermediate size";
    case FACET_TD_HEADS: return "num_attention_heads";
    case FACET_TD_SSM_INNER: return "intermediate_size (expand * hidden_size)";
    case FACET_TD_SSM_IN_PROJ:
        return "2 * intermediate_size (Mamba-2: + 2 * n_groups * state_size + num_heads; "
               "LFM2: 3 * hidden_size; Qwen3-Next: 2 * (linear_num_key_heads * "
               "linear_key_head_dim + linear_num_value_heads * linear_value_head_dim))";
    case FACET_TD_SSM_CONV_DIM:
        return "intermediate_size (Mamba-2: + 2 * n_groups * state_size)";
    case FACET_TD_SSM_PARAM: return "intermediate_size (Mamba-2, Qwen3-Next: num_heads)";
    case FACET_TD_SSM_BA: return "2 * linear_num_value_heads";
    case FACET_TD_SSM_GNORM: return "intermediate_size (Qwen3-Next: linear_value_head_dim)";
    case FACET_TD_QG: return "num_attention_heads * head_dim (x 2 with the output gate)";
    case FACET_TD_SSM_A_COLS: return "state_size (Mamba-2: none)";
    case FACET_TD_SSM_XPROJ: return "time_step_rank + 2 * state_size";
    case FACET_TD_SSM_DT_RANK: return "time_step_rank";
    case FACET_TD_SSM_STATE: return "state_size";
    case FACET_TD_SSM_CONV: return "conv_kernel";
    case FACET_TD_MLA_Q: return "num_attention_heads * (qk_nope_head_dim + qk_rope_head_dim)";
    case FACET_TD_Q_LORA: return "q_lora_rank";
    case FACET_TD_KV_A: return "kv_lora_rank + qk_rope_head_dim";
    case FACET_TD_KV_LORA: return "kv_lora_rank";
    case FACET_TD_KV_B: return "num_attention_heads * (qk_nope_head_dim + v_head_dim)";
    case FACET_TD_MLA_O: return "num_attention_heads * v_head_dim";
    }
    return "?";
}

const st_tensor *facet_tensor_with_prefix(const st_checkpoint *ck, const char *prefix) {
    size_t lo = 0, hi = ck->n_tensors, n = strlen(prefix);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(ck->by_name[mid]->name, prefix) < 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo < ck->n_tensors && !strncmp(ck->by_name[lo]->name, prefix, n)) return ck->by_name[lo];
    return NULL;
}

int facet_tensor_prefix(const st_checkpoint *ck, char *out, size_t cap) {
    /* *ForCausalLM checkpoints use "model."; multimodal wrappers whose text model is
     * loaded alone nest it deeper */
    static const char *const known[] = {"model.", "model.language_model.",
                                        "language_model.model.", "transformer.", "backbone.", "gpt_neox.",
                                        "transformer.|h." /* GPT-2 */,
                                        "|h." /* BLOOM saved as its base model */,
                                        "transformer.|blocks." /* MPT */,
                                        "transformer.|encoder.layers." /* ChatGLM */, ""};
    char probe[128];
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        facet_tensor_layer_path(known[i], 0, probe, sizeof probe);
        if (facet_tensor_with_prefix(ck, probe)) {
            snprintf(out, cap, "%s", known[i]);
            return 1;
        }
    }
    return 0;
}

void facet_tensor_layer_path(const char *prefix, int64_t layer, char *out, size_t cap) {
    const char *bar = strchr(prefix, '|');
    if (bar)
        snprintf(out, cap, "%.*s%s%lld.", (int)(bar - prefix), prefix, bar + 1, (long long)layer);
    else
        snprintf(out, cap, "%slayers.%lld.", prefix, (long long)layer);
}

/* Row r's tensor under spelling `what` (its name, alt or alt2), named into name. */
static const st_tensor *find_spelling(const st_checkpoint *ck, const facet_tensor_row *r,
                                      const char *what, const char *prefix, int64_t layer,
                                      char *name, size_t cap) {
    const char *bar = strchr(prefix, '|');
    int model_len = bar ? (int)(bar - prefix) : (int)strlen(prefix);
    char path[256];
    switch (r->root) {
    case FACET_TR_MODEL: snprintf(name, cap, "%.*s%s", model_len, prefix, what); break;
    case FACET_TR_LAYER:
        facet_tensor_layer_path(prefix, layer, path, sizeof path);
        snprintf(name, cap, "%s%s", path, what);
        break;
    case FACET_TR_TOP: snprintf(name, cap, "%s", what); break;
    }
    return st_checkpoint_find(ck, name);
}

const st_tensor *facet_tensor_find(const st_checkpoint *ck, const facet_tensor_row *r,
                                   const char *prefix, int64_t layer, char *name, size_t cap) {
    if (r->root == FACET_TR_LAYER && r->tail)
        return facet_tensor_find_expert(ck, r, prefix, layer, 0, name, cap);
    const char *const spell[11] = {r->name, r->alt,  r->alt2, r->alt3, r->alt4, r->alt5,
                                   r->alt6, r->alt7, r->alt8, r->alt9, r->alt10};
    for (int i = 0; i < 11; i++) {
        if (!spell[i]) continue;
        const st_tensor *t = find_spelling(ck, r, spell[i], prefix, layer, name, cap);
        if (t) return t;
    }
    find_spelling(ck, r, r->name, prefix, layer, name, cap); /* the first name tried */
    return NULL;
}

const st_tensor *facet_tensor_find_expert(const st_checkpoint *ck, const facet_tensor_row *r,
                                          const char *prefix, int64_t layer, int64_t expert,
                                          char *name, size_t cap) {
    char path[256];
    facet_tensor_layer_path(prefix, layer, path, sizeof path);
    snprintf(name, cap, "%s%s%lld.%s", path, r->name, (long long)expert, r->tail ? r->tail : "");
    return st_checkpoint_find(ck, name);
}

int facet_tensor_qk_norm_full(const st_checkpoint *ck, const facet_facts *f, const char *prefix,
                              int64_t layer) {
    char name[512];
    const st_tensor *qn =
        facet_tensor_find(ck, facet_tensor_slot(FACET_TS_Q_NORM), prefix, layer, name, sizeof name);
    int64_t q_dim = f->num_attention_heads * f->head_dim;
    return qn && qn->ndim == 1 && qn->shape[0] == q_dim && q_dim != f->head_dim;
}

const char *facet_tensor_gguf_name(const facet_tensor_row *r, const facet_facts *f) {
    return f->post_norms && r->gguf_post ? r->gguf_post : r->gguf;
}

const facet_tensor_row *facet_tensor_from_gguf(const char *g, int layer, const facet_facts *f) {
    const facet_tensor_row *best = NULL;
    int best_rank = -1;
    for (size_t i = 0; i < facet_tensor_count; i++) {
        const facet_tensor_row *r = &facet_tensor_rows[i];
        if ((r->root == FACET_TR_LAYER) != (layer != 0)) continue;
        int named = r->gguf && !strcmp(g, r->gguf), named_post = r->gguf_post && !strcmp(g, r->gguf_post);
        if (!named && !named_post) continue;
        /* rank: the name for these facts, and a row the loader needs, win */
        const char *own = facet_tensor_gguf_name(r, f);
        int rank = 2 * !strcmp(g, own) + (r->when && r->when(f));
        if (rank > best_rank) best = r, best_rank = rank;
    }
    return best;
}

const st_tensor *facet_tensor_find_mixer(const st_checkpoint *ck, const char *prefix,
                                         int64_t layer, int attention, char *name, size_t cap) {
    char tried[512];
    if (cap) name[0] = 0;
    for (size_t i = 0; i < facet_tensor_count; i++) {
        const facet_tensor_row *r = &facet_tensor_rows[i];
        if (r->root != FACET_TR_LAYER || r->tail) continue;
        if (attention ? !attention_row(r) : r->scope != FACET_SCOPE_SSM) continue;
        const st_tensor *t = facet_tensor_find(ck, r, prefix, layer, tried, sizeof tried);
        if (t) {
            snprintf(name, cap, "%s", tried);
            return t;
        }
    }
    return NULL;
}
