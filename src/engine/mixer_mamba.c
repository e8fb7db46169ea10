/*
 * mixer_mamba.c — the Mamba (selective state space) mixer kind and the "none" FFN kind of
 * its blocks (layer.h), as transformers' MambaMixer (slow path) and MambaBlock:
 *   (x, z) = h W_in^T                              in_proj: DI rows each
 *   x = SiLU(conv1d(x) + b)                        depthwise, causal, K taps per channel
 *   (dt, B, C) = x W_x^T                           x_proj: R, N, N columns
 *   (Jamba, facts ssm_dbc_norm: dt, B, C = RMSNorm of each, with its weight)
 *   dt = softplus(dt W_dt^T + b_dt)                (DI) per token
 *   h_t = exp(A dt) * h_{t-1} + dt * B x           A = -exp(A_log), (DI, N) per sequence
 *   y = h_t C + D * x;  y = y * SiLU(z)
 *   out = y W_out^T
 * The block is x + mixer(RMSNorm(x)): no FFN (ffn kind "none" below adds nothing).
 *
 * State (a STATE slot of the cache, kv_cache.h), per sequence and layer, float32:
 *   conv[DI][K - 1]  the last K - 1 inputs x of each channel, oldest first
 *   ssm[DI][N]       h
 * zero for a new sequence. A chunk's entries of one sequence run in position order and
 * carry the state from one to the next, so a prompt prefilled in chunks gives the bits
 * of one pass, and a sequence's result does not depend on the other sequences of a batch
 * (each channel's arithmetic reads only its own sequence's state and rows).
 * The conv and the scan run in parallel over blocks of channels; the projections are the
 * backend's matmuls.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/layer.h"

static int mamba_takes(const facet_facts *f, int l) {
    return l >= 0 && l < FACET_MAX_LAYERS && f->layer_ssm[l] == 1;
}

/* Mamba and Mamba-2 layers: no FFN (a hybrid's recurrent layers keep theirs: ssm_ffn);
 * nor the mixer-only layers of single-block families (Nemotron-H's attention) */
static int ssm_takes(const facet_facts *f, int l) {
    return l >= 0 && l < FACET_MAX_LAYERS &&
           ((f->layer_ssm[l] && !f->ssm_ffn) || f->layer_block[l] == FACET_BLOCK_MIXER);
}

size_t facet_mamba_state_floats(const facet_facts *f) {
    size_t DI = (size_t)f->ssm_inner, N = (size_t)f->ssm_state_size;
    size_t CD = DI + (f->ssm_version == 2 || f->ssm_version == 4 ? 2 * (size_t)f->ssm_groups * N : 0);
    return CD * (size_t)(f->ssm_conv_kernel - 1) + DI * N;
}

static float silu(float v) { return v / (1.0f + expf(-v)); }

/* e[n] = exp(x[n] * dt) for x[n] < 0, dt >= 0 (the scan's decays), written without calls
 * or float selects so the loop vectorizes: the argument is clamped at -87 by its bits (a
 * non-positive float's bits, as int32, grow as it falls), x = k ln2 + r with k = round(x /
 * ln2) (truncating x / ln2 - 0.5 toward zero), e^r by Cephes' expf polynomial, 2^k put
 * in the exponent bits. Within 8.1e-8 relative error of exp on [-87, 0] (measured over
 * 2^20 points); below -87 it returns e^-87 (1.6e-38: a decay that has erased the state). */
static void decays(float *restrict e, const float *restrict x, float dt, int n_el) {
    for (int n = 0; n < n_el; n++) {
        float v = x[n] * dt;
        int32_t ib;
        memcpy(&ib, &v, sizeof ib);
        ib = ib > (int32_t)0xc2ae0000 ? (int32_t)0xc2ae0000 : ib; /* -87.0f */
        memcpy(&v, &ib, sizeof v);
        int32_t k = (int32_t)(v * 1.44269504088896341f - 0.5f);
        float kf = (float)k;
        float r = v - kf * 0.693359375f - kf * -2.12194440e-4f;
        float p = 1.9875691500e-4f;
        p = p * r + 1.3981999507e-3f;
        p = p * r + 8.3334519073e-3f;
        p = p * r + 4.1665795894e-2f;
        p = p * r + 1.6666665459e-1f;
        p = p * r + 5.0000001201e-1f;
        p = p * r * r + r + 1.0f;
        int32_t bits = (k + 127) * (1 << 23);
        float two_k;
        memcpy(&two_k, &bits, sizeof two_k);
        e[n] = p * two_k;
    }
}

