/*
 * attn_bench.c — facet_attention_causal alone: one head, n_q queries at positions
 * 0..n_q-1 (a prefill), random keys and values in a cache of the given type, one thread.
 * Prints the best of REPS calls as GFLOP/s over the causal work (4 x head_dim flops per
 * query-key pair) and a hash of the output bits (unchanged by a change that keeps each
 * query's arithmetic).
 *
 *   attn_bench [N_Q=512] [HEAD_DIM=128] [KV=1: 0 f32, 1 bf16, 2 f16] [REPS=20]
 *
 * Built by CMake with the rest: BUILD/attn_bench.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu/kernels.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static float urand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / (float)(1u << 24) - 0.5f;
}

int main(int argc, char **argv) {
    int nq = argc > 1 ? atoi(argv[1]) : 512, hd = argc > 2 ? atoi(argv[2]) : 128;
    int kt = argc > 3 ? atoi(argv[3]) : 1, reps = argc > 4 ? atoi(argv[4]) : 20;
    if (nq < 1 || hd < 2 || hd % 2 || kt < 0 || kt > 2 || reps < 1) {
        fprintf(stderr, "usage: attn_bench [N_Q] [HEAD_DIM (even)] [KV 0|1|2] [REPS]\n");
        return 1;
    }
    facet_kv_type t = kt == 0 ? FACET_KV_F32 : kt == 1 ? FACET_KV_BF16 : FACET_KV_F16;
    size_t el = t == FACET_KV_F32 ? 4 : 2, qs = (size_t)hd * 16; /* q rows of 16 heads */
    size_t n_kv = (size_t)(nq + 15) / 16 * 16 * hd;
    float *q = malloc(sizeof(float) * nq * qs), *out = malloc(sizeof(float) * nq * qs);
    float *kf = malloc(sizeof(float) * n_kv), *vf = malloc(sizeof(float) * n_kv);
    void *K = malloc(el * n_kv), *V = malloc(el * n_kv);
    int *pos = malloc(sizeof(int) * nq);
    float *scratch = malloc(sizeof(float) * FACET_ATTN_SCRATCH(nq, hd));
    if (!q || !out || !kf || !vf || !K || !V || !pos || !scratch) return 1;
    unsigned seed = 1;
    for (size_t i = 0; i < (size_t)nq * qs; i++) q[i] = 2 * urand(&seed);
    for (size_t i = 0; i < n_kv; i++) {
        kf[i] = 2 * urand(&seed);
        vf[i] = urand(&seed);
    }
    if (t == FACET_KV_BF16) facet_kv_round(q, t, (int)(nq * qs)); /* as the forward pass */
    facet_kv_store(kf, t, K, (int)n_kv);
    facet_kv_store(vf, t, V, (int)n_kv);
    for (int i = 0; i < nq; i++) pos[i] = i;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        facet_attention_causal(q, qs, pos, nq, K, V, t, (size_t)hd, hd, 0.088f, out, qs, scratch);
        double d = now_s() - t0;
        if (d < best) best = d;
    }
    unsigned h = 0;
    for (int i = 0; i < nq; i++)
        for (int d = 0; d < hd; d++) {
            unsigned u;
            memcpy(&u, &out[(size_t)i * qs + d], 4);
            h = h * 31 + u;
        }
    double flops = 0;
    for (int i = 0; i < nq; i++) flops += 4.0 * hd * (pos[i] + 1);
    printf("n_q %d head_dim %d kv %s: %.3f ms, %.1f GFLOP/s, output hash %08x\n", nq, hd,
           facet_kv_type_name(t), best * 1e3, flops / best / 1e9, h);
    return 0;
}
