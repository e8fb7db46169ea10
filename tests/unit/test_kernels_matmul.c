/* test_kernels_matmul.c — weight formats and facet_matmul on every CPU path.
 *
 * Oracles are computed here in float64 from this file's own model of each format (its
 * own round-to-nearest-even for bf16 and f16 written from the IEEE 754 definitions, and
 * the Q8_0 block rule: scale = max|v| / 127 stored as f16, q = round_even(v / scale)):
 *   - tight: Y equals sum(x' * w') (+ bias) of the format-rounded operands up to float32
 *     accumulation error, |err| <= (K + 2) * 2^-24 * sum|x' * w'|;
 *   - format precision: against the unrounded float32 operands the error stays within the
 *     format's bound: bf16 2^-8 relative per weight (2^-9 each for weight and activation
 *     on the vdpbf16ps path), f16 2^-11, int8 half a quantization step per element:
 *     sum(|x| dw + |w| dx + dw dx) with dw <= max|w_block| / 254 * (1 + 2^-10); q4 (the
 *     q4 quantizer's definition, matmul_internal.h, written again here; its activations
 *     as int8's) per block ||x||_2 ||dw||_2 + sum |w'| dx, where the chosen scale's error
 *     is at most that of the candidate m / -8: ||dw||_2 <= sqrt(32) max|w_block| / 8
 *     * (1 + 2^-9).
 * Every path (FACET_CPU=scalar, avx2, avx512 where the CPU has it) runs each case; rows
 * are checked to be bit-identical whatever the batch size, and paths that compute the
 * same operations in the same order (f32, f16, int8 everywhere; bf16 scalar vs AVX2) are
 * checked to agree bit for bit. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu_paths.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul_internal.h"
#include "util/error.h"

/* ---- this test's own format model ---- */

static float round_bits(double v, int mant_bits, int min_exp) {
    /* round v to a binary float with mant_bits of fraction, exponent >= min_exp (subnormals
     * below), ties to even (nearbyint in the default rounding mode) */
    if (v == 0 || !isfinite(v)) return (float)v;
    int e;
    frexp(v, &e); /* v = m * 2^e, 0.5 <= |m| < 1 */
    e -= 1;       /* v = 1.f * 2^e */
    if (e < min_exp) e = min_exp;
    double q = ldexp(1.0, e - mant_bits);
    return (float)(nearbyint(v / q) * q);
}
static float model_bf16(float v) { return round_bits(v, 7, -126); }
static float model_f16(float v) {
    float r = round_bits(v, 10, -14);
    return fabsf(r) > 65504.0f ? (r > 0 ? INFINITY : -INFINITY) : r;
}
/* one Q8_0 block of 32 (weights: f16 scale) */
static void model_q8_w(const float *v, float *out) {
    float amax = 0;
    for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(v[i]));
    float d = model_f16(amax / 127.0f);
    for (int i = 0; i < 32; i++) {
        float q = d > 0 ? nearbyintf(v[i] / d) : 0;
        q = q > 127 ? 127 : q < -127 ? -127 : q;
        out[i] = q * d;
    }
}
/* activations: float32 scale amax / 127, q = round_even(x * (127 / amax)) */
static void model_q8_x(const float *v, float *out) {
    float amax = 0;
    for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(v[i]));
    float id = amax > 0 ? 127.0f / amax : 0, d = amax / 127.0f;
    for (int i = 0; i < 32; i++) {
        float q = nearbyintf(v[i] * id);
        q = q > 127 ? 127 : q < -127 ? -127 : q;
        out[i] = q * d;
    }
}

/* one q4 block of 32 weights: the candidates d = f16(m / c) and their least-squares
 * refits, codes clamp(round_even(w * (1 / d)), -8, 7), the first smallest squared error
 * wins; the dequantized values d * code into out, the scale into *dout */
