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
 * so attention is multi-query attention with one key of C + dr per position whose value
 * is its first C elements: facet_attention_latent (kernels.h) runs it blocked, a block
 * of 64 cached rows read once for all the queries (entries x heads) of a task, scores
 * and the weighted sum as small register-tiled GEMMs. The same sums as the expanded form
 * in another order: in float32 they agree with the float64 reference (which expands)
 * within 1e-5 relative on the test checkpoints. Each query's online softmax and sums are
 * its own: an entry's bits depend on neither the chunk nor the batch around it, nor on
 * which heads share its task. Prefill tasks take a few entries with all their heads;
 * decode (under 8 entries) splits each entry's heads across the threads.
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
    /* absorbed queries nh x K, then each head's weighted latent nh x C */
    return nh * K + nh * C;
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

/* Rows per prefill task: about this many queries (rows x heads) share each widened key
 * block (the block's transpose is then a small part of the task's work). */
#define MLA_TASK_QUERIES 64

static int mla_task_rows(const facet_facts *f) {
    int nh = (int)f->num_attention_heads;
    return nh >= MLA_TASK_QUERIES ? 1 : MLA_TASK_QUERIES / nh;
}

size_t facet_mla_thread_floats(const facet_facts *f) {
    int nh = (int)f->num_attention_heads, C = (int)f->kv_lora_rank;
    return FACET_LATENT_SCRATCH(mla_task_rows(f) * nh, C + (int)f->qk_rope_head_dim, C);
}

/* Heads [h0, h1) of entries [r0, r1) (one sequence): absorbed queries, attention over
 * the latent cache (facet_attention_latent, every query of the range at once), the value
 * up-projection of each head's weighted latent into att_out. scratch:
 * facet_mla_thread_floats. Each head's arithmetic is the same whatever range it runs in. */
static void attend_range(facet_session *s, int l, int r0, int r1, int h0, int h1,
                         float *scratch) {
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[l];
    const facet_kv_cache *kv = &s->kv;
    int nh = (int)f->num_attention_heads, C = (int)f->kv_lora_rank;
    int dn = (int)f->qk_nope_head_dim, dr = (int)f->qk_rope_head_dim, dv = (int)f->v_head_dim;
    int K = C + dr, W = dn + dv;
    size_t MW = facet_mla_row_floats(f);
    const float *wkv = L->kv_b_f32;

    /* absorbed queries: [W_kb,h^T q_nope,h | q_rope,h]; each row of kv_b read once for
     * the range's entries (an element's sum runs over i in order whatever the range) */
    const float *q0 = s->q + (size_t)r0 * (size_t)(nh * (dn + dr));
    size_t qs = (size_t)(nh * (dn + dr));
    for (int h = h0; h < h1; h++) {
        for (int r = r0; r < r1; r++) {
            float *a = s->mla_work + (size_t)r * MW + (size_t)h * K;
            memset(a, 0, sizeof(float) * (size_t)C);
            memcpy(a + C, q0 + (size_t)(r - r0) * qs + h * (dn + dr) + dn, sizeof(float) * (size_t)dr);
        }
        for (int i = 0; i < dn; i++) {
            const float *w = wkv + (size_t)(h * W + i) * C;
            for (int r = r0; r < r1; r++)
                facet_axpy_f32(s->mla_work + (size_t)r * MW + (size_t)h * K,
                               q0[(size_t)(r - r0) * qs + h * (dn + dr) + i], w, C);
        }
    }

    const facet_kv_seq *c = &kv->seqs[s->seq_ids[r0]];
    facet_latent_params P = {.kd = K, .vd = C, .scale = (float)f->attn_scale,
                             .kv_type = kv->type};
    float *qa0 = s->mla_work + (size_t)r0 * MW;
    facet_attention_latent(&P, r1 - r0, h1 - h0, qa0 + (size_t)h0 * K, MW, s->pos + r0,
                           facet_kv_key(kv, c, l, 0, 0), qa0 + (size_t)nh * K + (size_t)h0 * C,
                           MW, scratch);

    /* the value up-projection of each head's weighted latent (kv_b's rows once for the
     * range's entries) */
    for (int h = h0; h < h1; h++)
        for (int i = 0; i < dv; i++) {
            const float *w = wkv + (size_t)(h * W + dn + i) * C;
            for (int r = r0; r < r1; r++)
                s->att_out[(size_t)r * (size_t)(nh * dv) + (size_t)(h * dv + i)] = facet_dot_f32(
                    s->mla_work + (size_t)r * MW + (size_t)nh * K + (size_t)h * C, w, C);
        }
}

/* Below this many entries (decode) each entry's heads are split across the threads:
 * one task per entry would run them all on one core, which then alone reads the layer's
 * f32 kv_b (the absorbed query and the value up-projection) and the whole latent cache. */
#define MLA_HEAD_SPLIT_ROWS 8

typedef struct {
    facet_session *s;
    int l, n, nh;
    int rows, heads;               /* a task: up to `rows` entries x `heads` heads      */
    int head_tasks;                /* tasks per row range: nh / heads rounded up        */
} attend_job;

static void attend_task(void *ctx, int task, int thread) {
    const attend_job *j = ctx;
    facet_session *s = j->s;
    float *scratch = s->mla_blk + (size_t)thread * facet_mla_thread_floats(&s->model->facts);
    int r0 = task / j->head_tasks * j->rows, r1 = r0 + j->rows < j->n ? r0 + j->rows : j->n;
    int h0 = task % j->head_tasks * j->heads, h1 = h0 + j->heads < j->nh ? h0 + j->heads : j->nh;
    /* the range in runs of one sequence (a batch's entries may belong to several) */
    for (int a = r0, b; a < r1; a = b) {
        for (b = a + 1; b < r1 && s->seq_ids[b] == s->seq_ids[a];) b++;
        attend_range(s, j->l, a, b, h0, h1, scratch);
    }
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
    attend_job j = {s, l, n, nh, mla_task_rows(f), nh, 1};
    if (n < MLA_HEAD_SPLIT_ROWS) { /* decode: each entry's heads split across threads */
        j.rows = 1;
        j.heads = threads > 1 ? (nh + threads - 1) / threads : nh;
        j.head_tasks = (nh + j.heads - 1) / j.heads;
    }
    be->ops->run(be, (n + j.rows - 1) / j.rows * j.head_tasks, attend_task, &j);
    be->ops->matmul(be, s->xn, s->att_out, &L->o_proj, NULL, n);
}

const facet_mixer_kind facet_mixer_mla = {"latent attention", mla_takes, mla_forward};
