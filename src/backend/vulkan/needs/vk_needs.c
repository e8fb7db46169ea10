/*
 * vk_needs.c — the needs of the Vulkan kernels in this tree (vk_needs.h), read off the
 * shaders in src/backend/vulkan/shaders and the weight layout of vk_weights.c.
 */
#include "backend/vulkan/needs/vk_needs.h"

/* vk_weights.c: float32 one word per element; bf16 and f16 two per 32-bit word, a row
 * padded to a whole word. The quantized formats in vk_wquant.c's rows, per 32 inputs
 * (padded): int8 9 words (a scale, 32 int8 codes); q4 counted as 9 too, the widest of
 * what it loads (q4 5 words, its output projection Q6_K 8 or int8 9); a GGUF file's own
 * blocks as 12, the widest layout (the K types' int8 codes with a scale and a min per
 * 16), since the file's types are not known here. */
static uint64_t matrix_bytes(facet_weight_format f, uint64_t rows, uint64_t cols) {
    if (f == FACET_WEIGHTS_BF16 || f == FACET_WEIGHTS_F16) return rows * ((cols + 1) / 2) * 4;
    if (f == FACET_WEIGHTS_INT8 || f == FACET_WEIGHTS_Q4 || f == FACET_WEIGHTS_GGUF)
        return rows * ((cols + 31) / 32) * (f == FACET_WEIGHTS_GGUF ? 12 : 9) * 4;
    return rows * cols * 4;
}

const vk_needs vk_needs_current = {
    .invocations = 256,                   /* matmul_tiled.comp: local_size 16 x 16         */
    .group_x = 64, .group_y = 16,         /* matvec/rmsnorm/attention: 64 x 1; tiled 16 x 16 */
    .matmul_shared_bytes = 2 * 16 * 17 * 4, /* matmul_tiled.comp: xs, ws[16][17] floats    */
    .attention_shared_bytes = vk_attention_shared_bytes,
    .matrix_bytes = matrix_bytes,
    /* weights.glsl unpacks bf16 and f16 from 32-bit words with integer shifts and
     * unpackHalf2x16, the quantized codes with shifts and bitfieldExtract, and
     * accumulates in float32: no 16-bit or 8-bit feature is used. */
    .weight_features = {0},
};