static void model_q4_w_d(const float *v, float *out, float *dout) {
    static const float cand[] = {-9.0f, -8.5f, -8.0f, -7.5f, -7.0f, 7.0f, 7.5f, 8.0f};
    float m = 0, bq[32] = {0}, bd = 0;
    for (int i = 0; i < 32; i++)
        if (fabsf(v[i]) > fabsf(m)) m = v[i];
    double best = INFINITY;
    for (int c = 0; m != 0 && c < 8; c++) {
        float d = model_f16(m / cand[c]);
        for (int pass = 0; pass < 2; pass++) {
            float q[32], id = d != 0 ? 1.0f / d : 0;
            double e = 0, swq = 0, sqq = 0;
            for (int i = 0; i < 32; i++) {
                float t = v[i] * id;
                q[i] = nearbyintf(t < -8 ? -8 : t > 7 ? 7 : t);
                e += ((double)v[i] - (double)d * q[i]) * ((double)v[i] - (double)d * q[i]);
                swq += (double)v[i] * q[i];
                sqq += (double)q[i] * q[i];
            }
            if (e < best) {
                best = e;
                bd = d;
                memcpy(bq, q, sizeof q);
            }
            if (pass == 1 || sqq == 0) break;
            d = model_f16((float)(swq / sqq));
            if (!isfinite(d)) break;
        }
    }
    for (int i = 0; i < 32; i++) out[i] = bq[i] * bd;
    if (dout) *dout = bd;
}
static void model_q4_w(const float *v, float *out) { model_q4_w_d(v, out, NULL); }

/* row of n values in a format, blocks of 32 for q8 and q4 (zero-padded past n) */
static void model_row(facet_wformat f, int is_x, const float *v, int n, float *out) {
    if (f == FACET_WF_Q8 || f == FACET_WF_Q4) {
        for (int b = 0; b < n; b += 32) {
            float in[32] = {0}, o[32];
            memcpy(in, v + b, sizeof(float) * (size_t)(n - b < 32 ? n - b : 32));
            is_x ? model_q8_x(in, o) : f == FACET_WF_Q8 ? model_q8_w(in, o) : model_q4_w(in, o);
            memcpy(out + b, o, sizeof(float) * (size_t)(n - b < 32 ? n - b : 32));
        }
        return;
    }
    for (int i = 0; i < n; i++)
        out[i] = f == FACET_WF_BF16 ? model_bf16(v[i]) : f == FACET_WF_F16 ? model_f16(v[i]) : v[i];
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static float urand(void) { /* uniform in [-1, 1) */
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(rng_state >> 40) / (double)(1ULL << 23) - 1.0);
}

static int path_available(int i) { return (int)facet_cpu()->detected >= i; }

/* ---- conversions ---- */

static void test_bf16_f16_rounding(void **state) {
    (void)state;
    /* hand cases: ties to even, carry into the exponent, overflow, subnormals */
    struct { uint32_t in; uint16_t bf16; } bc[] = {
        {0x3f800000u, 0x3f80}, {0x3f808000u, 0x3f80}, {0x3f818000u, 0x3f82},
        {0x3f808001u, 0x3f81}, {0x3f7fffffu, 0x3f80}, {0x7f7fffffu, 0x7f80},
        {0x80000001u, 0x8000}, {0x00000000u, 0x0000}, {0xc0490fdbu, 0xc049}};
    for (size_t i = 0; i < sizeof bc / sizeof bc[0]; i++) {
        float v;
        memcpy(&v, &bc[i].in, 4);
        assert_int_equal(facet_f32_to_bf16(v), bc[i].bf16);
    }
    struct { float in; uint16_t f16; } hc[] = {
        {1.0f, 0x3c00}, {65504.0f, 0x7bff}, {65519.0f, 0x7bff}, {65520.0f, 0x7c00},
        {0x1p-24f, 0x0001}, {0x1p-25f, 0x0000}, {0x1.8p-25f, 0x0001}, {0x1.8p-24f, 0x0002},
        {0x1p-14f, 0x0400}, {-2.0f, 0xc000}, {1.0f + 0x1p-11f, 0x3c00},
        {1.0f + 0x1.8p-10f, 0x3c02}, {0.1f, 0x2e66}};
    for (size_t i = 0; i < sizeof hc / sizeof hc[0]; i++)
        assert_int_equal(facet_f32_to_f16(hc[i].in), hc[i].f16);
    /* a sweep against this file's float64 model, and widening back */
    for (int i = 0; i < 200000; i++) {
        float v = ldexpf(urand(), (int)(urand() * 40.0f));
        assert_true(facet_bf16_to_f32(facet_f32_to_bf16(v)) == model_bf16(v));
        assert_true(facet_f16_to_f32(facet_f32_to_f16(v)) == model_f16(v));
    }
    assert_true(isnan(facet_bf16_to_f32(facet_f32_to_bf16(NAN))));
    assert_true(isnan(facet_f16_to_f32(facet_f32_to_f16(NAN))));
}

/* ---- matmul ---- */

typedef struct {
    int rows, cols;
} shape;

