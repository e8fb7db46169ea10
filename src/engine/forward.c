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

/* Group the chunk's entries by sequence (position order kept): the attention kernel
 * runs a sequence's queries together, and a ring layer's view reads the chunk's rows. */
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
                s->chunk_gid[q] = s->n_groups;
                s->chunk_order[k++] = q;
            }
        s->group_row[s->n_groups] = r;
        s->group_len[s->n_groups] = k - start;
        if (s->chunk_order[k - 1] != r + (k - start) - 1) s->groups_contiguous = 0;
        s->n_groups++;
    }
}

/* ---- attention over the cache ----
 * Every layer runs the one blocked kernel (facet_attention) with its window, softcap and
 * scale. Where a group's keys are read from:
 * - global layers, and sliding layers without a ring (window >= context): the
 *   sequence's cache, positions from 0 (each entry's row stored before attention);
 * - a ring layer, a group of one entry (decode): the ring itself, its row stored first
 *   (it overwrites position pos - ring_cap, older than the window);
 * - a ring layer, a group of several entries (prefill): a view, a linear copy of the
 *   ring's rows before the chunk and the chunk's own rows from the scratch (positions
 *   v0 .. last), since the chunk's later rows would overwrite ring rows its earlier
 *   queries still see; the ring is written after attention.
 * The kernel's arithmetic depends only on a query and its keys' values, so the three
 * give the same bits for a query (chunking does not change results). */

typedef struct {
    facet_session *s;
    int layer, g0, g1; /* groups g0 .. g1 - 1 */
} attn_job;

static int ring_layer(const facet_session *s, int l) { return facet_kv_is_ring(&s->kv, l); }

static facet_attn_params attn_params(const facet_session *s, int l) {
    const facet_facts *f = &s->model->facts;
    facet_attn_params P = {.head_dim = (int)f->head_dim, .scale = (float)f->attn_scale,
                           .softcap = (float)f->attn_logit_softcap, .kv_type = s->kv.type,
                           .v_stride = (size_t)f->head_dim, .path = s->attn_path};
    if (f->layer_sliding[l] && f->sliding_window > 0) P.window = (int)f->sliding_window;
    return P;
}

/* A ring layer's view of group g: first position (a multiple of FACET_ATTN_BLOCK) and
 * rows per KV head (whole key groups) up to the group's last entry. */
static int view_first(const facet_session *s, int g) {
    int base = s->pos[s->group_row[g]];
    int w = (int)s->model->facts.sliding_window;
    return (base - w + 1 > 0 ? base - w + 1 : 0) / FACET_ATTN_BLOCK * FACET_ATTN_BLOCK;
}
static size_t view_rows(const facet_session *s, int g) {
    int last = s->pos[s->group_row[g]] + s->group_len[g] - 1;
    return (size_t)(last - view_first(s, g) + FACET_KV_GROUP) / FACET_KV_GROUP * FACET_KV_GROUP;
}

/* Build the view of (group, KV head) task = g * nkv + kvh for the groups of job j that
 * need one: key groups and value rows before the chunk copied from the ring (those
 * older than the ring holds are other positions' finite rows, weighted 0 by the
 * kernel), the chunk's rows stored from the scratch (already rounded to the cache's
 * type, so stored exactly). */
