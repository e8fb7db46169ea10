/*
 * quant_legacy.c — the 32-element GGUF block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 * IQ4_NL): row dequantizers, scalar dot products and AVX2 dot products, and their traits.
 * Layouts in quant_legacy.h, arithmetic in quant.h (following ggml's definitions; the
 * code is written from them).
 *
 * Every dot of a weight row with an activation row sums per block the integer products
 * (exact in int32), scales the block's sum by d_w * d_x in float, and adds the blocks in
 * float; the types with a min (Q4_1, Q5_1) add m_w * s_x per block, s_x = d_x * sum(x_q)
 * as the Q8_1 block carries it. The scalar path adds the blocks in order; AVX2 keeps 8
 * float lanes per block's partial sums and adds the lanes at the end.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/quant_legacy.h"
#include "kernels/cpu/ukernel_gen.h"

_Static_assert(sizeof(facet_blk_q4_0) == 18, "block_q4_0");
_Static_assert(sizeof(facet_blk_q4_1) == 20, "block_q4_1");
_Static_assert(sizeof(facet_blk_q5_0) == 22, "block_q5_0");
_Static_assert(sizeof(facet_blk_q5_1) == 24, "block_q5_1");
_Static_assert(sizeof(facet_blk_q8_0w) == 34, "block_q8_0");
_Static_assert(sizeof(facet_blk_iq4_nl) == 18, "block_iq4_nl");

#define H2F facet_f16_to_f32

/* The 5-bit types' high bit of element j (0..31), as 0 or 16. */
static int qh_bit(const uint8_t qh[4], int j) { return ((qh[j / 8] >> (j % 8)) & 1) << 4; }

/* ---- dequantizers: element j of a block is low nibble of qs[j] (j < 16) or the high
 * nibble of qs[j - 16] ---- */

static void dq_q4_0(const void *w, float *y, int64_t n) {
    const facet_blk_q4_0 *b = w;
    for (int64_t i = 0; i < n / 32; i++, y += 32) {
        float d = H2F(b[i].d);
        for (int j = 0; j < 16; j++) {
            y[j] = (float)((b[i].qs[j] & 15) - 8) * d;
            y[j + 16] = (float)((b[i].qs[j] >> 4) - 8) * d;
        }
    }
}

static void dq_q4_1(const void *w, float *y, int64_t n) {
    const facet_blk_q4_1 *b = w;
    for (int64_t i = 0; i < n / 32; i++, y += 32) {
        float d = H2F(b[i].d), m = H2F(b[i].m);
        for (int j = 0; j < 16; j++) {
            y[j] = (float)(b[i].qs[j] & 15) * d + m;
            y[j + 16] = (float)(b[i].qs[j] >> 4) * d + m;
        }
    }
}

static void dq_q5_0(const void *w, float *y, int64_t n) {
    const facet_blk_q5_0 *b = w;
    for (int64_t i = 0; i < n / 32; i++, y += 32) {
        float d = H2F(b[i].d);
        for (int j = 0; j < 16; j++) {
            y[j] = (float)(((b[i].qs[j] & 15) | qh_bit(b[i].qh, j)) - 16) * d;
            y[j + 16] = (float)(((b[i].qs[j] >> 4) | qh_bit(b[i].qh, j + 16)) - 16) * d;
        }
    }
}

static void dq_q5_1(const void *w, float *y, int64_t n) {
    const facet_blk_q5_1 *b = w;
    for (int64_t i = 0; i < n / 32; i++, y += 32) {
        float d = H2F(b[i].d), m = H2F(b[i].m);
        for (int j = 0; j < 16; j++) {
            y[j] = (float)((b[i].qs[j] & 15) | qh_bit(b[i].qh, j)) * d + m;
            y[j + 16] = (float)((b[i].qs[j] >> 4) | qh_bit(b[i].qh, j + 16)) * d + m;
        }
    }
}

static void dq_q8_0(const void *w, float *y, int64_t n) {
    const facet_blk_q8_0w *b = w;
    for (int64_t i = 0; i < n / 32; i++, y += 32) {
        float d = H2F(b[i].d);
        for (int j = 0; j < 32; j++) y[j] = (float)b[i].qs[j] * d;
    }
}

