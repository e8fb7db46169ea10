/*
 * vk_matmul.c — the Vulkan backend's matmul and matmul_multi (backend.h): the weights
 * resident on the device (vk_weights.c), the activations bound where they are
 * (vk_resident.c), the dispatches recorded after the pending work. Few rows (decode,
 * <= MATVEC_ROWS) take matvec.comp, more take matmul_tiled.comp.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_ops.h"
#include "kernels/cpu/matmul_internal.h"
#include "model/facts.h"
#include "util/error.h"

/* ---- matmul ---- */

typedef struct {
    uint32_t N, K, M, has_bias, wstride, obase, ld;
} mm_push;

/* Y (n_rows, W->rows) = X W^T (+ bias): a dispatch per part of the weight's rows (one
 * binding each), part k writing outputs obase .. obase + N - 1 of each row of Y. */
static facet_status record_matmul(vk_ctx *c, vk_range y, vk_range x, const vk_weight *w,
                                  const facet_wtensor *W, vk_range bias, int has_bias,
                                  int n_rows, facet_error *err) {
    facet_status st = FACET_OK;
    for (int k = 0; k < w->n_parts && st == FACET_OK; k++) {
        uint32_t obase = (uint32_t)k * (uint32_t)w->rows_per_part;
        uint32_t N = (uint32_t)W->rows - obase < (uint32_t)w->rows_per_part
                         ? (uint32_t)W->rows - obase : (uint32_t)w->rows_per_part;
        mm_push p = {N, (uint32_t)W->cols, (uint32_t)n_rows, (uint32_t)has_bias, w->wstride,
                     obase, (uint32_t)W->rows};
        vk_range wr = {w->part[k].buf, 0, w->part[k].size};
        vk_range b[4] = {x, wr, bias, y};
        if (n_rows <= MATVEC_ROWS) {
            uint32_t gx = N < c->max_groups[0] ? N : c->max_groups[0];
            uint32_t gz = (N + gx - 1) / gx;
            st = vk_dispatch(c, VK_SH_MATVEC, w->variant, b, 4, &p, sizeof p, gx,
                             (uint32_t)n_rows, gz, err);
        } else {
            st = vk_dispatch(c, VK_SH_MATMUL_TILED, w->variant, b, 4, &p, sizeof p,
                             (N + 15) / 16, ((uint32_t)n_rows + 15) / 16, 1, err);
        }
    }
    return st;
}

void vk_matmul_multi(facet_backend *be, int n_mats, float *const *Y, const float *X,
                     const facet_wtensor *const *W, const float *const *bias, int n_rows) {
    vk_backend *b = vkb(be);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    vk_outs o = {0};
    if (b->st != FACET_OK || n_rows <= 0) return;
    if (n_mats > 4) {
        facet_err(&err, FACET_E_INVALID_ARGUMENT, "vulkan: matmul_multi of %d weights (4 at most)",
                  n_mats);
        fail(b, FACET_E_INVALID_ARGUMENT, &err);
        return;
    }
    const vk_weight *w[4];
    for (int m = 0; m < n_mats; m++)
        if (fail(b, vk_weight_get(b->d, W[m], &w[m], &err), &err) != FACET_OK) return;
    vk_range x;
    facet_status st = vk_open(c, &err);
    if (st == FACET_OK) st = vk_in(b, X, (size_t)n_rows * (size_t)W[0]->cols, &x, &err);
    for (int m = 0; m < n_mats && st == FACET_OK; m++) {
        vk_range br, y;
        st = vk_in(b, bias[m], (size_t)W[m]->rows, &br, &err);
        if (st == FACET_OK) st = vk_out(b, Y[m], (size_t)n_rows * (size_t)W[m]->rows, &o, &y, &err);
        if (st == FACET_OK)
            st = record_matmul(c, y, x, w[m], W[m], br, bias[m] != NULL, n_rows, &err);
    }
    vk_done(b, &o, st, &err);
}

void vk_matmul(facet_backend *be, float *Y, const float *X, const facet_wtensor *W,
                      const float *bias, int n_rows) {
    vk_matmul_multi(be, 1, &Y, X, &W, &bias, n_rows);
}