static void view_task(void *ctx, int task, int thread) {
    (void)thread;
    const attn_job *j = ctx;
    facet_session *s = j->s;
    const facet_facts *f = &s->model->facts;
    int nkv = (int)f->num_key_value_heads, hd = (int)f->head_dim;
    int g = j->g0 + task / nkv, kvh = task % nkv;
    if (s->group_len[g] < 2) return;
    size_t kvd = (size_t)nkv * hd, elt = s->kv.elt, rows = view_rows(s, g);
    int v0 = view_first(s, g), r0 = s->group_row[g], base = s->pos[r0];
    const facet_kv_seq *c = &s->kv.seqs[s->seq_ids[r0]];
    uint8_t *vk = s->view_k + (s->view_off[g] * kvd + (size_t)kvh * rows * hd) * elt;
    uint8_t *vv = s->view_v + (s->view_off[g] * kvd + (size_t)kvh * rows * hd) * elt;
    size_t kgroup = (size_t)hd * FACET_KV_GROUP * elt;
    for (int t = v0; t < base; t += FACET_KV_GROUP) /* whole key groups: the ring's too */
        memcpy(vk + (size_t)(t - v0) * hd * elt,
               facet_kv_key(&s->kv, c, j->layer, kvh, t), kgroup);
    for (int t = v0; t < base; t++)
        memcpy(vv + (size_t)(t - v0) * hd * elt,
               facet_kv_value(&s->kv, c, j->layer, kvh, t), (size_t)hd * elt);
    const int *order = s->chunk_order + s->chunk_group[r0];
    for (int i = 0; i < s->group_len[g]; i++) {
        size_t t = (size_t)(base + i - v0), r = (size_t)order[i];
        facet_kv_store_strided(s->k + r * kvd + (size_t)kvh * hd, s->kv.type,
                               vk + (t / FACET_KV_GROUP * hd * FACET_KV_GROUP + t % FACET_KV_GROUP) * elt,
                               hd, FACET_KV_GROUP);
        facet_kv_store(s->v + r * kvd + (size_t)kvh * hd, s->kv.type, vv + t * hd * elt, hd);
    }
}

/* Task = (group g0 + task / nh, head task % nh) of job j. A group of one entry (decode)
 * is run per KV head instead: that head's query heads are the query set, so the cache
 * is streamed once per KV head rather than once per query head (GQA). A group whose
 * entries are not adjacent in the batch runs entry by entry (same bits). */
static void attn_task(void *ctx, int task, int thread) {
    const attn_job *j = ctx;
    facet_session *s = j->s;
    const facet_facts *f = &s->model->facts;
    int nh = (int)f->num_attention_heads, hd = (int)f->head_dim;
    int group = (int)(f->num_attention_heads / f->num_key_value_heads);
    size_t qd = (size_t)nh * hd;
    int g = j->g0 + task / nh, h = task % nh, kvh = h / group;
    int r0 = s->group_row[g], n_q = s->group_len[g];
    const facet_kv_seq *c = &s->kv.seqs[s->seq_ids[r0]];
    facet_attn_params P = attn_params(s, j->layer);
    const uint8_t *K, *V;
    if (ring_layer(s, j->layer) && n_q > 1) {
        size_t rows = view_rows(s, g), kvd = (size_t)f->num_key_value_heads * hd;
        K = s->view_k + (s->view_off[g] * kvd + (size_t)kvh * rows * hd) * s->kv.elt;
        V = s->view_v + (s->view_off[g] * kvd + (size_t)kvh * rows * hd) * s->kv.elt;
        P.kv_pos0 = view_first(s, g);
    } else {
        /* the head's first key group and value row */
        K = facet_kv_key(&s->kv, c, j->layer, kvh, 0);
        V = facet_kv_value(&s->kv, c, j->layer, kvh, 0);
        if (ring_layer(s, j->layer)) P.kv_ring = s->kv.ring_cap;
    }
    float *scratch = s->attn_scratch + (size_t)thread * s->attn_scratch_floats;
    if (n_q == 1) { /* decode: the first query head of each KV head does its group */
        if (h % group) return;
        int *pos = s->attn_pos + (size_t)thread * nh;
        for (int i = 0; i < group; i++) pos[i] = s->pos[r0];
        if (P.sinks) P.sink_stride = 1;
        facet_attention(&P, s->q + r0 * qd + (size_t)h * hd, (size_t)hd, pos, group, K, V,
                        s->att_out + r0 * qd + (size_t)h * hd, (size_t)hd, scratch);
        return;
    }
    if (s->groups_contiguous) {
        facet_attention(&P, s->q + r0 * qd + (size_t)h * hd, qd, s->pos + r0, n_q, K, V,
                        s->att_out + r0 * qd + (size_t)h * hd, qd, scratch);
        return;
    }
    const int *order = s->chunk_order + s->chunk_group[r0];
    for (int i = 0; i < n_q; i++) {
        size_t r = (size_t)order[i];
        facet_attention(&P, s->q + r * qd + (size_t)h * hd, qd, s->pos + r, 1, K, V,
                        s->att_out + r * qd + (size_t)h * hd, qd, scratch);
    }
}

