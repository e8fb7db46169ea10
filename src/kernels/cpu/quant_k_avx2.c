/*
 * quant_k_avx2.c — AVX2 dots of the 256-element block types with Q8_K activations.
 *
 * As quant_k_avx512.c, 32 elements at a time: each kernel decodes a superblock in
 * registers to unsigned bytes lined up with 32 consecutive activations (Q3_K's -4 and
 * Q6_K's -32 return exactly through bsums; IQ4_XS's signed values use the sign trick),
 * maddubs pair-sums (at most 127 * 127 * 2, no saturation), madd weights each group by
 * its scale; exact integer sums per superblock meet d in float accumulators.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/quant_k_internal.h"
#include "kernels/cpu/ukernel_gen.h"

FACET_INLINE FACET_TGT_AVX2 float hsum_f32_avx2(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The 8 six-bit scales (low 8 bytes) and mins (high 8 bytes) of a Q4_K / Q5_K block's 12
 * packed bytes (quant_k.c facet_kq_scale_min_k4), four at a time in 32-bit words. */
FACET_INLINE void scale_min_words(const uint8_t *s12, uint32_t out[4]) {
    uint32_t u0, u1, u2;
    memcpy(&u0, s12, 4);
    memcpy(&u1, s12 + 4, 4);
    memcpy(&u2, s12 + 8, 4);
    out[0] = u0 & 0x3f3f3f3fu;                                     /* scales 0..3 */
    out[1] = (u2 & 0x0f0f0f0fu) | ((u0 >> 2) & 0x30303030u);        /* scales 4..7 */
    out[2] = u1 & 0x3f3f3f3fu;                                     /* mins 0..3   */
    out[3] = ((u2 >> 4) & 0x0f0f0f0fu) | ((u1 >> 2) & 0x30303030u); /* mins 4..7   */
}

/* Q4_K and Q5_K fused, for NR activation rows (1..4, a constant where inlined): per 64
 * elements (32 bytes of qs), the low nibbles against activations 0..31 and the high
 * against 32..63 (Q5_K: plus 16 where bit 2c / 2c + 1 of qh is set), each pair-summed by
 * maddubs (31 * 127 * 2 fits 16 bits) and weighted by its sub-block scale with madd; the
 * mins go through bsums. The weights are decoded once per chunk for all NR rows; each
 * row's arithmetic is the same whatever NR (exact integer sums, the same float steps). */
FACET_INLINE FACET_TGT_AVX2 void k4_rows_avx2(int n, const int NR, float *s, const uint8_t *w,
                                              const int five, const uint8_t *x, size_t xstride) {
    const size_t bytes = five ? sizeof(kq_q5_K) : sizeof(kq_q4_K);
    const __m256i m4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
    __m256 acc[FACET_QDOTX_MAX];
    __m128 accm[FACET_QDOTX_MAX];
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++) acc[r] = _mm256_setzero_ps(), accm[r] = _mm_setzero_ps();
    for (int i = 0; i < n / 256; i++, w += bytes) {
        /* Q4_K: d, dmin, scales[12], qs[128]; Q5_K: the same with qh[32] before qs */
        uint16_t dh, mh;
        memcpy(&dh, w, 2);
        memcpy(&mh, w + 2, 2);
        const float wd = _cvtsh_ss(dh), wmin = _cvtsh_ss(mh);
        const uint8_t *q = w + (five ? 48 : 16);
        uint32_t sm[4];
        scale_min_words(w + 4, sm);
        __m128i scm = _mm_setr_epi32((int)sm[0], (int)sm[1], (int)sm[2], (int)sm[3]);
        __m256i sc16 = _mm256_cvtepu8_epi16(scm); /* scales 0..7 | mins 0..7 as i16 */
        __m128i mins = _mm256_extracti128_si256(sc16, 1);
        /* both 128-bit lanes hold the 8 scales as i16 */
        __m256i scl = _mm256_permute4x64_epi64(sc16, 0x44);
        __m256i qh = five ? _mm256_loadu_si256((const __m256i *)(w + 16)) : _mm256_setzero_si256();
        __m256i sumi[FACET_QDOTX_MAX];
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            const facet_blk_q8_K *y = (const facet_blk_q8_K *)(x + r * xstride) + i;
            /* mins: sum_j m[j] * (bsums[2j] + bsums[2j+1]) */
            __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
            __m128i bs2 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
            accm[r] = _mm_fmadd_ps(_mm_set1_ps(y->d * wmin), _mm_cvtepi32_ps(_mm_madd_epi16(mins, bs2)), accm[r]);
            sumi[r] = _mm256_setzero_si256();
        }
        for (int c = 0; c < 4; c++) {
            /* broadcast scale 2c (i16 lane 2c: bytes 4c, 4c+1) and 2c + 1 */
            const __m256i s0 = _mm256_shuffle_epi8(scl, _mm256_set1_epi16((short)(0x0100 + 0x0202 * 2 * c)));
            const __m256i s1 = _mm256_shuffle_epi8(scl, _mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * c + 1))));
            __m256i qb = _mm256_loadu_si256((const __m256i *)(q + 32 * c));
            __m256i lo = _mm256_and_si256(qb, m4), hi = _mm256_and_si256(_mm256_srli_epi16(qb, 4), m4);
            if (five) {
                /* bits 2c, 2c + 1 of each byte to bit 4 (shifts within 16-bit lanes: the
                 * mask keeps only bits that stay in their byte) */
                __m256i hc = _mm256_srli_epi16(qh, 2 * c);
                lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(hc, 4), b4));
                hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(hc, 3), b4));
            }
