/* test_quant_mxfp4.c — the MXFP4 block type (kernels/cpu/quant_mxfp4.c: GGUF type 39, and
 * gpt-oss's Hugging Face experts repacked into it) and the matmul driver on it.
 *
 * Oracles:
 *   - dequant_row equals, bit for bit, NumPy's values of the same blocks
 *     (tests/data/quant_mxfp4: 128 blocks that llama.cpp's llama-quantize wrote, 7 crafted
 *     ones; tests/ref/mxfp4.py dequantizes them from the OCP E2M1 / E8M0 definitions).
 *   - hand-worked blocks: each E2M1 code's value, e = 127 (x1), 128 (x2), 0 and 1 (the
 *     subnormal scales 2^-128 and 2^-127, halved once more as ggml's doubled codes).
 *   - every dot path (scalar, AVX2, AVX-512 VNNI where the CPU has it) equals the float64
 *     dot of this test's own decoding of the weights (from the code's bits) with the Q8_0
 *     activation blocks (d * q), up to float32 rounding: |err| <= 1e-5 sum |w x|.
 *   - the several-row dots give each row the single-row dot's bits.
 *   - facet_matmul on an MXFP4 tensor: each output the float64 dot above; the same bits
 *     whatever n_rows, with 1 or 2 threads, and from facet_matmul_each_k (row views).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/quant.h"

#define NB 135 /* blocks in the data file */

static void *read_file(const char *ext, size_t want) {
    char path[512];
    snprintf(path, sizeof path, "%s/quant_mxfp4/MXFP4.%s", FACET_TEST_DATA, ext);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    void *buf = malloc(want + 1);
    size_t got = fread(buf, 1, want + 1, f);
    fclose(f);
    if (got != want) fail_msg("%s: %zu bytes, expected %zu", path, got, want);
    return buf;
}

static const facet_qtype_traits *mx(void) { return facet_qtype_traits_of(FACET_QT_MXFP4); }

/* An E2M1 code's value from its fields (sign, 2-bit exponent of bias 1, 1-bit mantissa). */
static double e2m1(int code) {
    int e = (code >> 1) & 3, m = code & 1;
    double v = e == 0 ? 0.5 * m : ldexp(1.0 + 0.5 * m, e - 1);
    return code & 8 ? -v : v;
}

/* Element i of MXFP4 row w as this test decodes it: e2m1 x 2^(e - 127). */
static double w_value(const uint8_t *w, int i) {
    const uint8_t *b = w + (size_t)(i / 32) * 17;
    int j = i % 32, code = j < 16 ? b[1 + j] & 15 : b[1 + j - 16] >> 4;
    return e2m1(code) * ldexp(1.0, (int)b[0] - 127);
}

static double half_value(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return h & 0x8000 ? -v : v;
}

