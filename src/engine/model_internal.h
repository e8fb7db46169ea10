/*
 * model_internal.h — the loaded model and session as the engine sees them.
 * Shapes use the names of src/model/facts.h: H = hidden_size, I = intermediate_size,
 * V = vocab_size, L = num_hidden_layers, nh = num_attention_heads,
 * nkv = num_key_value_heads, hd = head_dim.
 */
#ifndef FACET_ENGINE_MODEL_INTERNAL_H
#define FACET_ENGINE_MODEL_INTERNAL_H

#include "facet.h"
#include "engine/kv_cache.h"
#include "kernels/cpu/kernels.h"
#include "model/facts.h"

/* Largest number of batch entries run through the layers at once; longer batches (long
 * prompts) are processed in chunks of this size, which bounds the scratch memory. */
#define FACET_FORWARD_CHUNK 256

/* One routed expert of a mixture-of-experts layer: down(act(gate h) * up h), EI =
 * moe_intermediate_size. */
typedef struct facet_expert {
    facet_wtensor gate, up;     /* (EI, H)                                             */
    facet_wtensor down;         /* (H, EI)                                             */
    float *gate_bias, *up_bias; /* (EI)                               when moe_biases  */
    float *down_bias;           /* (H)                                                 */
} facet_expert;

/* One decoder layer's weights. Matrices are facet_wtensor in the run-time format,
 * PyTorch nn.Linear layout (out, in); norms and biases are float32 vectors. Optional
 * tensors are NULL (vectors) or have data == NULL (matrices) when the facts say the
 * checkpoint does not have them. */
typedef struct facet_layer_weights {
    float *input_layernorm;     /* (H)                               when pre_norms    */
    float *input_layernorm_bias, *post_attention_layernorm_bias; /* (H) when norm_bias */
    facet_wtensor q_proj, k_proj, v_proj; /* (nh*hd, H), (nkv*hd, H), (nkv*hd, H)      */
    float *q_bias, *k_bias, *v_bias; /* (nh*hd), (nkv*hd), (nkv*hd)  when qkv_bias     */
    facet_wtensor o_proj;       /* (H, nh*hd)                                          */
    float *o_bias;              /* (H)                               when o_bias       */
    float *q_norm, *k_norm;     /* (hd) per head, or (nh*hd) / (nkv*hd) over the whole
                                   projection (OLMo 2)                when qk_norm      */
    int qk_norm_full;           /* 1: q_norm/k_norm span the whole projection           */
    float *sinks;               /* (nh) attention sinks               when attn_sinks  */
    float *post_attention_layernorm; /* (H): before the FFN (pre-norm families), or on
                                   the attention output (post_norms: Gemma 2/3, OLMo 2) */
    float *pre_feedforward_layernorm;  /* (H)  when post_norms and pre_norms (Gemma 2/3) */
    float *post_feedforward_layernorm; /* (H)  when post_norms                          */
    facet_wtensor gate_proj, up_proj; /* (I, H)                                        */
    facet_wtensor down_proj;    /* (H, I)                                              */
    float *gate_bias, *up_bias; /* (I)                               when mlp_bias     */
    float *down_bias;           /* (H)                               when mlp_bias     */
    /* a mixture-of-experts layer (facts layer_sparse) has these instead of the dense
     * FFN's: E = num_experts, SI = shared_expert_intermediate_size */
    facet_wtensor router;       /* (E, H), float32                                     */
    float *router_bias;         /* (E)                                when moe_biases  */
    facet_expert *experts;      /* [E], NULL on dense layers                           */
    facet_wtensor shared_gate, shared_up; /* (SI, H)                  when SI > 0       */
    facet_wtensor shared_down;  /* (H, SI)                                             */
    facet_wtensor shared_expert_gate; /* (1, H)                       shared_expert_gate */
    /* a Mamba layer (facts layer_ssm; DI = ssm_inner, N = ssm_state_size, K =
     * ssm_conv_kernel, R = ssm_dt_rank): input_layernorm is its norm, and no other
     * field above is set */
    facet_wtensor ssm_in_proj;  /* (2 DI, H): x rows, then z rows                      */
    float *ssm_conv_w;          /* (DI, K) depthwise causal conv1d                     */
    float *ssm_conv_b;          /* (DI)                               use_conv_bias    */
    facet_wtensor ssm_x_proj;   /* (R + 2N, DI): dt rows, B rows, C rows               */
    facet_wtensor ssm_dt_proj;  /* (DI, R)                                             */
    float *ssm_dt_bias;         /* (DI)                                                */
    float *ssm_a_log;           /* (DI, N); A = -exp(A_log)                            */
    float *ssm_d;               /* (DI)                                                */
    facet_wtensor ssm_out_proj; /* (H, DI)                                             */
    float *ssm_dt_norm;         /* (R) RMSNorm weight of dt       facts ssm_dbc_norm    */
    float *ssm_b_norm;          /* (N) of B                       facts ssm_dbc_norm    */
    float *ssm_c_norm;          /* (N) of C                       facts ssm_dbc_norm    */
    facet_wtensor ssm_ba;       /* (2 NH, H) Qwen3-Next's in_proj_ba (ssm_version 4)   */
    /* Mamba-2 (CD = DI + 2 G N conv channels, NH heads): in_proj is (2 DI + 2 G N + NH,
     * H): z, then x B C (the conv's input), then dt; conv is (CD, K); dt_bias, A_log and
     * D are (NH); x_proj and dt_proj are absent */
    float *ssm_gnorm;           /* (DI) the gated RMSNorm's weight (per group of DI / G) */
    float *ssm_in_bias;         /* (2 DI + 2 G N + NH) in_proj's bias      ssm_in_bias   */
    float *ssm_out_bias;        /* (H) out_proj's bias                     ssm_out_bias  */
    /* a latent-attention layer (facts kv_lora_rank > 0; QL = q_lora_rank, C =
     * kv_lora_rank, dn/dr/dv = qk_nope/qk_rope/v_head_dim): q_proj is (nh (dn + dr), H)
     * when QL is 0, o_proj (H, nh dv); k/v_proj are absent */
    facet_wtensor q_a_proj;     /* (QL, H)                            QL > 0           */
    float *q_a_norm;            /* (QL)                               QL > 0           */
    facet_wtensor q_b_proj;     /* (nh (dn + dr), QL)                 QL > 0           */
    facet_wtensor kv_a_proj;    /* (C + dr, H): the latent, then the shared rope key    */
    float *kv_a_norm;           /* (C)                                                 */
    facet_wtensor kv_b_proj;    /* (nh (dn + dv), C): per head dn key rows, dv value rows */
    float *kv_b_f32;            /* kv_b_proj's values as float32 (the run-time format's,
                                   widened), owned: the absorbed attention reads it by
                                   columns and rows (mixer_mla.c)                      */
    float *router_score_bias;   /* (E) e_score_correction_bias        moe_score_bias   */
} facet_layer_weights;

