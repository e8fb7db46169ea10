/* test_quant_k.c — the 256-element GGUF block types (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS)
 * and the Q8_K activation quantizer (kernels/cpu/quant.h).
 *
 * Oracles:
 *   - dequant_row equals, bit for bit, NumPy's values of the same superblocks
 *     (tests/data/quant_k: 16 superblocks copied from llama.cpp-quantized corpus files and
 *     5 crafted extremes per type; the NumPy dequantizer tests/ref/ggml_kquants.py is
 *     written from the ggml layouts, see SOURCE.md there).
 *   - every dot path (portable, AVX2, AVX-512, AVX-512 VNNI, each the type has and the CPU
 *     runs)
 *     equals the float64 dot of the dequantized weights with the dequantized Q8_K
 *     activations (d * qs) up to float32 rounding: |err| <= 1e-5 * sum |w x| + 1e-30.
 *   - facet_quantize_row_q8_K against its definition (quant.h) on random rows and on
 *     hand-worked blocks.
 *   - the several-weight-row dots (decode) equal the single-row dot bit for bit.
 *   - facet_matmul_multi over matrices of different K types (one sweep where their dots
 *     read the same Q8_K blocks) equals, bit for bit, facet_matmul of each matrix alone.
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
#include "kernels/cpu/threadpool.h"

#define NSB 21 /* superblocks per data file */

static const struct {
    const char *file;
    const facet_qtype_traits *t;
    uint32_t ggml_type;
    size_t bytes;
} types[] = {
    {"Q2_K", &facet_qt_q2_K, 10, 84},   {"Q3_K", &facet_qt_q3_K, 11, 110},
    {"Q4_K", &facet_qt_q4_K, 12, 144},  {"Q5_K", &facet_qt_q5_K, 13, 176},
    {"Q6_K", &facet_qt_q6_K, 14, 210},  {"IQ4_XS", &facet_qt_iq4_xs, 23, 136},
};
#define NTYPES (sizeof types / sizeof types[0])

static void *read_file(const char *name, const char *ext, size_t want) {
    char path[512];
    snprintf(path, sizeof path, "%s/quant_k/%s.%s", FACET_TEST_DATA, name, ext);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    void *buf = malloc(want + 1);
    size_t got = fread(buf, 1, want + 1, f);
    fclose(f);
    if (got != want) fail_msg("%s: %zu bytes, expected %zu", path, got, want);
    return buf;
}

static void test_traits(void **state) {
    (void)state;
    for (size_t k = 0; k < NTYPES; k++) {
        const facet_qtype_traits *t = types[k].t;
        assert_string_equal(t->name, types[k].file);
        assert_int_equal(t->ggml_type, types[k].ggml_type);
        assert_int_equal(t->block, 256);
        assert_int_equal(t->block_bytes, types[k].bytes);
        assert_int_equal(t->xkind, FACET_QX_Q8_K);
        assert_non_null(t->dequant_row);
        assert_non_null(t->dot_scalar);
        assert_non_null(t->dot_avx2);
        assert_non_null(t->dot_avx512vnni);
    }
}

static void test_dequant_matches_numpy(void **state) {
    (void)state;
    for (size_t k = 0; k < NTYPES; k++) {
        uint8_t *blk = read_file(types[k].file, "bin", NSB * types[k].bytes);
        float *want = read_file(types[k].file, "f32", NSB * 256 * sizeof(float));
        float *got = malloc(NSB * 256 * sizeof(float));
        types[k].t->dequant_row(blk, got, NSB * 256);
        for (int i = 0; i < NSB * 256; i++)
            if (memcmp(&got[i], &want[i], sizeof(float)))
                fail_msg("%s element %d (superblock %d): got %.9g, NumPy %.9g", types[k].file, i,
                         i / 256, got[i], want[i]);
        /* a row starting at a later superblock reads only its own blocks */
        types[k].t->dequant_row(blk + 3 * types[k].bytes, got, 2 * 256);
        assert_memory_equal(got, want + 3 * 256, 2 * 256 * sizeof(float));
        free(blk);
        free(want);
        free(got);
    }
}

