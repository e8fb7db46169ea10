/*
 * quant.c — the table of GGUF block types facet runs natively (quant.h): traits by
 * facet_qtype and by ggml id, activation block sizes, and the 8-bit activation
 * quantizers of the 32-element types (Q8_0, Q8_1). The types' own kernels live in
 * quant_legacy*.c (32-element types) and quant_k*.c (256-element types).
 */
#include "kernels/cpu/quant.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "kernels/cpu/matmul_internal.h"

_Static_assert(sizeof(facet_blk_q8_0) == 34, "block_q8_0 is 34 bytes");
_Static_assert(sizeof(facet_blk_q8_1) == 36, "block_q8_1 is 36 bytes");
_Static_assert(sizeof(facet_blk_q8_K) == 292, "block_q8_K is 292 bytes");

static const facet_qtype_traits *const table[FACET_QT_COUNT] = {
    [FACET_QT_Q4_0] = &facet_qt_q4_0,   [FACET_QT_Q4_1] = &facet_qt_q4_1,
    [FACET_QT_Q5_0] = &facet_qt_q5_0,   [FACET_QT_Q5_1] = &facet_qt_q5_1,
    [FACET_QT_Q8_0] = &facet_qt_q8_0,   [FACET_QT_IQ4_NL] = &facet_qt_iq4_nl,
    [FACET_QT_Q2_K] = &facet_qt_q2_K,   [FACET_QT_Q3_K] = &facet_qt_q3_K,
    [FACET_QT_Q4_K] = &facet_qt_q4_K,   [FACET_QT_Q5_K] = &facet_qt_q5_K,
    [FACET_QT_Q6_K] = &facet_qt_q6_K,   [FACET_QT_IQ4_XS] = &facet_qt_iq4_xs,
    [FACET_QT_MXFP4] = &facet_qt_mxfp4,
};

const facet_qtype_traits *facet_qtype_traits_of(facet_qtype t) {
    return (int)t >= 0 && t < FACET_QT_COUNT ? table[t] : NULL;
}

int facet_qtype_runs(facet_qtype t) {
    const facet_qtype_traits *q = facet_qtype_traits_of(t);
    return q && q->dequant_row && q->dot_scalar;
}

int facet_qtype_of_ggml(uint32_t ggml_type) {
    for (int t = 0; t < FACET_QT_COUNT; t++)
        if (table[t]->ggml_type == ggml_type && facet_qtype_runs((facet_qtype)t)) return t;
    return -1;
}

size_t facet_qx_block_bytes(facet_qxkind k) {
    switch (k) {
    case FACET_QX_Q8_0: return sizeof(facet_blk_q8_0);
    case FACET_QX_Q8_1: return sizeof(facet_blk_q8_1);
    case FACET_QX_Q8_K: return sizeof(facet_blk_q8_K);
    }
    return 0;
}

int facet_qx_block(facet_qxkind k) { return k == FACET_QX_Q8_K ? 256 : 32; }

void facet_quantize_row_qx(facet_qxkind k, const float *x, void *out, int64_t n) {
    switch (k) {
    case FACET_QX_Q8_0: facet_quantize_row_q8_0(x, out, n); return;
    case FACET_QX_Q8_1: facet_quantize_row_q8_1(x, out, n); return;
    case FACET_QX_Q8_K: facet_quantize_row_q8_K(x, out, n); return;
    }
}

/* One block of 32: d = max|x| / 127 as float, qs = round(x / d) through id = 1 / d, as
 * ggml's quantize_row_q8_0_ref / _q8_1_ref; returns d and the sum of the qs. */
static float q8_block(const float *x, int8_t *qs, int *sum) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) {
        float a = fabsf(x[j]);
        if (a > amax) amax = a;
    }
    float d = amax / 127.0f, id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int s = 0;
    for (int j = 0; j < 32; j++) {
        qs[j] = (int8_t)nearbyintf(x[j] * id);
        s += qs[j];
    }
    *sum = s;
    return d;
}

void facet_quantize_row_q8_0(const float *x, void *out, int64_t n) {
    facet_blk_q8_0 *y = out;
    for (int64_t b = 0; b < n / 32; b++) {
        int sum;
        float d = q8_block(x + b * 32, y[b].qs, &sum);
        y[b].d = facet_f32_to_f16(d);
    }
}

void facet_quantize_row_q8_1(const float *x, void *out, int64_t n) {
    facet_blk_q8_1 *y = out;
    for (int64_t b = 0; b < n / 32; b++) {
        int sum;
        float d = q8_block(x + b * 32, y[b].qs, &sum);
        y[b].d = facet_f32_to_f16(d);
        y[b].s = facet_f32_to_f16((float)sum * d);
    }
}

static char runnable_list[160];

static void make_runnable_list(void) {
    char buf[sizeof runnable_list] = "F32, F16, BF16";
    size_t off = strlen(buf);
    for (int t = 0; t < FACET_QT_COUNT; t++) {
        if (!facet_qtype_runs((facet_qtype)t)) continue;
        size_t len = strlen(table[t]->name);
        if (off + 2 + len + 1 > sizeof buf) break;
        memcpy(buf + off, ", ", 2);
        memcpy(buf + off + 2, table[t]->name, len + 1);
        off += 2 + len;
    }
    memcpy(runnable_list, buf, sizeof runnable_list);
}

const char *facet_qtype_runnable_list(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_runnable_list);
    return runnable_list;
}
