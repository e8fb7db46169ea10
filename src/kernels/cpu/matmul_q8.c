/*
 * matmul_q8.c — int8 micro-kernels (weights and activations quantized per block of 32
 * along the input dim) and the activation quantizer.
 *
 * Per block b: isum = sum_k qw[k] * qx[k] exactly in int32, then
 *   y = fma(float(isum) * scale_w[b], scale_x[b], y)
 * in block order. The integer sums are exact on every path, so scalar, AVX2 (maddubs
 * with the sign trick) and AVX512-VNNI (vpdpbusd on weights stored biased by +128, the
 * bias removed with -128 * sum(qx) of the block) agree bit for bit.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/ukernel_gen.h"

/* The same rule in AVX-512, bit for bit: the max of |x| (a NaN never wins, as in the
 * scalar compare), the same 127 / amax, round to nearest even, the clamp with NaN to
 * -127, and the exact integer sum. */
static FACET_TGT_AVX512 void q8_quantize_avx512(const float *x, int nblk, int8_t *q, float *scale,
                                                int32_t *corr) {
    const __m512 hi = _mm512_set1_ps(127.0f), lo = _mm512_set1_ps(-127.0f);
    for (int b = 0; b < nblk; b++) {
        const float *xb = x + b * FACET_Q8_BLOCK;
        __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
        __m512 m = _mm512_max_ps(_mm512_abs_ps(v0), _mm512_setzero_ps()); /* NaN -> 0 */
        m = _mm512_max_ps(_mm512_abs_ps(v1), m);
        float amax = _mm512_reduce_max_ps(m);
        float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        __m512 idv = _mm512_set1_ps(id);
        __m512i s = _mm512_setzero_si512();
        for (int h = 0; h < 2; h++) {
            __m512 r = _mm512_roundscale_ps(_mm512_mul_ps(h ? v1 : v0, idv),
                                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            __mmask16 nan = _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q);
            r = _mm512_max_ps(_mm512_min_ps(r, hi), lo);
            r = _mm512_mask_mov_ps(r, nan, lo);
            __m512i iv = _mm512_cvtps_epi32(r);
            s = _mm512_add_epi32(s, iv);
            _mm_storeu_si128((__m128i *)(q + b * FACET_Q8_BLOCK + h * 16), _mm512_cvtepi32_epi8(iv));
        }
        scale[b] = amax / 127.0f;
        corr[b] = -128 * _mm512_reduce_add_epi32(s);
    }
}

void facet_q8_quantize_row(const float *x, int n, int8_t *q, float *scale, int32_t *corr) {
    if (facet_cpu()->level == FACET_CPU_AVX512) {
        q8_quantize_avx512(x, n / FACET_Q8_BLOCK, q, scale, corr);
        return;
    }
    for (int b = 0; b < n / FACET_Q8_BLOCK; b++) {
        const float *xb = x + b * FACET_Q8_BLOCK;
        float amax = 0.0f;
        for (int i = 0; i < FACET_Q8_BLOCK; i++) { /* fmaxf is a libm call here */
            float a = fabsf(xb[i]);
            amax = a > amax ? a : amax;
        }
        float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        int32_t sum = 0;
        for (int i = 0; i < FACET_Q8_BLOCK; i++) {
            float r = nearbyintf(xb[i] * id);
            int v = r > 127.0f ? 127 : r >= -127.0f ? (int)r : -127; /* NaN -> -127 */
            q[b * FACET_Q8_BLOCK + i] = (int8_t)v;
            sum += v;
        }
        scale[b] = amax / 127.0f;
        corr[b] = -128 * sum;
    }
}

#define XQ(r) ((const int8_t *)(x->data + (size_t)(r0 + (r)) * x->stride))
#define XS(r) (x->scale + (size_t)(r0 + (r)) * x->nblk)
#define XC(r) (x->corr + (size_t)(r0 + (r)) * x->nblk)
#define WSCALE(blk) ((blk) + FACET_Q8_BLOCK * FACET_PANEL)

static void uk_q8_scalar(FACET_UK_PARAMS) {
    for (int r = 0; r < mr; r++)
        for (int p = 0; p < np; p++) {
            float *t = tile + r * ld + p * 16, acc[16];
            for (int l = 0; l < 16; l++) acc[l] = accumulate ? t[l] : 0.0f;
            for (int b = k0 / FACET_Q8_BLOCK; b < k1 / FACET_Q8_BLOCK; b++) {
                const uint8_t *blk = W + (size_t)p * pb + (size_t)b * FACET_Q8_PBLOCK;
                const int8_t *xq = XQ(r) + b * FACET_Q8_BLOCK;
                float xs = XS(r)[b];
                for (int l = 0; l < 16; l++) {
                    int32_t isum = 0;
                    for (int i = 0; i < FACET_Q8_BLOCK; i++)
                        isum += ((int32_t)blk[(i / 4) * 64 + l * 4 + i % 4] - 128) * xq[i];
                    uint16_t h;
                    memcpy(&h, WSCALE(blk) + l * 2, 2);
                    acc[l] = fmaf((float)isum * facet_f16_to_f32(h), xs, acc[l]);
                }
            }
            memcpy(t, acc, sizeof acc);
        }
}