/* splitmix-style generator: deterministic activations */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd_unit(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0; /* [0, 1) */
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
    if (c->detected >= FACET_CPU_AVX512 && t->dot_avx512) out[n++] = (dot_path){"avx512", t->dot_avx512};
    /* avx512_vnni is reported at the level in use: the test runs at the detected one */
    if (c->avx512_vnni && t->dot_avx512vnni) out[n++] = (dot_path){"avx512vnni", t->dot_avx512vnni};
    return n;
}

/* Every path of every type against the float64 dot of dequantized operands, for rows of
 * 1, 2, 5 and 21 superblocks and three kinds of activations. */
static void test_dot_paths(void **state) {
    (void)state;
    const int lens[] = {1, 2, 5, NSB};
    float *xf = malloc(NSB * 256 * sizeof(float)), *wf = malloc(NSB * 256 * sizeof(float));
    facet_blk_q8_K *xq = malloc(NSB * sizeof(facet_blk_q8_K));
    for (size_t k = 0; k < NTYPES; k++) {
        const facet_qtype_traits *t = types[k].t;
        uint8_t *blk = read_file(types[k].file, "bin", NSB * types[k].bytes);
        t->dequant_row(blk, wf, NSB * 256);
        dot_path paths[4];
        int np = paths_of(t, paths);
        for (int kind = 0; kind < 3; kind++) {
            for (int i = 0; i < NSB * 256; i++) {
                double u = rnd_unit() * 2 - 1;
                /* kind 0: uniform; 1: one large outlier per block (attention-sink-like);
                 * 2: every value positive, so min terms do not cancel */
                xf[i] = kind == 2 ? (float)(u * u * 3) : (float)u;
                if (kind == 1 && i % 256 == 17) xf[i] = -40.0f;
            }
            facet_quantize_row_q8_K(xf, xq, NSB * 256);
            for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
                int n = lens[li] * 256;
                double ref = 0, mag = 0;
                for (int i = 0; i < n; i++) {
                    double xv = (double)xq[i / 256].d * xq[i / 256].qs[i % 256];
                    ref += (double)wf[i] * xv;
                    mag += fabs((double)wf[i] * xv);
                }
                for (int p = 0; p < np; p++) {
                    float got = NAN;
                    paths[p].fn(n, &got, blk, xq);
                    double err = fabs((double)got - ref);
                    if (!(err <= 1e-5 * mag + 1e-30))
                        fail_msg("%s %s n=%d kind %d: got %.9g, float64 %.9g (err %.3g, sum|wx| %.3g)",
                                 types[k].file, paths[p].name, n, kind, got, ref, err, mag);
                }
            }
        }
        free(blk);
    }
    free(xf);
    free(wf);
    free(xq);
}

/* A long random row (as a real matrix row: 16 superblocks of random bytes with sane
 * scales) on every path, to catch a path that reads a block's bytes out of order, which
 * the few corpus blocks might hide. */
static void test_dot_random_blocks(void **state) {
    (void)state;
    enum { NB = 64 };
    float *xf = malloc(NB * 256 * sizeof(float)), *wf = malloc(NB * 256 * sizeof(float));
    facet_blk_q8_K *xq = malloc(NB * sizeof(facet_blk_q8_K));
    for (int i = 0; i < NB * 256; i++) xf[i] = (float)(rnd_unit() * 2 - 1);
    facet_quantize_row_q8_K(xf, xq, NB * 256);
    for (size_t k = 0; k < NTYPES; k++) {
        const facet_qtype_traits *t = types[k].t;
        uint8_t *blk = malloc(NB * types[k].bytes);
        for (size_t i = 0; i < NB * types[k].bytes; i++) blk[i] = (uint8_t)(rnd_unit() * 256);
        /* the f16 fields: d (and dmin) in [2^-10, 2^-6) with either sign, as exponent 5..8 */
        size_t doff[2];
        int nd = 1;
        switch (types[k].ggml_type) {
        case 10: doff[0] = 80, doff[1] = 82, nd = 2; break;
        case 11: doff[0] = 108; break;
        case 12: case 13: doff[0] = 0, doff[1] = 2, nd = 2; break;
        case 14: doff[0] = 208; break;
        default: doff[0] = 0; break;
        }
        for (int b = 0; b < NB; b++)
            for (int j = 0; j < nd; j++) {
                uint16_t h = (uint16_t)((rnd_unit() < 0.5 ? 0x8000 : 0) | (5 + b % 4) << 10 |
                                        (int)(rnd_unit() * 1024));
                memcpy(blk + b * types[k].bytes + doff[j], &h, 2);
            }
        t->dequant_row(blk, wf, NB * 256);
        double ref = 0, mag = 0;
        for (int i = 0; i < NB * 256; i++) {
            double xv = (double)xq[i / 256].d * xq[i / 256].qs[i % 256];
            ref += (double)wf[i] * xv;
            mag += fabs((double)wf[i] * xv);
        }
        dot_path paths[4];
        int np = paths_of(t, paths);
        for (int p = 0; p < np; p++) {
            float got = NAN;
            paths[p].fn(NB * 256, &got, blk, xq);
            if (!(fabs((double)got - ref) <= 1e-5 * mag))
                fail_msg("%s %s random blocks: got %.9g, float64 %.9g", types[k].file, paths[p].name,
                         got, ref);
        }
        free(blk);
    }
    free(xf);
    free(wf);
    free(xq);
}

