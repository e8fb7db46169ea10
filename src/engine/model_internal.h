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

/* Largest number of batch entries run through the layers at once; longer batches (long
 * prompts) are processed in chunks of this size, which bounds the scratch memory. */
#define FACET_FORWARD_CHUNK 256

/* One decoder layer's weights. Matrices are facet_wtensor in the run-time format,
 * PyTorch nn.Linear layout (out, in); norms and biases are float32 vectors. Optional
 * tensors are NULL (vectors) or have data == NULL (matrices) when the facts say the
 * checkpoint does not have them. */
typedef struct facet_layer_weights {
    float *input_layernorm;     /* (H)                               when pre_norms    */
    facet_wtensor q_proj, k_proj, v_proj; /* (nh*hd, H), (nkv*hd, H), (nkv*hd, H)      */
    float *q_bias, *k_bias, *v_bias; /* (nh*hd), (nkv*hd), (nkv*hd)  when qkv_bias     */
    facet_wtensor o_proj;       /* (H, nh*hd)                                          */
    float *o_bias;              /* (H)                               when o_bias       */
    float *q_norm, *k_norm;     /* (hd) per head, or (nh*hd) / (nkv*hd) over the whole
                                   projection (OLMo 2)                when qk_norm      */
    int qk_norm_full;           /* 1: q_norm/k_norm span the whole projection           */
    float *post_attention_layernorm; /* (H): before the FFN (pre-norm families), or on
                                   the attention output (post_norms: Gemma 2/3, OLMo 2) */
    float *pre_feedforward_layernorm;  /* (H)  when post_norms and pre_norms (Gemma 2/3) */
    float *post_feedforward_layernorm; /* (H)  when post_norms                          */
    facet_wtensor gate_proj, up_proj; /* (I, H)                                        */
    facet_wtensor down_proj;    /* (H, I)                                              */
    float *gate_bias, *up_bias; /* (I)                               when mlp_bias     */
    float *down_bias;           /* (H)                               when mlp_bias     */
} facet_layer_weights;

typedef struct facet_weights {
    facet_wtensor embed_tokens; /* (V, H)                                              */
    facet_layer_weights *layers;/* [L]                                                 */
    float *norm;                /* (H)                                                 */
    facet_wtensor lm_head;      /* (V, H); shares embed_tokens' data when tied          */
    int lm_head_tied;
    uint64_t bytes;             /* run-time bytes of all tensors (tied lm_head once)   */
    struct wcache_file *cache;  /* non-NULL: every tensor above points into this weight
                                   cache mapping (read-only) and is not freed alone    */
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
    facet_weight_cache wcache;     /* what the weight cache did (facet.h)              */
    char *wcache_path;             /* the cache file used or written, or NULL          */
    char *wcache_note;             /* one line for the user, or NULL                   */
};

/* KV cache of one sequence: per layer and KV head, `rows` positions (a multiple of
 * FACET_KV_GROUP): values [row][hd], keys transposed in groups of 16 rows
 * [row / 16][hd][16] (the layout facet_attention_causal reads), elements of the
 * session's kv_type (float32, bf16 or f16, kv_elt bytes each); each head's keys and
 * values are contiguous streams. Global layers
 * hold positions 0..len-1 at row = position, capacity growing on demand (doubling) up
 * to the session's n_ctx. Sliding-window layers hold a ring of exactly sliding_window
 * rows (row = position % window), so their memory is bounded by the window whatever the
 * context: KV bytes = k * (G * min(c, n_ctx) + S * min(c, w)), counts rounded up to whole
 * key groups of 16, as `facet plan` says. */
typedef struct facet_seq_cache {
    int len;                       /* tokens in the cache                              */
    int cap;                       /* positions allocated per global layer (a multiple
                                      of FACET_KV_GROUP)                                 */
    uint8_t **k, **v;              /* [L] -> [nkv][rows x hd] of kv_type (see above)   */
} facet_seq_cache;