/* W (rows x cols, row-major float32 Wf) converted to `fmt` (packed; caller frees data) */
static facet_wtensor make_w(facet_wformat fmt, int rows, int cols, const float *Wf) {
    facet_wtensor w = {FACET_WF_F32, rows, cols, malloc(sizeof(float) * (size_t)rows * cols), NULL, 0};
    assert_non_null(w.data);
    memcpy(w.data, Wf, sizeof(float) * (size_t)rows * cols);
    facet_error err = {0};
    assert_int_equal(facet_wtensor_convert(&w, fmt, &err), FACET_OK);
    assert_int_equal(w.packed, 1);
    return w;
}

static void check_case(const facet_wtensor *w, facet_wformat fmt, int rows, int cols, int n,
                       const float *Wf, const float *X, const float *bias, const float *Y);

/* Run facet_matmul for W (rows x cols) in `fmt` and n rows of X on the current path;
 * check against the float64 oracles; return Y (caller frees). */
static float *run_case(facet_pool *pool, facet_wformat fmt, int rows, int cols, int n,
                       const float *Wf, const float *X, const float *bias) {
    facet_wtensor w = make_w(fmt, rows, cols, Wf);
    float *Y = malloc(sizeof(float) * (size_t)n * rows);
    facet_matmul(pool, Y, X, &w, bias, n);
    check_case(&w, fmt, rows, cols, n, Wf, X, bias, Y);
    free(w.data);
    return Y;
}

/* Y ([n][rows], from W in `fmt`, made from Wf) against the float64 oracles of the
 * header comment on the current path. */
static void check_case(const facet_wtensor *w, facet_wformat fmt, int rows, int cols, int n,
                       const float *Wf, const float *X, const float *bias, const float *Y) {
    int vdp = fmt == FACET_WF_BF16 && facet_cpu()->avx512_bf16;
    float *wr = malloc(sizeof(float) * (size_t)cols), *xr = malloc(sizeof(float) * (size_t)cols);
    float *back = malloc(sizeof(float) * (size_t)cols);
    for (int o = 0; o < rows; o++) {
        model_row(fmt, 0, Wf + (size_t)o * cols, cols, wr);
        facet_wtensor_row(w, o, back); /* the stored weights are the format's rounding */
        for (int k = 0; k < cols; k++) assert_true(back[k] == wr[k]);
        /* bound on the weight's own error */
        for (int r = 0; r < n; r++) {
            const float *x = X + (size_t)r * cols;
            if (fmt == FACET_WF_Q8 || fmt == FACET_WF_Q4) model_row(fmt, 1, x, cols, xr);
            else if (vdp) model_row(FACET_WF_BF16, 1, x, cols, xr);
            else memcpy(xr, x, sizeof(float) * (size_t)cols);
            double exact = 0, mag = 0, ref = 0, prec = 0;
            for (int k = 0; k < cols; k++) {
                exact += (double)xr[k] * wr[k];
                mag += fabs((double)xr[k] * wr[k]);
                const float *wo = Wf + (size_t)o * cols;
                ref += (double)x[k] * wo[k];
            }
            double b = bias ? bias[o] : 0.0;
            double got = Y[(size_t)r * rows + o];
            double tight = (cols + 2) * 0x1p-24 * (mag + fabs(b)) + 1e-30;
            if (fabs(got - (exact + b)) > tight)
                fail_msg("%s %s [%d x %d] n=%d row %d out %d: got %.9g, float64 of rounded "
                         "operands %.9g, bound %.3g", facet_cpu_level_name(facet_cpu()->level),
                         facet_wformat_name(fmt), rows, cols, n, r, o, got, exact + b, tight);
            /* the format's precision against the unrounded operands */
            const float *wo = Wf + (size_t)o * cols;
            if (fmt == FACET_WF_Q8) {
                for (int b0 = 0; b0 < cols; b0 += 32) {
                    float wa = 0, xa = 0;
                    for (int k = b0; k < b0 + 32 && k < cols; k++) {
                        wa = fmaxf(wa, fabsf(wo[k]));
                        xa = fmaxf(xa, fabsf(x[k]));
                    }
                    double dw = wa / 254.0 * (1 + 0x1p-10), dx = xa / 254.0 * (1 + 0x1p-20);
                    for (int k = b0; k < b0 + 32 && k < cols; k++)
                        prec += fabs(x[k]) * dw + fabs(wo[k]) * dx + dw * dx;
                }
            } else if (fmt == FACET_WF_Q4) {
                for (int b0 = 0; b0 < cols; b0 += 32) {
                    double wa = 0, xa = 0, xx = 0;
                    for (int k = b0; k < b0 + 32 && k < cols; k++) {
                        wa = fmax(wa, fabs(wo[k]));
                        xa = fmax(xa, fabs(x[k]));
                        xx += (double)x[k] * x[k];
                    }
                    double dx = xa / 254.0 * (1 + 0x1p-20);
                    prec += sqrt(xx) * sqrt(32.0) * wa / 8.0 * (1 + 0x1p-9);
                    for (int k = b0; k < b0 + 32 && k < cols; k++) prec += fabs(wr[k]) * dx;
                }
            } else {
                double eps = fmt == FACET_WF_BF16 ? (vdp ? 0x1p-7 + 0x1p-16 : 0x1p-8)
                             : fmt == FACET_WF_F16 ? 0x1p-11 : 0;
                for (int k = 0; k < cols; k++) /* f16 subnormals: absolute 2^-25 */
                    prec += fabs((double)x[k] * wo[k]) * eps +
                            (fmt == FACET_WF_F16 ? fabs(x[k]) * 0x1p-25 : 0);
            }
            assert_true(fabs(got - (ref + b)) <= prec + tight);
        }
    }
    free(wr);
    free(xr);
    free(back);
}