/* The several-row dots: each row's sum equals, bit for bit, the same path's single-row
 * dot of that row (quant.h), for 1..FACET_QDOTX_MAX rows laid out with a stride larger
 * than a row (the stride is honoured, nothing between rows is read as data). */
static void test_dotx_rows(void **state) {
    (void)state;
    enum { NB = 5, NR = FACET_QDOTX_MAX };
    const facet_cpu_info *c = facet_cpu();
    size_t xstride = NB * sizeof(facet_blk_q8_K) + 96;
    uint8_t *xs = malloc(xstride * NR);
    float *xf = malloc(NB * 256 * sizeof(float));
    memset(xs, 0x7f, xstride * NR); /* the gaps: would add large values if read */
    for (int r = 0; r < NR; r++) {
        for (int i = 0; i < NB * 256; i++) xf[i] = (float)((rnd_unit() * 2 - 1) * (1 + r));
        facet_quantize_row_q8_K(xf, xs + r * xstride, NB * 256);
    }
    int checked = 0;
    for (size_t k = 0; k < NTYPES; k++) {
        const facet_qtype_traits *t = types[k].t;
        uint8_t *blk = read_file(types[k].file, "bin", NSB * types[k].bytes);
        struct {
            facet_qdotx_fn x;
            facet_qdot_fn one;
            int runs;
        } p[2] = {{t->dotx_avx2, t->dot_avx2, c->detected >= FACET_CPU_AVX2},
                  {t->dotx_avx512vnni, t->dot_avx512vnni, c->avx512_vnni}};
        for (int pi = 0; pi < 2; pi++) {
            if (!p[pi].x || !p[pi].runs) continue;
            assert_non_null(p[pi].one);
            for (int nr = 1; nr <= NR; nr++) {
                /* the weights: superblocks 16..20 (crafted) of the data file */
                float got[NR], want;
                p[pi].x(NB * 256, nr, got, blk + 16 * types[k].bytes, xs, xstride);
                for (int r = 0; r < nr; r++) {
                    p[pi].one(NB * 256, &want, blk + 16 * types[k].bytes, xs + r * xstride);
                    if (memcmp(&got[r], &want, sizeof want))
                        fail_msg("%s path %d rows %d: row %d %.9g, single-row dot %.9g", types[k].file, pi,
                                 nr, r, got[r], want);
                }
                checked++;
            }
        }
        free(blk);
    }
    /* Q4_K, Q5_K and Q6_K have them where the CPU has VNNI */
    if (c->avx512_vnni) assert_true(checked >= 3 * NR);
    free(xs);
    free(xf);
}

