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
 * chains on every thread of `pool`. */
double facet_measure_peak_gflops(facet_pool *pool);

#endif
