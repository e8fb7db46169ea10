/* test_kernels_elementwise.c — the gated activations against float64 on every CPU path:
 * silu(g) * up = g / (1 + e^-g) * up (the vector e^x of the AVX-512 path included), over
 * ordinary, large, tiny and signed-zero inputs and lengths with and without a tail; and
 * the int8 activation quantizer, identical on every path and equal to the Q8_0 rule
 * computed here (ties to even, clamp, NaN, all-zero blocks). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "cpu_paths.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul_internal.h"

static uint64_t rng_state = 99;
static double urand(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}

static void check_silu(int n) {
    float *g = malloc(sizeof(float) * (size_t)n), *u = malloc(sizeof(float) * (size_t)n);
    float *g0 = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++) {
        double mag = i % 7 == 0 ? 120.0 : i % 5 == 0 ? 1e-6 : 12.0;
        g0[i] = g[i] = (float)(urand() * mag);
        u[i] = (float)urand();
    }
    if (n > 3) {
        g0[0] = g[0] = -0.0f;
        g0[1] = g[1] = -104.5f; /* e^-104.5: below the smallest float */
        g0[2] = g[2] = 88.0f;
    }
    facet_gated_act(g, u, n, 0);
    for (int i = 0; i < n; i++) {
        double x = g0[i], want = x / (1.0 + exp(-x)) * u[i];
        double err = fabs(g[i] - want);
        if (err > 4e-7 * fabs(want) + 1e-30)
            fail_msg("%s n %d i %d: silu(%.9g) * %.9g = %.9g, float64 %.9g",
                     facet_cpu_level_name(facet_cpu()->level), n, i, g0[i], u[i], g[i], want);
    }
    free(g);
    free(u);
    free(g0);
}

/* gelu_pytorch_tanh: within 1e-6 of |g u| of the float64 0.5 g (1 + tanh(u)) (the
 * scalar path's 1 + tanhf(u) cancels for negative g, so the bound is on the input's
 * scale, not the result's) */
static void check_gelu_tanh(int n) {
    float *g = malloc(sizeof(float) * (size_t)n), *u = malloc(sizeof(float) * (size_t)n);
    float *g0 = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++) {
        double mag = i % 7 == 0 ? 60.0 : i % 5 == 0 ? 1e-6 : 6.0;
        g0[i] = g[i] = (float)(urand() * mag);
        u[i] = (float)urand();
    }
    if (n > 3) {
        g0[0] = g[0] = -0.0f;
        g0[1] = g[1] = -3.0e13f; /* g^3 overflows float: the product is -0 */
        g0[2] = g[2] = 3.0e13f;
    }
    facet_gated_act(g, u, n, 1);
    for (int i = 0; i < n; i++) {
        double x = g0[i], c = 0.7978845608028654;
        double want = 0.5 * x * (1.0 + tanh(c * (x + 0.044715 * x * x * x))) * u[i];
        if (!(fabs(g[i] - want) <= 1e-6 * fabs(x * u[i]) + 1e-30))
            fail_msg("%s n %d i %d: gelu_tanh(%.9g) * %.9g = %.9g, float64 %.9g",
                     facet_cpu_level_name(facet_cpu()->level), n, i, g0[i], u[i], g[i], want);
    }
    free(g);
    free(u);
    free(g0);
}

static void test_gelu_tanh_paths(void **state) {
    (void)state;
    FOR_EACH_CPU_PATH(p) {
        check_gelu_tanh(1);
        check_gelu_tanh(16);
        check_gelu_tanh(37);
        check_gelu_tanh(3072);
    }
    test_cpu_path_reset();
}

/* The ungated activation (facet_act_row: GPT-2's gelu_new, NeoX's gelu, silu) is the
 * gated one with up = 1 bit for bit on every CPU path (the same vector e^x for whole
 * groups of 16, libm for the rest), so the float64 bounds above hold for it too; and a
 * row split at a multiple of 16 (ffn_dense's per-thread ranges) changes no bit. */
