/*
 * quant_k_avx512.c — AVX-512 VNNI dots of the 256-element block types with Q8_K
 * activations (avx512f/bw/vl/dq + vnni: quant.h's dot_avx512vnni; a CPU with AVX-512 but
 * no VNNI runs the AVX2 dots).
 *
 * Every kernel decodes a superblock in registers, 64 elements at a time lined up with 64
 * consecutive activations: the weights as unsigned bytes (the types' offsets, -4 for
 * Q3_K and -32 for Q6_K, come back exactly through bsums; IQ4_XS's signed values go
 * through the sign trick), maddubs pair-sums them with the int8 activations (no pair
 * exceeds 16 bits: at most 127 * 127 * 2), vpdpwssd weights each group of 16 or 32 by its
 * scale and accumulates. The integer sums of a superblock are exact; they meet d in float
 * once per superblock, in float accumulators summed at the end (so the result equals the
 * portable dot up to float summation order).
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/quant_k_internal.h"
#include "kernels/cpu/ukernel_gen.h"

/* Constant tables, loaded with one aligned load each (building them with set1/insert
 * cost ~30 instructions per call, 20% of a 1024-column row). R<n>(v): v n times. */
#define R8(v) v, v, v, v, v, v, v, v
#define R16(v) R8(v), R8(v)
#define R32(v) R16(v), R16(v)
/* vpermw indices: chunk c of 64 elements covers the groups of 16 4c .. 4c + 3, 8 i16
 * lanes each after maddubs */
#define GI(c) {R8(4 * c), R8(4 * c + 1), R8(4 * c + 2), R8(4 * c + 3)}
static const int16_t group_idx[4][32] __attribute__((aligned(64))) = {GI(0), GI(1), GI(2), GI(3)};
/* pshufb controls for Q4_K / Q5_K chunk c: from a register whose every 128-bit lane
 * holds the 8 scales as bytes, the low 256 bits take byte 2c and the high 256 bits byte
 * 2c + 1 as an i16 (0x80: zero high byte) */
#define K4SEL(c) {R16(0x8000 | (2 * c)), R16(0x8000 | (2 * c + 1))}
static const uint16_t k4_sel[4][32] __attribute__((aligned(64))) = {K4SEL(0), K4SEL(1), K4SEL(2), K4SEL(3)};
/* IQ4_XS chunk c: i16 scale 2c (bytes 4c, 4c + 1) in the low 256 bits, 2c + 1 in the high */
#define IQSEL(c) {R16(0x0100 + 0x0404 * c), R16(0x0302 + 0x0404 * c)}
static const uint16_t iq4_sel[4][32] __attribute__((aligned(64))) = {IQSEL(0), IQSEL(1), IQSEL(2), IQSEL(3)};
/* bit 2k in the low 32 bytes, bit 2k + 1 in the high: Q5_K's qh bit of chunk k, Q3_K's
 * hmask bit of run pair k */
#define BITS(k) {R32(1 << (2 * k)), R32(1 << (2 * k + 1))}
static const uint8_t bit_pair[4][64] __attribute__((aligned(64))) = {BITS(0), BITS(1), BITS(2), BITS(3)};

FACET_INLINE FACET_TGT_AVX512VNNI __m512i ld(const void *table) { return _mm512_load_si512(table); }

