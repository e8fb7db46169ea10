/*
 * mixer_mamba2.c — the Mamba-2 mixer kind (layer.h), as transformers' Mamba2Mixer
 * (torch_forward and its cache step) with mamba_ssm's per-group gated RMSNorm:
 *   (z, xBC, dt) = h W_in^T (+ b_in)               DI, CD = DI + 2 G N, NH columns
 *   xBC = SiLU(conv1d(xBC) + b)                    depthwise, causal, K taps per channel
 *   (x, B, C) = xBC                                DI, G N, G N
 *   dt = softplus(dt + dt_bias)                    (NH) per token
 *   s_t = exp(A dt) s_{t-1} + dt B_g x             A = -exp(A_log): one per head; per
 *                                                  channel of head h, B and C of h's group
 *   y = s_t C_g + D x                              (per head: D, dt and A are scalars)
 *   y = RMSNorm_group(y * SiLU(z)) * w             per group of DI / G channels
 *       (facts ssm_norm: or RMSNorm_group(y) * w * SiLU(z), or y * SiLU(z): Falcon-H1)
 *   out = y W_out^T (+ b_out)                      (the biases: Falcon-H1's, facts
 *                                                  ssm_in_bias / ssm_out_bias)
 * muP (facts mup, Falcon-H1): in_proj's output times ssm_mup per segment z, x, B, C, dt.
 * The norm is per group (mamba_ssm, llama.cpp); transformers' pure-torch path normalises
 * over all DI channels, the same only when n_groups = 1.
 *
 * State (a STATE slot, kv_cache.h), per sequence and layer, float32, zero at first:
 *   conv[CD][K - 1]  the last K - 1 inputs of each conv channel, oldest first
 *   ssm[DI][N]       s, channel c = head * head_dim + p
 * Entries of one sequence run in position order, each channel reading only its own
 * sequence's state: batched and chunked runs give the bits of a sequence alone.
 */
#include <math.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/layer.h"

static int mamba2_takes(const facet_facts *f, int l) {
    return l >= 0 && l < FACET_MAX_LAYERS && f->layer_ssm[l] == 2;
}

static float silu(float v) { return v / (1.0f + expf(-v)); }
static float softplus(float v) { return v > 20.0f ? v : log1pf(expf(v)); }

typedef struct {
    facet_session *s;
    int l, per, phase, n_chan; /* phase 0: conv over CD channels; 1: scan over DI */
} chan_job;

static void chan_task(void *ctx, int task, int thread) {
    (void)thread;
    const chan_job *j = ctx;
    facet_session *s = j->s;
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[j->l];
    int DI = (int)f->ssm_inner, K = (int)f->ssm_conv_kernel, N = (int)f->ssm_state_size;
    int G = (int)f->ssm_groups, NH = (int)f->ssm_heads, P = (int)f->ssm_head_dim;
    int CD = DI + 2 * G * N, PW = DI + CD + NH;
    int c0 = task * j->per, c1 = c0 + j->per < j->n_chan ? c0 + j->per : j->n_chan;
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
                    float xin = s->ssm_xz[(size_t)r * PW + DI + c];
                    float acc = b;
                    for (int k = 0; k < K - 1; k++) acc += w[k] * win[k];
                    acc += w[K - 1] * xin;
                    for (int k = 0; k + 1 < K - 1; k++) win[k] = win[k + 1];
                    if (K > 1) win[K - 2] = xin;
                    s->ssm_xc[(size_t)r * CD + c] = silu(acc);
                }
            } else {
                int h = c / P, grp = h / (NH / G);
                float *st = state + (size_t)CD * (K - 1) + (size_t)c * N;
                float a = -expf(L->ssm_a_log[h]), d = L->ssm_d[h];
                for (int i = 0; i < s->group_len[g]; i++) {
                    int r = order[i];
                    const float *xbc = s->ssm_xc + (size_t)r * CD;
                    const float *B = xbc + DI + grp * N, *C = xbc + DI + G * N + grp * N;
                    float dt = s->ssm_dtin[(size_t)r * NH + h], x = xbc[c];
                    float dA = expf(a * dt), dx = dt * x, y = 0.0f;
                    for (int n = 0; n < N; n++) {
                        st[n] = st[n] * dA + dx * B[n];
                        y += st[n] * C[n];
                    }
                    s->ssm_dbc[(size_t)r * DI + c] = y + d * x;
                }
            }
        }
    }
}

static void run_channels(facet_session *s, int l, int phase, int n_chan) {
    facet_backend *be = s->be;
    int tasks = be->ops->threads(be) * 4;
    int per = (n_chan + tasks - 1) / tasks;
    if (per < 16) per = 16;
    chan_job j = {s, l, per, phase, n_chan};
    be->ops->run(be, (n_chan + per - 1) / per, chan_task, &j);
}