static double x_value(const void *x, int i) {
    const facet_blk_q8_0 *b = (const facet_blk_q8_0 *)x + i / 32;
    return half_value(b->d) * b->qs[i % 32];
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd_unit(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

static void test_traits(void **state) {
    (void)state;
    const facet_qtype_traits *t = mx();
    assert_non_null(t);
    assert_string_equal(t->name, "MXFP4");
    assert_int_equal(t->ggml_type, 39);
    assert_int_equal(t->block, 32);
    assert_int_equal(t->block_bytes, 17);
    assert_int_equal(t->xkind, FACET_QX_Q8_0);
    assert_int_equal(facet_qtype_of_ggml(39), FACET_QT_MXFP4);
    assert_non_null(strstr(facet_qtype_runnable_list(), "MXFP4"));
    assert_int_equal(facet_wformat_qtype(FACET_WF_GGUF_MXFP4), FACET_QT_MXFP4);
    assert_string_equal(facet_wformat_name(FACET_WF_GGUF_MXFP4), "MXFP4");
    assert_int_equal(facet_wtensor_packed_bytes(FACET_WF_GGUF_MXFP4, 3, 64), 3 * 2 * 17);
}

static void test_hand_worked(void **state) {
    (void)state;
    static const float want[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, 0, -0.5f, -1, -1.5f, -2, -3, -4, -6};
    uint8_t b[17];
    float y[32];
    for (int j = 0; j < 16; j++) b[1 + j] = (uint8_t)(j | (15 - j) << 4);
    b[0] = 127; /* x 1 */
    mx()->dequant_row(b, y, 32);
    for (int j = 0; j < 16; j++) {
        assert_true(y[j] == want[j]);
        assert_true(y[16 + j] == want[15 - j]);
    }
    b[0] = 128; /* x 2 */
    mx()->dequant_row(b, y, 32);
    assert_true(y[7] == 12.0f && y[16] == -12.0f);
    b[0] = 0; /* x 2^-127: 0.5 x 2^-127 = 2^-128, a subnormal float */
    mx()->dequant_row(b, y, 32);
    assert_true(y[1] == ldexpf(1.0f, -128) && y[7] == 6.0f * ldexpf(1.0f, -127));
    b[0] = 1;
    mx()->dequant_row(b, y, 32);
    assert_true(y[2] == ldexpf(1.0f, -126));
}

static void test_dequant_matches_numpy(void **state) {
    (void)state;
    uint8_t *blk = read_file("bin", NB * 17);
    float *want = read_file("f32", NB * 32 * sizeof(float));
    float *got = malloc(NB * 32 * sizeof(float));
    mx()->dequant_row(blk, got, NB * 32);
    for (int i = 0; i < NB * 32; i++) {
        if (memcmp(&got[i], &want[i], sizeof(float)))
            fail_msg("element %d (block %d): got %.9g, NumPy %.9g", i, i / 32, got[i], want[i]);
        if ((double)got[i] != w_value(blk, i)) fail_msg("element %d: not the E2M1 value", i);
    }
    free(blk);
    free(want);
    free(got);
}

typedef struct {
    const char *name;
    facet_qdot_fn fn;
} dot_path;

static int paths(dot_path out[4]) {
    const facet_cpu_info *c = facet_cpu();
    const facet_qtype_traits *t = mx();
    int n = 0;
    out[n++] = (dot_path){"scalar", t->dot_scalar};
    if (c->detected >= FACET_CPU_AVX2 && t->dot_avx2) out[n++] = (dot_path){"avx2", t->dot_avx2};
    if (c->avx512_vnni && t->dot_avx512vnni) out[n++] = (dot_path){"avx512vnni", t->dot_avx512vnni};
    return n;
}

static void check_dot(const uint8_t *w, const void *xq, int n, const char *what) {
    double ref = 0, mag = 0;
    for (int i = 0; i < n; i++) {
        double v = w_value(w, i) * x_value(xq, i);
        ref += v;
        mag += fabs(v);
    }
    dot_path p[4];
    int np = paths(p);
    for (int k = 0; k < np; k++) {
        float got = NAN;
        p[k].fn(n, &got, w, xq);
        if (!(fabs((double)got - ref) <= 1e-5 * mag + 1e-30))
            fail_msg("%s %s n=%d: got %.9g, float64 %.9g", p[k].name, what, n, got, ref);
    }
}

/* The data file's rows of 1, 2, 3 (odd: the AVX-512 half register), 8 and 128 blocks, and
 * long rows of random bytes with sane exponents. */
static void test_dot_paths(void **state) {
    (void)state;
    enum { R = 256 };
    uint8_t *blk = read_file("bin", NB * 17), *rnd = malloc(R * 17);
    float *xf = malloc(R * 32 * sizeof(float));
    facet_blk_q8_0 *xq = malloc(R * sizeof *xq);
    for (int kind = 0; kind < 2; kind++) {
        for (int i = 0; i < R * 32; i++) {
            xf[i] = (float)(rnd_unit() * 2 - 1);
            if (kind && i % 32 == 5) xf[i] = 30.0f; /* an outlier per block */
        }
        facet_quantize_row_q8_0(xf, xq, R * 32);
        const int lens[] = {1, 2, 3, 8, 128};
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            check_dot(blk, xq, lens[li] * 32, "corpus blocks");
        for (int i = 0; i < R * 17; i++) rnd[i] = (uint8_t)(rnd_unit() * 256);
        for (int b = 0; b < R; b++) rnd[b * 17] = (uint8_t)(110 + b % 30);
        check_dot(rnd, xq, R * 32, "random blocks");
    }
    free(blk);
    free(rnd);
    free(xf);
    free(xq);
}

static void test_dotx_matches_dot(void **state) {
    (void)state;
    enum { N = 9 * 32 };
    const facet_qtype_traits *t = mx();
    uint8_t *blk = read_file("bin", NB * 17);
    float xf[FACET_QDOTX_MAX * N];
    for (int i = 0; i < FACET_QDOTX_MAX * N; i++) xf[i] = (float)(rnd_unit() * 2 - 1);
    size_t xs = (N / 32) * sizeof(facet_blk_q8_0) + 40;
    uint8_t *x = calloc(FACET_QDOTX_MAX, xs);
    for (int r = 0; r < FACET_QDOTX_MAX; r++) facet_quantize_row_q8_0(xf + r * N, x + r * xs, N);
    const struct {
        const char *name;
        facet_qdotx_fn x;
        facet_qdot_fn d;
        int runs;
    } p[2] = {{"avx2", t->dotx_avx2, t->dot_avx2, facet_cpu()->detected >= FACET_CPU_AVX2},
              {"avx512vnni", t->dotx_avx512vnni, t->dot_avx512vnni, facet_cpu()->avx512_vnni}};
    for (int k = 0; k < 2; k++) {
        if (!p[k].runs) continue;
        for (int nr = 1; nr <= FACET_QDOTX_MAX; nr++) {
            float got[FACET_QDOTX_MAX], want;
            p[k].x(N, nr, got, blk, x, xs);
            for (int r = 0; r < nr; r++) {
                p[k].d(N, &want, blk, x + r * xs);
                if (memcmp(&got[r], &want, sizeof want))
                    fail_msg("%s dotx nr=%d row %d: %.9g vs %.9g", p[k].name, nr, r, got[r], want);
            }
        }
    }
    free(x);
    free(blk);
}

static void test_matmul_driver(void **state) {
    (void)state;
    enum { COLS = 256, OUT = 37, ROWS = 7 };
    size_t rb = COLS / 32 * 17;
    facet_pool *pool2 = facet_pool_create(2);
    uint8_t *blk = malloc(OUT * rb);
    for (size_t i = 0; i < OUT * rb; i++) blk[i] = (uint8_t)(rnd_unit() * 256);
    for (int b = 0; b < OUT * COLS / 32; b++) blk[b * 17] = (uint8_t)(118 + b % 12);
    float *X = malloc(ROWS * COLS * sizeof(float)), *Y7 = malloc(ROWS * OUT * sizeof(float));
    float *Y1 = malloc(ROWS * OUT * sizeof(float)), *Yp = malloc(ROWS * OUT * sizeof(float));
    for (int i = 0; i < ROWS * COLS; i++) X[i] = (float)(rnd_unit() * 2 - 1);
    facet_wtensor W;
    facet_error err;
    assert_int_equal(facet_wtensor_blocks(&W, FACET_WF_GGUF_MXFP4, OUT, COLS, blk, NULL, &err), FACET_OK);
    assert_int_equal(facet_wtensor_bytes(&W), OUT * rb);
    facet_matmul(NULL, Y7, X, &W, NULL, ROWS);
    for (int r = 0; r < ROWS; r++) facet_matmul(NULL, Y1 + r * OUT, X + r * COLS, &W, NULL, 1);
    assert_memory_equal(Y1, Y7, ROWS * OUT * sizeof(float));
    facet_matmul(pool2, Yp, X, &W, NULL, ROWS);
    assert_memory_equal(Yp, Y7, ROWS * OUT * sizeof(float));
    { /* facet_matmul_each_k: each matrix its own row, one run: matmul's bits */
        facet_cpu_kernels kk;
        facet_cpu_kernels_resolve(&kk, facet_cpu());
        float *Ye[3] = {Yp, Yp + OUT, Yp + 2 * OUT};
        const float *Xe[3] = {X + 2 * COLS, X, X + 5 * COLS};
        const facet_wtensor *We[3] = {&W, &W, &W};
        facet_matmul_each_k(&kk, pool2, 3, Ye, Xe, We, NULL);
        assert_memory_equal(Yp, Y7 + 2 * OUT, OUT * sizeof(float));
        assert_memory_equal(Yp + OUT, Y7, OUT * sizeof(float));
        assert_memory_equal(Yp + 2 * OUT, Y7 + 5 * OUT, OUT * sizeof(float));
    }
    facet_blk_q8_0 xq[COLS / 32];
    for (int r = 0; r < ROWS; r++) {
        facet_quantize_row_q8_0(X + r * COLS, xq, COLS);
        for (int o = 0; o < OUT; o++) {
            double ref = 0, mag = 0;
            for (int i = 0; i < COLS; i++) {
                double v = w_value(blk + o * rb, i) * x_value(xq, i);
                ref += v;
                mag += fabs(v);
            }
            if (!(fabs((double)Y7[r * OUT + o] - ref) <= 1e-5 * mag))
                fail_msg("matmul row %d out %d: %.9g vs float64 %.9g", r, o, Y7[r * OUT + o], ref);
        }
    }
    /* 48 columns are not whole blocks */
    facet_wtensor V;
    assert_int_equal(facet_wtensor_blocks(&V, FACET_WF_GGUF_MXFP4, 1, 48, blk, NULL, &err),
                     FACET_E_INVALID_ARGUMENT);
    free(W.data);
    free(blk);
    free(X);
    free(Y7);
    free(Y1);
    free(Yp);
    facet_pool_free(pool2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_traits),
        cmocka_unit_test(test_hand_worked),
        cmocka_unit_test(test_dequant_matches_numpy),
        cmocka_unit_test(test_dot_paths),
        cmocka_unit_test(test_dotx_matches_dot),
        cmocka_unit_test(test_matmul_driver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
