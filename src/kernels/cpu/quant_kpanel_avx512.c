/*
 * quant_kpanel_avx512.c — the AVX-512 VNNI kernels of the Q4_K / Q6_K panels
 * (quant_kpanel.h: layout and arithmetic, which these reproduce bit for bit).
 *
 * One register of 64 code bytes is 4 consecutive inputs of each of the 16 rows, the int32
 * lane l being row l: vpdpbusd with the input row's 4 int8 activations broadcast adds
 * row l's 4 products to lane l. A sub-block's 8 (Q4_K: 32 inputs) or 4 (Q6_K: 16) such
 * steps give each row's exact sub-block sum, which one vpmulld by the 16 rows' scales
 * weights; the mins (Q4_K) and Q6_K's -32 come from the activations' bsums by vpdpwssd.
 * The codes of a sub-block are unpacked once for all the input rows of the call (up to
 * 8, a constant where inlined); each row's accumulators are its own, so its result does
 * not depend on how many rows the call takes.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/quant_k_internal.h"
#include "kernels/cpu/quant_kpanel.h"
#include "kernels/cpu/ukernel_gen.h"

#define R4(a, b, c, d) a, b, c, d, a, b, c, d, a, b, c, d, a, b, c, d
/* pshufb controls over a register whose dword lane l holds 4 bytes of row l: byte j of
 * each dword zero-extended to the dword (SEL), or to both of its words (PAIR). pshufb
 * indexes within 128-bit lanes: dword k of a lane starts at byte 4k. */
#define SEL1(j, k) 4 * (k) + (j), 0x80, 0x80, 0x80
#define SEL(j) {R4(SEL1(j, 0), SEL1(j, 1), SEL1(j, 2), SEL1(j, 3))}
#define PAIR1(j, k) 4 * (k) + (j), 0x80, 4 * (k) + (j), 0x80
#define PAIR(j) {R4(PAIR1(j, 0), PAIR1(j, 1), PAIR1(j, 2), PAIR1(j, 3))}
static const uint8_t sel_byte[4][64] __attribute__((aligned(64))) = {SEL(0), SEL(1), SEL(2), SEL(3)};
static const uint8_t pair_byte[4][64] __attribute__((aligned(64))) = {PAIR(0), PAIR(1), PAIR(2), PAIR(3)};

/* Software prefetch distance: two superblocks of the panel ahead (the hardware prefetcher
 * alone left a decode sweep from memory ~10-40% slower than the row dots'). */
#define KP_AHEAD4 (2 * 16 * 144)
#define KP_AHEAD6 (2 * 16 * 210)

FACET_INLINE FACET_TGT_AVX512VNNI __m512i ldt(const void *table) { return _mm512_load_si512(table); }

/* 4 int8 activations (or 2 int16) broadcast to every lane */
FACET_INLINE FACET_TGT_AVX512VNNI __m512i bc4(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

FACET_INLINE FACET_TGT_AVX512VNNI void q4k_panel(int n, const int NT, float *s, size_t ld,
                                                 const uint8_t *p, const uint8_t *x, size_t xstride) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i c3f = _mm512_set1_epi8(0x3F), c0f = _mm512_set1_epi8(0x0F), c30 = _mm512_set1_epi8(0x30);
    __m512 acc[FACET_QDOTX_MAX];
#pragma GCC unroll 8
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    for (int sb = 0; sb < n / 256; sb++, p += 16 * 144) {
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
        const __m512 dmw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 32)));
        const __m512i u0 = _mm512_loadu_si512(p + 64), u1 = _mm512_loadu_si512(p + 128),
                      u2 = _mm512_loadu_si512(p + 192);
        /* dword l: row l's scales 0-3 / 4-7 and mins 0-3 / 4-7 as bytes (quant_k.c
         * facet_kq_scale_min_k4) */
        const __m512i sclo = _mm512_and_si512(u0, c3f);
        const __m512i schi = _mm512_or_si512(_mm512_and_si512(u2, c0f), _mm512_and_si512(_mm512_srli_epi32(u0, 2), c30));
        const __m512i mlo = _mm512_and_si512(u1, c3f);
        const __m512i mhi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), c0f),
                                            _mm512_and_si512(_mm512_srli_epi32(u1, 2), c30));
        for (int c = 0; c < 256; c += 64) _mm_prefetch((const char *)(p + c + KP_AHEAD4), _MM_HINT_T0);
        __m512i tot[FACET_QDOTX_MAX];
