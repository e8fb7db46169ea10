/* test_quant_legacy.c — the 32-element GGUF block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 * IQ4_NL), the Q8_0 / Q8_1 activation quantizers (kernels/cpu/quant.h) and the matmul
 * driver of GGUF block formats (kernels.h facet_matmul on a facet_wtensor_blocks tensor).
 *
 * Oracles:
 *   - dequant_row equals, bit for bit, NumPy's values of the same blocks
 *     (tests/data/quant_legacy: 128 blocks copied from llama.cpp-quantized corpus files
 *     and 6 crafted extremes per type; the NumPy dequantizer tests/ref/ggml_legacy_quants.py
 *     is written from the ggml layouts, see SOURCE.md there).
 *   - every dot path (scalar, AVX2, AVX-512 VNNI, each where the CPU has it) equals the
 *     float64 dot of the dequantized weights with the dequantized activation blocks
 *     (d * qs, and for Q8_1 the s field checked separately) up to float32 rounding:
 *     |err| <= 1e-5 * sum |w x| + 1e-30.
 *   - the quantizers against quant.h's definition (llama.cpp's x86 quantize_row_q8_0 /
 *     q8_1: id = 127 / max|x|, round half to even) and hand-worked blocks.
 *   - facet_matmul on block weights: each output equals the float64 dot above (same
 *     bound), bit-identical whatever n_rows, with 1 or 2 threads, and in
 *     facet_matmul_multi; facet_wtensor_row equals the NumPy row.
 *   - Q8_0 / Q4_0 repacked into facet's int8 / q4 panels read back as NumPy's values.
 *   - the several-row dots give each row the single-row dot's bits.
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

#define NB 134 /* blocks per data file */

static const struct {
    const char *file;
    facet_qtype qt;
    uint32_t ggml_type;
    size_t bytes;
    facet_qxkind xk;
} types[] = {
    {"Q4_0", FACET_QT_Q4_0, 2, 18, FACET_QX_Q8_0},   {"Q4_1", FACET_QT_Q4_1, 3, 20, FACET_QX_Q8_1},
    {"Q5_0", FACET_QT_Q5_0, 6, 22, FACET_QX_Q8_0},   {"Q5_1", FACET_QT_Q5_1, 7, 24, FACET_QX_Q8_1},
    {"Q8_0", FACET_QT_Q8_0, 8, 34, FACET_QX_Q8_0},   {"IQ4_NL", FACET_QT_IQ4_NL, 20, 18, FACET_QX_Q8_0},
};
#define NTYPES (sizeof types / sizeof types[0])

static void *read_file(const char *name, const char *ext, size_t want) {
    char path[512];
    snprintf(path, sizeof path, "%s/quant_legacy/%s.%s", FACET_TEST_DATA, name, ext);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    void *buf = malloc(want + 1);
    size_t got = fread(buf, 1, want + 1, f);
    fclose(f);
    if (got != want) fail_msg("%s: %zu bytes, expected %zu", path, got, want);
    return buf;
}

/* IEEE half <-> float, written from the format (not facet's converters): value of a
 * finite half, and the nearest half of a float (ties to even) by bisection over the
 * ordered finite encodings. */
static double half_value(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return h & 0x8000 ? -v : v;
}
static uint16_t half_of(float x) {
    double a = fabs((double)x);
    uint16_t sign = signbit(x) ? 0x8000 : 0, lo = 0, hi = 0x7bff;
    if (a >= half_value(hi)) return sign | hi; /* (the tests stay below 65504) */
    while (hi - lo > 1) { /* half_value(lo) <= a < half_value(hi) */
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if (half_value(mid) <= a) lo = mid;
        else hi = mid;
    }
    double dl = a - half_value(lo), dh = half_value(hi) - a;
    return sign | (dl < dh || (dl == dh && !(lo & 1)) ? lo : hi);
}

static const facet_qtype_traits *traits(size_t k) { return facet_qtype_traits_of(types[k].qt); }