#pragma GCC unroll 4
            for (int r = 0; r < NR; r++) {
                const int8_t *xq = ((const facet_blk_q8_K *)(x + r * xstride) + i)->qs + 64 * c;
                __m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)xq));
                __m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(xq + 32)));
                sumi[r] = _mm256_add_epi32(sumi[r], _mm256_add_epi32(_mm256_madd_epi16(p0, s0), _mm256_madd_epi16(p1, s1)));
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            const float d = ((const facet_blk_q8_K *)(x + r * xstride) + i)->d * wd;
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++) s[r] = hsum_f32_avx2(_mm256_sub_ps(acc[r], _mm256_zextps128_ps256(accm[r])));
}

void FACET_TGT_AVX2 facet_kq_dot_q4_K_avx2(int n, float *s, const void *w, const void *x) {
    k4_rows_avx2(n, 1, s, w, 0, x, 0);
}

void FACET_TGT_AVX2 facet_kq_dot_q5_K_avx2(int n, float *s, const void *w, const void *x) {
    k4_rows_avx2(n, 1, s, w, 1, x, 0);
}

void FACET_TGT_AVX2 facet_kq_dotx_q4_K_avx2(int n, int nr, float *s, const void *w, const void *x,
                                            size_t xstride) {
    switch (nr) {
    case 1: k4_rows_avx2(n, 1, s, w, 0, x, xstride); return;
    case 2: k4_rows_avx2(n, 2, s, w, 0, x, xstride); return;
    case 3: k4_rows_avx2(n, 3, s, w, 0, x, xstride); return;
    default: /* 4 rows here at most (16 ymm registers): the rest in another pass */
        k4_rows_avx2(n, 4, s, w, 0, x, xstride);
        if (nr > 4) facet_kq_dotx_q4_K_avx2(n, nr - 4, s + 4, w, (const uint8_t *)x + 4 * xstride, xstride);
        return;
    }
}

void FACET_TGT_AVX2 facet_kq_dotx_q5_K_avx2(int n, int nr, float *s, const void *w, const void *x,
                                            size_t xstride) {
    switch (nr) {
    case 1: k4_rows_avx2(n, 1, s, w, 1, x, xstride); return;
    case 2: k4_rows_avx2(n, 2, s, w, 1, x, xstride); return;
    case 3: k4_rows_avx2(n, 3, s, w, 1, x, xstride); return;
    default: /* 4 rows here at most (16 ymm registers): the rest in another pass */
        k4_rows_avx2(n, 4, s, w, 1, x, xstride);
        if (nr > 4) facet_kq_dotx_q5_K_avx2(n, nr - 4, s + 4, w, (const uint8_t *)x + 4 * xstride, xstride);
        return;
    }
}

/* Q6_K fused, for NR activation rows (as k4_rows_avx2): per half of 128 elements, 32
 * bytes of ql (twice) and of qh give the four runs of 32 six-bit values (0..63, the -32
 * taken out through bsums: 63 * 127 * 2 fits 16 bits for maddubs); each run is two
 * groups of 16 with their int8 scales. */
