/*
 * kernels.h — CPU compute kernels the forward pass calls. The model code never
 * contains a SIMD intrinsic; it calls these. All arrays are float32, row-major.
 */
#ifndef FACET_KERNELS_CPU_H
#define FACET_KERNELS_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu/threadpool.h"

/*
 * Y[r][o] = sum_i X[r][i] * W[o][i] (+ bias[o] when bias != NULL), for r < n_rows,
 * o < n_out: X is [n_rows][n_in], W is [n_out][n_in] (the PyTorch nn.Linear weight
 * layout), Y is [n_rows][n_out]. Work is split over the pool by blocks of output rows;
 * each weight row is read once per call for all input rows, so a batch of rows (prefill,
 * or several sequences decoding) shares one sweep over W.
 */
void facet_matmul_f32(facet_pool *pool, float *Y, const float *X, const float *W,
                      const float *bias, int n_rows, int n_in, int n_out);

/*
 * RMSNorm as transformers' LlamaRMSNorm: y = x / sqrt(mean(x^2) + eps) * (offset + w),
 * the mean accumulated in double. offset is 0 (Llama) or 1 (Gemma's 1 + w). y may
 * alias x. n elements.
 */
void facet_rmsnorm(float *y, const float *x, const float *w, int n, double eps, float offset);

/*
 * RoPE in the rotate_half layout (transformers' apply_rotary_pos_emb): for a head vector
 * x of head_dim with rotary dims rot (even, <= head_dim) and half = rot/2,
 *   x'[i]        = x[i] * cos[i] - x[i + half] * sin[i]
 *   x'[i + half] = x[i + half] * cos[i] + x[i] * sin[i],   i < half;
 * dims >= rot pass through. cos/sin hold `half` values for the position. Applied to
 * n_heads consecutive heads of x.
 */
void facet_rope_apply(float *x, int n_heads, int head_dim, int rot, const float *cos,
                      const float *sin);

/* In-place softmax of x[0..n) (max-subtracted, exp in float, sum in double). */
void facet_softmax(float *x, int n);

/* gate[i] = act(gate[i]) * up[i] for i < n; act: 0 silu, 1 gelu tanh, 2 gelu erf
 * (values of facet_act). */
void facet_gated_act(float *gate, const float *up, int n, int act);

/* Dot product of two float32 vectors of length n. */
float facet_dot_f32(const float *a, const float *b, int n);

/* y[i] += a * x[i] for i < n. */
void facet_axpy_f32(float *y, float a, const float *x, int n);

#endif