struct facet_session {
    facet_model *model;
    int n_seq_max;
    int n_ctx;
    int ring_cap;                  /* rows of a sliding layer's ring (0: no ring)      */
    facet_kv_type kv_type;         /* cache element type (resolved, never AUTO)        */
    size_t kv_elt;                 /* bytes per cache element: 4 or 2                  */
    facet_seq_cache *seqs;         /* [n_seq_max]                                      */
    /* scratch for a batch of up to `scratch_rows` entries, grown on demand */
    int scratch_rows;
    float *x, *xn, *q, *k, *v, *att_out, *gate, *up, *scores;
    int *pos;                      /* [scratch_rows] position of each entry            */
    const int32_t *seq_ids;        /* the current chunk's sequence ids (borrowed from
                                      the batch during facet_forward)                  */
    /* the current chunk's entries grouped by sequence, so attention on a sliding layer
     * can read the chunk's own K/V rows from the scratch (see forward.c):
     * chunk_order lists entry indices grouped by sequence in position order;
     * chunk_group[r] is where entry r's group starts in chunk_order;
     * chunk_base[r] is the position of the first entry of that group */
    int *chunk_order, *chunk_group, *chunk_base;
    /* the chunk's sequence groups: group g is entries group_row[g] .. + group_len[g] - 1
     * when groups_contiguous (each sequence's entries adjacent in the batch, as prefill
     * and decode batches are), which lets attention run a whole group per head at once */
    int n_groups, groups_contiguous;
    int *group_row, *group_len;
    float *attn_scratch;           /* [threads][attn_scratch_floats]                    */
    size_t attn_scratch_floats;    /* FACET_ATTN_SCRATCH(max(rows, heads), head_dim)    */
    int *attn_pos;                 /* [threads][num_attention_heads] query positions     */
    float *rope_cos, *rope_sin;    /* [scratch_rows][rope_dim/2] global layers         */
    float *rope_cos_local, *rope_sin_local; /* same for sliding layers with their own base */
    uint8_t *rope_long;            /* [n_seq_max] longrope: this call uses long factors */
    int *seq_added;                /* [n_seq_max] new tokens per sequence in this call   */
};

/* Row of position `pos` in layer l's cache (ring for sliding layers). */
static inline size_t facet_kv_row(const facet_session *s, int layer, int pos) {
    return (s->ring_cap && s->model->facts.layer_sliding[layer]) ? (size_t)(pos % s->ring_cap)
                                                                   : (size_t)pos;
}

/* Rows allocated per KV head in layer l's buffers of cache c: the ring rounded up to
 * whole key groups on a ring layer, c->cap otherwise. */
static inline size_t facet_kv_rows(const facet_session *s, const facet_seq_cache *c, int layer) {
    if (s->ring_cap && s->model->facts.layer_sliding[layer])
        return ((size_t)s->ring_cap + FACET_KV_GROUP - 1) / FACET_KV_GROUP * FACET_KV_GROUP;
    return (size_t)c->cap;
}

/* Byte offset of position pos's value row (hd contiguous elements) of KV head kvh in
 * layer l's V buffer of cache c. */
static inline size_t facet_v_offset(const facet_session *s, const facet_seq_cache *c, int layer,
                                    int kvh, int pos) {
    size_t hd = (size_t)s->model->facts.head_dim;
    return ((size_t)kvh * facet_kv_rows(s, c, layer) + facet_kv_row(s, layer, pos)) * hd * s->kv_elt;
}

/* Byte offset of element 0 of position pos's key (hd elements FACET_KV_GROUP apart) of
 * KV head kvh in layer l's K buffer of cache c; pos 0 gives the head's first group. */
static inline size_t facet_k_offset(const facet_session *s, const facet_seq_cache *c, int layer,
                                    int kvh, int pos) {
    size_t hd = (size_t)s->model->facts.head_dim, row = facet_kv_row(s, layer, pos);
    return ((size_t)kvh * facet_kv_rows(s, c, layer) * hd +
            row / FACET_KV_GROUP * hd * FACET_KV_GROUP + row % FACET_KV_GROUP) * s->kv_elt;
}

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

/* Free m->w (weights.c). */
void facet_weights_free(facet_model *m);

#endif
