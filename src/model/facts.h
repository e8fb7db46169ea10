/*
 * facts.h — the normalized fact manifest of a checkpoint (DESIGN.md, "Facts").
 *
 * config.json (+ generation_config.json) are read once into this struct; the
 * capability table judges it; the forward pass reads only these fields, never raw JSON.
 * Field names follow the Hugging Face config.json names where one exists.
 *
 * Weight facts (qkv_bias, o_bias, qk_norm, has_lm_head, ...) come from the safetensors
 * headers when a probe was run (probed != 0): the tensors are the truth, and where a
 * config key disagrees the probe wins and the disagreement is recorded in `notes`.
 */
#ifndef FACET_MODEL_FACTS_H
#define FACET_MODEL_FACTS_H

#include <stddef.h>
#include <stdint.h>

#include "facet_status.h"

#define FACET_MAX_LAYERS 1024
#define FACET_MAX_EOS 16
#define FACET_MAX_ROPE_FACTORS 512 /* longrope short/long factor arrays (head_dim / 2) */

/* rope_scaling / rope_parameters "rope_type" (or its alias "type"). */
typedef enum facet_rope_type {
    FACET_ROPE_DEFAULT = 0, /* plain RoPE, theta^(-2i/d)                              */
    FACET_ROPE_LINEAR,      /* positions divided by factor                            */
    FACET_ROPE_DYNAMIC,     /* dynamic NTK                                            */
    FACET_ROPE_LLAMA3,      /* Llama 3.1 frequency bands                              */
    FACET_ROPE_YARN,
    FACET_ROPE_LONGROPE,
    FACET_ROPE_UNKNOWN,     /* a type facet does not know: always refused             */
} facet_rope_type;

/* Mamba-2's output norm (facts ssm_norm): y the scan's output, z the gate */
#define FACET_SSM_NORM_GATED 0       /* RMSNorm_group(y * SiLU(z)) * w (Mamba2Mixer's gated
                                        norm, mamba_ssm's norm_before_gate=False)        */
#define FACET_SSM_NORM_BEFORE_GATE 1 /* RMSNorm_group(y) * w * SiLU(z) (FalconH1's
                                        mamba_norm_before_gate)                          */
#define FACET_SSM_NORM_NONE 2        /* y * SiLU(z), no norm, no weight (FalconH1's
                                        mamba_rms_norm false)                            */

#define FACET_BLOCK_BOTH 0
#define FACET_BLOCK_MIXER 1
#define FACET_BLOCK_FFN 2

/* Activation of the gated FFN (hidden_act / hidden_activation). */
typedef enum facet_act {
    FACET_ACT_SILU = 0,
    FACET_ACT_GELU_TANH,    /* gelu_pytorch_tanh, gelu_new                            */
    FACET_ACT_GELU,         /* gelu (erf)                                             */
    FACET_ACT_RELU2,        /* relu2: relu(x)^2 (Nemotron-H's MLP)                    */
    FACET_ACT_UNKNOWN,
} facet_act;

/* How a mixture-of-experts router turns its logits (one per expert) into the weights of
 * the k experts a token runs (num_experts_per_tok). The k chosen are the k largest logits
 * either way (softmax is monotonic); ties go to the lower expert index, as torch.topk
 * returns them on CPU. */
typedef enum facet_moe_router {
    FACET_ROUTER_NONE = 0,          /* dense: no router                                 */
    FACET_ROUTER_SOFTMAX_TOPK,      /* softmax over every expert, then the top k of the
                                       probabilities, renormalized over the k only when
                                       norm_topk_prob (Qwen2/3-MoE, OLMoE)              */
    FACET_ROUTER_TOPK_SOFTMAX,      /* top k of the logits, softmax over those k
                                       (Mixtral, Granite-MoE: always sums to 1)          */
    FACET_ROUTER_GROUPED,           /* DeepSeek (DeepseekV2Moe, DeepseekV3TopkRouter):
                                       scores softmax or sigmoid (moe_sigmoid) over all
                                       E; the choice ranks scores (+ the per-expert
                                       e_score_correction_bias when moe_score_bias) inside
                                       the topk_group best of n_group groups; weights are
                                       the chosen experts' scores (without the bias),
                                       / their sum when norm_topk_prob, then times
                                       routed_scaling_factor (moe_route.h)              */
} facet_moe_router;

