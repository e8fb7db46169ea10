/*
 * vk_attention_shared.c — the attention kernel's tiling as a function of head_dim
 * (vk_needs.h): attn_flash.comp's variant, its query tile and its shared memory. One
 * source for the two places that ask: vk_attention.c picks the variant and checks the
 * bytes at dispatch, and the device verdict (model/device_verdict.c) refuses a
 * checkpoint whose head_dim a device cannot serve before loading. Whoever changes the
 * shader's tiles changes this file, and both follow.
 *
 * attn_flash.comp declares, for HDMAX = 64 << variant and BQ queries per tile:
 *   Qs[BQ * HDMAX], KV[16 * HDMAX] (a tile of 16 keys, then of their values),
 *   S[BQ * 16], Mx[BQ], Lx[BQ], Cx[BQ]            floats
 * head_dim <= 64: 9408 bytes, <= 128: 12896, <= 256: 25184 (Mesa's lavapipe offers
 * 32768, NVIDIA's driver 49152).
 */
#include "backend/vulkan/needs/vk_needs.h"

int vk_attention_variant(int64_t head_dim) { return head_dim <= 64 ? 0 : head_dim <= 128 ? 1 : 2; }

int vk_attention_bq(int variant) { return variant == 0 ? 16 : 8; }

uint64_t vk_attention_shared_bytes(int64_t head_dim) {
    int v = vk_attention_variant(head_dim);
    uint64_t hdmax = (uint64_t)64 << v, bq = (uint64_t)vk_attention_bq(v), bk = 16;
    return sizeof(float) * (bq * hdmax + bk * hdmax + bq * bk + 3 * bq);
}