/* sum of 16 floats minus the sum of 8 (the min terms): one horizontal reduction */
FACET_INLINE FACET_TGT_AVX512VNNI float sum_minus(__m512 a, __m256 m) {
    return _mm512_reduce_add_ps(_mm512_sub_ps(a, _mm512_zextps256_ps512(m)));
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

/* Q4_K and Q5_K fused, for NR activation rows (1..8, a constant where inlined). Per 64
 * elements: the 32 bytes of qs broadcast to both halves of a zmm, shifted by 0 (low
 * half) or 4 (high half) and masked, line up with 64 consecutive activations (low
 * nibbles = sub-block 2c, high = 2c + 1); Q5_K adds 16 where bit 2c / 2c + 1 of qh (also
 * broadcast) is set. maddubs pair-sums them with the activations (31 * 127 * 2 fits 16
 * bits) and vpdpwssd weights each half by its sub-block scale. Scales, mins and the
 * weights are decoded once per superblock for all NR rows; each row's arithmetic is the
 * same whatever NR (so a row's sum does not depend on the rows beside it). */
FACET_INLINE FACET_TGT_AVX512VNNI void k4_rows(int n, const int NR, float *s, const uint8_t *w,
                                               const int five, const uint8_t *x, size_t xstride) {
    const size_t bytes = five ? sizeof(kq_q5_K) : sizeof(kq_q4_K);
    const __m512i m4 = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
    const __m512i shift = _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4);
    __m512 acc[FACET_QDOTX_MAX];
    __m256 accm[FACET_QDOTX_MAX];
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++) {
        acc[r] = _mm512_setzero_ps();
        accm[r] = _mm256_setzero_ps();
    }
    for (int i = 0; i < n / 256; i++, w += bytes) {
        /* Q4_K: d, dmin, scales[12], qs[128]; Q5_K: the same with qh[32] before qs */
        uint16_t dh, mh;
        memcpy(&dh, w, 2);
        memcpy(&mh, w + 2, 2);
        const float wd = _cvtsh_ss(dh), wmin = _cvtsh_ss(mh);
        uint64_t sc8, m8;
        k4_scales(w + 4, &sc8, &m8);
        __m128i mv = _mm_cvtsi64_si128((long long)m8);
        const __m256i m16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mv, mv));
        const __m512i scb = _mm512_set1_epi64((long long)sc8);
        const uint8_t *qs = w + (five ? 48 : 16);
        __m512i qh = five ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w + 16)))
                          : _mm512_setzero_si512();
        __m512i q[4], sc[4];
        for (int c = 0; c < 4; c++) {
            __m512i qb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(qs + 32 * c)));
            q[c] = _mm512_and_si512(_mm512_srlv_epi64(qb, shift), m4);
            if (five) q[c] = _mm512_mask_add_epi8(q[c], _mm512_test_epi8_mask(qh, ld(bit_pair[c])), q[c], sixteen);
            sc[c] = _mm512_shuffle_epi8(scb, ld(k4_sel[c]));
        }
#pragma GCC unroll 8
        for (int r = 0; r < NR; r++) {
            const facet_blk_q8_K *y = (const facet_blk_q8_K *)(x + r * xstride) + i;
            const float d = y->d * wd, dmin = y->d * wmin;
            __m256i msum = _mm256_madd_epi16(m16, _mm256_loadu_si256((const __m256i *)y->bsums));
            accm[r] = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(msum), accm[r]);
            __m512i sumi = _mm512_setzero_si512();
            for (int c = 0; c < 4; c++)
                sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q[c], _mm512_loadu_si512(y->qs + 64 * c)), sc[c]);
            acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc[r]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++) s[r] = sum_minus(acc[r], accm[r]);
}

void FACET_TGT_AVX512VNNI facet_kq_dot_q4_K_avx512vnni(int n, float *s, const void *w, const void *x) {
    k4_rows(n, 1, s, w, 0, x, 0);
}

void FACET_TGT_AVX512VNNI facet_kq_dot_q5_K_avx512vnni(int n, float *s, const void *w, const void *x) {
    k4_rows(n, 1, s, w, 1, x, 0);
}

/* Decode sweeps: k4_rows / q6_rows with one activation row, inlined into a loop over
 * consecutive weight rows (each row's operations those of the single-row dot). */
void FACET_TGT_AVX512VNNI facet_kq_dotr_q4_K_avx512vnni(int n, int rows, float *s, const void *w,
                                                        size_t wstride, const void *x) {
    for (int r = 0; r < rows; r++) k4_rows(n, 1, s + r, (const uint8_t *)w + r * wstride, 0, x, 0);
}

void FACET_TGT_AVX512VNNI facet_kq_dotr_q5_K_avx512vnni(int n, int rows, float *s, const void *w,
                                                        size_t wstride, const void *x) {
    for (int r = 0; r < rows; r++) k4_rows(n, 1, s + r, (const uint8_t *)w + r * wstride, 1, x, 0);
}

void FACET_TGT_AVX512VNNI facet_kq_dotx_q4_K_avx512vnni(int n, int nr, float *s, const void *w,
                                                        const void *x, size_t xstride) {
    switch (nr) {
    case 1: k4_rows(n, 1, s, w, 0, x, xstride); return;
    case 2: k4_rows(n, 2, s, w, 0, x, xstride); return;
    case 3: k4_rows(n, 3, s, w, 0, x, xstride); return;
    case 4: k4_rows(n, 4, s, w, 0, x, xstride); return;
    case 5: k4_rows(n, 5, s, w, 0, x, xstride); return;
    case 6: k4_rows(n, 6, s, w, 0, x, xstride); return;
    case 7: k4_rows(n, 7, s, w, 0, x, xstride); return;
    default: k4_rows(n, 8, s, w, 0, x, xstride); return;
    }
}

