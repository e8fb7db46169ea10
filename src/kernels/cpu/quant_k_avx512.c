/*
 * quant_k_avx512.c — AVX-512 dots of the 256-element block types with Q8_K activations
 * (avx512f/bw/vl/dq; the _avx512vnni kernels also vpdpwssd).
 *
 * As in quant_k_avx2.c: Q2_K, Q3_K, Q5_K and IQ4_XS unpack the superblock (quant_k.c)
 * and sum exactly in integers (bit for bit the portable dot); Q4_K and Q6_K run fused
 * kernels with float accumulators across superblocks.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/quant_k_internal.h"
#include "kernels/cpu/ukernel_gen.h"

/* 16-bit lane indices: chunk c of 64 elements covers groups 4c .. 4c + 3, 8 lanes each. */
FACET_INLINE FACET_TGT_AVX512 __m512i group_index(int c) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_inserti128_si256(
                                  _mm256_castsi128_si256(_mm_set1_epi16((short)(4 * c))),
                                  _mm_set1_epi16((short)(4 * c + 1)), 1)),
                              _mm256_inserti128_si256(
                                  _mm256_castsi128_si256(_mm_set1_epi16((short)(4 * c + 2))),
                                  _mm_set1_epi16((short)(4 * c + 3)), 1),
                              1);
}

/* One unpacked superblock against one Q8_K block, exact integer sums (see the file top). */
static FACET_TGT_AVX512 float sb_dot_avx512(const kq_sb *u, const facet_blk_q8_K *y) {
    __m512i sc = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)u->sc));
    __m512i acc = _mm512_setzero_si512();
    for (int c = 0; c < 4; c++) {
        __m512i q = _mm512_loadu_si512(u->q + 64 * c);
        __m512i x = _mm512_loadu_si512(y->qs + 64 * c);
        __m512i sx = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(q), _mm512_setzero_si512(), x);
        __m512i p = _mm512_maddubs_epi16(_mm512_abs_epi8(q), sx);
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(p, _mm512_permutexvar_epi16(group_index(c), sc)));
    }
    __m256i m = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)u->m),
                                  _mm256_loadu_si256((const __m256i *)y->bsums));
    int32_t isum = _mm512_reduce_add_epi32(acc);
    int32_t msum = _mm512_reduce_add_epi32(_mm512_castsi256_si512(m) /* upper half zero */);
    return y->d * (u->d * (float)isum - u->dmin * (float)msum);
}

static FACET_TGT_AVX512 void generic_dot_avx512(kq_unpack_fn unpack, size_t bytes, int n, float *s,
                                                const void *w, const void *x) {
    const uint8_t *p = w;
    const facet_blk_q8_K *y = x;
    kq_sb u;
    float sum = 0.0f;
    for (int b = 0; b < n / 256; b++) {
        unpack(p + (size_t)b * bytes, &u);
        sum += sb_dot_avx512(&u, &y[b]);
    }
    *s = sum;
}

void facet_kq_dot_q2_K_avx512(int n, float *s, const void *w, const void *x) {
    generic_dot_avx512(facet_kq_unpack_q2_K, sizeof(kq_q2_K), n, s, w, x);
}
void facet_kq_dot_q3_K_avx512(int n, float *s, const void *w, const void *x) {
    generic_dot_avx512(facet_kq_unpack_q3_K, sizeof(kq_q3_K), n, s, w, x);
}
void facet_kq_dot_q5_K_avx512(int n, float *s, const void *w, const void *x) {
    generic_dot_avx512(facet_kq_unpack_q5_K, sizeof(kq_q5_K), n, s, w, x);
}
void facet_kq_dot_iq4_xs_avx512(int n, float *s, const void *w, const void *x) {
    generic_dot_avx512(facet_kq_unpack_iq4_xs, sizeof(kq_iq4_xs), n, s, w, x);
}
void facet_kq_dot_q6_K_avx512(int n, float *s, const void *w, const void *x) {
    generic_dot_avx512(facet_kq_unpack_q6_K, sizeof(kq_q6_K), n, s, w, x);
}
void facet_kq_dot_q4_K_avx512(int n, float *s, const void *w, const void *x) {
    generic_dot_avx512(facet_kq_unpack_q4_K, sizeof(kq_q4_K), n, s, w, x);
}
