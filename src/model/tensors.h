/*
 * tensors.h — the one table of a checkpoint's tensors, read by the probe (probe.c: which
 * tensors exist decides weight facts) and by the loader (engine/weights.c: which tensors
 * the facts call for, with what shape, in what order).
 *
 * A row names one tensor by its Hugging Face module path relative to a root:
 *   FACET_TR_MODEL  PREFIX NAME              (PREFIX: "model.", ... see facet_tensor_prefix)
 *   FACET_TR_LAYER  PREFIX "layers." N "." NAME, for every decoder layer N
 *   FACET_TR_TOP    NAME, or else `alt` (outside the decoder: lm_head)
 * with its shape in terms of facts (facet_tdim), whether it is a float32 vector or a
 * weight matrix, and when the loader needs it (`when`, a predicate on probed facts; a
 * tensor whose predicate is false is optional: present or not, the loader ignores it).
 * A fused row (Phi-3's qkv_proj, gate_up_proj) has no slot of its own: the loader splits
 * it by rows into the slots `split` names, each part shaped as that slot's own row.
 * Rows are in the loader's order (the weight cache stores tensors in that order):
 * the MODEL rows before the first LAYER row, every LAYER row for layer 0, then layer 1,
 * ..., then the remaining rows.
 *
 * Each row also carries its GGUF (llama.cpp) name, by which a GGUF file's tensors are
 * seen under the Hugging Face names (model/gguf_checkpoint.c).
 *
 * Mixture-of-experts rows (issue 27) come in two shapes. A per-expert row (`tail` set)
 * names one tensor per expert: PREFIX "layers." N "." NAME E "." TAIL for E in
 * [0, num_experts) (block_sparse_moe.experts.3.w1.weight). A 3-D row (`experts3d`) is
 * one tensor [num_experts, dims[0], dims[1]] whose expert slices the loader splits by
 * rows into the per-expert slots `split` names, as a fused row. `scope` says which layers
 * hold a row: every layer, the dense-FFN ones or the sparse (mixture-of-experts) ones
 * (facts layer_sparse). Several rows may fill one slot (the spellings of each layout);
 * their `when` predicates, on the probed experts_layout, pick one.
 *
 * A new layer kind adds its rows (and a slot id, and the loader's field for the slot).
 */
#ifndef FACET_MODEL_TENSORS_H
#define FACET_MODEL_TENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "io/safetensors.h"
#include "model/facts.h"

/* One axis of a tensor's shape, in terms of facts. */
typedef enum facet_tdim {
    FACET_TD_NONE = 0, /* no axis (the second of a vector)                            */
    FACET_TD_HIDDEN,   /* hidden_size                                                 */
    FACET_TD_POSITIONS, /* max_position_embeddings                                     */
    FACET_TD_FFN,      /* intermediate_size                                           */
    FACET_TD_FFN2,     /* 2 * intermediate_size (gate and up fused)                   */
    FACET_TD_VOCAB,    /* vocab_size                                                  */
    FACET_TD_Q,        /* num_attention_heads * head_dim                              */
    FACET_TD_KV,       /* num_key_value_heads * head_dim                              */
    FACET_TD_QKV,      /* (num_attention_heads + 2 * num_key_value_heads) * head_dim  */
    FACET_TD_Q_NORM,   /* head_dim, or Q when the norm spans the projection (OLMo 2)  */
    FACET_TD_K_NORM,   /* head_dim, or KV when the norm spans the projection          */
    FACET_TD_ONE,      /* 1 (the shared expert's gate is a [1, H] linear)             */
    FACET_TD_EXPERTS,  /* num_experts                                                 */
    FACET_TD_EFFN,     /* moe_intermediate_size (one routed expert)                   */
    FACET_TD_EFFN2,    /* 2 * moe_intermediate_size (an expert's gate and up fused)   */
    FACET_TD_SFFN,     /* shared_expert_intermediate_size                             */
    FACET_TD_SFFN2,    /* 2 * shared_expert_intermediate_size                         */
    FACET_TD_HEADS,    /* num_attention_heads (gpt-oss's sinks)                       */
    FACET_TD_SSM_INNER,  /* Mamba d_inner (intermediate_size)                         */
    FACET_TD_SSM_IN_PROJ,/* in_proj rows: Mamba 2 d_inner (x, z); Mamba-2 2 d_inner +
                            2 n_groups state_size + num_heads (z, x, B, C, dt)          */
    FACET_TD_SSM_CONV_DIM,/* conv1d channels: d_inner (Mamba-2: + 2 n_groups state_size) */
    FACET_TD_SSM_PARAM,  /* A_log / D / dt bias rows: d_inner (Mamba-2: num_heads)       */
    FACET_TD_SSM_A_COLS, /* A_log columns: state_size (Mamba-2: none, a vector)          */
    FACET_TD_SSM_XPROJ,  /* time_step_rank + 2 * state_size (x_proj: dt, B, C)       */
    FACET_TD_SSM_DT_RANK,/* time_step_rank                                            */
    FACET_TD_SSM_STATE,  /* state_size                                                */
    FACET_TD_SSM_CONV,   /* conv_kernel                                               */
    FACET_TD_SSM_BA,     /* 2 * num_heads: Qwen3-Next's in_proj_ba (b, a per value head) */
    FACET_TD_SSM_GNORM,  /* the gated norm's weight: d_inner (Mamba-2), one value head's
                            linear_value_head_dim (Qwen3-Next, shared by the heads)     */
    FACET_TD_QG,         /* q_proj's rows: num_attention_heads * head_dim, twice that with
                            the output gate (facts attn_output_gate: Qwen3-Next)         */
    /* multi-head latent attention (DeepSeek-V2/V3, issue 25) */
    FACET_TD_MLA_Q,      /* num_attention_heads * (qk_nope_head_dim + qk_rope_head_dim) */
    FACET_TD_Q_LORA,     /* q_lora_rank                                               */
    FACET_TD_KV_A,       /* kv_lora_rank + qk_rope_head_dim                           */
    FACET_TD_KV_LORA,    /* kv_lora_rank                                              */
    FACET_TD_KV_B,       /* num_attention_heads * (qk_nope_head_dim + v_head_dim)     */
    FACET_TD_MLA_O,      /* num_attention_heads * v_head_dim                          */
} facet_tdim;

