/*
 * attention.c — causal attention of one head for a group of queries of one sequence,
 * keys in fixed blocks of FACET_ATTN_BLOCK with an online softmax (Milakov & Gimelshein
 * 2018, "Online normalizer calculation for softmax"; the FlashAttention loop of Dao et
 * al. 2022 on a CPU). Keys arrive transposed in groups of 16 positions, so a block's
 * scores are a small GEMM (tiles of up to 6 queries x 64 keys, no horizontal sums);
 * values are accumulated four queries at a time with the output in registers (AVX-512,
 * head_dim 32 to 128 in steps of 16, 192, 256). The AVX-512 kernels read a 16-bit
 * cache as it is and widen each vector in a register; the other paths widen a block to
 * float32 first. Each query's arithmetic is the same, in the same order, whatever group
 * it is in.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/ukernel_gen.h"
#include "kernels/cpu/vexp.h"

/* Queries per score tile: each key vector loaded (and widened) once serves them all
 * (6 x 4 groups: 24 accumulators of the 32 registers; 4 measured ~2% slower). */
enum { SCORE_QT = 6 };

/* 16 cache elements from element idx of base, widened to float32 in the register (exact:
 * bf16 is float32's top half, f16 widens with vcvtph2ps), for KVT the cache's type. */
FACET_INLINE FACET_TGT_AVX512 __m512 kv_load16(const void *base, size_t idx, const int KVT) {
    if (KVT == FACET_KV_F32) return _mm512_loadu_ps((const float *)base + idx);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)base + idx));
    if (KVT == FACET_KV_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

/*
 * Scores, AVX-512: QT queries (<= 6) against NG groups of 16 keys (<= 4) of the block,
 * the keys transposed ([group][hd][16], the cache's layout). Each score is one chain
 * over d in order, s = q[0] k[0], then s = fma(q[d], k[d], s), times scale: the same
 * operations whatever QT and NG are, so a query's scores do not depend on its company.
 * The QT x NG accumulators (up to 24) hide the FMA latency; each key vector loaded once
 * serves every query of the tile.
 */
FACET_INLINE FACET_TGT_AVX512 void scores_tile_avx512(const float *const *q, const void *KT,
                                                      int hd, float scale, float *const *s,
                                                      const int QT, const int NG, const int KVT) {
    __m512 acc[6][4];
    for (int g = 0; g < NG; g++) {
        __m512 k = kv_load16(KT, (size_t)g * hd * 16, KVT);
        for (int i = 0; i < QT; i++) acc[i][g] = _mm512_mul_ps(_mm512_set1_ps(q[i][0]), k);
    }
    for (int d = 1; d < hd; d++) {
        __m512 k[4];
        for (int g = 0; g < NG; g++) {
            k[g] = kv_load16(KT, ((size_t)g * hd + d) * 16, KVT);
            /* keep the key vector in a register: folded into each FMA as a memory
             * operand, it was loaded QT times and the tile ran load-bound */
            __asm__("" : "+v"(k[g]));
        }
        for (int i = 0; i < QT; i++) {
            __m512 qb = _mm512_set1_ps(q[i][d]);
            for (int g = 0; g < NG; g++) acc[i][g] = _mm512_fmadd_ps(qb, k[g], acc[i][g]);
        }
    }
    __m512 sc = _mm512_set1_ps(scale);
    for (int i = 0; i < QT; i++)
        for (int g = 0; g < NG; g++) _mm512_storeu_ps(s[i] + g * 16, _mm512_mul_ps(acc[i][g], sc));
}

#define SC_CASE(QT, NG, T) \
    case (QT) * 8 + (NG): scores_tile_avx512(q, KT, hd, scale, s, QT, NG, T); return;
#define SC_CASES(T)                                                   \
    switch (qt * 8 + ng) {                                            \
        SC_CASE(5, 1, T) SC_CASE(5, 2, T) SC_CASE(5, 3, T) SC_CASE(5, 4, T) \
        SC_CASE(6, 1, T) SC_CASE(6, 2, T) SC_CASE(6, 3, T) SC_CASE(6, 4, T) \
        SC_CASE(1, 1, T) SC_CASE(1, 2, T) SC_CASE(1, 3, T) SC_CASE(1, 4, T) \
        SC_CASE(2, 1, T) SC_CASE(2, 2, T) SC_CASE(2, 3, T) SC_CASE(2, 4, T) \
        SC_CASE(3, 1, T) SC_CASE(3, 2, T) SC_CASE(3, 3, T) SC_CASE(3, 4, T) \
        SC_CASE(4, 1, T) SC_CASE(4, 2, T) SC_CASE(4, 3, T) SC_CASE(4, 4, T) \
    }
/* KT: the block's first key group in the cache's own type (kt). */
static FACET_TGT_AVX512 void scores_avx512(const float *const *q, int qt, const void *KT,
                                           facet_kv_type kt, int ng, int hd, float scale,
                                           float *const *s) {
    switch (kt) {
    case FACET_KV_BF16: SC_CASES(FACET_KV_BF16) return;
    case FACET_KV_F16: SC_CASES(FACET_KV_F16) return;
    default: SC_CASES(FACET_KV_F32) return;
    }
}

/*
 * Scores from a bf16 cache with vdpbf16ps (AVX512-BF16): the query in bf16 (the forward
 * pass rounds it when the cache is bf16), each score s = sum over d pairs of
 * vdpbf16ps(s, (k[d], k[d+1]), (q[d], q[d+1])) from 0, in d order: products of bf16
 * values, exact in float32, summed in float32 (bf16 attention as FlashAttention computes
 * it), twice the multiply-adds of an FMA per instruction and no widening. A key group's
 * rows d and d+1 (16 keys each, adjacent in the cache) are one 64-byte load, interleaved
 * into pairs with one vpermw; each serves every query of the tile.
 */
FACET_INLINE FACET_TGT_AVX512BF16 void scores_tile_bf16dp(const uint16_t *const *q,
                                                           const uint16_t *KT, int hd,
                                                           float scale, float *const *s,
                                                           const int QT, const int NG) {
    static const uint16_t pairs[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,
                                       21, 6, 22, 7, 23, 8,  24, 9,  25, 10, 26,
                                       11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i idx = _mm512_loadu_si512((const void *)pairs);
    __m512 acc[6][4];
    for (int i = 0; i < QT; i++)
        for (int g = 0; g < NG; g++) acc[i][g] = _mm512_setzero_ps();
    for (int d = 0; d < hd; d += 2) {
        __m512i k[4];
        for (int g = 0; g < NG; g++) {
            k[g] = _mm512_permutexvar_epi16(
                idx, _mm512_loadu_si512((const void *)(KT + ((size_t)g * hd + d) * 16)));
            __asm__("" : "+v"(k[g])); /* one load and shuffle for the whole tile */
        }
        for (int i = 0; i < QT; i++) {
            int32_t pair;
            memcpy(&pair, q[i] + d, 4);
            __m512bh qb = (__m512bh)_mm512_set1_epi32(pair);
            for (int g = 0; g < NG; g++) acc[i][g] = _mm512_dpbf16_ps(acc[i][g], (__m512bh)k[g], qb);
        }
    }
    __m512 sc = _mm512_set1_ps(scale);
    for (int i = 0; i < QT; i++)
        for (int g = 0; g < NG; g++) _mm512_storeu_ps(s[i] + g * 16, _mm512_mul_ps(acc[i][g], sc));
}

#define DP_CASE(QT, NG) \
    case (QT) * 8 + (NG): scores_tile_bf16dp(q, KT, hd, scale, s, QT, NG); return;
static FACET_TGT_AVX512BF16 void scores_bf16dp(const uint16_t *const *q, int qt, const uint16_t *KT,
                                               int ng, int hd, float scale, float *const *s) {
    switch (qt * 8 + ng) {
        DP_CASE(1, 1) DP_CASE(1, 2) DP_CASE(1, 3) DP_CASE(1, 4)
        DP_CASE(2, 1) DP_CASE(2, 2) DP_CASE(2, 3) DP_CASE(2, 4)
        DP_CASE(3, 1) DP_CASE(3, 2) DP_CASE(3, 3) DP_CASE(3, 4)
        DP_CASE(4, 1) DP_CASE(4, 2) DP_CASE(4, 3) DP_CASE(4, 4)
        DP_CASE(5, 1) DP_CASE(5, 2) DP_CASE(5, 3) DP_CASE(5, 4)
        DP_CASE(6, 1) DP_CASE(6, 2) DP_CASE(6, 3) DP_CASE(6, 4)
    }
}

/* The same scores in portable C: per key, the same chain (mul, then fmaf over d). */
static void scores_generic(const float *const *q, int qt, const float *KT, int ng, int hd,
                           float scale, float *const *s) {
    for (int i = 0; i < qt; i++)
        for (int g = 0; g < ng; g++) {
            const float *kt = KT + (size_t)g * hd * 16;
            float a[16];
            for (int l = 0; l < 16; l++) a[l] = q[i][0] * kt[l];
            for (int d = 1; d < hd; d++)
                for (int l = 0; l < 16; l++) a[l] = fmaf(q[i][d], kt[(size_t)d * 16 + l], a[l]);
            for (int l = 0; l < 16; l++) s[i][g * 16 + l] = a[l] * scale;
        }
}

/*
 * Values, AVX-512, head_dim = 16 * NC: acc = acc * c, then acc += p[t] v[t] for t in
 * order, for one query or two at once (QN = 2 shares each value row's loads between
 * them: the first min(n0, n1) keys together, then the longer one alone). Per query
 * the operations and their order are those of QN = 1.
 */
FACET_INLINE FACET_TGT_AVX512 void values_avx512_nc(float *const *acc, const float *c,
                                                     const void *V, size_t vs,
                                                     const int *n, const float *const *p,
                                                     const int QN, const int NC, const int KVT) {
    __m512 av[2][16];
    for (int i = 0; i < QN; i++) {
        __m512 cv = _mm512_set1_ps(c[i]);
        for (int j = 0; j < NC; j++) av[i][j] = _mm512_mul_ps(_mm512_loadu_ps(acc[i] + 16 * j), cv);
    }
    int common = QN == 2 ? (n[0] < n[1] ? n[0] : n[1]) : n[0];
    int t = 0;
    for (; t < common; t++) {
        size_t v = (size_t)t * vs;
        __m512 pv[2];
        for (int i = 0; i < QN; i++) pv[i] = _mm512_set1_ps(p[i][t]);
        for (int j = 0; j < NC; j++) {
            __m512 x = kv_load16(V, v + 16 * (size_t)j, KVT);
            __asm__("" : "+v"(x)); /* one load for both queries (see scores_tile_avx512) */
            for (int i = 0; i < QN; i++) av[i][j] = _mm512_fmadd_ps(pv[i], x, av[i][j]);
        }
    }
    for (int i = 0; i < QN; i++)
        for (int u = t; u < n[i]; u++) {
            size_t v = (size_t)u * vs;
            __m512 pv = _mm512_set1_ps(p[i][u]);
            for (int j = 0; j < NC; j++)
                av[i][j] = _mm512_fmadd_ps(pv, kv_load16(V, v + 16 * (size_t)j, KVT), av[i][j]);
        }
    for (int i = 0; i < QN; i++)
        for (int j = 0; j < NC; j++) _mm512_storeu_ps(acc[i] + 16 * j, av[i][j]);
}

/*
 * Values for four queries at once over CH (<= 4) of the output's 16-lane columns,
 * starting at column j0: each value vector loaded (and widened) once serves the four.
 * Per query and column the operations and their order are those of values_avx512_nc:
 * acc * c, then fma(p[t], v[t], acc) for t in order (the four together up to the
 * shortest n, then each alone).
 */
FACET_INLINE FACET_TGT_AVX512 void values4_avx512_ch(float *const *acc, const float *c,
                                                      const void *V, size_t vs, const int *n,
                                                      const float *const *p, int j0,
                                                      const int CH, const int KVT) {
    __m512 av[4][4];
    for (int i = 0; i < 4; i++) {
        __m512 cv = _mm512_set1_ps(c[i]);
        for (int j = 0; j < CH; j++)
            av[i][j] = _mm512_mul_ps(_mm512_loadu_ps(acc[i] + 16 * (j0 + j)), cv);
    }
    int common = n[0];
    for (int i = 1; i < 4; i++)
        if (n[i] < common) common = n[i];
    int t = 0;
    for (; t < common; t++) {
        size_t v = (size_t)t * vs + 16 * (size_t)j0;
        __m512 pv[4];
        for (int i = 0; i < 4; i++) pv[i] = _mm512_set1_ps(p[i][t]);
        for (int j = 0; j < CH; j++) {
            __m512 x = kv_load16(V, v + 16 * (size_t)j, KVT);
            __asm__("" : "+v"(x)); /* one load for the four queries */
            for (int i = 0; i < 4; i++) av[i][j] = _mm512_fmadd_ps(pv[i], x, av[i][j]);
        }
    }
    for (int i = 0; i < 4; i++)
        for (int u = t; u < n[i]; u++) {
            size_t v = (size_t)u * vs + 16 * (size_t)j0;
            __m512 pv = _mm512_set1_ps(p[i][u]);
            for (int j = 0; j < CH; j++)
                av[i][j] = _mm512_fmadd_ps(pv, kv_load16(V, v + 16 * (size_t)j, KVT), av[i][j]);
        }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < CH; j++) _mm512_storeu_ps(acc[i] + 16 * (j0 + j), av[i][j]);
}

#define VAL4_CASES(T)                                                               \
    for (int j0 = 0; j0 < nc; j0 += 4) switch (nc - j0 < 4 ? nc - j0 : 4) {         \
        case 1: values4_avx512_ch(acc, c, V, vs, n, p, j0, 1, T); break;           \
        case 2: values4_avx512_ch(acc, c, V, vs, n, p, j0, 2, T); break;           \
        case 3: values4_avx512_ch(acc, c, V, vs, n, p, j0, 3, T); break;           \
        default: values4_avx512_ch(acc, c, V, vs, n, p, j0, 4, T); break;          \
        }
static FACET_TGT_AVX512 void values4_avx512(float *const *acc, const float *c, const void *V,
                                            facet_kv_type kt, size_t vs, const int *n,
                                            const float *const *p, int nc) {
    switch (kt) {
    case FACET_KV_BF16: VAL4_CASES(FACET_KV_BF16) return;
    case FACET_KV_F16: VAL4_CASES(FACET_KV_F16) return;
    default: VAL4_CASES(FACET_KV_F32) return;
    }
}

/* head_dim / 16 values with a register path in values_avx512 */
static int values_nc_ok(int nc) { return (nc >= 2 && nc <= 8) || nc == 12 || nc == 16; }

#define VAL_CASE(QN, NC, T) \
    case (QN) * 32 + (NC): values_avx512_nc(acc, c, V, vs, n, p, QN, NC, T); return;
#define VAL_CASES(T)                                                                     \
    switch (qn * 32 + nc) {                                                              \
        VAL_CASE(1, 2, T) VAL_CASE(1, 3, T) VAL_CASE(1, 4, T) VAL_CASE(1, 5, T) VAL_CASE(1, 6, T) \
        VAL_CASE(1, 7, T) VAL_CASE(1, 8, T) VAL_CASE(1, 12, T) VAL_CASE(1, 16, T)                  \
        VAL_CASE(2, 2, T) VAL_CASE(2, 3, T) VAL_CASE(2, 4, T) VAL_CASE(2, 5, T) VAL_CASE(2, 6, T) \
        VAL_CASE(2, 7, T) VAL_CASE(2, 8, T) VAL_CASE(2, 12, T) VAL_CASE(2, 16, T)                  \
    }
/* V: the block's first value row in the cache's own type (kt), rows vs elements apart;
 * nc must satisfy values_nc_ok. */
static FACET_TGT_AVX512 void values_avx512(float *const *acc, const float *c, const void *V,
                                           facet_kv_type kt, size_t vs, const int *n,
                                           const float *const *p, int qn, int nc) {
    if (qn == 4) {
        values4_avx512(acc, c, V, kt, vs, n, p, nc);
        return;
    }
    if (qn == 3) { /* two, then one */
        values_avx512(acc, c, V, kt, vs, n, p, 2, nc);
        values_avx512(acc + 2, c + 2, V, kt, vs, n + 2, p + 2, 1, nc);
        return;
    }
    switch (kt) {
    case FACET_KV_BF16: VAL_CASES(FACET_KV_BF16) return;
    case FACET_KV_F16: VAL_CASES(FACET_KV_F16) return;
    default: VAL_CASES(FACET_KV_F32) return;
    }
}

/* The block's softmax step for one query: new max over s[0..n) and the old max *m,
 * s[j] <- e^(s[j] - max), returns their sum (lane sums folded in a fixed order);
 * *c <- e^(old max - new max). */
static FACET_TGT_AVX512 float softmax_block_avx512(float *s, int n, float *m, float *c) {
    __m512 mv = _mm512_set1_ps(*m);
    int j = 0;
    for (; j + 16 <= n; j += 16) mv = _mm512_max_ps(mv, _mm512_loadu_ps(s + j));
    __mmask16 tail = (__mmask16)((1u << (n - j)) - 1);
    if (j < n) mv = _mm512_mask_max_ps(mv, tail, mv, _mm512_maskz_loadu_ps(tail, s + j));
    float mb = _mm512_reduce_max_ps(mv);
    __m512 mbv = _mm512_set1_ps(mb), sum = _mm512_setzero_ps();
    for (j = 0; j + 16 <= n; j += 16) {
        __m512 e = exp_neg_avx512(_mm512_sub_ps(_mm512_loadu_ps(s + j), mbv));
        _mm512_storeu_ps(s + j, e);
        sum = _mm512_add_ps(sum, e);
    }
    if (j < n) {
        __m512 e = exp_neg_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, s + j), mbv));
        e = _mm512_maskz_mov_ps(tail, e);
        _mm512_mask_storeu_ps(s + j, tail, e);
        sum = _mm512_add_ps(sum, e);
    }
    __m512 cv = exp_neg_avx512(_mm512_set1_ps(*m - mb)); /* old max -inf: e^-inf = 0 */
    *c = _mm512_cvtss_f32(cv);
    *m = mb;
    return _mm512_reduce_add_ps(sum);
}