FACET_INLINE FACET_TGT_AVX2 void q6_rows_avx2(int n, const int NR, float *s, const kq_q6_K *b,
                                              const uint8_t *x, size_t xstride) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(0x30);
    __m256 acc[FACET_QDOTX_MAX];
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++) acc[r] = _mm256_setzero_ps();
    for (int i = 0; i < n / 256; i++) {
        const float wd = _cvtsh_ss(b[i].d);
        __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b[i].scales));
        __m256i sumi[FACET_QDOTX_MAX];
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            const facet_blk_q8_K *y = (const facet_blk_q8_K *)(x + r * xstride) + i;
            /* 32 * sum_g sc[g] * bsums[g]: the -32 of every value */
            __m256i corr = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y->bsums));
            sumi[r] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 5));
        }
        for (int h = 0; h < 2; h++) {
            /* both lanes: the 8 scales of this half */
            __m256i scl = h ? _mm256_permute4x64_epi64(sc16, 0xEE) : _mm256_permute4x64_epi64(sc16, 0x44);
            const uint8_t *ql = b[i].ql + 64 * h, *qh = b[i].qh + 32 * h;
            __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            __m256i hb = _mm256_loadu_si256((const __m256i *)qh);
            for (int k = 0; k < 4; k++) {
                __m256i lk = k & 1 ? l1 : l0;
                if (k >= 2) lk = _mm256_srli_epi16(lk, 4);
                __m256i hk = k == 0 ? _mm256_slli_epi16(hb, 4) : k == 1 ? _mm256_slli_epi16(hb, 2)
                           : k == 2 ? hb : _mm256_srli_epi16(hb, 2);
                __m256i q6 = _mm256_or_si256(_mm256_and_si256(lk, m4), _mm256_and_si256(hk, m3));
                /* groups 2k (low lane) and 2k + 1 (high lane) of this half */
                const __m256i sk = _mm256_shuffle_epi8(
                    scl, _mm256_setr_epi8(4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k,
                                          4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1,
                                          4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3,
                                          4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3,
                                          4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3));
#pragma GCC unroll 4
                for (int r = 0; r < NR; r++) {
                    const int8_t *xq = ((const facet_blk_q8_K *)(x + r * xstride) + i)->qs + 128 * h + 32 * k;
                    __m256i p = _mm256_maddubs_epi16(q6, _mm256_loadu_si256((const __m256i *)xq));
                    sumi[r] = _mm256_add_epi32(sumi[r], _mm256_madd_epi16(p, sk));
                }
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            const float d = ((const facet_blk_q8_K *)(x + r * xstride) + i)->d * wd;
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++) s[r] = hsum_f32_avx2(acc[r]);
}

void FACET_TGT_AVX2 facet_kq_dot_q6_K_avx2(int n, float *s, const void *w, const void *x) {
    q6_rows_avx2(n, 1, s, w, x, 0);
}

void FACET_TGT_AVX2 facet_kq_dotx_q6_K_avx2(int n, int nr, float *s, const void *w, const void *x,
                                            size_t xstride) {
    switch (nr) {
    case 1: q6_rows_avx2(n, 1, s, w, x, xstride); return;
    case 2: q6_rows_avx2(n, 2, s, w, x, xstride); return;
    case 3: q6_rows_avx2(n, 3, s, w, x, xstride); return;
    default: /* 4 rows here at most (16 ymm registers): the rest in another pass */
        q6_rows_avx2(n, 4, s, w, x, xstride);
        if (nr > 4) facet_kq_dotx_q6_K_avx2(n, nr - 4, s + 4, w, (const uint8_t *)x + 4 * xstride, xstride);
        return;
    }
}

/* Q2_K and Q3_K: element 128 h + 32 j + t has bits 2j, 2j + 1 of qs[32 h + t] (Q3_K: plus
 * 4 where bit 4h + j of hmask[t] is set; its -4 comes back through bsums, exactly); run j
 * is the groups of 16 8h + 2j, 8h + 2j + 1 with their scales (Q2_K: 4-bit, plus 4-bit
 * mins through bsums; Q3_K: 6-bit biased by 32). */