/* Entry r's dt: softplus(in_proj's dt columns + dt_bias), NH values. */
static void dt_row(facet_session *s, int l, int r) {
    const facet_facts *f = &s->model->facts;
    const float *bias = s->model->w.layers[l].ssm_dt_bias;
    size_t DI = (size_t)f->ssm_inner, NH = (size_t)f->ssm_heads;
    size_t CD = DI + 2 * (size_t)(f->ssm_groups * f->ssm_state_size), PW = DI + CD + NH;
    const float *in = s->ssm_xz + r * PW + DI + CD;
    for (size_t h = 0; h < NH; h++) s->ssm_dtin[r * NH + h] = softplus(in[h] + bias[h]);
}

/* Entry r's y (DI) through the output norm (facts ssm_norm): GATED y * SiLU(z),
 * RMS-normalised per group of DI / G channels, times the norm's weight (mamba_ssm's
 * RMSNormGated, norm after the gate); BEFORE_GATE the same norm of y, then times SiLU(z)
 * (FalconH1RMSNormGated with norm_before_gate); NONE y * SiLU(z) alone. */
static void gnorm_row(facet_session *s, int l, int r) {
    const facet_facts *f = &s->model->facts;
    const float *w = s->model->w.layers[l].ssm_gnorm;
    size_t DI = (size_t)f->ssm_inner, G = (size_t)f->ssm_groups, GS = DI / G;
    size_t CD = DI + 2 * G * (size_t)f->ssm_state_size, PW = DI + CD + (size_t)f->ssm_heads;
    float *y = s->ssm_dbc + r * DI;
    const float *z = s->ssm_xz + r * PW;
    if (f->ssm_norm != FACET_SSM_NORM_BEFORE_GATE)
        for (size_t c = 0; c < DI; c++) y[c] *= silu(z[c]);
    if (f->ssm_norm == FACET_SSM_NORM_NONE) return;
    for (size_t g = 0; g < G; g++) {
        float *yg = y + g * GS;
        double ss = 0;
        for (size_t c = 0; c < GS; c++) ss += (double)yg[c] * yg[c];
        float inv = (float)(1.0 / sqrt(ss / (double)GS + f->rms_norm_eps));
        for (size_t c = 0; c < GS; c++) yg[c] = yg[c] * inv * w[g * GS + c];
    }
    if (f->ssm_norm == FACET_SSM_NORM_BEFORE_GATE)
        for (size_t c = 0; c < DI; c++) y[c] *= silu(z[c]);
}

/* Entry r's in_proj row times the muP vector (facts ssm_mup): z, x, B, C, dt each by
 * its own multiplier (Falcon-H1's mup_vector). */
static void mup_row(facet_session *s, int l, int r) {
    (void)l;
    const facet_facts *f = &s->model->facts;
    size_t DI = (size_t)f->ssm_inner, GN = (size_t)(f->ssm_groups * f->ssm_state_size);
    size_t NH = (size_t)f->ssm_heads, PW = 2 * DI + 2 * GN + NH;
    const size_t end[5] = {DI, 2 * DI, 2 * DI + GN, 2 * DI + 2 * GN, PW};
    float *p = s->ssm_xz + r * PW;
    for (size_t seg = 0, c = 0; seg < 5; seg++) {
        float m = (float)f->ssm_mup[seg];
        for (; c < end[seg]; c++) p[c] *= m;
    }
}

static int mup_on(const facet_facts *f) {
    for (int i = 0; f->mup && i < 5; i++)
        if (f->ssm_mup[i] != 1.0) return 1;
    return 0;
}

void facet_mamba2_mix(facet_session *s, int l, int n, const float *in, float *out) {
    facet_backend *be = s->be;
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[l];
    int DI = (int)f->ssm_inner, CD = DI + 2 * (int)(f->ssm_groups * f->ssm_state_size);
    be->ops->matmul(be, s->ssm_xz, in, &L->ssm_in_proj, L->ssm_in_bias, n);
    if (mup_on(f)) facet_for_rows(s, l, n, mup_row);
    run_channels(s, l, 0, CD); /* conv1d + SiLU over x, B and C */
    facet_for_rows(s, l, n, dt_row);
    run_channels(s, l, 1, DI); /* the scan and D skip */
    facet_for_rows(s, l, n, gnorm_row);
    be->ops->matmul(be, out, s->ssm_dbc, &L->ssm_out_proj, L->ssm_out_bias, n);
}

/* xn (RMSNorm(x)) -> xn (out_proj's output) for entries [0, n) of layer l. */
static void mamba2_forward(facet_session *s, int l, int n) { facet_mamba2_mix(s, l, n, s->xn, s->xn); }

const facet_mixer_kind facet_mixer_mamba2 = {"mamba2", mamba2_takes, mamba2_forward};
