/*
 * vk_needs.h — what the Vulkan kernels need of a device, declared as data (issue 24):
 * the capability table's vulkan column is these needs judged against the device's real
 * limits (backend.h facet_device_limits; model/device_verdict.c), before any weight is
 * read. A kernel that changes its workgroup, its shared memory or the device features it
 * uses changes its line here (vk_needs.c, vk_attention_shared.c), and the refusals follow.
 *
 * Plain C, no Vulkan header: built into every binary, so the judgement is unit-tested
 * with a hand-made limits struct and no device.
 */
#ifndef FACET_BACKEND_VK_NEEDS_H
#define FACET_BACKEND_VK_NEEDS_H

#include <stdint.h>

#include "facet.h"

/* The buffers one weight matrix may be split into (vk_internal.h VK_MAX_WEIGHT_PARTS). */
#define VK_NEEDS_MAX_WEIGHT_PARTS 16

typedef struct vk_needs {
    /* the largest workgroup a shader declares: matmul_tiled.comp's 16 x 16 = 256
     * invocations; matvec, rmsnorm and attention are 64 x 1 */
    uint32_t invocations;
    uint32_t group_x, group_y;     /* the largest x and y extents of any shader         */
    uint32_t matmul_shared_bytes;  /* matmul_tiled.comp's two staged tiles (bytes)       */
    /* the attention kernels' shared memory in bytes for a head of head_dim elements */
    uint64_t (*attention_shared_bytes)(int64_t head_dim);
    /* bytes of a [rows][cols] weight matrix (vk_weights.c's layout of that format; int8,
     * q4 and GGUF blocks: vk_wquant.c's widest layout the format loads); a matrix is split
     * by rows into at most VK_NEEDS_MAX_WEIGHT_PARTS bindings of maxStorageBufferRange */
    uint64_t (*matrix_bytes)(facet_weight_format f, uint64_t rows, uint64_t cols);
    /* the device features (FACET_DEV_* bits) that the matmul kernels of each run-time
     * weight format use, indexed by facet_weight_format */
    unsigned weight_features[FACET_WEIGHTS_GGUF + 1];
} vk_needs;

/* The needs of the kernels in this tree. */
extern const vk_needs vk_needs_current;

/* attn_flash.comp's tiling for a head of head_dim elements (vk_attention_shared.c):
 * its variant (specialization constant: HDMAX = 64 << variant; 0 up to 64, 1 up to 128,
 * 2 up to 256), the queries of a tile (BQ) of a variant, and the shared memory in bytes
 * it declares (the query tile, a 16-key K/V tile, the scores and the softmax
 * statistics). head_dim above 256 is the table's refusal (table.c), never asked. */
int vk_attention_variant(int64_t head_dim);
int vk_attention_bq(int variant);
uint64_t vk_attention_shared_bytes(int64_t head_dim);

#endif
