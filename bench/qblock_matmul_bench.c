/*
 * qblock_matmul_bench.c — facet_matmul on one GGUF K-type matrix (matmul_qblock.c's
 * driver and the type's dot) for ONE activation row, as a decode step runs it: ROWS x 1024
 * random Q6_K or Q4_K blocks (finite f16 scales), one thread, the best of 5 timings of
 * REPS calls each in thread CPU time (so a loaded machine's waiting does not count).
 * Prints ns per weight row and GB/s of weight bytes. ROWS 600 keeps the matrix in L2
 * (driver + kernel cost); ROWS 151936 is Qwen3-0.6B's tied embedding streamed from memory.
 *
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc bench/qblock_matmul_bench.c \
 *       build/libfacet.a -lpthread -lm -o build/qblock_matmul_bench
 *   build/qblock_matmul_bench q6|q4k ROWS REPS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu/kernels.h"

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s q6|q4k ROWS REPS\n", argv[0]);
        return 2;
    }
    int q6 = !strcmp(argv[1], "q6"), rows = atoi(argv[2]), reps = atoi(argv[3]), cols = 1024;
    if (rows < 1 || reps < 1) return 2;
    size_t bb = q6 ? 210 : 144, wrow = (size_t)cols / 256 * bb;
    uint8_t *w = malloc(wrow * rows);
    float *x = malloc(sizeof(float) * cols), *y = malloc(sizeof(float) * rows);
    if (!w || !x || !y) return 1;
    for (size_t i = 0; i < wrow * rows; i++) w[i] = (uint8_t)rand();
    const uint16_t h = 0x2000; /* f16 0.0078: every block's d (and Q4_K's dmin) finite */
    for (size_t b = 0; b < (size_t)rows * cols / 256; b++) {
        memcpy(w + b * bb + (q6 ? 208 : 0), &h, 2);
        if (!q6) memcpy(w + b * bb + 2, &h, 2);
    }
    for (int i = 0; i < cols; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
    facet_wtensor W = {q6 ? FACET_WF_GGUF_Q6_K : FACET_WF_GGUF_Q4_K, rows, cols, w, NULL, 1};
    double best = 1e30;
    for (int k = 0; k < 5; k++) {
        double t0 = cpu_s();
        for (int r = 0; r < reps; r++) facet_matmul(NULL, y, x, &W, NULL, 1);
        double t = (cpu_s() - t0) / reps;
        if (t < best) best = t;
    }
    printf("%s rows %d: %.1f ns/row  %.2f GB/s  (y[0] = %g)\n", argv[1], rows, best / rows * 1e9,
           (double)wrow * rows / best / 1e9, y[0]);
    free(w);
    free(x);
    free(y);
    return 0;
}
