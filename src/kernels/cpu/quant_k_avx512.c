/*
 * quant_k_avx512.c — AVX-512 VNNI dots of the 256-element block types with Q8_K
 * activations (avx512f/bw/vl/dq + vnni: quant.h's dot_avx512 runs only where the CPU has
 * VNNI). vpdpwssd multiplies the maddubs pair sums by the scales and accumulates in one.
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
FACET_INLINE FACET_TGT_AVX512VNNI __m512i group_index(int c) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_inserti128_si256(
                                  _mm256_castsi128_si256(_mm_set1_epi16((short)(4 * c))),
                                  _mm_set1_epi16((short)(4 * c + 1)), 1)),
                              _mm256_inserti128_si256(
                                  _mm256_castsi128_si256(_mm_set1_epi16((short)(4 * c + 2))),
                                  _mm_set1_epi16((short)(4 * c + 3)), 1),
                              1);
}

/* One unpacked superblock against one Q8_K block, exact integer sums (see the file top). */
static FACET_TGT_AVX512VNNI float sb_dot_avx512(const kq_sb *u, const facet_blk_q8_K *y) {
    __m512i sc = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)u->sc));
    __m512i acc = _mm512_setzero_si512();
    for (int c = 0; c < 4; c++) {
        __m512i q = _mm512_loadu_si512(u->q + 64 * c);
        __m512i x = _mm512_loadu_si512(y->qs + 64 * c);
        __m512i sx = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(q), _mm512_setzero_si512(), x);
        __m512i p = _mm512_maddubs_epi16(_mm512_abs_epi8(q), sx);
        acc = _mm512_dpwssd_epi32(acc, p, _mm512_permutexvar_epi16(group_index(c), sc));
    }
    __m256i m = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)u->m),
                                  _mm256_loadu_si256((const __m256i *)y->bsums));
    int32_t isum = _mm512_reduce_add_epi32(acc);
    int32_t msum = _mm512_reduce_add_epi32(_mm512_castsi256_si512(m) /* upper half zero */);
    return y->d * (u->d * (float)isum - u->dmin * (float)msum);
}

static FACET_TGT_AVX512VNNI void generic_dot_avx512(kq_unpack_fn unpack, size_t bytes, int n, float *s,
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
void facet_kq_dot_iq4_xs_avx512(int n, float *s, const void *w, const void *x) {
    generic_dot_avx512(facet_kq_unpack_iq4_xs, sizeof(kq_iq4_xs), n, s, w, x);
}

/* Q4_K / Q5_K scales: the 8 six-bit scales and the 8 six-bit mins of the 12 packed
 * bytes (quant_k.c facet_kq_scale_min_k4), one per byte. */
FACET_INLINE void k4_scales(const uint8_t *s12, uint64_t *sc8, uint64_t *m8) {
    uint32_t u0, u1, u2;
    memcpy(&u0, s12, 4);
    memcpy(&u1, s12 + 4, 4);
    memcpy(&u2, s12 + 8, 4);
    *sc8 = (u0 & 0x3f3f3f3fu) | (uint64_t)((u2 & 0x0f0f0f0fu) | ((u0 >> 2) & 0x30303030u)) << 32;
    *m8 = (u1 & 0x3f3f3f3fu) | (uint64_t)(((u2 >> 4) & 0x0f0f0f0fu) | ((u1 >> 2) & 0x30303030u)) << 32;
}

/* sum_j m[j] * (bsums[2j] + bsums[2j + 1]): each 6-bit min against both its bsums. */
FACET_INLINE FACET_TGT_AVX512VNNI __m256i k4_min_sums(uint64_t m8, const int16_t *bsums) {
    __m128i mv = _mm_cvtsi64_si128((long long)m8);
    __m256i m16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mv, mv));
    return _mm256_madd_epi16(m16, _mm256_loadu_si256((const __m256i *)bsums));
}

/* pshufb control for chunk c of a Q4_K / Q5_K superblock: from a register whose every
 * 128-bit lane holds the 8 scales as bytes, the low 256 bits take scale 2c and the high
 * 256 bits scale 2c + 1 as i16 (zero high byte). */
FACET_INLINE FACET_TGT_AVX512VNNI __m512i k4_scale_sel(int c) {
    return _mm512_inserti64x4(_mm512_set1_epi16((short)(0x8000 | (2 * c))),
                              _mm256_set1_epi16((short)(0x8000 | (2 * c + 1))), 1);
}

/* Q4_K fused. Per 64 elements: the 32 bytes of qs broadcast to both halves of a zmm,
 * shifted by 0 (low half) or 4 (high half) and masked, line up with 64 consecutive
 * activations (low nibbles = sub-block 2c, high = 2c + 1); maddubs pair-sums them (15 *
 * 127 * 2 fits 16 bits) and vpdpwssd weights each half by its sub-block scale. Scales
 * and mins are unpacked once per superblock; the mins go through bsums. */
void FACET_TGT_AVX512VNNI facet_kq_dot_q4_K_avx512(int n, float *s, const void *w, const void *x) {
    const kq_q4_K *b = w;
    const facet_blk_q8_K *y = x;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i shift = _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4);
    const __m512i sel[4] = {k4_scale_sel(0), k4_scale_sel(1), k4_scale_sel(2), k4_scale_sel(3)};
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    __m256 accm = _mm256_setzero_ps();
    for (int i = 0; i < n / 256; i++) {
        const float d = y[i].d * _cvtsh_ss(b[i].d), dmin = y[i].d * _cvtsh_ss(b[i].dmin);
        uint64_t sc8, m8;
        k4_scales(b[i].scales, &sc8, &m8);
        accm = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(k4_min_sums(m8, y[i].bsums)), accm);
        __m512i scb = _mm512_set1_epi64((long long)sc8);
        __m512i sumi = _mm512_setzero_si512();
        for (int c = 0; c < 4; c++) {
            __m512i qb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * c)));
            __m512i q4 = _mm512_and_si512(_mm512_srlv_epi64(qb, shift), m4);
            __m512i p = _mm512_maddubs_epi16(q4, _mm512_loadu_si512(y[i].qs + 64 * c));
            sumi = _mm512_dpwssd_epi32(sumi, p, _mm512_shuffle_epi8(scb, sel[c]));
        }
        if (i & 1) acc1 = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc1);
        else acc0 = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc0);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) -
         _mm512_reduce_add_ps(_mm512_zextps256_ps512(accm));
}

