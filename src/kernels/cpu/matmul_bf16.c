/*
 * matmul_bf16.c — packed bf16 and f16 micro-kernels.
 *
 * f16 (all paths) and bf16 on the scalar and AVX2 paths widen each weight exactly to
 * float32 and do one fused multiply-add per (row, output, k) with float32 activations, in
 * the same order, so those paths agree bit for bit. bf16 on CPUs with AVX512-BF16 rounds
 * the activations to bf16 (round to nearest even) and uses vdpbf16ps, which adds the two
 * exact products of a k pair into a float32 lane per instruction: twice the FMA rate,
 * with the activations' rounding (relative 2^-9) as the price.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/ukernel_gen.h"

#define XROW(r) ((const float *)(x->data + (size_t)(r0 + (r)) * x->stride))
#define XROW16(r) ((const uint16_t *)(x->data + (size_t)(r0 + (r)) * x->stride))

/* ---- scalar ---- */

static void uk_f16_scalar(FACET_UK_PARAMS) {
    for (int r = 0; r < mr; r++)
        for (int p = 0; p < np; p++) {
            const uint16_t *w = (const uint16_t *)(W + (size_t)p * pb);
            const float *xr = XROW(r);
            float *t = tile + r * ld + p * 16, acc[16];
            for (int l = 0; l < 16; l++) acc[l] = accumulate ? t[l] : 0.0f;
            for (int k = k0; k < k1; k++)
                for (int l = 0; l < 16; l++)
                    acc[l] = fmaf(xr[k], facet_f16_to_f32(w[(size_t)k * 16 + l]), acc[l]);
            memcpy(t, acc, sizeof acc);
        }
}

static void uk_bf16_scalar(FACET_UK_PARAMS) {
    for (int r = 0; r < mr; r++)
        for (int p = 0; p < np; p++) {
            const uint16_t *w = (const uint16_t *)(W + (size_t)p * pb);
            const float *xr = XROW(r);
            float *t = tile + r * ld + p * 16, acc[16];
            for (int l = 0; l < 16; l++) acc[l] = accumulate ? t[l] : 0.0f;
            for (int k = k0; k < k1; k += 2) {
                const uint16_t *wk = w + (size_t)(k / 2) * 32;
                for (int l = 0; l < 16; l++) {
                    acc[l] = fmaf(xr[k], facet_bf16_to_f32(wk[2 * l]), acc[l]);
                    acc[l] = fmaf(xr[k + 1], facet_bf16_to_f32(wk[2 * l + 1]), acc[l]);
                }
            }
            memcpy(t, acc, sizeof acc);
        }
}

/* ---- AVX2 (+F16C): one panel = two 8-lane halves ---- */