static void test_traits(void **state) {
    (void)state;
    for (size_t k = 0; k < NTYPES; k++) {
        const facet_qtype_traits *t = traits(k);
        assert_string_equal(t->name, types[k].file);
        assert_int_equal(t->ggml_type, types[k].ggml_type);
        assert_int_equal(t->block, 32);
        assert_int_equal(t->block_bytes, types[k].bytes);
        assert_int_equal(t->xkind, types[k].xk);
        assert_non_null(t->dequant_row);
        assert_non_null(t->dot_scalar);
        assert_int_equal(facet_qtype_of_ggml(types[k].ggml_type), types[k].qt);
        assert_non_null(strstr(facet_qtype_runnable_list(), t->name));
    }
    assert_int_equal(facet_qtype_of_ggml(16), -1); /* IQ2_XXS: no kernels */
    assert_int_equal(facet_qtype_of_ggml(0), -1);  /* F32 is not a block type */
    assert_int_equal(facet_qx_block_bytes(FACET_QX_Q8_0), 34);
    assert_int_equal(facet_qx_block_bytes(FACET_QX_Q8_1), 36);
    assert_int_equal(facet_qx_block(FACET_QX_Q8_1), 32);
}

static void test_dequant_matches_numpy(void **state) {
    (void)state;
    for (size_t k = 0; k < NTYPES; k++) {
        uint8_t *blk = read_file(types[k].file, "bin", NB * types[k].bytes);
        float *want = read_file(types[k].file, "f32", NB * 32 * sizeof(float));
        float *got = malloc(NB * 32 * sizeof(float));
        traits(k)->dequant_row(blk, got, NB * 32);
        for (int i = 0; i < NB * 32; i++)
            if (memcmp(&got[i], &want[i], sizeof(float)))
                fail_msg("%s element %d (block %d): got %.9g, NumPy %.9g", types[k].file, i,
                         i / 32, got[i], want[i]);
        /* a row starting at a later block reads only its own blocks */
        traits(k)->dequant_row(blk + 3 * types[k].bytes, got, 2 * 32);
        assert_memory_equal(got, want + 3 * 32, 2 * 32 * sizeof(float));
        free(blk);
        free(want);
        free(got);
    }
}

/* splitmix-style generator: deterministic activations */
static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double rnd_unit(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0; /* [0, 1) */
}

/* Element i of an activation row in blocks of kind k, as the block states it (d * q). */
static double x_value(facet_qxkind k, const void *x, int i) {
    if (k == FACET_QX_Q8_1) {
        const facet_blk_q8_1 *b = (const facet_blk_q8_1 *)x + i / 32;
        return (double)half_value(b->d) * b->qs[i % 32];
    }
    const facet_blk_q8_0 *b = (const facet_blk_q8_0 *)x + i / 32;
    return (double)half_value(b->d) * b->qs[i % 32];
}

/* The float64 dot of w (dequantized, n values) with activation row x of kind k: the Q8_1
 * types' dot uses the block's s = f16(d * sum q) for the min term, exactly as carried, so
 * the oracle does too (s is checked against d * sum q in test_quantizers). */
static void ref_dot(const facet_qtype_traits *t, const uint8_t *wblk, const float *wf,
                    const void *x, int n, double *ref, double *mag) {
    *ref = *mag = 0;
    if (t->xkind != FACET_QX_Q8_1) {
        for (int i = 0; i < n; i++) {
            double v = (double)wf[i] * x_value(t->xkind, x, i);
            *ref += v;
            *mag += fabs(v);
        }
        return;
    }
    /* w = d q + m: sum_i (d q_i + m) x_i = d sum q_i x_i + m * (d_x sum qx_i) = ... + m * s */
    for (int b = 0; b < n / 32; b++) {
        const uint8_t *blk = wblk + (size_t)b * t->block_bytes;
        uint16_t hd, hm;
        memcpy(&hd, blk, 2);
        memcpy(&hm, blk + 2, 2);
        double d = half_value(hd), m = half_value(hm);
        const facet_blk_q8_1 *xb = (const facet_blk_q8_1 *)x + b;
        for (int j = 0; j < 32; j++) {
            double w = (double)wf[b * 32 + j] - m; /* d * q, exact in float */
            double v = w * x_value(FACET_QX_Q8_1, x, b * 32 + j);
            *ref += v;
            *mag += fabs(v);
        }
        double v = m * half_value(xb->s);
        *ref += v;
        *mag += fabs(v);
        (void)d;
    }
}

