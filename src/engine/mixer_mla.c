/*
 * mixer_mla.c — multi-head latent attention (layer.h), as DeepSeek-V2/V3 define it
 * (transformers' DeepseekV2Attention / DeepseekV3Attention), with C = kv_lora_rank,
 * dn / dr / dv = qk_nope / qk_rope / v_head_dim, nh heads:
 *   q      = h W_q^T, or RMSNorm(h W_qa^T) W_qb^T      (nh x [dn nope | dr rope])
 *   [c|kr] = h W_kva^T;  c = RMSNorm(c)                (the latent, C; the rope key, dr)
 *   RoPE on q's rope parts and on kr, pairs (2i, 2i+1) (the interleaved layout)
 *   per head: k = [W_kb,h c | kr], v = W_vb,h c         (kv_b_proj: dn then dv rows)
 *   a_h = softmax(q_h . k * scale) v;  out = [a_1 .. a_nh] W_o^T
 *
 * The cache. Each position stores [c | kr] alone (C + dr values per layer, kv_cache.h's
 * latent slots): that is the point of MLA (DeepSeek-V3: 576 values, 1,152 bytes in bf16
 * per layer, where expanded keys and values would be 128 x 256). A bf16 / f16 cache
 * rounds c and kr; queries stay float32.
 *
 * The absorbed form, for every entry (prefill and decode alike): the key up-projection
 * folds into the query and the value up-projection applies after attention,
 *   q_h . k_t = (W_kb,h^T q_nope,h) . c_t + q_rope,h . kr_t
 *   a_h       = W_vb,h (sum_t p_t c_t)
 * so each entry reads every cached row once per layer, whatever nh. The same sums as
 * the expanded form in another order: in float32 they agree with the float64 reference
 * (which expands) within 1e-5 relative on the test checkpoints. Scores run through an
 * online softmax (running max and sum per head), each entry on its own: an entry's
 * bits depend on neither the chunk nor the batch around it.
 *
 * Cost: the absorbed query is nh x C per entry, and kv_b_proj is kept once more in
 * float32 (kv_b_f32: nh (dn + dv) C floats per layer, 64 MiB on DeepSeek-V3) so that
 * both its column (query) and row (value) sweeps are plain float loops.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/layer.h"
#include "util/error.h"

static int mla_takes(const facet_facts *f, int l) {
    (void)l;
    return f->kv_lora_rank > 0;
}

size_t facet_mla_row_floats(const facet_facts *f) {
    size_t nh = (size_t)f->num_attention_heads, C = (size_t)f->kv_lora_rank;
    size_t K = C + (size_t)f->qk_rope_head_dim;
    /* absorbed queries nh x K, accumulators nh x C, running max and sum nh each, one
     * key row K */
    return nh * K + nh * C + 2 * nh + K;
}

facet_status facet_mla_prepare(facet_model *m, facet_error *err) {
    const facet_facts *f = &m->facts;
    size_t rows = (size_t)(f->num_attention_heads * (f->qk_nope_head_dim + f->v_head_dim));
    size_t C = (size_t)f->kv_lora_rank;
    for (int64_t l = 0; l < f->num_hidden_layers; l++) {
        facet_layer_weights *L = &m->w.layers[l];
        if (!L->kv_b_proj.data) continue; /* a layer another pipeline stage holds */
        free(L->kv_b_f32);
        L->kv_b_f32 = malloc(sizeof(float) * rows * C);
        if (!L->kv_b_f32)
            return facet_err(err, FACET_E_NOMEM, "layer %lld: kv_b_proj as float32 (%zu x %zu)",
                             (long long)l, rows, C);
        for (size_t r = 0; r < rows; r++) facet_wtensor_row(&L->kv_b_proj, (int)r, L->kv_b_f32 + r * C);
        m->w.bytes += sizeof(float) * rows * C; /* run-time memory, as facet plan counts it */
    }
    return FACET_OK;
}

/* Rotate pairs (2i, 2i+1) of x (dr values) by the position's angles (DeepSeek's
 * interleaved rope: the complex product of transformers' DeepseekV2 port, the same
 * dot products as DeepseekV3's de-interleaving view). */
static void rope_pairs(float *x, int dr, const float *cs, const float *sn) {
    for (int i = 0; i < dr / 2; i++) {
        float a = x[2 * i], b = x[2 * i + 1];
        x[2 * i] = a * cs[i] - b * sn[i];
        x[2 * i + 1] = b * cs[i] + a * sn[i];
    }
}

/* Entry r: q_a norm (q_lora_rank: done on mla_q_a before q_b_proj, see below), latent
 * norm, RoPE of its rope key and its heads' rope parts, the cache store. */