static const facet_wformat formats[] = {FACET_WF_F32, FACET_WF_F16, FACET_WF_BF16, FACET_WF_Q8,
                                        FACET_WF_Q4};
/* f32 [64 x 4096] with 13 rows blocks the input dim (weights of a task > 512 KiB) */
static const shape shapes[] = {{37, 172}, {64, 256}, {130, 96}, {64, 4096}, {1, 40}};
static const int batch[] = {1, 5, 13, 32};

static void test_matmul_paths(void **state) {
    (void)state;
    facet_pool *pool = facet_pool_create(2);
    assert_non_null(pool);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int rows = shapes[s].rows, cols = shapes[s].cols, nmax = 32;
        float *W = malloc(sizeof(float) * (size_t)rows * cols);
        float *X = malloc(sizeof(float) * (size_t)nmax * cols);
        float *bias = malloc(sizeof(float) * (size_t)rows);
        for (size_t i = 0; i < (size_t)rows * cols; i++) W[i] = urand() * (i % 7 == 0 ? 3.0f : 0.5f);
        for (size_t i = 0; i < (size_t)nmax * cols; i++) X[i] = urand() * (i % 5 == 0 ? 4.0f : 1.0f);
        for (int i = 0; i < rows; i++) bias[i] = urand();
        for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
            if (cols == 4096 && formats[f] != FACET_WF_F32) continue;
            float *first[3] = {NULL, NULL, NULL};
            for (int p = 0; p < 3; p++) {
                if (!path_available(p)) {
                    printf("# skip path %s: this CPU lacks it\n", test_cpu_paths[p]);
                    continue;
                }
                test_cpu_path_force(test_cpu_paths[p]);
                assert_int_equal((int)facet_cpu()->level, p);
                for (size_t bi = 0; bi < sizeof batch / sizeof batch[0]; bi++) {
                    int n = batch[bi];
                    if (cols == 4096 && n != 13) continue;
                    float *Y = run_case(bi % 2 ? pool : NULL, formats[f], rows, cols, n, W, X,
                                        s % 2 ? bias : NULL);
                    if (!first[p]) {
                        first[p] = Y;
                        continue;
                    }
                    /* batch invariance: every row as computed in the first batch size */
                    int m = n < batch[0] ? n : batch[0];
                    assert_memory_equal(Y, first[p], sizeof(float) * (size_t)m * rows);
                    free(Y);
                }
            }
            /* paths with the same operations in the same order agree bit for bit */
            int same_all = formats[f] != FACET_WF_BF16;
            for (int p = 1; p < 3; p++)
                if (first[p] && first[0] && (same_all || (p == 1)))
                    assert_memory_equal(first[p], first[0], sizeof(float) * (size_t)rows);
            for (int p = 0; p < 3; p++) free(first[p]);
        }
        free(W);
        free(X);
        free(bias);
    }
    test_cpu_path_reset();
    facet_pool_free(pool);
}