FACET_INLINE FACET_TGT_AVX2 __m256i runs_avx2(const uint8_t *qs, const uint8_t *hmask, __m256i sc16,
                                              const int8_t *xq) {
    const __m256i m2 = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; h++) {
        /* both lanes: this half's 8 scales */
        __m256i scl = h ? _mm256_permute4x64_epi64(sc16, 0xEE) : _mm256_permute4x64_epi64(sc16, 0x44);
        __m256i qb = _mm256_loadu_si256((const __m256i *)(qs + 32 * h));
        __m256i hm = hmask ? _mm256_loadu_si256((const __m256i *)hmask) : _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            __m256i q = _mm256_and_si256(_mm256_srli_epi16(qb, 2 * j), m2);
            if (hmask) {
                const __m256i bit = _mm256_set1_epi8((char)(1 << (4 * h + j)));
                q = _mm256_add_epi8(q, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit), four));
            }
            const __m256i sj = _mm256_shuffle_epi8(
                scl, _mm256_setr_epi8(4 * j, 4 * j + 1, 4 * j, 4 * j + 1, 4 * j, 4 * j + 1, 4 * j, 4 * j + 1,
                                      4 * j, 4 * j + 1, 4 * j, 4 * j + 1, 4 * j, 4 * j + 1, 4 * j, 4 * j + 1,
                                      4 * j + 2, 4 * j + 3, 4 * j + 2, 4 * j + 3, 4 * j + 2, 4 * j + 3, 4 * j + 2,
                                      4 * j + 3, 4 * j + 2, 4 * j + 3, 4 * j + 2, 4 * j + 3, 4 * j + 2, 4 * j + 3,
                                      4 * j + 2, 4 * j + 3));
            __m256i p = _mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)(xq + 128 * h + 32 * j)));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sj));
        }
    }
    return sumi;
}

void FACET_TGT_AVX2 facet_kq_dot_q2_K_avx2(int n, float *s, const void *w, const void *x) {
    const kq_q2_K *b = w;
    const facet_blk_q8_K *y = x;
    __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
    for (int i = 0; i < n / 256; i++) {
        const float d = y[i].d * _cvtsh_ss(b[i].d), dmin = y[i].d * _cvtsh_ss(b[i].dmin);
        __m128i sb = _mm_loadu_si128((const __m128i *)b[i].scales);
        __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(sb, _mm_set1_epi8(0x0F)));
        __m256i m16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sb, 4), _mm_set1_epi8(0x0F)));
        __m256i msum = _mm256_madd_epi16(m16, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        accm = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(msum), accm);
        __m256i sumi = runs_avx2(b[i].qs, NULL, sc16, y[i].qs);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = hsum_f32_avx2(_mm256_sub_ps(acc, accm));
}

void FACET_TGT_AVX2 facet_kq_dot_q3_K_avx2(int n, float *s, const void *w, const void *x) {
    const kq_q3_K *b = w;
    const facet_blk_q8_K *y = x;
    __m256 acc = _mm256_setzero_ps();
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
        __m256i sumi = _mm256_sub_epi32(runs_avx2(b[i].qs, b[i].hmask, sc16, y[i].qs), _mm256_slli_epi32(corr, 2));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = hsum_f32_avx2(acc);
}

/* IQ4_XS: 32 bytes of qs are two sub-blocks; each one's low nibbles (elements 0..15) and
 * high nibbles (16..31) are put side by side, the values looked up with pshufb and
 * multiplied with the sign trick (|kvalue| <= 127); the 8 six-bit scales (biased by 32)
 * are decoded with shifts of scales_l and scales_h. */
void FACET_TGT_AVX2 facet_kq_dot_iq4_xs_avx2(int n, float *s, const void *w, const void *x) {
    const kq_iq4_xs *b = w;
    const facet_blk_q8_K *y = x;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i tab = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)facet_kvalues_iq4nl));
    __m256 acc = _mm256_setzero_ps();
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
        __m256i scl = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(ls)); /* 8 i16, both lanes */
        __m256i sumi = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i qb = _mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * c));
            __m256i lo4 = _mm256_and_si256(qb, m4), hi4 = _mm256_and_si256(_mm256_srli_epi16(qb, 4), m4);
            for (int k = 0; k < 2; k++) {
                __m256i idx = k ? _mm256_permute2x128_si256(lo4, hi4, 0x31) : _mm256_permute2x128_si256(lo4, hi4, 0x20);
                __m256i v = _mm256_shuffle_epi8(tab, idx);
                __m256i xq = _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c + 32 * k));
                __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(v), _mm256_sign_epi8(xq, v));
                const __m256i sk = _mm256_shuffle_epi8(scl, _mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * c + k))));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sk));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = hsum_f32_avx2(acc);
}
