/*
 * mixer_attention.c — the softmax attention mixer kind (layer.h), as transformers'
 * LlamaAttention and the families that share it (qwen2/3, mistral, gemma 1-3, phi3,
 * olmo2, granite, smollm3), every variation a fact:
 *   q,k,v = h W^T (+ bias)                      [qkv_bias]
 *   k = k * key_multiplier                      [mup: Falcon-H1]
 *   q,k = RMSNorm per head or over the projection   [qk_norm]
 *   RoPE(q, k) at the position (global or local table)  [not on no_rope layers]
 *   a = softmax(softcap(q k^T * scale) + ALiBi + causal / window mask) v   (GQA; gpt-oss:
 *       a learned logit per head, self_attn.sinks, in the denominator; ALiBi: the head's
 *       slope times the key's distance, facts alibi: BLOOM, MPT)
 *   a = a * sigmoid(gate)                       [attn_output_gate: q_proj's rows are per
 *                                               head [query; gate] (Qwen3NextAttention)]
 *   h = a W_o^T (+ bias)                        [o_bias]
 * The attention itself is the backend's one operation (backend.h facet_attn_chunk) with
 * the layer's window, softcap and scale.
 */
#include <math.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/layer.h"

/* Every layer of today's families. */
static int attention_takes(const facet_facts *f, int l) {
    (void)f;
    (void)l;
    return 1;
}

static int ring_layer(const facet_session *s, int l) { return facet_kv_is_ring(&s->kv, l); }

/* The host's part of entry r's q/k before the norms: its query out of q_proj's
 * [query; gate] rows (attn_output_gate), its key times key_multiplier (muP). */
static void qk_host_row(facet_session *s, int l, int r) {
    (void)l;
    const facet_facts *f = &s->model->facts;
    int nh = (int)f->num_attention_heads, hd = (int)f->head_dim, qd = nh * hd;
    int kvd = (int)f->num_key_value_heads * hd;
    float *q = s->q + (size_t)r * qd, *k = s->k + (size_t)r * kvd;
    if (f->attn_output_gate) /* each head's query: the first half of its 2 hd rows */
        for (int h = 0; h < nh; h++)
            memcpy(q + (size_t)h * hd, s->q_gate + (size_t)r * 2 * qd + (size_t)h * 2 * hd,
                   sizeof(float) * (size_t)hd);
    if (f->mup && f->key_multiplier != 1.0) { /* Falcon-H1: k_proj(h) * key_multiplier */
        float km = (float)f->key_multiplier;
        for (int i = 0; i < kvd; i++) k[i] *= km;
    }
}

/* q/k norm and RoPE of entries [r0, r1), one backend operation each over the range; their
 * K/V rows go into the cache, except on a ring layer in a group of several entries
 * (stored after attention: backend_cpu.c). */
static void qk_rows(facet_session *s, int l, int r0, int r1) {
    facet_model *m = s->model;
    const facet_backend *be = s->be;
    const facet_facts *f = &m->facts;
    const facet_layer_weights *L = &m->w.layers[l];
    int nh = (int)f->num_attention_heads, nkv = (int)f->num_key_value_heads, hd = (int)f->head_dim;
    int qd = nh * hd, kvd = nkv * hd, half = m->rope_dim / 2, M = r1 - r0;
    float off = (float)f->norm_weight_offset;
    int local = m->inv_freq_local && f->layer_sliding[l];
    float *q = s->q + (size_t)r0 * qd, *k = s->k + (size_t)r0 * kvd;
    if (f->attn_output_gate || (f->mup && f->key_multiplier != 1.0)) {
        facet_sync(s);
        for (int r = r0; r < r1; r++) qk_host_row(s, l, r);
    }
    if (L->q_norm && L->qk_norm_full) { /* OLMo 2: over the whole projection */
        be->ops->rmsnorm_rows(be, q, q, L->q_norm, qd, M, f->rms_norm_eps, off);
        be->ops->rmsnorm_rows(be, k, k, L->k_norm, kvd, M, f->rms_norm_eps, off);
    } else if (L->q_norm) { /* Qwen 3, Gemma 3: over each head */
        be->ops->rmsnorm_rows(be, q, q, L->q_norm, hd, nh * M, f->rms_norm_eps, off);
        be->ops->rmsnorm_rows(be, k, k, L->k_norm, hd, nkv * M, f->rms_norm_eps, off);
    }
    const float *cs = (local ? s->rope_cos_local : s->rope_cos) + (size_t)r0 * half;
    const float *sn = (local ? s->rope_sin_local : s->rope_sin) + (size_t)r0 * half;
    if (f->rope_interleaved && !f->layer_no_rope[l]) { /* GPT-J: pairs (2i, 2i+1) */
        be->ops->rope_pairs_rows(be, q, M, nh, hd, m->rope_dim, cs, sn);
        be->ops->rope_pairs_rows(be, k, M, nkv, hd, m->rope_dim, cs, sn);
    } else if (!f->layer_no_rope[l]) { /* SmolLM3's NoPE layers attend without positions */
        be->ops->rope_rows(be, q, M, nh, hd, m->rope_dim, cs, sn);
        be->ops->rope_rows(be, k, M, nkv, hd, m->rope_dim, cs, sn);
    }
    /* a bf16 cache is bf16 attention: the query is rounded like the keys, so each score
     * is a sum of exact products of bf16 values (FlashAttention's bf16 arithmetic), on
     * every path; on AVX512-BF16 the blocked kernel takes them from vdpbf16ps */
    if (s->kv.type == FACET_KV_BF16) be->ops->kv_round(be, q, s->kv.type, qd * M);
    facet_backend *bm = s->be;
    if (!ring_layer(s, l)) {
        bm->ops->kv_store_rows(bm, &s->kv, l, M, NULL, s->seq_ids + r0, s->pos + r0, k,
                               s->v + (size_t)r0 * kvd);
        return;
    }
    /* a ring layer: a group of one stores its row now (decode stores once); the rows of
     * a prefill group, which the attention reads from this chunk (its view), are rounded
     * as the cache will hold them, so the result does not depend on chunking */
    for (int r = r0; r < r1; r++) {
        float *kr = s->k + (size_t)r * kvd, *vr = s->v + (size_t)r * kvd;
        if (s->group_len[s->chunk_gid[r]] == 1) {
            bm->ops->kv_store_rows(bm, &s->kv, l, 1, NULL, s->seq_ids + r, s->pos + r, kr, vr);
        } else if (s->kv.type != FACET_KV_F32) {
            int run = 1; /* the run of rows from r in groups of several: one rounding */
            while (r + run < r1 && s->group_len[s->chunk_gid[r + run]] > 1) run++;
            be->ops->kv_round(be, kr, s->kv.type, kvd * run);
            be->ops->kv_round(be, vr, s->kv.type, kvd * run);
            r += run - 1;
        }
    }
}