/* Q5_K fused: Q4_K's kernel plus the 5th bit: the 32 bytes of qh, broadcast, tested
 * against bit 2c (low half) / 2c + 1 (high half) add 16 to the nibble (31 * 127 * 2 still
 * fits 16 bits for maddubs). */
void FACET_TGT_AVX512VNNI facet_kq_dot_q5_K_avx512(int n, float *s, const void *w, const void *x) {
    const kq_q5_K *b = w;
    const facet_blk_q8_K *y = x;
    const __m512i m4 = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
    const __m512i shift = _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4);
    const __m512i sel[4] = {k4_scale_sel(0), k4_scale_sel(1), k4_scale_sel(2), k4_scale_sel(3)};
    __m512i bit[4];
    for (int c = 0; c < 4; c++)
        bit[c] = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << (2 * c))),
                                    _mm256_set1_epi8((char)(1 << (2 * c + 1))), 1);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    __m256 accm = _mm256_setzero_ps();
    for (int i = 0; i < n / 256; i++) {
        const float d = y[i].d * _cvtsh_ss(b[i].d), dmin = y[i].d * _cvtsh_ss(b[i].dmin);
        uint64_t sc8, m8;
        k4_scales(b[i].scales, &sc8, &m8);
        accm = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(k4_min_sums(m8, y[i].bsums)), accm);
        __m512i scb = _mm512_set1_epi64((long long)sc8);
        __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)b[i].qh));
        __m512i sumi = _mm512_setzero_si512();
        for (int c = 0; c < 4; c++) {
            __m512i qb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * c)));
            __m512i q4 = _mm512_and_si512(_mm512_srlv_epi64(qb, shift), m4);
            __m512i q5 = _mm512_mask_add_epi8(q4, _mm512_test_epi8_mask(qh, bit[c]), q4, sixteen);
            __m512i p = _mm512_maddubs_epi16(q5, _mm512_loadu_si512(y[i].qs + 64 * c));
            sumi = _mm512_dpwssd_epi32(sumi, p, _mm512_shuffle_epi8(scb, sel[c]));
        }
        if (i & 1) acc1 = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc1);
        else acc0 = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc0);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) -
         _mm512_reduce_add_ps(_mm512_zextps256_ps512(accm));
}

/* Q6_K fused. Per half of 128 elements: 64 bytes of ql give the low nibbles of runs 0, 1
 * (masked) and 2, 3 (shifted), the 32 bytes of qh broadcast to both 256-bit halves give
 * each run's 2 high bits by per-half shifts; the values 0..63 (63 * 127 * 2 fits 16 bits
 * for maddubs) meet 64 consecutive activations, vpdpwssd weights each group of 16 by its
 * int8 scale, and the -32 of every value comes back through bsums, exactly. */
void FACET_TGT_AVX512VNNI facet_kq_dot_q6_K_avx512(int n, float *s, const void *w, const void *x) {
    const kq_q6_K *b = w;
    const facet_blk_q8_K *y = x;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m3 = _mm512_set1_epi8(0x30);
    const __m512i shl_a = _mm512_setr_epi64(4, 4, 4, 4, 2, 2, 2, 2);
    const __m512i shr_b = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2);
    const __m512i g0 = group_index(0), g1 = group_index(1), g2 = group_index(2), g3 = group_index(3);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int i = 0; i < n / 256; i++) {
        const float d = y[i].d * _cvtsh_ss(b[i].d);
        __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b[i].scales));
        __m512i sc = _mm512_castsi256_si512(sc16);
        __m256i corr = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        __m512i sumi = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 5)));
        for (int h = 0; h < 2; h++) {
            __m512i ql = _mm512_loadu_si512(b[i].ql + 64 * h);
            __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b[i].qh + 32 * h)));
            /* runs 0|1: (ql & 15) | (qh << 4 | qh << 2) & 0x30; runs 2|3: (ql >> 4) & 15 | (qh | qh >> 2) & 0x30 */
            __m512i qa = _mm512_ternarylogic_epi64(_mm512_and_si512(_mm512_sllv_epi64(qh, shl_a), m3), ql, m4, 0xF8);
            __m512i qb = _mm512_ternarylogic_epi64(_mm512_and_si512(_mm512_srlv_epi64(qh, shr_b), m3),
                                                   _mm512_srli_epi16(ql, 4), m4, 0xF8);
            const int8_t *xq = y[i].qs + 128 * h;
            __m512i pa = _mm512_maddubs_epi16(qa, _mm512_loadu_si512(xq));
            __m512i pb = _mm512_maddubs_epi16(qb, _mm512_loadu_si512(xq + 64));
            sumi = _mm512_dpwssd_epi32(sumi, pa, _mm512_permutexvar_epi16(h ? g2 : g0, sc));
            sumi = _mm512_dpwssd_epi32(sumi, pb, _mm512_permutexvar_epi16(h ? g3 : g1, sc));
        }
        if (i & 1) acc1 = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc1);
        else acc0 = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc0);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}