FACET_INLINE FACET_TGT_AVX2 void q8_avx2_body(const facet_xprep *x, int r0, const uint8_t *W,
                                               size_t pb, int k0, int k1, float *tile, int ld,
                                               int accumulate, const int MR, const int NP) {
    (void)NP;
    (void)pb;
    __m256 acc[2][2];
    for (int r = 0; r < MR; r++)
        for (int h = 0; h < 2; h++)
            acc[r][h] = accumulate ? _mm256_loadu_ps(tile + r * ld + h * 8) : _mm256_setzero_ps();
    const __m256i bias = _mm256_set1_epi8((char)0x80), ones = _mm256_set1_epi16(1);
    for (int b = k0 / FACET_Q8_BLOCK; b < k1 / FACET_Q8_BLOCK; b++) {
        const uint8_t *blk = W + (size_t)b * FACET_Q8_PBLOCK;
        __m256i is[2][2];
        for (int r = 0; r < MR; r++) is[r][0] = is[r][1] = _mm256_setzero_si256();
        for (int q = 0; q < 8; q++)
            for (int h = 0; h < 2; h++) {
                __m256i w = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(blk + q * 64 + h * 32)), bias);
                __m256i aw = _mm256_abs_epi8(w);
                for (int r = 0; r < MR; r++) {
                    int32_t quad;
                    memcpy(&quad, XQ(r) + b * FACET_Q8_BLOCK + q * 4, 4);
                    __m256i sx = _mm256_sign_epi8(_mm256_set1_epi32(quad), w);
                    is[r][h] = _mm256_add_epi32(is[r][h], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sx), ones));
                }
            }
        for (int h = 0; h < 2; h++) {
            __m256 ws = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(WSCALE(blk) + h * 16)));
            for (int r = 0; r < MR; r++)
                acc[r][h] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(is[r][h]), ws),
                                            _mm256_set1_ps(XS(r)[b]), acc[r][h]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int h = 0; h < 2; h++) _mm256_storeu_ps(tile + r * ld + h * 8, acc[r][h]);
}

#define B_Q8_AVX2(M, N) q8_avx2_body(FACET_UK_ARGS, M, N)
static FACET_TGT_AVX2 void uk_q8_avx2(FACET_UK_PARAMS) {
    switch (FACET_UK_KEY(mr, np)) { FACET_UK_MR2(FACET_UK_NP1, B_Q8_AVX2) }
}

/* Bytes ahead of the block being read that the first row tile of a call prefetches into
 * L2: the hardware prefetcher alone ran too short a distance while the tile computed,
 * and the stream and the arithmetic did not overlap (8 rows of Qwen3-0.6B: 64% -> 85%
 * of the read bandwidth, bench/RESULTS-perf.md section 6). */
#define Q8_PREFETCH_BYTES 12288

/*
 * Rows r0..r0+MR-1 against NP panels (MR <= 8, NP <= 2, MR * NP <= 8: the integer sums
 * and the float accumulators of the tile stay in registers). With pf, each block's
 * cache lines Q8_PREFETCH_BYTES ahead in every panel's stream are prefetched to L2.
 */
FACET_INLINE FACET_TGT_AVX512VNNI void q8_vnni_body(const facet_xprep *x, int r0, const uint8_t *W,
                                                     size_t pb, int k0, int k1, float *tile, int ld,
                                                     int accumulate, const int MR, const int NP,
                                                     int pf) {
    __m512 acc[8][2];
    for (int r = 0; r < MR; r++)
        for (int p = 0; p < NP; p++)
            acc[r][p] = accumulate ? _mm512_loadu_ps(tile + r * ld + p * 16) : _mm512_setzero_ps();
    for (int b = k0 / FACET_Q8_BLOCK; b < k1 / FACET_Q8_BLOCK; b++) {
        const uint8_t *blk[2];
        for (int p = 0; p < NP; p++) blk[p] = W + (size_t)p * pb + (size_t)b * FACET_Q8_PBLOCK;
        if (pf)
            for (int p = 0; p < NP; p++)
                for (int c = 0; c < FACET_Q8_PBLOCK; c += 64)
                    _mm_prefetch((const char *)blk[p] + Q8_PREFETCH_BYTES + c, _MM_HINT_T1);
        __m512i is[8][2];
        for (int r = 0; r < MR; r++) {
            __m512i c = _mm512_set1_epi32(XC(r)[b]);
            for (int p = 0; p < NP; p++) is[r][p] = c;
        }
        for (int q = 0; q < 8; q++) {
            __m512i w[2];
            for (int p = 0; p < NP; p++) w[p] = _mm512_loadu_si512((const void *)(blk[p] + q * 64));
            for (int r = 0; r < MR; r++) {
                int32_t quad;
                memcpy(&quad, XQ(r) + b * FACET_Q8_BLOCK + q * 4, 4);
                __m512i xb = _mm512_set1_epi32(quad);
                for (int p = 0; p < NP; p++) is[r][p] = _mm512_dpbusd_epi32(is[r][p], w[p], xb);
            }
        }
        for (int p = 0; p < NP; p++) {
            __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)WSCALE(blk[p])));
            for (int r = 0; r < MR; r++)
                acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(is[r][p]), ws),
                                            _mm512_set1_ps(XS(r)[b]), acc[r][p]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int p = 0; p < NP; p++) _mm512_storeu_ps(tile + r * ld + p * 16, acc[r][p]);
}

