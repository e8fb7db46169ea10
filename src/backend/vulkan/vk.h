/*
 * vk.h — the Vulkan device layer of the Vulkan backend (issue 24): one instance, one
 * physical device, one compute queue, host-visible buffers, one compute pipeline per
 * embedded shader, and a command buffer that records many dispatches and is submitted
 * once (vk_open .. vk_dispatch* .. vk_sync). backend_vulkan.c builds the backend's
 * operations (backend.h) on it; nothing outside src/backend/vulkan includes it.
 *
 * Memory. Every buffer is bound to one memory type, HOST_VISIBLE | HOST_COHERENT, the
 * DEVICE_LOCAL one of those when the device has it (a unified-memory GPU, resizable BAR,
 * lavapipe), else system memory the device reads over the bus (correct, slower): the
 * host writes inputs and reads outputs through the mapping, no staging copy. Weights get
 * one buffer each, made once (vk_weights.c); a session's activations live in buffers of
 * its own (backend_vulkan.c scratch) and stay there between operations; inputs copied
 * from host memory, outputs bound for it and temporaries are ranges of the arena, a
 * chain of blocks valid until the pending work is waited for (vk_sync).
 *
 * Threads: none of this is thread-safe; the backend runs on the calling thread.
 * Errors: facet_status + facet_error naming the Vulkan call and its VkResult.
 */
#ifndef FACET_BACKEND_VK_H
#define FACET_BACKEND_VK_H

#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "backend/backend.h"
#include "facet.h"

/* The embedded shaders (src/backend/vulkan/shaders/NAME.comp), one pipeline each. */
typedef enum vk_shader {
    VK_SH_MATVEC = 0,   /* Y = X W^T (+ b), one workgroup per output row: decode       */
    VK_SH_MATMUL_TILED, /* the same, 16x16 output tiles through shared memory: prefill */
    VK_SH_RMSNORM,      /* y = x / sqrt(mean(x^2) + eps) * (offset + w), per row       */
    VK_SH_ROPE,         /* RoPE of a row's heads: rotate_half, variant 1 on pairs       */
    VK_SH_GATED_ACT,    /* gate = act(gate) * up                                        */
    VK_SH_KV_ROUND,     /* round to bf16 (nearest even), as a bf16 cache stores         */
    VK_SH_ATTN_FLASH,   /* softmax(softcap(q k^T scale) + mask) v, tiled, online softmax;
                           GQA, window, sinks; the KV cache in place or gathered keys    */
    VK_SH_ATTN_REDUCE,  /* split-K attention's combine of partial (max, sum, acc)      */
    VK_SH_ADD_SCALED,   /* x += h * mult: the residual                                 */
    VK_SH_KV_STORE,     /* K/V rows written into a sequence's cache buffers            */
    VK_SH_LAYERNORM,    /* y = (x - mean) / sqrt(var + eps) (* w) (+ b), per row      */
    VK_SH_ACT,          /* x = act(x): an ungated MLP's activation                      */
    VK_SH_COPY,         /* y = x                                                        */
    VK_SH_COUNT
} vk_shader;

/* A buffer bound to memory and mapped for its whole life. */
typedef struct vk_buf {
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map;
    VkDeviceSize size;
} vk_buf;

/* A range of a buffer, as a shader binding sees it. */
typedef struct vk_range {
    VkBuffer buf;
    VkDeviceSize off, size;
} vk_range;

#define VK_MAX_BINDINGS 8
#define VK_PUSH_BYTES 64
#define VK_MAX_VARIANTS 12 /* specialization constant 0 values per shader */
#define VK_MAX_ARENAS 24   /* arena blocks, each twice the last (4 MiB first)      */

