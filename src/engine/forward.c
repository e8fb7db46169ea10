/*
 * forward.c — the decoder forward pass over a batch of (sequence, token) entries.
 *
 * Follows transformers' decoder-only modeling code (modeling_llama.py and the families
 * that share its skeleton: qwen2, qwen3, mistral, gemma, gemma2, gemma3, phi3, olmo2,
 * granite). Per layer, with every variation a fact of src/model/facts.h:
 *
 *   attention block                          ffn block
 *   h = RMSNorm_in(x)        [pre_norms]     h = RMSNorm(x)        [pre_norms]
 *   q,k,v = h W^T (+ bias)   [qkv_bias]      h = down(act(gate h) * up h) (+ biases)
 *                                            [mlp_bias]
 *   q,k = RMSNorm per head or over the       h = RMSNorm_post(h)   [post_norms]
 *         projection         [qk_norm]       x = x + h * residual_multiplier
 *   RoPE(q, k) at the position (global or local table)  [not on no_rope layers]
 *   a = softmax(softcap(q k^T * scale) + causal / window mask) v   (GQA)
 *   h = a W_o^T (+ bias)     [o_bias]
 *   h = RMSNorm_post(h)      [post_norms]
 *   x = x + h * residual_multiplier
 *
 *   x0 = embed_tokens[token] * embedding_multiplier;  logits = softcap(RMSNorm(x) W_lm^T
 *   / logits_scaling).  RMSNorm multiplies by (offset + w), offset = norm_weight_offset.
 *
 * No branch tests a model's name. All entries of the batch share one sweep over each
 * weight matrix (facet_matmul).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model_internal.h"
#include "kernels/cpu/kernels.h"
#include "util/error.h"

facet_status facet_session_scratch(facet_session *s, int rows, facet_error *err);

typedef struct {
    facet_session *s;
    const int32_t *seq_ids;
    int layer;
} attn_job;

/* One (entry, head) of attention over the entry's sequence cache: positions 0..pos, or
 * pos-w+1..pos on a sliding layer (transformers' sliding mask admits kv positions j with
 * pos - j < w). */
static void attn_task(void *ctx, int task, int thread) {
    const attn_job *j = ctx;
    facet_session *s = j->s;
    const facet_facts *f = &s->model->facts;
    int nh = (int)f->num_attention_heads, hd = (int)f->head_dim;
    int group = (int)(f->num_attention_heads / f->num_key_value_heads);
    int kvd = (int)(f->num_key_value_heads * hd);
    int r = task / nh, h = task % nh;
    int pos = s->pos[r];
    int first = 0;
    if (f->layer_sliding[j->layer] && f->sliding_window > 0 && pos - f->sliding_window + 1 > 0)
        first = (int)(pos - f->sliding_window + 1);
    const facet_kv_seq *c = &s->kv.seqs[j->seq_ids[r]];
    const float *q = s->q + (size_t)r * nh * hd + (size_t)h * hd;
    size_t kv_off = (size_t)(h / group) * hd;
    float *scores = s->scores + (size_t)thread * s->n_ctx;
    float scale = (float)f->attn_scale;
    float cap = (float)f->attn_logit_softcap;
    int n = pos + 1 - first;
    /* on a ring layer the chunk's own positions (>= base) are read from the scratch:
     * the ring still holds the window before the chunk and is written afterwards */
    int ring = facet_kv_is_ring(&s->kv, j->layer);
    int base = ring ? s->chunk_base[r] : pos + 1;
    const int *rows = s->chunk_order + s->chunk_group[r];
    /* a cache row of a 16-bit KV type is widened into this thread's buffer first */
    float *wide = s->attn_scratch + (size_t)thread * s->attn_scratch_floats;
    int kvh = h / group;
    for (int t = 0; t < n; t++) {
        int p = first + t;
        const float *K;
        if (p >= base) {
            K = s->k + (size_t)rows[p - base] * kvd + kv_off;
        } else {
            const uint8_t *key = facet_kv_key(&s->kv, c, j->layer, kvh, p);
            facet_kv_load_strided(key, s->kv.type, wide, hd, FACET_KV_GROUP);
            K = wide;
        }
        float sc = facet_dot_f32(q, K, hd) * scale;
        if (cap > 0) sc = tanhf(sc / cap) * cap;
        scores[t] = sc;
    }
    facet_softmax(scores, n);
    float *out = s->att_out + (size_t)r * nh * hd + (size_t)h * hd;
    memset(out, 0, sizeof(float) * (size_t)hd);
    for (int t = 0; t < n; t++) {
        int p = first + t;
        const float *V;
        if (p >= base) {
            V = s->v + (size_t)rows[p - base] * kvd + kv_off;
        } else {
            const uint8_t *row = facet_kv_value(&s->kv, c, j->layer, kvh, p);
            facet_kv_load(row, s->kv.type, wide, hd);
            V = wide;
        }
        facet_axpy_f32(out, scores[t], V, hd);
    }
}

