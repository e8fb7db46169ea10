/*
 * kernel_bench.c — facet_matmul alone over the weight matrices of a real model shape,
 * in the order the forward pass calls them (per layer q, k, v, o, gate, up, down; then
 * lm_head), random weights. Prints, per format: the read-only bandwidth ceiling
 * (facet_measure_read_bandwidth, 1 GiB), decode tokens/s at 1 and 8 rows with the
 * weight GB/s achieved and its fraction of the ceiling, and prefill tokens/s with the
 * GFLOP/s achieved and its fraction of the measured peak of the format's multiply-add
 * instruction (facet_measure_peak_gflops_format).
 * With MODE "multi" it times instead only the projections that share an input, per
 * layer q, k, v and gate, up: separate facet_matmul calls (5 a layer) against
 * facet_matmul_multi (q/k/v in one call, gate/up in one), at 1 and 8 rows, repetitions
 * alternating the two, and prints the medians and the fused / separate ratio.
 * Build and run: bench/kernel_bench.sh (see there).
 *
 *   kernel_bench SHAPE FORMAT [THREADS] [REPS] [MODE]
 *     SHAPE: qwen3-0.6b | llama-1b     FORMAT: f32 | bf16 | f16 | int8     MODE: all | multi
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/membw.h"
#include "util/stats.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU seconds of the whole process: on a machine shared with other work, CPU time per
 * thread is the time the run would take with its cores to itself (spin-waits count). */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* a timing: wall seconds and process CPU seconds / threads, best of the repetitions */
typedef struct { double wall, cpu; } timing;
static void keep_best(timing *b, double w, double c) {
    if (w < b->wall) b->wall = w;
    if (c < b->cpu) b->cpu = c;
}

#include <sys/mman.h>
typedef struct { const float *buf; size_t per; double sum[64]; } rd_job;
static void rd_task(void *ctx, int task, int thread) {
    (void)thread;
    rd_job *j = ctx;
    const float *p = j->buf + j->per * (size_t)task;
    float acc[32] = {0};
    for (size_t i = 0; i + 32 <= j->per; i += 32)
        for (int l = 0; l < 32; l++) acc[l] += p[i + l];
    double s = 0;
    for (int l = 0; l < 32; l++) s += acc[l];
    j->sum[task] = s;
}
/* read-only stream over 1 GiB of huge-page memory, wall and CPU-time GB/s */
static timing read_bw(facet_pool *pool, int threads, size_t bytes, int reps) {
    float *buf = NULL;
    timing b = {1e30, 1e30};
    if (posix_memalign((void **)&buf, 2u << 20, bytes) != 0) return b;
    madvise(buf, bytes, MADV_HUGEPAGE);
    memset(buf, 0, bytes);
    rd_job j = {buf, bytes / sizeof(float) / (size_t)threads, {0}};
    for (int r = 0; r < reps; r++) {
        double w = now_s(), c = cpu_s();
        facet_pool_run(pool, threads, rd_task, &j);
        keep_best(&b, now_s() - w, (cpu_s() - c) / threads);
    }
    free(buf);
    b.wall = bytes / b.wall / 1e9;
    b.cpu = bytes / b.cpu / 1e9;
    return b;
}

typedef struct { int H, I, V, L, qd, kvd; } shape;

/* MODE multi: q/k/v and gate/up of every layer (m: 7 matrices a layer), separate calls
 * against facet_matmul_multi; Y holds the outputs of one group side by side. */