/* Where a checkpoint keeps its experts (probed from the tensor names). */
typedef enum facet_experts_layout {
    FACET_EXPERTS_NONE = 0,
    FACET_EXPERTS_W123,             /* block_sparse_moe.experts.N.w1/w3/w2 (Mixtral)     */
    FACET_EXPERTS_PROJ,             /* mlp.experts.N.gate_proj/up_proj/down_proj (Qwen-MoE,
                                       OLMoE)                                            */
    FACET_EXPERTS_FUSED,            /* mlp.experts.gate_up_proj [E, 2 I, H] + down_proj
                                       [E, H, I], 3-D (newer transformers)               */
    FACET_EXPERTS_GRANITE,          /* block_sparse_moe.input_linear [E, 2 I, H] +
                                       output_linear [E, H, I], 3-D (Granite-MoE)        */
    FACET_EXPERTS_GPTOSS,           /* mlp.router + mlp.experts.gate_up_proj [E, H, 2 I]
                                       (x @ W; gate and up columns interleaved) and
                                       down_proj [E, I, H], with biases (gpt-oss)        */
    FACET_EXPERTS_JAMBA,            /* feed_forward.router + feed_forward.experts.N.
                                       gate_proj/up_proj/down_proj (Jamba)               */
    FACET_EXPERTS_SPLIT3D,          /* mlp.experts.gate_proj / up_proj [E, I, H] and
                                       down_proj [E, H, I], 3-D each (GGUF's
                                       ffn_{gate,up,down}_exps seen under these names)   */
    FACET_EXPERTS_MIXER,            /* mixer.gate + mixer.experts.N.up_proj/down_proj, no
                                       gate projection (Nemotron-H's ungated experts)     */
    FACET_EXPERTS_MIXER3D,          /* mixer.gate + mixer.experts.up_proj [E, I, H] and
                                       down_proj [E, H, I], 3-D (NemotronHExperts'
                                       parameters as transformers 5 names them)          */
} facet_experts_layout;

/* A config.json key the fact reader did not consume (its value rendered as compact
 * JSON, truncated). The capability table classifies each one: known-inert, or
 * math-changing (refused), so no key that changes the math is ever silently ignored. */
typedef struct facet_config_key {
    char key[64];                  /* "use_alibi", "rope_scaling.mscale", "layer_types[3]" */
    char value[64];
    int is_off;                    /* value is null, false, 0, "", {} or [] (off)        */
} facet_config_key;

#define FACET_MAX_CONFIG_KEYS 96

/* One fact that a probe or a config key disagreement produced, for printing. */
typedef struct facet_fact_note {
    char text[200];
} facet_fact_note;