/* Group the chunk's entries by sequence (position order kept) for attn_task. */
static void group_chunk(facet_session *s, const int32_t *seq_ids, int n) {
    int k = 0;
    s->n_groups = 0;
    s->groups_contiguous = 1;
    for (int r = 0; r < n; r++) s->chunk_group[r] = -1;
    for (int r = 0; r < n; r++) {
        if (s->chunk_group[r] >= 0) continue;
        int start = k;
        for (int q = r; q < n; q++)
            if (seq_ids[q] == seq_ids[r]) {
                s->chunk_group[q] = start;
                s->chunk_base[q] = s->pos[r];
                s->chunk_order[k++] = q;
            }
        s->group_row[s->n_groups] = r;
        s->group_len[s->n_groups] = k - start;
        if (s->chunk_order[k - 1] != r + (k - start) - 1) s->groups_contiguous = 0;
        s->n_groups++;
    }
}

/* One (sequence group, head) of causal attention with the blocked online-softmax kernel:
 * all of the group's queries read each key block once (prefill). A group of one entry
 * (decode) is run per KV head instead: that head's query heads are the query set, so
 * the cache is streamed once per KV head rather than once per query head (GQA). Used on
 * layers without a window or softcap, where every entry attends positions 0..pos. */
static void group_attn_task(void *ctx, int task, int thread) {
    const attn_job *j = ctx;
    facet_session *s = j->s;
    const facet_facts *f = &s->model->facts;
    int nh = (int)f->num_attention_heads, hd = (int)f->head_dim;
    int group = (int)(f->num_attention_heads / f->num_key_value_heads);
    size_t qd = (size_t)nh * hd;
    int g = task / nh, h = task % nh;
    int r0 = s->group_row[g], n_q = s->group_len[g];
    const facet_kv_seq *c = &s->kv.seqs[j->seq_ids[r0]];
    /* the head's first key group and value row */
    const uint8_t *K = facet_kv_key(&s->kv, c, j->layer, h / group, 0);
    const uint8_t *V = facet_kv_value(&s->kv, c, j->layer, h / group, 0);
    float *scratch = s->attn_scratch + (size_t)thread * s->attn_scratch_floats;
    const float *q = s->q + r0 * qd + (size_t)h * hd;
    float *out = s->att_out + r0 * qd + (size_t)h * hd;
    if (n_q == 1) { /* decode: the first query head of each KV head does its group */
        if (h % group) return;
        int *pos = s->attn_pos + (size_t)thread * nh;
        for (int i = 0; i < group; i++) pos[i] = s->pos[r0];
        facet_attention_causal(q, (size_t)hd, pos, group, K, V, s->kv.type, (size_t)hd, hd,
                               (float)f->attn_scale, out, (size_t)hd, scratch);
        return;
    }
    facet_attention_causal(q, qd, s->pos + r0, n_q, K, V, s->kv.type, (size_t)hd, hd,
                           (float)f->attn_scale, out, qd, scratch);
}