/* One row (decode): the np panels one after the other, so the weights are read as one
 * sequential stream (contiguous panels) that the hardware prefetcher follows; two
 * integer chains per block hide vpdpbusd's latency (integer sums: same bits). */
static FACET_TGT_AVX512VNNI void q8_vnni_row1(const facet_xprep *x, int r0, const uint8_t *W,
                                              size_t pb, int np, int k0, int k1, float *tile,
                                              int accumulate) {
    const int8_t *xq = XQ(0);
    const float *xs = XS(0);
    const int32_t *xc = XC(0);
    for (int p = 0; p < np; p++) {
        float *t = tile + p * 16;
        __m512 acc = accumulate ? _mm512_loadu_ps(t) : _mm512_setzero_ps();
        for (int b = k0 / FACET_Q8_BLOCK; b < k1 / FACET_Q8_BLOCK; b++) {
            const uint8_t *blk = W + (size_t)p * pb + (size_t)b * FACET_Q8_PBLOCK;
            __m512i i0 = _mm512_set1_epi32(xc[b]), i1 = _mm512_setzero_si512();
            for (int q = 0; q < 8; q += 2) {
                int32_t qa, qb;
                memcpy(&qa, xq + b * FACET_Q8_BLOCK + q * 4, 4);
                memcpy(&qb, xq + b * FACET_Q8_BLOCK + q * 4 + 4, 4);
                i0 = _mm512_dpbusd_epi32(i0, _mm512_loadu_si512((const void *)(blk + q * 64)), _mm512_set1_epi32(qa));
                i1 = _mm512_dpbusd_epi32(i1, _mm512_loadu_si512((const void *)(blk + q * 64 + 64)), _mm512_set1_epi32(qb));
            }
            __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)WSCALE(blk)));
            acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(i0, i1)), ws),
                                  _mm512_set1_ps(xs[b]), acc);
        }
        _mm512_storeu_ps(t, acc);
    }
}

/* pf: only a call's first row tile streams the weights from memory; later tiles of the
 * same panels find them in L2 (matmul.c keeps a task's weights within it). */
#define B_Q8_VNNI(M, N) q8_vnni_body(FACET_UK_ARGS, M, N, r0 == 0)
static FACET_TGT_AVX512VNNI void uk_q8_avx512vnni(FACET_UK_PARAMS) {
    if (mr == 1) {
        q8_vnni_row1(x, r0, W, pb, np, k0, k1, tile, accumulate);
        return;
    }
    if (mr > 4) { /* 5..8 rows (a batch's first tile, which streams the weights): one panel
                   * at a time, in stream order, so all the rows share one pass over them */
        for (int p = 0; p < np; p++, W += pb, tile += 16) switch (mr) {
            case 5: B_Q8_VNNI(5, 1); break;
            case 6: B_Q8_VNNI(6, 1); break;
            case 7: B_Q8_VNNI(7, 1); break;
            default: B_Q8_VNNI(8, 1); break;
            }
        return;
    }
    switch (FACET_UK_KEY(mr, np)) {
        FACET_UK_NP2(B_Q8_VNNI, 2) FACET_UK_NP2(B_Q8_VNNI, 3) FACET_UK_NP2(B_Q8_VNNI, 4)
    }
}

const facet_ukernel facet_uk_q8_scalar = {"int8-scalar", FACET_X_Q8, 4, 1, uk_q8_scalar, 0, 0};
const facet_ukernel facet_uk_q8_avx2 = {"int8-avx2", FACET_X_Q8, 2, 1, uk_q8_avx2, 0, 0};
const facet_ukernel facet_uk_q8_avx512vnni = {"int8-avx512vnni", FACET_X_Q8, 8, 2, uk_q8_avx512vnni, 4, 4};
