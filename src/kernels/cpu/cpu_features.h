/*
 * cpu_features.h — which SIMD kernel paths this CPU can run, chosen at run time so one
 * binary (even one built without -march) runs on AVX2-only and AVX-512 machines.
 *
 * The level is detected once (cpuid) and may be lowered, never
 * raised, with the environment variable FACET_CPU:
 *   FACET_CPU=scalar   portable C kernels only
 *   FACET_CPU=avx2     AVX2 + FMA + F16C kernels (the fallback for machines without AVX-512)
 *   FACET_CPU=avx512   AVX-512 kernels (BF16 / VNNI instructions where the CPU has them)
 * Unset or any other value: the best level the CPU supports (facet_cpu_note says why a
 * value did not take effect; the CLI prints it).
 */
#ifndef FACET_KERNELS_CPU_FEATURES_H
#define FACET_KERNELS_CPU_FEATURES_H

typedef enum facet_cpu_level {
    FACET_CPU_SCALAR = 0,
    FACET_CPU_AVX2 = 1,   /* avx2 + fma + f16c                                        */
    FACET_CPU_AVX512 = 2, /* avx512f + bw + vl + dq                                    */
} facet_cpu_level;

typedef struct facet_cpu_info {
    facet_cpu_level level;  /* the level in use (detected, lowered by FACET_CPU)         */
    facet_cpu_level detected; /* the best level the CPU supports                        */
    int avx512_bf16;        /* vdpbf16ps usable at the level in use                      */
    int avx512_vnni;        /* vpdpbusd usable at the level in use                       */
} facet_cpu_info;

/* The CPU's kernel level and extensions, detected on first call (thread-safe). */
const facet_cpu_info *facet_cpu(void);

/* Re-read FACET_CPU (for tests that run every path in one process). Not thread-safe
 * with kernels running concurrently. */
void facet_cpu_refresh(void);

/* "scalar", "avx2", "avx512". */
const char *facet_cpu_level_name(facet_cpu_level l);

#endif