/* batch invariance across larger batches (prefill tiles: 6-row tiles, remainders) */
static void test_matmul_batch_rows_identical(void **state) {
    (void)state;
    facet_pool *pool = facet_pool_create(2);
    int rows = 100, cols = 320, n = 77;
    float *W = malloc(sizeof(float) * (size_t)rows * cols), *X = malloc(sizeof(float) * (size_t)n * cols);
    for (size_t i = 0; i < (size_t)rows * cols; i++) W[i] = urand();
    for (size_t i = 0; i < (size_t)n * cols; i++) X[i] = urand();
    float *Y = malloc(sizeof(float) * (size_t)n * rows), *y1 = malloc(sizeof(float) * (size_t)rows);
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++)
        for (int p = 0; p < 3; p++) {
            if (!path_available(p)) continue;
            test_cpu_path_force(test_cpu_paths[p]);
            facet_wtensor w = {FACET_WF_F32, rows, cols, malloc(sizeof(float) * (size_t)rows * cols), NULL, 0};
            memcpy(w.data, W, sizeof(float) * (size_t)rows * cols);
            assert_int_equal(facet_wtensor_convert(&w, formats[f], NULL), FACET_OK);
            facet_matmul(pool, Y, X, &w, NULL, n);
            for (int r = 0; r < n; r += 7) {
                facet_matmul(pool, y1, X + (size_t)r * cols, &w, NULL, 1);
                assert_memory_equal(y1, Y + (size_t)r * rows, sizeof(float) * (size_t)rows);
            }
            free(w.data);
        }
    test_cpu_path_reset();
    free(W);
    free(X);
    free(Y);
    free(y1);
    facet_pool_free(pool);
}

/* ---- facet_matmul_multi ---- */

/* Matrices sharing one input: output sizes as q/k/v with GQA plus one not a multiple of
 * 16 with cols not a multiple of 32 (zero-padded activations); gate/up; matrices with
 * fewer panels than tasks; and cols 3000, whose f32 weights on AVX-512 (3 panels a
 * kernel call, 564 KiB) are blocked along k above 8 rows. bias_mask: bit m set = matrix
 * m has a bias. */
typedef struct {
    int n_mats, rows[4], cols, bias_mask;
} multi_case;
static const multi_case mcases[] = {
    {4, {2048, 1024, 1024, 203}, 1000, 0x5},
    {2, {600, 600}, 256, 0x2},
    {3, {40, 7, 16}, 64, 0x7},
    {2, {48, 35}, 3000, 0x1},
};
static const int mrows[] = {1, 3, 8, 17, 33};

static void test_matmul_multi_identical(void **state) {
    (void)state;
    facet_pool *pool = facet_pool_create(2);
    assert_non_null(pool);
    for (size_t c = 0; c < sizeof mcases / sizeof mcases[0]; c++) {
        const multi_case *mc = &mcases[c];
        int cols = mc->cols, nmax = 33, total = 0;
        for (int m = 0; m < mc->n_mats; m++) total += mc->rows[m];
        float *Wf = malloc(sizeof(float) * (size_t)total * cols);
        float *X = malloc(sizeof(float) * (size_t)nmax * cols);
        float *bias = malloc(sizeof(float) * (size_t)total);
        for (size_t i = 0; i < (size_t)total * cols; i++) Wf[i] = urand() * (i % 7 == 0 ? 3.0f : 0.5f);
        for (size_t i = 0; i < (size_t)nmax * cols; i++) X[i] = urand() * (i % 5 == 0 ? 4.0f : 1.0f);
        for (int i = 0; i < total; i++) bias[i] = urand();
        for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++)
            for (int p = 0; p < 3; p++) {
                if (!path_available(p)) continue;
                test_cpu_path_force(test_cpu_paths[p]);
                facet_wtensor w[4];
                const facet_wtensor *wp[4];
                const float *bp[4], *wf[4];
                float *Y[4], *Ys[4];
                for (int m = 0, o = 0; m < mc->n_mats; o += mc->rows[m], m++) {
                    wf[m] = Wf + (size_t)o * cols;
                    w[m] = make_w(formats[f], mc->rows[m], cols, wf[m]);
                    wp[m] = &w[m];
                    bp[m] = mc->bias_mask >> m & 1 ? bias + o : NULL;
                    Y[m] = malloc(sizeof(float) * (size_t)nmax * mc->rows[m]);
                    Ys[m] = malloc(sizeof(float) * (size_t)nmax * mc->rows[m]);
                }
                for (size_t ri = 0; ri < sizeof mrows / sizeof mrows[0]; ri++) {
                    int n = mrows[ri];
                    facet_pool *pl = ri == 2 ? NULL : pool; /* also the pool-less path */
                    facet_matmul_multi(pl, mc->n_mats, Y, X, wp, bp, n);
                    for (int m = 0; m < mc->n_mats; m++) {
                        facet_matmul(pl, Ys[m], X, wp[m], bp[m], n);
                        if (memcmp(Y[m], Ys[m], sizeof(float) * (size_t)n * mc->rows[m]))
                            fail_msg("multi != separate: %s %s case %zu matrix %d [%d x %d] n=%d",
                                     test_cpu_paths[p], facet_wformat_name(formats[f]), c, m, mc->rows[m],
                                     cols, n);
                        /* the values themselves, against float64 (17 rows: k blocks) */
                        if (n == 3 || (n == 17 && (size_t)total * cols < ((size_t)1 << 20)))
                            check_case(wp[m], formats[f], mc->rows[m], cols, n, wf[m], X, bp[m], Y[m]);
                    }
                }
                for (int m = 0; m < mc->n_mats; m++) {
                    free(w[m].data);
                    free(Y[m]);
                    free(Ys[m]);
                }
            }
        free(Wf);
        free(X);
        free(bias);
    }
    test_cpu_path_reset();
    facet_pool_free(pool);
}