void FACET_TGT_AVX512VNNI facet_kq_dotx_q5_K_avx512vnni(int n, int nr, float *s, const void *w,
                                                        const void *x, size_t xstride) {
    switch (nr) {
    case 1: k4_rows(n, 1, s, w, 1, x, xstride); return;
    case 2: k4_rows(n, 2, s, w, 1, x, xstride); return;
    case 3: k4_rows(n, 3, s, w, 1, x, xstride); return;
    case 4: k4_rows(n, 4, s, w, 1, x, xstride); return;
    case 5: k4_rows(n, 5, s, w, 1, x, xstride); return;
    case 6: k4_rows(n, 6, s, w, 1, x, xstride); return;
    case 7: k4_rows(n, 7, s, w, 1, x, xstride); return;
    default: k4_rows(n, 8, s, w, 1, x, xstride); return;
    }
}

/* Q6_K fused, for NR activation rows (as k4_rows). Per half of 128 elements: 64 bytes of
 * ql give the low nibbles of runs 0, 1 (masked) and 2, 3 (shifted), the 32 bytes of qh
 * broadcast to both 256-bit halves give each run's 2 high bits by per-half shifts; the
 * values 0..63 (63 * 127 * 2 fits 16 bits for maddubs) meet 64 consecutive activations,
 * vpdpwssd weights each group of 16 by its int8 scale, and the -32 of every value comes
 * back through bsums, exactly. */
FACET_INLINE FACET_TGT_AVX512VNNI void q6_rows(int n, const int NR, float *s, const kq_q6_K *b,
                                               const uint8_t *x, size_t xstride) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m3 = _mm512_set1_epi8(0x30);
    const __m512i shl_a = _mm512_setr_epi64(4, 4, 4, 4, 2, 2, 2, 2);
    const __m512i shr_b = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2);
    __m512 acc[FACET_QDOTX_MAX];
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++) acc[r] = _mm512_setzero_ps();
    for (int i = 0; i < n / 256; i++) {
        const float wd = _cvtsh_ss(b[i].d);
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b[i].scales));
        const __m512i sc = _mm512_castsi256_si512(sc16);
        __m512i q[4], g[4];
        for (int h = 0; h < 2; h++) {
            __m512i ql = _mm512_loadu_si512(b[i].ql + 64 * h);
            __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b[i].qh + 32 * h)));
            /* runs 0|1: (ql & 15) | (qh << 4 | qh << 2) & 0x30; runs 2|3: (ql >> 4) & 15 | (qh | qh >> 2) & 0x30 */
            q[2 * h] = _mm512_ternarylogic_epi64(_mm512_and_si512(_mm512_sllv_epi64(qh, shl_a), m3), ql, m4, 0xF8);
            q[2 * h + 1] = _mm512_ternarylogic_epi64(_mm512_and_si512(_mm512_srlv_epi64(qh, shr_b), m3),
                                                     _mm512_srli_epi16(ql, 4), m4, 0xF8);
            g[2 * h] = _mm512_permutexvar_epi16(ld(group_idx[2 * h]), sc);
            g[2 * h + 1] = _mm512_permutexvar_epi16(ld(group_idx[2 * h + 1]), sc);
        }
#pragma GCC unroll 8
        for (int r = 0; r < NR; r++) {
            const facet_blk_q8_K *y = (const facet_blk_q8_K *)(x + r * xstride) + i;
            const float d = y->d * wd;
            __m256i corr = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y->bsums));
            __m512i sumi = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 5)));
            for (int c = 0; c < 4; c++)
                sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q[c], _mm512_loadu_si512(y->qs + 64 * c)), g[c]);
            acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc[r]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++) s[r] = _mm512_reduce_add_ps(acc[r]);
}

void FACET_TGT_AVX512VNNI facet_kq_dot_q6_K_avx512vnni(int n, float *s, const void *w, const void *x) {
    q6_rows(n, 1, s, w, x, 0);
}

void FACET_TGT_AVX512VNNI facet_kq_dotr_q6_K_avx512vnni(int n, int rows, float *s, const void *w,
                                                        size_t wstride, const void *x) {
    for (int r = 0; r < rows; r++)
        q6_rows(n, 1, s + r, (const kq_q6_K *)((const uint8_t *)w + r * wstride), x, 0);
}

