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
 * Entries of one sequence run in position order, each head reading only its own
 * sequence's state: a sequence's result does not depend on the other sequences of a batch.
 *
 * The scan runs in SSD blocks (the Mamba-2 paper's state space duality): a sequence's
 * entries are cut where the position is a multiple of FACET_SSD_L (ssm.h), and within a
 * block of L entries t = 0 .. L-1, per head, with l_t = sum_{i<=t} A dt_i (in double),
 *   y_t = sum_{j<=t} (C_t . B_j) exp(l_t - l_j) dt_j x_j     the masked (C B^T o decay)
 *                                                            matrix times x: intra-block
 *       + exp(l_t) S C_t                                     the carried state S
 *   S  <- exp(l_{L-1}) S + sum_j exp(l_{L-1} - l_j) dt_j x_j B_j^T
 * each a small GEMM (kernels.h facet_gemm_f32_acc: register tiles, FMAs), C B^T once per
 * group of heads and block; tasks by heads, each head's arithmetic the same whatever the
 * thread count. A block shorter than FACET_SSD_MIN (a decode step) runs the recurrence
 * token by token. A prompt prefilled in calls of a multiple of FACET_SSD_L gives the bits
 * of one call; other cuts agree within float rounding (test_engine_mamba: 1e-5), decode
 * steps batched or alone bit for bit.
 */
#include <math.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/layer.h"
#include "engine/ssm.h"

static int mamba2_takes(const facet_facts *f, int l) {
    return l >= 0 && l < FACET_MAX_LAYERS && f->layer_ssm[l] == 2;
}

typedef struct {
    facet_session *s;
    int l, per; /* channels (conv) or heads (scan) per task */
} m2_job;

/* The conv1d + SiLU over conv channels [task * per, ..) (per a multiple of the block). */
static void conv_task(void *ctx, int task, int thread) {
    const m2_job *j = ctx;
    facet_session *s = j->s;
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[j->l];
    int DI = (int)f->ssm_inner, K = (int)f->ssm_conv_kernel, N = (int)f->ssm_state_size;
    int G = (int)f->ssm_groups, NH = (int)f->ssm_heads;
    int CD = DI + 2 * G * N, PW = DI + CD + NH;
    int c0 = task * j->per, c1 = c0 + j->per < CD ? c0 + j->per : CD;
    float *work = s->ssm_work + facet_ssm_work_floats(f) * (size_t)thread;
    facet_ssm_conv_io io = {L->ssm_conv_w, L->ssm_conv_b, K, s->ssm_xz + DI, (size_t)PW,
                            s->ssm_xc, (size_t)CD};
    for (int g = 0; g < s->n_groups; g++) {
        int first = s->group_row[g];
        const int *order = s->chunk_order + s->chunk_group[first];
        float *win = s->kv.seqs[s->seq_ids[first]].layers[j->l].state;
        for (int c = c0; c < c1; c += FACET_SSM_CONV_BLOCK) {
            int ce = c + FACET_SSM_CONV_BLOCK < c1 ? c + FACET_SSM_CONV_BLOCK : c1;
            facet_ssm_conv_block(&io, win, order, s->group_len[g], c, ce, work);
        }
    }
}

/* One head's operands within a group's entries. */
typedef struct {
    const facet_facts *f;
    float a, d;        /* A = -exp(A_log), D                                          */
    int h, grp, CD, NH;
    float *S;          /* (P, N) the head's state                                     */
} head_ctx;

/* Entries order[0 .. n) token by token: s = exp(A dt) s + dt x B; y = s . C + D x. */
static void head_steps(facet_session *s, const head_ctx *hc, const int *order, int n) {
    const facet_facts *f = hc->f;
    int DI = (int)f->ssm_inner, N = (int)f->ssm_state_size, G = (int)f->ssm_groups;
    int P = (int)f->ssm_head_dim;
    for (int i = 0; i < n; i++) {
        int r = order[i];
        const float *xbc = s->ssm_xc + (size_t)r * hc->CD;
        const float *restrict B = xbc + DI + hc->grp * N, *restrict C = B + G * N;
        float dt = s->ssm_dtin[(size_t)r * hc->NH + hc->h], dA = expf(hc->a * dt);
        float *y = s->ssm_dbc + (size_t)r * DI + hc->h * P;
        for (int p = 0; p < P; p++) {
            float *restrict st = hc->S + (size_t)p * N;
            float x = xbc[hc->h * P + p], dx = dt * x;
            for (int k = 0; k < N; k++) st[k] = st[k] * dA + dx * B[k];
            y[p] = facet_dot_f32(st, C, N) + hc->d * x;
        }
    }
}

/* Rows of a block's lower-triangular products, in panels of this many: a panel's rows
 * need the columns (and inner indices) below its end only. */
#define SSD_PANEL 16

/* Group grp's operands for a block of n entries: cg (n, N) its C rows, bt (N, L) B
 * transposed, and cb (n, L) = C B^T for columns j <= t (the rest of a panel's columns
 * are computed too, never read). */
static void block_cb(facet_session *s, int grp, const int *order, int n, float *cb,
                     float *bt, float *cg, int CD) {
    const facet_facts *f = &s->model->facts;
    int DI = (int)f->ssm_inner, N = (int)f->ssm_state_size, G = (int)f->ssm_groups;
    enum { L = FACET_SSD_L };
    for (int j = 0; j < n; j++) {
        const float *B = s->ssm_xc + (size_t)order[j] * CD + DI + grp * N;
        for (int k = 0; k < N; k++) bt[k * L + j] = B[k];
        memcpy(cg + (size_t)j * N, B + G * N, sizeof(float) * (size_t)N);
    }
    for (int t0 = 0; t0 < n; t0 += SSD_PANEL) {
        int m = n - t0 < SSD_PANEL ? n - t0 : SSD_PANEL, w = t0 + m;
        for (int t = t0; t < t0 + m; t++) memset(cb + (size_t)t * L, 0, sizeof(float) * (size_t)w);
        facet_gemm_f32_acc(m, w, N, cg + (size_t)t0 * N, (size_t)N, bt, L, cb + (size_t)t0 * L, L);
    }
}

/* One SSD block of n (<= L) entries for one head (the file comment): cb, bt, cg from
 * block_cb for the head's group; w: the rest of the thread's work area. The products are
 * facet_gemm_f32_acc's: Y = diag(exp(l)) (C S^T), Y += M X (lower-triangular panels),
 * S^T = exp(l_{n-1}) S^T + (B^T diag(w)) X. */
static void head_block(facet_session *s, const head_ctx *hc, const int *order, int n,
                       const float *cb, const float *bt, const float *cg, float *w) {
    const facet_facts *f = hc->f;
    int DI = (int)f->ssm_inner, N = (int)f->ssm_state_size;
    int P = (int)f->ssm_head_dim;
    enum { L = FACET_SSD_L };
    double *lam = (double *)(void *)w; /* w is 8-byte aligned (scan_task) */
    float *M = w + 2 * L, *Y = M + L * L, *X = Y + (size_t)L * P, *St = X + (size_t)L * P;
    float *Wb = St + (size_t)N * P, *dt = Wb + (size_t)N * L, *v = dt + L, *e = v + L;
    float *neg = e + L, *el = neg + L;
    /* the block's x (n, P), dt and cumulative log-decays l_t */
    double acc = 0.0;
    for (int t = 0; t < n; t++) {
        int r = order[t];
        memcpy(X + (size_t)t * P, s->ssm_xc + (size_t)r * hc->CD + hc->h * P,
               sizeof(float) * (size_t)P);
        dt[t] = s->ssm_dtin[(size_t)r * hc->NH + hc->h];
        acc += (double)hc->a * dt[t];
        lam[t] = acc;
        neg[t] = -1.0f; /* decays of -(l_j - l_t): a zero is -0, never clamped */
    }
    /* M[t][j] = (C_t . B_j) exp(l_t - l_j) dt_j for j <= t, 0 for t < j < its panel's end */
    for (int t = 0; t < n; t++) {
        int end = (t / SSD_PANEL + 1) * SSD_PANEL;
        end = end < n ? end : n;
        for (int j = 0; j <= t; j++) v[j] = (float)(lam[j] - lam[t]);
        facet_ssm_decays(e, v, neg, 1, t + 1);
        const float *restrict c = cb + (size_t)t * L;
        float *restrict m = M + (size_t)t * L;
        for (int j = 0; j <= t; j++) m[j] = c[j] * e[j] * dt[j];
        for (int j = t + 1; j < end; j++) m[j] = 0.0f;
    }
    /* exp(l_t), the carried state's decay to each entry, and S^T into St (N, P) */
    for (int t = 0; t < n; t++) v[t] = (float)-lam[t];
    facet_ssm_decays(el, v, neg, 1, n);
    for (int p = 0; p < P; p++)
        for (int k = 0; k < N; k++) St[(size_t)k * P + p] = hc->S[(size_t)p * N + k];
    /* Y = diag(exp(l)) C S^T + M X */
    memset(Y, 0, sizeof(float) * (size_t)n * P);
    facet_gemm_f32_acc(n, P, N, cg, (size_t)N, St, (size_t)P, Y, (size_t)P);
    for (int t = 0; t < n; t++) {
        float *restrict y = Y + (size_t)t * P;
        for (int p = 0; p < P; p++) y[p] *= el[t];
    }
    for (int t0 = 0; t0 < n; t0 += SSD_PANEL) {
        int m = n - t0 < SSD_PANEL ? n - t0 : SSD_PANEL;
        facet_gemm_f32_acc(m, P, t0 + m, M + (size_t)t0 * L, L, X, (size_t)P,
                           Y + (size_t)t0 * P, (size_t)P);
    }
    for (int t = 0; t < n; t++) {
        float *restrict out = s->ssm_dbc + (size_t)order[t] * DI + hc->h * P;
        const float *restrict y = Y + (size_t)t * P, *restrict xt = X + (size_t)t * P;
        for (int p = 0; p < P; p++) out[p] = y[p] + hc->d * xt[p];
    }
    /* S^T <- exp(l_{n-1}) S^T + sum_j exp(l_{n-1} - l_j) dt_j B_j x_j^T */
    for (int j = 0; j < n; j++) v[j] = (float)(lam[j] - lam[n - 1]);
    facet_ssm_decays(e, v, neg, 1, n);
    for (int j = 0; j < n; j++) e[j] *= dt[j];
    for (int k = 0; k < N; k++) {
        float *restrict wk = Wb + (size_t)k * L;
        const float *restrict b = bt + (size_t)k * L;
        for (int j = 0; j < n; j++) wk[j] = e[j] * b[j];
    }
    float dend = el[n - 1];
    for (size_t i = 0; i < (size_t)N * P; i++) St[i] *= dend;
    facet_gemm_f32_acc(N, P, n, Wb, L, X, (size_t)P, St, (size_t)P);
    for (int p = 0; p < P; p++)
        for (int k = 0; k < N; k++) hc->S[(size_t)p * N + k] = St[(size_t)k * P + p];
}

/* Heads [task * per, ..) of every sequence group, blocks in position order. */
static void scan_task(void *ctx, int task, int thread) {
    const m2_job *j = ctx;
    facet_session *s = j->s;
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[j->l];
    int DI = (int)f->ssm_inner, K = (int)f->ssm_conv_kernel, N = (int)f->ssm_state_size;
    int G = (int)f->ssm_groups, NH = (int)f->ssm_heads, P = (int)f->ssm_head_dim;
    int CD = DI + 2 * G * N;
    int h0 = task * j->per, h1 = h0 + j->per < NH ? h0 + j->per : NH;
    float *work = s->ssm_work + facet_ssm_work_floats(f) * (size_t)thread;
    float *cb = work, *bt = cb + FACET_SSD_L * FACET_SSD_L, *cg = bt + (size_t)N * FACET_SSD_L;
    float *rest = cg + (size_t)N * FACET_SSD_L;
    for (int g = 0; g < s->n_groups; g++) {
        int first = s->group_row[g], n = s->group_len[g];
        const int *order = s->chunk_order + s->chunk_group[first];
        float *state = s->kv.seqs[s->seq_ids[first]].layers[j->l].state;
        for (int i = 0; i < n;) { /* blocks end where the position is a multiple of L */
            int e = i + 1;
            while (e < n && e - i < FACET_SSD_L && s->pos[order[e]] % FACET_SSD_L) e++;
            int have = -1; /* the group whose C B^T is in cb */
            for (int h = h0; h < h1; h++) {
                head_ctx hc = {f, -expf(L->ssm_a_log[h]), L->ssm_d[h], h, h / (NH / G), CD,
                               NH, state + (size_t)CD * (K - 1) + (size_t)h * P * N};
                if (e - i < FACET_SSD_MIN) {
                    head_steps(s, &hc, order + i, e - i);
                    continue;
                }
                if (hc.grp != have) {
                    block_cb(s, hc.grp, order + i, e - i, cb, bt, cg, CD);
                    have = hc.grp;
                }
                head_block(s, &hc, order + i, e - i, cb, bt, cg, rest);
            }
            i = e;
        }
    }
}

/* Entry r's dt: softplus(in_proj's dt columns + dt_bias), NH values; and its gate
 * SiLU(z) in place (z's DI columns; vectorized, read only by gnorm_row). */
static void dt_row(facet_session *s, int l, int r) {
    const facet_facts *f = &s->model->facts;
    const float *bias = s->model->w.layers[l].ssm_dt_bias;
    size_t DI = (size_t)f->ssm_inner, NH = (size_t)f->ssm_heads;
    size_t CD = DI + 2 * (size_t)(f->ssm_groups * f->ssm_state_size), PW = DI + CD + NH;
    const float *in = s->ssm_xz + r * PW + DI + CD;
    for (size_t h = 0; h < NH; h++) s->ssm_dtin[r * NH + h] = in[h] + bias[h];
    facet_ssm_softplus(s->ssm_dtin + r * NH, (int)NH);
    facet_act_row(s->ssm_xz + r * PW, (int)DI, FACET_ACT_SILU);
}

/* Entry r's y (DI) through the output norm (facts ssm_norm): GATED y * SiLU(z),
 * RMS-normalised per group of DI / G channels, times the norm's weight (mamba_ssm's
 * RMSNormGated, norm after the gate); BEFORE_GATE the same norm of y, then times SiLU(z)
 * (FalconH1RMSNormGated with norm_before_gate); NONE y * SiLU(z) alone. z holds SiLU(z)
 * already (dt_row). */
static void gnorm_row(facet_session *s, int l, int r) {
    const facet_facts *f = &s->model->facts;
    const float *w = s->model->w.layers[l].ssm_gnorm;
    size_t DI = (size_t)f->ssm_inner, G = (size_t)f->ssm_groups, GS = DI / G;
    size_t CD = DI + 2 * G * (size_t)f->ssm_state_size, PW = DI + CD + (size_t)f->ssm_heads;
    float *restrict y = s->ssm_dbc + r * DI;
    const float *restrict z = s->ssm_xz + r * PW; /* SiLU(z), dt_row */
    if (f->ssm_norm != FACET_SSM_NORM_BEFORE_GATE)
        for (size_t c = 0; c < DI; c++) y[c] *= z[c];
    if (f->ssm_norm == FACET_SSM_NORM_NONE) return;
    for (size_t g = 0; g < G; g++) {
        float *yg = y + g * GS;
        double ss = 0;
        for (size_t c = 0; c < GS; c++) ss += (double)yg[c] * yg[c];
        float inv = (float)(1.0 / sqrt(ss / (double)GS + f->rms_norm_eps));
        for (size_t c = 0; c < GS; c++) yg[c] = yg[c] * inv * w[g * GS + c];
    }
    if (f->ssm_norm == FACET_SSM_NORM_BEFORE_GATE)
        for (size_t c = 0; c < DI; c++) y[c] *= z[c];
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
    int NH = (int)f->ssm_heads, tasks = be->ops->threads(be) * 4;
    be->ops->matmul(be, s->ssm_xz, in, &L->ssm_in_proj, L->ssm_in_bias, n);
    if (mup_on(f)) facet_for_rows(s, l, n, mup_row);
    /* conv1d + SiLU over x, B and C: tasks of whole conv blocks */
    int blocks = (CD + FACET_SSM_CONV_BLOCK - 1) / FACET_SSM_CONV_BLOCK;
    m2_job cj = {s, l, ((blocks + tasks - 1) / tasks) * FACET_SSM_CONV_BLOCK};
    be->ops->run(be, (CD + cj.per - 1) / cj.per, conv_task, &cj);
    facet_for_rows(s, l, n, dt_row);
    m2_job sj = {s, l, (NH + tasks - 1) / tasks}; /* the scan and D skip, by heads */
    be->ops->run(be, (NH + sj.per - 1) / sj.per, scan_task, &sj);
    facet_for_rows(s, l, n, gnorm_row);
    be->ops->matmul(be, out, s->ssm_dbc, &L->ssm_out_proj, L->ssm_out_bias, n);
}

/* xn (RMSNorm(x)) -> xn (out_proj's output) for entries [0, n) of layer l. */
static void mamba2_forward(facet_session *s, int l, int n) { facet_mamba2_mix(s, l, n, s->xn, s->xn); }

const facet_mixer_kind facet_mixer_mamba2 = {"mamba2", mamba2_takes, mamba2_forward};
