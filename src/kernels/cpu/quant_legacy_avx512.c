/*
 * quant_legacy_avx512.c — AVX-512 VNNI dot products of the 32-element GGUF block types
 * (quant_legacy.h) with their 8-bit activation blocks: two blocks per 512-bit register,
 * their 64 byte products summed by vpdpbusd (u8 x s8 into int32), each block's eight
 * int32 lanes scaled by d_w * d_x in float and accumulated in 16 float lanes, added at
 * the end. A signed weight byte's sign moves onto the activation (the activations are in
 * [-127, 127], so negating one cannot overflow) and its magnitude is the u8 operand.
 * Runs where facet_cpu() reports avx512_vnni (the driver's choice, matmul_qblock.c).
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/quant_legacy.h"
#include "kernels/cpu/ukernel_gen.h"

#define T FACET_TGT_AVX512VNNI

T FACET_INLINE __m256i nib32(const uint8_t *qs) {
    __m128i t = _mm_loadu_si128((const __m128i *)qs);
    __m256i b = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
    return _mm256_and_si256(b, _mm256_set1_epi8(15));
}

T FACET_INLINE __mmask32 qh_mask(const uint8_t *qh) {
    uint32_t v;
    memcpy(&v, qh, 4);
    return (__mmask32)v;
}

T FACET_INLINE __m512i two(__m256i lo, __m256i hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

T FACET_INLINE __m512i ld_x(const int8_t *q) {
    return _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)q));
}

/* int32 sums of four byte products: u8 a x s8 b, and signed a x signed b. */
T FACET_INLINE __m512i dp_us(__m512i a, __m512i b) {
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), a, b);
}
T FACET_INLINE __m512i dp_ss(__m512i a, __m512i b) {
    __mmask64 neg = _mm512_movepi8_mask(a);
    __m512i sb = _mm512_mask_sub_epi8(b, neg, _mm512_setzero_si512(), b);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(a), sb);
}

T FACET_INLINE __m512 scales2(float d0, float d1) {
    return _mm512_insertf32x8(_mm512_set1_ps(d0), _mm256_set1_ps(d1), 1);
}

T FACET_INLINE float hsum16(__m512 v) { return _mm512_reduce_add_ps(v); }

#define F16(h) _cvtsh_ss(h)

/* Per type: the 32 weight bytes of block p as int8 (signed) or u8 (unsigned). */
T FACET_INLINE __m256i q_q4_0(const facet_blk_q4_0 *p) {
    return _mm256_sub_epi8(nib32(p->qs), _mm256_set1_epi8(8));
}
T FACET_INLINE __m256i q_q4_1(const facet_blk_q4_1 *p) { return nib32(p->qs); }
T FACET_INLINE __m256i q_q5_0(const facet_blk_q5_0 *p) {
    __m256i q = nib32(p->qs); /* q - 16 where the high bit is clear: q | 0xF0 */
    return _mm256_or_si256(q, _mm256_maskz_mov_epi8((__mmask32)~qh_mask(p->qh),
                                                     _mm256_set1_epi8((char)0xF0)));
}
T FACET_INLINE __m256i q_q5_1(const facet_blk_q5_1 *p) {
    __m256i q = nib32(p->qs);
    return _mm256_or_si256(q, _mm256_maskz_mov_epi8(qh_mask(p->qh), _mm256_set1_epi8(0x10)));
}
T FACET_INLINE __m256i q_q8_0(const facet_blk_q8_0w *p) {
    return _mm256_loadu_si256((const __m256i *)p->qs);
}
T FACET_INLINE __m256i q_iq4_nl(const facet_blk_iq4_nl *p) {
    const __m128i k = _mm_loadu_si128((const __m128i *)facet_kvalues_iq4nl);
    return _mm256_shuffle_epi8(_mm256_set_m128i(k, k), nib32(p->qs));
}

