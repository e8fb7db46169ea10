/*
 * mixer_gated_delta.c — Qwen3-Next's gated delta-rule linear attention as a mixer kind
 * (layer.h), as transformers' Qwen3NextGatedDeltaNet (torch_recurrent_gated_delta_rule,
 * torch_causal_conv1d_update, Qwen3NextRMSNormGated). Facts (layer_ssm[l] == 4):
 * NK = ssm_groups key heads of DK = ssm_state_size, NV = ssm_heads value heads of DV =
 * ssm_head_dim (R = NV / NK value heads per key head), KD = NK DK, DI = NV DV, the conv's
 * CD = 2 KD + DI channels (q, k, v), K = ssm_conv_kernel taps.
 *
 *   qkvz = h W_qkvz^T        as stored: per key head kh, [q (DK), k (DK), v (R DV),
 *                            z (R DV)] (fix_query_key_value_ordering)
 *   ba   = h W_ba^T          per key head kh, [b (R), a (R)]
 *   (q, k, v) = SiLU(conv1d(q | k | v))   depthwise, causal, no bias
 *   q = q / sqrt(|q|^2 + 1e-6) / sqrt(DK); k = k / sqrt(|k|^2 + 1e-6)   per key head
 *   beta = sigmoid(b); g = -exp(A_log) softplus(a + dt_bias)            per value head
 *   per value head h (its key head h / R), per token in order, with S [DK][DV]:
 *     S = S exp(g); d = (v - S^T k) beta; S = S + k d^T; o = S^T q
 *   y = RMSNorm(o) w * SiLU(z)   per value head over DV (w: DV, shared; no 1 + w)
 *   out = y W_out^T
 * Each value channel c = h DV + j evolves its own column S[:, j] (DK values): the scan
 * runs over the DI channels in parallel, up to 64 of a head at a time (the inner loop
 * runs over them, vectorized: rows of S are contiguous in j), each reading only its own
 * sequence's state and rows, in position order, so batched and chunked runs give the
 * bits of a sequence alone. The recurrence runs token by token inside a chunk (the
 * chunked WY form of the fla kernels is not used): per token and layer it is 4 DK DI
 * multiply-adds, a fraction of in_proj's H (CD + DI) (DESIGN.md: the chunked form does
 * more of them; it pays off on matrix units).
 *
 * State (a STATE slot, kv_cache.h), per sequence and layer, float32, zero at first:
 *   conv[CD][K - 1]   the last K - 1 inputs of each conv channel (q, k, v), oldest first
 *   S[NV][DK][DV]     value head h's S, row n (key dim), column j (value dim)
 * Scratch (model_internal.h): ssm_xz (R, CD + DI) qkvz; ssm_dtin (R, 2 NV) ba; ssm_xc
 * (R, CD) q, k, v after the conv (then normalised); ssm_dt (R, 2 NV) exp(g), beta;
 * ssm_dbc (R, DI) o, then y.
 */
#include <math.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/layer.h"

static int gated_delta_takes(const facet_facts *f, int l) {
    return l >= 0 && l < FACET_MAX_LAYERS && f->layer_ssm[l] == 4;
}

static float silu(float v) { return v / (1.0f + expf(-v)); }
static float softplus(float v) { return v > 20.0f ? v : log1pf(expf(v)); }

typedef struct {
    int NK, DK, NV, DV, R, KD, DI, CD, W, K;
} gdn_dims;

static gdn_dims dims_of(const facet_facts *f) {
    gdn_dims d;
    d.NK = (int)f->ssm_groups, d.DK = (int)f->ssm_state_size;
    d.NV = (int)f->ssm_heads, d.DV = (int)f->ssm_head_dim;
    d.R = d.NV / d.NK, d.KD = d.NK * d.DK, d.DI = d.NV * d.DV, d.CD = 2 * d.KD + d.DI;
    d.W = 2 * d.DK + 2 * d.R * d.DV; /* one key head's block of in_proj_qkvz */
    d.K = (int)f->ssm_conv_kernel;
    return d;
}

/* Column of in_proj_qkvz's output holding conv channel c (q | k | v order). */
static int qkv_column(const gdn_dims *d, int c) {
    if (c < d->KD) return (c / d->DK) * d->W + c % d->DK;
    if (c < 2 * d->KD) return ((c - d->KD) / d->DK) * d->W + d->DK + (c - d->KD) % d->DK;
    int v = c - 2 * d->KD, h = v / d->DV; /* value head h, its key head h / R */
    return (h / d->R) * d->W + 2 * d->DK + (h % d->R) * d->DV + v % d->DV;
}

enum { BLOCK = 64 }; /* value channels updated together (the inner loop's vectors) */