/* Destination of a tensor in the loaded model (one per non-fused row). */
typedef enum facet_tslot {
    FACET_TS_EMBED_TOKENS,
    FACET_TS_INPUT_LAYERNORM,
    FACET_TS_Q_PROJ,
    FACET_TS_K_PROJ,
    FACET_TS_V_PROJ,
    FACET_TS_Q_BIAS,
    FACET_TS_K_BIAS,
    FACET_TS_V_BIAS,
    FACET_TS_O_PROJ,
    FACET_TS_O_BIAS,
    FACET_TS_Q_NORM,
    FACET_TS_K_NORM,
    FACET_TS_POST_ATTENTION_LAYERNORM,
    FACET_TS_PRE_FEEDFORWARD_LAYERNORM,
    FACET_TS_POST_FEEDFORWARD_LAYERNORM,
    FACET_TS_GATE_PROJ,
    FACET_TS_UP_PROJ,
    FACET_TS_DOWN_PROJ,
    FACET_TS_GATE_BIAS,
    FACET_TS_UP_BIAS,
    FACET_TS_DOWN_BIAS,
    FACET_TS_ROUTER,           /* (E, H) the router's logits; float32 whatever the
                                  run-time format (engine/weights.c)                   */
    FACET_TS_EXPERT_GATE,      /* per expert (EI, H)                                  */
    FACET_TS_EXPERT_UP,        /* per expert (EI, H)                                  */
    FACET_TS_EXPERT_DOWN,      /* per expert (H, EI)                                  */
    FACET_TS_SHARED_GATE,      /* (SI, H) the shared expert                           */
    FACET_TS_SHARED_UP,        /* (SI, H)                                             */
    FACET_TS_SHARED_DOWN,      /* (H, SI)                                             */
    FACET_TS_SHARED_EXPERT_GATE, /* (1, H) its sigmoid gate (Qwen2-MoE)               */
    FACET_TS_SINKS,            /* (nh) attention sinks (gpt-oss)                      */
    FACET_TS_ROUTER_BIAS,      /* (E)                                                 */
    FACET_TS_EXPERT_GATE_BIAS, /* per expert (EI)                                     */
    FACET_TS_EXPERT_UP_BIAS,   /* per expert (EI)                                     */
    FACET_TS_EXPERT_DOWN_BIAS, /* per expert (H)                                      */
    /* a Mamba mixer (mixer.*, issue 26); float32 vectors except the four projections */
    FACET_TS_SSM_IN_PROJ,      /* (2 d_inner, H): rows x then z                       */
    FACET_TS_SSM_CONV_W,       /* (d_inner, 1, K) depthwise conv1d, float32 [d_inner][K] */
    FACET_TS_SSM_CONV_B,       /* (d_inner)                          use_conv_bias    */
    FACET_TS_SSM_X_PROJ,       /* (R + 2N, d_inner): rows dt, B, C                    */
    FACET_TS_SSM_DT_PROJ,      /* (d_inner, R)                                        */
    FACET_TS_SSM_DT_BIAS,      /* (d_inner)                                           */
    FACET_TS_SSM_A_LOG,        /* (d_inner, N) float32                                */
    FACET_TS_SSM_D,            /* (d_inner)                                           */
    FACET_TS_SSM_OUT_PROJ,     /* (H, d_inner)                                        */
    FACET_TS_SSM_GNORM,        /* (d_inner) Mamba-2's gated RMSNorm before out_proj    */
    FACET_TS_SSM_DT_NORM,      /* (R) Jamba's dt_layernorm            ssm_dbc_norm    */
    FACET_TS_SSM_B_NORM,       /* (N) b_layernorm                     ssm_dbc_norm    */
    FACET_TS_SSM_C_NORM,       /* (N) c_layernorm                     ssm_dbc_norm    */
    FACET_TS_SSM_IN_BIAS,      /* (in_proj rows) Falcon-H1's mamba_proj_bias          */
    FACET_TS_SSM_OUT_BIAS,     /* (H) Falcon-H1's projectors_bias                     */
    FACET_TS_SSM_BA,           /* (2 NH, H) Qwen3-Next's in_proj_ba, as stored: per key
                                  head, its value heads' b, then their a                */
    FACET_TS_NORM,
    FACET_TS_LM_HEAD,
    FACET_TS_INPUT_LAYERNORM_BIAS,          /* (H) LayerNorm biases (facts norm_bias)   */
    FACET_TS_POST_ATTENTION_LAYERNORM_BIAS, /* (H)                                      */
    FACET_TS_NORM_BIAS,                     /* (H) the final norm's                     */
    FACET_TS_LM_HEAD_BIAS,                  /* (V) the output projection's (Phi)        */
    FACET_TS_POS_EMBED,                     /* (max_position_embeddings, H) learned
                                               absolute positions (GPT-2 wpe)           */
    /* multi-head latent attention (self_attn.*, DeepSeek-V2/V3) */
    FACET_TS_MLA_Q_PROJ,       /* (nh * (dn + dr), H) q_proj        q_lora_rank 0;
                                  loaded into facet_layer_weights.q_proj               */
    FACET_TS_MLA_O_PROJ,       /* (H, nh * dv) o_proj, into .o_proj                   */
    FACET_TS_Q_A_PROJ,         /* (q_lora_rank, H)                   q_lora_rank > 0  */
    FACET_TS_Q_A_NORM,         /* (q_lora_rank) RMSNorm                               */
    FACET_TS_Q_B_PROJ,         /* (nh * (dn + dr), q_lora_rank)                       */
    FACET_TS_KV_A_PROJ,        /* (kv_lora_rank + dr, H): latent rows, then the rope key */
    FACET_TS_KV_A_NORM,        /* (kv_lora_rank) RMSNorm of the latent                */
    FACET_TS_KV_B_PROJ,        /* (nh * (dn + dv), kv_lora_rank): per head dn key rows,
                                  then dv value rows                                   */
    FACET_TS_ROUTER_SCORE_BIAS, /* (E) mlp.gate.e_score_correction_bias (noaux_tc)    */
    FACET_TS_EMBED_NORM,                    /* (H) the token embeddings' LayerNorm
                                               (facts embed_norm: BLOOM)                */
    FACET_TS_EMBED_NORM_BIAS,               /* (H) its bias                             */
    FACET_TS_COUNT,
    FACET_TS_FUSED = -1, /* a fused row: its parts go to `split`                     */
} facet_tslot;