/* Where the keys of block [t0, t0 + len) lie: in runs of consecutive rows (seg_row[k],
 * seg_len[k] keys; the runs follow each other in position order). One run in a linear
 * buffer; in a ring a new run starts at row 0 at each wrap (its rows are a multiple of
 * FACET_KV_GROUP, so a wrap falls between key groups; a ring shorter than the block
 * wraps more than once). Returns the number of runs (at most B / G). */
static int block_runs(const facet_attn_params *P, int t0, int len, size_t *seg_row, int *seg_len) {
    if (P->kv_ring <= 0) {
        seg_row[0] = (size_t)(t0 - P->kv_pos0);
        seg_len[0] = len;
        return 1;
    }
    int k = 0, r = t0 % P->kv_ring;
    while (len > 0) {
        int n = P->kv_ring - r < len ? P->kv_ring - r : len;
        seg_row[k] = (size_t)r;
        seg_len[k++] = n;
        len -= n;
        r = 0;
    }
    return k;
}

void facet_attention(const facet_attn_params *P, const float *q, size_t q_stride, const int *pos,
                     int n_q, const void *K, const void *V, float *out, size_t out_stride,
                     float *scratch) {
    enum { B = FACET_ATTN_BLOCK, G = FACET_KV_GROUP };
    if (n_q <= 0) return;
    int hd = P->head_dim;
    facet_kv_type kv_type = P->kv_type;
    size_t v_stride = P->v_stride;
    float scale = P->scale, cap = P->softcap;
    float *s = scratch;                            /* [n_q][B] scores of the block        */
    float *acc = s + (size_t)n_q * B;              /* [n_q][hd] unnormalized output       */
    float *m = acc + (size_t)n_q * hd;             /* [n_q] running max                   */
    float *l = m + n_q;                            /* [n_q] running sum of exp            */
    float *kb = l + n_q, *vb = kb + (size_t)B * hd; /* the block widened to float32       */
    int *act = (int *)(vb + (size_t)B * hd);       /* [n_q] queries that see the block    */
    int *first = act + n_q;                        /* [n_q] first visible position        */
    uint16_t *q16 = (uint16_t *)(first + n_q);     /* [n_q][hd] bf16 queries (dp path)    */
    size_t elt = kv_type == FACET_KV_F32 ? 4 : 2;
    const uint8_t *Kb = K, *Vb = V;
    const facet_attn_path path = P->path;
    int avx512 = path != FACET_ATTN_GENERIC;
    int nc = hd / 16, last = 0, lo = pos[0];
    /* AVX-512 with a register path for head_dim: the kernels read the cache as it is
     * (16-bit elements widened in registers); otherwise a 16-bit cache's block is widened
     * into kb / vb first */
    int fast = avx512 && hd % 16 == 0 && values_nc_ok(nc);
    /* a bf16 cache on a CPU with vdpbf16ps: scores from bf16 queries (copied once) */
    int dp = fast && kv_type == FACET_KV_BF16 && path == FACET_ATTN_AVX512_BF16;
    for (int i = 0; i < n_q; i++) {
        if (dp) facet_x_to_bf16_avx512bf16(q + (size_t)i * q_stride, q16 + (size_t)i * hd, hd);
        /* a sink is a key of logit sink[i] and value 0: start the running max there,
         * its e^0 = 1 in the sum */
        m[i] = P->sinks ? P->sinks[(size_t)i * P->sink_stride] : -INFINITY;
        l[i] = P->sinks ? 1.0f : 0.0f;
        memset(acc + (size_t)i * hd, 0, sizeof(float) * (size_t)hd);
        first[i] = P->window > 0 && pos[i] - P->window + 1 > 0 ? pos[i] - P->window + 1 : 0;
        if (pos[i] > last) last = pos[i];
        if (first[i] < lo) lo = first[i];
    }
    /* blocks at multiples of B in absolute positions, whatever the call's queries: a
     * query's blocks, and so its arithmetic, depend on its own position alone */
    for (int t0 = lo / B * B; t0 <= last; t0 += B) {
        int t1 = t0 + B - 1 < last ? t0 + B - 1 : last; /* keys t0..t1 */
        int ng = (t1 - t0 + G) / G;                   /* groups of 16 keys in the block   */
        size_t seg_row[B / G] = {0};
        int seg_len[B / G];
        int nseg = block_runs(P, t0, ng * G, seg_row, seg_len);
        /* keys: [group][hd][16]; values: rows v_stride apart, run by run. A 16-bit cache
         * is widened into kb / vb (a group's lanes past t1 are never used), as is a
         * float32 block of several runs off the AVX-512 path. */
        const float *KT = NULL, *Vx = NULL;
        const void *KTc = Kb + seg_row[0] / G * hd * G * elt, *Vc = Vb + seg_row[0] * v_stride * elt;
        size_t vs = v_stride;
        if (kv_type == FACET_KV_F32 && (fast || nseg == 1)) {
            KT = KTc;
            Vx = Vc;
        } else if (!fast) {
            for (int k = 0, j0 = 0; k < nseg; j0 += seg_len[k++]) {
                facet_kv_load(Kb + seg_row[k] / G * hd * G * elt, kv_type, kb + (size_t)j0 * hd,
                              seg_len[k] * hd);
                for (int j = 0; j < seg_len[k] && t0 + j0 + j <= t1; j++)
                    facet_kv_load(Vb + (seg_row[k] + (size_t)j) * v_stride * elt, kv_type,
                                  vb + (size_t)(j0 + j) * hd, hd);
            }
            KT = kb;
            Vx = vb;
            vs = (size_t)hd;
        }
        int na = 0;
        for (int i = 0; i < n_q; i++)
            if (pos[i] >= t0 && first[i] <= t1) act[na++] = i;
        /* scores of every key of the block's groups, tiles of up to SCORE_QT queries */
        for (int a0 = 0; a0 < na; a0 += SCORE_QT) {
            int qt = na - a0 < SCORE_QT ? na - a0 : SCORE_QT;
            const float *qs[6];
            const uint16_t *qh[6];
            float *ss[6];
            int tmax = t0; /* the tile's last visible key: groups past it are skipped */
            for (int u = 0; u < qt; u++) {
                qs[u] = q + (size_t)act[a0 + u] * q_stride;
                qh[u] = q16 + (size_t)act[a0 + u] * hd;
                ss[u] = s + (size_t)act[a0 + u] * B;
                if (pos[act[a0 + u]] > tmax) tmax = pos[act[a0 + u]];
            }
            int ngt = ((tmax < t1 ? tmax : t1) - t0) / G + 1;
            if (!fast) {
                scores_generic(qs, qt, KT, ngt, hd, scale, ss);
                continue;
            }
            for (int k = 0, g0 = 0; k < nseg && g0 < ngt; g0 += seg_len[k++] / G) {
                int ngk = seg_len[k] / G < ngt - g0 ? seg_len[k] / G : ngt - g0;
                const uint8_t *kt = Kb + seg_row[k] / G * hd * G * elt;
                float *sk[6];
                for (int u = 0; u < qt; u++) sk[u] = ss[u] + (size_t)g0 * G;
                if (dp) scores_bf16dp(qh, qt, (const uint16_t *)kt, ngk, hd, scale, sk);
                else scores_avx512(qs, qt, kt, kv_type, ngk, hd, scale, sk);
            }
        }
        /* online softmax over the keys each query sees: new max, rescale of the old
         * sum and output */
        float cs[4], ones[4] = {1.0f, 1.0f, 1.0f, 1.0f};
        int ns[4], nq = 0;
        float *as[4];
        const float *ps[4];
        for (int a = 0; a < na; a++) {
            int i = act[a];
            int te = pos[i] < t1 ? pos[i] : t1, n = te - t0 + 1;
            float *si = s + (size_t)i * B, *ai = acc + (size_t)i * hd;
            if (cap > 0) /* Gemma 2: cap * tanh(score / cap) */
                for (int j = 0; j < n; j++) si[j] = tanhf(si[j] / cap) * cap;
            if (P->alibi) { /* ALiBi: slope * (key position - query position) */
                float slope = P->alibi[(size_t)i * P->alibi_stride];
                for (int j = 0; j < n; j++) si[j] += slope * (float)(t0 + j - pos[i]);
            }
            for (int j = 0; j < first[i] - t0; j++) si[j] = -INFINITY; /* before the window */
            float c, sum = 0.0f;
            if (avx512) {
                sum = softmax_block_avx512(si, n, &m[i], &c);
            } else {
                float mb = m[i];
                for (int j = 0; j < n; j++)
                    if (si[j] > mb) mb = si[j];
                c = expf(m[i] - mb); /* 0 on the first block (m = -inf) */
                for (int j = 0; j < n; j++) {
                    si[j] = expf(si[j] - mb);
                    sum += si[j];
                }
                m[i] = mb;
            }
            l[i] = l[i] * c + sum;
            /* output += probabilities x values, four queries at a time on AVX-512 */
            if (fast) {
                cs[nq] = c;
                ns[nq] = n;
                as[nq] = ai;
                ps[nq] = si;
                if (++nq == 4 || a == na - 1) {
                    /* run by run; past a ring's wrap the same chain goes on (x 1 is exact) */
                    for (int k = 0, j0 = 0; k < nseg; j0 += seg_len[k++]) {
                        int nk[4];
                        const float *pk[4];
                        for (int u = 0; u < nq; u++) {
                            int left = ns[u] - j0;
                            nk[u] = left < 0 ? 0 : left < seg_len[k] ? left : seg_len[k];
                            pk[u] = ps[u] + j0;
                        }
                        values_avx512(as, k ? ones : cs, Vb + seg_row[k] * vs * elt, kv_type, vs,
                                      nk, pk, nq, nc);
                    }
                    nq = 0;
                }
            } else {
                for (int d = 0; d < hd; d++) ai[d] *= c;
                for (int j = 0; j < n; j++) facet_axpy_f32(ai, si[j], Vx + (size_t)j * vs, hd);
            }
        }
    }
    for (int i = 0; i < n_q; i++) {
        float *o = out + (size_t)i * out_stride, inv = 1.0f / l[i];
        const float *a = acc + (size_t)i * hd;
        for (int d = 0; d < hd; d++) o[d] = a[d] * inv;
    }
}

