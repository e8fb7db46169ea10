/*
 * quant_dot_bench.c — decode-shaped throughput of one GGUF block type's dot kernel
 * (quant_k*.c, quant_legacy*.c): a random ROWS x K matrix of the type (far larger than the caches)
 * times one Q8_K activation row, every dot path the CPU has, on 1..T threads (each thread a contiguous
 * share of the rows), against the read bandwidth ceiling measured the same way
 * (membw.c). Prints, per path and thread count, the best of REPS passes as GB/s of
 * weight bytes and the fraction of the ceiling.
 *
 *   quant_dot_bench [TYPE=Q4_K] [K=4096] [MB=256] [T=2] [REPS=7] [PATH=all] [INNER=1] [NR=1]
 *
 * PATH (scalar, avx2, avx512, avx512vnni) runs that path only. INNER > 1 repeats the pass INNER
 * times per timing: with a matrix that fits the cache (MB=0.5) that times the kernel's
 * own speed rather than memory's. NR (1..4) activation rows per weight row, as a prefill
 * runs them: through the path's several-row dot where the type has one (quant.h dotx_*),
 * else the single-row dot NR times; GB/s then counts the weight bytes NR times.
 *
 * Built by CMake with the rest: BUILD/quant_dot_bench.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/membw.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/threadpool.h"

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

typedef struct {
    facet_qdot_fn fn;
    facet_qdotx_fn fnx; /* NR > 1: several activation rows per weight row, when the path has it */
    int nr;
    size_t xstride;
    const uint8_t *W;
    size_t row_bytes;
    int K, rows, nt, inner;
    const void *x;
    float *y;
} job;

static void run_share(void *ctx, int task, int thread) {
    (void)thread;
    job *j = ctx;
    int r0 = (int)((long)j->rows * task / j->nt), r1 = (int)((long)j->rows * (task + 1) / j->nt);
    float s[FACET_QDOTX_MAX];
    for (int k = 0; k < j->inner; k++)
        for (int r = r0; r < r1; r++) {
            const uint8_t *w = j->W + (size_t)r * j->row_bytes;
            if (j->nr == 1) j->fn(j->K, &j->y[r], w, j->x);
            else if (j->fnx) j->fnx(j->K, j->nr, s, w, j->x, j->xstride), j->y[r] = s[0];
            else
                for (int a = 0; a < j->nr; a++)
                    j->fn(j->K, &s[a], w, (const uint8_t *)j->x + a * j->xstride), j->y[r] = s[0];
        }
}

