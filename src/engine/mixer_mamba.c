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
 * The conv and the scan run in parallel over blocks of channels, vectorized over the
 * channels of a block (ssm.h: the conv 64 at a time; the scan 16, its state transposed to
 * lanes of channels while a chunk runs); the projections are the backend's matmuls.
 * Mamba-1 has no SSD form (A is per channel and state element, not a scalar per head), so
 * the scan stays token by token, each chunk's channels in SIMD lanes.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/layer.h"
#include "engine/ssm.h"

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


typedef struct {
    facet_session *s;
    int l, per, phase; /* phase 0: conv; 1: scan; per: channels per task (a multiple of 64) */
} chan_job;

/* The scan of 16 channels [c0, c0 + cw) of one sequence's entries order[0 .. n), the
 * lanes over the channels: h (N, 16) transposed from the state and back, per entry and
 * state element n the decays of the 16 channels, h = e h + dt x B_n, y += h C_n (n in
 * order: the bits of a channel-by-channel loop). work: 2 * 16 * N floats. */
static void scan_block(facet_session *s, const facet_layer_weights *L, float *h0, int c0,
                       int cw, const int *order, int n, float *work) {
    const facet_facts *f = &s->model->facts;
    int DI = (int)f->ssm_inner, N = (int)f->ssm_state_size, R = (int)f->ssm_dt_rank;
    int W = R + 2 * N;
    enum { V = 16 };
    float *a = work, *h = a + V * N;
    for (int c = 0; c < V; c++) /* A = -exp(A_log), h; lanes past cw stay zero */
        for (int k = 0; k < N; k++) {
            a[k * V + c] = c < cw ? -expf(L->ssm_a_log[(size_t)(c0 + c) * N + k]) : -1.0f;
            h[k * V + c] = c < cw ? h0[(size_t)(c0 + c) * N + k] : 0.0f;
        }
    float d[V];
    for (int c = 0; c < V; c++) d[c] = c < cw ? L->ssm_d[c0 + c] : 0.0f;
    for (int i = 0; i < n; i++) {
        int r = order[i];
        const float *B = s->ssm_dbc + (size_t)r * W + R, *C = B + N;
        const float *dtr = s->ssm_dt + (size_t)r * DI + c0, *xr = s->ssm_xc + (size_t)r * DI + c0;
        float dt[V], x[V], dx[V], y[V];
        if (cw == V)
            for (int c = 0; c < V; c++) dt[c] = dtr[c], x[c] = xr[c];
        else
            for (int c = 0; c < V; c++) dt[c] = c < cw ? dtr[c] : 0.0f, x[c] = c < cw ? xr[c] : 0.0f;
        for (int c = 0; c < V; c++) dx[c] = dt[c] * x[c];
        facet_ssm_scan16(h, y, a, dt, dx, B, C, N);
        float *out = s->ssm_xc + (size_t)r * DI + c0;
        const float *gate = s->ssm_xz + (size_t)r * 2 * DI + DI + c0; /* SiLU(z): softplus_row */
        for (int c = 0; c < cw; c++) out[c] = (y[c] + x[c] * d[c]) * gate[c];
    }
    for (int c = 0; c < cw; c++)
        for (int k = 0; k < N; k++) h0[(size_t)(c0 + c) * N + k] = h[k * V + c];
}

/* Channels [c0, c1) of every sequence group of the chunk, entries in position order. */
static void chan_task(void *ctx, int task, int thread) {
    const chan_job *j = ctx;
    facet_session *s = j->s;
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[j->l];
    int DI = (int)f->ssm_inner, K = (int)f->ssm_conv_kernel;
    int c0 = task * j->per, c1 = c0 + j->per < DI ? c0 + j->per : DI;
    float *work = s->ssm_work + facet_ssm_work_floats(f) * (size_t)thread;
    facet_ssm_conv_io io = {L->ssm_conv_w, L->ssm_conv_b, K, s->ssm_xz, (size_t)2 * DI,
                            s->ssm_xc, (size_t)DI};
    for (int g = 0; g < s->n_groups; g++) {
        int first = s->group_row[g], n = s->group_len[g];
        const int *order = s->chunk_order + s->chunk_group[first];
        float *state = s->kv.seqs[s->seq_ids[first]].layers[j->l].state;
        int step = j->phase == 0 ? FACET_SSM_CONV_BLOCK : 16;
        for (int c = c0; c < c1; c += step) {
            int ce = c + step < c1 ? c + step : c1;
            if (j->phase == 0)
                facet_ssm_conv_block(&io, state, order, n, c, ce, work);
            else
                scan_block(s, L, state + (size_t)DI * (K - 1), c, ce - c, order, n, work);
        }
    }
}

static void run_channels(facet_session *s, int l, int phase) {
    facet_backend *be = s->be;
    int DI = (int)s->model->facts.ssm_inner;
    int tasks = be->ops->threads(be) * 4;
    int blocks = (DI + FACET_SSM_CONV_BLOCK - 1) / FACET_SSM_CONV_BLOCK;
    int per = ((blocks + tasks - 1) / tasks) * FACET_SSM_CONV_BLOCK;
    chan_job j = {s, l, per, phase};
    be->ops->run(be, (DI + per - 1) / per, chan_task, &j);
}

/* dt of entry r: softplus over its DI values (vectorized, ssm.h) (dt_proj's bias is in the matmul); its gate
 * z = SiLU(z) in place (vectorized; read only by the scan). */
static void softplus_row(facet_session *s, int l, int r) {
    (void)l;
    size_t DI = (size_t)s->model->facts.ssm_inner;
    float *dt = s->ssm_dt + r * DI;
    facet_ssm_softplus(dt, (int)DI);
    facet_act_row(s->ssm_xz + r * 2 * DI + DI, (int)DI, FACET_ACT_SILU);
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
