/* membw.c — read-only stream, triad and FMA-rate probes. */
#include "kernels/cpu/membw.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <math.h>
#include <time.h>

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

typedef struct {
    long iters;
    float out[256];
} fma_job;

static void fma_task(void *ctx, int task, int thread) {
    (void)thread;
    fma_job *j = ctx;
    /* 8 chains x 16 lanes: enough independent FMAs to hide latency */
    float acc[8][16];
    for (int c = 0; c < 8; c++)
        for (int l = 0; l < 16; l++) acc[c][l] = (float)(c + l) * 1e-3f;
    const float m = 0.999999f, a = 1e-7f;
    for (long it = 0; it < j->iters; it++)
        for (int c = 0; c < 8; c++)
            for (int l = 0; l < 16; l++) acc[c][l] = fmaf(acc[c][l], m, a);
    float s = 0;
    for (int c = 0; c < 8; c++)
        for (int l = 0; l < 16; l++) s += acc[c][l];
    j->out[task] = s;
}

double facet_measure_peak_gflops(facet_pool *pool) {
    fma_job j;
    memset(&j, 0, sizeof j);
    j.iters = 2000000;
    int parts = facet_pool_size(pool);
    if (parts > 256) parts = 256;
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        double t = now_s();
        facet_pool_run(pool, parts, fma_task, &j);
        t = now_s() - t;
        if (t < best) best = t;
    }
    return 2.0 * 128.0 * (double)j.iters * parts / best / 1e9;
}