int main(int argc, char **argv) {
    const char *tname = argc > 1 ? argv[1] : "Q4_K";
    int K = argc > 2 ? atoi(argv[2]) : 4096;
    double mb = argc > 3 ? atof(argv[3]) : 256;
    int T = argc > 4 ? atoi(argv[4]) : 2, reps = argc > 5 ? atoi(argv[5]) : 7;
    const char *only = argc > 6 && strcmp(argv[6], "all") ? argv[6] : NULL;
    int inner = argc > 7 ? atoi(argv[7]) : 1, nr = argc > 8 ? atoi(argv[8]) : 1;
    if (nr < 1 || nr > FACET_QDOTX_MAX) nr = 1;
    const facet_qtype_traits *const ktypes[] = {&facet_qt_q2_K, &facet_qt_q3_K, &facet_qt_q4_K,
                                                &facet_qt_q5_K, &facet_qt_q6_K, &facet_qt_iq4_xs,
                                                &facet_qt_q4_0, &facet_qt_q4_1, &facet_qt_q5_0,
                                                &facet_qt_q5_1, &facet_qt_q8_0, &facet_qt_iq4_nl};
    const facet_qtype_traits *t = NULL;
    for (size_t i = 0; i < sizeof ktypes / sizeof ktypes[0]; i++)
        if (!strcmp(ktypes[i]->name, tname)) t = ktypes[i];
    if (!t || K % t->block || mb <= 0 || T < 1) {
        fprintf(stderr, "usage: quant_dot_bench [TYPE] [K multiple of the block] [MB] [T] [REPS]\n");
        return 1;
    }
    size_t row_bytes = (size_t)(K / t->block) * t->block_bytes;
    int rows = (int)(mb * (1 << 20) / row_bytes);
    size_t bytes = row_bytes * rows;
    uint8_t *W = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    /* random bytes; the f16 scale fields are random too: whatever they hold, the kernels
     * do the same work (a NaN or inf in the sums does not slow integer code) */
    uint64_t s = 88172645463325252ull;
    for (size_t i = 0; i < bytes; i += 8) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        memcpy(W + i, &s, bytes - i < 8 ? bytes - i : 8);
    }
    float *xf = malloc(sizeof(float) * K), *y = malloc(sizeof(float) * rows);
    for (int i = 0; i < K; i++) xf[i] = (float)((i * 7919) % 255 - 127) / 64.0f;
    /* the activation blocks the type's dot reads (Q8_K, or Q8_0 / Q8_1 for the 32-element
     * types) */
    size_t xstride = facet_qx_block_bytes(t->xkind) * (size_t)(K / facet_qx_block(t->xkind));
    void *xq = malloc(xstride * FACET_QDOTX_MAX);
    for (int a = 0; a < FACET_QDOTX_MAX; a++)
        facet_quantize_row_qx(t->xkind, xf, (uint8_t *)xq + a * xstride, K);

    const facet_cpu_info *c = facet_cpu();
    struct {
        const char *name;
        facet_qdot_fn fn;
        facet_qdotx_fn fnx;
    } paths[4] = {{"scalar", t->dot_scalar, NULL}};
    int np = 1;
    if (c->detected >= FACET_CPU_AVX2 && t->dot_avx2)
        paths[np].name = "avx2", paths[np].fnx = t->dotx_avx2, paths[np++].fn = t->dot_avx2;
    if (c->detected >= FACET_CPU_AVX512 && t->dot_avx512)
        paths[np].name = "avx512", paths[np].fnx = NULL, paths[np++].fn = t->dot_avx512;
    if (c->avx512_vnni && t->dot_avx512vnni)
        paths[np].name = "avx512vnni", paths[np].fnx = t->dotx_avx512vnni, paths[np++].fn = t->dot_avx512vnni;

    printf("%s K=%d rows=%d: %.1f MB of weights\n", t->name, K, rows, bytes / 1e6);
    for (int nt = 1; nt <= T; nt++) {
        facet_pool *pool = facet_pool_create(nt);
        double bw = only ? 0 : facet_measure_read_bandwidth(pool, bytes, reps);
        printf("threads %d: read ceiling %.1f GB/s\n", nt, bw);
        for (int p = 0; p < np; p++) {
            if (only && strcmp(only, paths[p].name)) continue;
            job j = {paths[p].fn, paths[p].fnx, nr, xstride, W, row_bytes, K, rows, nt, inner, xq, y};
            double best = 1e30, best_cpu = 1e30;
            for (int r = 0; r < reps; r++) {
                double t0 = now_s(), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
                facet_pool_run(pool, nt, run_share, &j);
                double dt = now_s() - t0, dc = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
                if (dt < best) best = dt;
                if (dc < best_cpu) best_cpu = dc;
            }
            double moved = (double)bytes * inner * nr;
            printf("  %-11s %7.2f ms  %6.1f GB/s  %5.1f%% of ceiling", paths[p].name, best * 1e3,
                   moved / best / 1e9, 100 * moved / best / 1e9 / bw);
            /* one thread: the calling thread's CPU time too, which a loaded machine's
             * other processes do not inflate (the kernel's own speed) */
            if (nt == 1) printf("  (cpu time: %.1f GB/s)", moved / best_cpu / 1e9);
            printf("\n");
        }
        facet_pool_free(pool);
    }
    free(W), free(xf), free(y), free(xq);
    return 0;
}
