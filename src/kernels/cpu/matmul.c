/* matmul.c — format dispatch for weight matrices. */
#include "kernels/cpu/kernels.h"

#include <string.h>

#include "util/error.h"

const char *facet_wformat_name(facet_wformat f) {
    switch (f) {
    case FACET_WF_F32: return "f32";
    case FACET_WF_BF16: return "bf16";
    case FACET_WF_F16: return "f16";
    case FACET_WF_Q8: return "int8";
    }
    return "unknown";
}

facet_status facet_wtensor_convert(facet_wtensor *w, facet_wformat to, facet_error *err) {
    if (w->format == to) return FACET_OK;
    return facet_err(err, FACET_E_UNSUPPORTED,
                     "weights format %s is not built into this version (available: f32)",
                     facet_wformat_name(to));
}

size_t facet_wtensor_bytes(const facet_wtensor *w) {
    size_t n = (size_t)w->rows * (size_t)w->cols;
    switch (w->format) {
    case FACET_WF_F32: return n * 4;
    case FACET_WF_BF16:
    case FACET_WF_F16: return n * 2;
    case FACET_WF_Q8: return n + (n / 32) * sizeof(float);
    }
    return 0;
}

void facet_wtensor_row(const facet_wtensor *w, int row, float *out) {
    switch (w->format) {
    case FACET_WF_F32:
        memcpy(out, (const float *)w->data + (size_t)row * w->cols, sizeof(float) * (size_t)w->cols);
        return;
    default:
        /* other formats arrive with their kernels */
        return;
    }
}

void facet_matmul(facet_pool *pool, float *Y, const float *X, const facet_wtensor *W,
                  const float *bias, int n_rows) {
    switch (W->format) {
    case FACET_WF_F32:
        facet_matmul_f32(pool, Y, X, (const float *)W->data, bias, n_rows, W->cols, W->rows);
        return;
    default:
        return;
    }
}