typedef struct vk_ctx {
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice dev;
    VkQueue queue;
    uint32_t queue_family;
    uint32_t mem_type;             /* the one memory type of every buffer               */
    VkDeviceSize align;            /* minStorageBufferOffsetAlignment                    */
    VkDeviceSize max_range;        /* maxStorageBufferRange                              */
    uint32_t max_groups[3];        /* maxComputeWorkGroupCount                           */
    uint32_t max_shared;           /* maxComputeSharedMemorySize (bytes)                 */
    char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
    uint64_t device_bytes;         /* the largest DEVICE_LOCAL heap                     */
    int device_index;
    char note[160];                /* a setting ignored at open, for the device's line  */
    facet_device_limits limits;    /* what the kernels depend on (backend.h)            */
    /* pipelines: made on first use, per (shader, variant) */
    VkDescriptorSetLayout set_layout; /* VK_MAX_BINDINGS storage buffers, shared        */
    VkPipelineLayout pipe_layout;
    VkShaderModule modules[VK_SH_COUNT];
    VkPipeline pipes[VK_SH_COUNT][VK_MAX_VARIANTS];
    /* recording */
    VkCommandPool cmd_pool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkDescriptorPool desc_pool;
    uint32_t desc_sets, desc_sets_max; /* sets taken in this submission, pool's size   */
    int recording;
    int n_dispatch;                /* dispatches recorded in this submission            */
    uint64_t n_submits;            /* submissions so far (tests read it)                */
    /* the arena of the pending work's inputs, outputs and temporaries: blocks */
    vk_buf arenas[VK_MAX_ARENAS];
    int n_arenas, cur_arena;
    VkDeviceSize arena_used;       /* bytes taken in arenas[cur_arena]                  */
    VkBuffer dummy;                /* bound to unused bindings: a small buffer          */
    vk_buf dummy_buf;
} vk_ctx;

/* Create the instance, pick physical device `device_index` (the order of
 * vkEnumeratePhysicalDevices; -1: the first, a discrete GPU preferred) and make a device
 * with one compute queue. Errors: FACET_E_UNSUPPORTED (no Vulkan driver, no such device,
 * no compute queue, no host-visible memory), FACET_E_NOMEM. */
facet_status vk_ctx_create(vk_ctx *c, int device_index, facet_error *err);
void vk_ctx_destroy(vk_ctx *c);

/* A buffer of `bytes` (rounded up to 16), mapped. Errors: FACET_E_NOMEM. */
facet_status vk_buf_create(vk_ctx *c, VkDeviceSize bytes, vk_buf *b, facet_error *err);
void vk_buf_destroy(vk_ctx *c, vk_buf *b);

/* Start recording, unless work is pending already (then more is added to it). */
facet_status vk_open(vk_ctx *c, facet_error *err);
/* `bytes` of the arena (aligned for a storage binding), valid until vk_sync; *host: its
 * mapping (may be NULL). Errors: FACET_E_NOMEM. */
facet_status vk_take(vk_ctx *c, size_t bytes, vk_range *out, void **host, facet_error *err);
/* Record a dispatch of `shader` (its specialization constant 0 = variant) over
 * groups (gx, gy, gz) with bindings 0 .. n-1 = ranges, push constants `push`
 * (VK_PUSH_BYTES at most), followed by a compute-to-compute barrier so the next dispatch
 * sees its writes. Errors: FACET_E_NOMEM and pipeline creation's. */
facet_status vk_dispatch(vk_ctx *c, vk_shader shader, int variant, const vk_range *ranges,
                         int n, const void *push, size_t push_bytes, uint32_t gx, uint32_t gy,
                         uint32_t gz, facet_error *err);
/* Submit the pending work (if any) and wait for it; its outputs are then in the
 * buffers' mappings, and the arena is empty again. Errors: FACET_E_IO (the device failed
 * or was lost). */
facet_status vk_sync(vk_ctx *c, facet_error *err);
/* Submit the pending work (if any) and wait for it, the arena's contents kept (an
 * operation in progress still holds ranges of it). Errors: FACET_E_IO. */
facet_status vk_wait(vk_ctx *c, facet_error *err);
/* Free the arena's blocks (the device's end). */
void vk_arena_free(vk_ctx *c);

/* The embedded SPIR-V of a shader (generated from shaders/NAME.comp). */
const uint32_t *vk_shader_spirv(vk_shader s, size_t *bytes);
const char *vk_shader_name(vk_shader s);

/* Workgroups (gx, gy) covering `groups` in a 2-D grid whose x stays within
 * maxComputeWorkGroupCount[0] (the elementwise shaders read y * gx + x). */
static inline void vk_grid(const vk_ctx *c, uint64_t groups, uint32_t *gx, uint32_t *gy) {
    uint64_t mx = c->max_groups[0] ? c->max_groups[0] : 65535;
    *gx = (uint32_t)(groups < mx ? groups : mx);
    *gy = *gx ? (uint32_t)((groups + *gx - 1) / *gx) : 0;
}

/* Bytes rounded up to the device's storage-buffer offset alignment. */
static inline size_t vk_align(const vk_ctx *c, size_t bytes) {
    size_t a = (size_t)c->align;
    return (bytes + a - 1) / a * a;
}

#endif