/* Largest state_size the scan's per-channel A table holds (the table refuses more:
 * verdict "state-space mixer"). */
#define SCAN_N_MAX 256

/* torch.nn.functional.softplus (beta 1, threshold 20) */
static float softplus(float v) { return v > 20.0f ? v : log1pf(expf(v)); }

typedef struct {
    facet_session *s;
    int l, per, phase; /* phase 0: conv; 1: scan */
} chan_job;

/* Channels [c0, c1) of every sequence group of the chunk, entries in position order. */
static void chan_task(void *ctx, int task, int thread) {
    (void)thread;
    const chan_job *j = ctx;
    facet_session *s = j->s;
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[j->l];
    int DI = (int)f->ssm_inner, K = (int)f->ssm_conv_kernel, N = (int)f->ssm_state_size;
    int R = (int)f->ssm_dt_rank, W = R + 2 * N;
    int c0 = task * j->per, c1 = c0 + j->per < DI ? c0 + j->per : DI;
    for (int g = 0; g < s->n_groups; g++) {
        int first = s->group_row[g];
        const int *order = s->chunk_order + s->chunk_group[first];
        float *state = s->kv.seqs[s->seq_ids[first]].layers[j->l].state;
        for (int c = c0; c < c1; c++) {
            if (j->phase == 0) {
                float *win = state + (size_t)c * (K - 1);
                const float *w = L->ssm_conv_w + (size_t)c * K;
                float b = L->ssm_conv_b ? L->ssm_conv_b[c] : 0.0f;
                for (int i = 0; i < s->group_len[g]; i++) {
                    int r = order[i];
                    float xin = s->ssm_xz[(size_t)r * 2 * DI + c];
                    float acc = b;
                    for (int k = 0; k < K - 1; k++) acc += w[k] * win[k];
                    acc += w[K - 1] * xin;
                    for (int k = 0; k + 1 < K - 1; k++) win[k] = win[k + 1];
                    if (K > 1) win[K - 2] = xin;
                    s->ssm_xc[(size_t)r * DI + c] = silu(acc);
                }
            } else {
                float *h = state + (size_t)DI * (K - 1) + (size_t)c * N;
                const float *A_log = L->ssm_a_log + (size_t)c * N;
                float a[SCAN_N_MAX]; /* A = -exp(A_log), once per channel and chunk */
                for (int n = 0; n < N; n++) a[n] = -expf(A_log[n]);
                for (int i = 0; i < s->group_len[g]; i++) {
                    int r = order[i];
                    const float *B = s->ssm_dbc + (size_t)r * W + R, *C = B + N;
                    float dt = s->ssm_dt[(size_t)r * DI + c];
                    float x = s->ssm_xc[(size_t)r * DI + c];
                    float dx = dt * x, y = 0.0f, e[SCAN_N_MAX];
                    decays(e, a, dt, N);
                    for (int n = 0; n < N; n++) {
                        h[n] = e[n] * h[n] + dx * B[n];
                        y += h[n] * C[n];
                    }
                    y += x * L->ssm_d[c];
                    s->ssm_xc[(size_t)r * DI + c] = y * silu(s->ssm_xz[(size_t)r * 2 * DI + DI + c]);
                }
            }
        }
    }
}

static void run_channels(facet_session *s, int l, int phase) {
    facet_backend *be = s->be;
    int DI = (int)s->model->facts.ssm_inner;
    int tasks = be->ops->threads(be) * 4;
    int per = (DI + tasks - 1) / tasks;
    if (per < 16) per = 16;
    chan_job j = {s, l, per, phase};
    be->ops->run(be, (DI + per - 1) / per, chan_task, &j);
}

