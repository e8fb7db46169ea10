/*
 * cpu_paths.h — for kernel unit tests: run a body on every CPU path this machine has,
 * forcing each with FACET_CPU (scalar, avx2, avx512; cpu_features.h), then restore the
 * detected path.
 */
#ifndef FACET_TESTS_CPU_PATHS_H
#define FACET_TESTS_CPU_PATHS_H

#include <stdlib.h>

#include "kernels/cpu/cpu_features.h"

static const char *const test_cpu_paths[] = {"scalar", "avx2", "avx512"};
#define TEST_N_CPU_PATHS 3

/* Force path name (FACET_CPU=name). */
static inline void test_cpu_path_force(const char *name) {
    setenv("FACET_CPU", name, 1);
    facet_cpu_refresh();
}

/* Force path i of test_cpu_paths; 0 (nothing changed) when this CPU lacks it. */
static inline int test_cpu_path_set(int i) {
    if ((int)facet_cpu()->detected < i) return 0;
    test_cpu_path_force(test_cpu_paths[i]);
    return 1;
}

/* Back to the detected path. */
static inline void test_cpu_path_reset(void) {
    unsetenv("FACET_CPU");
    facet_cpu_refresh();
}

/* for each path p the CPU has, forced: FOR_EACH_CPU_PATH(p) { ... } test_cpu_path_reset(); */
#define FOR_EACH_CPU_PATH(p) \
    for (int p = 0; p < TEST_N_CPU_PATHS; p++) \
        if (test_cpu_path_set(p))

#endif
