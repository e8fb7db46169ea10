/*
 * backend_vulkan.c — the Vulkan backend (backend.h, issue 24): every compute operation
 * of the interface is a compute shader (shaders/NAME.comp) run on the model's device.
 *
 * The operations live in vk_matmul.c, vk_rows.c and vk_attention.c (vk_ops.h), where
 * their operands live in vk_resident.c; this file is the table. A session's activations
 * are device buffers (scratch_alloc) that the operations bind in place; each records its
 * dispatches after the pending ones, and the work is submitted once, when the host needs
 * a result: an output in host memory (the logits), sync (the engine's own arithmetic on
 * activations), status (a chunk's end) — a forward chunk is one submission.
 * - matmul / matmul_multi: the weights resident on the device (vk_weights.c). Few rows
 *   (decode, <= MATVEC_ROWS) take matvec.comp, more take matmul_tiled.comp.
 * - matmul_each (the experts of one entry, ffn_moe.c): a matvec.comp dispatch per matrix,
 *   each on its own input row.
 * - rmsnorm(_rows), rope(_rows), gated_act(_rows), kv_round, add_scaled, and the
 *   classic decoders' layernorm(_rows), act(_rows), rope_pairs_rows, copy: one dispatch
 *   over the whole range given (the engine hands them a chunk's rows).
 * - attention: attn_flash.comp, FlashAttention-style (key tiles in shared memory, an
 *   online softmax), tiles of entries for prefill, split-K over the keys for a long
 *   decode (attn_reduce.comp combines the splits); the KV cache is in the device's
 *   memory (vk_kvmem.c), read in place, one dispatch per sequence group. A ring layer's
 *   chunk of several entries (its own rows not stored yet) and a cache on the heap (the
 *   unit test's host case) gather keys and values on the host, as the CPU's views.
 * - kv_store_rows: kv_store.comp writes the chunk's rows into the cache buffers.
 * The backend runs on the calling thread (threads() = 1); errors of the device (out of
 * memory, device lost) are kept and returned by status() to the forward pass.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_ops.h"
#include "util/error.h"

static void vk_run(facet_backend *be, int n_tasks, facet_task_fn fn, void *ctx) {
    (void)be;
    for (int t = 0; t < n_tasks; t++) fn(ctx, t, 0);
}

static int vk_threads(const facet_backend *be) {
    (void)be;
    return 1;
}

static facet_status vk_reserve(facet_backend *be, const facet_kv_cache *kv, int n_heads,
                               int n_rows, facet_error *err) {
    (void)be, (void)kv, (void)n_heads, (void)n_rows, (void)err;
    return FACET_OK; /* the arena grows as operations take it */
}

/* ---- names, sizes, status ---- */

static const char *vk_matmul_kernel(const facet_backend *be, facet_wformat f) {
    (void)be;
    switch (vk_weight_variant(f)) {
    case VK_WF_F32: return "vulkan matvec/tiled f32";
    case VK_WF_BF16: return "vulkan matvec/tiled bf16";
    case VK_WF_F16: return "vulkan matvec/tiled f16";
    case VK_WQ_Q8: return "vulkan matvec/tiled int8 blocks";
    case VK_WQ_Q4: return "vulkan matvec/tiled q4 blocks";
    case VK_WQ_Q4K: return "vulkan matvec/tiled Q4_K blocks";
    case VK_WQ_Q6K: return "vulkan matvec/tiled Q6_K blocks";
    case VK_WQ_Q8M: return "vulkan matvec/tiled int8 blocks with mins";
    case VK_WQ_K8: return "vulkan matvec/tiled int8 groups of 16 with mins";
    default: return "none (not on vulkan)";
    }
}

static const char *vk_attention_kernel(const facet_backend *be, facet_kv_type t, int head_dim) {
    (void)be;
    if (head_dim > 256) return "none (head_dim > 256 not on vulkan)";
    if (t != FACET_KV_F32 && t != FACET_KV_BF16) return "none (cache type not on vulkan)";
    /* (plan.c prints 56 characters at most) */
    return t == FACET_KV_BF16 ? "vulkan flash: tiled, split-K decode, bf16 cache, f32"
                              : "vulkan flash: tiled, split-K decode, f32";
}

/* vk_weights.c's layouts: float32, two 16-bit values a word, or vk_wquant.c's rows (0
 * for a format no shader reads). */
static uint64_t vk_weight_bytes(const facet_backend *be, facet_wformat f, uint64_t rows,
                                uint64_t cols) {
    (void)be;
    int v = vk_weight_variant(f);
    uint64_t words = v == VK_WF_F32 ? cols : v == VK_WF_BF16 || v == VK_WF_F16 ? (cols + 1) / 2
                     : v > VK_WF_F16 ? vk_wquant_stride(v, cols) : 0;
    return rows * words * 4;
}

/* Submit and wait for what is recorded: the host reads the activations next. */
static void vk_sync_op(facet_backend *be) {
    vk_backend *b = vkb(be);
    facet_error err = {0};
    fail(b, vk_sync(&b->d->c, &err), &err);
}

static facet_status vk_status(facet_backend *be, facet_error *err) {
    vk_backend *b = vkb(be);
    vk_sync_op(be); /* the end of a chunk: its work is done before the step returns */
    facet_status st = b->st;
    if (st != FACET_OK && err) *err = b->err;
    b->st = FACET_OK;
    return st;
}

static void vk_free(facet_backend *be) {
    vk_backend *b = vkb(be);
    vk_sync(&b->d->c, NULL);
    for (size_t i = 0; i < b->n_scratch; i++) vk_buf_destroy(&b->d->c, &b->scratch[i]);
    free(b->scratch);
    free(be);
}

static const facet_backend_ops vulkan_ops = {
    .name = "vulkan",
    .free = vk_free,
    .run = vk_run,
    .threads = vk_threads,
    .reserve = vk_reserve,
    .matmul = vk_matmul,
    .matmul_multi = vk_matmul_multi,
    .matmul_each = vk_matmul_each,
    .attention = vk_attention,
    .kv_store = vk_kv_store,
    .kv_store_rows = vk_kv_store_rows,
    .rmsnorm = vk_rmsnorm,
    .rmsnorm_rows = vk_rmsnorm_rows,
    .rope = vk_rope,
    .rope_rows = vk_rope_rows,
    .add_scaled = vk_add_scaled,
    .gated_act = vk_gated_act,
    .gated_act_rows = vk_gated_act_rows,
    .layernorm = vk_layernorm,
    .act = vk_act,
    .layernorm_rows = vk_layernorm_rows,
    .act_rows = vk_act_rows,
    .rope_pairs_rows = vk_rope_pairs_rows,
    .copy = vk_copy,
    .kv_round = vk_kv_round,
    .matmul_kernel = vk_matmul_kernel,
    .matmul_kernel_best = vk_matmul_kernel,
    .attention_kernel = vk_attention_kernel,
    .weight_bytes = vk_weight_bytes,
    .scratch_alloc = vk_scratch_alloc,
    .scratch_free = vk_scratch_free,
    .sync = vk_sync_op,
    .status = vk_status,
};

facet_status facet_backend_vulkan_create(facet_device *d, facet_backend **out, facet_error *err) {
    *out = NULL;
    vk_backend *b = calloc(1, sizeof *b);
    if (!b) return facet_err(err, FACET_E_NOMEM, "vulkan backend");
    b->base.ops = &vulkan_ops;
    b->d = d;
    *out = &b->base;
    return FACET_OK;
}