/* The dot of type NAME (weight blocks WT, activation blocks XT, product DP); MIN adds
 * m_w * s_x for the types with a min. An odd last block runs with a zero upper half. */
#define NO_MIN(i0, i1) 0.0f
#define WITH_MIN(i0, i1) (F16(a[i0].m) * F16(b[i0].s) + ((i1) >= 0 ? F16(a[i1].m) * F16(b[i1].s) : 0.0f))
#define DOT(NAME, WT, XT, DP, MIN)                                                          \
    T void facet_dot_##NAME##_avx512(int n, float *s, const void *w, const void *x) {        \
        const WT *a = w;                                                                    \
        const XT *b = x;                                                                    \
        __m512 acc = _mm512_setzero_ps();                                                   \
        float mins = 0.0f;                                                                  \
        int nb = n / 32, i = 0;                                                             \
        for (; i + 1 < nb; i += 2) {                                                        \
            __m512i q = two(q_##NAME(a + i), q_##NAME(a + i + 1));                          \
            __m512i y = _mm512_inserti64x4(ld_x(b[i].qs),                                   \
                                           _mm256_loadu_si256((const __m256i *)b[i + 1].qs), 1); \
            __m512 d = scales2(F16(a[i].d) * F16(b[i].d), F16(a[i + 1].d) * F16(b[i + 1].d)); \
            acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(DP(q, y)), acc);                    \
            mins += MIN(i, i + 1);                                                          \
        }                                                                                   \
        if (i < nb) {                                                                       \
            __m512i q = _mm512_castsi256_si512(q_##NAME(a + i));                            \
            q = _mm512_inserti64x4(q, _mm256_setzero_si256(), 1);                           \
            __m512i y = _mm512_inserti64x4(ld_x(b[i].qs), _mm256_setzero_si256(), 1);       \
            __m512 d = scales2(F16(a[i].d) * F16(b[i].d), 0.0f);                            \
            acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(DP(q, y)), acc);                    \
            mins += MIN(i, -1);                                                             \
        }                                                                                   \
        *s = hsum16(acc) + mins;                                                            \
    }

DOT(q4_0, facet_blk_q4_0, facet_blk_q8_0, dp_ss, NO_MIN)
DOT(q4_1, facet_blk_q4_1, facet_blk_q8_1, dp_us, WITH_MIN)
DOT(q5_0, facet_blk_q5_0, facet_blk_q8_0, dp_ss, NO_MIN)
DOT(q5_1, facet_blk_q5_1, facet_blk_q8_1, dp_us, WITH_MIN)
DOT(q8_0, facet_blk_q8_0w, facet_blk_q8_0, dp_ss, NO_MIN)
DOT(iq4_nl, facet_blk_iq4_nl, facet_blk_q8_0, dp_ss, NO_MIN)

/* ---- several activation rows (quant.h facet_qdotx_fn): each weight pair of blocks
 * decoded once (and a signed one's magnitude and sign mask taken once) for nr rows; every
 * row's operations are those of its single-row dot above, in the same order, so its sum
 * is the same bits. */

T FACET_INLINE __m512i dpx_us(__m512i a, __mmask64 neg, __m512i b) {
    (void)neg;
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), a, b);
}
T FACET_INLINE __m512i dpx_ss(__m512i absa, __mmask64 neg, __m512i b) {
    __m512i sb = _mm512_mask_sub_epi8(b, neg, _mm512_setzero_si512(), b);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), absa, sb);
}
/* the u8 operand and sign mask of the weight bytes q, as dp_us / dp_ss use them */
#define PREP_us(q, neg) (neg = 0, (q))
#define PREP_ss(q, neg) (neg = _mm512_movepi8_mask(q), _mm512_abs_epi8(q))