/* Ids of the fused rows, which have no slot (looked up with facet_tensor_fused). */
typedef enum facet_tfused {
    FACET_TF_QKV_PROJ,
    FACET_TF_QKV_BIAS, /* loaded split where the weight is fused (QWen, ChatGLM) */
    FACET_TF_GATE_UP_PROJ,
    FACET_TF_SHARED_INPUT, /* Granite-MoE-shared shared_mlp.input_linear: gate, up */
    FACET_TF_QKV_HEADS,    /* query_key_value in KV groups [q x g; k; v] (NeoX: g = 1) */
    FACET_TF_QKV_HEADS_BIAS,
    FACET_TF_C_ATTN,       /* GPT-2 attn.c_attn (Conv1D [H, 3H]): q | k | v columns */
    FACET_TF_C_ATTN_BIAS,
    FACET_TF_GATE_UP_BIAS, /* ChatGLM's mlp.dense_h_to_4h.bias: gate, then up */
    FACET_TF_COUNT,
} facet_tfused;

typedef enum facet_troot { FACET_TR_MODEL, FACET_TR_LAYER, FACET_TR_TOP } facet_troot;

/* Which layers hold a LAYER row. */
typedef enum facet_tscope {
    FACET_SCOPE_ALL = 0,
    FACET_SCOPE_DENSE,  /* layers whose FFN is dense (the dense MLP's tensors)          */
    FACET_SCOPE_SPARSE, /* mixture-of-experts layers (router, experts, shared expert)   */
    FACET_SCOPE_SSM,    /* Mamba layers (facts layer_ssm), which hold only these rows;
                           a hybrid's (facts ssm_ffn) also hold every non-attention row  */
} facet_tscope;

