/* test_quant_kpanel.c — Q4_K / Q6_K panels of 16 rows (kernels/cpu/quant_kpanel.h).
 *
 * Oracles:
 *   - the repack is exact: every row read back in the file's block layout is the bytes it
 *     was, and facet_wtensor_row of a repacked tensor equals the type's dequantizer on the
 *     original row, bit for bit;
 *   - the portable panel kernel equals the float64 dot of the dequantized weights with the
 *     dequantized Q8_K activations to 1e-5 of sum |w x| (as every row dot of test_quant_k),
 *     and the type's single-row dot on each row to the same bound;
 *   - the AVX-512 VNNI kernel (where the CPU has it) equals the portable one bit for bit,
 *     for 1..FACET_QDOTX_MAX input rows, and a row's value does not depend on how many
 *     rows the call takes;
 *   - facet_matmul on a repacked tensor (bias, 1 and 2 threads, 1 and 11 input rows) equals
 *     the panel kernel's values bit for bit (so a row's logits do not depend on the batch).
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
#include "kernels/cpu/quant_kpanel.h"
#include "kernels/cpu/threadpool.h"

enum { ROWS = 32, NB = 5, COLS = NB * 256, NX = 11 };

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static double rnd_unit(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

typedef struct {
    int qt;
    facet_wformat f;
    size_t bytes, doff[2];
    int nd;
} ktype;
static const ktype ktypes[] = {
    {FACET_QT_Q4_K, FACET_WF_GGUF_Q4_K, 144, {0, 2}, 2},
    {FACET_QT_Q6_K, FACET_WF_GGUF_Q6_K, 210, {208, 0}, 1},
};

/* random blocks: every byte random, the f16 fields d (and dmin) in [2^-10, 2^-6) with
 * either sign (test_quant_k's choice); the last row's codes all at their extremes */
static uint8_t *random_rows(const ktype *k) {
    size_t n = (size_t)ROWS * NB * k->bytes;
    uint8_t *b = malloc(n);
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(rnd_unit() * 256);
    memset(b + (size_t)(ROWS - 1) * NB * k->bytes, 0xFF, NB * k->bytes);
    for (size_t blk = 0; blk < (size_t)ROWS * NB; blk++)
        for (int j = 0; j < k->nd; j++) {
            uint16_t h = (uint16_t)((rnd_unit() < 0.5 ? 0x8000 : 0) | (5 + blk % 4) << 10 |
                                    (int)(rnd_unit() * 1024));
            memcpy(b + blk * k->bytes + k->doff[j], &h, 2);
        }
    return b;
}

/* X rows quantized to Q8_K, NX of them, stride a row of blocks plus a gap of garbage */
static uint8_t *activations(size_t *stride) {
    *stride = NB * sizeof(facet_blk_q8_K) + 64;
    uint8_t *x = malloc(*stride * NX);
    memset(x, 0x7F, *stride * NX);
    float xf[COLS];
    for (int r = 0; r < NX; r++) {
        for (int i = 0; i < COLS; i++) xf[i] = (float)((rnd_unit() * 2 - 1) * (1 + r));
        facet_quantize_row_q8_K(xf, x + r * *stride, COLS);
    }
    return x;
}

static void test_repack_is_exact(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof ktypes / sizeof ktypes[0]; k++) {
        const ktype *kt = &ktypes[k];
        const facet_qtype_traits *t = facet_qtype_traits_of((facet_qtype)kt->qt);
        uint8_t *orig = random_rows(kt);
        size_t rb = NB * kt->bytes;
        assert_true(facet_kpanel_fits(kt->qt, ROWS, COLS));
        assert_false(facet_kpanel_fits(kt->qt, ROWS + 8, COLS));
        assert_false(facet_kpanel_fits(kt->qt, ROWS, COLS + 32));
        assert_false(facet_kpanel_fits(FACET_QT_Q5_K, ROWS, COLS));
        facet_wtensor w;
        facet_error err;
        assert_int_equal(facet_wtensor_blocks(&w, kt->f, ROWS, COLS, orig, NULL, &err), FACET_OK);
        assert_int_equal(facet_wtensor_kpanel(&w), 1);
        assert_int_equal(w.packed, 2);
        assert_int_equal(facet_wtensor_bytes(&w), ROWS * rb);
        assert_int_equal(facet_wtensor_kpanel(&w), 0); /* already panels */
        uint8_t back[NB * 210];
        float got[COLS], want[COLS];
        for (int r = 0; r < ROWS; r++) {
            facet_kpanel_row_blocks(kt->qt, w.data, COLS, r, back);
            if (memcmp(back, orig + r * rb, rb)) fail_msg("%s row %d: blocks differ after the repack", t->name, r);
            facet_wtensor_row(&w, r, got);
            t->dequant_row(orig + r * rb, want, COLS);
            if (memcmp(got, want, sizeof got)) fail_msg("%s row %d: facet_wtensor_row differs", t->name, r);
        }
        free(w.data);
        free(orig);
    }
}

