/*
 * vk_weights.c — the model's device (backend.h facet_device): the Vulkan context and the
 * weights resident on it. A weight matrix is uploaded the first time an operation uses
 * it and kept until the model is freed, keyed by its facet_wtensor's address and data
 * pointer (the model's weights never move; a tensor freed and another made at the same
 * address is not mistaken for it). Stored row-major, row o at word o * wstride: float32 as
 * is (wstride = cols), bf16 and f16 two per 32-bit word, element 2k in the low half
 * (wstride = ceil(cols / 2)) — the values of the host tensor exactly (read back through
 * facet_wtensor_row, so any host packing is undone); int8, q4 and the GGUF block types
 * as codes and scales (vk_wquant.c), again the host's values exactly.
 * A matrix past maxStorageBufferRange is split by rows into parts, a buffer each (one
 * binding reaches the range), which record_matmul dispatches one by one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/vulkan/vk_internal.h"
#include "kernels/cpu/matmul_internal.h"
#include "util/error.h"

int facet_vulkan_built(void) { return 1; }

facet_status facet_device_open(const char *backend, int index, facet_device **out,
                               facet_error *err) {
    *out = NULL;
    if (strcmp(backend, "vulkan"))
        return facet_err(err, FACET_E_UNSUPPORTED, "backend=%s has no devices (supported: vulkan)",
                         backend);
    facet_device *d = calloc(1, sizeof *d);
    if (!d) return facet_err(err, FACET_E_NOMEM, "vulkan device");
    facet_status st = vk_ctx_create(&d->c, index, err);
    if (st != FACET_OK) {
        free(d);
        return st;
    }
    snprintf(d->desc, sizeof d->desc, "vulkan device %d: %s, %.1f GiB%s%s", d->c.device_index,
             d->c.device_name, (double)d->c.device_bytes / (1024.0 * 1024 * 1024),
             d->c.note[0] ? "; " : "", d->c.note);
    *out = d;
    return FACET_OK;
}

void facet_device_free(facet_device *d) {
    if (!d) return;
    for (size_t i = 0; i < d->n_w; i++)
        for (int k = 0; k < d->w[i].n_parts; k++) vk_buf_destroy(&d->c, &d->w[i].part[k]);
    free(d->w);
    vk_kv_free_all(d);
    vk_ctx_destroy(&d->c);
    free(d);
}

const char *facet_device_describe(const facet_device *d) { return d->desc; }

uint64_t facet_device_submissions(const facet_device *d) { return d->c.n_submits; }

int vk_weight_variant(facet_wformat f) {
    if (f == FACET_WF_F32 || f == FACET_WF_BF16 || f == FACET_WF_F16)
        return f == FACET_WF_F32 ? VK_WF_F32 : f == FACET_WF_BF16 ? VK_WF_BF16 : VK_WF_F16;
    return vk_wquant_variant(f);
}

facet_status vk_weight_get(facet_device *d, const facet_wtensor *W, const vk_weight **out,
                           facet_error *err) {
    for (size_t i = 0; i < d->n_w; i++)
        if (d->w[i].key == W && d->w[i].data == W->data && d->w[i].rows == W->rows &&
            d->w[i].cols == W->cols && d->w[i].format == W->format) {
            *out = &d->w[i];
            return FACET_OK;
        }
    int variant = vk_weight_variant(W->format);
    if (variant < 0)
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "weights=%s is not supported on vulkan (supported: %s)",
                         facet_wformat_name(W->format), FACET_VULKAN_WEIGHTS);
    if (d->n_w == d->cap_w) {
        size_t cap = d->cap_w ? d->cap_w * 2 : 64;
        vk_weight *w = realloc(d->w, cap * sizeof *w);
        if (!w) return facet_err(err, FACET_E_NOMEM, "vulkan weight table");
        d->w = w;
        d->cap_w = cap;
    }
    vk_weight *w = &d->w[d->n_w];
    memset(w, 0, sizeof *w);
    w->key = W;
    w->data = W->data;
    w->rows = W->rows;
    w->cols = W->cols;
    w->format = W->format;
    w->variant = variant;
    uint64_t stride = variant == VK_WF_F32 ? (uint64_t)W->cols
                      : variant <= VK_WF_F16 ? (uint64_t)(W->cols + 1) / 2
                                             : vk_wquant_stride(variant, (uint64_t)W->cols);
    w->wstride = (uint32_t)stride;
    uint64_t row_bytes = stride * 4, per = (uint64_t)d->c.max_range / row_bytes;
    if (per > (uint64_t)W->rows) per = (uint64_t)W->rows;
    uint64_t parts = per ? ((uint64_t)W->rows + per - 1) / per : 0;
    if (per == 0 || parts > VK_MAX_WEIGHT_PARTS) /* one binding per part */
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "vulkan: a [%d][%d] %s weight is %llu bytes, more than %d bindings of "
                         "%s's maxStorageBufferRange (%llu bytes) hold", W->rows, W->cols,
                         facet_wformat_name(W->format),
                         (unsigned long long)((uint64_t)W->rows * row_bytes), VK_MAX_WEIGHT_PARTS,
                         d->c.device_name, (unsigned long long)d->c.max_range);
    w->rows_per_part = (int)per;
    size_t row_floats = variant <= VK_WF_F16 ? (size_t)W->cols
                                             : vk_wquant_scratch_floats(variant, W->cols);
    float *row = malloc(row_floats * sizeof(float));
    if (!row) return facet_err(err, FACET_E_NOMEM, "vulkan weight upload row");
    for (w->n_parts = 0; w->n_parts < (int)parts; w->n_parts++) {
        uint64_t o0 = (uint64_t)w->n_parts * per;
        uint64_t n = (uint64_t)W->rows - o0 < per ? (uint64_t)W->rows - o0 : per;
        facet_status st = vk_buf_create(&d->c, (VkDeviceSize)(n * row_bytes), &w->part[w->n_parts],
                                        err);
        if (st != FACET_OK) {
            for (int k = 0; k < w->n_parts; k++) vk_buf_destroy(&d->c, &w->part[k]);
            free(row);
            return st;
        }
    }
    for (int o = 0; o < W->rows; o++) {
        uint32_t *out_row = (uint32_t *)w->part[o / w->rows_per_part].map +
                            (size_t)(o % w->rows_per_part) * w->wstride;
        if (variant > VK_WF_F16) {
            vk_wquant_row(W, variant, o, out_row, row);
            continue;
        }
        facet_wtensor_row(W, o, row);
        if (variant == VK_WF_F32) {
            memcpy(out_row, row, (size_t)W->cols * sizeof(float));
            continue;
        }
        for (int i = 0; i < W->cols; i += 2) {
            uint16_t lo = variant == 1 ? facet_f32_to_bf16(row[i]) : facet_f32_to_f16(row[i]);
            uint16_t hi = 0;
            if (i + 1 < W->cols)
                hi = variant == 1 ? facet_f32_to_bf16(row[i + 1]) : facet_f32_to_f16(row[i + 1]);
            out_row[i / 2] = (uint32_t)lo | (uint32_t)hi << 16;
        }
    }
    free(row);
    d->n_w++;
    for (int k = 0; k < w->n_parts; k++) d->weight_bytes += w->part[k].size;
    *out = w;
    return FACET_OK;
}
