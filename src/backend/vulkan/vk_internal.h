/*
 * vk_internal.h — the model's device (backend.h facet_device) and its resident weights,
 * shared by vk_weights.c and backend_vulkan.c.
 */
#ifndef FACET_BACKEND_VK_INTERNAL_H
#define FACET_BACKEND_VK_INTERNAL_H

#include "backend/vulkan/vk.h"
#include "kernels/cpu/kernels.h"

/* One weight matrix on the device (vk_weights.c's layout). */
typedef struct vk_weight {
    const facet_wtensor *key;      /* the host tensor it was uploaded from             */
    const void *data;              /* its data, shape and format then (all must match) */
    int rows, cols;
    facet_wformat format;
    vk_buf buf;
    uint32_t wstride;              /* 32-bit words per row                             */
    int variant;                   /* the matmul shaders' WFMT: 0 f32, 1 bf16, 2 f16   */
} vk_weight;

struct facet_device {
    vk_ctx c;
    vk_weight *w;                  /* resident weights, in upload order                */
    size_t n_w, cap_w;
    uint64_t weight_bytes;         /* bytes of them on the device                      */
    vk_buf *kv;                    /* the KV caches' key and value buffers (vk_kvmem.c) */
    size_t n_kv, cap_kv;
    char desc[320];
};

/* The shaders' variant of a weight format; -1 when none serves it. */
int vk_weight_variant(facet_wformat f);
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