FACET_INLINE FACET_TGT_AVX2 void f16_avx2_body(const facet_xprep *x, int r0, const uint8_t *W,
                                                size_t pb, int k0, int k1, float *tile, int ld,
                                                int accumulate, const int MR, const int NP) {
    (void)NP;
    (void)pb;
    __m256 acc[4][2];
    for (int r = 0; r < MR; r++)
        for (int h = 0; h < 2; h++)
            acc[r][h] = accumulate ? _mm256_loadu_ps(tile + r * ld + h * 8) : _mm256_setzero_ps();
    const uint16_t *w = (const uint16_t *)W;
    for (int k = k0; k < k1; k++) {
        __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + (size_t)k * 16)));
        __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + (size_t)k * 16 + 8)));
        for (int r = 0; r < MR; r++) {
            __m256 xb = _mm256_broadcast_ss(XROW(r) + k);
            acc[r][0] = _mm256_fmadd_ps(xb, w0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(xb, w1, acc[r][1]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int h = 0; h < 2; h++) _mm256_storeu_ps(tile + r * ld + h * 8, acc[r][h]);
}

#define B_F16_AVX2(M, N) f16_avx2_body(FACET_UK_ARGS, M, N)
static FACET_TGT_AVX2 void uk_f16_avx2(FACET_UK_PARAMS) {
    switch (FACET_UK_KEY(mr, np)) { FACET_UK_MR4(FACET_UK_NP1, B_F16_AVX2) }
}

FACET_INLINE FACET_TGT_AVX2 void bf16_avx2_body(const facet_xprep *x, int r0, const uint8_t *W,
                                                 size_t pb, int k0, int k1, float *tile, int ld,
                                                 int accumulate, const int MR, const int NP) {
    (void)NP;
    (void)pb;
    __m256 acc[4][2];
    for (int r = 0; r < MR; r++)
        for (int h = 0; h < 2; h++)
            acc[r][h] = accumulate ? _mm256_loadu_ps(tile + r * ld + h * 8) : _mm256_setzero_ps();
    const uint16_t *w = (const uint16_t *)W;
    const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
    for (int k = k0; k < k1; k += 2) {
        __m256 we[2], wo[2];
        for (int h = 0; h < 2; h++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(w + (size_t)(k / 2) * 32 + h * 16));
            we[h] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); /* k even: low halves  */
            wo[h] = _mm256_castsi256_ps(_mm256_and_si256(v, hi));  /* k odd: high halves  */
        }
        for (int r = 0; r < MR; r++) {
            __m256 xe = _mm256_broadcast_ss(XROW(r) + k), xo = _mm256_broadcast_ss(XROW(r) + k + 1);
            for (int h = 0; h < 2; h++) {
                acc[r][h] = _mm256_fmadd_ps(xe, we[h], acc[r][h]);
                acc[r][h] = _mm256_fmadd_ps(xo, wo[h], acc[r][h]);
            }
        }
    }
    for (int r = 0; r < MR; r++)
        for (int h = 0; h < 2; h++) _mm256_storeu_ps(tile + r * ld + h * 8, acc[r][h]);
}

#define B_BF16_AVX2(M, N) bf16_avx2_body(FACET_UK_ARGS, M, N)
static FACET_TGT_AVX2 void uk_bf16_avx2(FACET_UK_PARAMS) {
    switch (FACET_UK_KEY(mr, np)) { FACET_UK_MR4(FACET_UK_NP1, B_BF16_AVX2) }
}

/* ---- AVX-512 ---- */

FACET_INLINE FACET_TGT_AVX512 void f16_avx512_body(const facet_xprep *x, int r0, const uint8_t *W,
                                                    size_t pb, int k0, int k1, float *tile, int ld,
                                                    int accumulate, const int MR, const int NP) {
    __m512 acc[8][4];
    const uint16_t *w[4];
    for (int p = 0; p < NP; p++) w[p] = (const uint16_t *)(W + (size_t)p * pb);
    for (int r = 0; r < MR; r++)
        for (int p = 0; p < NP; p++)
            acc[r][p] = accumulate ? _mm512_loadu_ps(tile + r * ld + p * 16) : _mm512_setzero_ps();
    for (int k = k0; k < k1; k++) {
        __m512 wv[4];
        for (int p = 0; p < NP; p++)
            wv[p] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w[p] + (size_t)k * 16)));
        for (int r = 0; r < MR; r++) {
            __m512 xb = _mm512_set1_ps(XROW(r)[k]);
            for (int p = 0; p < NP; p++) acc[r][p] = _mm512_fmadd_ps(xb, wv[p], acc[r][p]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int p = 0; p < NP; p++) _mm512_storeu_ps(tile + r * ld + p * 16, acc[r][p]);
}

/* One row (decode), N (1 or 2) panels side by side from panel p, for f16 weights: as
 * bf16_row1_n below (two chains: one FMA latency per 32 bytes held a core to ~30 GB/s). */
