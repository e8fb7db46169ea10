/*
 * matmul_f32.c — float32 dot/axpy helpers, the row-major f32 matmul (tensors not yet
 * packed) and the packed-f32 micro-kernels: y += x[k] * w[k][16 lanes], one fused
 * multiply-add per (row, output, k) in k order on every path, so scalar, AVX2 and
 * AVX-512 give bit-identical results.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/ukernel_gen.h"

/* Attention calls these once per cached position and head: explicit SIMD with a short
 * fixed-order reduction (the compiler's version ended in 16 dependent scalar adds).
 * Each path always sums in the same order, whatever the batch. */
static FACET_TGT_AVX512 float dot_avx512(const float *a, const float *b, int n) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    }
    if (i + 16 <= n) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        i += 16;
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

static FACET_TGT_AVX2 float dot_avx2(const float *a, const float *b, int n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    if (i + 8 <= n) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        i += 8;
    }
    __m256 s = _mm256_add_ps(s0, s1);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    float r = _mm_cvtss_f32(h);
    for (; i < n; i++) r = fmaf(a[i], b[i], r);
    return r;
}

static float dot_scalar(const float *a, const float *b, int n) {
    /* 16 independent partial sums in a fixed order */
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++) acc[l] += a[i + l] * b[i + l];
    float tail = 0.0f;
    for (; i < n; i++) tail += a[i] * b[i];
    float s = 0.0f;
    for (int l = 0; l < 16; l++) s += acc[l];
    return s + tail;
}

float facet_dot_f32(const float *a, const float *b, int n) {
    switch (facet_cpu()->level) {
    case FACET_CPU_AVX512: return dot_avx512(a, b, n);
    case FACET_CPU_AVX2: return dot_avx2(a, b, n);
    default: return dot_scalar(a, b, n);
    }
}

static FACET_TGT_AVX512 void axpy_avx512(float *y, float a, const float *x, int n) {
    __m512 av = _mm512_set1_ps(a);
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(av, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, x + i),
                                                        _mm512_maskz_loadu_ps(m, y + i)));
    }
}

static FACET_TGT_AVX2 void axpy_avx2(float *y, float a, const float *x, int n) {
    __m256 av = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] = fmaf(a, x[i], y[i]);
}

void facet_axpy_f32(float *y, float a, const float *x, int n) {
    switch (facet_cpu()->level) {
    case FACET_CPU_AVX512: axpy_avx512(y, a, x, n); return;
    case FACET_CPU_AVX2: axpy_avx2(y, a, x, n); return;
    default:
        for (int i = 0; i < n; i++) y[i] = fmaf(a, x[i], y[i]);
    }
}

typedef struct {
    float *Y;
    const float *X, *W, *bias;
    int n_rows, n_in, n_out, block;
} matmul_job;

static void matmul_task(void *ctx, int task, int thread) {
    (void)thread;
    const matmul_job *j = ctx;
    int o0 = task * j->block;
    int o1 = o0 + j->block < j->n_out ? o0 + j->block : j->n_out;
    for (int o = o0; o < o1; o++) {
        const float *w = j->W + (size_t)o * j->n_in;
        float b = j->bias ? j->bias[o] : 0.0f;
        for (int r = 0; r < j->n_rows; r++)
            j->Y[(size_t)r * j->n_out + o] = facet_dot_f32(j->X + (size_t)r * j->n_in, w, j->n_in) + b;
    }
}

void facet_matmul_f32(facet_pool *pool, float *Y, const float *X, const float *W,
                      const float *bias, int n_rows, int n_in, int n_out) {
    int threads = pool ? facet_pool_size(pool) : 1;
    /* about 4 blocks per thread for balance, at least 16 rows each */
    int block = n_out / (threads * 4);
    if (block < 16) block = 16;
    matmul_job j = {Y, X, W, bias, n_rows, n_in, n_out, block};
    int n_tasks = (n_out + block - 1) / block;
    if (pool)
        facet_pool_run(pool, n_tasks, matmul_task, &j);
    else
        for (int t = 0; t < n_tasks; t++) matmul_task(&j, t, 0);
}

/* ---- packed f32 micro-kernels ---- */

#define XROW(r) ((const float *)(x->data + (size_t)(r0 + (r)) * x->stride))

static void uk_f32_scalar(FACET_UK_PARAMS) {
    for (int r = 0; r < mr; r++)
        for (int p = 0; p < np; p++) {
            const float *w = (const float *)(W + (size_t)p * pb), *xr = XROW(r);
            float *t = tile + r * ld + p * 16, acc[16];
            for (int l = 0; l < 16; l++) acc[l] = accumulate ? t[l] : 0.0f;
            for (int k = k0; k < k1; k++)
                for (int l = 0; l < 16; l++) acc[l] = fmaf(xr[k], w[(size_t)k * 16 + l], acc[l]);
            memcpy(t, acc, sizeof acc);
        }
}