/* facet_quantize_row_q8_K against quant.h's definition, block by block. */
static void check_q8_K_block(const float *x, const facet_blk_q8_K *y) {
    float amax = 0, m = 0;
    for (int j = 0; j < 256; j++)
        if (fabsf(x[j]) > amax) amax = fabsf(x[j]), m = x[j];
    if (amax == 0) {
        assert_true(y->d == 0.0f);
        for (int j = 0; j < 256; j++) assert_int_equal(y->qs[j], 0);
        for (int g = 0; g < 16; g++) assert_int_equal(y->bsums[g], 0);
        return;
    }
    float iscale = -127.0f / m;
    assert_true(y->d == 1.0f / iscale);
    for (int j = 0; j < 256; j++) {
        float v = rintf(iscale * x[j]);
        assert_int_equal(y->qs[j], v > 127 ? 127 : (int)v);
    }
    for (int g = 0; g < 16; g++) {
        int s = 0;
        for (int i = 0; i < 16; i++) s += y->qs[16 * g + i];
        assert_int_equal(y->bsums[g], s);
    }
}

static void test_q8_K_quantizer(void **state) {
    (void)state;
    enum { NB = 8 };
    float x[NB * 256];
    facet_blk_q8_K y[NB];
    for (int i = 0; i < NB * 256; i++) x[i] = (float)((rnd_unit() * 2 - 1) * (1 + i / 256));
    memset(x + 256 * 3, 0, 256 * sizeof(float)); /* an all-zero block */
    x[256 * 5 + 200] = -1e4f;                    /* a negative extreme */
    facet_quantize_row_q8_K(x, y, NB * 256);
    for (int b = 0; b < NB; b++) check_q8_K_block(x + 256 * b, &y[b]);

    /* hand-worked: x[j] = (j - 128) / 128: m = x[0] = -1, iscale = 127, d = 1/127;
     * x[255] = 127/128 -> 126.0078 -> 126; x[192] = 0.5 -> 63.5 -> 64 (ties to even);
     * x[64] = -0.5 -> -63.5 -> -64; x[128] = 0 -> 0 */
    float h[256];
    for (int j = 0; j < 256; j++) h[j] = (float)(j - 128) / 128.0f;
    facet_quantize_row_q8_K(h, y, 256);
    assert_true(y[0].d == 1.0f / 127.0f);
    assert_int_equal(y[0].qs[0], -127);
    assert_int_equal(y[0].qs[255], 126);
    assert_int_equal(y[0].qs[192], 64);
    assert_int_equal(y[0].qs[64], -64);
    assert_int_equal(y[0].qs[128], 0);
    /* a tie in magnitude: the first element of largest |x| sets the sign of d */
    for (int j = 0; j < 256; j++) h[j] = 0.25f;
    h[3] = 2.0f;
    h[7] = -2.0f;
    facet_quantize_row_q8_K(h, y, 256);
    assert_true(y[0].d == 1.0f / (-127.0f / 2.0f)); /* negative */
    assert_int_equal(y[0].qs[3], -127);
    assert_int_equal(y[0].qs[7], 127);
    assert_int_equal(y[0].qs[0], -16); /* -63.5 * 0.25 = -15.875 */
    assert_int_equal(y[0].bsums[0], -127 + 127 + 14 * -16);
}

/* facet_quantize_row_q6_K (weights, for q4's output projection): its blocks decode (the
 * type's own dequantizer) close to the input (6 bits per weight: relative RMS error under
 * 2% on normal values, where the f16 d and int8 scales add ~0.1%), a group of equal values
 * comes back to f16 precision, all-zero stays zero, and the dot kernels run on them. */