static void dq_iq4_nl(const void *w, float *y, int64_t n) {
    const facet_blk_iq4_nl *b = w;
    for (int64_t i = 0; i < n / 32; i++, y += 32) {
        float d = H2F(b[i].d);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)facet_kvalues_iq4nl[b[i].qs[j] & 15];
            y[j + 16] = d * (float)facet_kvalues_iq4nl[b[i].qs[j] >> 4];
        }
    }
}

/* ---- scalar dots ---- */

static void dot_q4_0_scalar(int n, float *s, const void *w, const void *x) {
    const facet_blk_q4_0 *a = w;
    const facet_blk_q8_0 *b = x;
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++) {
        int si = 0;
        for (int j = 0; j < 16; j++)
            si += ((a[i].qs[j] & 15) - 8) * b[i].qs[j] + ((a[i].qs[j] >> 4) - 8) * b[i].qs[j + 16];
        sum += (float)si * (H2F(a[i].d) * H2F(b[i].d));
    }
    *s = sum;
}

static void dot_q4_1_scalar(int n, float *s, const void *w, const void *x) {
    const facet_blk_q4_1 *a = w;
    const facet_blk_q8_1 *b = x;
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++) {
        int si = 0;
        for (int j = 0; j < 16; j++)
            si += (a[i].qs[j] & 15) * b[i].qs[j] + (a[i].qs[j] >> 4) * b[i].qs[j + 16];
        sum += (float)si * (H2F(a[i].d) * H2F(b[i].d)) + H2F(a[i].m) * H2F(b[i].s);
    }
    *s = sum;
}

static void dot_q5_0_scalar(int n, float *s, const void *w, const void *x) {
    const facet_blk_q5_0 *a = w;
    const facet_blk_q8_0 *b = x;
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++) {
        int si = 0;
        for (int j = 0; j < 16; j++)
            si += (((a[i].qs[j] & 15) | qh_bit(a[i].qh, j)) - 16) * b[i].qs[j] +
                  (((a[i].qs[j] >> 4) | qh_bit(a[i].qh, j + 16)) - 16) * b[i].qs[j + 16];
        sum += (float)si * (H2F(a[i].d) * H2F(b[i].d));
    }
    *s = sum;
}

static void dot_q5_1_scalar(int n, float *s, const void *w, const void *x) {
    const facet_blk_q5_1 *a = w;
    const facet_blk_q8_1 *b = x;
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++) {
        int si = 0;
        for (int j = 0; j < 16; j++)
            si += ((a[i].qs[j] & 15) | qh_bit(a[i].qh, j)) * b[i].qs[j] +
                  ((a[i].qs[j] >> 4) | qh_bit(a[i].qh, j + 16)) * b[i].qs[j + 16];
        sum += (float)si * (H2F(a[i].d) * H2F(b[i].d)) + H2F(a[i].m) * H2F(b[i].s);
    }
    *s = sum;
}

static void dot_q8_0_scalar(int n, float *s, const void *w, const void *x) {
    const facet_blk_q8_0w *a = w;
    const facet_blk_q8_0 *b = x;
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++) {
        int si = 0;
        for (int j = 0; j < 32; j++) si += a[i].qs[j] * b[i].qs[j];
        sum += (float)si * (H2F(a[i].d) * H2F(b[i].d));
    }
    *s = sum;
}

static void dot_iq4_nl_scalar(int n, float *s, const void *w, const void *x) {
    const facet_blk_iq4_nl *a = w;
    const facet_blk_q8_0 *b = x;
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++) {
        int si = 0;
        for (int j = 0; j < 16; j++)
            si += facet_kvalues_iq4nl[a[i].qs[j] & 15] * b[i].qs[j] +
                  facet_kvalues_iq4nl[a[i].qs[j] >> 4] * b[i].qs[j + 16];
        sum += (float)si * (H2F(a[i].d) * H2F(b[i].d));
    }
    *s = sum;
}

/* ---- AVX2 ---- */

/* 16 bytes of nibbles -> 32 bytes: low nibbles (elements 0..15), then high (16..31). */
FACET_TGT_AVX2 FACET_INLINE __m256i nibbles32(const uint8_t *qs) {
    __m128i t = _mm_loadu_si128((const __m128i *)qs);
    __m256i b = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
    return _mm256_and_si256(b, _mm256_set1_epi8(15));
}

