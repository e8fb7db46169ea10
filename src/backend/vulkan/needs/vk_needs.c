/*
 * vk_needs.c — the needs of the Vulkan kernels in this tree (vk_needs.h), read off the
 * shaders in src/backend/vulkan/shaders and the weight layout of vk_weights.c.
 */
#include "backend/vulkan/needs/vk_needs.h"

/* vk_weights.c: float32 one word per element; bf16 and f16 two per 32-bit word, a row
 * padded to a whole word. Formats no shader reads count as float32 (never asked: they
 * are refused by name first). */
static uint64_t matrix_bytes(facet_weight_format f, uint64_t rows, uint64_t cols) {
    if (f == FACET_WEIGHTS_BF16 || f == FACET_WEIGHTS_F16) return rows * ((cols + 1) / 2) * 4;
    return rows * cols * 4;
}

const vk_needs vk_needs_current = {
    .invocations = 256,                   /* matmul_tiled.comp: local_size 16 x 16         */
    .group_x = 64, .group_y = 16,         /* matvec/rmsnorm/attention: 64 x 1; tiled 16 x 16 */
    .matmul_shared_bytes = 2 * 16 * 17 * 4, /* matmul_tiled.comp: xs, ws[16][17] floats    */
    .attention_shared_bytes = vk_attention_shared_bytes,
    .matrix_bytes = matrix_bytes,
    /* weights.glsl unpacks bf16 and f16 from 32-bit words with integer shifts and
     * unpackHalf2x16, and accumulates in float32: no 16-bit or 8-bit feature is used.
     * int8 and q4 have no shader yet (model.c refuses them by name). */
    .weight_features = {0},
};
