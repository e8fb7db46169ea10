/*
 * mixer_shortconv.c — LFM2's gated short-convolution mixer kind (layer.h), as
 * transformers' Lfm2ShortConv (slow_forward and its cache step):
 *   (B, C, x) = h W_in^T                    3 x H columns, in that order (chunk(3))
 *   u = B * x                               per channel
 *   c = conv1d_causal(u)                    depthwise, K = conv_L_cache taps per channel,
 *                                           no bias (conv_bias true is refused)
 *   y = C * c
 *   out = y W_out^T
 * facts: layer_ssm[l] == 3, ssm_inner = H channels, ssm_conv_kernel = K.
 *
 * State (a STATE slot, kv_cache.h), per sequence and layer, float32, zero at first:
 *   conv[H][K - 1]  the last K - 1 inputs u of each channel, oldest first
 * Entries of one sequence run in position order, each channel reading only its own
 * sequence's state: batched and chunked runs give the bits of a sequence alone.
 * Scratch (model_internal.h): ssm_xz (R, 3H) in_proj's B, C, x; ssm_xc (R, H) y.
 */
#include <string.h>

#include "backend/backend.h"
#include "engine/layer.h"

static int shortconv_takes(const facet_facts *f, int l) {
    return l >= 0 && l < FACET_MAX_LAYERS && f->layer_ssm[l] == 3;
}

typedef struct {
    facet_session *s;
    int l, per;
} conv_job;

/* Channels of one tile of the vector path, the largest K it keeps on the stack, and the
 * fewest entries of a sequence it runs (a decode step's one entry runs the scalar loop:
 * the tile's copies would cost more than its one row). */
#define CONV_TILE 64
#define CONV_KMAX 16
#define CONV_MIN_ROWS 4
/* At most this many entries x channels the conv runs on the calling thread (~10 us of
 * work; a decode step of LFM2-1.2B is 2,048): the pool's run and barrier cost more, the
 * more so on a loaded machine where a worker may wait for its core. */
#define CONV_INLINE 16384

/* Channels [c0, c1) of one sequence's n entries (rows order[0..n)), K <= CONV_KMAX: the
 * tile's taps transposed to [K][tile] and its window copied to [K - 1][tile], then each
 * entry runs as loops over the tile's channels (vectorized), the window shifted by one
 * row at a time. Per channel the same operations in the same order as the scalar path:
 * acc = sum_{k < K-1} w[k] win[k] + w[K-1] u, y = C acc. */
static void conv_tile(const float *bcx0, float *xc, const int *order, int n, int H, int K,
                      const float *wc, float *state, int c0, int c1) {
    float wt[CONV_KMAX][CONV_TILE], hist[CONV_KMAX][CONV_TILE], acc[CONV_TILE],
        u[CONV_TILE];
    int nc = c1 - c0;
    for (int c = 0; c < nc; c++) {
        for (int k = 0; k < K; k++) wt[k][c] = wc[(size_t)(c0 + c) * K + k];
        for (int k = 0; k + 1 < K; k++) hist[k][c] = state[(size_t)(c0 + c) * (K - 1) + k];
    }
    for (int i = 0; i < n; i++) {
        int r = order[i];
        const float *B = bcx0 + (size_t)r * 3 * H + c0, *C = B + H, *x = B + 2 * H;
        float *y = xc + (size_t)r * H + c0;
        for (int c = 0; c < nc; c++) acc[c] = 0.0f;
        for (int k = 0; k + 1 < K; k++)
            for (int c = 0; c < nc; c++) acc[c] += wt[k][c] * hist[k][c];
        for (int c = 0; c < nc; c++) {
            u[c] = B[c] * x[c];
            acc[c] += wt[K - 1][c] * u[c];
            y[c] = C[c] * acc[c];
        }
        if (K > 1) {
            for (int k = 0; k + 2 < K; k++) memcpy(hist[k], hist[k + 1], sizeof(float) * (size_t)nc);
            memcpy(hist[K - 2], u, sizeof(float) * (size_t)nc);
        }
    }
    for (int c = 0; c < nc; c++)
        for (int k = 0; k + 1 < K; k++) state[(size_t)(c0 + c) * (K - 1) + k] = hist[k][c];
}

static void conv_task(void *ctx, int task, int thread) {
    (void)thread;
    const conv_job *j = ctx;
    facet_session *s = j->s;
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[j->l];
    int H = (int)f->ssm_inner, K = (int)f->ssm_conv_kernel;
    int c0 = task * j->per, c1 = c0 + j->per < H ? c0 + j->per : H;
    for (int g = 0; g < s->n_groups; g++) {
        int first = s->group_row[g];
        const int *order = s->chunk_order + s->chunk_group[first];
        float *state = s->kv.seqs[s->seq_ids[first]].layers[j->l].state;
        if (K <= CONV_KMAX && s->group_len[g] >= CONV_MIN_ROWS) {
            for (int t = c0; t < c1; t += CONV_TILE)
                conv_tile(s->ssm_xz, s->ssm_xc, order, s->group_len[g], H, K, L->ssm_conv_w,
                          state, t, t + CONV_TILE < c1 ? t + CONV_TILE : c1);
            continue;
        }
        for (int c = c0; c < c1; c++) {
            float *win = state + (size_t)c * (K - 1);
            const float *w = L->ssm_conv_w + (size_t)c * K;
            for (int i = 0; i < s->group_len[g]; i++) {
                int r = order[i];
                const float *bcx = s->ssm_xz + (size_t)r * 3 * H;
                float u = bcx[c] * bcx[2 * H + c], acc = 0.0f;
                for (int k = 0; k < K - 1; k++) acc += w[k] * win[k];
                acc += w[K - 1] * u;
                for (int k = 0; k + 1 < K - 1; k++) win[k] = win[k + 1];
                if (K > 1) win[K - 2] = u;
                s->ssm_xc[(size_t)r * H + c] = bcx[H + c] * acc;
            }
        }
    }
}

/* xn (RMSNorm(x), operator_norm) -> xn (out_proj's output) for entries [0, n) of layer l. */
static void shortconv_forward(facet_session *s, int l, int n) {
    facet_backend *be = s->be;
    const facet_layer_weights *L = &s->model->w.layers[l];
    int H = (int)s->model->facts.ssm_inner;
    be->ops->matmul(be, s->ssm_xz, s->xn, &L->ssm_in_proj, NULL, n);
    int tasks = be->ops->threads(be) * 4;
    int per = (H + tasks - 1) / tasks;
    if (per < 16) per = 16;
    conv_job j = {s, l, per};
    if ((size_t)n * (size_t)H <= CONV_INLINE) { /* a decode step: no pool run and barrier */
        for (int t = 0; t < (H + per - 1) / per; t++) conv_task(&j, t, 0);
    } else {
        be->ops->run(be, (H + per - 1) / per, conv_task, &j);
    }
    be->ops->matmul(be, s->xn, s->ssm_xc, &L->ssm_out_proj, NULL, n);
}

const facet_mixer_kind facet_mixer_shortconv = {"shortconv", shortconv_takes, shortconv_forward};
