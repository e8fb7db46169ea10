/*
 * config_class.c — constructor defaults and modeling-implied facts of the transformers
 * config classes facet reads (see config_class.h). Values follow the class definitions in
 * transformers (models/<name>/configuration_<name>.py and modeling_<name>.py).
 */
#include "model/config_class.h"
#include "model/facts.h"

#include <string.h>

/* Keys StarCoder2 checkpoints carry from their training code; Starcoder2Config accepts
 * and ignores them (its modeling code is LayerNorm + c_fc/c_proj whatever they say). */
static const char *const starcoder2_unread[] = {"mlp_type", "norm_type", NULL};

/* GPT2Config keys GPT2LMHeadModel never reads (the double-heads model's summary head,
 * the old n_ctx, output_past); a summary_activation or scale_attn_weights stays judged. */
/* QWenConfig keys its modeling code reads without changing the math facet runs:
 * precision and kernel switches, dropouts, max_position_embeddings (the context is
 * seq_length's), use_dynamic_ntk and use_logn_attn (both act only past seq_length, which
 * facet's context never passes) */
static const char *const qwen_unread[] = {"bf16", "fp16", "fp32", "use_flash_attn", "onnx_safe",
                                          "softmax_in_fp32", "use_cache_kernel",
                                          "emb_dropout_prob", "attn_dropout_prob",
                                          "max_position_embeddings", "use_dynamic_ntk",
                                          "use_logn_attn", NULL};
static const char *const qwen_true[] = {"no_bias", "scale_attn_weights", NULL};
static const char *const gpt2_unread[] = {"n_ctx", "output_past", "summary_type",
                                          "summary_use_proj", "summary_proj_to_labels",
                                          "summary_first_dropout", NULL};

/* FalconConfig keys FalconForCausalLM never reads (the RW training code's flag; the
 * transformers block adds the residual to the layer's input whatever it says). */
static const char *const falcon_unread[] = {"apply_residual_connection_post_layernorm", NULL};

/* BloomConfig keys BloomForCausalLM never reads: Megatron-DeepSpeed's fusion switches,
 * its alibi offset (a per-query constant the softmax cancels), n_inner (the MLP is 4 x
 * hidden whatever it says), slow_but_exact (a summation order of dense), unk_token_id. */
static const char *const bloom_unread[] = {"attention_softmax_in_fp32", "bias_dropout_fusion",
                                           "masked_softmax_fusion", "offset_alibi", "n_inner",
                                           "skip_bias_add", "skip_bias_add_qkv",
                                           "slow_but_exact", "unk_token_id", NULL};

/* MptConfig keys MptForCausalLM never reads: llm-foundry's training and initialisation
 * settings, its learned_pos_emb switch (the transformers model has no position table:
 * ALiBi), the tokenizer's name, the FFN's kernel choice. */
static const char *const mpt_unread[] = {"learned_pos_emb", "init_device", "init_config",
                                         "verbose", "tokenizer_name", "embedding_fraction",
                                         "fc_type", NULL};

/* BaichuanConfig keys BaichuanForCausalLM never reads at inference: its training
 * switches (gradient_checkpointing, the z-loss weight is read by read_baichuan as Baichuan
 * 2's marker). */
static const char *const baichuan_unread[] = {"gradient_checkpointing", NULL};

/* GPTJConfig keys GPTJForCausalLM never reads: the double-heads summary keys GPT-2's
 * config carried over, `rotary` (always on) and scale_attn_weights (always scaled). */
static const char *const gptj_unread[] = {"rotary", "scale_attn_weights", "summary_type",
                                          "summary_use_proj", "summary_activation",
                                          "summary_proj_to_labels", "summary_first_dropout",
                                          NULL};

/* ChatGLMConfig keys modeling_chatglm reads without changing the math facet runs (or
 * never reads): apply_query_key_layer_scaling divides the scores by the layer number and
 * multiplies them back in float32, attention_softmax_in_fp32 and fp32_residual_connection
 * choose float32 for the softmax and the residual (numerics only: the identity in exact
 * arithmetic); bias_dropout_fusion and the dropouts are training switches; original_rope
 * is stored by RotaryEmbedding and never used; prefix_projection acts only with
 * pre_seq_len (read_glm); vocab_size and num_hidden_layers (saved beside
 * padded_vocab_size / num_layers by newer transformers) are not what the model reads. */
static const char *const chatglm_unread[] = {"apply_query_key_layer_scaling",
                                             "attention_softmax_in_fp32",
                                             "fp32_residual_connection", "bias_dropout_fusion",
                                             "hidden_dropout", "attention_dropout",
                                             "classifier_dropout", "original_rope",
                                             "prefix_projection", "vocab_size",
                                             "num_hidden_layers", NULL};
static const char *const chatglm_true[] = {"post_layer_norm", NULL};

/* Keys c4ai-command-r7b-12-2024's config.json carries from Cohere's training code;
 * Cohere2Config accepts and ignores them (its modeling code is the parallel block with
 * interleaved full rotary, a gated MLP and the layer_types / sliding_window_pattern
 * layout whatever they say) */
