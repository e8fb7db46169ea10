/*
 * ssm.h — pieces the state-space mixers share (mixer_mamba.c, mixer_mamba2.c): the
 * vectorizable decay exponential, the causal depthwise conv over a block of channels, and
 * the size of the per-thread work area they run in (model_internal.h: ssm_work).
 */
#ifndef FACET_ENGINE_SSM_H
#define FACET_ENGINE_SSM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model/facts.h"

/* Channels per conv block: a multiple of 16, so a block's SiLU splits into AVX-512 groups
 * the same way whatever the thread count (blocks start at multiples of it). */
#define FACET_SSM_CONV_BLOCK 64

/* Mamba-2's SSD block: a sequence's entries are cut where the position is a multiple of
 * it, so that a prompt prefilled in calls of a multiple of it (256) gives the bits of
 * one call; blocks shorter than FACET_SSD_MIN entries (a decode step) run token by token. */
#define FACET_SSD_L 64
#define FACET_SSD_MIN 4

/* e[i] = exp(x[i] * dt[i]) for x[i] * dt[i] < 0 or -0 (the scans' decays; +0 reads as below
 * -87: pass a zero as -0), written without
 * calls or float selects so the loop vectorizes: the argument is clamped at -87 by its bits
 * (a non-positive float's bits, as int32, grow as it falls), v = k ln2 + r with k =
 * round(v / ln2) (truncating v / ln2 - 0.5 toward zero), e^r by Cephes' expf polynomial,
 * 2^k put in the exponent bits. Within 8.1e-8 relative error of exp on [-87, 0] (measured
 * over 2^20 points); below -87 it gives e^-87 (1.6e-38: a decay that has erased the
 * state). dt_stride 0: one dt for every element. Element i's bits depend only on its
 * inputs. */
static inline void facet_ssm_decays(float *restrict e, const float *restrict x,
                                    const float *restrict dt, int dt_stride, int n_el) {
    for (int n = 0; n < n_el; n++) {
        float v = x[n] * dt[n * dt_stride];
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

/* One conv's operands: entry r's input channel c at in[r * in_stride + c], its output at
 * out[r * out_stride + c]; taps w (C, K) and bias b (C, or NULL) as conv1d's weight. */
typedef struct {
    const float *w, *b;
    int K;
    const float *in;
    size_t in_stride;
    float *out;
    size_t out_stride;
} facet_ssm_conv_io;

/*
 * out = SiLU(b + sum_k w_k window_k) for channels [c0, c1) (at most FACET_SSM_CONV_BLOCK,
 * c0 a multiple of it) of one sequence's entries order[0 .. n) in position order, the
 * window win (C, K - 1; the last K - 1 inputs of each channel, oldest first) read and
 * carried. Vectorized over the channels: each entry's sum is b + w_0 in_0 + ... in tap
 * order (the bits of a channel-by-channel loop), the SiLU is facet_act_row's over the
 * block. work: facet_ssm_conv_work_floats(K) floats.
 */
void facet_ssm_conv_block(const facet_ssm_conv_io *io, float *win, const int *order, int n,
                          int c0, int c1, float *work);
size_t facet_ssm_conv_work_floats(int K);

/* x[i] = softplus(x[i]) for i < n, as torch.nn.functional.softplus (beta 1, threshold 20:
 * x past 20 kept), computed as max(x, 0) + log1p(exp(-|x|)) so that it vectorizes: the
 * exponential facet_ssm_decays', log1p(t) = 2 atanh(t / (2 + t)) by its series to s^17 (t
 * in (0, 1]: s <= 1/3, truncation below 4e-9). Within 2.6e-7 relative of the float64
 * softplus (measured over 2^20 points of [-30, 30]). */
void facet_ssm_softplus(float *x, int n);

/* Floats of one thread's work area for the SSM layers of f (the largest of the conv's,
 * Mamba-1's channel-block scan's and Mamba-2's SSD block's); 0 without SSM layers. */
size_t facet_ssm_work_floats(const facet_facts *f);

#endif