FACET_INLINE FACET_TGT_AVX512 void f16_row1_n(const float *xr, const uint8_t *W, size_t pb, int p,
                                               int k0, int k1, float *tile, int accumulate,
                                               const int N) {
    const uint16_t *w[2];
    __m512 a[2];
    for (int i = 0; i < N; i++) {
        w[i] = (const uint16_t *)(W + (size_t)(p + i) * pb);
        a[i] = accumulate ? _mm512_loadu_ps(tile + (p + i) * 16) : _mm512_setzero_ps();
    }
    for (int k = k0; k < k1; k++) {
        __m512 xb = _mm512_set1_ps(xr[k]);
        for (int i = 0; i < N; i++)
            a[i] = _mm512_fmadd_ps(xb, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w[i] + (size_t)k * 16))), a[i]);
    }
    for (int i = 0; i < N; i++) _mm512_storeu_ps(tile + (p + i) * 16, a[i]);
}

static FACET_TGT_AVX512 void f16_avx512_row1(const facet_xprep *x, int r0, const uint8_t *W,
                                             size_t pb, int np, int k0, int k1, float *tile,
                                             int accumulate) {
    int p = 0;
    for (; p + 2 <= np; p += 2) f16_row1_n(XROW(0), W, pb, p, k0, k1, tile, accumulate, 2);
    for (; p < np; p++) f16_row1_n(XROW(0), W, pb, p, k0, k1, tile, accumulate, 1);
}

#define B_F16_AVX512(M, N) f16_avx512_body(FACET_UK_ARGS, M, N)
static FACET_TGT_AVX512 void uk_f16_avx512(FACET_UK_PARAMS) {
    if (mr == 1) {
        f16_avx512_row1(x, r0, W, pb, np, k0, k1, tile, accumulate);
        return;
    }
    switch (FACET_UK_KEY(mr, np)) { FACET_UK_MR8(FACET_UK_NP3, B_F16_AVX512) }
}

/* Bytes ahead in each panel's stream that a call's first row tile prefetches into L2
 * (as the int8 kernel does): 8 rows of Qwen3-0.6B, matmuls only, 181-188 -> 200-213
 * tok/s in the machine's slow state, 210 -> 241-247 in its fast state; 8 and 16 KiB
 * were no better (bench/RESULTS-perf.md section 7). */
#define BF16_PREFETCH_BYTES 4096

FACET_INLINE FACET_TGT_AVX512BF16 void bf16_avx512_body(const facet_xprep *x, int r0,
                                                         const uint8_t *W, size_t pb, int k0,
                                                         int k1, float *tile, int ld, int accumulate,
                                                         const int MR, const int NP, int pf) {
    __m512 acc[8][4];
    const uint16_t *w[4];
    for (int p = 0; p < NP; p++) w[p] = (const uint16_t *)(W + (size_t)p * pb);
    for (int r = 0; r < MR; r++)
        for (int p = 0; p < NP; p++)
            acc[r][p] = accumulate ? _mm512_loadu_ps(tile + r * ld + p * 16) : _mm512_setzero_ps();
    for (int k = k0; k < k1; k += 2) {
        __m512i wv[4];
        for (int p = 0; p < NP; p++) wv[p] = _mm512_loadu_si512((const void *)(w[p] + (size_t)k * 16));
        if (pf)
            for (int p = 0; p < NP; p++)
                _mm_prefetch((const char *)(w[p] + (size_t)k * 16) + BF16_PREFETCH_BYTES, _MM_HINT_T1);
        for (int r = 0; r < MR; r++) {
            int32_t pair;
            memcpy(&pair, XROW16(r) + k, 4);
            __m512i xb = _mm512_set1_epi32(pair);
            for (int p = 0; p < NP; p++)
                acc[r][p] = _mm512_dpbf16_ps(acc[r][p], (__m512bh)wv[p], (__m512bh)xb);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int p = 0; p < NP; p++) _mm512_storeu_ps(tile + r * ld + p * 16, acc[r][p]);
}

FACET_TGT_AVX512BF16 void facet_x_to_bf16_avx512bf16(const float *x, uint16_t *out, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(out + i), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + i)));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m256i h = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i));
        _mm256_mask_storeu_epi16(out + i, m, h);
    }
}

