/*
 * quant_mxfp4.c — MXFP4 (OCP microscaling FP4; GGUF type 39, gpt-oss's experts): its row
 * dequantizer, scalar, AVX2 and AVX-512 VNNI dot products with Q8_0 activation blocks,
 * and its traits. Written from the OCP MX v1.0 definition and ggml's block layout
 * (ggml-common.h block_mxfp4; read, not copied).
 *
 * A block of 32 is 17 bytes: e (E8M0: the power of two 2^(e - 127)), then 16 bytes of
 * 4-bit E2M1 codes, element j the low nibble of qs[j] (j < 16) or the high nibble of
 * qs[j - 16] (as Q4_0). An E2M1 code is sign (bit 3), exponent (bits 2..1) and mantissa
 * (bit 0): 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives. Twice those are the integers
 * 0, 1, 2, 3, 4, 6, 8, 12 (facet_kvalues_mxfp4), so
 *     w = kvalues[q] * 2^(e - 128)
 * exactly, and the dot with a Q8_0 activation block (d_x, qs_x) is an int8 dot:
 *     sum_j w_j x_j = (2^(e - 128) * d_x) * sum_j kvalues[q_j] * qs_x[j]
 * (|sum| <= 32 * 12 * 127: int32, and int16 for any pair of products). 2^(e - 128) is a
 * float for every e: a normal number for e >= 2, the subnormals 2^-128 and 2^-127 for
 * e = 0, 1 (e = 255 is 2^127: OCP's NaN code is not special-cased, as ggml does not).
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/quant_legacy.h"
#include "kernels/cpu/ukernel_gen.h"

_Static_assert(sizeof(facet_blk_mxfp4) == 17, "block_mxfp4");

const int8_t facet_kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

float facet_e8m0_half(uint8_t e) {
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

#define H2F facet_f16_to_f32

static void dq_mxfp4(const void *w, float *y, int64_t n) {
    const facet_blk_mxfp4 *b = w;
    for (int64_t i = 0; i < n / 32; i++, y += 32) {
        float d = facet_e8m0_half(b[i].e);
        for (int j = 0; j < 16; j++) {
            y[j] = (float)facet_kvalues_mxfp4[b[i].qs[j] & 15] * d;
            y[j + 16] = (float)facet_kvalues_mxfp4[b[i].qs[j] >> 4] * d;
        }
    }
}

static void dot_mxfp4_scalar(int n, float *s, const void *w, const void *x) {
    const facet_blk_mxfp4 *a = w;
    const facet_blk_q8_0 *b = x;
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++) {
        int si = 0;
        for (int j = 0; j < 16; j++)
            si += facet_kvalues_mxfp4[a[i].qs[j] & 15] * b[i].qs[j] +
                  facet_kvalues_mxfp4[a[i].qs[j] >> 4] * b[i].qs[j + 16];
        sum += (float)si * (facet_e8m0_half(a[i].e) * H2F(b[i].d));
    }
    *s = sum;
}

/* ---- AVX2: the 32 codes looked up as int8 by one byte shuffle; the weight's sign moved
 * onto the activation so maddubs takes |w| as its u8 operand (|w| <= 12, |x| <= 127: a
 * pair's int16 sum cannot saturate). ---- */

FACET_TGT_AVX2 FACET_INLINE __m256i mx_q_avx2(const facet_blk_mxfp4 *p) {
    const __m128i k = _mm_loadu_si128((const __m128i *)facet_kvalues_mxfp4);
    __m128i t = _mm_loadu_si128((const __m128i *)p->qs);
    __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(15));
    return _mm256_shuffle_epi8(_mm256_set_m128i(k, k), nib);
}

FACET_TGT_AVX2 FACET_INLINE __m256 mx_dot8(__m256i absw, __m256i w, __m256i y) {
    __m256i p = _mm256_maddubs_epi16(absw, _mm256_sign_epi8(y, w));
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}