/* Bit j of the 32 bits at qh -> byte j: 0xFF where set, 0 where clear. */
FACET_TGT_AVX2 FACET_INLINE __m256i bits32(const uint8_t *qh) {
    uint32_t v;
    memcpy(&v, qh, 4);
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                           0x0101010101010101, 0x0000000000000000);
    __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32((int)v), shuf);
    b = _mm256_or_si256(b, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(b, _mm256_set1_epi64x(-1));
}

/* 8 int32 partial sums of u8 a times s8 b (pairs within int16: |a| <= 128, |b| <= 127
 * cannot saturate), as float. */
FACET_TGT_AVX2 FACET_INLINE __m256 dot_us8(__m256i a, __m256i b) {
    __m256i p = _mm256_maddubs_epi16(a, b);
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}

/* The same for two signed vectors: |a| times b with a's sign moved onto b. */
FACET_TGT_AVX2 FACET_INLINE __m256 dot_ss8(__m256i a, __m256i b) {
    return dot_us8(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
}

FACET_TGT_AVX2 FACET_INLINE float hsum8(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

#define F16C(h) _cvtsh_ss(h)

FACET_TGT_AVX2 static void dot_q4_0_avx2(int n, float *s, const void *w, const void *x) {
    const facet_blk_q4_0 *a = w;
    const facet_blk_q8_0 *b = x;
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / 32; i++) {
        __m256i q = _mm256_sub_epi8(nibbles32(a[i].qs), _mm256_set1_epi8(8));
        __m256i y = _mm256_loadu_si256((const __m256i *)b[i].qs);
        __m256 d = _mm256_set1_ps(F16C(a[i].d) * F16C(b[i].d));
        acc = _mm256_fmadd_ps(d, dot_ss8(q, y), acc);
    }
    *s = hsum8(acc);
}

FACET_TGT_AVX2 static void dot_q4_1_avx2(int n, float *s, const void *w, const void *x) {
    const facet_blk_q4_1 *a = w;
    const facet_blk_q8_1 *b = x;
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int i = 0; i < n / 32; i++) {
        __m256i y = _mm256_loadu_si256((const __m256i *)b[i].qs);
        __m256 d = _mm256_set1_ps(F16C(a[i].d) * F16C(b[i].d));
        acc = _mm256_fmadd_ps(d, dot_us8(nibbles32(a[i].qs), y), acc);
        mins += F16C(a[i].m) * F16C(b[i].s);
    }
    *s = hsum8(acc) + mins;
}

FACET_TGT_AVX2 static void dot_q5_0_avx2(int n, float *s, const void *w, const void *x) {
    const facet_blk_q5_0 *a = w;
    const facet_blk_q8_0 *b = x;
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / 32; i++) {
        /* q - 16 where the high bit is clear is q | 0xF0 as int8 */
        __m256i hi = _mm256_andnot_si256(bits32(a[i].qh), _mm256_set1_epi8((char)0xF0));
        __m256i q = _mm256_or_si256(nibbles32(a[i].qs), hi);
        __m256i y = _mm256_loadu_si256((const __m256i *)b[i].qs);
        __m256 d = _mm256_set1_ps(F16C(a[i].d) * F16C(b[i].d));
        acc = _mm256_fmadd_ps(d, dot_ss8(q, y), acc);
    }
    *s = hsum8(acc);
}

FACET_TGT_AVX2 static void dot_q5_1_avx2(int n, float *s, const void *w, const void *x) {
    const facet_blk_q5_1 *a = w;
    const facet_blk_q8_1 *b = x;
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int i = 0; i < n / 32; i++) {
        __m256i hi = _mm256_and_si256(bits32(a[i].qh), _mm256_set1_epi8(0x10));
        __m256i q = _mm256_or_si256(nibbles32(a[i].qs), hi);
        __m256i y = _mm256_loadu_si256((const __m256i *)b[i].qs);
        __m256 d = _mm256_set1_ps(F16C(a[i].d) * F16C(b[i].d));
        acc = _mm256_fmadd_ps(d, dot_us8(q, y), acc);
        mins += F16C(a[i].m) * F16C(b[i].s);
    }
    *s = hsum8(acc) + mins;
}

FACET_TGT_AVX2 static void dot_q8_0_avx2(int n, float *s, const void *w, const void *x) {
    const facet_blk_q8_0w *a = w;
    const facet_blk_q8_0 *b = x;
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / 32; i++) {
        __m256i q = _mm256_loadu_si256((const __m256i *)a[i].qs);
        __m256i y = _mm256_loadu_si256((const __m256i *)b[i].qs);
        __m256 d = _mm256_set1_ps(F16C(a[i].d) * F16C(b[i].d));
        acc = _mm256_fmadd_ps(d, dot_ss8(q, y), acc);
    }
    *s = hsum8(acc);
}

