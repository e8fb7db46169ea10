/*
 * vk_matmul.c — the Vulkan backend's matmul, matmul_multi and matmul_each (backend.h):
 * the weights resident on the device (vk_weights.c), the activations bound where they
 * are (vk_resident.c), the dispatches recorded after the pending work. Few rows (decode,
 * <= MATVEC_ROWS) take matvec.comp, more take matmul_tiled.comp; matmul_each is a
 * matvec.comp dispatch per matrix.
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

/* Host outputs fill vk_outs (VK_MAX_OUTS): before binding one more where it is full,
 * complete what is recorded and copy those out (the arena is emptied: the caller binds
 * its inputs again). Returns 1 when it did. */
static int flush_outs(vk_backend *b, vk_outs *o, const float *y, size_t n, facet_status *st,
                      facet_error *err) {
    vk_range r = {0};
    if (*st != FACET_OK || o->n < VK_MAX_OUTS || vk_resident(b, y, n, &r)) return 0;
    *st = vk_done(b, o, FACET_OK, err);
    o->n = 0;
    if (*st == FACET_OK) *st = vk_open(&b->d->c, err);
    return 1;
}

/* Up to VK_MAX_MATS weights an operation: the expert path hands 2k (gate and up) of
 * one input (k <= 64, backend.h's 128). */
#define VK_MAX_MATS 128

void vk_matmul_multi(facet_backend *be, int n_mats, float *const *Y, const float *X,
                     const facet_wtensor *const *W, const float *const *bias, int n_rows) {
    vk_backend *b = vkb(be);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    vk_outs o = {0};
    if (b->st != FACET_OK || n_rows <= 0) return;
    if (n_mats > VK_MAX_MATS) {
        facet_err(&err, FACET_E_INVALID_ARGUMENT, "vulkan: matmul_multi of %d weights (%d at most)",
                  n_mats, VK_MAX_MATS);
        fail(b, FACET_E_INVALID_ARGUMENT, &err);
        return;
    }
    /* uploaded first, then looked up: an upload may grow (move) the device's table of
     * weights, which the pointers of earlier ones point into */
    const vk_weight *w[VK_MAX_MATS];
    for (int pass = 0; pass < 2; pass++)
        for (int m = 0; m < n_mats; m++)
            if (fail(b, vk_weight_get(b->d, W[m], &w[m], &err), &err) != FACET_OK) return;
    vk_range x = {0};
    size_t nx = (size_t)n_rows * (size_t)W[0]->cols;
    facet_status st = vk_open(c, &err);
    if (st == FACET_OK) st = vk_in(b, X, nx, &x, &err);
    for (int m = 0; m < n_mats && st == FACET_OK; m++) {
        vk_range br = {0}, y = {0};
        size_t ny = (size_t)n_rows * (size_t)W[m]->rows;
        if (flush_outs(b, &o, Y[m], ny, &st, &err) && st == FACET_OK)
            st = vk_in(b, X, nx, &x, &err);
        if (st == FACET_OK) st = vk_in(b, bias[m], (size_t)W[m]->rows, &br, &err);
        if (st == FACET_OK) st = vk_out(b, Y[m], ny, &o, &y, &err);
        if (st == FACET_OK)
            st = record_matmul(c, y, x, w[m], W[m], br, bias[m] != NULL, n_rows, &err);
    }
    vk_done(b, &o, st, &err);
}

/* backend.h matmul_each: matrix m times its own input row, a matvec dispatch each,
 * recorded after the pending work (a decode step's chosen experts: their rows stay on
 * the device between the gate/up projections, the activation and the sum). */
void vk_matmul_each(facet_backend *be, int n_mats, float *const *Y, const float *const *X,
                    const facet_wtensor *const *W, const float *const *bias) {
    vk_backend *b = vkb(be);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    vk_outs o = {0};
    if (b->st != FACET_OK || n_mats <= 0) return;
    facet_status st = vk_open(c, &err);
    for (int m = 0; m < n_mats && st == FACET_OK; m++) {
        const vk_weight *w;
        vk_range x = {0}, br = {0}, y = {0};
        st = vk_weight_get(b->d, W[m], &w, &err);
        if (st == FACET_OK) flush_outs(b, &o, Y[m], (size_t)W[m]->rows, &st, &err);
        if (st == FACET_OK) st = vk_in(b, X[m], (size_t)W[m]->cols, &x, &err);
        if (st == FACET_OK) st = vk_in(b, bias[m], (size_t)W[m]->rows, &br, &err);
        if (st == FACET_OK) st = vk_out(b, Y[m], (size_t)W[m]->rows, &o, &y, &err);
        if (st == FACET_OK) st = record_matmul(c, y, x, w, W[m], br, bias[m] != NULL, 1, &err);
    }
    vk_done(b, &o, st, &err);
}

void vk_matmul(facet_backend *be, float *Y, const float *X, const facet_wtensor *W,
                      const float *bias, int n_rows) {
    vk_matmul_multi(be, 1, &Y, X, &W, &bias, n_rows);
}
