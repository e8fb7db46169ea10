/*
 * test_kernels_ssm.c — the state-space mixers' kernels.
 * facet_gemm_f32_acc (gemm_small.c), the small GEMM of Mamba-2's SSD scan: on every CPU
 * path this machine has, C += A B equals bit for bit the plain loop C[i][j] =
 * fmaf(A[i][p], B[p][j], C[i][j]) over p in order, for shapes that hit the full 4 x 64
 * tiles, the row remainders 1-3 and masked column tails, with leading dimensions wider
 * than the matrices; and it is within 1e-5 of a float64 product.
 * facet_ssm_scan16 (ssm_scan.c), Mamba-1's scan step over 16 channels: every path the
 * same bits, within 1e-5 of the float64 recurrence (exp from libm) over 64 steps.
 * facet_ssm_softplus (engine/ssm.c), the scans' vectorized softplus: within 3e-7 relative
 * of the float64 log1p(exp(x)) on [-30, 20], x itself past 20 (torch's threshold).
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
#include "engine/ssm.h"
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

static void test_scan16(void **state) {
    (void)state;
    enum { N = 16, V = 16, T = 64 };
    float a[N * V], h[N * V], h0[N * V], y[V], want_h[N * V], want_y[T][V];
    float dt[T][V], dx[T][V], B[T][N], C[T][N];
    double hd[N * V];
    uint32_t seed = 99;
    for (int i = 0; i < N * V; i++) {
        a[i] = -(float)(1 + i / V) * (1.0f + 0.1f * rnd(&seed)); /* A = -exp(A_log) */
        h0[i] = rnd(&seed);
        hd[i] = h0[i];
    }
    for (int t = 0; t < T; t++) {
        for (int c = 0; c < V; c++) {
            dt[t][c] = 0.05f * (1.0f + rnd(&seed)) + (t == 3 ? 10.0f : 0.0f); /* a -87 clamp */
            dx[t][c] = dt[t][c] * rnd(&seed);
        }
        for (int k = 0; k < N; k++) B[t][k] = rnd(&seed), C[t][k] = rnd(&seed);
    }
    for (int p = 0; p < TEST_N_CPU_PATHS; p++) {
        if (!test_cpu_path_set(p)) continue;
        memcpy(h, h0, sizeof h);
        for (int t = 0; t < T; t++) {
            facet_ssm_scan16(h, y, a, dt[t], dx[t], B[t], C[t], N);
            if (p == 0) memcpy(want_y[t], y, sizeof y);
            else if (memcmp(want_y[t], y, sizeof y))
                fail_msg("scan16 path %s step %d: y differs from the plain path", test_cpu_paths[p], t);
        }
        if (p == 0) memcpy(want_h, h, sizeof h);
        else if (memcmp(want_h, h, sizeof h))
            fail_msg("scan16 path %s: h differs from the plain path", test_cpu_paths[p]);
    }
    test_cpu_path_reset();
    for (int t = 0; t < T; t++) /* float64 with libm's exp */
        for (int c = 0; c < V; c++) {
            double yd = 0;
            for (int k = 0; k < N; k++) {
                double e = exp((double)a[k * V + c] * dt[t][c]);
                hd[k * V + c] = e * hd[k * V + c] + (double)dx[t][c] * B[t][k];
                yd += hd[k * V + c] * C[t][k];
            }
            assert_true(fabs(yd - want_y[t][c]) <= 1e-5 * (1.0 + fabs(yd)));
        }
}

static void test_softplus(void **state) {
    (void)state;
    enum { M = 1 << 16 };
    float *x = malloc(sizeof(float) * M);
    for (int i = 0; i < M; i++) x[i] = -30.0f + 60.0f * (float)i / M;
    x[0] = 0.0f, x[1] = -0.0f;
    facet_ssm_softplus(x, M);
    for (int i = 0; i < M; i++) {
        double v = i == 0 || i == 1 ? 0.0 : (double)(-30.0f + 60.0f * (float)i / M);
        double want = v > 20 ? v : log1p(exp(v));
        if (!(fabs(x[i] - want) <= 3e-7 * want))
            fail_msg("softplus(%.7g) = %.9g, want %.9g", v, x[i], want);
    }
    free(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_gemm_small_bits),
                                       cmocka_unit_test(test_scan16),
                                       cmocka_unit_test(test_softplus)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