#pragma GCC unroll 8
        for (int t = 0; t < NT; t++) tot[t] = _mm512_setzero_si512();
        const uint8_t *qs = p + 256;
        for (int j = 0; j < 8; j++, qs += 4 * 64) {
            const __m512i scj = _mm512_shuffle_epi8(j < 4 ? sclo : schi, ldt(sel_byte[j & 3]));
            __m512i w[8];
            for (int i = 0; i < 4; i++) {
                _mm_prefetch((const char *)(qs + 64 * i + KP_AHEAD4), _MM_HINT_T0);
                __m512i c = _mm512_loadu_si512(qs + 64 * i);
                w[i] = _mm512_and_si512(c, m4);
                w[4 + i] = _mm512_and_si512(_mm512_srli_epi16(c, 4), m4);
            }
#pragma GCC unroll 8
            for (int t = 0; t < NT; t++) {
                const int8_t *xq = ((const facet_blk_q8_K *)(x + t * xstride) + sb)->qs + 32 * j;
                __m512i a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], bc4(xq));
                __m512i b = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[4], bc4(xq + 16));
                for (int i = 1; i < 4; i++) {
                    a = _mm512_dpbusd_epi32(a, w[i], bc4(xq + 4 * i));
                    b = _mm512_dpbusd_epi32(b, w[4 + i], bc4(xq + 16 + 4 * i));
                }
                tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(_mm512_add_epi32(a, b), scj));
            }
        }
        __m512i mp[8];
        for (int j = 0; j < 4; j++) {
            mp[j] = _mm512_shuffle_epi8(mlo, ldt(pair_byte[j]));
            mp[4 + j] = _mm512_shuffle_epi8(mhi, ldt(pair_byte[j]));
        }
#pragma GCC unroll 8
        for (int t = 0; t < NT; t++) {
            const facet_blk_q8_K *y = (const facet_blk_q8_K *)(x + t * xstride) + sb;
            __m512i msum = _mm512_setzero_si512();
            for (int j = 0; j < 8; j++) msum = _mm512_dpwssd_epi32(msum, mp[j], bc4(y->bsums + 2 * j));
            const __m512 dx = _mm512_set1_ps(y->d);
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, dx), _mm512_cvtepi32_ps(tot[t]), acc[t]);
            acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(dmw, dx), _mm512_cvtepi32_ps(msum), acc[t]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; t++) _mm512_storeu_ps(s + t * ld, acc[t]);
}

FACET_INLINE FACET_TGT_AVX512VNNI void q6k_panel(int n, const int NT, float *s, size_t ld,
                                                 const uint8_t *p, const uint8_t *x, size_t xstride) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    __m512 acc[FACET_QDOTX_MAX];