/* Rows n < DK of S (stride DV), columns [0, jn): S *= eg, then mem[j] += S[n][j] k[n]
 * over n in order. */
static void decay_dot(float *restrict S, const float *restrict k, int DK, int DV, int jn,
                      float eg, float *restrict mem) {
    for (int n = 0; n < DK; n++) {
        float *restrict row = S + (size_t)n * DV;
        float kn = k[n];
        for (int jj = 0; jj < jn; jj++) {
            row[jj] *= eg;
            mem[jj] += row[jj] * kn;
        }
    }
}

/* S[n][j] += k[n] del[j], then o[j] += S[n][j] q[n] over n in order. */
static void update_dot(float *restrict S, const float *restrict k, const float *restrict q,
                       int DK, int DV, int jn, const float *restrict del, float *restrict o) {
    for (int n = 0; n < DK; n++) {
        float *restrict row = S + (size_t)n * DV;
        float kn = k[n], qn = q[n];
        for (int jj = 0; jj < jn; jj++) {
            row[jj] += kn * del[jj];
            o[jj] += row[jj] * qn;
        }
    }
}

/* The delta rule over value channels [j0, j0 + jn) of value head h (jn <= BLOCK) for
 * group g's entries in position order. S is the head's [DK][DV]: row n, column j. Each
 * channel's sums run over n in order whatever the block, so a channel's bits do not
 * depend on how channels are grouped. */
static void scan_block(facet_session *s, const gdn_dims *d, int l, int g, float *state, int h,
                       int j0, int jn) {
    (void)l;
    int DK = d->DK, DV = d->DV, kh = h / d->R;
    int first = s->group_row[g];
    const int *order = s->chunk_order + s->chunk_group[first];
    float *S = state + (size_t)d->CD * (d->K - 1) + (size_t)h * DK * DV + j0;
    for (int i = 0; i < s->group_len[g]; i++) {
        int r = order[i];
        const float *qkv = s->ssm_xc + (size_t)r * d->CD;
        const float *q = qkv + kh * DK, *k = qkv + d->KD + kh * DK;
        const float *v = qkv + 2 * d->KD + h * DV + j0;
        float eg = s->ssm_dt[(size_t)r * 2 * d->NV + h];
        float beta = s->ssm_dt[(size_t)r * 2 * d->NV + d->NV + h];
        float mem[BLOCK] = {0}, del[BLOCK], o[BLOCK] = {0};
        decay_dot(S, k, DK, DV, jn, eg, mem);
        for (int jj = 0; jj < jn; jj++) del[jj] = (v[jj] - mem[jj]) * beta;
        update_dot(S, k, q, DK, DV, jn, del, o);
        memcpy(s->ssm_dbc + (size_t)r * d->DI + (size_t)h * DV + j0, o, sizeof(float) * (size_t)jn);
    }
}

typedef struct {
    facet_session *s;
    int l, per, phase, n_chan; /* phase 0: conv over CD channels; 1: scan over DI */
} chan_job;

static void chan_task(void *ctx, int task, int thread) {
    (void)thread;
    const chan_job *j = ctx;
    facet_session *s = j->s;
    const gdn_dims d = dims_of(&s->model->facts);
    const facet_layer_weights *L = &s->model->w.layers[j->l];
    int K = d.K, XZ = d.CD + d.DI;
    int c0 = task * j->per, c1 = c0 + j->per < j->n_chan ? c0 + j->per : j->n_chan;
    for (int g = 0; g < s->n_groups; g++) {
        int first = s->group_row[g];
        const int *order = s->chunk_order + s->chunk_group[first];
        float *state = s->kv.seqs[s->seq_ids[first]].layers[j->l].state;
        if (j->phase == 0) /* conv channels [c0, c1) */
            for (int c = c0; c < c1; c++) {
                float *win = state + (size_t)c * (K - 1);
                const float *w = L->ssm_conv_w + (size_t)c * K;
                int col = qkv_column(&d, c);
                for (int i = 0; i < s->group_len[g]; i++) {
                    int r = order[i];
                    float xin = s->ssm_xz[(size_t)r * XZ + col], acc = 0.0f;
                    for (int k = 0; k < K - 1; k++) acc += w[k] * win[k];
                    acc += w[K - 1] * xin;
                    for (int k = 0; k + 1 < K - 1; k++) win[k] = win[k + 1];
                    if (K > 1) win[K - 2] = xin;
                    s->ssm_xc[(size_t)r * d.CD + c] = silu(acc);
                }
            }
        if (j->phase == 1) /* value channels [c0, c1) in blocks within one head */
            for (int c = c0; c < c1;) {
                int h = c / d.DV, j0 = c % d.DV, jn = d.DV - j0;
                if (jn > BLOCK) jn = BLOCK;
                if (jn > c1 - c) jn = c1 - c;
                scan_block(s, &d, j->l, g, state, h, j0, jn);
                c += jn;
            }
    }
}

