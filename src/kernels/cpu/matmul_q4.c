/*
 * matmul_q4.c — 4-bit micro-kernels (weights w = d * (q - 8), q a 4-bit code, one f16 d
 * per block of 32 inputs and output row: GGUF Q4_0's values; layout in
 * matmul_internal.h) against the int8 activations of the q8 kernels, and the q4 weight
 * quantizer.
 *
 * Per block b: isum = sum_k q[k] * qx[k] - 8 * sum_k qx[k] exactly in int32 (the second
 * term is the q8 activation correction -128 * sum / 16), then
 *   y = fma(float(isum) * d[b], scale_x[b], y)
 * in block order, as the int8 kernels. The integer sums are exact on every path, so
 * scalar, AVX2 (maddubs of the unsigned codes with the signed activations: |products|
 * <= 2 * 15 * 127, no saturation) and AVX512-VNNI (vpdpbusd of the codes) agree bit for
 * bit. The codes are unpacked with an and (low nibbles) and a 16-bit shift and an and
 * (high nibbles; the one-row decode path keeps them in place instead, q4_vnni_row1): each
 * 64-byte chunk of a block is two vpdpbusd operands.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/ukernel_gen.h"

/* ---- the quantizer (facet_q4_quantize_block's contract in matmul_internal.h) ---- */

/* round to nearest even of t, |t| <= 8 (adding 1.5 * 2^23 leaves no fraction bits) */
static inline float round_even_small(float t) { return (t + 12582912.0f) - 12582912.0f; }

/* Codes of w[0..32) for scale d (0: all 8), their squared error and sum w_i (q_i - 8) in
 * double (each summed in 8 partial sums, element i into sum i % 8, reduced pairwise: the
 * conversion's time is in this function, and the order lets AVX-512 compute the same
 * bits), and sum (q_i - 8)^2 into *sqq. */
typedef struct {
    double err, swq;
    int32_t sqq;
} q4_eval;

static q4_eval q4_codes(const float *w, float d, uint8_t *q) {
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    double pe[8] = {0}, pw[8] = {0};
    int32_t qq = 0;
    for (int i0 = 0; i0 < 32; i0 += 8)
        for (int j = 0; j < 8; j++) {
            float t = w[i0 + j] * id;
            t = t < -8.0f ? -8.0f : t > 7.0f ? 7.0f : t;
            float c = round_even_small(t);
            q[i0 + j] = (uint8_t)((int)c + 8);
            double e = (double)w[i0 + j] - (double)(d * c); /* d * c: exact in float */
            pe[j] += e * e;
            pw[j] += (double)w[i0 + j] * (double)c;
            qq += (int32_t)c * (int32_t)c;
        }
    q4_eval r = {((pe[0] + pe[1]) + (pe[2] + pe[3])) + ((pe[4] + pe[5]) + (pe[6] + pe[7])),
                 ((pw[0] + pw[1]) + (pw[2] + pw[3])) + ((pw[4] + pw[5]) + (pw[6] + pw[7])), qq};
    return r;
}

/* q4_codes in AVX-512, bit for bit: the same float operations per element, and lane j of
 * the double accumulators is partial sum j. */
static FACET_TGT_AVX512 q4_eval q4_codes_avx512(const float *w, float d, uint8_t *q) {
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m512 idv = _mm512_set1_ps(id), dv = _mm512_set1_ps(d), magic = _mm512_set1_ps(12582912.0f);
    const __m512 lo = _mm512_set1_ps(-8.0f), hi = _mm512_set1_ps(7.0f);
    __m512d pe = _mm512_setzero_pd(), pw = _mm512_setzero_pd();
    __m512i qq = _mm512_setzero_si512();
    for (int h = 0; h < 2; h++) {
        __m512 wv = _mm512_loadu_ps(w + 16 * h);
        __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(wv, idv), lo), hi);
        __m512 c = _mm512_sub_ps(_mm512_add_ps(t, magic), magic);
        __m512i ci = _mm512_cvtps_epi32(c);
        qq = _mm512_add_epi32(qq, _mm512_mullo_epi32(ci, ci));
        _mm_storeu_si128((__m128i *)(q + 16 * h),
                         _mm512_cvtepi32_epi8(_mm512_add_epi32(ci, _mm512_set1_epi32(8))));
        __m512 p = _mm512_mul_ps(c, dv);
        for (int half = 0; half < 2; half++) {
            __m512d wd = _mm512_cvtps_pd(half ? _mm512_extractf32x8_ps(wv, 1) : _mm512_castps512_ps256(wv));
            __m512d pd = _mm512_cvtps_pd(half ? _mm512_extractf32x8_ps(p, 1) : _mm512_castps512_ps256(p));
            __m512d cd = _mm512_cvtps_pd(half ? _mm512_extractf32x8_ps(c, 1) : _mm512_castps512_ps256(c));
            __m512d e = _mm512_sub_pd(wd, pd);
            pe = _mm512_add_pd(pe, _mm512_mul_pd(e, e));
            pw = _mm512_add_pd(pw, _mm512_mul_pd(wd, cd));
        }
    }
    double a[8], b[8];
    _mm512_storeu_pd(a, pe);
    _mm512_storeu_pd(b, pw);
    q4_eval r = {((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])),
                 ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7])),
                 _mm512_reduce_add_epi32(qq)};
    return r;
}

