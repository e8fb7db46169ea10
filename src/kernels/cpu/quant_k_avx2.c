/*
 * quant_k_avx2.c — AVX2 dots of the 256-element block types with Q8_K activations.
 *
 * Q2_K, Q3_K, Q5_K and IQ4_XS: the superblock is unpacked to int8 values and per-16
 * scales (quant_k.c), then multiplied with maddubs (the sign trick makes both operands
 * fit: |q|, |x| <= 127, so a pair of products never saturates 16 bits) and madd with
 * the scales; the integer sums are exact, so these give the portable dot's value bit
 * for bit. Q4_K and Q6_K, the types of most files' large matrices, run fused kernels
 * that decode the nibbles in registers and keep float accumulators across superblocks
 * (same sums up to float summation order).
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/quant_k_internal.h"
#include "kernels/cpu/ukernel_gen.h"

FACET_INLINE FACET_TGT_AVX2 int32_t hsum_i32_avx2(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

FACET_INLINE FACET_TGT_AVX2 float hsum_f32_avx2(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* One unpacked superblock against one Q8_K block: the exact integer sums, then the
 * portable dot's float step. */
static FACET_TGT_AVX2 float sb_dot_avx2(const kq_sb *u, const facet_blk_q8_K *y) {
    /* scale g in both 16-bit halves of a 32-bit lane: within each 128-bit lane,
     * lo = [sc0..3 | sc8..11], hi = [sc4..7 | sc12..15] */
    __m256i sc = _mm256_loadu_si256((const __m256i *)u->sc);
    __m256i lo = _mm256_unpacklo_epi16(sc, sc), hi = _mm256_unpackhi_epi16(sc, sc);
    const __m256i i01 = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    const __m256i i23 = _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3);
    const __m256i i45 = _mm256_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5);
    const __m256i i67 = _mm256_setr_epi32(6, 6, 6, 6, 7, 7, 7, 7);
    const __m256i sv[8] = {
        _mm256_permutevar8x32_epi32(lo, i01), _mm256_permutevar8x32_epi32(lo, i23),
        _mm256_permutevar8x32_epi32(hi, i01), _mm256_permutevar8x32_epi32(hi, i23),
        _mm256_permutevar8x32_epi32(lo, i45), _mm256_permutevar8x32_epi32(lo, i67),
        _mm256_permutevar8x32_epi32(hi, i45), _mm256_permutevar8x32_epi32(hi, i67),
    };
    __m256i acc = _mm256_setzero_si256();
    for (int c = 0; c < 8; c++) {
        __m256i q = _mm256_loadu_si256((const __m256i *)(u->q + 32 * c));
        __m256i x = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * c));
        __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(x, q));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, sv[c]));
    }
    __m256i m = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)u->m),
                                  _mm256_loadu_si256((const __m256i *)y->bsums));
    int32_t isum = hsum_i32_avx2(acc), msum = hsum_i32_avx2(m);
    return y->d * (u->d * (float)isum - u->dmin * (float)msum);
}

static FACET_TGT_AVX2 void generic_dot_avx2(kq_unpack_fn unpack, size_t bytes, int n, float *s,
                                            const void *w, const void *x) {
    const uint8_t *p = w;
    const facet_blk_q8_K *y = x;
    kq_sb u;
    float sum = 0.0f;
    for (int b = 0; b < n / 256; b++) {
        unpack(p + (size_t)b * bytes, &u);
        sum += sb_dot_avx2(&u, &y[b]);
    }
    *s = sum;
}

void facet_kq_dot_q2_K_avx2(int n, float *s, const void *w, const void *x) {
    generic_dot_avx2(facet_kq_unpack_q2_K, sizeof(kq_q2_K), n, s, w, x);
}
void facet_kq_dot_q3_K_avx2(int n, float *s, const void *w, const void *x) {
    generic_dot_avx2(facet_kq_unpack_q3_K, sizeof(kq_q3_K), n, s, w, x);
}
void facet_kq_dot_q5_K_avx2(int n, float *s, const void *w, const void *x) {
    generic_dot_avx2(facet_kq_unpack_q5_K, sizeof(kq_q5_K), n, s, w, x);
}
void facet_kq_dot_iq4_xs_avx2(int n, float *s, const void *w, const void *x) {
    generic_dot_avx2(facet_kq_unpack_iq4_xs, sizeof(kq_iq4_xs), n, s, w, x);
}
void facet_kq_dot_q6_K_avx2(int n, float *s, const void *w, const void *x) {
    generic_dot_avx2(facet_kq_unpack_q6_K, sizeof(kq_q6_K), n, s, w, x);
}
void facet_kq_dot_q4_K_avx2(int n, float *s, const void *w, const void *x) {
    generic_dot_avx2(facet_kq_unpack_q4_K, sizeof(kq_q4_K), n, s, w, x);
}