/* ---- latent attention (facet_attention_latent) ---- */

/*
 * The first vd elements of ng key groups ([g][kd][16] of the cache's type KVT from KT)
 * as float32 rows vd apart at vb (row g * 16 + lane): per 16 x 16 tile, 16 vectors
 * widened in registers and transposed by four rounds of swapping the off-diagonal
 * blocks of 8, 4, 2 and 1 lanes (rows i and i + s trade lanes with bit s set).
 */
FACET_INLINE FACET_TGT_AVX512 void latent_rows_avx512_t(const void *KT, int kd, int vd, int ng,
                                                        float *vb, const int KVT) {
    __m512i lo[4], hi[4];
    for (int k = 0; k < 4; k++) {
        int s = 8 >> k;
        int32_t a[16], b[16];
        for (int j = 0; j < 16; j++) {
            a[j] = (j & s) ? 16 + j - s : j; /* row i: its own lanes, then row i+s's low */
            b[j] = (j & s) ? 16 + j : j + s; /* row i+s: row i's high lanes, then its own */
        }
        lo[k] = _mm512_loadu_si512((const void *)a);
        hi[k] = _mm512_loadu_si512((const void *)b);
    }
    for (int g = 0; g < ng; g++)
        for (int d0 = 0; d0 < vd; d0 += 16) {
            __m512 r[16];
            for (int i = 0; i < 16; i++) r[i] = kv_load16(KT, ((size_t)g * kd + d0 + i) * 16, KVT);
            for (int k = 0; k < 4; k++) {
                int s = 8 >> k;
                for (int i = 0; i < 16; i++) {
                    if (i & s) continue;
                    __m512 a = r[i], b = r[i + s];
                    r[i] = _mm512_permutex2var_ps(a, lo[k], b);
                    r[i + s] = _mm512_permutex2var_ps(a, hi[k], b);
                }
            }
            for (int j = 0; j < 16; j++)
                _mm512_storeu_ps(vb + (size_t)(g * 16 + j) * vd + d0, r[j]);
        }
}