/* ---- per-entry (row) steps between the matmuls ----
 * Each row's arithmetic is independent of the others and of how rows are split over
 * threads, so spreading them over the pool keeps batch invariance. */

/* Below this many rows the steps run on the calling thread (decode: a pool run would
 * cost more than the work). */
#define ROWS_PARALLEL 8

typedef void (*row_fn)(facet_session *s, int l, int r);
typedef struct {
    facet_session *s;
    int l, n, per;
    row_fn fn;
} rows_job;

static void rows_task(void *ctx, int task, int thread) {
    (void)thread;
    const rows_job *j = ctx;
    int r1 = (task + 1) * j->per < j->n ? (task + 1) * j->per : j->n;
    for (int r = task * j->per; r < r1; r++) j->fn(j->s, j->l, r);
}

/* fn(s, l, r) for every entry r < n of layer l, over the pool when n is large. */
static void for_rows(facet_session *s, int l, int n, row_fn fn) {
    facet_pool *pool = s->model->pool;
    if (!pool || n < ROWS_PARALLEL) {
        for (int r = 0; r < n; r++) fn(s, l, r);
        return;
    }
    int tasks = facet_pool_size(pool) * 4;
    rows_job j = {s, l, n, (n + tasks - 1) / tasks, fn};
    facet_pool_run(pool, (n + j.per - 1) / j.per, rows_task, &j);
}

/* y = RMSNorm(x) of one row of H (w == NULL: copy through). */
static void norm_row(const facet_facts *f, float *y, const float *x, const float *w) {
    int H = (int)f->hidden_size;
    if (w)
        facet_rmsnorm(y, x, w, H, f->rms_norm_eps, (float)f->norm_weight_offset);
    else if (y != x)
        memcpy(y, x, sizeof(float) * (size_t)H);
}

/* x += h * mult over one row of H. */
static void residual_row(const facet_facts *f, float *x, const float *h) {
    float mult = (float)f->residual_multiplier;
    int H = (int)f->hidden_size;
    if (mult == 1.0f)
        for (int i = 0; i < H; i++) x[i] += h[i];
    else
        for (int i = 0; i < H; i++) x[i] += h[i] * mult;
}

/* The attention block's input norm: xn = RMSNorm_in(x). */
static void in_norm_row(facet_session *s, int l, int r) {
    const facet_facts *f = &s->model->facts;
    size_t H = (size_t)f->hidden_size;
    norm_row(f, s->xn + r * H, s->x + r * H, s->model->w.layers[l].input_layernorm);
}

static void store_kv_row(facet_session *s, int l, int r);

/* q/k norm and RoPE of one entry; its K/V row goes into the cache on global layers. */
static void qk_row(facet_session *s, int l, int r) {
    facet_model *m = s->model;
    const facet_facts *f = &m->facts;
    const facet_layer_weights *L = &m->w.layers[l];
    int nh = (int)f->num_attention_heads, nkv = (int)f->num_key_value_heads, hd = (int)f->head_dim;
    int qd = nh * hd, kvd = nkv * hd, half = m->rope_dim / 2;
    float off = (float)f->norm_weight_offset;
    int local = m->inv_freq_local && f->layer_sliding[l];
    float *q = s->q + (size_t)r * qd, *k = s->k + (size_t)r * kvd;
    if (L->q_norm && L->qk_norm_full) { /* OLMo 2: over the whole projection */
        facet_rmsnorm(q, q, L->q_norm, qd, f->rms_norm_eps, off);
        facet_rmsnorm(k, k, L->k_norm, kvd, f->rms_norm_eps, off);
    } else if (L->q_norm) { /* Qwen 3, Gemma 3: over each head */
        for (int h = 0; h < nh; h++)
            facet_rmsnorm(q + h * hd, q + h * hd, L->q_norm, hd, f->rms_norm_eps, off);
        for (int h = 0; h < nkv; h++)
            facet_rmsnorm(k + h * hd, k + h * hd, L->k_norm, hd, f->rms_norm_eps, off);
    }
    const float *cs = (local ? s->rope_cos_local : s->rope_cos) + (size_t)r * half;
    const float *sn = (local ? s->rope_sin_local : s->rope_sin) + (size_t)r * half;
    if (!f->layer_no_rope[l]) { /* SmolLM3's NoPE layers attend without positions */
        facet_rope_apply(q, nh, hd, m->rope_dim, cs, sn);
        facet_rope_apply(k, nkv, hd, m->rope_dim, cs, sn);
    }
    /* a bf16 cache is bf16 attention: the query is rounded like the keys, so each score
     * is a sum of exact products of bf16 values (FlashAttention's bf16 arithmetic), on
     * every path; on AVX512-BF16 the blocked kernel takes them from vdpbf16ps */
    if (s->kv.type == FACET_KV_BF16) facet_kv_round(q, s->kv.type, qd);
    if (!facet_kv_is_ring(&s->kv, l)) {
        store_kv_row(s, l, r);
    } else if (s->kv.type != FACET_KV_F32) {
        /* a ring layer's attention reads this chunk's rows from the scratch: round them
         * as the cache will hold them, so the result does not depend on chunking */
        facet_kv_round(k, s->kv.type, kvd);
        facet_kv_round(s->v + (size_t)r * kvd, s->kv.type, kvd);
    }
}