FACET_TGT_AVX2 FACET_INLINE float mx_hsum8(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* nr (1..4) activation rows at x, x + xs, ...: each block decoded once; every row's
 * operations are the single-row dot's (nr = 1), so its sum is the same bits. */
FACET_TGT_AVX2 FACET_INLINE void mx_dotx_avx2_n(int n, const int nr, float *s, const void *w,
                                                const void *x, size_t xs) {
    const facet_blk_mxfp4 *a = w;
    __m256 acc[4];
    for (int r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps();
    for (int i = 0; i < n / 32; i++) {
        __m256i q = mx_q_avx2(a + i), u = _mm256_sign_epi8(q, q);
        float dw = facet_e8m0_half(a[i].e);
        for (int r = 0; r < nr; r++) {
            const facet_blk_q8_0 *b = (const facet_blk_q8_0 *)((const uint8_t *)x + (size_t)r * xs);
            __m256i y = _mm256_loadu_si256((const __m256i *)b[i].qs);
            __m256 d = _mm256_set1_ps(dw * _cvtsh_ss(b[i].d));
            acc[r] = _mm256_fmadd_ps(d, mx_dot8(u, q, y), acc[r]);
        }
    }
    for (int r = 0; r < nr; r++) s[r] = mx_hsum8(acc[r]);
}

FACET_TGT_AVX2 static void dot_mxfp4_avx2(int n, float *s, const void *w, const void *x) {
    mx_dotx_avx2_n(n, 1, s, w, x, 0);
}

FACET_TGT_AVX2 static void dotx_mxfp4_avx2(int n, int nr, float *s, const void *w, const void *x,
                                           size_t xs) {
    while (nr > 0) {
        switch (nr) {
        case 1: mx_dotx_avx2_n(n, 1, s, w, x, xs); return;
        case 2: mx_dotx_avx2_n(n, 2, s, w, x, xs); return;
        case 3: mx_dotx_avx2_n(n, 3, s, w, x, xs); return;
        default: mx_dotx_avx2_n(n, 4, s, w, x, xs); break; /* 4 rows a pass */
        }
        nr -= 4, s += 4, x = (const uint8_t *)x + 4 * xs;
    }
}

/* ---- AVX-512 VNNI: two blocks per register, vpdpbusd of |w| (u8) with the sign-moved
 * activation; each block's eight int32 lanes scaled by its 2^(e-128) d_x in float; an odd
 * last block runs with a zero upper half. ---- */

#define T512 FACET_TGT_AVX512VNNI

T512 FACET_INLINE __m256i mx_q_256(const facet_blk_mxfp4 *p) {
    const __m128i k = _mm_loadu_si128((const __m128i *)facet_kvalues_mxfp4);
    __m128i t = _mm_loadu_si128((const __m128i *)p->qs);
    __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(15));
    return _mm256_shuffle_epi8(_mm256_set_m128i(k, k), nib);
}

T512 FACET_INLINE __m512i mx_y2(const facet_blk_q8_0 *b, int i, int two) {
    __m512i y = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)b[i].qs));
    return _mm512_inserti64x4(y, two ? _mm256_loadu_si256((const __m256i *)b[i + 1].qs)
                                     : _mm256_setzero_si256(), 1);
}

T512 FACET_INLINE void mx_dotx_512_n(int n, const int nr, float *s, const void *w,
                                     const void *x, size_t xs) {
    const facet_blk_mxfp4 *a = w;
    __m512 acc[4];
    for (int r = 0; r < nr; r++) acc[r] = _mm512_setzero_ps();
    int nb = n / 32;
    for (int i = 0; i < nb; i += 2) {
        int two = i + 1 < nb;
        __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(mx_q_256(a + i)),
                                       two ? mx_q_256(a + i + 1) : _mm256_setzero_si256(), 1);
        __mmask64 neg = _mm512_movepi8_mask(q);
        __m512i u = _mm512_abs_epi8(q);
        float d0 = facet_e8m0_half(a[i].e), d1 = two ? facet_e8m0_half(a[i + 1].e) : 0.0f;
        for (int r = 0; r < nr; r++) {
            const facet_blk_q8_0 *b = (const facet_blk_q8_0 *)((const uint8_t *)x + (size_t)r * xs);
            __m512i y = mx_y2(b, i, two);
            y = _mm512_mask_sub_epi8(y, neg, _mm512_setzero_si512(), y);
            __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, y);
            __m512 d = _mm512_insertf32x8(_mm512_set1_ps(d0 * _cvtsh_ss(b[i].d)),
                                          _mm256_set1_ps(two ? d1 * _cvtsh_ss(b[i + 1].d) : 0.0f), 1);
            acc[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(p), acc[r]);
        }
    }
    for (int r = 0; r < nr; r++) s[r] = _mm512_reduce_add_ps(acc[r]);
}

T512 static void dot_mxfp4_avx512(int n, float *s, const void *w, const void *x) {
    mx_dotx_512_n(n, 1, s, w, x, 0);
}

T512 static void dotx_mxfp4_avx512(int n, int nr, float *s, const void *w, const void *x,
                                   size_t xs) {
    while (nr > 0) {
        switch (nr) {
        case 1: mx_dotx_512_n(n, 1, s, w, x, xs); return;
        case 2: mx_dotx_512_n(n, 2, s, w, x, xs); return;
        case 3: mx_dotx_512_n(n, 3, s, w, x, xs); return;
        default: mx_dotx_512_n(n, 4, s, w, x, xs); break; /* 4 rows a pass */
        }
        nr -= 4, s += 4, x = (const uint8_t *)x + 4 * xs;
    }
}

const facet_qtype_traits facet_qt_mxfp4 = {
    .name = "MXFP4", .ggml_type = 39, .block = 32, .block_bytes = 17, .xkind = FACET_QX_Q8_0,
    .dequant_row = dq_mxfp4, .dot_scalar = dot_mxfp4_scalar, .dot_avx2 = dot_mxfp4_avx2,
    .dot_avx512vnni = dot_mxfp4_avx512, .dotx_avx2 = dotx_mxfp4_avx2,
    .dotx_avx512vnni = dotx_mxfp4_avx512};