static FACET_TGT_AVX512 void latent_rows_avx512(const void *KT, facet_kv_type kt, int kd, int vd,
                                                int ng, float *vb) {
    switch (kt) {
    case FACET_KV_BF16: latent_rows_avx512_t(KT, kd, vd, ng, vb, FACET_KV_BF16); return;
    case FACET_KV_F16: latent_rows_avx512_t(KT, kd, vd, ng, vb, FACET_KV_F16); return;
    default: latent_rows_avx512_t(KT, kd, vd, ng, vb, FACET_KV_F32); return;
    }
}

void facet_attention_latent(const facet_latent_params *P, int n_rows, int n_heads,
                            const float *q, size_t q_row_stride, const int *pos, const void *K,
                            float *out, size_t out_row_stride, float *scratch) {
    enum { B = FACET_ATTN_BLOCK, G = FACET_KV_GROUP };
    int n_q = n_rows * n_heads, kd = P->kd, vd = P->vd;
    if (n_q <= 0) return;
    facet_kv_type kt = P->kv_type;
    size_t elt = kt == FACET_KV_F32 ? 4 : 2;
    float *s = scratch;                    /* [n_q][B] scores of the block              */
    float *m = s + (size_t)n_q * B;        /* [n_q] running max                         */
    float *l = m + n_q;                    /* [n_q] running sum of exp                  */
    int *act = (int *)(l + n_q);           /* [n_q] queries that see the block          */
    float *vb = (float *)(act + n_q);      /* [B][vd] the block's values in float32     */
    float *kb = vb + (size_t)B * vd;       /* [B / G][kd][16] its keys (portable path)  */
    int fast = facet_attn_path_for(facet_cpu()) != FACET_ATTN_GENERIC && vd % 16 == 0;
    int last = 0;
    for (int r = 0; r < n_rows; r++)
        if (pos[r] > last) last = pos[r];
    for (int i = 0; i < n_q; i++) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
        memset(out + (size_t)(i / n_heads) * out_row_stride + (size_t)(i % n_heads) * vd, 0,
               sizeof(float) * (size_t)vd);
    }