static void latent_row(facet_session *s, int l, int r) {
    const facet_model *m = s->model;
    const facet_facts *f = &m->facts;
    const facet_layer_weights *L = &m->w.layers[l];
    int nh = (int)f->num_attention_heads, C = (int)f->kv_lora_rank;
    int dn = (int)f->qk_nope_head_dim, dr = (int)f->qk_rope_head_dim;
    int half = m->rope_dim / 2;
    float *q = s->q + (size_t)r * (size_t)(nh * (dn + dr));
    float *kv = s->k + (size_t)r * (size_t)(C + dr);
    s->be->ops->rmsnorm(s->be, kv, kv, L->kv_a_norm, C, f->rms_norm_eps, 0.0f);
    const float *cs = s->rope_cos + (size_t)r * half, *sn = s->rope_sin + (size_t)r * half;
    rope_pairs(kv + C, dr, cs, sn);
    for (int h = 0; h < nh; h++) rope_pairs(q + h * (dn + dr) + dn, dr, cs, sn);
    s->be->ops->kv_store(s->be, &s->kv, s->seq_ids[r], l, s->pos[r], kv, NULL);
}

/* q_a_layernorm over one entry's q_a_proj output. */
static void q_a_norm_row(facet_session *s, int l, int r) {
    const facet_facts *f = &s->model->facts;
    size_t QL = (size_t)f->q_lora_rank;
    float *x = s->mla_q_a + (size_t)r * QL;
    s->be->ops->rmsnorm(s->be, x, x, s->model->w.layers[l].q_a_norm, (int)QL, f->rms_norm_eps,
                        0.0f);
}

/* Heads [h0, h1) of entry r's attention over its sequence's cached positions
 * 0 .. pos[r], absorbed form; writes their dv outputs each to att_out. key: K floats of
 * scratch (one latent + rope key widened from the cache). Each head's arithmetic is the
 * same whatever range it runs in. */
static void attend_heads(facet_session *s, int l, int r, int h0, int h1, float *key,
                         float *grp, float *keys) {
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[l];
    const facet_kv_cache *kv = &s->kv;
    int nh = (int)f->num_attention_heads, C = (int)f->kv_lora_rank;
    int dn = (int)f->qk_nope_head_dim, dr = (int)f->qk_rope_head_dim, dv = (int)f->v_head_dim;
    int K = C + dr, W = dn + dv;
    float scale = (float)f->attn_scale;
    const float *q = s->q + (size_t)r * (size_t)(nh * (dn + dr));
    float *qa = s->mla_work + (size_t)r * facet_mla_row_floats(f);
    float *acc = qa + (size_t)nh * K, *mx = acc + (size_t)nh * C, *sum = mx + nh;
    const float *wkv = L->kv_b_f32;

    /* absorbed queries: [W_kb,h^T q_nope,h | q_rope,h] */
    for (int h = h0; h < h1; h++) {
        float *a = qa + (size_t)h * K;
        const float *qh = q + h * (dn + dr);
        memset(a, 0, sizeof(float) * (size_t)C);
        for (int i = 0; i < dn; i++) facet_axpy_f32(a, qh[i], wkv + (size_t)(h * W + i) * C, C);
        memcpy(a + C, qh + dn, sizeof(float) * (size_t)dr);
        mx[h] = -INFINITY;
        sum[h] = 0.0f;
    }
    memset(acc + (size_t)h0 * C, 0, sizeof(float) * (size_t)(h1 - h0) * C);

    const facet_kv_seq *c = &kv->seqs[s->seq_ids[r]];
    /* whole groups of FACET_KV_GROUP positions (stored [element][position in group]) are
     * widened in one contiguous pass and transposed, instead of a strided gather per
     * position: the same values, read sequentially */
    int G = FACET_KV_GROUP, T = s->pos[r] + 1;
    int TG = grp && keys && !facet_kv_is_ring(kv, l) ? T / G * G : 0;
    for (int t = 0; t < T; t++) {
        const float *k = key;
        if (t < TG) {
            if (t % G == 0) {
                facet_kv_load_strided(facet_kv_key(kv, c, l, 0, t), kv->type, grp, K * G, 1);
                for (int d = 0; d < K; d++)
                    for (int j = 0; j < G; j++) keys[(size_t)j * K + d] = grp[(size_t)d * G + j];
            }
            k = keys + (size_t)(t % G) * K;
        } else {
            facet_kv_load_strided(facet_kv_key(kv, c, l, 0, t), kv->type, key, K, G);
        }
        for (int h = h0; h < h1; h++) {
            float sc = facet_dot_f32(qa + (size_t)h * K, k, K) * scale;
            float *o = acc + (size_t)h * C;
            if (sc > mx[h]) { /* a new maximum: what was summed shrinks by exp(old - new) */
                float corr = expf(mx[h] - sc);
                sum[h] = sum[h] * corr + 1.0f;
                for (int j = 0; j < C; j++) o[j] = o[j] * corr + k[j];
                mx[h] = sc;
            } else {
                float p = expf(sc - mx[h]);
                sum[h] += p;
                facet_axpy_f32(o, p, k, C);
            }
        }
    }

    /* the value up-projection of each head's weighted latent */
    float *out = s->att_out + (size_t)r * (size_t)(nh * dv);
    for (int h = h0; h < h1; h++) {
        const float *o = acc + (size_t)h * C;
        float inv = 1.0f / sum[h];
        for (int i = 0; i < dv; i++)
            out[h * dv + i] = facet_dot_f32(o, wkv + (size_t)(h * W + dn + i) * C, C) * inv;
    }
}