static void test_q6_K_quantizer(void **state) {
    (void)state;
    enum { N = 8 * 256 };
    float *x = malloc(N * sizeof(float)), *back = malloc(N * sizeof(float));
    uint8_t *q = malloc(N / 256 * 210);
    for (int i = 0; i < N; i += 2) { /* Box-Muller normals, a scale change per superblock */
        double u1 = rnd_unit() + 1e-12, u2 = rnd_unit(), r = sqrt(-2 * log(u1)) * (1 + i / 256);
        x[i] = (float)(r * cos(6.283185307 * u2));
        x[i + 1] = (float)(r * sin(6.283185307 * u2));
    }
    facet_quantize_row_q6_K(x, q, N);
    facet_qt_q6_K.dequant_row(q, back, N);
    double e2 = 0, x2 = 0;
    for (int i = 0; i < N; i++) e2 += (back[i] - x[i]) * (double)(back[i] - x[i]), x2 += (double)x[i] * x[i];
    assert_true(sqrt(e2 / x2) < 0.02);
    /* equal values: the group scale is exact (q = -32), stored as f16 d = max|s| / 127 times
     * an int8: the largest group's (-3: int8 127) to f16 precision, the 1.0 group's as
     * 42 / 127 of it (int8 -42: 1 / 84 worst case), zeros exactly */
    for (int i = 0; i < 256; i++) x[i] = i < 16 ? 1.0f : i < 32 ? -3.0f : 0.0f;
    facet_quantize_row_q6_K(x, q, 256);
    facet_qt_q6_K.dequant_row(q, back, 256);
    for (int i = 0; i < 256; i++)
        assert_true(fabsf(back[i] - x[i]) <= (i < 16 ? 1.2e-2f : 1e-3f) * fabsf(x[i]));
    /* the dot of the quantized row equals the dot of its dequantized values */
    facet_blk_q8_K y[1];
    float xf[256], got;
    for (int i = 0; i < 256; i++) xf[i] = (float)(rnd_unit() * 2 - 1);
    facet_quantize_row_q8_K(xf, y, 256);
    double ref = 0, mag = 0;
    for (int i = 0; i < 256; i++) ref += (double)back[i] * y[0].d * y[0].qs[i], mag += fabs((double)back[i] * y[0].d * y[0].qs[i]);
    facet_qt_q6_K.dot_scalar(256, &got, q, y);
    assert_true(fabs(got - ref) <= 1e-5 * mag);
    free(x);
    free(back);
    free(q);
}

/* The several-weight-row dots (decode sweeps): each row's sum equals, bit for bit, the
 * same path's single-row dot of that row, rows wstride apart (a gap between them that
 * would add large values if read), for 1..7 rows. */
static void test_dotr_rows(void **state) {
    (void)state;
    enum { NB = 5, MAXR = 7 };
    const facet_cpu_info *c = facet_cpu();
    float *xf = malloc(NB * 256 * sizeof(float));
    facet_blk_q8_K *xq = malloc(NB * sizeof(facet_blk_q8_K));
    for (int i = 0; i < NB * 256; i++) xf[i] = (float)(rnd_unit() * 2 - 1);
    facet_quantize_row_q8_K(xf, xq, NB * 256);
    int checked = 0;
    for (size_t k = 0; k < NTYPES; k++) {
        const facet_qtype_traits *t = types[k].t;
        if (!t->dotr_avx512vnni) continue;
        assert_non_null(t->dot_avx512vnni);
        if (!c->avx512_vnni) continue;
        /* rows of the data file's 21 superblocks (real and crafted), one row = NB of them
         * starting at superblock r, plus a gap of 3 superblocks of 0xff bytes */
        uint8_t *blk = read_file(types[k].file, "bin", NSB * types[k].bytes);
        size_t row = NB * types[k].bytes, wstride = row + 3 * types[k].bytes;
        uint8_t *w = malloc(wstride * MAXR);
        memset(w, 0xff, wstride * MAXR);
        for (int r = 0; r < MAXR; r++) memcpy(w + r * wstride, blk + (size_t)(2 * r) * types[k].bytes, row);
        for (int nr = 1; nr <= MAXR; nr++) {
            float got[MAXR], want;
            t->dotr_avx512vnni(NB * 256, nr, got, w, wstride, xq);
            for (int r = 0; r < nr; r++) {
                t->dot_avx512vnni(NB * 256, &want, w + r * wstride, xq);
                if (memcmp(&got[r], &want, sizeof want))
                    fail_msg("%s rows %d: row %d %.9g, single-row dot %.9g", types[k].file, nr, r,
                             got[r], want);
            }
            checked++;
        }
        free(w);
        free(blk);
    }
    /* Q4_K, Q5_K and Q6_K have them where the CPU has VNNI */
    if (c->avx512_vnni) assert_int_equal(checked, 3 * MAXR);
    free(xf);
    free(xq);
}

/* facet_matmul_multi over a Q4_K_M layer's mix (Q4_K q and k, Q6_K v: one Q8_K sweep),
 * with an IQ4_XS and a Q4_0 matrix beside them (Q4_0 reads Q8_0 blocks: the call falls
 * back to one facet_matmul per matrix): every output the bits of facet_matmul of its
 * matrix alone, for a decode row and a prefill's rows, on one thread and on two. */