typedef struct {
    const char *name;
    facet_qdot_fn fn;
} dot_path;

static int paths_of(const facet_qtype_traits *t, dot_path out[4]) {
    const facet_cpu_info *c = facet_cpu();
    int n = 0;
    out[n++] = (dot_path){"scalar", t->dot_scalar};
    if (c->detected >= FACET_CPU_AVX2 && t->dot_avx2) out[n++] = (dot_path){"avx2", t->dot_avx2};
    if (c->detected >= FACET_CPU_AVX512 && t->dot_avx512)
        out[n++] = (dot_path){"avx512", t->dot_avx512};
    if (c->avx512_vnni && t->dot_avx512vnni) out[n++] = (dot_path){"avx512vnni", t->dot_avx512vnni};
    return n;
}

static void *quantize(facet_qxkind k, const float *x, int n) {
    void *out = malloc((size_t)(n / 32) * facet_qx_block_bytes(k));
    facet_quantize_row_qx(k, x, out, n);
    return out;
}

static void check_dot(const char *what, const facet_qtype_traits *t, const uint8_t *blk,
                      const float *wf, const void *xq, int n) {
    double ref, mag;
    ref_dot(t, blk, wf, xq, n, &ref, &mag);
    dot_path paths[4];
    int np = paths_of(t, paths);
    for (int p = 0; p < np; p++) {
        float got = NAN;
        paths[p].fn(n, &got, blk, xq);
        double err = fabs((double)got - ref);
        if (!(err <= 1e-5 * mag + 1e-30))
            fail_msg("%s %s %s n=%d: got %.9g, float64 %.9g (err %.3g, sum|wx| %.3g)", t->name,
                     paths[p].name, what, n, got, ref, err, mag);
    }
}

/* Every path of every type against the float64 dot, for rows of 1, 2, 3 (odd: the
 * AVX-512 path's half register), 8 and 134 blocks and three kinds of activations. */
static void test_dot_paths(void **state) {
    (void)state;
    const int lens[] = {1, 2, 3, 8, NB};
    float *xf = malloc(NB * 32 * sizeof(float)), *wf = malloc(NB * 32 * sizeof(float));
    for (size_t k = 0; k < NTYPES; k++) {
        const facet_qtype_traits *t = traits(k);
        uint8_t *blk = read_file(types[k].file, "bin", NB * types[k].bytes);
        t->dequant_row(blk, wf, NB * 32);
        for (int kind = 0; kind < 3; kind++) {
            for (int i = 0; i < NB * 32; i++) {
                double u = rnd_unit() * 2 - 1;
                /* kind 0: uniform; 1: one large outlier per block; 2: every value positive,
                 * so min terms do not cancel */
                xf[i] = kind == 2 ? (float)(u * u * 3) : (float)u;
                if (kind == 1 && i % 32 == 17) xf[i] = -40.0f;
            }
            void *xq = quantize(t->xkind, xf, NB * 32);
            char what[32];
            snprintf(what, sizeof what, "kind %d", kind);
            for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
                check_dot(what, t, blk, wf, xq, lens[li] * 32);
            free(xq);
        }
        free(blk);
    }
    free(xf);
    free(wf);
}

/* A long row of random bytes with sane scales on every path: catches a path that reads
 * a block's bytes out of order, which the few corpus blocks might hide. */