/* Not fusable: mixed formats, an unpacked float32 W, different cols: each matrix as
 * facet_matmul computes it. Also more matrices than one fused run takes (chunks) and a
 * NULL bias array. */
static void test_matmul_multi_fallback(void **state) {
    (void)state;
    facet_pool *pool = facet_pool_create(2);
    assert_non_null(pool);
    enum { NM = 11, ROWS = 50, COLS = 96, NX = 9 };
    float *Wf = malloc(sizeof(float) * (size_t)NM * ROWS * COLS), X[NX * COLS], bias[NM * ROWS];
    for (size_t i = 0; i < (size_t)NM * ROWS * COLS; i++) Wf[i] = urand();
    for (int i = 0; i < NX * COLS; i++) X[i] = urand();
    for (int i = 0; i < NM * ROWS; i++) bias[i] = urand();
    float *Y[NM], *Ys = malloc(sizeof(float) * NX * ROWS);
    for (int m = 0; m < NM; m++) Y[m] = malloc(sizeof(float) * NX * ROWS);
    for (int p = 0; p < 3; p++) {
        if (!path_available(p)) continue;
        test_cpu_path_force(test_cpu_paths[p]);
        for (int kind = 0; kind < 4; kind++) {
            /* 0: bf16, int8, f16, f32 packed; 1: bf16 with one unpacked f32; 2: bf16 with
             * one of 64 cols; 3: 11 bf16 (two fused runs), no bias array */
            int nm = kind == 3 ? NM : 4;
            facet_wtensor w[NM];
            const facet_wtensor *wp[NM];
            const float *bp[NM];
            for (int m = 0; m < nm; m++) {
                const float *wf = Wf + (size_t)m * ROWS * COLS;
                facet_wformat fm = kind == 0 ? formats[(m + 2) % 4] : FACET_WF_BF16;
                int cols = kind == 2 && m == 1 ? 64 : COLS;
                if (kind == 1 && m == 2) {
                    w[m] = (facet_wtensor){FACET_WF_F32, ROWS, cols,
                                           malloc(sizeof(float) * ROWS * COLS), NULL, 0};
                    memcpy(w[m].data, wf, sizeof(float) * ROWS * COLS);
                } else {
                    w[m] = make_w(fm, ROWS, cols, wf);
                }
                wp[m] = &w[m];
                bp[m] = m % 2 ? bias + m * ROWS : NULL;
            }
            for (int n = 1; n <= NX; n += NX - 1) {
                facet_matmul_multi(pool, nm, Y, X, wp, kind == 3 ? NULL : bp, n);
                for (int m = 0; m < nm; m++) {
                    facet_matmul(pool, Ys, X, wp[m], kind == 3 ? NULL : bp[m], n);
                    assert_memory_equal(Y[m], Ys, sizeof(float) * (size_t)n * ROWS);
                }
                if (kind == 1) /* the unpacked matrix's value against float64 */
                    check_case(wp[2], FACET_WF_F32, ROWS, COLS, n, Wf + (size_t)2 * ROWS * COLS,
                               X, bp[2], Y[2]);
            }
            for (int m = 0; m < nm; m++) free(w[m].data);
        }
    }
    test_cpu_path_reset();
    for (int m = 0; m < NM; m++) free(Y[m]);
    free(Ys);
    free(Wf);
    facet_pool_free(pool);
}