FACET_TGT_AVX2 static void dot_iq4_nl_avx2(int n, float *s, const void *w, const void *x) {
    const facet_blk_iq4_nl *a = w;
    const facet_blk_q8_0 *b = x;
    const __m128i k = _mm_loadu_si128((const __m128i *)facet_kvalues_iq4nl);
    const __m256i kv = _mm256_set_m128i(k, k);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / 32; i++) {
        __m256i q = _mm256_shuffle_epi8(kv, nibbles32(a[i].qs));
        __m256i y = _mm256_loadu_si256((const __m256i *)b[i].qs);
        __m256 d = _mm256_set1_ps(F16C(a[i].d) * F16C(b[i].d));
        acc = _mm256_fmadd_ps(d, dot_ss8(q, y), acc);
    }
    *s = hsum8(acc);
}

/* ---- AVX2, several activation rows (quant.h facet_qdotx_fn): each block decoded once
 * (and a signed one's magnitude taken once) for nr rows; every row's operations are its
 * single-row dot's, in the same order, so its sum is the same bits. ---- */

/* per type: the block's 32 weight bytes, signed (ss) or unsigned (us) */
FACET_TGT_AVX2 FACET_INLINE __m256i wq_q4_0(const facet_blk_q4_0 *p) {
    return _mm256_sub_epi8(nibbles32(p->qs), _mm256_set1_epi8(8));
}
FACET_TGT_AVX2 FACET_INLINE __m256i wq_q4_1(const facet_blk_q4_1 *p) { return nibbles32(p->qs); }
FACET_TGT_AVX2 FACET_INLINE __m256i wq_q5_0(const facet_blk_q5_0 *p) {
    __m256i hi = _mm256_andnot_si256(bits32(p->qh), _mm256_set1_epi8((char)0xF0));
    return _mm256_or_si256(nibbles32(p->qs), hi);
}
FACET_TGT_AVX2 FACET_INLINE __m256i wq_q5_1(const facet_blk_q5_1 *p) {
    __m256i hi = _mm256_and_si256(bits32(p->qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(nibbles32(p->qs), hi);
}
FACET_TGT_AVX2 FACET_INLINE __m256i wq_q8_0(const facet_blk_q8_0w *p) {
    return _mm256_loadu_si256((const __m256i *)p->qs);
}
FACET_TGT_AVX2 FACET_INLINE __m256i wq_iq4_nl(const facet_blk_iq4_nl *p) {
    const __m128i k = _mm_loadu_si128((const __m128i *)facet_kvalues_iq4nl);
    return _mm256_shuffle_epi8(_mm256_set_m128i(k, k), nibbles32(p->qs));
}
/* the u8 operand from the weight bytes, and the product with one activation row */
#define UX_ss(q) _mm256_sign_epi8(q, q)
#define UX_us(q) (q)
#define PX_ss(u, q, y) dot_us8(u, _mm256_sign_epi8(y, q))
#define PX_us(u, q, y) dot_us8(u, y)
#define MIN2_NO(a, b, i) 0.0f
#define MIN2_YES(a, b, i) F16C(a[i].m) * F16C(b[i].s)

#define DOTX2(NAME, WT, XT, KIND, MIN)                                                       \
    FACET_TGT_AVX2 FACET_INLINE void dotx2_##NAME##_n(int n, const int nr, float *s,         \
                                                      const void *w, const void *x, size_t xs) { \
        const WT *a = w;                                                                     \
        __m256 acc[4];                                                                       \
        float mins[4];                                                                       \
        for (int r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps(), mins[r] = 0.0f;          \
        for (int i = 0; i < n / 32; i++) {                                                   \
            __m256i q = wq_##NAME(a + i);                                                    \
            __m256i u = UX_##KIND(q);                                                        \
            float dw = F16C(a[i].d);                                                         \
            for (int r = 0; r < nr; r++) {                                                   \
                const XT *b = (const XT *)((const uint8_t *)x + (size_t)r * xs);             \
                __m256i y = _mm256_loadu_si256((const __m256i *)b[i].qs);                    \
                __m256 d = _mm256_set1_ps(dw * F16C(b[i].d));                                \
                acc[r] = _mm256_fmadd_ps(d, PX_##KIND(u, q, y), acc[r]);                     \
                mins[r] += MIN(a, b, i);                                                     \
            }                                                                                \
        }                                                                                    \
        for (int r = 0; r < nr; r++) s[r] = hsum8(acc[r]) + mins[r];                         \
    }                                                                                        \
    FACET_TGT_AVX2 static void dotx_##NAME##_avx2(int n, int nr, float *s, const void *w,    \
                                                  const void *x, size_t xs) {                \
        switch (nr) {                                                                        \
        case 1: dotx2_##NAME##_n(n, 1, s, w, x, xs); return;                                 \
        case 2: dotx2_##NAME##_n(n, 2, s, w, x, xs); return;                                 \
        case 3: dotx2_##NAME##_n(n, 3, s, w, x, xs); return;                                 \
        default: /* 4 rows a pass at most */                                                 \
            dotx2_##NAME##_n(n, 4, s, w, x, xs);                                             \
            if (nr > 4) dotx_##NAME##_avx2(n, nr - 4, s + 4, w, (const uint8_t *)x + 4 * xs, xs); \
            return;                                                                          \
        }                                                                                    \
    }

DOTX2(q4_0, facet_blk_q4_0, facet_blk_q8_0, ss, MIN2_NO)
DOTX2(q4_1, facet_blk_q4_1, facet_blk_q8_1, us, MIN2_YES)
DOTX2(q5_0, facet_blk_q5_0, facet_blk_q8_0, ss, MIN2_NO)
DOTX2(q5_1, facet_blk_q5_1, facet_blk_q8_1, us, MIN2_YES)
DOTX2(q8_0, facet_blk_q8_0w, facet_blk_q8_0, ss, MIN2_NO)
DOTX2(iq4_nl, facet_blk_iq4_nl, facet_blk_q8_0, ss, MIN2_NO)

/* ---- traits ---- */

#define TRAITS(var, nm, id, bytes, xk, dq, ds, d2, d2x, d5, d5x)                          \
    const facet_qtype_traits var = {.name = nm, .ggml_type = id, .block = 32,                \
                                    .block_bytes = bytes, .xkind = xk, .dequant_row = dq,    \
                                    .dot_scalar = ds, .dot_avx2 = d2, .dot_avx512vnni = d5,  \
                                    .dotx_avx2 = d2x, .dotx_avx512vnni = d5x};

TRAITS(facet_qt_q4_0, "Q4_0", 2, 18, FACET_QX_Q8_0, dq_q4_0, dot_q4_0_scalar, dot_q4_0_avx2, dotx_q4_0_avx2,
       facet_dot_q4_0_avx512,
       facet_dotx_q4_0_avx512)
TRAITS(facet_qt_q4_1, "Q4_1", 3, 20, FACET_QX_Q8_1, dq_q4_1, dot_q4_1_scalar, dot_q4_1_avx2, dotx_q4_1_avx2,
       facet_dot_q4_1_avx512,
       facet_dotx_q4_1_avx512)
TRAITS(facet_qt_q5_0, "Q5_0", 6, 22, FACET_QX_Q8_0, dq_q5_0, dot_q5_0_scalar, dot_q5_0_avx2, dotx_q5_0_avx2,
       facet_dot_q5_0_avx512,
       facet_dotx_q5_0_avx512)
TRAITS(facet_qt_q5_1, "Q5_1", 7, 24, FACET_QX_Q8_1, dq_q5_1, dot_q5_1_scalar, dot_q5_1_avx2, dotx_q5_1_avx2,
       facet_dot_q5_1_avx512,
       facet_dotx_q5_1_avx512)
TRAITS(facet_qt_q8_0, "Q8_0", 8, 34, FACET_QX_Q8_0, dq_q8_0, dot_q8_0_scalar, dot_q8_0_avx2, dotx_q8_0_avx2,
       facet_dot_q8_0_avx512,
       facet_dotx_q8_0_avx512)
TRAITS(facet_qt_iq4_nl, "IQ4_NL", 20, 18, FACET_QX_Q8_0, dq_iq4_nl, dot_iq4_nl_scalar,
       dot_iq4_nl_avx2, dotx_iq4_nl_avx2, facet_dot_iq4_nl_avx512,
       facet_dotx_iq4_nl_avx512)
