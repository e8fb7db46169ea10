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
    for (int t = 0; t < n; t++) {
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
                            const float *K, const float *V, size_t kv_stride, int hd, float scale,
                            float *out, size_t out_stride, float *scratch) {
    enum { B = FACET_ATTN_BLOCK };
    float *s = scratch;                            /* [n_q][B] scores of the block        */
    float *acc = s + (size_t)n_q * B;              /* [n_q][hd] unnormalized output       */
    float *m = acc + (size_t)n_q * hd;             /* [n_q] running max                   */
    float *l = m + n_q;                            /* [n_q] running sum of exp            */
    /* With several queries, each block's key and value rows are first copied next to
     * each other: cache rows of one head sit kv_stride apart (often 4 KiB, so they all
     * fall into the same few L1 sets); the copies are read by every query from L1/L2. */
    int pack = n_q >= 4;
    float *kb = l + n_q, *vb = kb + (size_t)B * hd;
    /* registers path: AVX-512 and head_dim 64, 128 or 256 */
    int fast = facet_cpu()->level == FACET_CPU_AVX512 && (hd == 64 || hd == 128 || hd == 256);
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
        const float *Kx = K + (size_t)t0 * kv_stride, *Vx = V + (size_t)t0 * kv_stride;
        size_t xs = kv_stride;
        if (pack) {
            for (int t = t0; t <= t1; t++) {
                memcpy(kb + (size_t)(t - t0) * hd, K + (size_t)t * kv_stride, sizeof(float) * (size_t)hd);
                memcpy(vb + (size_t)(t - t0) * hd, V + (size_t)t * kv_stride, sizeof(float) * (size_t)hd);
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
            float mb = m[i];
            for (int j = 0; j < n; j++)
                if (si[j] > mb) mb = si[j];
            float c = expf(m[i] - mb); /* 0 on the first block (m = -inf) */
            float sum = 0.0f;
            for (int j = 0; j < n; j++) {
                si[j] = expf(si[j] - mb);
                sum += si[j];
            }
            l[i] = l[i] * c + sum;
            m[i] = mb;
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