#pragma GCC unroll 8
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    for (int sb = 0; sb < n / 256; sb++, p += 16 * 210) {
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
        __m512i tot[FACET_QDOTX_MAX];
#pragma GCC unroll 8
        for (int t = 0; t < NT; t++) tot[t] = _mm512_setzero_si512();
        for (int c = 0; c < 288; c += 64) _mm_prefetch((const char *)(p + c + KP_AHEAD6), _MM_HINT_T0);
        const uint8_t *ql = p + 288; /* per group: 2 chunks of low nibbles, 1 of high bits */
        for (int g = 0; g < 16; g++, ql += 192) {
            for (int c = 0; c < 192; c += 64) _mm_prefetch((const char *)(ql + c + KP_AHEAD6), _MM_HINT_T0);
            /* dword l: row l's scales 2p, 2p + 1 as int16; group g's as int32 */
            const __m512i pr = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(p + 32 + 32 * (g / 2))));
            const __m512i scg = g & 1 ? _mm512_srai_epi32(pr, 16) : _mm512_srai_epi32(_mm512_slli_epi32(pr, 16), 16);
            const __m512i c0 = _mm512_loadu_si512(ql), c1 = _mm512_loadu_si512(ql + 64);
            const __m512i h = _mm512_loadu_si512(ql + 128);
            /* quad k of the group: 4 low bits | 2 high bits << 4 (values 0..63) */
            __m512i w[4];
            w[0] = _mm512_ternarylogic_epi64(_mm512_and_si512(_mm512_slli_epi16(h, 4), m30), c0, m4, 0xF8);
            w[1] = _mm512_ternarylogic_epi64(_mm512_and_si512(_mm512_slli_epi16(h, 2), m30), c1, m4, 0xF8);
            w[2] = _mm512_ternarylogic_epi64(_mm512_and_si512(h, m30), _mm512_srli_epi16(c0, 4), m4, 0xF8);
            w[3] = _mm512_ternarylogic_epi64(_mm512_and_si512(_mm512_srli_epi16(h, 2), m30), _mm512_srli_epi16(c1, 4), m4, 0xF8);
#pragma GCC unroll 8
            for (int t = 0; t < NT; t++) {
                const int8_t *xq = ((const facet_blk_q8_K *)(x + t * xstride) + sb)->qs + 16 * g;
                __m512i a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], bc4(xq));
                __m512i b = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[1], bc4(xq + 4));
                a = _mm512_dpbusd_epi32(a, w[2], bc4(xq + 8));
                b = _mm512_dpbusd_epi32(b, w[3], bc4(xq + 12));
                tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(_mm512_add_epi32(a, b), scg));
            }
        }
        __m512i pr[8];
        for (int q = 0; q < 8; q++) pr[q] = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(p + 32 + 32 * q)));
#pragma GCC unroll 8
        for (int t = 0; t < NT; t++) {
            const facet_blk_q8_K *y = (const facet_blk_q8_K *)(x + t * xstride) + sb;
            __m512i corr = _mm512_setzero_si512();
            for (int q = 0; q < 8; q++) corr = _mm512_dpwssd_epi32(corr, pr[q], bc4(y->bsums + 2 * q));
            __m512i total = _mm512_sub_epi32(tot[t], _mm512_slli_epi32(corr, 5));
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(y->d)), _mm512_cvtepi32_ps(total), acc[t]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; t++) _mm512_storeu_ps(s + t * ld, acc[t]);
}

#define KP_SWITCH(body)                                                                          \
    switch (nt) {                                                                                \
    case 1: body(1); return;                                                                     \
    case 2: body(2); return;                                                                     \
    case 3: body(3); return;                                                                     \
    case 4: body(4); return;                                                                     \
    case 5: body(5); return;                                                                     \
    case 6: body(6); return;                                                                     \
    case 7: body(7); return;                                                                     \
    default: body(8); return;                                                                    \
    }

void FACET_TGT_AVX512VNNI facet_kpanel_q4_K_avx512vnni(int n, int nt, float *s, size_t ld, const void *w,
                                                       const void *x, size_t xstride) {
#define B4(N) q4k_panel(n, N, s, ld, w, x, xstride)
    KP_SWITCH(B4)
#undef B4
}

void FACET_TGT_AVX512VNNI facet_kpanel_q6_K_avx512vnni(int n, int nt, float *s, size_t ld, const void *w,
                                                       const void *x, size_t xstride) {
#define B6(N) q6k_panel(n, N, s, ld, w, x, xstride)
    KP_SWITCH(B6)
#undef B6
}