/* After o_proj (in xn): the post-attention norm (sandwich families), the residual, then
 * the FFN's input norm into xn: pre_feedforward_layernorm in sandwich-norm families,
 * post_attention_layernorm in pre-norm ones, none in OLMo 2. */
static void attn_out_row(facet_session *s, int l, int r) {
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[l];
    size_t H = (size_t)f->hidden_size;
    float *x = s->x + r * H, *xn = s->xn + r * H;
    if (f->post_norms) norm_row(f, xn, xn, L->post_attention_layernorm);
    residual_row(f, x, xn);
    const float *pre = f->post_norms ? L->pre_feedforward_layernorm : L->post_attention_layernorm;
    norm_row(f, xn, x, f->pre_norms ? pre : NULL);
}

/* gate = act(gate) * up over one row of intermediate_size. */
static void act_row(facet_session *s, int l, int r) {
    (void)l;
    const facet_facts *f = &s->model->facts;
    size_t I = (size_t)f->intermediate_size;
    facet_gated_act(s->gate + r * I, s->up + r * I, (int)I, (int)f->act);
}

/* After down_proj (in xn): the post-FFN norm (sandwich families) and the residual. */
static void ffn_out_row(facet_session *s, int l, int r) {
    const facet_facts *f = &s->model->facts;
    size_t H = (size_t)f->hidden_size;
    float *x = s->x + r * H, *xn = s->xn + r * H;
    if (f->post_norms) norm_row(f, xn, xn, s->model->w.layers[l].post_feedforward_layernorm);
    residual_row(f, x, xn);
}

/* Store entry r's K/V row (after norm and RoPE) into its sequence's cache. */
static void store_kv_row(facet_session *s, int l, int r) {
    size_t kvd = (size_t)(s->model->facts.num_key_value_heads * s->model->facts.head_dim);
    facet_kv_cache_store(&s->kv, s->seq_ids[r], l, s->pos[r], s->k + r * kvd, s->v + r * kvd);
}