int facet_q4_quantize_block(const float *wn, int n, uint8_t q[32], uint16_t *dbits) {
    static const float cands[] = {-9.0f, -8.5f, -8.0f, -7.5f, -7.0f, 7.0f, 7.5f, 8.0f};
    float w[32] = {0}, m = 0.0f;
    for (int i = 0; i < n; i++) {
        w[i] = wn[i];
        if (!isfinite(w[i])) return -1;
        if (fabsf(w[i]) > fabsf(m)) m = w[i];
    }
    if (fabsf(m) > 7.0f * 65504.0f) return -1;
    memset(q, 8, 32);
    *dbits = 0;
    if (m == 0.0f) return 0; /* d = 0: every code 8 (an all-zero block) */
    int avx512 = facet_cpu()->level >= FACET_CPU_AVX512;
    uint8_t cq[32];
    double best = 0.0;
    for (size_t c = 0; c < sizeof cands / sizeof cands[0]; c++) {
        uint16_t h = facet_f32_to_f16(m / cands[c]);
        for (int s = 0; s < 2; s++) { /* the candidate, then its least-squares refit */
            float d = facet_f16_to_f32(h);
            q4_eval e = avx512 ? q4_codes_avx512(w, d, cq) : q4_codes(w, d, cq);
            if (c == 0 && s == 0 ? 1 : e.err < best) {
                best = e.err;
                *dbits = h;
                memcpy(q, cq, 32);
            }
            if (s == 1 || e.sqq == 0) break;
            h = facet_f32_to_f16((float)(e.swq / (double)e.sqq));
            if (!isfinite(facet_f16_to_f32(h))) break;
        }
    }
    return 0;
}

/* ---- micro-kernels ---- */

#define XQ(r) ((const int8_t *)(x->data + (size_t)(r0 + (r)) * x->stride))
#define XS(r) (x->scale + (size_t)(r0 + (r)) * x->nblk)
#define XC(r) (x->corr + (size_t)(r0 + (r)) * x->nblk)
#define Q4SCALE(blk) ((blk) + FACET_Q8_BLOCK * FACET_PANEL / 2)

/* code of lane l, input k (< 32) of a block */
static inline int q4_code(const uint8_t *blk, int l, int k) {
    uint8_t b = blk[((k % 16) / 4) * 64 + l * 4 + k % 4];
    return k < 16 ? b & 15 : b >> 4;
}

static void uk_q4_scalar(FACET_UK_PARAMS) {
    for (int r = 0; r < mr; r++)
        for (int p = 0; p < np; p++) {
            float *t = tile + r * ld + p * 16, acc[16];
            for (int l = 0; l < 16; l++) acc[l] = accumulate ? t[l] : 0.0f;
            for (int b = k0 / FACET_Q8_BLOCK; b < k1 / FACET_Q8_BLOCK; b++) {
                const uint8_t *blk = W + (size_t)p * pb + (size_t)b * FACET_Q4_PBLOCK;
                const int8_t *xq = XQ(r) + b * FACET_Q8_BLOCK;
                float xs = XS(r)[b];
                for (int l = 0; l < 16; l++) {
                    int32_t isum = XC(r)[b] / 16;
                    for (int k = 0; k < FACET_Q8_BLOCK; k++) isum += q4_code(blk, l, k) * xq[k];
                    uint16_t h;
                    memcpy(&h, Q4SCALE(blk) + l * 2, 2);
                    acc[l] = fmaf((float)isum * facet_f16_to_f32(h), xs, acc[l]);
                }
            }
            memcpy(t, acc, sizeof acc);
        }
}