static void bench_multi(facet_pool *pool, int threads, int reps, const facet_wtensor *m, int L,
                        const float *X, float *Y, int maxn_out) {
    int decode_rows[] = {1, 8};
    for (int d = 0; d < 2; d++) {
        int n = decode_rows[d];
        double sw[64], sc[64], fw[64], fc[64], rw[64], rc[64];
        int nr = reps < 64 ? reps : 64;
        for (int r = 0; r < nr; r++)
            for (int pass = 0; pass < 2; pass++) {
                int fused = (pass + r) % 2; /* alternate which goes first */
                double w = now_s(), c = cpu_s();
                for (int l = 0; l < L; l++)
                    for (int g = 0; g < 2; g++) { /* g 0: q, k, v; g 1: gate, up */
                        const facet_wtensor *wp[3];
                        float *yp[3];
                        int nm = g ? 2 : 3;
                        for (int i = 0; i < nm; i++) {
                            wp[i] = &m[7 * l + (g ? 4 : 0) + i];
                            yp[i] = Y + (size_t)i * n * maxn_out;
                        }
                        if (fused)
                            facet_matmul_multi(pool, nm, yp, X, wp, NULL, n);
                        else
                            for (int i = 0; i < nm; i++) facet_matmul(pool, yp[i], X, wp[i], NULL, n);
                    }
                w = now_s() - w;
                c = (cpu_s() - c) / threads;
                if (fused) fw[r] = w, fc[r] = c;
                else sw[r] = w, sc[r] = c;
            }
        for (int r = 0; r < nr; r++) rw[r] = fw[r] / sw[r], rc[r] = fc[r] / sc[r];
        printf("multi rows %d (median of %d, %d layers q/k/v + gate/up): separate %.3f ms wall "
               "%.3f ms CPU | fused %.3f ms wall %.3f ms CPU | fused/separate wall %.3f CPU %.3f\n",
               n, nr, L, 1e3 * facet_median(sw, nr), 1e3 * facet_median(sc, nr), 1e3 * facet_median(fw, nr),
               1e3 * facet_median(fc, nr), facet_median(rw, nr), facet_median(rc, nr));
    }
}