static void test_convert_errors(void **state) {
    (void)state;
    float *d = calloc(64, sizeof(float));
    d[5] = INFINITY;
    facet_wtensor w = {FACET_WF_F32, 2, 32, d, NULL, 0};
    facet_error err = {0};
    assert_int_equal(facet_wtensor_convert(&w, FACET_WF_Q8, &err), FACET_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "f16 scale"));
    assert_ptr_equal(w.data, d); /* left as it was */
    d[5] = 1.0f;
    assert_int_equal(facet_wtensor_convert(&w, FACET_WF_BF16, &err), FACET_OK);
    assert_int_equal(facet_wtensor_convert(&w, FACET_WF_BF16, &err), FACET_OK);
    assert_int_equal(facet_wtensor_convert(&w, FACET_WF_Q8, &err), FACET_E_UNSUPPORTED);
    assert_int_equal((int)facet_wtensor_bytes(&w), 16 * 32 * 2); /* one panel of 16 rows */
    free(w.data);
    facet_wtensor e = {FACET_WF_F32, 0, 32, NULL, NULL, 0};
    assert_int_equal(facet_wtensor_convert(&e, FACET_WF_F32, &err), FACET_E_INVALID_ARGUMENT);
    /* q4: a non-finite value, and a block whose scale m / 7 f16 cannot hold */
    for (int i = 0; i < 2; i++) {
        d = calloc(64, sizeof(float));
        d[40] = i ? 7.0f * 65504.0f * 1.01f : NAN;
        facet_wtensor q = {FACET_WF_F32, 2, 32, d, NULL, 0};
        assert_int_equal(facet_wtensor_convert(&q, FACET_WF_Q4, &err), FACET_E_INVALID_ARGUMENT);
        assert_non_null(strstr(err.message, "q4 weights"));
        assert_ptr_equal(q.data, d);
        free(d);
    }
}

/* The q4 quantizer on hand-worked blocks: codes, the f16 bits of d, and the packed
 * tensor's values (facet_wtensor_row) and bytes per panel block. */
static void test_q4_quantizer_blocks(void **state) {
    (void)state;
    uint8_t q[32];
    uint16_t h;
    float w[32];
    /* exact grid 0.25 * (k - 8): c = -8 gives d = 0.25 (m = -2, the first of largest |w|)
     * and zero error; the earlier candidates (c = -9, -8.5 and their refits) do not */
    for (int i = 0; i < 32; i++) w[i] = 0.25f * (float)(i % 16 - 8);
    assert_int_equal(facet_q4_quantize_block(w, 32, q, &h), 0);
    assert_int_equal(h, 0x3400); /* 0.25 */
    for (int i = 0; i < 32; i++) assert_int_equal(q[i], i % 16);
    /* one spike 1 at k = 3, n = 5 (zeros past n): c = -9 gives d = f16(-1/9), code 0,
     * error (1 - 8/9)^2; its refit sum(w q') / sum(q'^2) = -8 / 64 = -0.125 is exact */
    memset(w, 0, sizeof w);
    w[3] = 1.0f;
    assert_int_equal(facet_q4_quantize_block(w, 5, q, &h), 0);
    assert_int_equal(h, 0xb000); /* -0.125 */
    for (int i = 0; i < 32; i++) assert_int_equal(q[i], i == 3 ? 0 : 8);
    /* all zero: d = 0, every code 8 */
    assert_int_equal(facet_q4_quantize_block(w, 0, q, &h), 0);
    assert_int_equal(h, 0);
    for (int i = 0; i < 32; i++) assert_int_equal(q[i], 8);
    /* 1, 0.6 x 31: Q4_0's single d = 1 / -8 leaves 0.6 at code -5 (0.625, error 0.025
     * each); c = -7.5 gives d = -2/15 (f16 -0.13330078), 0.6 -> -4.5012 -> code -5 ->
     * 0.6665, worse; the refit of c = -9's codes (those of c = -8 too): (1 * -8 + 31 * 0.6 * -5) / (64 + 31 * 25)
     * = -101 / 839 = -0.120381 -> f16 -0.12036133: 0.6 -> -4.985 -> -5 (0.60181, error
     * 0.0018) and 1 -> -8.31 -> -8 (0.96289, error 0.037): sum 1.48e-3 vs 0.0194 */
    for (int i = 0; i < 32; i++) w[i] = i ? 0.6f : 1.0f;
    assert_int_equal(facet_q4_quantize_block(w, 32, q, &h), 0);
    float d = facet_f16_to_f32(h), ref[32], dref;
    model_q4_w_d(w, ref, &dref);
    assert_true(d == dref);
    double e = 0, e40 = 0;
    for (int i = 0; i < 32; i++) {
        e += (w[i] - d * (q[i] - 8)) * (double)(w[i] - d * (q[i] - 8));
        double q40 = floor(w[i] * -8.0 + 8.5) - 8; /* Q4_0: d = m / -8, codes floor(w / d + 8.5) */
        e40 += (w[i] + 0.125 * q40) * (w[i] + 0.125 * q40);
        assert_true(ref[i] == d * (float)(q[i] - 8));
    }
    assert_true(e <= 1.5e-3 && e40 > 0.019); /* the search's gain on this block */
    /* non-finite or too large */
    w[7] = INFINITY;
    assert_int_equal(facet_q4_quantize_block(w, 32, q, &h), -1);
    w[7] = -7.0f * 65504.0f * 1.001f;
    assert_int_equal(facet_q4_quantize_block(w, 32, q, &h), -1);
    /* the packed layout: 288 bytes a panel block; a lane's 16 bytes are GGUF Q4_0's qs */
    assert_int_equal((int)facet_panel_bytes(FACET_WF_Q4, 64), 2 * 288);
    float *m = calloc(17 * 40, sizeof(float));
    for (int i = 0; i < 17 * 40; i++) m[i] = 0.25f * (float)(i % 16 - 8);
    facet_wtensor t = make_w(FACET_WF_Q4, 17, 40, m);
    assert_int_equal((int)facet_wtensor_bytes(&t), 2 * 2 * 288); /* 2 panels x 2 blocks */
    float row[40];
    for (int r = 0; r < 17; r++) {
        facet_wtensor_row(&t, r, row);
        for (int k = 0; k < 40; k++) assert_true(row[k] == m[r * 40 + k]);
    }
    /* lane 1 (row 1) of the first block: element k at byte (k % 16 / 4) * 64 + 4 + k % 4,
     * k < 16 low nibble, k + 16 high */
    const uint8_t *b0 = t.data;
    for (int k = 0; k < 16; k++) {
        int lo = (40 + k) % 16, hi = (40 + k + 16) % 16;
        assert_int_equal(b0[(k / 4) * 64 + 4 + k % 4], lo | hi << 4);
    }
    free(t.data);
    free(m);
}