/* Below this many entries (decode) each entry's heads are split across the threads:
 * facet_for_rows would run them all on one core, which then alone reads the layer's f32
 * kv_b (the absorbed query and the value up-projection) and the whole latent cache. */
#define MLA_HEAD_SPLIT_ROWS 8
#define MLA_KEY_MAX 1024 /* key scratch on the stack (x 33 floats): kv_lora_rank + qk_rope_head_dim */

/* Entry r's attention, all its heads (the key scratch at the end of its mla_work row). */
static void attend_row(facet_session *s, int l, int r) {
    const facet_facts *f = &s->model->facts;
    int nh = (int)f->num_attention_heads, C = (int)f->kv_lora_rank;
    int K = C + (int)f->qk_rope_head_dim;
    float *qa = s->mla_work + (size_t)r * facet_mla_row_floats(f);
    float *key = qa + (size_t)nh * K + (size_t)nh * C + 2 * (size_t)nh;
    if (K > MLA_KEY_MAX) {
        attend_heads(s, l, r, 0, nh, key, NULL, NULL);
        return;
    }
    float grp[MLA_KEY_MAX * FACET_KV_GROUP], keys[MLA_KEY_MAX * FACET_KV_GROUP];
    attend_heads(s, l, r, 0, nh, key, grp, keys);
}


typedef struct {
    facet_session *s;
    int l, nh, per, tasks_per_row;
} heads_job;

static void heads_task(void *ctx, int task, int thread) {
    (void)thread;
    const heads_job *j = ctx;
    float key[MLA_KEY_MAX], grp[MLA_KEY_MAX * FACET_KV_GROUP], keys[MLA_KEY_MAX * FACET_KV_GROUP];
    int r = task / j->tasks_per_row, h0 = (task % j->tasks_per_row) * j->per;
    int h1 = h0 + j->per < j->nh ? h0 + j->per : j->nh;
    attend_heads(j->s, j->l, r, h0, h1, key, grp, keys);
}

/* xn (RMSNorm_in(x)) -> xn (o_proj's output) for entries [0, n) of layer l. */
static void mla_forward(facet_session *s, int l, int n) {
    facet_backend *be = s->be;
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[l];
    if (f->q_lora_rank > 0) {
        be->ops->matmul(be, s->mla_q_a, s->xn, &L->q_a_proj, NULL, n);
        facet_for_rows(s, l, n, q_a_norm_row);
        be->ops->matmul(be, s->q, s->mla_q_a, &L->q_b_proj, NULL, n);
        be->ops->matmul(be, s->k, s->xn, &L->kv_a_proj, NULL, n);
    } else { /* q and the latent in one sweep of xn */
        float *const y[2] = {s->q, s->k};
        const facet_wtensor *const w[2] = {&L->q_proj, &L->kv_a_proj};
        const float *const b[2] = {NULL, NULL};
        be->ops->matmul_multi(be, 2, y, s->xn, w, b, n);
    }
    facet_for_rows(s, l, n, latent_row); /* every entry stored before any attends */
    int threads = be->ops->threads(be), nh = (int)f->num_attention_heads;
    if (n < MLA_HEAD_SPLIT_ROWS && threads > 1 && nh > 1 &&
        f->kv_lora_rank + f->qk_rope_head_dim <= MLA_KEY_MAX) {
        heads_job j = {s, l, nh, (nh + threads - 1) / threads, 0};
        j.tasks_per_row = (nh + j.per - 1) / j.per;
        be->ops->run(be, n * j.tasks_per_row, heads_task, &j);
    } else {
        facet_for_rows(s, l, n, attend_row);
    }
    be->ops->matmul(be, s->xn, s->att_out, &L->o_proj, NULL, n);
}

const facet_mixer_kind facet_mixer_mla = {"latent attention", mla_takes, mla_forward};