/* Entry r's attention output times sigmoid(gate), each head's gate the second half of its
 * 2 hd rows of q_proj (attn_output_gate). */
static void gate_row(facet_session *s, int l, int r) {
    (void)l;
    const facet_facts *f = &s->model->facts;
    int nh = (int)f->num_attention_heads, hd = (int)f->head_dim;
    size_t qd = (size_t)nh * hd;
    float *a = s->att_out + (size_t)r * qd;
    for (int h = 0; h < nh; h++) {
        const float *g = s->q_gate + (size_t)r * 2 * qd + (size_t)h * 2 * hd + hd;
        for (int j = 0; j < hd; j++) a[(size_t)h * hd + j] *= 1.0f / (1.0f + expf(-g[j]));
    }
}

/* A ring layer's store after attention: the rows of groups of several entries, a
 * group's rows in position order at once (a group of one stored its row before, in
 * qk_rows: decode stores once). */
static void store_ring_groups(facet_session *s, int l) {
    facet_backend *be = s->be;
    for (int g = 0; g < s->n_groups; g++)
        if (s->group_len[g] > 1)
            be->ops->kv_store_rows(be, &s->kv, l, s->group_len[g],
                                   s->chunk_order + s->chunk_group[s->group_row[g]], s->seq_ids,
                                   s->pos, s->k, s->v);
}

/* xn (RMSNorm_in(x)) -> xn (o_proj's output) for entries [0, n) of layer l. */
static void attention_forward(facet_session *s, int l, int n) {
    facet_backend *be = s->be;
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[l];
    { /* q, k and v in one sweep: one activation prep, one parallel run */
        float *const y[3] = {f->attn_output_gate ? s->q_gate : s->q, s->k, s->v};
        const facet_wtensor *const w[3] = {&L->q_proj, &L->k_proj, &L->v_proj};
        const float *const b[3] = {L->q_bias, L->k_bias, L->v_bias};
        be->ops->matmul_multi(be, 3, y, s->xn, w, b, n);
    }
    facet_for_row_ranges(s, l, n, qk_rows); /* + the K/V store */
    facet_attn_params P = {.head_dim = (int)f->head_dim, .scale = (float)f->attn_scale,
                           .softcap = (float)f->attn_logit_softcap, .kv_type = s->kv.type,
                           .v_stride = (size_t)f->head_dim, .sinks = L->sinks,
                           .alibi = s->model->alibi_slopes};
    if (f->layer_sliding[l] && f->sliding_window > 0) P.window = (int)f->sliding_window;
    facet_attn_chunk c = {.p = &P, .kv = &s->kv, .layer = l,
                          .n_heads = (int)f->num_attention_heads,
                          .n_kv_heads = (int)f->num_key_value_heads, .n_rows = n, .q = s->q,
                          .k = s->k, .v = s->v, .out = s->att_out, .pos = s->pos,
                          .seq_ids = s->seq_ids, .n_groups = s->n_groups,
                          .contiguous = s->groups_contiguous, .group_row = s->group_row,
                          .group_len = s->group_len, .order_at = s->chunk_group,
                          .order = s->chunk_order};
    be->ops->attention(be, &c);
    if (ring_layer(s, l)) store_ring_groups(s, l); /* after attention */
    if (f->attn_output_gate) {
        facet_sync(s);
        facet_for_rows(s, l, n, gate_row);
    }
    be->ops->matmul(be, s->xn, s->att_out, &L->o_proj, L->o_bias, n);
}

const facet_mixer_kind facet_mixer_attention = {"attention", attention_takes, attention_forward};