#define LQ(i) (q + (size_t)((i) / n_heads) * q_row_stride + (size_t)((i) % n_heads) * kd)
#define LO(i) (out + (size_t)((i) / n_heads) * out_row_stride + (size_t)((i) % n_heads) * vd)
    const uint8_t *Kb = K;
    for (int t0 = 0; t0 <= last; t0 += B) {
        int t1 = t0 + B - 1 < last ? t0 + B - 1 : last; /* keys t0..t1 */
        int ng = (t1 - t0 + G) / G;
        const uint8_t *KTc = Kb + (size_t)(t0 / G) * kd * G * elt; /* the block's first group */
        /* the block's values (each key's first vd elements) as float32 rows, once for
         * every query; the portable path widens its keys too */
        if (fast) {
            latent_rows_avx512(KTc, kt, kd, vd, ng, vb);
        } else {
            facet_kv_load(KTc, kt, kb, ng * G * kd);
            for (int j = 0; j < ng * G; j++)
                for (int d = 0; d < vd; d++)
                    vb[(size_t)j * vd + d] = kb[((size_t)(j / G) * kd + d) * G + j % G];
        }
        int na = 0;
        for (int i = 0; i < n_q; i++)
            if (pos[i / n_heads] >= t0) act[na++] = i;
        for (int a0 = 0; a0 < na; a0 += SCORE_QT) {
            int qt = na - a0 < SCORE_QT ? na - a0 : SCORE_QT;
            const float *qs[6];
            float *ss[6];
            int tmax = t0; /* the tile's last visible key: groups past it are skipped */
            for (int u = 0; u < qt; u++) {
                int i = act[a0 + u];
                qs[u] = LQ(i);
                ss[u] = s + (size_t)i * B;
                if (pos[i / n_heads] > tmax) tmax = pos[i / n_heads];
            }
            int ngt = ((tmax < t1 ? tmax : t1) - t0) / G + 1;
            if (fast) scores_avx512(qs, qt, KTc, kt, ngt, kd, P->scale, ss);
            else scores_generic(qs, qt, kb, ngt, kd, P->scale, ss);
        }
        /* online softmax per query, then output += probabilities x values */
        float cs[4];
        int ns[4], nq = 0;
        float *as[4];
        const float *ps[4];
        for (int a = 0; a < na; a++) {
            int i = act[a];
            int te = pos[i / n_heads] < t1 ? pos[i / n_heads] : t1, n = te - t0 + 1;
            float *si = s + (size_t)i * B, *ai = LO(i);
            float c, sum = 0.0f;
            if (fast) {
                sum = softmax_block_avx512(si, n, &m[i], &c);
            } else {
                float mb = m[i];
                for (int j = 0; j < n; j++)
                    if (si[j] > mb) mb = si[j];
                c = expf(m[i] - mb); /* 0 on the first block (m = -inf) */
                for (int j = 0; j < n; j++) {
                    si[j] = expf(si[j] - mb);
                    sum += si[j];
                }
                m[i] = mb;
            }
            l[i] = l[i] * c + sum;
            if (!fast) {
                for (int d = 0; d < vd; d++) ai[d] *= c;
                for (int j = 0; j < n; j++) facet_axpy_f32(ai, si[j], vb + (size_t)j * vd, vd);
                continue;
            }
            cs[nq] = c;
            ns[nq] = n;
            as[nq] = ai;
            ps[nq] = si;
            if (++nq == 4 || a == na - 1) {
                /* a short last tile repeats its last query: the copy loads, computes and
                 * stores the same values, and the four-query kernel serves any vd */
                for (; nq < 4; nq++) {
                    cs[nq] = cs[nq - 1];
                    ns[nq] = ns[nq - 1];
                    as[nq] = as[nq - 1];
                    ps[nq] = ps[nq - 1];
                }
                values4_avx512(as, cs, vb, FACET_KV_F32, (size_t)vd, ns, ps, vd / 16);
                nq = 0;
            }
        }
    }
    for (int i = 0; i < n_q; i++) {
        float *o = LO(i), inv = 1.0f / l[i];
        for (int d = 0; d < vd; d++) o[d] *= inv;
    }
