/*
 * ukernel_gen.h — helpers for writing micro-kernels: target attributes for the SIMD
 * paths (so one binary built without -march still carries every path) and switch cases
 * that instantiate a kernel body for each constant tile shape (rows MR x panels NP), so
 * the compiler keeps the accumulators of each shape in registers.
 */
#ifndef FACET_KERNELS_UKERNEL_GEN_H
#define FACET_KERNELS_UKERNEL_GEN_H

#define FACET_TGT_AVX2 __attribute__((target("avx2,fma,f16c")))
#define FACET_TGT_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")))
#define FACET_TGT_AVX512BF16 \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#define FACET_TGT_AVX512VNNI \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#define FACET_INLINE static inline __attribute__((always_inline))

/* case labels for mr in 1..MR, np in 1..NP: B(mr, np) is the call */
#define FACET_UK_KEY(mr, np) ((mr) * 8 + (np))
#define FACET_UK_NP1(B, M) case FACET_UK_KEY(M, 1): B(M, 1); return;
#define FACET_UK_NP2(B, M) FACET_UK_NP1(B, M) case FACET_UK_KEY(M, 2): B(M, 2); return;
#define FACET_UK_NP4(B, M) \
    FACET_UK_NP2(B, M) case FACET_UK_KEY(M, 3): B(M, 3); return; case FACET_UK_KEY(M, 4): B(M, 4); return;
#define FACET_UK_MR2(NPS, B) NPS(B, 1) NPS(B, 2)
#define FACET_UK_MR4(NPS, B) FACET_UK_MR2(NPS, B) NPS(B, 3) NPS(B, 4)
#define FACET_UK_MR6(NPS, B) FACET_UK_MR4(NPS, B) NPS(B, 5) NPS(B, 6)
#define FACET_UK_MR8(NPS, B) FACET_UK_MR6(NPS, B) NPS(B, 7) NPS(B, 8)
#define FACET_UK_NP3(B, M) FACET_UK_NP2(B, M) case FACET_UK_KEY(M, 3): B(M, 3); return;

/* the common micro-kernel parameter list (facet_ukernel_fn) */
#define FACET_UK_PARAMS                                                                  \
    const facet_xprep *x, int r0, int mr, const uint8_t *W, size_t pb, int np, int k0,   \
        int k1, float *tile, int ld, int accumulate
#define FACET_UK_ARGS x, r0, W, pb, k0, k1, tile, ld, accumulate

#endif