FACET_INLINE FACET_TGT_AVX2 void q4_avx2_body(const facet_xprep *x, int r0, const uint8_t *W,
                                               size_t pb, int k0, int k1, float *tile, int ld,
                                               int accumulate, const int MR, const int NP) {
    (void)NP;
    (void)pb;
    __m256 acc[2][2];
    for (int r = 0; r < MR; r++)
        for (int h = 0; h < 2; h++)
            acc[r][h] = accumulate ? _mm256_loadu_ps(tile + r * ld + h * 8) : _mm256_setzero_ps();
    const __m256i nib = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    for (int b = k0 / FACET_Q8_BLOCK; b < k1 / FACET_Q8_BLOCK; b++) {
        const uint8_t *blk = W + (size_t)b * FACET_Q4_PBLOCK;
        __m256i is[2][2];
        for (int r = 0; r < MR; r++) is[r][0] = is[r][1] = _mm256_set1_epi32(XC(r)[b] / 16);
        for (int j = 0; j < 4; j++)
            for (int h = 0; h < 2; h++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(blk + j * 64 + h * 32));
                __m256i lo = _mm256_and_si256(v, nib), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
                for (int r = 0; r < MR; r++) {
                    int32_t qa, qb;
                    memcpy(&qa, XQ(r) + b * FACET_Q8_BLOCK + j * 4, 4);
                    memcpy(&qb, XQ(r) + b * FACET_Q8_BLOCK + 16 + j * 4, 4);
                    __m256i s = _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_set1_epi32(qa)),
                                                 _mm256_maddubs_epi16(hi, _mm256_set1_epi32(qb)));
                    is[r][h] = _mm256_add_epi32(is[r][h], _mm256_madd_epi16(s, ones));
                }
            }
        for (int h = 0; h < 2; h++) {
            __m256 ws = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(Q4SCALE(blk) + h * 16)));
            for (int r = 0; r < MR; r++)
                acc[r][h] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(is[r][h]), ws),
                                            _mm256_set1_ps(XS(r)[b]), acc[r][h]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int h = 0; h < 2; h++) _mm256_storeu_ps(tile + r * ld + h * 8, acc[r][h]);
}

#define B_Q4_AVX2(M, N) q4_avx2_body(FACET_UK_ARGS, M, N)
static FACET_TGT_AVX2 void uk_q4_avx2(FACET_UK_PARAMS) {
    switch (FACET_UK_KEY(mr, np)) { FACET_UK_MR2(FACET_UK_NP1, B_Q4_AVX2) }
}

/* Bytes ahead of the block being read that a call's first row tile prefetches into L2
 * (the q8 kernels' distance, bench/RESULTS-perf.md section 6). */
#define Q4_PREFETCH_BYTES 12288

/*
 * Rows r0..r0+MR-1 against NP panels (MR <= 8, NP <= 2, MR * NP <= 8): each block's codes
 * are unpacked once per panel for all the rows. With pf, each block's cache lines
 * Q4_PREFETCH_BYTES ahead in every panel's stream are prefetched to L2.
 */
FACET_INLINE FACET_TGT_AVX512VNNI void q4_vnni_body(const facet_xprep *x, int r0, const uint8_t *W,
                                                     size_t pb, int k0, int k1, float *tile, int ld,
                                                     int accumulate, const int MR, const int NP,
                                                     int pf) {
    __m512 acc[8][2];
    for (int r = 0; r < MR; r++)
        for (int p = 0; p < NP; p++)
            acc[r][p] = accumulate ? _mm512_loadu_ps(tile + r * ld + p * 16) : _mm512_setzero_ps();
    const __m512i nib = _mm512_set1_epi8(0x0f);
    for (int b = k0 / FACET_Q8_BLOCK; b < k1 / FACET_Q8_BLOCK; b++) {
        const uint8_t *blk[2];
        for (int p = 0; p < NP; p++) blk[p] = W + (size_t)p * pb + (size_t)b * FACET_Q4_PBLOCK;
        if (pf)
            for (int p = 0; p < NP; p++)
                for (int c = 0; c < FACET_Q4_PBLOCK; c += 64)
                    _mm_prefetch((const char *)blk[p] + Q4_PREFETCH_BYTES + c, _MM_HINT_T1);
        __m512i is[8][2];
        for (int r = 0; r < MR; r++) {
            __m512i c = _mm512_set1_epi32(XC(r)[b] / 16);
            for (int p = 0; p < NP; p++) is[r][p] = c;
        }
        for (int j = 0; j < 4; j++) {
            __m512i lo[2], hi[2];
            for (int p = 0; p < NP; p++) {
                __m512i v = _mm512_loadu_si512((const void *)(blk[p] + j * 64));
                lo[p] = _mm512_and_si512(v, nib);
                hi[p] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
            }
            for (int r = 0; r < MR; r++) {
                int32_t qa, qb;
                memcpy(&qa, XQ(r) + b * FACET_Q8_BLOCK + j * 4, 4);
                memcpy(&qb, XQ(r) + b * FACET_Q8_BLOCK + 16 + j * 4, 4);
                __m512i xa = _mm512_set1_epi32(qa), xb = _mm512_set1_epi32(qb);
                for (int p = 0; p < NP; p++) {
                    is[r][p] = _mm512_dpbusd_epi32(is[r][p], lo[p], xa);
                    is[r][p] = _mm512_dpbusd_epi32(is[r][p], hi[p], xb);
                }
            }
        }
        for (int p = 0; p < NP; p++) {
            __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)Q4SCALE(blk[p])));
            for (int r = 0; r < MR; r++)
                acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(is[r][p]), ws),
                                            _mm512_set1_ps(XS(r)[b]), acc[r][p]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int p = 0; p < NP; p++) _mm512_storeu_ps(tile + r * ld + p * 16, acc[r][p]);
}