void FACET_TGT_AVX512VNNI facet_kq_dotx_q6_K_avx512vnni(int n, int nr, float *s, const void *w,
                                                        const void *x, size_t xstride) {
    switch (nr) {
    case 1: q6_rows(n, 1, s, w, x, xstride); return;
    case 2: q6_rows(n, 2, s, w, x, xstride); return;
    case 3: q6_rows(n, 3, s, w, x, xstride); return;
    case 4: q6_rows(n, 4, s, w, x, xstride); return;
    case 5: q6_rows(n, 5, s, w, x, xstride); return;
    case 6: q6_rows(n, 6, s, w, x, xstride); return;
    case 7: q6_rows(n, 7, s, w, x, xstride); return;
    default: q6_rows(n, 8, s, w, x, xstride); return;
    }
}

/* Q2_K: element 128 h + 32 j + t is bits 2j, 2j + 1 of qs[32 h + t]: 32 bytes broadcast
 * to both zmm halves and shifted by 2j (low half) and 2j + 2 give two runs of 32 at once;
 * 4-bit scales and mins per 16, the mins through bsums. */
void FACET_TGT_AVX512VNNI facet_kq_dot_q2_K_avx512vnni(int n, float *s, const void *w, const void *x) {
    const kq_q2_K *b = w;
    const facet_blk_q8_K *y = x;
    const __m512i m2 = _mm512_set1_epi8(3);
    const __m512i sh0 = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2), sh1 = _mm512_setr_epi64(4, 4, 4, 4, 6, 6, 6, 6);
    __m512 acc = _mm512_setzero_ps();
    __m256 accm = _mm256_setzero_ps();
    for (int i = 0; i < n / 256; i++) {
        const float d = y[i].d * _cvtsh_ss(b[i].d), dmin = y[i].d * _cvtsh_ss(b[i].dmin);
        __m128i sb = _mm_loadu_si128((const __m128i *)b[i].scales);
        __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(sb, _mm_set1_epi8(0x0F)));
        __m256i m16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sb, 4), _mm_set1_epi8(0x0F)));
        __m256i msum = _mm256_madd_epi16(m16, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        accm = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(msum), accm);
        __m512i sc = _mm512_castsi256_si512(sc16);
        __m512i sumi = _mm512_setzero_si512();
        for (int h = 0; h < 2; h++) {
            __m512i qb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * h)));
            for (int jj = 0; jj < 2; jj++) {
                __m512i q2 = _mm512_and_si512(_mm512_srlv_epi64(qb, jj ? sh1 : sh0), m2);
                __m512i p = _mm512_maddubs_epi16(q2, _mm512_loadu_si512(y[i].qs + 128 * h + 64 * jj));
                sumi = _mm512_dpwssd_epi32(sumi, p, _mm512_permutexvar_epi16(ld(group_idx[2 * h + jj]), sc));
            }
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
    }
    *s = sum_minus(acc, accm);
}

/* Q3_K: Q2_K's low bits plus 4 where bit 4h + j of hmask[t] is set (values 0..7; the -4
 * of every value comes back through bsums); 16 six-bit scales, biased by 32. */