#define DOTX(NAME, WT, XT, KIND, XMIN)                                                      \
    T FACET_INLINE void dotx_##NAME##_n(int n, const int nr, float *s, const void *w,        \
                                        const void *x, size_t xs) {                          \
        const WT *a = w;                                                                     \
        const XT *bs[4];                                                                     \
        __m512 acc[4];                                                                       \
        float mins[4];                                                                       \
        for (int r = 0; r < nr; r++) {                                                       \
            bs[r] = (const XT *)((const uint8_t *)x + (size_t)r * xs);                       \
            acc[r] = _mm512_setzero_ps();                                                    \
            mins[r] = 0.0f;                                                                  \
        }                                                                                    \
        int nb = n / 32, i = 0;                                                              \
        for (; i + 1 < nb; i += 2) {                                                         \
            __mmask64 neg;                                                                   \
            __m512i q = two(q_##NAME(a + i), q_##NAME(a + i + 1));                           \
            __m512i u = PREP_##KIND(q, neg);                                                 \
            float d0 = F16(a[i].d), d1 = F16(a[i + 1].d);                                    \
            for (int r = 0; r < nr; r++) {                                                   \
                const XT *b = bs[r];                                                         \
                __m512i y = _mm512_inserti64x4(ld_x(b[i].qs),                                \
                                               _mm256_loadu_si256((const __m256i *)b[i + 1].qs), 1); \
                __m512 d = scales2(d0 * F16(b[i].d), d1 * F16(b[i + 1].d));                  \
                acc[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dpx_##KIND(u, neg, y)), acc[r]); \
                mins[r] += XMIN(i, i + 1);                                                \
            }                                                                                \
        }                                                                                    \
        if (i < nb) {                                                                        \
            __mmask64 neg;                                                                   \
            __m512i q = _mm512_castsi256_si512(q_##NAME(a + i));                             \
            q = _mm512_inserti64x4(q, _mm256_setzero_si256(), 1);                            \
            __m512i u = PREP_##KIND(q, neg);                                                 \
            float d0 = F16(a[i].d);                                                          \
            for (int r = 0; r < nr; r++) {                                                   \
                const XT *b = bs[r];                                                         \
                __m512i y = _mm512_inserti64x4(ld_x(b[i].qs), _mm256_setzero_si256(), 1);    \
                __m512 d = scales2(d0 * F16(b[i].d), 0.0f);                                  \
                acc[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dpx_##KIND(u, neg, y)), acc[r]); \
                mins[r] += XMIN(i, -1);                                                   \
            }                                                                                \
        }                                                                                    \
        for (int r = 0; r < nr; r++) s[r] = hsum16(acc[r]) + mins[r];                        \
    }                                                                                        \
    T void facet_dotx_##NAME##_avx512(int n, int nr, float *s, const void *w, const void *x, \
                                      size_t xs) {                                           \
        switch (nr) {                                                                        \
        case 1: dotx_##NAME##_n(n, 1, s, w, x, xs); return;                                  \
        case 2: dotx_##NAME##_n(n, 2, s, w, x, xs); return;                                  \
        case 3: dotx_##NAME##_n(n, 3, s, w, x, xs); return;                                  \
        default: /* 4 rows a pass at most */                                                 \
            dotx_##NAME##_n(n, 4, s, w, x, xs);                                              \
            if (nr > 4) facet_dotx_##NAME##_avx512(n, nr - 4, s + 4, w, (const uint8_t *)x + 4 * xs, xs); \
            return;                                                                          \
        }                                                                                    \
    }

DOTX(q4_0, facet_blk_q4_0, facet_blk_q8_0, ss, NO_MIN)
DOTX(q4_1, facet_blk_q4_1, facet_blk_q8_1, us, WITH_MIN)
DOTX(q5_0, facet_blk_q5_0, facet_blk_q8_0, ss, NO_MIN)
DOTX(q5_1, facet_blk_q5_1, facet_blk_q8_1, us, WITH_MIN)
DOTX(q8_0, facet_blk_q8_0w, facet_blk_q8_0, ss, NO_MIN)
DOTX(iq4_nl, facet_blk_iq4_nl, facet_blk_q8_0, ss, NO_MIN)