/* Attention block of layer l for entries [0, n): reads s->x, adds into s->x. */
static void attention_block(facet_session *s, const int32_t *seq_ids, int n, int l) {
    facet_model *m = s->model;
    const facet_facts *f = &m->facts;
    const facet_layer_weights *L = &m->w.layers[l];
    int nh = (int)f->num_attention_heads;

    /* xn holds RMSNorm_in(x): the previous layer's ffn_out / the embeddings' in_norm */
    { /* q, k and v in one sweep: one activation prep, one pool run */
        float *const y[3] = {s->q, s->k, s->v};
        const facet_wtensor *const w[3] = {&L->q_proj, &L->k_proj, &L->v_proj};
        const float *const b[3] = {L->q_bias, L->k_bias, L->v_bias};
        facet_matmul_multi(m->pool, 3, y, s->xn, w, b, n);
    }
    for_rows(s, l, n, qk_row); /* + the K/V store on global layers */
    int ring = facet_kv_is_ring(&s->kv, l);
    attn_job aj = {s, seq_ids, l};
    if (!f->layer_sliding[l] && f->attn_logit_softcap == 0 && s->groups_contiguous)
        facet_pool_run(m->pool, s->n_groups * nh, group_attn_task, &aj);
    else
        facet_pool_run(m->pool, n * nh, attn_task, &aj);
    if (ring) for_rows(s, l, n, store_kv_row); /* after attention: see attn_task */
    facet_matmul(m->pool, s->xn, s->att_out, &L->o_proj, L->o_bias, n);
    for_rows(s, l, n, attn_out_row); /* leaves the FFN's input in xn */
}

/* Feed-forward block of layer l for entries [0, n): reads s->x, adds into s->x. */
static void ffn_block(facet_session *s, int n, int l) {
    facet_model *m = s->model;
    const facet_layer_weights *L = &m->w.layers[l];
    /* xn holds the FFN's input norm (attn_out_row) */
    { /* gate and up in one sweep */
        float *const y[2] = {s->gate, s->up};
        const facet_wtensor *const w[2] = {&L->gate_proj, &L->up_proj};
        const float *const b[2] = {L->gate_bias, L->up_bias};
        facet_matmul_multi(m->pool, 2, y, s->xn, w, b, n);
    }
    for_rows(s, l, n, act_row);
    facet_matmul(m->pool, s->xn, s->gate, &L->down_proj, L->down_bias, n);
    for_rows(s, l, n, ffn_out_row);
}

/* Run entries [0, n) (already validated; positions assigned in s->pos). Writes the
 * final hidden states to s->x. */
static void forward_layers(facet_session *s, const int32_t *tokens, const int32_t *seq_ids,
                           int n) {
    facet_model *m = s->model;
    const facet_facts *f = &m->facts;
    int H = (int)f->hidden_size, half = m->rope_dim / 2;

    /* embeddings (Gemma: times sqrt(hidden_size) rounded to float32; Granite:
     * embedding_multiplier) */
    float emb_mult = (float)f->embedding_multiplier;
    for (int r = 0; r < n; r++) {
        float *x = s->x + (size_t)r * H;
        facet_wtensor_row(&m->w.embed_tokens, tokens[r], x);
        if (emb_mult != 1.0f)
            for (int i = 0; i < H; i++) x[i] *= emb_mult;
    }
    /* rotary tables for each entry's position */
    for (int r = 0; r < n; r++) {
        const float *inv = s->rope_long[seq_ids[r]] ? m->inv_freq_long : m->inv_freq;
        facet_rope_cos_sin(m, inv, m->rope_attention_scale, s->pos[r],
                           s->rope_cos + (size_t)r * half, s->rope_sin + (size_t)r * half);
        if (m->inv_freq_local)
            facet_rope_cos_sin(m, m->inv_freq_local, 1.0f, s->pos[r],
                               s->rope_cos_local + (size_t)r * half,
                               s->rope_sin_local + (size_t)r * half);
    }
    group_chunk(s, seq_ids, n);
    s->seq_ids = seq_ids;
    for (int l = 0; l < f->num_hidden_layers; l++) {
        for_rows(s, l, n, in_norm_row);
        attention_block(s, seq_ids, n, l);
        ffn_block(s, n, l);
    }
}