#define FACET_TENSOR_SPLIT_MAX 3

typedef struct facet_tensor_row {
    facet_troot root;
    const char *name;         /* module path below the root ("self_attn.q_proj.weight")  */
    const char *alt;          /* the second name tried (another class's spelling of the
                                 same tensor: Mamba's embeddings, NeoX's attention.dense), or
                                 NULL                                                        */
    const char *alt2;         /* a third name tried, or NULL                               */
    const char *alt3, *alt4;  /* a fourth and fifth name tried, or NULL                    */
    const char *alt5, *alt6;  /* a sixth and seventh (LFM2's, Nemotron-H's), or NULL       */
    const char *alt7;         /* an eighth (MPT's ffn.down_proj), or NULL                 */
    const char *alt8;         /* a ninth (GPT-J's mlp.fc_out), or NULL                    */
    const char *alt9;         /* a tenth (Bamba's feed_forward.down_proj), or NULL        */
    const char *alt10;        /* an eleventh (QWen's mlp.w1), or NULL                     */
    facet_tdim dims[2];       /* shape; dims[1] == FACET_TD_NONE for a vector              */
    int matrix;               /* 1: a weight matrix (run-time format); 0: float32 vector  */
    facet_tslot slot;         /* destination, or FACET_TS_FUSED                           */
    int fused;                /* FACET_TS_FUSED rows: their facet_tfused id; else -1      */
    int n_split;              /* FACET_TS_FUSED rows: parts, row order                    */
    facet_tslot split[FACET_TENSOR_SPLIT_MAX];
    int (*when)(const facet_facts *f); /* the loader needs it; NULL: the loader never
                                          reads this row (probed only)                   */
    const char *gguf;         /* its name in a GGUF (llama.cpp) file, below "blk.N." for
                                 LAYER rows; NULL: GGUF has none                          */
    const char *gguf_post;    /* the GGUF name in post-norm families (facts post_norms),
                                 when it differs, else NULL                               */
    facet_tscope scope;       /* LAYER rows: which layers hold it                          */
    const char *tail;         /* per-expert rows: the name after the expert index, else NULL */
    int experts3d;            /* 1: [num_experts, dims[0], dims[1]] (a vector row:
                                 [num_experts, dims[0]]), split per expert into the `split`
                                 slots                                                     */
    int transposed;           /* 3-D: each expert's [dims[0], dims[1]] is W^T (x @ W, gpt-oss):
                                 the parts split its columns                               */
    int interleaved;          /* the parts alternate (gate, up, gate, up, ...) rather than
                                 follow each other                                         */
    int conv3d;               /* float32 rows: 1 = shaped [dims[0], 1, dims[1]] (a depthwise
                                 conv1d weight); otherwise a float32 row with dims[1] set
                                 is [dims[0], dims[1]]                                     */
    int conv1d;               /* a tensor of GPT-2's Conv1D modules; a matrix is stored
                                 [in, out]: the shape read is dims reversed, transposed at
                                 load                                                       */
    int heads_interleaved;    /* fused rows: the parts interleave per KV group, group j
                                 holding part p's share of rows (parts[p] / num_key_value_heads)
                                 after parts 0..p-1's (NeoX query_key_value: one head each,
                                 [q_h; k_h; v_h]; Falcon: [q x g; k; v]); reordered to
                                 part-major at load                                        */
} facet_tensor_row;

