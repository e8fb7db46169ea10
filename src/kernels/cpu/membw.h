/*
 * membw.h — machine ceilings for reporting results as fractions of them
 * (DESIGN.md, "Performance method").
 */
#ifndef FACET_KERNELS_MEMBW_H
#define FACET_KERNELS_MEMBW_H

#include <stddef.h>

#include "kernels/cpu/threadpool.h"

/*
 * Read-only streaming bandwidth in GB/s (1e9 bytes/s): every thread of `pool` sums its
 * share of a `bytes`-sized buffer with wide loads, best of `reps` passes. The buffer is
 * allocated the way facet allocates weights (malloc, page-aligned, madvise(HUGEPAGE)
 * where available) and touched once before timing. Returns 0 on allocation failure.
 */
double facet_measure_read_bandwidth(facet_pool *pool, size_t bytes, int reps);

/* STREAM-style triad a[i] = b[i] + s * c[i] over three arrays of `bytes` each, counted
 * as 3 x bytes moved per pass, best of `reps`; GB/s. */
double facet_measure_triad_bandwidth(facet_pool *pool, size_t bytes, int reps);

/* Peak float32 FMA rate in GFLOP/s (2 flops per FMA) with independent accumulator
 * chains on every thread of `pool`, at the kernel level in use (cpu_features.h). */
double facet_measure_peak_gflops(facet_pool *pool);

/* Peak multiply-add rate of the instruction the matmul kernel of `format` is built on,
 * in GFLOP/s (2 ops per multiply-add): vdpbf16ps for bf16 where the CPU has AVX512-BF16,
 * vpdpbusd (AVX512-VNNI) or maddubs+madd (AVX2) for int8 and q4 (integer ops counted as flops),
 * the float32 FMA otherwise (f32, f16, bf16 without AVX512-BF16). */
#include "kernels/cpu/kernels.h"
double facet_measure_peak_gflops_format(facet_pool *pool, facet_wformat format);

#endif
