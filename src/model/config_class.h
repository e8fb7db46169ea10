/*
 * config_class.h — what a Hugging Face config class implies when config.json is silent.
 *
 * transformers builds each model from its config class (LlamaConfig, Qwen2Config, ...):
 * a key absent from config.json takes the class's constructor default, and some facts
 * are not keys at all but fixed by the modeling code of that class (Qwen2's q/k/v
 * biases, Gemma's (1 + w) RMSNorm). This table records both, keyed by the config
 * class's model_type, so the fact reader derives the same values transformers would.
 * It never decides support: that is the capability table's job (table.c).
 */
#ifndef FACET_MODEL_CONFIG_CLASS_H
#define FACET_MODEL_CONFIG_CLASS_H

#include <stdint.h>

typedef struct facet_config_class {
    const char *model_type;
    int tie_word_embeddings;      /* class default when the key is absent              */
    int64_t head_dim;             /* class default head_dim; 0 = hidden / heads        */
    double rope_theta;            /* class default rope_theta                          */
    double rms_norm_eps;          /* class default rms_norm_eps                        */
    int64_t max_position_embeddings; /* class default; 0 = required in config.json     */
    const char *act_key;          /* key naming the FFN activation; NULL: the modeling
                                     code fixes it (act_default)                       */
    const char *act_default;      /* its class default                                 */
    const char *act_ignored_key;  /* a second activation key the modeling code ignores
                                     (consumed and noted when it differs), or NULL      */
    int reads_sliding_window;     /* 1: the class reads sliding_window                 */
    int64_t sliding_window;       /* class default when the key is absent (0 = none)  */
    int use_sliding_window_flag;  /* 1: Qwen2-style use_sliding_window gate            */
    int64_t max_window_layers;    /* class default max_window_layers                   */
    int sliding_window_pattern;   /* class default: layer i windowed iff (i+1) % p;
                                     0 = every layer windowed when a window is set    */
    int qkv_bias;                 /* -1: config attention_bias; 0/1 fixed by modeling  */
    int o_bias;                   /* -1: config attention_bias; 0/1 fixed by modeling  */
    int qk_norm;                  /* q_norm/k_norm fixed by the modeling code          */
    int norm_weight_offset;       /* RMSNorm scales by (1 + w)                         */
    int pre_norms;                /* input/pre-FFN norms (0 for OLMo 2's post-norm)     */
    int post_norms;               /* post-attention / post-FFN norms                   */
    double attn_logit_softcap;    /* class default attn_logit_softcapping (0 = none)   */
    double final_logit_softcap;   /* class default final_logit_softcapping             */
    double query_pre_attn_scalar; /* class default (0 = scale by head_dim)             */
    int embed_scale_sqrt_hidden;  /* embeddings multiplied by sqrt(hidden_size)        */
    double rope_local_base_freq;  /* class default (0 = none)                          */
    int reads_multipliers;        /* Granite's embedding/attention/residual/logits     */
    int64_t inner_div;            /* > 0: the MLP is intermediate_size / this wide (QWen's
                                     w1 / w2: intermediate_size // 2)                    */
    int c_attn_linear;            /* attn.c_attn is an nn.Linear [q|k|v rows, hidden] with a
                                     bias (QWen), not GPT-2's Conv1D                      */
    const char *head_dim_key;     /* head_dim under another name ("kv_channels"), or NULL  */
    const char *const *require_true_keys; /* flags only true runs (QWen's no_bias,
                                     scale_attn_weights), NULL-ended; or NULL            */
    int reads_mup;                /* MiniCPM's muP keys as those multipliers: scale_emb,
                                     scale_depth / sqrt(layers), hidden / dim_model_base */
    int reads_gemma_attention;    /* Gemma 2/3: attn_logit_softcapping,
                                     final_logit_softcapping, query_pre_attn_scalar;
                                     other classes leave these keys unread (the table
                                     then judges them)                                 */
    int reads_rope_local_base_freq; /* Gemma 3: sliding layers' own rope base          */
    int reads_sliding_window_pattern; /* Gemma 3 reads sliding_window_pattern; Gemma 2
                                     alternates by its modeling code (the class default
                                     2) and, as every other class, leaves the key unread */
    int reads_no_rope;            /* SmolLM3: no_rope_layers / no_rope_layer_interval   */
    int64_t no_rope_layer_interval; /* class default: layer i has no RoPE iff
                                     (i + 1) % interval == 0                            */
    int rope_on_sliding_only;     /* Cohere 2: only the windowed layers rotate; a layer
                                     without a window (full_attention, or every layer
                                     when sliding_window is null) attends without
                                     positions (Cohere2Attention applies RoPE iff its
                                     sliding_window is set)                             */
    int head_dim_from_hidden;     /* 1: the class overwrites head_dim with hidden_size /
                                     num_attention_heads (Cohere2Config.__post_init__):
                                     a head_dim key that disagrees is refused           */
    /* mixture of experts (moe 0: the class has none; its expert keys stay unread and
     * the table refuses them) */
    int moe;
    const char *experts_key;      /* "num_local_experts" or "num_experts"              */
    int64_t num_experts;          /* class defaults                                    */
    int64_t num_experts_per_tok;
    const char *moe_size_key;     /* "moe_intermediate_size", or NULL: the experts are
                                     intermediate_size wide                            */
    int64_t moe_intermediate_size;
    int router;                   /* facet_moe_router                                   */
    int norm_topk_prob;           /* -1: read norm_topk_prob (default norm_topk_default);
                                     else fixed by the modeling code                   */
    int norm_topk_default;
    const char *shared_key;       /* the shared expert's size key, or NULL             */
    int64_t shared_default;       /* its class default (0 = none)                      */
    int shared_gate;              /* the shared expert has a sigmoid gate               */
    int reads_sparse_step;        /* decoder_sparse_step and mlp_only_layers (Qwen-MoE) */
    int moe_biases;               /* router and expert biases (gpt-oss)                 */
    double swiglu_limit;          /* > 0: reads swiglu_limit (this default): gpt-oss    */
    int attn_sinks;               /* per-head attention sinks (gpt-oss)                 */
    int mla;                      /* 1: DeepseekV2/V3Config's latent attention and
                                     routing keys (issue 25); the class defaults:      */
    const char *topk_method;      /* "greedy" (V2) / "noaux_tc" (V3)                    */
    const char *scoring_func;     /* "softmax" (V2) / "sigmoid" (V3)                    */
    double routed_scaling_factor; /* 1.0 (V2) / 2.5 (V3)                                */
    int64_t first_k_dense_replace; /* 0 (V2) / 3 (V3)                                   */
    int64_t n_shared_experts;     /* None (V2) / 1 (V3)                                 */
    /* state-space mixers (issue 26): 1 = MambaConfig's keys, every layer a Mamba mixer
     * without attention or FFN */
    int mamba;                    /* 1: MambaConfig, 2: Mamba2Config                    */
    int64_t kv_heads_default;     /* num_key_value_heads when absent (FalconH1Config: 8);
                                     0: num_attention_heads                            */
    int hybrid;                   /* 1: GraniteMoeHybridConfig: Mamba-2 layers (mamba_*
                                     keys) and attention layers by layer_types, each with
                                     the FFN block; position_embedding_type. 2:
                                     Lfm2Config: gated short-convolution and attention
                                     layers (layer_types or full_attn_idxs), block_* FFN
                                     sizing. 3: NemotronHConfig: one block per layer by
                                     hybrid_override_pattern / layers_block_type. 4:
                                     BambaConfig: 1's Mamba-2 keys, the attention layers
                                     by attn_layer_indices, always rotary, dense FFN. 5:
                                     JambaConfig: Mamba layers with dt/B/C norms and
                                     attention without positions by attn_layer_period /
                                     offset, MoE by expert_layer_period / offset. 6:
                                     FalconH1Config: attention and a Mamba-2 mixer in
                                     parallel on every layer, muP multipliers. 7:
                                     Qwen3NextConfig: gated delta-rule (linear_*) and
                                     gated attention layers by layer_types /
                                     full_attention_interval                            */
    /* classic decoders (issue 28) */
    const char *norm_eps_key;     /* the norms' eps key when not rms_norm_eps
                                     ("layer_norm_eps"), else NULL                    */
    int layer_norm;               /* LayerNorm (mean and variance), not RMSNorm         */
    int norm_no_weight;           /* the LayerNorms have no weight or bias (OLMo)       */
    int ffn_ungated;              /* down(act(up h)): the MLP has no gate projection    */
    const char *parallel_key;     /* key of the parallel attention/FFN residual flag
                                     ("use_parallel_residual"), or NULL: sequential     */
    int parallel_default;         /* its class default                                  */
    int parallel_one_norm;        /* the parallel FFN reads the attention's normed input
                                     (one norm per layer: Phi, GPT-J)                   */
    const char *rotary_pct_key;   /* partial rotary under another name ("rotary_pct"),
                                     or NULL                                            */
    double rotary_pct_default;    /* its class default                                  */
    double rotary_pct_fixed;      /* > 0: the config class fixes partial_rotary_factor to
                                     this whatever config.json says (BambaConfig: 0.5)  */
    const char *rope_theta_key;   /* the rope base under another name
                                     ("rotary_emb_base"), or NULL                       */
    int attention_bias_default;   /* attention_bias when config.json omits it           */
    int mlp_bias_default;         /* mlp_bias when the class has no key for it (NeoX's
                                     nn.Linear layers always carry one; probe decides)  */
    const char *attention_bias_key; /* attention_bias under another name
                                     ("use_qkv_bias"), or NULL                          */
    const char *heads_dup_key;    /* a second spelling of num_attention_heads the class
                                     keeps ("num_heads"): must equal it                 */
    const char *unit_key;         /* a multiplier the modeling code applies that facet
                                     runs only at 1.0 ("rotary_scaling_factor")         */
    /* GPT2Config's own spellings (attribute_map): hidden_size = n_embd, ... ; NULL: the
     * usual names */
    const char *hidden_key, *layers_key, *heads_key, *positions_key;
    const char *inner_key;        /* intermediate size key; null or absent: 4 x hidden  */
    int heads_divide_hidden;      /* 1: the attention splits hidden_size into the heads
                                     (fused q|k|v of hidden_size-wide parts): the class
                                     refuses a hidden_size that is not a multiple of the
                                     head count (BloomAttention, FalconAttention, ... raise
                                     ValueError); 0: head_dim = hidden / heads by integer
                                     division, as Llama-like classes do                 */
    int pos_embed_learned;        /* learned absolute positions, no rotary embedding    */
    int64_t ffn_hidden_mult;      /* > 0: the MLP is this many times hidden_size wide,
                                     fixed by the modeling code (BLOOM, MPT: 4); no key  */
    int alibi;                    /* ALiBi positions (max bias 8), no rotary embedding  */
    int embed_norm;               /* a LayerNorm on the token embeddings (BLOOM)        */
    const char *post_ln_residual_key; /* a flag that takes the residual after the norm
                                     (apply_residual_connection_post_layernorm): only
                                     false runs                                         */
    const char *rotary_dim_key;   /* rotary dims as a count ("rotary_dim"; null: the
                                     whole head): partial_rotary_factor = it / head_dim */
    int rope_interleaved;         /* RoPE on pairs (2i, 2i+1) (GPT-J)                   */
    const char *logit_scale_key;  /* a multiplier of the logits ("logit_scale": Cohere),
                                     read as logits_scaling = 1 / it; NULL: none        */
    double logit_scale_default;   /* its class default                                  */
    const char *refuse_true_key;  /* a flag only false runs ("use_qk_norm": Cohere's
                                     per-head LayerNorm of q and k), or NULL            */
    int mpt;                      /* MptConfig's attn_config object and the llm-foundry
                                     keys its modeling code fixes (facts.c read_mpt)     */
    int baichuan;                 /* BaichuanConfig (remote code): the position scheme
                                     and the output head from the keys each release's
                                     configuration class defines (facts.c
                                     read_baichuan)                                    */
    int falcon_attention;         /* FalconConfig's attention layout keys:
                                     new_decoder_architecture, multi_query, num_kv_heads,
                                     num_ln_in_parallel_attn (facts.c read_falcon)      */
    /* ChatGLMConfig (ChatGLM2/3, GLM-4; remote configuration_chatglm.py) */
    const char *vocab_key;        /* vocab_size under another name ("padded_vocab_size"),
                                     or NULL                                            */
    int64_t inner_default;        /* with inner_key: its class default when absent
                                     (ChatGLM's ffn_hidden_size 13696); 0: 4 x hidden   */
    const char *rope_ratio_key;   /* the rope base is rope_theta times this key's value
                                     ("rope_ratio", default 1), or NULL                 */
    int glm_attention;            /* ChatGLMConfig's attention and norm keys:
                                     multi_query_attention / multi_query_group_num (the
                                     fused query_key_value's layout and KV heads),
                                     rmsnorm, add_bias_linear, quantization_bit,
                                     pre_seq_len (facts.c read_glm)                      */
    const char *const *unread_keys; /* keys a checkpoint's config carries that the
                                     transformers class never reads (StarCoder2's
                                     mlp_type, norm_type): consumed, no effect; NULL-ended */
} facet_config_class;

/* The class for `model_type`, or the generic PretrainedConfig defaults (model_type "")
 * when facet does not know the class. Never NULL. */
const facet_config_class *facet_config_class_find(const char *model_type);

#endif