FACET_INLINE FACET_TGT_AVX2 void f32_avx2_body(const facet_xprep *x, int r0, const uint8_t *W,
                                                size_t pb, int k0, int k1, float *tile, int ld,
                                                int accumulate, const int MR, const int NP) {
    __m256 acc[4][2 * 1];
    (void)NP; /* one panel: two 8-lane halves */
    (void)pb;
    for (int r = 0; r < MR; r++)
        for (int h = 0; h < 2; h++)
            acc[r][h] = accumulate ? _mm256_loadu_ps(tile + r * ld + h * 8) : _mm256_setzero_ps();
    const float *w = (const float *)W;
    for (int k = k0; k < k1; k++) {
        __m256 w0 = _mm256_loadu_ps(w + (size_t)k * 16), w1 = _mm256_loadu_ps(w + (size_t)k * 16 + 8);
        for (int r = 0; r < MR; r++) {
            __m256 xb = _mm256_broadcast_ss(XROW(r) + k);
            acc[r][0] = _mm256_fmadd_ps(xb, w0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(xb, w1, acc[r][1]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int h = 0; h < 2; h++) _mm256_storeu_ps(tile + r * ld + h * 8, acc[r][h]);
}

#define B_F32_AVX2(M, N) f32_avx2_body(FACET_UK_ARGS, M, N)
static FACET_TGT_AVX2 void uk_f32_avx2(FACET_UK_PARAMS) {
    (void)pb;
    switch (FACET_UK_KEY(mr, np)) { FACET_UK_MR4(FACET_UK_NP1, B_F32_AVX2) }
}

FACET_INLINE FACET_TGT_AVX512 void f32_avx512_body(const facet_xprep *x, int r0, const uint8_t *W,
                                                    size_t pb, int k0, int k1, float *tile, int ld,
                                                    int accumulate, const int MR, const int NP) {
    __m512 acc[8][4];
    const float *w[4];
    for (int p = 0; p < NP; p++) w[p] = (const float *)(W + (size_t)p * pb);
    for (int r = 0; r < MR; r++)
        for (int p = 0; p < NP; p++)
            acc[r][p] = accumulate ? _mm512_loadu_ps(tile + r * ld + p * 16) : _mm512_setzero_ps();
    for (int k = k0; k < k1; k++) {
        __m512 wv[4];
        for (int p = 0; p < NP; p++) wv[p] = _mm512_loadu_ps(w[p] + (size_t)k * 16);
        for (int r = 0; r < MR; r++) {
            __m512 xb = _mm512_set1_ps(XROW(r)[k]);
            for (int p = 0; p < NP; p++) acc[r][p] = _mm512_fmadd_ps(xb, wv[p], acc[r][p]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int p = 0; p < NP; p++) _mm512_storeu_ps(tile + r * ld + p * 16, acc[r][p]);
}

/* One row (decode): N (1 or 2) panels side by side from panel p, per output the tiled
 * body's single FMA chain in k order (same bits alone or in a batch); two chains so the
 * stream does not wait on one FMA latency per 64 bytes. The call's panels are
 * contiguous: one sequential stream. */
FACET_INLINE FACET_TGT_AVX512 void f32_row1_n(const float *xr, const uint8_t *W, size_t pb, int p,
                                               int k0, int k1, float *tile, int accumulate,
                                               const int N) {
    const float *w[2];
    __m512 a[2];
    for (int i = 0; i < N; i++) {
        w[i] = (const float *)(W + (size_t)(p + i) * pb);
        a[i] = accumulate ? _mm512_loadu_ps(tile + (p + i) * 16) : _mm512_setzero_ps();
    }
    for (int k = k0; k < k1; k++) {
        __m512 xb = _mm512_set1_ps(xr[k]);
        for (int i = 0; i < N; i++) a[i] = _mm512_fmadd_ps(xb, _mm512_loadu_ps(w[i] + (size_t)k * 16), a[i]);
    }
    for (int i = 0; i < N; i++) _mm512_storeu_ps(tile + (p + i) * 16, a[i]);
}

static FACET_TGT_AVX512 void f32_avx512_row1(const facet_xprep *x, int r0, const uint8_t *W,
                                             size_t pb, int np, int k0, int k1, float *tile,
                                             int accumulate) {
    int p = 0;
    for (; p + 2 <= np; p += 2) f32_row1_n(XROW(0), W, pb, p, k0, k1, tile, accumulate, 2);
    for (; p < np; p++) f32_row1_n(XROW(0), W, pb, p, k0, k1, tile, accumulate, 1);
}

#define B_F32_AVX512(M, N) f32_avx512_body(FACET_UK_ARGS, M, N)
static FACET_TGT_AVX512 void uk_f32_avx512(FACET_UK_PARAMS) {
    if (mr == 1) {
        f32_avx512_row1(x, r0, W, pb, np, k0, k1, tile, accumulate);
        return;
    }
    switch (FACET_UK_KEY(mr, np)) { FACET_UK_MR8(FACET_UK_NP3, B_F32_AVX512) }
}

const facet_ukernel facet_uk_f32_scalar = {"f32-scalar", FACET_X_F32, 4, 1, uk_f32_scalar, 0, 0};
const facet_ukernel facet_uk_f32_avx2 = {"f32-avx2", FACET_X_F32, 4, 1, uk_f32_avx2, 0, 0};
const facet_ukernel facet_uk_f32_avx512 = {"f32-avx512", FACET_X_F32, 8, 3, uk_f32_avx512, 4, 0};