typedef struct facet_weights {
    facet_wtensor embed_tokens; /* (V, H)                                              */
    facet_layer_weights *layers;/* [L]                                                 */
    float *norm;                /* (H)                                                 */
    float *norm_bias;           /* (H)                               when norm_bias    */
    float *lm_head_bias;        /* (V)                               when lm_head_bias */
    facet_wtensor pos_embed;    /* (max_position_embeddings, H) learned positions (GPT-2
                                   wpe); data NULL otherwise                            */
    float *embed_norm, *embed_norm_bias; /* (H) the embeddings' LayerNorm  when embed_norm */
    facet_wtensor lm_head;      /* (V, H); shares embed_tokens' data when tied          */
    int lm_head_tied;
    uint64_t bytes;             /* run-time bytes of all tensors (tied lm_head once)   */
    struct wcache_file *cache;  /* non-NULL: every tensor above points into this weight
                                   cache mapping (read-only) and is not freed alone    */
    facet_warena arena;         /* GGUF block matrices (kept or repacked) lie here, on
                                   huge pages, freed with it, not alone                */
} facet_weights;

struct facet_model {
    facet_facts facts;
    facet_weight_format weights;   /* run-time format of the weight matrices           */
    facet_weights w;
    facet_pool *pool;
    facet_tokenizer *tokenizer;    /* NULL when the folder has no tokenizer.json       */
    /* RoPE tables computed once from the facts (see rope.c) */
    int rope_dim;                  /* rotary dims of a head (partial_rotary_factor)    */
    float *inv_freq;               /* [rope_dim / 2] global layers                     */
    float *inv_freq_long;          /* [rope_dim / 2] longrope long factors, else NULL  */
    float *inv_freq_local;         /* [rope_dim / 2] sliding layers when they have their
                                      own base (rope_local_base_freq), else NULL        */
    float rope_attention_scale;    /* cos/sin multiplier (yarn, longrope); 1 otherwise */
    float *alibi_slopes;           /* [nh] ALiBi slope per head (facts alibi), else NULL */
    facet_weight_cache wcache;     /* what the weight cache did (facet.h)              */
    char *wcache_path;             /* the cache file used or written, or NULL          */
    char *wcache_note;             /* one line for the user, or NULL                   */
    /* a pipeline stage (facet_load_options): layers [layer_first, layer_end) are loaded
     * (0, L for a whole model); stage_inner: no embeddings, final norm or lm_head */
    int layer_first, layer_end, stage_inner;
    /* tensor parallel: this rank's share (tp_rank of tp) of every layer; the facts then
     * count the share's heads and FFN width (weights_tp.c) */
    int tp, tp_rank;
    const char *backend;           /* "cpu" or "vulkan" (static)                       */
    struct facet_device *device;   /* the Vulkan backend's device, or NULL (backend.h)  */
    char device_line[640];         /* its description and the device verdict's note
                                      (facet_model_info.device_note)                    */
};

