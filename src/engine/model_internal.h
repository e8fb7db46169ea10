/*
 * model_internal.h — the loaded model and session as the engine sees them.
 * Shapes use the names of src/model/facts.h: H = hidden_size, I = intermediate_size,
 * V = vocab_size, L = num_hidden_layers, nh = num_attention_heads,
 * nkv = num_key_value_heads, hd = head_dim.
 */
#ifndef FACET_ENGINE_MODEL_INTERNAL_H
#define FACET_ENGINE_MODEL_INTERNAL_H

#include "facet.h"
#include "kernels/cpu/kernels.h"
#include "model/facts.h"

/* One decoder layer's weights. Matrices are facet_wtensor in the run-time format,
 * PyTorch nn.Linear layout (out, in); norms and biases are float32 vectors. Optional
 * tensors are NULL (vectors) or have data == NULL (matrices) when the facts say the
 * checkpoint does not have them. */
typedef struct facet_layer_weights {
    float *input_layernorm;     /* (H)                                                 */
    facet_wtensor q_proj, k_proj, v_proj; /* (nh*hd, H), (nkv*hd, H), (nkv*hd, H)      */
    float *q_bias, *k_bias, *v_bias; /* (nh*hd), (nkv*hd), (nkv*hd)  when qkv_bias     */
    facet_wtensor o_proj;       /* (H, nh*hd)                                          */
    float *o_bias;              /* (H)                               when o_bias       */
    float *q_norm, *k_norm;     /* (hd)                              when qk_norm      */
    float *post_attention_layernorm; /* (H)                                            */
    facet_wtensor gate_proj, up_proj; /* (I, H)                                        */
    facet_wtensor down_proj;    /* (H, I)                                              */
} facet_layer_weights;

typedef struct facet_weights {
    facet_wtensor embed_tokens; /* (V, H)                                              */
    facet_layer_weights *layers;/* [L]                                                 */
    float *norm;                /* (H)                                                 */
    facet_wtensor lm_head;      /* (V, H); shares embed_tokens' data when tied          */
    int lm_head_tied;
    uint64_t bytes;             /* run-time bytes of all tensors (tied lm_head once)   */
} facet_weights;

struct facet_model {
    facet_facts facts;
    facet_weights w;
    facet_pool *pool;
    facet_tokenizer *tokenizer;    /* NULL when the folder has no tokenizer.json       */
    /* RoPE tables computed once from the facts (see rope.c) */
    int rope_dim;                  /* rotary dims of a head (partial_rotary_factor)    */
    float *inv_freq;               /* [rope_dim / 2]                                   */
    float rope_attention_scale;    /* cos/sin multiplier (yarn); 1 otherwise           */
};

/* KV cache of one sequence: per layer, K and V rows of nkv*hd floats for positions
 * 0..len-1; capacity grows on demand (doubling) up to the session's n_ctx. */
typedef struct facet_seq_cache {
    int len;                       /* tokens in the cache                              */
    int cap;                       /* positions allocated per layer                    */
    float **k, **v;                /* [L] -> (cap, nkv*hd)                             */
} facet_seq_cache;

struct facet_session {
    facet_model *model;
    int n_seq_max;
    int n_ctx;
    facet_seq_cache *seqs;         /* [n_seq_max]                                      */
    /* scratch for a batch of up to `scratch_rows` entries, grown on demand */
    int scratch_rows;
    float *x, *xn, *q, *k, *v, *att_out, *gate, *up, *scores;
    int *pos;                      /* [scratch_rows] position of each entry            */
    float *rope_cos, *rope_sin;    /* [scratch_rows][rope_dim/2]                       */
};

/* Compute inv_freq and the attention scale of RoPE from the facts (rope.c). */
facet_status facet_rope_init(facet_model *m, facet_error *err);

/* Fill cos/sin (rope_dim/2 each) for absolute position `pos` (rope.c). */
void facet_rope_cos_sin(const facet_model *m, int pos, float *cos, float *sin);

/* Read, validate and convert every tensor of the checkpoint into m->w, weight
 * matrices in `format` (weights.c). */
struct st_checkpoint;
facet_status facet_weights_load(facet_model *m, const struct st_checkpoint *ck,
                                facet_wformat format, facet_error *err);

/* Free m->w (weights.c). */
void facet_weights_free(facet_model *m);

#endif