static void run_channels(facet_session *s, int l, int phase, int n_chan) {
    facet_backend *be = s->be;
    int tasks = be->ops->threads(be) * 4;
    int per = (n_chan + tasks - 1) / tasks;
    per = (per + BLOCK - 1) / BLOCK * BLOCK; /* whole blocks of value channels */
    chan_job j = {s, l, per, phase, n_chan};
    be->ops->run(be, (n_chan + per - 1) / per, chan_task, &j);
}

/* x / sqrt(|x|^2 + 1e-6) * scale over n values (fla's l2norm, as transformers' l2norm) */
static void l2norm(float *x, int n, float scale) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    float inv = (float)(1.0 / sqrt(ss + 1e-6)) * scale;
    for (int i = 0; i < n; i++) x[i] *= inv;
}

/* Entry r after the conv: q and k normalised per key head (q also scaled by 1/sqrt(DK));
 * per value head exp(g) and beta from ba. */
static void gates_row(facet_session *s, int l, int r) {
    const gdn_dims d = dims_of(&s->model->facts);
    const facet_layer_weights *L = &s->model->w.layers[l];
    float *qkv = s->ssm_xc + (size_t)r * d.CD;
    float qs = (float)(1.0 / sqrt((double)d.DK));
    for (int kh = 0; kh < d.NK; kh++) {
        l2norm(qkv + kh * d.DK, d.DK, qs);
        l2norm(qkv + d.KD + kh * d.DK, d.DK, 1.0f);
    }
    const float *ba = s->ssm_dtin + (size_t)r * 2 * d.NV;
    float *out = s->ssm_dt + (size_t)r * 2 * d.NV;
    for (int h = 0; h < d.NV; h++) {
        int kh = h / d.R, i = h % d.R;
        float b = ba[kh * 2 * d.R + i], a = ba[kh * 2 * d.R + d.R + i];
        float g = -expf(L->ssm_a_log[h]) * softplus(a + L->ssm_dt_bias[h]);
        out[h] = expf(g);
        out[d.NV + h] = 1.0f / (1.0f + expf(-b));
    }
}

/* Entry r's y: per value head RMSNorm(o) * w * SiLU(z) (Qwen3NextRMSNormGated: the norm
 * before the gate, eps rms_norm_eps, w as stored). */
static void gnorm_row(facet_session *s, int l, int r) {
    const facet_facts *f = &s->model->facts;
    const gdn_dims d = dims_of(f);
    const float *w = s->model->w.layers[l].ssm_gnorm;
    const float *zrow = s->ssm_xz + (size_t)r * (d.CD + d.DI);
    for (int h = 0; h < d.NV; h++) {
        float *y = s->ssm_dbc + (size_t)r * d.DI + (size_t)h * d.DV;
        const float *z = zrow + (h / d.R) * d.W + 2 * d.DK + d.R * d.DV + (h % d.R) * d.DV;
        double ss = 0;
        for (int j = 0; j < d.DV; j++) ss += (double)y[j] * y[j];
        float inv = (float)(1.0 / sqrt(ss / (double)d.DV + f->rms_norm_eps));
        for (int j = 0; j < d.DV; j++) y[j] = y[j] * inv * w[j] * silu(z[j]);
    }
}

/* xn (RMSNorm_in(x)) -> xn (out_proj's output) for entries [0, n) of layer l. */
static void gated_delta_forward(facet_session *s, int l, int n) {
    facet_backend *be = s->be;
    const gdn_dims d = dims_of(&s->model->facts);
    const facet_layer_weights *L = &s->model->w.layers[l];
    { /* qkvz and ba in one sweep */
        float *const y[2] = {s->ssm_xz, s->ssm_dtin};
        const facet_wtensor *const w[2] = {&L->ssm_in_proj, &L->ssm_ba};
        const float *const b[2] = {NULL, NULL};
        be->ops->matmul_multi(be, 2, y, s->xn, w, b, n);
    }
    run_channels(s, l, 0, d.CD); /* conv1d + SiLU over q, k, v */
    facet_for_rows(s, l, n, gates_row);
    run_channels(s, l, 1, d.DI); /* the delta rule */
    facet_for_rows(s, l, n, gnorm_row);
    be->ops->matmul(be, s->xn, s->ssm_dbc, &L->ssm_out_proj, NULL, n);
}

const facet_mixer_kind facet_mixer_gated_delta = {"gated_delta", gated_delta_takes,
                                                  gated_delta_forward};