struct facet_session {
    facet_model *model;
    int n_seq_max;
    int n_ctx;
    facet_kv_cache kv;             /* every sequence's KV cache (kv_cache.h)           */
    struct facet_backend *be;      /* the operations, resolved at creation (backend.h) */
    /* each layer's kinds, chosen from the facts at creation (layer.h) */
    const struct facet_mixer_kind **mixers; /* [L]                                       */
    const struct facet_ffn_kind **ffns;     /* [L]                                       */
    /* Batch scratch, for a chunk of up to `scratch_rows` entries (R below), grown on
     * demand by facet_session_scratch to what a batch needs (at most FACET_FORWARD_CHUNK
     * rows). Contents live for one facet_forward call. */
    int scratch_rows;
    float *x;                      /* (R, H) hidden states, the residual stream        */
    float *xn;                     /* (R, H) a block's normed input, then its output   */
    float *xp;                     /* (R, H) the FFN's normed input while the mixer runs
                                      (parallel_residual; 0 rows otherwise)              */
    float *q;                      /* (R, nh*hd) queries                               */
    float *k, *v;                  /* (R, nkv*hd) this chunk's keys and values         */
    float *att_out;                /* (R, nh*hd) attention output, before o_proj       */
    float *q_gate;                 /* (R, 2 nh*hd) q_proj's rows with the output gate
                                      (facts attn_output_gate): per head query, gate    */
    float *gate, *up;              /* (R, max(I, EI, SI)) the FFN's gate and up
                                      projections (a dense FFN, one expert's gathered
                                      rows or the shared expert's)                     */
    /* mixture-of-experts layers (ffn_moe.c; E experts, k per token, 0 rows when dense) */
    float *moe_logits;             /* (R, E) router logits, then (R) the shared
                                      expert's gate logits (R * E + 1 floats a row)    */
    int *moe_ids;                  /* (R, k) chosen experts                            */
    float *moe_w;                  /* (R, k) their weights                             */
    int *moe_pair;                 /* (R * k) entry * k + slot, grouped by expert      */
    int *moe_start;                /* (E + 1) where each expert's pairs start          */
    float *moe_x, *moe_y;          /* (R, H) an expert's gathered input, its output    */
    float *moe_in;                 /* (R, H) the layer's input (xn receives the sum)   */
    /* Mamba layers (mixer_mamba.c; 0 rows without one): DI = ssm_inner. Mamba-2
     * (mixer_mamba2.c) uses them as: ssm_xz (R, DI + CD + NH) in_proj's z, xBC, dt;
     * ssm_xc (R, CD) xBC after the conv; ssm_dbc (R, DI) y; ssm_dtin (R, NH) dt */
    float *ssm_xz;                 /* (R, 2 DI) in_proj: x, then the gate z            */
    float *ssm_xc;                 /* (R, DI) x after conv1d + SiLU, then the gated y  */
    float *ssm_dbc;                /* (R, R_dt + 2N) x_proj: dt, B, C                  */
    float *ssm_dtin;               /* (R, R_dt) dt_proj's input (x_proj's dt columns)   */
    float *ssm_dt;                 /* (R, DI) softplus(dt_proj(dt))                    */
    float *ssm_work;               /* (threads x facet_ssm_work_floats) each thread's
                                      conv / scan work area (ssm.h), rows-independent  */
    /* latent-attention layers (mixer_mla.c; 0 rows without one): q holds (R, nh (dn +
     * dr)) queries, k (R, C + dr) kv_a_proj's rows, att_out (R, nh dv) */
    float *mla_q_a;                /* (R, QL) q_a_proj's output                        */
    float *mla_work;               /* (R, facet_mla_row_floats) one entry's attention  */
    float *mla_blk;                /* (threads, facet_mla_thread_floats) a task's      */
                                   /* facet_attention_latent scratch                   */
    int *pos;                      /* (R) position of each entry                       */
    const int32_t *seq_ids;        /* the current chunk's sequence ids (borrowed from
                                      the batch during facet_forward)                  */
    /* the current chunk's entries grouped by sequence, so attention on a sliding layer
     * can read the chunk's own K/V rows from the scratch (see forward.c):
     * chunk_order lists entry indices grouped by sequence in position order;
     * chunk_group[r] is where entry r's group starts in chunk_order;
     * chunk_gid[r] is the index of entry r's group (group_row, group_len) */
    int *chunk_order, *chunk_group, *chunk_gid;
    /* the chunk's sequence groups: group g is entries group_row[g] .. + group_len[g] - 1
     * when groups_contiguous (each sequence's entries adjacent in the batch, as prefill
     * and decode batches are), which lets attention run a whole group per head at once */
    int n_groups, groups_contiguous;
    int *group_row, *group_len;
    /* chunk_order, chunk_group, chunk_gid, group_row, group_len: (R) each */
    float *rope_cos, *rope_sin;    /* (R, max(rope_dim/2, 1)) global layers            */
    float *rope_cos_local, *rope_sin_local; /* same for sliding layers with their own base */
    uint8_t *rope_long;            /* [n_seq_max] longrope: this call uses long factors */
    int par;                       /* 1: one rank of a parallel job (src/parallel): rank 0
                                      drives the others' sessions (session_par.c)       */
    int par_mb;                    /* micro-batches of the current forward call in a
                                      pipeline (rank 0 chooses, the command carries it:
                                      session_par.c); 1: the chunk runs whole            */
    float *par_x;                  /* (R, H) stage 0 of a pipeline: the last stage's
                                      hidden states of a chunk's micro-batches (0 rows
                                      elsewhere)                                       */
    int *seq_added;                /* [n_seq_max] new tokens per sequence in this call   */
};

