/*
 * q8_ukernel_bench.c — the int8 micro-kernel alone, one thread, on weights that stay in
 * cache: G groups of NP panels (16 outputs each) over K inputs, row tiles of MR rows
 * cycling through 64 prepared rows, as a prefill task's later tiles run. Prints GOP/s
 * (2 per multiply-add) of the best of 15 timings; the vpdpbusd peak of one core is what
 * `facet bench` prints for int8 divided by the threads.
 *
 *   q8_ukernel_bench [K=1024] [MR=4] [NP=2] [G=8]
 *
 * Built by CMake with the rest: BUILD/q8_ukernel_bench.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul_internal.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int K = argc > 1 ? atoi(argv[1]) : 1024, mr = argc > 2 ? atoi(argv[2]) : 4;
    int np = argc > 3 ? atoi(argv[3]) : 2, G = argc > 4 ? atoi(argv[4]) : 8, rows = 64;
    const facet_ukernel *uk = facet_ukernel_select(FACET_WF_Q8);
    if (K < 32 || K % 32 || mr < 1 || mr > uk->mr || np < 1 || np > uk->np || G < 1) {
        fprintf(stderr, "usage: q8_ukernel_bench [K (multiple of 32)] [MR 1..%d] [NP 1..%d] [G]\n",
                uk->mr, uk->np);
        return 1;
    }
    int nblk = K / 32;
    size_t pb = (size_t)nblk * FACET_Q8_PBLOCK;
    uint8_t *W = aligned_alloc(64, (pb * np * G + 63) / 64 * 64);
    int8_t *xq = aligned_alloc(64, (size_t)rows * K);
    float *xs = malloc(sizeof(float) * rows * nblk);
    int32_t *xc = malloc(sizeof(int32_t) * rows * nblk);
    if (!W || !xq || !xs || !xc) return 1;
    unsigned s = 1;
    for (size_t i = 0; i < pb * np * G; i++) W[i] = (uint8_t)((s = s * 1664525u + 1013904223u) >> 24);
    for (int p = 0; p < np * G; p++) /* f16 scales of 1.0 */
        for (int b = 0; b < nblk; b++) {
            uint16_t *sc = (uint16_t *)(W + p * pb + (size_t)b * FACET_Q8_PBLOCK + 512);
            for (int l = 0; l < 16; l++) sc[l] = 0x3C00;
        }
    for (int i = 0; i < rows * K; i++) xq[i] = (int8_t)((int)((s = s * 1664525u + 1013904223u) >> 24) % 200 - 100);
    for (int i = 0; i < rows * nblk; i++) {
        xs[i] = 0.01f;
        xc[i] = -640;
    }
    facet_xprep x = {(const uint8_t *)xq, (size_t)K, xs, xc, nblk};
    _Alignas(64) float tile[8 * FACET_TILE_LD];
    int reps = 20000 / G;
    double best = 1e30;
    for (int t = 0; t < 15; t++) {
        double t0 = now_s();
        for (int r = 0; r < reps; r++) {
            int r0 = 4 + (r % 8) * mr; /* a later tile (r0 > 0): no streaming prefetch */
            if (r0 + mr > rows) r0 = 4;
            for (int g = 0; g < G; g++)
                uk->fn(&x, r0, mr, W + (size_t)g * np * pb, pb, np, 0, K, tile, FACET_TILE_LD, 0);
        }
        double d = now_s() - t0;
        if (d < best) best = d;
    }
    double ops = 2.0 * mr * np * 16 * K * (double)reps * G;
    printf("%s K %d MR %d NP %d G %d (%zu KiB of weights): %.1f GOP/s on one thread\n", uk->name,
           K, mr, np, G, pb * np * G / 1024, ops / best / 1e9);
    return 0;
}