static void free_all(facet_pool *pool, facet_wtensor *m, int n_mats, float *X, float *Y) {
    for (int i = 0; i < n_mats; i++) free(m[i].data);
    free(m);
    free(X);
    free(Y);
    facet_pool_free(pool);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: kernel_bench qwen3-0.6b|llama-1b f32|bf16|f16|int8 [threads] [reps] [all|multi]\n");
        return 2;
    }
    shape s;
    if (!strcmp(argv[1], "qwen3-0.6b")) s = (shape){1024, 3072, 151936, 28, 2048, 1024};
    else if (!strcmp(argv[1], "llama-1b")) s = (shape){2048, 8192, 128256, 16, 2048, 512};
    else return 2;
    facet_wformat fmt = !strcmp(argv[2], "bf16") ? FACET_WF_BF16 : !strcmp(argv[2], "f16") ? FACET_WF_F16
                      : !strcmp(argv[2], "int8") ? FACET_WF_Q8 : FACET_WF_F32;
    int threads = argc > 3 ? atoi(argv[3]) : 2, reps = argc > 4 ? atoi(argv[4]) : 5;
    facet_pool *pool = facet_pool_create(threads);

    int per_layer = 7, n_mats = s.L * per_layer + 1;
    facet_wtensor *m = calloc((size_t)n_mats, sizeof *m);
    int dims[7][2] = {{s.qd, s.H}, {s.kvd, s.H}, {s.kvd, s.H}, {s.H, s.qd}, {s.I, s.H}, {s.I, s.H}, {s.H, s.I}};
    uint32_t rng = 1;
    size_t bytes = 0;
    double flops_tok = 0;
    for (int i = 0; i < n_mats; i++) {
        int rows = i < n_mats - 1 ? dims[i % 7][0] : s.V, cols = i < n_mats - 1 ? dims[i % 7][1] : s.H;
        float *f = malloc(sizeof(float) * (size_t)rows * cols);
        for (size_t k = 0; k < (size_t)rows * cols; k++) {
            rng = rng * 1664525u + 1013904223u;
            f[k] = ((float)(rng >> 9) / (float)(1u << 23) - 0.5f) * 0.04f;
        }
        m[i] = (facet_wtensor){FACET_WF_F32, rows, cols, f, NULL, 0};
        facet_error err;
        if (facet_wtensor_convert(&m[i], fmt, &err) != FACET_OK) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        bytes += facet_wtensor_bytes(&m[i]);
        if (i < n_mats - 1) flops_tok += 2.0 * rows * cols;
    }
    int maxn = 256, maxd = s.V > s.I ? s.V : s.I;
    float *X = malloc(sizeof(float) * (size_t)maxn * maxd), *Y = malloc(sizeof(float) * (size_t)maxn * maxd);
    for (size_t k = 0; k < (size_t)maxn * maxd; k++) X[k] = (float)((k * 2654435761u) % 1000) / 1000.0f - 0.5f;

    if (argc > 5 && !strcmp(argv[5], "multi")) {
        printf("shape %s format %s path %s threads %d\n", argv[1], argv[2],
               facet_cpu_level_name(facet_cpu()->level), threads);
        bench_multi(pool, threads, reps, m, s.L, X, Y, s.I > s.qd ? s.I : s.qd);
        free_all(pool, m, n_mats, X, Y);
        return 0;
    }
    double bw = facet_measure_read_bandwidth(pool, (size_t)1 << 30, 5);
    timing bwt = read_bw(pool, threads, (size_t)1 << 30, 5);
    double peak = facet_measure_peak_gflops_format(pool, fmt);
    printf("shape %s format %s path %s threads %d: weights %.3f GB, read bandwidth %.1f GB/s "
           "(facet_measure_read_bandwidth), %.1f GB/s wall / %.1f GB/s CPU-time here; "
           "peak of the format's multiply-add %.1f GFLOP/s\n", argv[1], argv[2],
           facet_cpu_level_name(facet_cpu()->level), threads, bytes / 1e9, bw, bwt.wall, bwt.cpu, peak);

    /* decode: each repetition measures the read bandwidth (256 MiB stream) right before
     * the step, so every ratio compares two measurements taken moments apart */
    int decode_rows[] = {1, 8, 16};
    for (int d = 0; d < 3; d++) {
        int n = decode_rows[d];
        double rw[64], rc[64], tw[64], tc[64];
        int nr = reps < 64 ? reps : 64;
        for (int r = 0; r < nr; r++) {
            timing bb = read_bw(pool, threads, (size_t)256 << 20, 2);
            double w = now_s(), c = cpu_s();
            for (int i = 0; i < n_mats; i++) facet_matmul(pool, Y, X, &m[i], NULL, n);
            w = now_s() - w;
            c = (cpu_s() - c) / threads;
            tw[r] = n / w;
            tc[r] = n / c;
            rw[r] = bytes / w / 1e9 / bb.wall;
            rc[r] = bytes / c / 1e9 / bb.cpu;
        }
        printf("decode rows %2d (median of %d): wall %6.1f tok/s = %3.0f%% of the read bw measured "
               "just before | CPU-time %6.1f tok/s = %3.0f%% of CPU-time read bw\n", n, nr,
               facet_median(tw, nr), 100 * facet_median(rw, nr), facet_median(tc, nr), 100 * facet_median(rc, nr));
    }
    /* prefill: 256 rows through the layers (no lm_head: prefill wants one row of logits) */
    {
        int n = 256;
        timing b = {1e30, 1e30};
        for (int r = 0; r < (reps > 3 ? 3 : reps); r++) {
            double w = now_s(), c = cpu_s();
            for (int i = 0; i < n_mats - 1; i++) facet_matmul(pool, Y, X, &m[i], NULL, n);
            keep_best(&b, now_s() - w, (cpu_s() - c) / threads);
        }
        double gw = flops_tok * n / b.wall / 1e9, gc = flops_tok * n / b.cpu / 1e9;
        printf("prefill rows %d: wall %6.1f tok/s, %6.1f GFLOP/s = %3.0f%% of peak | CPU-time %6.1f "
               "tok/s, %6.1f GFLOP/s\n", n, n / b.wall, gw, 100 * gw / peak, n / b.cpu, gc);
    }
    free_all(pool, m, n_mats, X, Y);
    return 0;
}