static void test_act_row_paths(void **state) {
    (void)state;
    FOR_EACH_CPU_PATH(p) {
        for (int act = 0; act <= 3; act++) {
            int n = 3072 + 37;
            float *x = malloc(sizeof(float) * (size_t)n), *g = malloc(sizeof(float) * (size_t)n);
            float *one = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
            for (int i = 0; i < n; i++) {
                x[i] = g[i] = y[i] = (float)(urand() * (i % 7 == 0 ? 30.0 : 5.0));
                one[i] = 1.0f;
            }
            facet_act_row(x, n, act);
            facet_gated_act(g, one, n, act);
            assert_memory_equal(x, g, sizeof(float) * (size_t)n);
            facet_act_row(y, 1024, act); /* two ranges, as two threads take the row */
            facet_act_row(y + 1024, n - 1024, act);
            assert_memory_equal(x, y, sizeof(float) * (size_t)n);
            free(x);
            free(g);
            free(one);
            free(y);
        }
    }
    test_cpu_path_reset();
}

static void test_silu_paths(void **state) {
    (void)state;
    FOR_EACH_CPU_PATH(p) {
        check_silu(1);
        check_silu(16);
        check_silu(37);
        check_silu(3072);
    }
    test_cpu_path_reset();
}

/* The rule written out: scale = max|x| / 127, q = round-half-even(x * (127 / max|x|)),
 * clamped to [-127, 127], NaN -> -127, NaN never the max; corr = -128 * sum(q). */
static void q8_model(const float *x, int8_t *q, float *scale, int32_t *corr) {
    float amax = 0.0f;
    for (int i = 0; i < 32; i++)
        if (fabsf(x[i]) > amax) amax = fabsf(x[i]);
    float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    for (int i = 0; i < 32; i++) {
        float p = x[i] * id, r = floorf(p);
        float d = p - r;
        if (d > 0.5f || (d == 0.5f && fmodf(r, 2.0f) != 0.0f)) r += 1.0f;
        int v = isnan(p) ? -127 : r > 127.0f ? 127 : r < -127.0f ? -127 : (int)r;
        q[i] = (int8_t)v;
        sum += v;
    }
    *scale = amax / 127.0f;
    *corr = -128 * sum;
}

static void test_q8_quantize_paths(void **state) {
    (void)state;
    enum { N = 32 * 9 };
    float x[N];
    for (int i = 0; i < N; i++) x[i] = (float)(urand() * (i < 64 ? 3.0 : 1e-3));
    for (int i = 64; i < 96; i++) x[i] = 0.0f;            /* an all-zero block          */
    x[96] = NAN;                                           /* a NaN: -127, never the max */
    for (int i = 128; i < 160; i++) x[i] = (float)(i - 144) * 0.5f * (127.0f / 8.0f) / 127.0f * 8.0f;
    x[200] = INFINITY;                                     /* inf: the max; others -> 0  */
    FOR_EACH_CPU_PATH(p) {
        int8_t q[N], wq[32];
        float sc[N / 32], wsc;
        int32_t co[N / 32], wco;
        facet_q8_quantize_row(x, N, q, sc, co);
        for (int b = 0; b < N / 32; b++) {
            q8_model(x + b * 32, wq, &wsc, &wco);
            for (int i = 0; i < 32; i++)
                if (q[b * 32 + i] != wq[i])
                    fail_msg("%s block %d i %d: x %.9g -> %d, rule %d", test_cpu_paths[p], b, i,
                             x[b * 32 + i], q[b * 32 + i], wq[i]);
            assert_true(sc[b] == wsc || (isnan(sc[b]) && isnan(wsc)));
            assert_int_equal(co[b], wco);
        }
    }
    test_cpu_path_reset();
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_silu_paths), cmocka_unit_test(test_gelu_tanh_paths),
                                       cmocka_unit_test(test_act_row_paths),
                                       cmocka_unit_test(test_q8_quantize_paths)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