/* One row (decode): the np panels one after the other, one sequential stream the
 * hardware prefetcher follows. Low nibbles (and) and high nibbles left in place (andnot:
 * 16 x the code) in two integer chains, the second started at the correction -128 *
 * sum(qx) = 16 x (-8 sum(qx)), so one exact arithmetic shift by 4 per block replaces a
 * shift per chunk (integer sums: the same bits as the other paths). */
static FACET_TGT_AVX512VNNI void q4_vnni_row1(const facet_xprep *x, int r0, const uint8_t *W,
                                              size_t pb, int np, int k0, int k1, float *tile,
                                              int accumulate) {
    const int8_t *xq = XQ(0);
    const float *xs = XS(0);
    const int32_t *xc = XC(0);
    const __m512i nib = _mm512_set1_epi8(0x0f);
    for (int p = 0; p < np; p++) {
        float *t = tile + p * 16;
        __m512 acc = accumulate ? _mm512_loadu_ps(t) : _mm512_setzero_ps();
        for (int b = k0 / FACET_Q8_BLOCK; b < k1 / FACET_Q8_BLOCK; b++) {
            const uint8_t *blk = W + (size_t)p * pb + (size_t)b * FACET_Q4_PBLOCK;
            __m512i i0 = _mm512_setzero_si512(), i1 = _mm512_set1_epi32(xc[b]);
            for (int j = 0; j < 4; j++) {
                int32_t qa, qb;
                memcpy(&qa, xq + b * FACET_Q8_BLOCK + j * 4, 4);
                memcpy(&qb, xq + b * FACET_Q8_BLOCK + 16 + j * 4, 4);
                __m512i v = _mm512_loadu_si512((const void *)(blk + j * 64));
                i0 = _mm512_dpbusd_epi32(i0, _mm512_and_si512(v, nib), _mm512_set1_epi32(qa));
                i1 = _mm512_dpbusd_epi32(i1, _mm512_andnot_si512(nib, v), _mm512_set1_epi32(qb));
            }
            __m512i is = _mm512_add_epi32(i0, _mm512_srai_epi32(i1, 4));
            __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)Q4SCALE(blk)));
            acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(is), ws), _mm512_set1_ps(xs[b]), acc);
        }
        _mm512_storeu_ps(t, acc);
    }
}

/* pf: only a call's first row tile streams the weights from memory (as the q8 kernel) */
#define B_Q4_VNNI(M, N) q4_vnni_body(FACET_UK_ARGS, M, N, r0 == 0)
static FACET_TGT_AVX512VNNI void uk_q4_avx512vnni(FACET_UK_PARAMS) {
    if (mr == 1) {
        q4_vnni_row1(x, r0, W, pb, np, k0, k1, tile, accumulate);
        return;
    }
    if (mr > 4) { /* 5..8 rows: one panel at a time, in stream order */
        for (int p = 0; p < np; p++, W += pb, tile += 16) switch (mr) {
            case 5: B_Q4_VNNI(5, 1); break;
            case 6: B_Q4_VNNI(6, 1); break;
            case 7: B_Q4_VNNI(7, 1); break;
            default: B_Q4_VNNI(8, 1); break;
            }
        return;
    }
    switch (FACET_UK_KEY(mr, np)) {
        FACET_UK_NP2(B_Q4_VNNI, 2) FACET_UK_NP2(B_Q4_VNNI, 3) FACET_UK_NP2(B_Q4_VNNI, 4)
    }
}

const facet_ukernel facet_uk_q4_scalar = {"q4-scalar", FACET_X_Q8, 4, 1, uk_q4_scalar, 0, 0};
const facet_ukernel facet_uk_q4_avx2 = {"q4-avx2", FACET_X_Q8, 2, 1, uk_q4_avx2, 0, 0};
const facet_ukernel facet_uk_q4_avx512vnni = {"q4-avx512vnni", FACET_X_Q8, 8, 2, uk_q4_avx512vnni, 4, 4};
