/*
 * vk_internal.h — the model's device (backend.h facet_device) and its resident weights,
 * shared by vk_weights.c and backend_vulkan.c.
 */
#ifndef FACET_BACKEND_VK_INTERNAL_H
#define FACET_BACKEND_VK_INTERNAL_H

#include "backend/backend.h"
#include "backend/vulkan/needs/vk_needs.h"
#include "backend/vulkan/vk.h"
#include "kernels/cpu/kernels.h"

/* Buffers a weight matrix may be split into (rows per part: what one binding reaches);
 * the device judge's VK_NEEDS_MAX_WEIGHT_PARTS. */
#define VK_MAX_WEIGHT_PARTS VK_NEEDS_MAX_WEIGHT_PARTS

/* One weight matrix on the device (vk_weights.c's layout). */
typedef struct vk_weight {
    const facet_wtensor *key;      /* the host tensor it was uploaded from             */
    const void *data;              /* its data, shape and format then (all must match) */
    int rows, cols;
    facet_wformat format;
    /* the rows in parts of rows_per_part (the last may hold fewer), a buffer each: one
     * storage binding reaches maxStorageBufferRange bytes, so a larger matrix (a big
     * vocabulary's lm_head on lavapipe's 128 MiB) is split by rows */
    vk_buf part[VK_MAX_WEIGHT_PARTS];
    int n_parts, rows_per_part;
    uint32_t wstride;              /* 32-bit words per row                             */
    int variant;                   /* the matmul shaders' WFMT (vk_wvariant)           */
} vk_weight;

/* The matmul shaders' weight variants (specialization constant WFMT, shaders/weights.glsl):
 * the float formats as vk_weights.c stores them, the quantized ones as vk_wquant.c does. */
typedef enum vk_wvariant {
    VK_WF_F32 = 0, VK_WF_BF16 = 1, VK_WF_F16 = 2,
    VK_WQ_Q8 = 3,  /* int8 codes, a float32 scale per 32: int8, GGUF Q8_0, Q5_0, IQ4_NL */
    VK_WQ_Q4 = 4,  /* 4-bit codes - 8, a float32 scale per 32: facet's q4, GGUF Q4_0      */
    VK_WQ_Q4K = 5, /* 4-bit codes, a float32 scale and min per 32: GGUF Q4_K              */
    VK_WQ_Q6K = 6, /* 6-bit codes - 32, a float32 scale per 16: GGUF Q6_K                 */
    VK_WQ_Q8M = 7, /* int8 codes, a float32 scale and min per 32: GGUF Q4_1, Q5_1          */
    VK_WQ_K8 = 8,  /* int8 codes, a float32 scale and min per 16: Q2_K, Q3_K, Q5_K, IQ4_XS */
    VK_WV_COUNT
} vk_wvariant;
_Static_assert(VK_WV_COUNT <= VK_MAX_VARIANTS, "a pipeline slot per weight variant");

struct facet_device {
    vk_ctx c;
    vk_weight *w;                  /* resident weights, in upload order                */
    size_t n_w, cap_w;
    uint64_t weight_bytes;         /* bytes of them on the device                      */
    vk_buf *kv;                    /* the KV caches' key and value buffers (vk_kvmem.c) */
    size_t n_kv, cap_kv;
    char desc[768];                /* the device's line (name, memory, a note)           */
};

/* The shaders' variant of a weight format (vk_wvariant); -1 when none serves it. */
int vk_weight_variant(facet_wformat f);
/* vk_wquant.c: the quantized variant of a format (-1: none); the 32-bit words of a row
 * of `cols` inputs in it; row o of W written to out in it, through scratch
 * (vk_wquant_scratch_floats floats). */
int vk_wquant_variant(facet_wformat f);
uint64_t vk_wquant_stride(int variant, uint64_t cols);
size_t vk_wquant_scratch_floats(int variant, int cols);
void vk_wquant_row(const facet_wtensor *W, int variant, int o, uint32_t *out, float *scratch);

/* W's device copy, uploaded now if this is its first use. Errors: FACET_E_UNSUPPORTED
 * (a format no shader reads), FACET_E_NOMEM. */
facet_status vk_weight_get(facet_device *d, const facet_wtensor *W, const vk_weight **out,
                           facet_error *err);

/* The KV buffer whose mapping starts at p (a key or value buffer of a cache on this
 * device, facet_device_kv_memory): its range, 1; 0 when p is not one. */
int vk_kv_range(const facet_device *d, const void *p, vk_range *out);
/* Destroy every KV buffer left (the device's end). */
void vk_kv_free_all(facet_device *d);

#endif