static void test_matmul_multi_mixed_types(void **state) {
    (void)state;
    enum { COLS = 512, ROWS = 5, NM = 4 };
    const int outs[NM] = {37, 21, 40, 9};
    const facet_wformat fmt[2][NM] = {
        {FACET_WF_GGUF_Q4_K, FACET_WF_GGUF_Q4_K, FACET_WF_GGUF_Q6_K, FACET_WF_GGUF_IQ4_XS},
        {FACET_WF_GGUF_Q4_K, FACET_WF_GGUF_Q6_K, FACET_WF_GGUF_Q4_0, FACET_WF_GGUF_Q4_K}};
    facet_pool *pool2 = facet_pool_create(2);
    assert_non_null(pool2);
    float *X = malloc(ROWS * COLS * sizeof(float));
    for (int i = 0; i < ROWS * COLS; i++) X[i] = (float)(rnd_unit() * 2 - 1);
    for (int set = 0; set < 2; set++) {
        facet_wtensor W[NM];
        float *Ym[NM], *Y1[NM], *bias[NM];
        for (int m = 0; m < NM; m++) {
            const facet_qtype_traits *t = facet_qtype_traits_of((facet_qtype)facet_wformat_qtype(fmt[set][m]));
            assert_non_null(t);
            size_t bytes = (size_t)outs[m] * COLS / t->block * t->block_bytes;
            uint8_t *blk = malloc(bytes);
            for (size_t i = 0; i < bytes; i++) blk[i] = (uint8_t)(rnd_unit() * 256);
            /* bit 14 of every 16-bit word cleared: each f16 field (d, dmin) is finite and
             * below 2, so every sum stays finite */
            for (size_t i = 1; i < bytes; i += 2) blk[i] &= 0xBF;
            facet_error err;
            assert_int_equal(facet_wtensor_blocks(&W[m], fmt[set][m], outs[m], COLS, blk, NULL, &err),
                             FACET_OK);
            free(blk);
            Ym[m] = malloc(ROWS * outs[m] * sizeof(float));
            Y1[m] = malloc(ROWS * outs[m] * sizeof(float));
            bias[m] = NULL;
            if (m == 2) {
                bias[m] = malloc(outs[m] * sizeof(float));
                for (int o = 0; o < outs[m]; o++) bias[m][o] = (float)(rnd_unit() - 0.5);
            }
        }
        const facet_wtensor *Wp[NM] = {&W[0], &W[1], &W[2], &W[3]};
        const float *bp[NM] = {bias[0], bias[1], bias[2], bias[3]};
        for (int n = 1; n <= ROWS; n += ROWS - 1)
            for (int pi = 0; pi < 2; pi++) {
                facet_pool *pool = pi ? pool2 : NULL;
                facet_matmul_multi(pool, NM, Ym, X, Wp, bp, n);
                for (int m = 0; m < NM; m++) {
                    facet_matmul(pool, Y1[m], X, Wp[m], bp[m], n);
                    for (int i = 0; i < n * outs[m]; i++)
                        assert_true(isfinite(Y1[m][i]));
                    if (memcmp(Ym[m], Y1[m], (size_t)n * outs[m] * sizeof(float)))
                        fail_msg("set %d matrix %d (%s) rows %d pool %d: multi differs from alone", set, m,
                                 facet_wformat_name(fmt[set][m]), n, pi);
                }
            }
        for (int m = 0; m < NM; m++) {
            free(W[m].data);
            free(Ym[m]);
            free(Y1[m]);
            free(bias[m]);
        }
    }
    free(X);
    facet_pool_free(pool2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q6_K_quantizer),
        cmocka_unit_test(test_traits),
        cmocka_unit_test(test_dequant_matches_numpy),
        cmocka_unit_test(test_dot_paths),
        cmocka_unit_test(test_dot_random_blocks),
        cmocka_unit_test(test_dotx_rows),
        cmocka_unit_test(test_dotr_rows),
        cmocka_unit_test(test_matmul_multi_mixed_types),
        cmocka_unit_test(test_q8_K_quantizer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
