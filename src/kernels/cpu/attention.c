/*
 * attention.c — causal attention of one head for a group of queries of one sequence,
 * keys in fixed blocks of FACET_ATTN_BLOCK with an online softmax (Milakov & Gimelshein
 * 2018, "Online normalizer calculation for softmax"; the FlashAttention loop of Dao et
 * al. 2022 on a CPU). Each key and value row is loaded once per block for every query
 * of the group within the cache (prefill's queries of a chunk share the block in L2),
 * and each query's arithmetic is the same, in the same order, whatever group it is in.
 * With AVX-512 and head_dim 64/128/256 the query and its output stay in registers.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/ukernel_gen.h"

/*
 * AVX-512, head_dim = 16 * NC: one query against keys t0..t1 of a block, the query and
 * the output accumulator held in registers. s: the block's scores in / probabilities
 * out (see the generic loop below for the math); c: the accumulator's rescale factor.
 */
FACET_INLINE FACET_TGT_AVX512 void block_scores_avx512(const float *q, const float *K, size_t kvs,
                                                        int n, float scale, float *s, const int NC) {
    __m512 qv[16];
    for (int c = 0; c < NC; c++) qv[c] = _mm512_loadu_ps(q + 16 * c);
    const __m128 sc = _mm_set1_ps(scale);
    int t = 0;
    /* four keys at a time: four independent FMA chains, then one transpose-style
     * reduction of the four vectors (unpack, shuffle, fold the 128-bit lanes) */
    for (; t + 4 <= n; t += 4) {
        const float *k = K + (size_t)t * kvs;
        __m512 a[4];
        for (int u = 0; u < 4; u++) a[u] = _mm512_mul_ps(qv[0], _mm512_loadu_ps(k + (size_t)u * kvs));
        for (int c = 1; c < NC; c++)
            for (int u = 0; u < 4; u++)
                a[u] = _mm512_fmadd_ps(qv[c], _mm512_loadu_ps(k + (size_t)u * kvs + 16 * c), a[u]);
        __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(a[0], a[1]), _mm512_unpackhi_ps(a[0], a[1]));
        __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(a[2], a[3]), _mm512_unpackhi_ps(a[2], a[3]));
        __m512 x = _mm512_add_ps(_mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
        __m256 h = _mm256_add_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1));
        __m128 r = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        _mm_storeu_ps(s + t, _mm_mul_ps(r, sc));
    }
    for (; t < n; t++) {
        const float *k = K + (size_t)t * kvs;
        __m512 a0 = _mm512_mul_ps(qv[0], _mm512_loadu_ps(k)), a1 = _mm512_setzero_ps();
        for (int c = 1; c < NC; c++) {
            if (c & 1) a1 = _mm512_fmadd_ps(qv[c], _mm512_loadu_ps(k + 16 * c), a1);
            else a0 = _mm512_fmadd_ps(qv[c], _mm512_loadu_ps(k + 16 * c), a0);
        }
        s[t] = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1)) * scale;
    }
}

FACET_INLINE FACET_TGT_AVX512 void block_values_avx512(float *acc, float c, const float *V,
                                                        size_t kvs, int n, const float *p,
                                                        const int NC) {
    __m512 av[16], cv = _mm512_set1_ps(c);
    for (int j = 0; j < NC; j++) av[j] = _mm512_mul_ps(_mm512_loadu_ps(acc + 16 * j), cv);
    for (int t = 0; t < n; t++) {
        const float *v = V + (size_t)t * kvs;
        __m512 pv = _mm512_set1_ps(p[t]);
        for (int j = 0; j < NC; j++) av[j] = _mm512_fmadd_ps(pv, _mm512_loadu_ps(v + 16 * j), av[j]);
    }
    for (int j = 0; j < NC; j++) _mm512_storeu_ps(acc + 16 * j, av[j]);
}

/*
 * e^x for x <= 0 in 16 lanes: x = n ln2 + r with |r| <= ln2/2 (ln2 split in a high part
 * exact in float and a low part, Cody & Waite), e^r by its Taylor series to degree 7
 * (truncation < 3e-9 relative), times 2^n with vscalefps, which also takes n < -126
 * gracefully down to 0. Within 2 ulp of expf; -inf gives 0.
 */
static inline FACET_TGT_AVX512 __m512 exp_neg_avx512(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f)); /* e^-104 is below the smallest float */
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
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

#define ATTN_NC_CASES(F, ...)                        \
    switch (nc) {                                    \
    case 4: F(__VA_ARGS__, 4); return 1;             \
    case 8: F(__VA_ARGS__, 8); return 1;             \
    case 16: F(__VA_ARGS__, 16); return 1;           \
    default: return 0;                               \
    }