/* Final norm, lm_head, logits scaling and softcap for the entries that want logits. */
static void forward_logits(facet_session *s, const uint8_t *want, int n, float *logits) {
    facet_model *m = s->model;
    const facet_facts *f = &m->facts;
    int H = (int)f->hidden_size;
    size_t V = (size_t)f->vocab_size;
    int k = 0;
    for (int r = 0; r < n; r++) {
        if (want && !want[r]) continue;
        facet_rmsnorm(s->xn + (size_t)k * H, s->x + (size_t)r * H, m->w.norm, H, f->rms_norm_eps,
                      (float)f->norm_weight_offset);
        k++;
    }
    if (!k) return;
    facet_matmul(m->pool, logits, s->xn, &m->w.lm_head, NULL, k);
    float inv_scale = (float)(1.0 / f->logits_scaling);
    float cap = (float)f->final_logit_softcap;
    if (inv_scale != 1.0f || cap > 0)
        for (size_t i = 0; i < (size_t)k * V; i++) {
            float v = logits[i] * inv_scale;
            logits[i] = cap > 0 ? tanhf(v / cap) * cap : v;
        }
}

facet_status facet_forward(facet_session *s, const facet_batch *b, float *logits,
                           facet_error *err) {
    facet_model *m = s->model;
    const facet_facts *f = &m->facts;
    if (!b || b->n_tokens < 0 || (b->n_tokens > 0 && (!b->tokens || !b->seq_ids)))
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "batch: missing tokens or sequence ids");
    int n = b->n_tokens;
    /* validate everything and count each sequence's new tokens before applying anything */
    int *added = s->seq_added; /* session-owned: no allocation per step */
    memset(added, 0, sizeof(int) * (size_t)s->n_seq_max);
    facet_status st = FACET_OK;
    for (int i = 0; i < n && st == FACET_OK; i++) {
        int seq = b->seq_ids[i];
        if (seq < 0 || seq >= s->n_seq_max)
            st = facet_err(err, FACET_E_INVALID_ARGUMENT,
                           "batch entry %d: sequence id %d out of range [0, %d)", i, seq,
                           s->n_seq_max);
        else if (b->tokens[i] < 0 || b->tokens[i] >= f->vocab_size)
            st = facet_err(err, FACET_E_INVALID_ARGUMENT,
                           "batch entry %d: token id %d out of range [0, %lld)", i, b->tokens[i],
                           (long long)f->vocab_size);
        else
            added[seq]++;
    }
    for (int q = 0; q < s->n_seq_max && st == FACET_OK; q++)
        if (added[q] && s->kv.seqs[q].len + added[q] > s->n_ctx)
            st = facet_err(err, FACET_E_CONTEXT,
                           "sequence %d: %d tokens + %d new would exceed the context of %d tokens",
                           q, s->kv.seqs[q].len, added[q], s->n_ctx);
    for (int q = 0; q < s->n_seq_max && st == FACET_OK; q++) {
        if (!added[q]) continue;
        int seq_len = s->kv.seqs[q].len + added[q];
        st = facet_kv_cache_reserve(&s->kv, q, seq_len, err);
        /* longrope: this call's length picks the factors for all of its tokens, as
         * transformers' dynamic_rope_update does per forward call */
        s->rope_long[q] = m->inv_freq_long &&
                          seq_len > f->rope_original_max_position_embeddings;
    }
    if (st != FACET_OK) return st;
    st = facet_session_scratch(s, n < FACET_FORWARD_CHUNK ? n : FACET_FORWARD_CHUNK, err);
    if (st != FACET_OK) return st;

    size_t V = (size_t)f->vocab_size;
    float *out = logits;
    for (int c0 = 0; c0 < n; c0 += FACET_FORWARD_CHUNK) {
        int cn = n - c0 < FACET_FORWARD_CHUNK ? n - c0 : FACET_FORWARD_CHUNK;
        const int32_t *seq_ids = b->seq_ids + c0;
        /* positions: each sequence's next position, in batch order */
        for (int r = 0; r < cn; r++) s->pos[r] = s->kv.seqs[seq_ids[r]].len++;
        forward_layers(s, b->tokens + c0, seq_ids, cn);
        const uint8_t *want = b->want_logits ? b->want_logits + c0 : NULL;
        int k = 0;
        for (int r = 0; r < cn; r++) k += !want || want[r];
        if (k && out) {
            forward_logits(s, want, cn, out);
            out += (size_t)k * V;
        }
    }
    return FACET_OK;
}
