/*
 * vk_attention_shared.c — the attention kernels' shared memory as a function of
 * head_dim (vk_needs.h), the one number the attention shaders' tiling decides; whoever
 * changes their tiles changes this function, and the head_dim a device is judged to
 * serve (model/device_verdict.c) follows.
 *
 * The layout declared: a FlashAttention-style kernel that stages, per step, a tile of
 * VK_ATTN_KEYS keys and their values (two tiles of VK_ATTN_KEYS x head_dim floats),
 * VK_ATTN_QUERIES query rows (VK_ATTN_QUERIES x head_dim floats) and their scores against
 * the key tile (VK_ATTN_QUERIES x VK_ATTN_KEYS floats). With 32 keys and 4 queries:
 * 272 * head_dim + 512 bytes — head_dim 64: 17920, 128: 35328, 256: 70144 — against
 * 32768 bytes on Mesa's lavapipe and 49152 on NVIDIA's driver.
 */
#include "backend/vulkan/needs/vk_needs.h"

#define VK_ATTN_KEYS 32u   /* keys (and values) staged per step */
#define VK_ATTN_QUERIES 4u /* query rows per workgroup           */

uint64_t vk_attention_shared_bytes(int64_t head_dim) {
    uint64_t d = head_dim > 0 ? (uint64_t)head_dim : 0;
    uint64_t floats = 2 * VK_ATTN_KEYS * d + VK_ATTN_QUERIES * d + VK_ATTN_QUERIES * VK_ATTN_KEYS;
    return floats * sizeof(float);
}
