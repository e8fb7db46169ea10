/*
 * ssm.c — the causal depthwise conv of the Mamba mixers over a block of channels (ssm.h),
 * and the size of their per-thread work area.
 */
#include "engine/ssm.h"

#include <math.h>

#include "kernels/cpu/kernels.h"

size_t facet_ssm_conv_work_floats(int K) { return (size_t)(2 * K) * FACET_SSM_CONV_BLOCK; }

void facet_ssm_conv_block(const facet_ssm_conv_io *io, float *win, const int *order, int n,
                          int c0, int c1, float *work) {
    enum { CB = FACET_SSM_CONV_BLOCK };
    int K = io->K, cw = c1 - c0;
    float *wt = work, *hist = work + (size_t)K * CB; /* (K, CB) taps; (K - 1, CB) inputs */
    for (int c = 0; c < cw; c++) {
        for (int k = 0; k < K; k++) wt[k * CB + c] = io->w[(size_t)(c0 + c) * K + k];
        for (int k = 0; k < K - 1; k++) hist[k * CB + c] = win[(size_t)(c0 + c) * (K - 1) + k];
    }
    float bias[CB];
    for (int c = 0; c < cw; c++) bias[c] = io->b ? io->b[c0 + c] : 0.0f;
    for (int i = 0; i < n; i++) {
        int r = order[i];
        const float *restrict xin = io->in + (size_t)r * io->in_stride + c0;
        float *restrict out = io->out + (size_t)r * io->out_stride + c0;
        float acc[CB];
        for (int c = 0; c < cw; c++) acc[c] = bias[c];
        for (int k = 0; k < K - 1; k++) {
            const float *restrict wk = wt + k * CB, *restrict hk = hist + k * CB;
            for (int c = 0; c < cw; c++) acc[c] += wk[c] * hk[c];
        }
        const float *restrict wl = wt + (K - 1) * CB;
        for (int c = 0; c < cw; c++) acc[c] += wl[c] * xin[c];
        /* the window moves on by one: oldest out, this input in */
        if (K > 1) {
            memmove(hist, hist + CB, sizeof(float) * (size_t)(K - 2) * CB);
            memcpy(hist + (K - 2) * CB, xin, sizeof(float) * (size_t)cw);
        }
        memcpy(out, acc, sizeof(float) * (size_t)cw);
        facet_act_row(out, cw, FACET_ACT_SILU);
    }
    for (int c = 0; c < cw; c++)
        for (int k = 0; k < K - 1; k++) win[(size_t)(c0 + c) * (K - 1) + k] = hist[k * CB + c];
}

size_t facet_ssm_work_floats(const facet_facts *f) {
    if (f->n_ssm_layers <= 0 && !f->ssm_parallel) return 0;
    size_t K = (size_t)f->ssm_conv_kernel, N = (size_t)f->ssm_state_size;
    size_t need = facet_ssm_conv_work_floats((int)K);
    size_t scan1 = 3 * 16 * N + 64; /* Mamba-1: A, h, decays of 16 channels; dt, x */
    if (scan1 > need) need = scan1;
    if (f->ssm_version == 2) { /* mixer_mamba2.c's SSD block */
        size_t L = FACET_SSD_L, P = (size_t)f->ssm_head_dim;
        size_t ssd = 2 * L * L + 2 * L * P + N * P + 3 * N * L + 8 * L;
        if (ssd > need) need = ssd;
    }
    return (need + 15) / 16 * 16; /* each thread's area 64-byte aligned from the first */
}

void facet_ssm_softplus(float *x, int n) {
    enum { B = 64 };
    for (int i0 = 0; i0 < n; i0 += B) {
        int w = n - i0 < B ? n - i0 : B;
        float *restrict v = x + i0;
        float t[B], e[B], one[B];
        for (int i = 0; i < w; i++) {
            t[i] = -fabsf(v[i]); /* -|x|: a zero is -0 (facet_ssm_decays) */
            one[i] = 1.0f;
        }
        facet_ssm_decays(e, t, one, 1, w);
        for (int i = 0; i < w; i++) {
            float s = e[i] / (2.0f + e[i]), s2 = s * s;
            float p = 1.0f / 17.0f;
            p = p * s2 + 1.0f / 15.0f;
            p = p * s2 + 1.0f / 13.0f;
            p = p * s2 + 1.0f / 11.0f;
            p = p * s2 + 1.0f / 9.0f;
            p = p * s2 + 1.0f / 7.0f;
            p = p * s2 + 1.0f / 5.0f;
            p = p * s2 + 1.0f / 3.0f;
            p = p * s2 + 1.0f;
            float pos = v[i] > 0.0f ? v[i] : 0.0f, sp = pos + 2.0f * s * p;
            v[i] = v[i] > 20.0f ? v[i] : sp;
        }
    }
}
