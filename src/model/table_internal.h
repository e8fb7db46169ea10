/*
 * table_internal.h — the shapes of the capability table's declared data (table.c),
 * shared by the judge (verdict.c) and the printers (table_print.c).
 */
#ifndef FACET_MODEL_TABLE_INTERNAL_H
#define FACET_MODEL_TABLE_INTERNAL_H

#include <stdint.h>

#include "io/safetensors.h"
#include "model/facts.h"

#define BIT(x) (1u << (x))
#define ALLOW_FALSE BIT(0)
#define ALLOW_TRUE BIT(1)
#define ALLOW_BOTH (ALLOW_FALSE | ALLOW_TRUE)

/* What one backend runs for one profile: each field is a fact's supported range. */
typedef struct facet_caps {
    const char *backend;          /* "cpu", "vulkan"                                  */
    int built;                    /* 0: "backend=NAME is not built into this binary"   */
    /* attention shape */
    int64_t head_dim_min, head_dim_max, head_dim_multiple; /* used when no set          */
    int64_t head_dim_set[8];      /* explicit values (0-terminated), or all 0          */
    int gqa_any_divisor;          /* num_key_value_heads divides num_attention_heads   */
    /* position */
    unsigned rope_types;          /* BIT(facet_rope_type)                              */
    double partial_rotary_min;    /* partial_rotary_factor in [min, 1]                 */
    int dual_rope_base;           /* rope_local_base_freq != rope_theta allowed        */
    /* block */
    unsigned acts;                /* BIT(facet_act)                                    */
    unsigned norm_weight_offset;  /* ALLOW_*: RMSNorm (1 + w)                          */
    unsigned pre_norms;           /* ALLOW_*                                           */
    unsigned post_norms;          /* ALLOW_*                                           */
    unsigned mlp_bias;            /* ALLOW_*                                           */
    unsigned layer_norm;          /* ALLOW_*: LayerNorm instead of RMSNorm              */
    unsigned ffn_ungated;         /* ALLOW_*: MLP without a gate projection             */
    unsigned parallel_residual;   /* ALLOW_*: attention and FFN from the same input     */
    int softcaps;                 /* attention-logit / final-logit softcapping         */
    int multipliers;              /* embedding/residual/logits multipliers != 1        */
    int attn_scale_custom;        /* scale other than 1/sqrt(head_dim)                 */
    int sliding_window;           /* windowed layers (an inert window always passes)   */
    int no_rope_layers;           /* layers without RoPE (SmolLM3's NoPE layers)        */
    /* mixture of experts */
    unsigned moe_routers;         /* BIT(facet_moe_router); BIT(NONE): dense layers     */
    int64_t experts_per_tok_max;  /* k                                                  */
    unsigned shared_expert;       /* ALLOW_*: a shared expert beside the routed ones    */
    int ssm;                      /* Mamba mixers (state-space layers, issue 26)         */
    /* weight facts (decided by the tensor probe) */
    unsigned qkv_bias, o_bias, qk_norm, tied, fused_qkv, fused_gate_up; /* ALLOW_*     */
    unsigned fused_qkv_heads;     /* ALLOW_*: per-head [q; k; v] rows (NeoX)            */
    unsigned norm_bias;           /* ALLOW_*: LayerNorm biases                          */
    unsigned alibi;               /* ALLOW_*: ALiBi position biases                      */
    unsigned rope_interleaved;    /* ALLOW_*: RoPE on pairs (2i, 2i+1) (GPT-J)           */
    unsigned embed_norm;          /* ALLOW_*: a norm on the token embeddings             */
    unsigned lm_head_l2_norm;     /* ALLOW_*: lm_head rows L2-normalised at load
                                     (Baichuan 2's NormHead)                            */
    unsigned dtypes;              /* BIT(st_dtype)                                     */
} facet_caps;

/* A decoder family profile, keyed by config.json's model_type. */
typedef struct facet_profile {
    const char *model_type;
    const char *architectures[4]; /* accepted architectures[0] (NULL-terminated)       */
    const char *summary;          /* one line for the table print                      */
    const facet_caps *cpu, *vulkan;
} facet_profile;

/* Classification of a config key the fact reader did not consume. */
typedef enum facet_key_kind {
    FACET_KEY_INERT = 0,          /* bookkeeping; never changes the forward pass       */
    FACET_KEY_MATH,               /* changes the math; refused unless null/false       */
} facet_key_kind;

typedef struct facet_key_rule {
    const char *key;              /* exact key, or a prefix ending in '.' or '['      */
    facet_key_kind kind;
    const char *what;             /* MATH: what the key means (printed in refusals)    */
} facet_key_rule;

extern const facet_profile facet_profiles[];
extern const int facet_n_profiles;
extern const facet_key_rule facet_key_rules[];
extern const int facet_n_key_rules;
extern const char *const facet_math_words[];  /* NULL-terminated */
extern const char *const facet_inert_words[]; /* NULL-terminated; checked first */

const facet_profile *facet_table_profile(const char *model_type);

#endif