static void test_dot_random_blocks(void **state) {
    (void)state;
    enum { N = 256 }; /* blocks */
    float *xf = malloc(N * 32 * sizeof(float)), *wf = malloc(N * 32 * sizeof(float));
    for (int i = 0; i < N * 32; i++) xf[i] = (float)(rnd_unit() * 2 - 1);
    for (size_t k = 0; k < NTYPES; k++) {
        const facet_qtype_traits *t = traits(k);
        uint8_t *blk = malloc(N * types[k].bytes);
        for (size_t i = 0; i < N * types[k].bytes; i++) blk[i] = (uint8_t)(rnd_unit() * 256);
        int nd = t->xkind == FACET_QX_Q8_1 ? 2 : 1; /* d, and m */
        for (int b = 0; b < N; b++)
            for (int j = 0; j < nd; j++) {
                uint16_t h = (uint16_t)((rnd_unit() < 0.5 ? 0x8000 : 0) | (5 + b % 4) << 10 |
                                        (int)(rnd_unit() * 1024));
                memcpy(blk + b * types[k].bytes + 2 * j, &h, 2);
            }
        t->dequant_row(blk, wf, N * 32);
        void *xq = quantize(t->xkind, xf, N * 32);
        check_dot("random blocks", t, blk, wf, xq, N * 32);
        free(xq);
        free(blk);
    }
    free(xf);
    free(wf);
}

/* facet_quantize_row_q8_0 / _q8_1 against quant.h's definition, block by block. */
static void check_q8_block(const float *x, const int8_t *qs, uint16_t d, const uint16_t *s) {
    float amax = 0;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax) amax = fabsf(x[j]);
    float id = amax != 0 ? 127.0f / amax : 0.0f, dd = amax / 127.0f;
    assert_int_equal(d, half_of(dd));
    int sum = 0;
    for (int j = 0; j < 32; j++) {
        assert_int_equal(qs[j], (int)rintf(x[j] * id));
        sum += qs[j];
    }
    if (s) assert_int_equal(*s, half_of((float)sum * dd));
}

static void test_quantizers(void **state) {
    (void)state;
    enum { N = 8 };
    float x[N * 32];
    facet_blk_q8_0 y0[N];
    facet_blk_q8_1 y1[N];
    for (int i = 0; i < N * 32; i++) x[i] = (float)((rnd_unit() * 2 - 1) * (1 + i / 32));
    memset(x + 32 * 3, 0, 32 * sizeof(float)); /* an all-zero block: d = 0, qs = 0 */
    x[32 * 5 + 20] = -1e4f;
    facet_quantize_row_q8_0(x, y0, N * 32);
    facet_quantize_row_q8_1(x, y1, N * 32);
    for (int b = 0; b < N; b++) {
        check_q8_block(x + 32 * b, y0[b].qs, y0[b].d, NULL);
        check_q8_block(x + 32 * b, y1[b].qs, y1[b].d, &y1[b].s);
    }
    assert_int_equal(y0[3].d, 0);

    /* hand-worked: x[j] = (j - 16) / 16: max |x| = 1 (x[0] = -1), id = 127, d = f16(1/127);
     * x[31] = 15/16 -> 119.0625 -> 119; x[8] = -0.5 -> -63.5 -> -64 (half to even);
     * x[24] = 0.5 -> 63.5 -> 64; sum = -127 + (-119 .. 119 in 1/16 steps of 127) */
    float h[32];
    for (int j = 0; j < 32; j++) h[j] = (float)(j - 16) / 16.0f;
    facet_quantize_row_q8_1(h, y1, 32);
    assert_int_equal(y1[0].qs[0], -127);
    assert_int_equal(y1[0].qs[31], 119);
    assert_int_equal(y1[0].qs[8], -64);
    assert_int_equal(y1[0].qs[24], 64);
    assert_int_equal(y1[0].qs[16], 0);
    int sum = 0;
    for (int j = 0; j < 32; j++) sum += y1[0].qs[j];
    assert_int_equal(sum, -127); /* the others cancel in +-pairs around 0 */
    assert_int_equal(y1[0].s, half_of(-127.0f / 127.0f));
}