static const char *const cohere2_unread[] = {"order_of_interleaved_layers",
                                             "position_embedding_type", "rotary_pct",
                                             "use_embedding_sharing", "use_gated_activation",
                                             "use_parallel_block", "use_parallel_embedding",
                                             "cache_implementation", NULL};

/* clang-format off */
static const facet_config_class classes[] = {
    /* DeepseekV2Config (issue 25): multi-head latent attention and DeepSeek's routing;
     * n_routed_experts / num_experts_per_tok default to None (dense) */
    {.model_type = "deepseek_v2", .max_position_embeddings = 2048, .tie_word_embeddings = 0, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-6, .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1,
     .moe = 1, .experts_key = "n_routed_experts", .num_experts = 0, .num_experts_per_tok = 1,
     .moe_size_key = "moe_intermediate_size", .moe_intermediate_size = 1407,
     .router = FACET_ROUTER_SOFTMAX_TOPK, .norm_topk_prob = -1, .norm_topk_default = 0,
     .mla = 1, .topk_method = "greedy", .scoring_func = "softmax", .routed_scaling_factor = 1.0},
    /* DeepseekV3Config (Kimi K2 and most DeepSeek-derived models): noaux_tc routing
     * (sigmoid scores, group-limited with e_score_correction_bias) by default */
    {.model_type = "deepseek_v3", .max_position_embeddings = 4096, .tie_word_embeddings = 0, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-6, .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1,
     .moe = 1, .experts_key = "n_routed_experts", .num_experts = 256, .num_experts_per_tok = 8,
     .moe_size_key = "moe_intermediate_size", .moe_intermediate_size = 2048,
     .router = FACET_ROUTER_SOFTMAX_TOPK, .norm_topk_prob = -1, .norm_topk_default = 1,
     .mla = 1, .topk_method = "noaux_tc", .scoring_func = "sigmoid", .routed_scaling_factor = 2.5,
     .first_k_dense_replace = 3, .n_shared_experts = 1},
    /* Kimi K2: Moonshot's config.json says model_type "kimi_k2" but maps AutoConfig to
     * configuration_deepseek.DeepseekV3Config and runs DeepseekV3ForCausalLM (its own
     * copy of DeepSeek-V3's modeling code, trust_remote_code): DeepseekV3Config's
     * defaults and facts, under Moonshot's name */
    {.model_type = "kimi_k2", .max_position_embeddings = 4096, .tie_word_embeddings = 0, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-6, .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1,
     .moe = 1, .experts_key = "n_routed_experts", .num_experts = 256, .num_experts_per_tok = 8,
     .moe_size_key = "moe_intermediate_size", .moe_intermediate_size = 2048,
     .router = FACET_ROUTER_SOFTMAX_TOPK, .norm_topk_prob = -1, .norm_topk_default = 1,
     .mla = 1, .topk_method = "noaux_tc", .scoring_func = "sigmoid", .routed_scaling_factor = 2.5,
     .first_k_dense_replace = 3, .n_shared_experts = 1},
    {.model_type = "llama", .max_position_embeddings = 2048, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-6,
     .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1},
    {.model_type = "mistral", .max_position_embeddings = 131072, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-6,
     .act_key = "hidden_act", .act_default = "silu",
     .reads_sliding_window = 1, .sliding_window = 4096,
     .qkv_bias = 0, .o_bias = 0, .pre_norms = 1},
    {.model_type = "qwen2", .max_position_embeddings = 32768, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-6,
     .act_key = "hidden_act", .act_default = "silu",
     .reads_sliding_window = 1, .sliding_window = 4096, .use_sliding_window_flag = 1,
     .max_window_layers = 28,
     .qkv_bias = 1, .o_bias = 0, .pre_norms = 1},
    {.model_type = "qwen3", .max_position_embeddings = 32768, .tie_word_embeddings = 0, .head_dim = 128, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-6, .act_key = "hidden_act", .act_default = "silu",
     .reads_sliding_window = 1, .sliding_window = 4096, .use_sliding_window_flag = 1,
     .max_window_layers = 28,
     .qkv_bias = -1, .o_bias = -1, .qk_norm = 1, .pre_norms = 1},
    /* current GemmaMLP is LlamaMLP: ACT2FN[hidden_act]; hidden_activation is no longer read
     * (transformers <= 4.46 read hidden_activation and ignored hidden_act) */
    {.model_type = "gemma", .max_position_embeddings = 8192, .tie_word_embeddings = 1, .head_dim = 256, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-6, .act_key = "hidden_act", .act_default = "gelu_pytorch_tanh",
     .act_ignored_key = "hidden_activation",
     .qkv_bias = -1, .o_bias = -1, .norm_weight_offset = 1, .pre_norms = 1,
     .embed_scale_sqrt_hidden = 1},
    {.model_type = "gemma2", .max_position_embeddings = 8192, .tie_word_embeddings = 1, .head_dim = 256, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-6, .act_key = "hidden_activation", .act_default = "gelu_pytorch_tanh",
     .act_ignored_key = "hidden_act", .reads_sliding_window = 1, .sliding_window = 4096, .sliding_window_pattern = 2,
     .qkv_bias = -1, .o_bias = -1, .norm_weight_offset = 1, .pre_norms = 1, .post_norms = 1,
     .attn_logit_softcap = 50.0, .final_logit_softcap = 30.0, .query_pre_attn_scalar = 256,
     .embed_scale_sqrt_hidden = 1, .reads_gemma_attention = 1},
    {.model_type = "gemma3_text", .max_position_embeddings = 131072, .tie_word_embeddings = 1, .head_dim = 256, .rope_theta = 1e6,
     .rms_norm_eps = 1e-6, .act_key = "hidden_activation", .act_default = "gelu_pytorch_tanh",
     .act_ignored_key = "hidden_act", .reads_sliding_window = 1, .sliding_window = 4096, .sliding_window_pattern = 6,
     .qkv_bias = -1, .o_bias = -1, .qk_norm = 1, .norm_weight_offset = 1, .pre_norms = 1,
     .post_norms = 1, .query_pre_attn_scalar = 256, .embed_scale_sqrt_hidden = 1,
     .rope_local_base_freq = 10000.0, .reads_gemma_attention = 1, .reads_rope_local_base_freq = 1,
     .reads_sliding_window_pattern = 1},
    {.model_type = "phi3", .max_position_embeddings = 4096, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-5,
     .act_key = "hidden_act", .act_default = "silu", .reads_sliding_window = 1,
     .qkv_bias = 0, .o_bias = 0, .pre_norms = 1},
    {.model_type = "olmo2", .max_position_embeddings = 2048, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-5,
     .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .qk_norm = 1, .pre_norms = 0, .post_norms = 1},
    {.model_type = "smollm3", .max_position_embeddings = 32768, .tie_word_embeddings = 1, .rope_theta = 2000000.0,
     .rms_norm_eps = 1e-6, .act_key = "hidden_act", .act_default = "silu",
     .reads_sliding_window = 1, .use_sliding_window_flag = 1, .max_window_layers = 28,
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1, .reads_no_rope = 1, .no_rope_layer_interval = 4},
    {.model_type = "granite", .max_position_embeddings = 2048, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-6,
     .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1, .reads_multipliers = 1},
    /* mixture of experts (issue 27): MixtralConfig, Qwen2MoeConfig, Qwen3MoeConfig,
     * OlmoeConfig, GraniteMoeConfig, GraniteMoeSharedConfig */
    {.model_type = "mixtral", .max_position_embeddings = 131072, .tie_word_embeddings = 0, .rope_theta = 1e6, .rms_norm_eps = 1e-5,
     .act_key = "hidden_act", .act_default = "silu", .reads_sliding_window = 1,
     .qkv_bias = 0, .o_bias = 0, .pre_norms = 1,
     .moe = 1, .experts_key = "num_local_experts", .num_experts = 8, .num_experts_per_tok = 2,
     .router = FACET_ROUTER_TOPK_SOFTMAX, .norm_topk_prob = 1},
    {.model_type = "qwen2_moe", .max_position_embeddings = 32768, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-6,
     .act_key = "hidden_act", .act_default = "silu",
     .reads_sliding_window = 1, .sliding_window = 4096, .use_sliding_window_flag = 1,
     .max_window_layers = 28, .qkv_bias = 1, .o_bias = 0, .pre_norms = 1,
     .moe = 1, .experts_key = "num_experts", .num_experts = 60, .num_experts_per_tok = 4,
     .moe_size_key = "moe_intermediate_size", .moe_intermediate_size = 1408,
     .router = FACET_ROUTER_SOFTMAX_TOPK, .norm_topk_prob = -1, .norm_topk_default = 0,
     .shared_key = "shared_expert_intermediate_size", .shared_default = 5632, .shared_gate = 1,
     .reads_sparse_step = 1},
    {.model_type = "qwen3_moe", .max_position_embeddings = 32768, .tie_word_embeddings = 0, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-6, .act_key = "hidden_act", .act_default = "silu",
     .reads_sliding_window = 1, .sliding_window = 4096, .use_sliding_window_flag = 1,
     .max_window_layers = 28, .qkv_bias = -1, .o_bias = -1, .qk_norm = 1, .pre_norms = 1,
     .moe = 1, .experts_key = "num_experts", .num_experts = 128, .num_experts_per_tok = 8,
     .moe_size_key = "moe_intermediate_size", .moe_intermediate_size = 768,
     .router = FACET_ROUTER_SOFTMAX_TOPK, .norm_topk_prob = -1, .norm_topk_default = 0,
     .reads_sparse_step = 1},
    /* q/k norms over the whole projection (their length says: probe) */
    {.model_type = "olmoe", .max_position_embeddings = 4096, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-5,
     .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .qk_norm = 1, .pre_norms = 1,
     .moe = 1, .experts_key = "num_experts", .num_experts = 64, .num_experts_per_tok = 8,
     .router = FACET_ROUTER_SOFTMAX_TOPK, .norm_topk_prob = -1, .norm_topk_default = 0},
    {.model_type = "granitemoe", .max_position_embeddings = 2048, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-6,
     .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1, .reads_multipliers = 1,
     .moe = 1, .experts_key = "num_local_experts", .num_experts = 8, .num_experts_per_tok = 2,
     .router = FACET_ROUTER_TOPK_SOFTMAX, .norm_topk_prob = 1},
    {.model_type = "granitemoeshared", .max_position_embeddings = 2048, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-6,
     .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1, .reads_multipliers = 1,
     .moe = 1, .experts_key = "num_local_experts", .num_experts = 8, .num_experts_per_tok = 2,
     .router = FACET_ROUTER_TOPK_SOFTMAX, .norm_topk_prob = 1,
     .shared_key = "shared_intermediate_size", .shared_default = 0},
    /* GraniteMoeHybridConfig (Granite 4.0-H): GraniteMoeShared's blocks with a Mamba-2
     * mixer (BambaMixer) on the layer_types' "mamba" layers; the shared MLP default 1024 */
    {.model_type = "granitemoehybrid", .max_position_embeddings = 2048, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-6,
     .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1, .reads_multipliers = 1,
     .moe = 1, .experts_key = "num_local_experts", .num_experts = 8, .num_experts_per_tok = 2,
     .router = FACET_ROUTER_TOPK_SOFTMAX, .norm_topk_prob = 1,
     .shared_key = "shared_intermediate_size", .shared_default = 1024, .hybrid = 1},
    /* BambaConfig (Bamba): Llama's attention (no biases, RoPE over half of each head: the
     * config fixes partial_rotary_factor 0.5) on attn_layer_indices, BambaMixer (Mamba-2)
     * elsewhere, every layer a SwiGLU feed_forward after pre_ff_layernorm */
    {.model_type = "bamba", .max_position_embeddings = 262144, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-5,
     .act_key = "hidden_act", .act_default = "silu", .qkv_bias = 0, .o_bias = 0, .pre_norms = 1,
     .rotary_pct_fixed = 0.5, .hybrid = 4},
    /* FalconH1Config (Falcon-H1): Llama's attention (attention_bias on q/k/v/o) and
     * FalconH1Mixer (Mamba-2: mamba_* keys, mamba_d_ssm wide) in parallel on every layer,
     * a SwiGLU feed_forward after pre_ff_layernorm, final_layernorm; its muP multipliers */
    {.model_type = "falcon_h1", .max_position_embeddings = 8192, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-5,
     .act_key = "hidden_act", .act_default = "silu", .qkv_bias = -1, .o_bias = -1, .pre_norms = 1,
     .kv_heads_default = 8, .hybrid = 6},
    /* JambaConfig (Jamba): Mamba (Mamba-1 with RMSNorms of dt, B, C) and attention layers
     * by attn_layer_period / offset, attention without positions; a SwiGLU MLP or an MoE
     * (softmax over every expert, the top k kept unrenormalized) by expert_layer_period /
     * offset; pre_ff_layernorm, final_layernorm */
    {.model_type = "jamba", .max_position_embeddings = 262144, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-6,
     .act_key = "hidden_act", .act_default = "silu", .qkv_bias = 0, .o_bias = 0, .pre_norms = 1,
     .moe = 1, .experts_key = "num_experts", .num_experts = 16, .num_experts_per_tok = 2,
     .router = FACET_ROUTER_SOFTMAX_TOPK, .norm_topk_prob = 0, .hybrid = 5},
    /* Qwen3NextConfig (Qwen3-Next): Qwen3NextGatedDeltaNet ("linear_attention") and gated
     * Qwen3NextAttention ("full_attention", q/k norms per head, rotary over a quarter of
     * each head) by layer_types / full_attention_interval; Qwen2-MoE's sparse block with a
     * sigmoid-gated shared expert; every RMSNorm but the delta rule's gated one is
     * Gemma 3's (1 + w) */
    {.model_type = "qwen3_next", .max_position_embeddings = 32768, .tie_word_embeddings = 0, .head_dim = 256,
     .rope_theta = 10000.0, .rms_norm_eps = 1e-6, .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .qk_norm = 1, .norm_weight_offset = 1, .pre_norms = 1,
     .rotary_pct_key = "partial_rotary_factor", .rotary_pct_default = 0.25,
     .moe = 1, .experts_key = "num_experts", .num_experts = 512, .num_experts_per_tok = 10,
     .moe_size_key = "moe_intermediate_size", .moe_intermediate_size = 512,
     .router = FACET_ROUTER_SOFTMAX_TOPK, .norm_topk_prob = -1, .norm_topk_default = 1,
     .shared_key = "shared_expert_intermediate_size", .shared_default = 512, .shared_gate = 1,
     .reads_sparse_step = 1, .hybrid = 7},
    /* Lfm2Config (LFM2): short-convolution and GQA layers, q/k RMSNorm per head (q_layernorm,
     * k_layernorm), SwiGLU FFN; norm_eps; num_heads repeats num_attention_heads */
    {.model_type = "lfm2", .max_position_embeddings = 128000, .tie_word_embeddings = 1, .rope_theta = 1000000.0, .rms_norm_eps = 1e-5,
     .act_key = "hidden_act", .act_default = "silu", .norm_eps_key = "norm_eps",
     .heads_dup_key = "num_heads", .qkv_bias = 0, .o_bias = 0, .qk_norm = 1, .pre_norms = 1,
     .hybrid = 2},
    /* NemotronHConfig (Nemotron-H): one block per layer by the pattern, Mamba-2 (M),
     * attention without rotary embeddings (*) or a relu2 MLP (-); layer_norm_epsilon */
    {.model_type = "nemotron_h", .max_position_embeddings = 4096, .tie_word_embeddings = 0, .head_dim = 128, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = "mlp_hidden_act", .act_default = "relu2",
     .norm_eps_key = "layer_norm_epsilon", .qkv_bias = -1, .o_bias = -1, .pre_norms = 1,
     .ffn_ungated = 1, .hybrid = 3},
    /* GptOssConfig: every layer sparse; window 128 on the layer_types' sliding layers */
    {.model_type = "gpt_oss", .max_position_embeddings = 131072, .tie_word_embeddings = 0, .head_dim = 64, .rope_theta = 150000.0,
     .rms_norm_eps = 1e-5, .act_key = "hidden_act", .act_default = "silu",
     .reads_sliding_window = 1, .sliding_window = 128, .sliding_window_pattern = 2,
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1,
     .moe = 1, .experts_key = "num_local_experts", .num_experts = 128, .num_experts_per_tok = 4,
     .router = FACET_ROUTER_TOPK_SOFTMAX, .norm_topk_prob = 1,
     .moe_biases = 1, .swiglu_limit = 7.0, .attn_sinks = 1},
    /* state spaces (issue 26): MambaConfig; no attention, no positions (the context is the
     * caller's: max_position_embeddings is only a bound on n_ctx) */
    {.model_type = "mamba", .max_position_embeddings = 1048576, .tie_word_embeddings = 1, .rope_theta = 10000.0, .rms_norm_eps = 1e-5,
     .act_key = "hidden_act", .act_default = "silu", .qkv_bias = 0, .o_bias = 0, .pre_norms = 1,
     .mamba = 1},
    /* Mamba2Config: multi-head SSD, grouped B/C, a gated RMSNorm before out_proj; untied
     * by default */
    {.model_type = "mamba2", .max_position_embeddings = 1048576, .tie_word_embeddings = 0, .rope_theta = 10000.0, .rms_norm_eps = 1e-5,
     .act_key = "hidden_act", .act_default = "silu", .qkv_bias = 0, .o_bias = 0, .pre_norms = 1,
     .mamba = 2},
    /* classic decoders (issue 28). GPTNeoXConfig: LayerNorm (layer_norm_eps), every
     * Linear with a bias, an ungated MLP (dense_h_to_4h, gelu, dense_4h_to_h), rotary
     * over rotary_pct of each head at rotary_emb_base, use_parallel_residual */
    {.model_type = "gpt_neox", .max_position_embeddings = 2048, .tie_word_embeddings = 0, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = "hidden_act", .act_default = "gelu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1,
     .norm_eps_key = "layer_norm_eps", .layer_norm = 1, .ffn_ungated = 1, .heads_divide_hidden = 1,
     .parallel_key = "use_parallel_residual", .parallel_default = 1,
     .rotary_pct_key = "rotary_pct", .rotary_pct_default = 0.25,
     .rope_theta_key = "rotary_emb_base", .attention_bias_default = 1, .mlp_bias_default = 1},
    /* PhiConfig (Phi-1, 1.5, 2): one LayerNorm per layer feeding attention and the MLP in
     * parallel, q/k/v/dense/fc1/fc2 and lm_head with biases, gelu_new, rotary over
     * partial_rotary_factor (default 0.5) of each head */
    {.model_type = "phi", .max_position_embeddings = 2048, .tie_word_embeddings = 0, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = "hidden_act", .act_default = "gelu_new",
     .qkv_bias = 1, .o_bias = 1, .pre_norms = 1,
     .norm_eps_key = "layer_norm_eps", .layer_norm = 1, .ffn_ungated = 1,
     .parallel_default = 1, .parallel_one_norm = 1,
     .rotary_pct_key = "partial_rotary_factor", .rotary_pct_default = 0.5, .mlp_bias_default = 1},
    /* StableLmConfig (StableLM 2, StableLM-3B-4E1T): Llama's gated MLP and names with
     * LayerNorms (biases), q/k/v biases by use_qkv_bias, rotary over partial_rotary_factor
     * (0.25), use_parallel_residual with one norm; qk_layernorm stays unread (refused) */
    {.model_type = "stablelm", .max_position_embeddings = 4096, .tie_word_embeddings = 0, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = 0, .pre_norms = 1,
     .norm_eps_key = "layer_norm_eps", .layer_norm = 1,
     .parallel_key = "use_parallel_residual", .parallel_default = 0, .parallel_one_norm = 1,
     .rotary_pct_key = "partial_rotary_factor", .rotary_pct_default = 0.25,
     .attention_bias_key = "use_qkv_bias"},
    /* stable-code-3b's own StableLMEpochConfig (configuration_stablelm_epoch.py, remote
     * code): the same block sequential, norm_eps, rope_pct, num_heads repeated,
     * rotary_scaling_factor (linear rope scaling; facet runs 1.0) */
    {.model_type = "stablelm_epoch", .max_position_embeddings = 4096, .tie_word_embeddings = 0, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = 0, .pre_norms = 1,
     .norm_eps_key = "norm_eps", .layer_norm = 1,
     .rotary_pct_key = "rope_pct", .rotary_pct_default = 0.25,
     .attention_bias_key = "use_qkv_bias", .heads_dup_key = "num_heads",
     .unit_key = "rotary_scaling_factor"},
    /* GPT2Config (GPT-2, DistilGPT-2, gpt2-xl, ...): n_embd / n_layer / n_head /
     * n_positions / n_inner, LayerNorm (layer_norm_epsilon) with biases, learned absolute
     * positions (wpe), no rotary, Conv1D projections with biases, gelu_new, tied */
    {.model_type = "gpt2", .max_position_embeddings = 1024, .tie_word_embeddings = 1, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = "activation_function", .act_default = "gelu_new",
     .qkv_bias = 1, .o_bias = 1, .pre_norms = 1,
     .norm_eps_key = "layer_norm_epsilon", .layer_norm = 1, .ffn_ungated = 1, .heads_divide_hidden = 1, .mlp_bias_default = 1,
     .hidden_key = "n_embd", .layers_key = "n_layer", .heads_key = "n_head",
     .positions_key = "n_positions", .inner_key = "n_inner", .pos_embed_learned = 1,
     .unread_keys = gpt2_unread},
    /* OlmoConfig (OLMo-1B/7B -hf): Llama's block with OLMo's non-parametric LayerNorm
     * (eps 1e-5, no weight or bias), q/k/v/o biases by attention_bias; clip_qkv stays
     * unread (refused when set) */
    {.model_type = "olmo", .max_position_embeddings = 2048, .tie_word_embeddings = 0, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1,
     .norm_eps_key = "layer_norm_eps" /* not an OlmoConfig key: the eps is fixed */,
     .layer_norm = 1, .norm_no_weight = 1},
    /* Starcoder2Config: LayerNorm (norm_epsilon), q/k/v/o and c_fc/c_proj biases by
     * use_bias, an ungated gelu_pytorch_tanh MLP, sliding_window on every layer, tied */
    {.model_type = "starcoder2", .max_position_embeddings = 4096, .tie_word_embeddings = 1, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = "hidden_act", .act_default = "gelu_pytorch_tanh",
     .reads_sliding_window = 1, .qkv_bias = -1, .o_bias = -1, .pre_norms = 1,
     .norm_eps_key = "norm_epsilon", .layer_norm = 1, .ffn_ungated = 1,
     .attention_bias_key = "use_bias", .attention_bias_default = 1, .mlp_bias_default = 1,
     .unread_keys = starcoder2_unread},
    /* FalconConfig (Falcon-7B/40B/180B, Falcon 2): LayerNorm (layer_norm_epsilon) with
     * bias, ungated MLP (activation, default gelu; ffn_hidden_size null = 4 x hidden),
     * parallel_attn (one input norm; two with new_decoder_architecture), biases by `bias`,
     * fused query_key_value in KV groups [q x g; k; v] (multi_query: one group), tied;
     * alibi (falcon-rw-1b / 7b) instead of rotary, its bias scaled with q.k (read_falcon) */
    {.model_type = "falcon", .max_position_embeddings = 2048, .tie_word_embeddings = 1, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = "activation", .act_default = "gelu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1,
     .norm_eps_key = "layer_norm_epsilon", .layer_norm = 1, .ffn_ungated = 1, .heads_divide_hidden = 1,
     .parallel_key = "parallel_attn", .parallel_default = 1, .parallel_one_norm = 1,
     .attention_bias_key = "bias", .attention_bias_default = 0, .mlp_bias_default = 1,
     .inner_key = "ffn_hidden_size", .falcon_attention = 1, .unread_keys = falcon_unread},
    /* BloomConfig (BLOOM, BLOOMZ): n_layer / n_head, LayerNorm (layer_norm_epsilon) with
     * bias on the embeddings too (word_embeddings_layernorm), ALiBi instead of rotary,
     * per-head fused query_key_value, biases everywhere, the 4 x hidden MLP with
     * bloom_gelu (the tanh form), tied; apply_residual_connection_post_layernorm only
     * false */
    {.model_type = "bloom", .max_position_embeddings = 2048, .tie_word_embeddings = 1, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = NULL, .act_default = "gelu_pytorch_tanh",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1,
     .norm_eps_key = "layer_norm_epsilon", .layer_norm = 1, .ffn_ungated = 1, .heads_divide_hidden = 1,
     .attention_bias_default = 1, .mlp_bias_default = 1,
     .layers_key = "n_layer", .heads_key = "n_head", .ffn_hidden_mult = 4, .alibi = 1,
     .embed_norm = 1, .post_ln_residual_key = "apply_residual_connection_post_layernorm",
     .unread_keys = bloom_unread},
    /* MptConfig (MPT-7B/30B): d_model / n_heads / n_layers / max_seq_len, LayerNorm without
     * bias (layer_norm_epsilon), no Linear biases, ALiBi (max bias 8), q | k | v fused in
     * attn.Wqkv, the MLP 4 x d_model with exact gelu, attn_config.softmax_scale, tied;
     * keys the modeling code fixes must hold its values (read_mpt) */
    {.model_type = "mpt", .max_position_embeddings = 2048, .tie_word_embeddings = 1, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = NULL, .act_default = "gelu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1,
     .norm_eps_key = "layer_norm_epsilon", .layer_norm = 1, .ffn_ungated = 1, .heads_divide_hidden = 1,
     .attention_bias_default = 0, .mlp_bias_default = 1,
     .hidden_key = "d_model", .layers_key = "n_layers", .heads_key = "n_heads",
     .positions_key = "max_seq_len", .ffn_hidden_mult = 4, .alibi = 1, .mpt = 1,
     .unread_keys = mpt_unread},
    /* GPTJConfig (GPT-J-6B): n_embd / n_layer / n_head / n_positions / n_inner, LayerNorm
     * (layer_norm_epsilon) with bias, one ln_1 feeding attention and MLP in parallel,
     * q/k/v/out_proj without biases, fc_in / fc_out with them, gelu_new, rotary on the
     * first rotary_dim dims in pairs (2i, 2i+1), an untied lm_head with a bias */
    {.model_type = "gptj", .max_position_embeddings = 2048, .tie_word_embeddings = 0, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = "activation_function", .act_default = "gelu_new",
     .qkv_bias = 0, .o_bias = 0, .pre_norms = 1,
     .norm_eps_key = "layer_norm_epsilon", .layer_norm = 1, .ffn_ungated = 1, .heads_divide_hidden = 1,
     .parallel_default = 1, .parallel_one_norm = 1, .mlp_bias_default = 1,
     .hidden_key = "n_embd", .layers_key = "n_layer", .heads_key = "n_head",
     .positions_key = "n_positions", .inner_key = "n_inner", .rotary_dim_key = "rotary_dim",
     .rope_interleaved = 1, .unread_keys = gptj_unread},
    /* CohereConfig (Command-R, Aya 23): LayerNorm without bias (layer_norm_eps), one
     * input_layernorm feeding attention and the gated silu MLP in parallel, rotary on pairs
     * (2i, 2i+1), logits times logit_scale, tied; use_qk_norm (Command R+'s per-head q/k
     * LayerNorm) only false */
    {.model_type = "cohere", .max_position_embeddings = 8192, .tie_word_embeddings = 1, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1,
     .norm_eps_key = "layer_norm_eps", .layer_norm = 1,
     .parallel_default = 1, .parallel_one_norm = 1, .rope_interleaved = 1,
     .logit_scale_key = "logit_scale", .logit_scale_default = 0.0625,
     .refuse_true_key = "use_qk_norm"},
    /* Cohere2Config (Command R7B): Cohere's block (bias-free LayerNorm feeding attention
     * and the gated silu MLP in parallel, rotary on pairs (2i, 2i+1), logit_scale, tied)
     * with sliding_window (4096) on the layer_types' sliding layers, or by
     * sliding_window_pattern (4: every 4th layer full) where layer_types is absent; RoPE
     * only on the sliding layers (Cohere2Attention), none on the full ones; head_dim is
     * hidden_size / num_attention_heads whatever the key says. The release's own keys
     * that Cohere2Config never reads are consumed as such */
    {.model_type = "cohere2", .max_position_embeddings = 8192, .tie_word_embeddings = 1, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1,
     .norm_eps_key = "layer_norm_eps", .layer_norm = 1,
     .parallel_default = 1, .parallel_one_norm = 1, .rope_interleaved = 1,
     .logit_scale_key = "logit_scale", .logit_scale_default = 0.0625,
     .reads_sliding_window = 1, .sliding_window = 4096, .sliding_window_pattern = 4,
     .reads_sliding_window_pattern = 1, .rope_on_sliding_only = 1, .head_dim_from_hidden = 1,
     .unread_keys = cohere2_unread},
    /* InternLM2Config (internlm2-chat-7b's remote code, configuration_internlm2.py /
     * modeling_internlm2.py): Llama's block under its own names, wqkv in KV groups
     * [q x g; k; v], q/k/v and wo biases by `bias` (default true), RMSNorm, untied */
    {.model_type = "internlm2", .max_position_embeddings = 2048, .tie_word_embeddings = 0, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-6, .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1, .heads_divide_hidden = 1,
     .attention_bias_key = "bias", .attention_bias_default = 1},
    /* BaichuanConfig (the remote configuration_baichuan.py / modeling_baichuan.py of
     * Baichuan-7B, Baichuan-13B, Baichuan2-7B and Baichuan2-13B): Llama's block (RMSNorm,
     * silu gate_proj / up_proj / down_proj), self_attn.W_pack a bias-free [q; k; v] of
     * hidden_size rows each, o_proj, untied; rotary (7B files) or ALiBi (13B files) and
     * a plain or NormHead lm_head by the keys each class defines (read_baichuan) */
    {.model_type = "baichuan", .max_position_embeddings = 4096, .tie_word_embeddings = 0,
     .rope_theta = 10000.0, .rms_norm_eps = 1e-6, .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = 0, .o_bias = 0, .pre_norms = 1, .heads_divide_hidden = 1, .baichuan = 1,
     .unread_keys = baichuan_unread},
    /* MiniCPMConfig (MiniCPM-1B / 2B's remote configuration_minicpm.py / modeling_minicpm.py):
     * Llama's block and names; muP: embeddings * scale_emb, each residual branch *
     * scale_depth / sqrt(num_hidden_layers), the final hidden / (hidden / dim_model_base)
     * before lm_head (all three default 1); tied */
    {.model_type = "minicpm", .max_position_embeddings = 2048, .tie_word_embeddings = 1, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-6, .act_key = "hidden_act", .act_default = "silu",
     .qkv_bias = -1, .o_bias = -1, .pre_norms = 1, .reads_mup = 1},
    /* ExaoneConfig (EXAONE 3.0 / 3.5's remote configuration_exaone.py / modeling_exaone.py):
     * Llama's block under its own names and keys (num_layers, activation_function,
     * layer_norm_epsilon as the RMSNorm eps, intermediate_size null = 4 x hidden); no
     * biases anywhere; tied unless tie_word_embeddings says otherwise */
    {.model_type = "exaone", .max_position_embeddings = 2048, .tie_word_embeddings = 1, .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5, .act_key = "activation_function", .act_default = "silu",
     .qkv_bias = 0, .o_bias = 0, .pre_norms = 1, .norm_eps_key = "layer_norm_epsilon",
     .layers_key = "num_layers", .inner_key = "intermediate_size"},
    /* QWenConfig (Qwen-7B / 14B / 1.8B / 72B's remote configuration_qwen.py /
     * modeling_qwen.py): transformer.wte, h.N.ln_1 / ln_2 (RMSNorm, layer_norm_epsilon),
     * attn.c_attn a Linear q|k|v with a bias, attn.c_proj, mlp c_proj(w1 x * silu(w2 x))
     * each intermediate_size // 2 wide, rotary over rotary_pct of kv_channels with
     * rotary_emb_base, the context seq_length; no_bias must be true, scale_attn_weights
     * true, use_cache_quantization false */
    {.model_type = "qwen", .max_position_embeddings = 0, .positions_key = "seq_length",
     .tie_word_embeddings = 0, .rope_theta = 10000.0, .rope_theta_key = "rotary_emb_base",
     .rms_norm_eps = 1e-6, .norm_eps_key = "layer_norm_epsilon", .act_default = "silu",
     .qkv_bias = 1, .o_bias = 0, .pre_norms = 1, .rotary_pct_key = "rotary_pct",
     .rotary_pct_default = 1.0, .inner_div = 2, .c_attn_linear = 1, .head_dim_key = "kv_channels",
     .require_true_keys = qwen_true, .refuse_true_key = "use_cache_quantization",
     .unread_keys = qwen_unread},
    /* ChatGLMConfig (ChatGLM2-6B / ChatGLM3-6B / GLM-4-9B's remote configuration_chatglm.py
     * / modeling_chatglm.py): num_layers, padded_vocab_size, ffn_hidden_size (SwiGLU:
     * dense_h_to_4h is [gate; up], chunk(2)), kv_channels the head size, RMSNorm or
     * LayerNorm by rmsnorm (layernorm_epsilon), query_key_value with add_qkv_bias, rotary
     * on pairs (2i, 2i+1) of the first half of each head at 10000 x rope_ratio, the
     * context seq_length; post_layer_norm only true, the post-LayerNorm residual only
     * false; multi-query groups and biases by read_glm */
    {.model_type = "chatglm", .max_position_embeddings = 2048, .positions_key = "seq_length",
     .tie_word_embeddings = 0, .head_dim = 128, .head_dim_key = "kv_channels",
     .rope_theta = 10000.0, .rope_ratio_key = "rope_ratio", .rotary_pct_fixed = 0.5,
     .rope_interleaved = 1, .rms_norm_eps = 1e-5, .norm_eps_key = "layernorm_epsilon",
     .act_default = "silu", .qkv_bias = -1, .o_bias = 0, .pre_norms = 1,
     .attention_bias_key = "add_qkv_bias", .attention_bias_default = 0,
     .layers_key = "num_layers", .vocab_key = "padded_vocab_size",
     .inner_key = "ffn_hidden_size", .inner_default = 13696,
     .post_ln_residual_key = "apply_residual_connection_post_layernorm",
     .require_true_keys = chatglm_true, .glm_attention = 1, .unread_keys = chatglm_unread},
};
/* clang-format on */

/* PretrainedConfig: tie_word_embeddings defaults to true; everything else as Llama. */
static const facet_config_class generic = {
    .model_type = "", .tie_word_embeddings = 1, .rope_theta = 10000.0, .rms_norm_eps = 1e-6,
    .act_key = "hidden_act", .act_default = "silu", .qkv_bias = -1, .o_bias = -1,
    .pre_norms = 1};

const facet_config_class *facet_config_class_find(const char *model_type) {
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (!strcmp(classes[i].model_type, model_type)) return &classes[i];
    return &generic;
}