/* dt of entry r: softplus over its DI values (dt_proj's bias is in the matmul). */
static void softplus_row(facet_session *s, int l, int r) {
    (void)l;
    size_t DI = (size_t)s->model->facts.ssm_inner;
    float *dt = s->ssm_dt + r * DI;
    for (size_t c = 0; c < DI; c++) dt[c] = softplus(dt[c]);
}

/* v[0..n) = v / sqrt(mean(v^2) + eps) * w (Jamba's JambaRMSNorm) */
static void rms_inplace(float *v, const float *w, size_t n, float eps) {
    float ss = 0.0f;
    for (size_t i = 0; i < n; i++) ss += v[i] * v[i];
    float inv = 1.0f / sqrtf(ss / (float)n + eps);
    for (size_t i = 0; i < n; i++) v[i] = v[i] * inv * w[i];
}

/* facts ssm_dbc_norm: entry r's dt (R), B (N) and C (N) of x_proj each normed in place */
static void dbc_norm_row(facet_session *s, int l, int r) {
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[l];
    size_t R = (size_t)f->ssm_dt_rank, N = (size_t)f->ssm_state_size, W = R + 2 * N;
    float *row = s->ssm_dbc + r * W, eps = (float)f->rms_norm_eps;
    rms_inplace(row, L->ssm_dt_norm, R, eps);
    rms_inplace(row + R, L->ssm_b_norm, N, eps);
    rms_inplace(row + R + N, L->ssm_c_norm, N, eps);
}

/* dt_proj's input: the first R columns of entry r's x_proj row, packed. */
static void dt_in_row(facet_session *s, int l, int r) {
    (void)l;
    const facet_facts *f = &s->model->facts;
    size_t R = (size_t)f->ssm_dt_rank, W = R + 2 * (size_t)f->ssm_state_size;
    memcpy(s->ssm_dtin + r * R, s->ssm_dbc + r * W, R * sizeof(float));
}

/* xn (RMSNorm(x)) -> xn (out_proj's output) for entries [0, n) of layer l. */
static void mamba_forward(facet_session *s, int l, int n) {
    facet_backend *be = s->be;
    const facet_layer_weights *L = &s->model->w.layers[l];
    be->ops->matmul(be, s->ssm_xz, s->xn, &L->ssm_in_proj, NULL, n);
    run_channels(s, l, 0); /* conv1d + SiLU, the conv window carried */
    be->ops->matmul(be, s->ssm_dbc, s->ssm_xc, &L->ssm_x_proj, NULL, n);
    if (s->model->facts.ssm_dbc_norm) facet_for_rows(s, l, n, dbc_norm_row);
    facet_for_rows(s, l, n, dt_in_row);
    be->ops->matmul(be, s->ssm_dt, s->ssm_dtin, &L->ssm_dt_proj, L->ssm_dt_bias, n);
    facet_for_rows(s, l, n, softplus_row);
    run_channels(s, l, 1); /* the selective scan, D skip and SiLU(z) gate */
    be->ops->matmul(be, s->xn, s->ssm_xc, &L->ssm_out_proj, NULL, n);
}

const facet_mixer_kind facet_mixer_mamba = {"mamba", mamba_takes, mamba_forward};

/* A Mamba block has no FFN: its output is zero, so the residual adds nothing. The same
 * zero is the "none" mixer of an FFN-only layer (Nemotron-H's MLP layers). */
static void none_row(facet_session *s, int l, int r) {
    (void)l;
    size_t H = (size_t)s->model->facts.hidden_size;
    memset(s->xn + r * H, 0, H * sizeof(float));
}

static void none_forward(facet_session *s, int l, int n) { facet_for_rows(s, l, n, none_row); }

const facet_ffn_kind facet_ffn_none = {"none", ssm_takes, none_forward};

/* FFN-only layers (facts layer_block FACET_BLOCK_FFN): no mixer */
static int no_mixer_takes(const facet_facts *f, int l) {
    return l >= 0 && l < FACET_MAX_LAYERS && f->layer_block[l] == FACET_BLOCK_FFN;
}

const facet_mixer_kind facet_mixer_none = {"none", no_mixer_takes, none_forward};