/* Grow the session's batch scratch to `rows` entries (nothing when it holds them
 * already: no allocation per decode step). On FACET_E_NOMEM the scratch is left empty
 * (scratch_rows 0), the session usable (session.c). */
facet_status facet_session_scratch(facet_session *s, int rows, facet_error *err);

/* Compute inv_freq and the attention scale of RoPE from the facts (rope.c). */
facet_status facet_rope_init(facet_model *m, facet_error *err);

/* Fill cos/sin (rope_dim/2 each) for absolute position `pos` from table inv_freq
 * (one of m's tables), scaled by `scale` (rope.c). */
void facet_rope_cos_sin(const facet_model *m, const float *inv_freq, float scale, int pos,
                        float *cos, float *sin);

/* Read, validate and convert every tensor of checkpoint `ck` (folder `dir`) into m->w,
 * weight matrices in `format`, through the weight cache unless opts->no_cache or
 * FACET_NO_CACHE=1; sets m->wcache, m->wcache_path, m->wcache_note (weights_cache.c). */
struct st_checkpoint;
facet_status facet_weights_load(facet_model *m, const char *dir, const struct st_checkpoint *ck,
                                facet_wformat format, const facet_load_options *opts,
                                facet_error *err);

/* Cut layer l of m->w to tensor rank t of T's share, with m->facts still the whole
 * model's; then, after every layer, make the facts the share's (weights_tp.c). Errors:
 * FACET_E_UNSUPPORTED (a layer no share can compute; a GGUF block type), FACET_E_NOMEM. */
facet_status facet_weights_tp_slice(facet_model *m, int l, int T, int t, facet_error *err);
void facet_weights_tp_facts(facet_facts *f, int T);

/* Free m->w (weights.c). */
void facet_weights_free(facet_model *m);

#endif
