/*
 * test_kernels_gemm_small.c — facet_gemm_f32_acc (gemm_small.c), the small GEMM of
 * Mamba-2's SSD scan: on every CPU path this machine has, C += A B equals bit for bit the
 * plain loop C[i][j] = fmaf(A[i][p], B[p][j], C[i][j]) over p in order, for shapes that
 * hit the full 4 x 64 tiles, the row remainders 1-3 and masked column tails, with leading
 * dimensions wider than the matrices; and it is within 1e-5 of a float64 product.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu_paths.h"
#include "kernels/cpu/kernels.h"

static float rnd(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void test_gemm_small_bits(void **state) {
    (void)state;
    static const int shapes[][3] = {{64, 64, 128}, {16, 64, 7}, {7, 33, 128}, {3, 16, 1},
                                    {1, 80, 64},   {128, 64, 64}, {5, 130, 17}, {64, 64, 0}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
        size_t lda = (size_t)k + 3, ldb = (size_t)n + 5, ldc = (size_t)n + 2;
        float *A = malloc(sizeof(float) * (size_t)m * lda + 4);
        float *B = malloc(sizeof(float) * ((size_t)k + 1) * ldb);
        float *C0 = malloc(sizeof(float) * (size_t)m * ldc), *C = malloc(sizeof(float) * (size_t)m * ldc);
        float *want = malloc(sizeof(float) * (size_t)m * ldc);
        uint32_t seed = 7u + (uint32_t)si;
        for (size_t i = 0; i < (size_t)m * lda; i++) A[i] = rnd(&seed);
        for (size_t i = 0; i < (size_t)k * ldb; i++) B[i] = rnd(&seed);
        for (size_t i = 0; i < (size_t)m * ldc; i++) C0[i] = rnd(&seed);
        memcpy(want, C0, sizeof(float) * (size_t)m * ldc);
        for (int i = 0; i < m; i++)
            for (int p = 0; p < k; p++)
                for (int j = 0; j < n; j++)
                    want[i * ldc + j] = fmaf(A[i * lda + p], B[p * ldb + j], want[i * ldc + j]);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double d = C0[i * ldc + j];
                for (int p = 0; p < k; p++) d += (double)A[i * lda + p] * B[p * ldb + j];
                assert_true(fabs(d - want[i * ldc + j]) <= 1e-5 * (1.0 + fabs(d)));
            }
        FOR_EACH_CPU_PATH(path) {
            memcpy(C, C0, sizeof(float) * (size_t)m * ldc);
            facet_gemm_f32_acc(m, n, k, A, lda, B, ldb, C, ldc);
            if (memcmp(C, want, sizeof(float) * (size_t)m * ldc))
                fail_msg("path %s, m %d n %d k %d: differs from the fmaf loop",
                         test_cpu_paths[path], m, n, k);
        }
        test_cpu_path_reset();
        free(A);
        free(B);
        free(C0);
        free(C);
        free(want);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_gemm_small_bits)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