/* facet_matmul on block weights: n_out x cols matrices of random blocks, X of n_rows. */
static void test_matmul_driver(void **state) {
    (void)state;
    enum { COLS = 256, OUT = 37, ROWS = 7 };
    facet_pool *pool2 = facet_pool_create(2);
    assert_non_null(pool2);
    float *X = malloc(ROWS * COLS * sizeof(float)), *bias = malloc(OUT * sizeof(float));
    float *Y1 = malloc(ROWS * OUT * sizeof(float)), *Y7 = malloc(ROWS * OUT * sizeof(float));
    float *Yp = malloc(ROWS * OUT * sizeof(float)), *Ym = malloc(ROWS * OUT * sizeof(float));
    float *wf = malloc(OUT * COLS * sizeof(float)), *row = malloc(COLS * sizeof(float));
    for (int i = 0; i < ROWS * COLS; i++) X[i] = (float)(rnd_unit() * 2 - 1);
    for (int o = 0; o < OUT; o++) bias[o] = (float)(rnd_unit() - 0.5);
    for (size_t k = 0; k < NTYPES; k++) {
        const facet_qtype_traits *t = traits(k);
        size_t rb = COLS / 32 * t->block_bytes;
        uint8_t *blk = malloc(OUT * rb);
        for (size_t i = 0; i < OUT * rb; i++) blk[i] = (uint8_t)(rnd_unit() * 256);
        for (int b = 0; b < OUT * COLS / 32; b++) {
            uint16_t h = (uint16_t)((rnd_unit() < 0.5 ? 0x8000 : 0) | 7 << 10 | (int)(rnd_unit() * 1024));
            memcpy(blk + b * t->block_bytes, &h, 2);
            if (t->xkind == FACET_QX_Q8_1) memcpy(blk + b * t->block_bytes + 2, &h, 2);
        }
        t->dequant_row(blk, wf, OUT * COLS);
        facet_wtensor W;
        facet_error err;
        facet_wformat f = (facet_wformat)(FACET_WF_GGUF + types[k].qt);
        assert_int_equal(facet_wtensor_blocks(&W, f, OUT, COLS, blk, NULL, &err), FACET_OK);
        assert_int_equal(facet_wtensor_bytes(&W), OUT * rb);
        assert_int_equal(facet_wtensor_packed_bytes(f, OUT, COLS), OUT * rb);
        assert_string_equal(facet_wformat_name(f), t->name);
        for (int o = 0; o < OUT; o += 9) { /* embedding rows: the dequantized row */
            facet_wtensor_row(&W, o, row);
            assert_memory_equal(row, wf + o * COLS, COLS * sizeof(float));
        }
        facet_matmul(NULL, Y7, X, &W, bias, ROWS);
        for (int r = 0; r < ROWS; r++) /* one row at a time: the same bits */
            facet_matmul(NULL, Y1 + r * OUT, X + r * COLS, &W, bias, 1);
        assert_memory_equal(Y1, Y7, ROWS * OUT * sizeof(float));
        facet_matmul(pool2, Yp, X, &W, bias, ROWS);
        assert_memory_equal(Yp, Y7, ROWS * OUT * sizeof(float));
        const facet_wtensor *Ws[2] = {&W, &W};
        float *Ys[2] = {Ym, Yp};
        const float *bs[2] = {bias, NULL};
        facet_matmul_multi(pool2, 2, Ys, X, Ws, bs, ROWS);
        assert_memory_equal(Ym, Y7, ROWS * OUT * sizeof(float));
        for (int r = 0; r < ROWS; r++) {
            void *xq = quantize(t->xkind, X + r * COLS, COLS);
            for (int o = 0; o < OUT; o++) {
                double ref, mag;
                ref_dot(t, blk + o * rb, wf + o * COLS, xq, COLS, &ref, &mag);
                double got = (double)Y7[r * OUT + o] - bias[o];
                if (!(fabs(got - ref) <= 1e-5 * mag + 1e-6 * fabs(bias[o])))
                    fail_msg("%s matmul row %d out %d: got %.9g, float64 %.9g", t->name, r, o, got, ref);
                /* the multi call's second matrix has no bias */
                if (!(fabs((double)Yp[r * OUT + o] - ref) <= 1e-5 * mag))
                    fail_msg("%s matmul_multi row %d out %d", t->name, r, o);
            }
            free(xq);
        }
        free(W.data);
        free(blk);
    }
    /* a shape the type cannot hold, and a type without kernels, are refused */
    facet_wtensor W;
    facet_error err;
    uint8_t dummy[64] = {0};
    assert_int_equal(facet_wtensor_blocks(&W, FACET_WF_GGUF_Q4_0, 1, 48, dummy, NULL, &err),
                     FACET_E_INVALID_ARGUMENT);
    assert_int_equal(facet_wtensor_blocks(&W, FACET_WF_F32, 1, 32, dummy, NULL, &err), FACET_E_UNSUPPORTED);
    free(X);
    free(bias);
    free(Y1);
    free(Y7);
    free(Yp);
    free(Ym);
    free(wf);
    free(row);
    facet_pool_free(pool2);
}

