/* membw.c — read-only stream, triad and FMA-rate probes. */
#include "kernels/cpu/membw.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <math.h>
#include <time.h>
#include <immintrin.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/ukernel_gen.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *alloc_big(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 2u << 20, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

typedef struct {
    const float *buf;
    size_t n;          /* floats */
    int parts;
    double sums[256];
} read_job;

static void read_task(void *ctx, int task, int thread) {
    (void)thread;
    read_job *j = ctx;
    size_t per = j->n / (size_t)j->parts;
    const float *p = j->buf + per * (size_t)task;
    float acc[32] = {0};
    for (size_t i = 0; i + 32 <= per; i += 32)
        for (int l = 0; l < 32; l++) acc[l] += p[i + l];
    double s = 0;
    for (int l = 0; l < 32; l++) s += acc[l];
    j->sums[task] = s;
}

double facet_measure_read_bandwidth(facet_pool *pool, size_t bytes, int reps) {
    float *buf = alloc_big(bytes);
    if (!buf) return 0;
    size_t n = bytes / sizeof(float);
    for (size_t i = 0; i < n; i++) buf[i] = (float)(i & 1023);
    read_job j;
    memset(&j, 0, sizeof j);
    j.buf = buf;
    j.n = n;
    j.parts = facet_pool_size(pool);
    if (j.parts > 256) j.parts = 256;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = now_s();
        facet_pool_run(pool, j.parts, read_task, &j);
        t = now_s() - t;
        if (t < best) best = t;
    }
    volatile double sink = j.sums[0];
    (void)sink;
    free(buf);
    return (double)(n / (size_t)j.parts * (size_t)j.parts) * sizeof(float) / best / 1e9;
}

typedef struct {
    float *a;
    const float *b, *c;
    size_t n;
    int parts;
} triad_job;

static void triad_task(void *ctx, int task, int thread) {
    (void)thread;
    triad_job *j = ctx;
    size_t per = j->n / (size_t)j->parts, o = per * (size_t)task;
    for (size_t i = o; i < o + per; i++) j->a[i] = j->b[i] + 3.0f * j->c[i];
}

double facet_measure_triad_bandwidth(facet_pool *pool, size_t bytes, int reps) {
    float *a = alloc_big(bytes), *b = alloc_big(bytes), *c = alloc_big(bytes);
    double gbs = 0;
    if (a && b && c) {
        size_t n = bytes / sizeof(float);
        for (size_t i = 0; i < n; i++) a[i] = 0, b[i] = 1, c[i] = 2;
        triad_job j = {a, b, c, n, facet_pool_size(pool)};
        double best = 1e30;
        for (int r = 0; r < reps; r++) {
            double t = now_s();
            facet_pool_run(pool, j.parts, triad_task, &j);
            t = now_s() - t;
            if (t < best) best = t;
        }
        gbs = 3.0 * (double)(n / (size_t)j.parts * (size_t)j.parts) * sizeof(float) / best / 1e9;
    }
    free(a);
    free(b);
    free(c);
    return gbs;
}

/* Peak probes: 12 independent accumulator chains per thread (more than the FMA latency
 * times the FMA ports), written as named registers so no chain goes through memory. */
typedef struct {
    long iters;
    int kind;          /* 0 f32 FMA, 1 bf16 dot (vdpbf16ps), 2 int8 dot (vpdpbusd)      */
    int level;         /* facet_cpu_level used                                           */
    double ops_per_iter;
    float out[256];
} fma_job;

#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

static float fma_scalar(long iters) {
    float a[12];
    for (int c = 0; c < 12; c++) a[c] = (float)c * 1e-3f;
    for (long it = 0; it < iters; it++)
        for (int c = 0; c < 12; c++) a[c] = fmaf(a[c], 0.999999f, 1e-7f);
    float s = 0;
    for (int c = 0; c < 12; c++) s += a[c];
    return s;
}

static FACET_TGT_AVX2 float fma_avx2(long iters) {
    const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
#define D(i) __m256 a##i = _mm256_set1_ps((float)(i) * 1e-3f);
    CHAINS(D)
#undef D
    for (long it = 0; it < iters; it++) {
#define F(i) a##i = _mm256_fmadd_ps(a##i, m, c);
        CHAINS(F)
#undef F
    }
    __m256 s = _mm256_setzero_ps();
#define S(i) s = _mm256_add_ps(s, a##i);
    CHAINS(S)
#undef S
    float o[8];
    _mm256_storeu_ps(o, s);
    return o[0] + o[7];
}

static FACET_TGT_AVX512 float fma_avx512(long iters) {
    const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
#define D(i) __m512 a##i = _mm512_set1_ps((float)(i) * 1e-3f);
    CHAINS(D)
#undef D
    for (long it = 0; it < iters; it++) {
#define F(i) a##i = _mm512_fmadd_ps(a##i, m, c);
        CHAINS(F)
#undef F
    }
    __m512 s = _mm512_setzero_ps();
#define S(i) s = _mm512_add_ps(s, a##i);
    CHAINS(S)
#undef S
    return _mm512_reduce_add_ps(s);
}