static void test_kernels(void **state) {
    (void)state;
    const facet_cpu_info *c = facet_cpu();
    size_t xs;
    uint8_t *x = activations(&xs);
    for (size_t k = 0; k < sizeof ktypes / sizeof ktypes[0]; k++) {
        const ktype *kt = &ktypes[k];
        const facet_qtype_traits *t = facet_qtype_traits_of((facet_qtype)kt->qt);
        uint8_t *orig = random_rows(kt), *pan = malloc((size_t)ROWS * NB * kt->bytes);
        size_t rb = NB * kt->bytes;
        memcpy(pan, orig, ROWS * rb);
        assert_int_equal(facet_kpanel_repack(kt->qt, pan, ROWS, COLS), 0);
        facet_qpanel_fn sc = facet_kpanel_scalar(kt->qt), vn = facet_kpanel_avx512vnni(kt->qt);
        assert_non_null(sc);
        assert_non_null(vn);
        int vnni = c->level >= FACET_CPU_AVX512 && c->avx512_vnni;
        for (int g = 0; g < ROWS / 16; g++) {
            const uint8_t *p = pan + (size_t)g * 16 * rb;
            float ref[FACET_QDOTX_MAX][16], one[16], v[FACET_QDOTX_MAX * 16 + 1];
            for (int t0 = 0; t0 + FACET_QDOTX_MAX <= NX; t0 += NX - FACET_QDOTX_MAX) {
                const uint8_t *xt = x + t0 * xs;
                sc(COLS, FACET_QDOTX_MAX, &ref[0][0], 16, p, xt, xs);
                for (int r = 0; r < FACET_QDOTX_MAX; r++) {
                    float wf[COLS];
                    /* against float64 and the single-row dot */
                    sc(COLS, 1, one, 16, p, xt + r * xs, xs);
                    if (memcmp(one, ref[r], sizeof one)) fail_msg("%s: portable kernel, row %d depends on nt", t->name, r);
                    const facet_blk_q8_K *y = (const facet_blk_q8_K *)(xt + r * xs);
                    for (int l = 0; l < 16; l++) {
                        t->dequant_row(orig + (size_t)(16 * g + l) * rb, wf, COLS);
                        double d64 = 0, mag = 0;
                        for (int i = 0; i < COLS; i++) {
                            double xv = (double)y[i / 256].d * y[i / 256].qs[i % 256];
                            d64 += (double)wf[i] * xv;
                            mag += fabs((double)wf[i] * xv);
                        }
                        float dot;
                        t->dot_scalar(COLS, &dot, orig + (size_t)(16 * g + l) * rb, y);
                        if (!(fabs((double)ref[r][l] - d64) <= 1e-5 * mag + 1e-30) ||
                            !(fabs((double)ref[r][l] - (double)dot) <= 1e-5 * mag + 1e-30))
                            fail_msg("%s row %d input %d: panel %.9g, float64 %.9g, row dot %.9g", t->name,
                                     16 * g + l, t0 + r, ref[r][l], d64, dot);
                    }
                }
                if (!vnni) continue;
                for (int nt = 1; nt <= FACET_QDOTX_MAX; nt++) {
                    v[nt * 16] = 12345.0f; /* nothing written past the tile */
                    vn(COLS, nt, v, 16, p, xt, xs);
                    assert_true(v[nt * 16] == 12345.0f);
                    for (int r = 0; r < nt; r++)
                        if (memcmp(v + 16 * r, ref[r], sizeof ref[r]))
                            fail_msg("%s nt %d input %d: VNNI differs from the portable kernel", t->name, nt, r);
                }
            }
        }
        free(orig);
        free(pan);
    }
    free(x);
}

static void test_matmul_on_panels(void **state) {
    (void)state;
    facet_pool *pool2 = facet_pool_create(2);
    assert_non_null(pool2);
    float *X = malloc(NX * COLS * sizeof(float)), bias[ROWS];
    for (int i = 0; i < NX * COLS; i++) X[i] = (float)(rnd_unit() * 2 - 1);
    for (int o = 0; o < ROWS; o++) bias[o] = (float)(rnd_unit() - 0.5);
    for (size_t k = 0; k < sizeof ktypes / sizeof ktypes[0]; k++) {
        const ktype *kt = &ktypes[k];
        uint8_t *orig = random_rows(kt);
        facet_wtensor wp;
        facet_error err;
        assert_int_equal(facet_wtensor_blocks(&wp, kt->f, ROWS, COLS, orig, NULL, &err), FACET_OK);
        assert_int_equal(facet_wtensor_kpanel(&wp), 1);
        float yp[NX * ROWS], y1[NX * ROWS], v[16];
        /* the panel kernel's values, input row by input row */
        facet_blk_q8_K xq[NB];
        for (int n = 1; n <= NX; n += NX - 1)
            for (int pi = 0; pi < 2; pi++) {
                facet_pool *pool = pi ? pool2 : NULL;
                facet_matmul(pool, yp, X, &wp, bias, n);
                if (n == 1 && pi == 0) memcpy(y1, yp, sizeof(float) * ROWS);
                for (int r = 0; r < n; r++) {
                    facet_quantize_row_q8_K(X + r * COLS, xq, COLS);
                    for (int g = 0; g < ROWS / 16; g++) {
                        facet_kpanel_scalar(kt->qt)(COLS, 1, v, 16, (const uint8_t *)wp.data + g * 16 * NB * kt->bytes,
                                                   xq, 0);
                        for (int l = 0; l < 16; l++) {
                            int o = 16 * g + l;
                            float want = v[l] + bias[o];
                            if (memcmp(&yp[r * ROWS + o], &want, sizeof want))
                                fail_msg("type %d rows %d pool %d: Y[%d][%d] %.9g, panel kernel %.9g", kt->qt, n,
                                         pi, r, o, yp[r * ROWS + o], want);
                        }
                    }
                }
            }
        /* row 0's values are the same whatever the batch (decode == prefill) */
        assert_memory_equal(y1, yp, sizeof(float) * ROWS);
        free(wp.data);
        free(orig);
    }
    free(X);
    facet_pool_free(pool2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repack_is_exact),
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_matmul_on_panels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