/* The several-row dots: row r of nr (1..4; rows further apart than a row's bytes) is the
 * single-row dot of the same path on that row, bit for bit (the driver mixes the two by
 * how many rows a tile has, and a row's result must not depend on it). */
static void test_dotx_matches_dot(void **state) {
    (void)state;
    enum { N = 8 * 32 + 32 }; /* 9 blocks: an odd last one */
    float xf[FACET_QDOTX_MAX * N];
    for (int i = 0; i < FACET_QDOTX_MAX * N; i++) xf[i] = (float)(rnd_unit() * 2 - 1);
    for (size_t k = 0; k < NTYPES; k++) {
        const facet_qtype_traits *t = traits(k);
        const struct {
            const char *name;
            facet_qdotx_fn x;
            facet_qdot_fn d;
            int runs;
        } paths[2] = {{"avx2", t->dotx_avx2, t->dot_avx2, facet_cpu()->detected >= FACET_CPU_AVX2},
                      {"avx512vnni", t->dotx_avx512vnni, t->dot_avx512vnni, facet_cpu()->avx512_vnni}};
        uint8_t *blk = read_file(types[k].file, "bin", NB * types[k].bytes);
        size_t rb = (N / 32) * facet_qx_block_bytes(t->xkind), xs = rb + 40;
        uint8_t *x = calloc(FACET_QDOTX_MAX, xs);
        for (int r = 0; r < FACET_QDOTX_MAX; r++) facet_quantize_row_qx(t->xkind, xf + r * N, x + r * xs, N);
        for (int p = 0; p < 2; p++) {
            if (!paths[p].runs) continue;
            assert_non_null(paths[p].x);
            for (int nr = 1; nr <= FACET_QDOTX_MAX; nr++) { /* above 4: in passes of 4 */
                float got[FACET_QDOTX_MAX], want;
                paths[p].x(N, nr, got, blk, x, xs);
                for (int r = 0; r < nr; r++) {
                    paths[p].d(N, &want, blk, x + r * xs);
                    if (memcmp(&got[r], &want, sizeof want))
                        fail_msg("%s %s dotx nr=%d row %d: %.9g, single-row dot %.9g", t->name,
                                 paths[p].name, nr, r, got[r], want);
                }
            }
        }
        free(x);
        free(blk);
    }
}

/* Q8_0 -> int8 panels and Q4_0 -> q4 panels hold exactly the blocks' values: every row
 * read back (facet_wtensor_row) equals NumPy's dequantization of the same blocks, with a
 * partial last panel (37 rows); another pair is refused. */