/* Whether layer `layer` of facts f holds row r (its scope). */
int facet_tensor_in_layer(const facet_tensor_row *r, const facet_facts *f, int64_t layer);

/* The table: facet_tensor_rows[0 .. facet_tensor_count - 1], in the loader's order. */
extern const facet_tensor_row facet_tensor_rows[];
extern const size_t facet_tensor_count;

/* The row of slot `s` / of fused row `id` (never NULL for a valid id). */
const facet_tensor_row *facet_tensor_slot(facet_tslot s);
const facet_tensor_row *facet_tensor_fused(facet_tfused id);

/* Row r's GGUF name for facts f (gguf_post in post-norm families when it has one). */
const char *facet_tensor_gguf_name(const facet_tensor_row *r, const facet_facts *f);

/* The row a GGUF tensor name stands for, with facts f: `g` is the name below "blk.N."
 * when `layer` is nonzero, else the whole name ("token_embd.weight"). Several rows may
 * carry one GGUF name (ffn_norm.weight, ffn_up.weight): the row whose name it is for
 * these facts and which the loader needs wins. NULL when no row has that name. */
const facet_tensor_row *facet_tensor_from_gguf(const char *g, int layer, const facet_facts *f);

/* The value of axis `d` for facts `f`; `full_qk_norm`: the q/k norms span the whole
 * projection (facet_tensor_qk_norm_full). FACET_TD_NONE is 0. */
int64_t facet_tdim_value(facet_tdim d, const facet_facts *f, int full_qk_norm);

/* The axis in the config's words ("num_attention_heads * head_dim"), for messages. */
const char *facet_tdim_name(facet_tdim d);

/* The module path before "layers.0." in checkpoint `ck` ("model.",
 * "model.language_model.", "language_model.model.", "transformer.", "backbone." or ""), copied to
 * out (cap bytes); where the layers are not "layers." (GPT-2's transformer.h.N), the
 * prefix is "MODEL|LAYERS" ("transformer.|h."): read it with facet_tensor_layer_path.
 * Returns 1, or 0 when no known prefix holds a layer 0. */
int facet_tensor_prefix(const st_checkpoint *ck, char *out, size_t cap);

/* "PREFIX layers.N." (or the prefix's own layer container) for layer N into out. */
void facet_tensor_layer_path(const char *prefix, int64_t layer, char *out, size_t cap);

/* The first tensor (in name order) whose name starts with `name_prefix`, or NULL. */
const st_tensor *facet_tensor_with_prefix(const st_checkpoint *ck, const char *name_prefix);

/* Format row `r`'s name for `prefix` and `layer` (LAYER rows) into name (cap bytes) and
 * return the checkpoint's tensor of that name, or NULL (name then holds the first name
 * tried). TOP rows try `name`, then `alt`. */
const st_tensor *facet_tensor_find(const st_checkpoint *ck, const facet_tensor_row *r,
                                   const char *prefix, int64_t layer, char *name, size_t cap);

/* The first tensor (in table order) in layer `layer` of a mixer's kind: an attention
 * row's (attention 1) or a recurrent mixer's (SSM-scope rows; attention 0), whatever the
 * facts say the layer is; its name in name (cap bytes). NULL when the layer holds none
 * (name then empty). Used to tell which kind a hybrid's layer really is. */
const st_tensor *facet_tensor_find_mixer(const st_checkpoint *ck, const char *prefix,
                                         int64_t layer, int attention, char *name, size_t cap);

/* facet_tensor_find for per-expert rows: expert `expert`'s tensor of row r. */
const st_tensor *facet_tensor_find_expert(const st_checkpoint *ck, const facet_tensor_row *r,
                                          const char *prefix, int64_t layer, int64_t expert,
                                          char *name, size_t cap);

/* Whether layer `layer`'s q_norm spans the whole projection (num_attention_heads *
 * head_dim elements, and that is not head_dim) rather than one head: its length says. */
int facet_tensor_qk_norm_full(const st_checkpoint *ck, const facet_facts *f, const char *prefix,
                              int64_t layer);

#endif