/* Grow the view buffers to `rows` rows of every KV head (k and v each). */
static facet_status view_reserve(facet_session *s, size_t rows, facet_error *err) {
    size_t bytes = rows * (size_t)(s->model->facts.num_key_value_heads * s->model->facts.head_dim) *
                   s->kv.elt;
    if (bytes <= s->view_bytes) return FACET_OK;
    uint8_t *k = realloc(s->view_k, bytes);
    if (!k) return facet_err(err, FACET_E_NOMEM, "attention view of %zu rows", rows);
    s->view_k = k;
    uint8_t *v = realloc(s->view_v, bytes);
    if (!v) return facet_err(err, FACET_E_NOMEM, "attention view of %zu rows", rows);
    s->view_v = v;
    s->view_bytes = bytes;
    return FACET_OK;
}

/* Attention of layer l for the chunk's entries: s->q (after RoPE), the cache (and the
 * scratch's K/V rows on ring layers) -> s->att_out. A ring layer's views are built in
 * rounds of as many groups as the view buffer holds (one group at least: facet_forward
 * reserves that much before it changes anything). */
static void attention(facet_session *s, int l) {
    const facet_facts *f = &s->model->facts;
    facet_pool *pool = s->model->pool;
    int nh = (int)f->num_attention_heads, nkv = (int)f->num_key_value_heads;
    if (!ring_layer(s, l)) {
        attn_job j = {s, l, 0, s->n_groups};
        facet_pool_run(pool, s->n_groups * nh, attn_task, &j);
        return;
    }
    size_t row_bytes = (size_t)(nkv * f->head_dim) * s->kv.elt;
    for (int g0 = 0; g0 < s->n_groups;) {
        size_t rows = 0;
        int g1 = g0;
        for (; g1 < s->n_groups; g1++) {
            size_t need = s->group_len[g1] > 1 ? view_rows(s, g1) : 0;
            if (g1 > g0 && (rows + need) * row_bytes > s->view_bytes) break;
            s->view_off[g1] = rows;
            rows += need;
        }
        attn_job j = {s, l, g0, g1};
        if (rows) facet_pool_run(pool, (g1 - g0) * nkv, view_task, &j);
        facet_pool_run(pool, (g1 - g0) * nh, attn_task, &j);
        g0 = g1;
    }
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

/* q/k norm and RoPE of one entry; its K/V row goes into the cache, except on a ring
 * layer in a group of several entries (see attention above). */
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
    if (!ring_layer(s, l) || s->group_len[s->chunk_gid[r]] == 1) {
        store_kv_row(s, l, r);
    } else if (s->kv.type != FACET_KV_F32) {
        /* a ring layer's prefill reads this chunk's rows from the scratch (its view): round
         * them as the cache will hold them, so the result does not depend on chunking */
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
static void attention_block(facet_session *s, int n, int l) {
    facet_model *m = s->model;
    const facet_layer_weights *L = &m->w.layers[l];

    /* xn holds RMSNorm_in(x): the previous layer's ffn_out / the embeddings' in_norm */
    { /* q, k and v in one sweep: one activation prep, one pool run */
        float *const y[3] = {s->q, s->k, s->v};
        const facet_wtensor *const w[3] = {&L->q_proj, &L->k_proj, &L->v_proj};
        const float *const b[3] = {L->q_bias, L->k_bias, L->v_bias};
        facet_matmul_multi(m->pool, 3, y, s->xn, w, b, n);
    }
    for_rows(s, l, n, qk_row); /* + the K/V store */
    attention(s, l);
    if (ring_layer(s, l)) for_rows(s, l, n, store_kv_row); /* after attention: see above */
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
        attention_block(s, n, l);
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
    if (st == FACET_OK && s->kv.ring_cap) /* the largest view one group of a chunk needs */
        st = view_reserve(s, (size_t)(f->sliding_window + FACET_ATTN_BLOCK + FACET_KV_GROUP +
                                      (n < FACET_FORWARD_CHUNK ? n : FACET_FORWARD_CHUNK)),
                          err);
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