static void test_repack_exact(void **state) {
    (void)state;
    enum { ROWS = 37, COLS = 64 }; /* 2 blocks a row; NB = 134 >= 37 * 2 */
    const struct {
        size_t k;
        facet_wformat from, to;
    } pairs[] = {{4, FACET_WF_GGUF_Q8_0, FACET_WF_Q8}, {0, FACET_WF_GGUF_Q4_0, FACET_WF_Q4}};
    float *row = malloc(COLS * sizeof(float));
    for (size_t p = 0; p < 2; p++) {
        size_t k = pairs[p].k;
        uint8_t *blk = read_file(types[k].file, "bin", NB * types[k].bytes);
        float *want = read_file(types[k].file, "f32", NB * 32 * sizeof(float));
        facet_wtensor W;
        facet_error err;
        assert_int_equal(facet_wtensor_repack_blocks(&W, pairs[p].from, pairs[p].to, ROWS, COLS, blk, NULL, &err),
                         FACET_OK);
        assert_int_equal(W.format, pairs[p].to);
        assert_int_equal(facet_wtensor_bytes(&W), facet_wtensor_packed_bytes(pairs[p].to, ROWS, COLS));
        for (int o = 0; o < ROWS; o++) {
            facet_wtensor_row(&W, o, row);
            if (memcmp(row, want + o * COLS, COLS * sizeof(float)))
                fail_msg("%s repacked row %d differs from NumPy's values", types[k].file, o);
        }
        /* the same into a weight arena: the same bytes, memory the arena owns */
        facet_warena arena = {0};
        facet_wtensor A;
        assert_int_equal(facet_wtensor_repack_blocks(&A, pairs[p].from, pairs[p].to, ROWS, COLS, blk, &arena, &err),
                         FACET_OK);
        assert_memory_equal(A.data, W.data, facet_wtensor_bytes(&W));
        assert_true(facet_warena_owns(&arena, A.data) && !facet_warena_owns(&arena, W.data));
        facet_warena_free(&arena);
        free(W.data);
        free(blk);
        free(want);
    }
    facet_wtensor W;
    facet_error err;
    uint8_t dummy[64] = {0};
    assert_int_equal(facet_wtensor_repack_blocks(&W, FACET_WF_GGUF_Q4_1, FACET_WF_Q4, 1, 32, dummy, NULL, &err),
                     FACET_E_UNSUPPORTED);
    free(row);
}

/* facet_warena: zeroed, 64-byte aligned pieces carved from 2 MiB-aligned chunks; a piece
 * larger than the open chunk's rest (and half a chunk) gets a chunk of its own; owns() tells its memory from anyone else's; free resets. */
static void test_weight_arena(void **state) {
    (void)state;
    facet_warena a = {0};
    uint8_t *p = facet_warena_alloc(&a, 100), *q = facet_warena_alloc(&a, 1000);
    assert_non_null(p);
    assert_non_null(q);
    assert_int_equal((uintptr_t)p % (2u << 20), 0); /* the first piece starts its chunk */
    assert_ptr_equal(q, p + 128);                    /* 100 rounded up to 64s */
    for (int i = 0; i < 1000; i++) assert_int_equal(q[i], 0);
    memset(p, 0xAB, 100);
    uint8_t *big = facet_warena_alloc(&a, 40u << 20); /* more than the open chunk's rest: its own */
    assert_non_null(big);
    assert_int_equal(a.n_chunks, 2);
    assert_int_equal((uintptr_t)big % (2u << 20), 0);
    assert_int_equal(big[(40u << 20) - 1], 0);
    uint8_t *r = facet_warena_alloc(&a, 64); /* the first chunk is still open */
    assert_ptr_equal(r, q + 1024);
    assert_true(facet_warena_owns(&a, p) && facet_warena_owns(&a, big + (10u << 20)) && facet_warena_owns(&a, r));
    uint8_t outside;
    assert_false(facet_warena_owns(&a, &outside));
    facet_warena_free(&a);
    assert_int_equal(a.n_chunks, 0);
    assert_false(facet_warena_owns(&a, p));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weight_arena),
        cmocka_unit_test(test_traits),
        cmocka_unit_test(test_dequant_matches_numpy),
        cmocka_unit_test(test_dot_paths),
        cmocka_unit_test(test_dot_random_blocks),
        cmocka_unit_test(test_quantizers),
        cmocka_unit_test(test_matmul_driver),
        cmocka_unit_test(test_repack_exact),
        cmocka_unit_test(test_dotx_matches_dot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