static FACET_TGT_AVX512BF16 float dot_bf16_avx512(long iters) {
    const __m512i m = _mm512_set1_epi32(0x3f803f80), c = _mm512_set1_epi32(0x33d633d6);
#define D(i) __m512 a##i = _mm512_set1_ps((float)(i) * 1e-3f);
    CHAINS(D)
#undef D
    for (long it = 0; it < iters; it++) {
#define F(i) a##i = _mm512_dpbf16_ps(a##i, (__m512bh)m, (__m512bh)c);
        CHAINS(F)
#undef F
    }
    __m512 s = _mm512_setzero_ps();
#define S(i) s = _mm512_add_ps(s, a##i);
    CHAINS(S)
#undef S
    return _mm512_reduce_add_ps(s);
}

static FACET_TGT_AVX512VNNI float dot_int8_avx512(long iters) {
    const __m512i m = _mm512_set1_epi8(3), c = _mm512_set1_epi8(-2);
#define D(i) __m512i a##i = _mm512_set1_epi32(i);
    CHAINS(D)
#undef D
    for (long it = 0; it < iters; it++) {
#define F(i) a##i = _mm512_dpbusd_epi32(a##i, m, c);
        CHAINS(F)
#undef F
    }
    __m512i s = _mm512_setzero_si512();
#define S(i) s = _mm512_add_epi32(s, a##i);
    CHAINS(S)
#undef S
    /* the sums wrap (only a sink for the optimizer): add them as unsigned */
    uint32_t lane[16], total = 0;
    _mm512_storeu_si512((void *)lane, s);
    for (int i = 0; i < 16; i++) total += lane[i];
    return (float)total;
}

/* AVX2 int8: maddubs + madd + add per 32 byte products (the int8-avx2 kernel's steps) */
static FACET_TGT_AVX2 float dot_int8_avx2(long iters) {
    const __m256i m = _mm256_set1_epi8(3), c = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
#define D(i) __m256i a##i = _mm256_set1_epi32(i);
    CHAINS(D)
#undef D
    for (long it = 0; it < iters; it++) {
#define F(i) a##i = _mm256_add_epi32(a##i, _mm256_madd_epi16(_mm256_maddubs_epi16(m, c), ones));
        CHAINS(F)
#undef F
        __asm__ volatile("" ::: "memory"); /* keep the products in the loop */
    }
    __m256i s = _mm256_setzero_si256();
#define S(i) s = _mm256_add_epi32(s, a##i);
    CHAINS(S)
#undef S
    return (float)_mm256_extract_epi32(s, 0);
}

static void fma_task(void *ctx, int task, int thread) {
    (void)thread;
    fma_job *j = ctx;
    float r = 0;
    switch (j->kind) {
    case 1: r = dot_bf16_avx512(j->iters); break;
    case 2: r = j->level == FACET_CPU_AVX512 ? dot_int8_avx512(j->iters) : dot_int8_avx2(j->iters); break;
    default:
        r = j->level == FACET_CPU_AVX512 ? fma_avx512(j->iters)
            : j->level == FACET_CPU_AVX2 ? fma_avx2(j->iters)
                                         : fma_scalar(j->iters);
    }
    j->out[task] = r;
}

double facet_measure_peak_gflops_format(facet_pool *pool, facet_wformat format) {
    const facet_cpu_info *cpu = facet_cpu();
    fma_job j;
    memset(&j, 0, sizeof j);
    j.level = cpu->level;
    int lanes = cpu->level == FACET_CPU_AVX512 ? 16 : cpu->level == FACET_CPU_AVX2 ? 8 : 1;
    j.kind = 0;
    j.ops_per_iter = 12.0 * lanes * 2; /* FMA: 2 flops a lane */
    if (format == FACET_WF_BF16 && cpu->avx512_bf16) {
        j.kind = 1;
        j.ops_per_iter = 12.0 * 16 * 2 * 2; /* two products a lane, 2 flops each */
    } else if ((format == FACET_WF_Q8 || format == FACET_WF_Q4) && cpu->level >= FACET_CPU_AVX2) {
        j.kind = 2;
        j.ops_per_iter = 12.0 * (cpu->level == FACET_CPU_AVX512 ? 64 : 32) * 2;
    }
    j.iters = cpu->level == FACET_CPU_SCALAR ? 2000000 : 4000000;
    int parts = facet_pool_size(pool);
    if (parts > 256) parts = 256;
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        double t = now_s();
        facet_pool_run(pool, parts, fma_task, &j);
        t = now_s() - t;
        if (t < best) best = t;
    }
    return j.ops_per_iter * (double)j.iters * parts / best / 1e9;
}

double facet_measure_peak_gflops(facet_pool *pool) {
    return facet_measure_peak_gflops_format(pool, FACET_WF_F32);
}