void FACET_TGT_AVX512VNNI facet_kq_dot_q3_K_avx512vnni(int n, float *s, const void *w, const void *x) {
    const kq_q3_K *b = w;
    const facet_blk_q8_K *y = x;
    const __m512i m2 = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
    const __m512i sh0 = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2), sh1 = _mm512_setr_epi64(4, 4, 4, 4, 6, 6, 6, 6);
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < n / 256; i++) {
        const float d = y[i].d * _cvtsh_ss(b[i].d);
        /* scale s: low 4 bits from the nibbles of scales[0..7] (low nibbles first), high
         * 2 bits from scales[8 + s % 4] >> 2 (s / 4) */
        uint32_t u0, u1, u2;
        memcpy(&u0, b[i].scales, 4);
        memcpy(&u1, b[i].scales + 4, 4);
        memcpy(&u2, b[i].scales + 8, 4);
        __m128i s6 = _mm_setr_epi32((int)((u0 & 0x0f0f0f0fu) | ((u2 << 4) & 0x30303030u)),
                                    (int)((u1 & 0x0f0f0f0fu) | ((u2 << 2) & 0x30303030u)),
                                    (int)(((u0 >> 4) & 0x0f0f0f0fu) | (u2 & 0x30303030u)),
                                    (int)(((u1 >> 4) & 0x0f0f0f0fu) | ((u2 >> 2) & 0x30303030u)));
        __m256i sc16 = _mm256_cvtepi8_epi16(_mm_sub_epi8(s6, _mm_set1_epi8(32)));
        __m256i corr = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        __m512i sumi = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 2)));
        __m512i sc = _mm512_castsi256_si512(sc16);
        __m512i hm = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)b[i].hmask));
        for (int h = 0; h < 2; h++) {
            __m512i qb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * h)));
            for (int jj = 0; jj < 2; jj++) {
                __m512i q2 = _mm512_and_si512(_mm512_srlv_epi64(qb, jj ? sh1 : sh0), m2);
                __m512i q3 = _mm512_mask_add_epi8(q2, _mm512_test_epi8_mask(hm, ld(bit_pair[2 * h + jj])), q2, four);
                __m512i p = _mm512_maddubs_epi16(q3, _mm512_loadu_si512(y[i].qs + 128 * h + 64 * jj));
                sumi = _mm512_dpwssd_epi32(sumi, p, _mm512_permutexvar_epi16(ld(group_idx[2 * h + jj]), sc));
            }
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
    }
    *s = _mm512_reduce_add_ps(acc);
}

/* IQ4_XS: sub-block j's 16 bytes give its elements 0..15 (low nibbles) and 16..31 (high);
 * the 32 bytes of two sub-blocks, their 128-bit halves each duplicated and shifted by 0 /
 * 4, line up with 64 activations. pshufb looks up |kvalue| (the table is negative
 * exactly for indices 0..7, whose activations are negated instead); the 8 six-bit
 * scales, biased by 32, are decoded with a few shifts of scales_l and scales_h. */
void FACET_TGT_AVX512VNNI facet_kq_dot_iq4_xs_avx512vnni(int n, float *s, const void *w, const void *x) {
    const kq_iq4_xs *b = w;
    const facet_blk_q8_K *y = x;
    const __m512i m4 = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8);
    const __m512i shift = _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4);
    /* |facet_kvalues_iq4nl| (test_quant_k checks this kernel against the table itself) */
    static const uint8_t absk[16] = {127, 104, 83, 65, 49, 35, 22, 10, 1, 13, 25, 38, 53, 69, 89, 113};
    const __m512i tab = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)absk));
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int i = 0; i < n / 256; i++) {
        const float d = y[i].d * _cvtsh_ss(b[i].d);
        uint32_t sl;
        memcpy(&sl, b[i].scales_l, 4);
        uint64_t lo = sl, hi = b[i].scales_h;
        lo = (lo | lo << 16) & 0x0000FFFF0000FFFFull;
        lo = (lo | lo << 8) & 0x00FF00FF00FF00FFull;
        lo = (lo | lo << 4) & 0x0F0F0F0F0F0F0F0Full; /* byte j: 4 low bits of scale j */
        hi = (hi | hi << 24) & 0x000000FF000000FFull;
        hi = (hi | hi << 12) & 0x000F000F000F000Full;
        hi = (hi | hi << 6) & 0x0303030303030303ull; /* byte j: 2 high bits of scale j */
        __m128i ls = _mm_sub_epi8(_mm_cvtsi64_si128((long long)(lo | hi << 4)), _mm_set1_epi8(32));
        __m512i scb = _mm512_broadcast_i32x4(_mm_cvtepi8_epi16(ls));
        __m512i sumi = _mm512_setzero_si512();
        for (int c = 0; c < 4; c++) {
            __m512i qv = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * c)));
            qv = _mm512_shuffle_i64x2(qv, qv, 0x50); /* 128-bit lanes 0, 0, 1, 1 */
            __m512i idx = _mm512_and_si512(_mm512_srlv_epi64(qv, shift), m4);
            __m512i xq = _mm512_loadu_si512(y[i].qs + 64 * c);
            xq = _mm512_mask_sub_epi8(xq, _mm512_testn_epi8_mask(idx, eight), _mm512_setzero_si512(), xq);
            __m512i p = _mm512_maddubs_epi16(_mm512_shuffle_epi8(tab, idx), xq);
            sumi = _mm512_dpwssd_epi32(sumi, p, _mm512_shuffle_epi8(scb, ld(iq4_sel[c])));
        }
        if (i & 1) acc1 = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc1);
        else acc0 = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc0);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}