typedef struct facet_facts {
    /* identity (never used to branch on; printed and used to pick the table profile) */
    char model_type[64];
    char architecture[128];        /* architectures[0], "" when absent                   */
    int text_config;               /* 1 when the fields came from a nested text_config   */
    char text_model_type[64];      /* text_config.model_type ("gemma3_text"), else ""    */

    /* shape */
    int64_t hidden_size;
    int64_t intermediate_size;
    int64_t num_hidden_layers;
    int64_t num_attention_heads;
    int64_t num_key_value_heads;   /* default: num_attention_heads                      */
    int64_t head_dim;              /* explicit value trusted; else hidden/heads         */
    int head_dim_explicit;
    int64_t vocab_size;
    int64_t max_position_embeddings;

    /* block */
    double rms_norm_eps;
    facet_act act;
    char act_name[48];
    int norm_weight_offset;        /* 1: RMSNorm scales by (1 + w) (Gemma)              */
    int post_norms;                /* 1: post-attention / post-FFN norms (Gemma 2/3)    */
    int pre_norms;                 /* 1: input / pre-FFN norms (0: OLMo 2 post-norm only)*/
    int layer_norm;                /* 1: LayerNorm (x - mean) / sqrt(var + eps) * w (+ b)
                                      instead of RMSNorm; rms_norm_eps holds its eps
                                      (layer_norm_eps) (GPT-NeoX and the classic classes) */
    int norm_bias;                 /* probed: the LayerNorms carry a bias               */
    int norm_no_weight;            /* 1: the LayerNorms have no parameters at all (OLMo's
                                      non-parametric LayerNorm): no norm tensors         */
    int ffn_ungated;               /* 1: down(act(up h)), no gate projection (GPT-NeoX
                                      dense_h_to_4h / dense_4h_to_h)                     */
    int parallel_residual;         /* 1: x + attn(norm_in(x)) + ffn(norm_ffn(x)) from the
                                      same x (NeoX use_parallel_residual)                */
    int parallel_one_norm;         /* parallel_residual with one norm: the FFN reads the
                                      attention's normed input (Phi-1/1.5/2, GPT-J)       */

    /* attention */
    double attn_scale;             /* multiplier of q.k: 1/sqrt(head_dim) by default;
                                      query_pre_attn_scalar^-1/2 or attention_multiplier
                                      where the config class says so                    */
    double query_pre_attn_scalar;  /* 0 = absent                                        */
    double attn_logit_softcap;     /* 0 = none                                          */
    double final_logit_softcap;    /* 0 = none                                          */
    int64_t sliding_window;        /* 0 = none; the config's value otherwise            */
    int window_inert;              /* a window is named but changes nothing: disabled by
                                      use_sliding_window=false or >= max_position_embeddings */
    int n_sliding_layers;          /* count of layer_sliding[i] == 1                    */
    uint8_t layer_sliding[FACET_MAX_LAYERS]; /* per layer: 1 = windowed by sliding_window;
                                      all 0 when window_inert (no layer is bounded)      */

    /* position */
    double rope_theta;
    double rope_local_base_freq;   /* 0 = same as rope_theta                            */
    facet_rope_type rope_type;
    char rope_type_name[32];
    double rope_factor;
    double rope_low_freq_factor, rope_high_freq_factor;   /* llama3                     */
    int64_t rope_original_max_position_embeddings;          /* llama3, yarn, longrope   */
    double rope_beta_fast, rope_beta_slow, rope_attention_factor; /* yarn              */
    int rope_yarn_no_truncate;     /* yarn "truncate": false: the correction range's ends
                                      are not floored / ceiled (gpt-oss)                 */
    double partial_rotary_factor;  /* 1.0 = rotate all of head_dim                      */
    int n_no_rope_layers;          /* count of layer_no_rope[i] == 1                    */
    /* single-block layers (Nemotron-H: each layer x + block(RMSNorm(x)) with one block):
     * per layer FACET_BLOCK_BOTH (a mixer and an FFN, the usual decoder layer),
     * FACET_BLOCK_MIXER (the mixer alone: no FFN) or FACET_BLOCK_FFN (the FFN alone, its
     * norm in post_attention_layernorm's slot: no mixer, no KV cache) */
    uint8_t layer_block[FACET_MAX_LAYERS];
    int n_ffn_only_layers;         /* count of layer_block[i] == FACET_BLOCK_FFN        */
    uint8_t layer_no_rope[FACET_MAX_LAYERS]; /* per layer: 1 = no RoPE (NoPE, SmolLM3)  */
    int n_rope_short, n_rope_long;
    double rope_short_factor[FACET_MAX_ROPE_FACTORS];
    double rope_long_factor[FACET_MAX_ROPE_FACTORS];

    /* multipliers (Granite, Gemma) */
    double embedding_multiplier;   /* 1.0 = none                                        */
    double residual_multiplier;    /* 1.0 = none                                        */
    double logits_scaling;         /* logits divided by this; 1.0 = none                */

    /* biases and norms: config keys, then probed from tensors */
    int attention_bias;            /* config attention_bias                             */
    int mlp_bias;                  /* config mlp_bias                                   */
    int qkv_bias;                  /* probed: q/k/v_proj.bias present                   */
    int o_bias;                    /* probed: o_proj.bias present                       */
    int qk_norm;                   /* probed: q_norm/k_norm present                     */
    int attn_output_gate;          /* 1: q_proj gives per head [query (hd); gate (hd)],
                                      the attention output times sigmoid(gate) before
                                      o_proj (Qwen3NextAttention)                       */
    int attn_sinks;                /* a learned logit per head in the attention softmax's
                                      denominator (self_attn.sinks: gpt-oss)             */
    int tie_word_embeddings;       /* config (class default when absent)                */
    int tie_word_embeddings_given; /* 1: config.json states it (else the class default) */
    int has_lm_head;               /* probed: lm_head.weight present                    */
    int fused_qkv, fused_gate_up;  /* probed: Phi-3 qkv_proj / gate_up_proj             */
    int lm_head_bias;              /* probed: lm_head.bias present (Phi)                 */
    int c_attn_linear;             /* config class: attn.c_attn is a Linear q|k|v (QWen), so
                                      the probe takes it as fused_qkv, never as Conv1D    */
    int qkv_fused_blocks;          /* config class: the fused query_key_value's rows are
                                      [q; k; v] blocks (ChatGLM's multi-query layout), so
                                      the probe reads it as fused_qkv, not in KV groups   */
    int conv1d;                    /* probed: GPT-2's Conv1D projections ([in, out],
                                      attn.c_attn / c_proj, mlp.c_fc / c_proj)           */
    int pos_embed_learned;         /* 1: learned absolute position embeddings added to the
                                      token embeddings (GPT-2 wpe); positions must stay
                                      below max_position_embeddings                      */
    int no_rope;                   /* 1: the class has no rotary embedding at all         */
    int alibi;                     /* 1: ALiBi position biases (BLOOM, MPT): each score
                                      plus slope_h * (key position - query position), the
                                      slopes 2^(-alibi_bias_max * k / p) over the heads
                                      (engine/rope.c); no layer rotates                  */
    double alibi_bias_max;         /* 8 in every class that has ALiBi                    */
    int alibi_pre_scale;           /* 1: the bias joins q.k before the 1/sqrt(head_dim)
                                      scale, so it is scaled too: slope_h * attn_scale
                                      (Falcon's alibi: (q.k + alibi) * inv_norm_factor);
                                      0: added after it (BLOOM, MPT, Baichuan-13B)      */
    int lm_head_l2_norm;           /* 1: each lm_head row divided by its L2 norm at load
                                      (Baichuan 2's NormHead: F.normalize(weight) in
                                      eval), in float64, before any rounding            */
    int rope_interleaved;          /* 1: RoPE turns pairs (2i, 2i+1) of the rotary dims
                                      (GPT-J's rotate_every_two), not (i, i + d/2)      */
    int embed_norm;                /* 1: a LayerNorm (weight and bias) on the token
                                      embeddings (BLOOM's word_embeddings_layernorm)    */
    int fused_qkv_heads;           /* probed: one q/k/v projection whose rows are per head
                                      [q_h; k_h; v_h] (GPT-NeoX query_key_value)         */
    int probed;                    /* 1 once weight facts come from tensor headers      */

    /* mixture of experts (num_experts 0: every layer's FFN is dense) */
    int64_t num_experts;           /* num_local_experts / num_experts                    */
    int64_t num_experts_per_tok;   /* k                                                  */
    int64_t moe_intermediate_size; /* each routed expert's intermediate size (the class's
                                      intermediate_size where it has one size)           */
    facet_moe_router moe_router;
    int norm_topk_prob;            /* SOFTMAX_TOPK: renormalize the k weights to sum 1   */
    int64_t shared_expert_intermediate_size; /* 0 = no shared expert                     */
    int shared_expert_gate;        /* 1: the shared expert's output times
                                      sigmoid(x . shared_expert_gate) (Qwen2-MoE)        */
    int moe_biases;                /* the router and every expert's gate/up/down carry a
                                      bias (gpt-oss)                                     */
    double swiglu_limit;           /* > 0: gpt-oss's clamped SwiGLU, (clamp(up, +-limit)
                                      + 1) * g * sigmoid(1.702 g), g = min(gate, limit);
                                      0: the activation act                             */
    int experts_mxfp4;             /* 1: the experts' matrices are MXFP4 (gpt-oss's
                                      quantization_config quant_method "mxfp4": NAME_blocks
                                      and NAME_scales tensors), run in their blocks      */
    int n_sparse_layers;           /* count of layer_sparse[i] == 1                      */
    uint8_t layer_sparse[FACET_MAX_LAYERS]; /* per layer: 1 = mixture-of-experts FFN     */
    facet_experts_layout experts_layout; /* probed (FACET_EXPERTS_NONE before the probe)  */

    /* multi-head latent attention (issue 25: DeepseekV2Config; kv_lora_rank 0: none).
     * Per head the query is [qk_nope_head_dim | qk_rope_head_dim] and the value
     * v_head_dim wide; keys and values are up-projected from one latent of kv_lora_rank
     * values per token (normed by kv_a_layernorm) plus one rope key of qk_rope_head_dim
     * shared by the heads: the cache holds those kv_lora_rank + qk_rope_head_dim values
     * per token and layer. RoPE turns only the rope part, in the interleaved layout
     * (pairs (2i, 2i+1)); attn_scale is (qk_nope + qk_rope)^-1/2 times yarn's
     * mscale(factor, mscale_all_dim)^2 as DeepSeek's modeling code sets softmax_scale */
    int64_t q_lora_rank;           /* 0 = a plain q_proj (DeepSeek-V2-Lite); else q_a_proj
                                      -> q_a_layernorm -> q_b_proj                       */
    int64_t kv_lora_rank;
    int64_t qk_nope_head_dim;
    int64_t qk_rope_head_dim;
    int64_t v_head_dim;
    double rope_mscale, rope_mscale_all_dim; /* rope_scaling.mscale / mscale_all_dim (0 =
                                      absent)                                            */
    double routed_scaling_factor;  /* routed experts' weights times this (1.0 = none)   */
    int64_t first_k_dense_replace; /* layers [0, k) dense; then every moe_layer_freq-th  */
    int64_t moe_layer_freq;
    int64_t n_shared_experts;      /* DeepSeek: shared experts, each moe_intermediate_size
                                      wide (shared_expert_intermediate_size holds the sum) */
    char topk_method[32];          /* "greedy", "group_limited_greedy" (deepseek_v2) or
                                      "noaux_tc" (deepseek_v3); others are refused       */
    char scoring_func[16];         /* "softmax" (deepseek_v2) or "sigmoid" (deepseek_v3) */
    int64_t n_group, topk_group;   /* FACET_ROUTER_GROUPED: experts in n_group equal
                                      groups, the choice inside the topk_group best ones
                                      (greedy: 1, 1)                                      */
    int moe_sigmoid;               /* GROUPED: scores are sigmoid(logit), else softmax   */
    int64_t fp8_block_rows, fp8_block_cols; /* quantization_config fp8 / e4m3 with
                                      weight_block_size [rows, cols] (DeepSeek-V3's release):
                                      F8_E4M3 matrices, each with a float32
                                      NAME_scale_inv [ceil(r / rows), ceil(c / cols)], are
                                      widened at load (q x scale of its block); 0: none   */
    int moe_score_bias;            /* GROUPED: mlp.gate.e_score_correction_bias [E] is
                                      added to the scores for the choice (noaux_tc;
                                      group score = sum of each group's two best)        */

    /* recurrent (state-space) mixers, issue 26 (n_ssm_layers 0: every mixer is attention).
     * Mamba (MambaConfig): d_inner = ssm_inner, N = ssm_state_size, K = ssm_conv_kernel,
     * R = ssm_dt_rank; per sequence and layer a state of (K - 1) * d_inner conv inputs
     * and d_inner * N SSM values */
    int64_t ssm_state_size;        /* state_size (N)                                    */
    int64_t ssm_conv_kernel;       /* conv_kernel (K)                                   */
    int64_t ssm_expand;            /* expand                                            */
    int64_t ssm_inner;             /* intermediate_size = expand * hidden_size          */
    int64_t ssm_dt_rank;           /* time_step_rank ("auto": ceil(hidden_size / 16))    */
    int ssm_conv_bias;             /* use_conv_bias                                     */
    int ssm_proj_bias;             /* use_bias (in_proj / out_proj biases)               */
    /* Mamba-2 (Mamba2Config, ssm_version 2): H = ssm_heads heads of ssm_head_dim
     * channels (H x P = d_inner), B and C shared by the heads of each of ssm_groups
     * groups; per sequence and layer a state of (K - 1) * (d_inner + 2 G N) conv inputs
     * and d_inner * N SSM values */
    int ssm_version;               /* 1: Mamba, 2: Mamba-2, 3: LFM2's gated short
                                      convolution (ssm_inner = hidden_size channels,
                                      ssm_conv_kernel = conv_L_cache taps, no SSM state:
                                      ssm_state_size 0), 4: Qwen3-Next's gated delta rule
                                      (Qwen3NextGatedDeltaNet: ssm_heads =
                                      linear_num_value_heads of ssm_head_dim =
                                      linear_value_head_dim, ssm_groups =
                                      linear_num_key_heads of ssm_state_size =
                                      linear_key_head_dim, ssm_inner = the value width
                                      heads x head_dim; conv channels q, k, v = ssm_inner
                                      + 2 G N, as Mamba-2's; state per value head
                                      [N][head_dim]) (0: no recurrent layer)            */
    int64_t ssm_heads;             /* num_heads                                         */
    int64_t ssm_head_dim;          /* head_dim                                          */
    int64_t ssm_groups;            /* n_groups                                          */
    int ssm_ffn;                   /* 1: a recurrent layer also has the FFN block and its
                                      norm (hybrids: Granite 4's Mamba-2 layers); 0: a
                                      Mamba block is x + mixer(RMSNorm(x)) alone          */
    int ssm_dbc_norm;              /* 1: Mamba's dt, B and C (x_proj's parts) each pass an
                                      RMSNorm with a weight (eps rms_norm_eps) before use:
                                      Jamba's dt/b/c_layernorm                           */
    /* Falcon-H1 (FalconH1Config): every layer runs attention and a Mamba-2 mixer in
     * parallel on the same normed input h, the mixer output being
     *   attn(h * attn_in_multiplier) * attn_out_multiplier
     *     + mamba2(h * ssm_in_multiplier) * ssm_out_multiplier
     * (layer_ssm stays 0: every layer is an attention layer with its KV slot, and keeps a
     * Mamba-2 state beside it; n_ssm_layers counts none of them) */
    int ssm_parallel;              /* 1: the parallel mixers above on every layer        */
    int ssm_norm;                  /* Mamba-2's output norm, FACET_SSM_NORM_*             */
    int ssm_in_bias;               /* Mamba-2's in_proj has a bias (Falcon-H1's
                                      mamba_proj_bias)                                  */
    int ssm_out_bias;              /* its out_proj has a bias (Falcon-H1's projectors_bias) */
    /* muP multipliers (mup 0: none of them applies; each is 1.0 then) */
    int mup;
    double attn_in_multiplier, attn_out_multiplier;
    double ssm_in_multiplier, ssm_out_multiplier;
    double key_multiplier;         /* keys times this after k_proj (+ bias), before RoPE  */
    double ssm_mup[5];             /* Mamba-2's in_proj output times these, by segment:
                                      z, x, B, C, dt (FalconH1's mup_vector from
                                      ssm_multipliers)                                  */
    double mlp_gate_multiplier;    /* the gated MLP's gate_proj output times this, before
                                      the activation                                    */
    double mlp_down_multiplier;    /* its down_proj output times this                   */
    int n_ssm_layers;              /* count of layer_ssm[i] != 0                         */
    uint8_t layer_ssm[FACET_MAX_LAYERS]; /* per layer: ssm_version (a Mamba / Mamba-2 /
                                      short-conv mixer; no FFN unless ssm_ffn), 0 otherwise */
    char layer_kinds_key[48];      /* the config key that chose each layer's kind
                                      ("layer_types", "full_attn_idxs", ...; "" : the
                                      class's default), for errors naming it            */
    char layer_kinds_spelling[2][24]; /* in a per-layer list or pattern: the entry of an
                                      attention [0] and a recurrent [1] layer; "" when the
                                      key is no per-layer list                           */

    /* stop */
    int32_t bos_token_id;          /* -1 when absent                                    */
    int n_eos;
    int32_t eos_token_ids[FACET_MAX_EOS];

    /* weights */
    uint64_t weight_bytes;         /* sum of tensor bytes (probed)                      */
    uint32_t dtype_mask;           /* bit per st_dtype present (probed)                 */
    int matrices_q8_0;             /* GGUF: every matrix is Q8_0                         */
    int gguf_block_matrices;       /* GGUF: matrices in a block type with kernels (auto
                                    * weights: the file's own types, FACET_WEIGHTS_GGUF)  */

    int n_notes;
    facet_fact_note notes[16];

    /* config keys not consumed above, for the table to classify (inert / math-changing) */
    int n_config_keys;
    int config_keys_overflow;      /* more keys than FACET_MAX_CONFIG_KEYS (refused)     */
    facet_config_key config_keys[FACET_MAX_CONFIG_KEYS];
    int family_known;              /* 1: the table has a profile for model_type, so shape
                                      keys were read strictly; 0: shape errors were
                                      recorded as notes and the verdict refuses anyway  */
} facet_facts;

/*
 * Read `dir`/config.json and, when present, `dir`/generation_config.json into *f.
 * `dir` may also name a config.json file directly. Implicit fields are derived
 * (head_dim, num_key_value_heads, rope defaults). Errors (each naming the file, the key,
 * the value and what was expected): FACET_E_IO (no config.json), FACET_E_PARSE (not
 * JSON), FACET_E_FORMAT (a key of the wrong type, a size that is zero, negative or
 * overflows), FACET_E_NOT_FOUND (a required key missing).
 */
facet_status facet_facts_read(const char *dir, facet_facts *f, facet_error *err);

/*
 * Same as facet_facts_read on a parsed config (`config`, borrowed) and optional
 * generation config (`gen`, may be NULL); `what` names the config in messages. For the
 * fuzz target and tests; no I/O.
 */
struct json_t;
facet_status facet_facts_from_json(struct json_t *config, struct json_t *gen, const char *what,
                                   facet_facts *f, facet_error *err);

/* Add a note (printed by conform and run -v). Silently drops past 16. */
void facet_facts_note(facet_facts *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