/* One row (decode), N (1 or 2) panels side by side from panel p: one chain per panel,
 * each the tiled body's chain for its panel, so a row's bits do not depend on its batch.
 * Two chains keep the stream from waiting on one vdpbf16ps latency per 64 bytes (~38
 * GB/s a core from L3, below the machine's fast DRAM state; 2 chains: ~65). */
FACET_INLINE FACET_TGT_AVX512BF16 void bf16_row1_n(const uint16_t *xr, const uint8_t *W, size_t pb,
                                                    int p, int k0, int k1, float *tile,
                                                    int accumulate, const int N) {
    const uint16_t *w[2];
    __m512 a[2];
    for (int i = 0; i < N; i++) {
        w[i] = (const uint16_t *)(W + (size_t)(p + i) * pb);
        a[i] = accumulate ? _mm512_loadu_ps(tile + (p + i) * 16) : _mm512_setzero_ps();
    }
    for (int k = k0; k < k1; k += 2) {
        int32_t pair;
        memcpy(&pair, xr + k, 4);
        __m512bh xb = (__m512bh)_mm512_set1_epi32(pair);
        for (int i = 0; i < N; i++)
            a[i] = _mm512_dpbf16_ps(a[i], (__m512bh)_mm512_loadu_si512((const void *)(w[i] + (size_t)k * 16)), xb);
    }
    for (int i = 0; i < N; i++) _mm512_storeu_ps(tile + (p + i) * 16, a[i]);
}

/* One row: the call's panels (contiguous: one sequential stream), two at a time. */
static FACET_TGT_AVX512BF16 void bf16_avx512_row1(const facet_xprep *x, int r0, const uint8_t *W,
                                                  size_t pb, int np, int k0, int k1, float *tile,
                                                  int accumulate) {
    int p = 0;
    for (; p + 2 <= np; p += 2) bf16_row1_n(XROW16(0), W, pb, p, k0, k1, tile, accumulate, 2);
    for (; p < np; p++) bf16_row1_n(XROW16(0), W, pb, p, k0, k1, tile, accumulate, 1);
}

/* pf: only a call's first row tile streams the weights from memory (matmul.c) */
#define B_BF16_AVX512(M, N) bf16_avx512_body(FACET_UK_ARGS, M, N, r0 == 0)
static FACET_TGT_AVX512BF16 void uk_bf16_avx512bf16(FACET_UK_PARAMS) {
    if (mr == 1) {
        bf16_avx512_row1(x, r0, W, pb, np, k0, k1, tile, accumulate);
        return;
    }
    switch (FACET_UK_KEY(mr, np)) { FACET_UK_MR8(FACET_UK_NP3, B_BF16_AVX512) }
}

const facet_ukernel facet_uk_f16_scalar = {"f16-scalar", FACET_X_F32, 4, 1, uk_f16_scalar, 0, 0};
const facet_ukernel facet_uk_f16_avx2 = {"f16-avx2", FACET_X_F32, 4, 1, uk_f16_avx2, 0, 0};
const facet_ukernel facet_uk_f16_avx512 = {"f16-avx512", FACET_X_F32, 8, 3, uk_f16_avx512, 4, 0};
const facet_ukernel facet_uk_bf16_scalar = {"bf16-scalar", FACET_X_F32, 4, 1, uk_bf16_scalar, 0, 0};
const facet_ukernel facet_uk_bf16_avx2 = {"bf16-avx2", FACET_X_F32, 4, 1, uk_bf16_avx2, 0, 0};
const facet_ukernel facet_uk_bf16_avx512bf16 = {"bf16-avx512bf16", FACET_X_BF16, 8, 3,
                                                uk_bf16_avx512bf16, 4, 0};