#undef LQ
#undef LO
}

facet_attn_path facet_attn_path_for(const facet_cpu_info *cpu) {
    if (cpu->level != FACET_CPU_AVX512) return FACET_ATTN_GENERIC;
    return cpu->avx512_bf16 ? FACET_ATTN_AVX512_BF16 : FACET_ATTN_AVX512;
}

const char *facet_attention_kernel_name(facet_attn_path p, facet_kv_type t, int hd) {
    int fast = p != FACET_ATTN_GENERIC && hd % 16 == 0 && values_nc_ok(hd / 16);
    if (!fast) return t == FACET_KV_F32 ? "blocked-generic" : "blocked-generic (block widened)";
    if (t == FACET_KV_BF16 && p == FACET_ATTN_AVX512_BF16) return "blocked-avx512bf16";
    return "blocked-avx512";
}

const char *facet_attn_path_name(facet_attn_path p) {
    switch (p) {
    case FACET_ATTN_AVX512_BF16: return "avx512-bf16";
    case FACET_ATTN_AVX512: return "avx512";
    default: return "generic";
    }
}

void facet_attention_causal(const float *q, size_t q_stride, const int *pos, int n_q,
                            const void *K, const void *V, facet_kv_type kv_type,
                            size_t v_stride, int hd, float scale, float *out, size_t out_stride,
                            float *scratch) {
    facet_attn_params P = {.head_dim = hd, .scale = scale, .kv_type = kv_type,
                           .v_stride = v_stride, .path = facet_attn_path_for(facet_cpu())};
    facet_attention(&P, q, q_stride, pos, n_q, K, V, out, out_stride, scratch);
}