/* facet_dot_f32 / facet_axpy_f32 on every path against float64 */
static void test_dot_axpy_paths(void **state) {
    (void)state;
    static const int lens[] = {1, 7, 8, 15, 16, 31, 33, 64, 128, 130, 257};
    float a[257], b[257], y[257], y0[257];
    for (int p = 0; p < 3; p++) {
        if (!path_available(p)) continue;
        test_cpu_path_force(test_cpu_paths[p]);
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            int n = lens[li];
            for (int i = 0; i < n; i++) {
                a[i] = urand() * 3.0f;
                b[i] = urand();
                y0[i] = y[i] = urand();
            }
            double exact = 0, mag = 0;
            for (int i = 0; i < n; i++) {
                exact += (double)a[i] * b[i];
                mag += fabs((double)a[i] * b[i]);
            }
            float got = facet_dot_f32(a, b, n);
            assert_true(fabs(got - exact) <= (n + 2) * 0x1p-24 * mag);
            assert_true(facet_dot_f32(a, b, n) == got); /* deterministic */
            float s = urand() * 2.0f;
            facet_axpy_f32(y, s, a, n);
            for (int i = 0; i < n; i++) {
                double r = (double)s * a[i] + y0[i]; /* one rounding to float32 expected */
                assert_true(fabs(y[i] - r) <= 0x1p-24 * fabs(r) + 1e-30);
            }
        }
    }
    test_cpu_path_reset();
}

static void test_cpu_env(void **state) {
    (void)state;
    test_cpu_path_force("scalar");
    assert_int_equal(facet_cpu()->level, FACET_CPU_SCALAR);
    assert_int_equal(facet_cpu()->avx512_bf16, 0);
    test_cpu_path_force("avx512"); /* never raised above what the CPU has */
    assert_true(facet_cpu()->level <= facet_cpu()->detected);
    test_cpu_path_reset();
    assert_int_equal(facet_cpu()->level, facet_cpu()->detected);
    printf("# cpu level %s (bf16 dot %d, vnni %d)\n", facet_cpu_level_name(facet_cpu()->level),
           facet_cpu()->avx512_bf16, facet_cpu()->avx512_vnni);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_env),
        cmocka_unit_test(test_bf16_f16_rounding),
        cmocka_unit_test(test_convert_errors),
        cmocka_unit_test(test_q4_quantizer_blocks),
        cmocka_unit_test(test_dot_axpy_paths),
        cmocka_unit_test(test_matmul_paths),
        cmocka_unit_test(test_matmul_batch_rows_identical),
        cmocka_unit_test(test_matmul_multi_identical),
        cmocka_unit_test(test_matmul_multi_fallback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