/* K / V point at the block's first row; n rows kvs apart */
static FACET_TGT_AVX512 int scores_avx512(const float *q, const float *K, size_t kvs, int n,
                                          float scale, float *s, int nc) {
    ATTN_NC_CASES(block_scores_avx512, q, K, kvs, n, scale, s)
}
static FACET_TGT_AVX512 int values_avx512(float *acc, float c, const float *V, size_t kvs, int n,
                                          const float *p, int nc) {
    ATTN_NC_CASES(block_values_avx512, acc, c, V, kvs, n, p)
}

void facet_attention_causal(const float *q, size_t q_stride, const int *pos, int n_q,
                            const void *K, const void *V, facet_kv_type kv_type,
                            size_t kv_stride, int hd, float scale, float *out, size_t out_stride,
                            float *scratch) {
    enum { B = FACET_ATTN_BLOCK };
    float *s = scratch;                            /* [n_q][B] scores of the block        */
    float *acc = s + (size_t)n_q * B;              /* [n_q][hd] unnormalized output       */
    float *m = acc + (size_t)n_q * hd;             /* [n_q] running max                   */
    float *l = m + n_q;                            /* [n_q] running sum of exp            */
    /* A 16-bit cache is copied block by block, widened to float32. With several queries,
     * rows that are not adjacent (kv_stride > hd: often 4 KiB apart, so they all fall
     * into the same few L1 sets) are copied next to each other too; the copies are read
     * by every query from L1/L2. */
    int pack = kv_type != FACET_KV_F32 || (n_q >= 4 && kv_stride != (size_t)hd);
    size_t row_bytes = kv_stride * (kv_type == FACET_KV_F32 ? 4 : 2);
    const uint8_t *Kb = K, *Vb = V;
    float *kb = l + n_q, *vb = kb + (size_t)B * hd;
    /* registers path: AVX-512 and head_dim 64, 128 or 256 */
    int avx512 = facet_cpu()->level == FACET_CPU_AVX512;
    int fast = avx512 && (hd == 64 || hd == 128 || hd == 256);
    int nc = hd / 16, last = 0;
    for (int i = 0; i < n_q; i++) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
        memset(acc + (size_t)i * hd, 0, sizeof(float) * (size_t)hd);
        if (pos[i] > last) last = pos[i];
    }
    for (int t0 = 0; t0 <= last; t0 += B) {
        int t1 = t0 + B - 1 < last ? t0 + B - 1 : last; /* keys t0..t1 */
        /* the block's first key / value row and the distance between rows */
        const float *Kx = (const float *)(Kb + (size_t)t0 * row_bytes);
        const float *Vx = (const float *)(Vb + (size_t)t0 * row_bytes);
        size_t xs = kv_stride;
        if (pack) {
            for (int t = t0; t <= t1; t++) {
                facet_kv_load(Kb + (size_t)t * row_bytes, kv_type, kb + (size_t)(t - t0) * hd, hd);
                facet_kv_load(Vb + (size_t)t * row_bytes, kv_type, vb + (size_t)(t - t0) * hd, hd);
            }
            Kx = kb;
            Vx = vb;
            xs = (size_t)hd;
        }
        for (int i = 0; i < n_q; i++) {
            if (pos[i] < t0) continue;
            int te = pos[i] < t1 ? pos[i] : t1, n = te - t0 + 1;
            const float *qi = q + (size_t)i * q_stride;
            float *si = s + (size_t)i * B, *ai = acc + (size_t)i * hd;
            /* scores of the keys this query sees */
            if (!(fast && scores_avx512(qi, Kx, xs, n, scale, si, nc)))
                for (int j = 0; j < n; j++) si[j] = facet_dot_f32(qi, Kx + (size_t)j * xs, hd) * scale;
            /* online softmax: new max, rescale of the old sum and output */
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
            /* output += probabilities x values */
            if (!(fast && values_avx512(ai, c, Vx, xs, n, si, nc))) {
                for (int d = 0; d < hd; d++) ai[d] *= c;
                for (int j = 0; j < n; j++) facet_axpy_f32(ai, si[j], Vx + (size_t)j * xs, hd);
            }
        }
    }
    for (int i = 0; i < n_q; i++) {
        float *o = out + (size_t)i * out_stride, inv = 1.0f / l[i];
        const float *a = acc + (size_t)i * hd;
        for (int d = 0; d < hd; d++) o[d] = a[d] * inv;
    }
}
