/*
 * vk_rows.c — the Vulkan backend's row operations (backend.h): rmsnorm, rope, gated_act,
 * kv_round, one submission each (they become chunk operations with the engine's next
 * step, backend.h); rmsnorm_rows norms a row's heads (qk-norm) in one. LayerNorm and the
 * ungated activation have no shader: the capability table refuses their facts.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_ops.h"
#include "kernels/cpu/matmul_internal.h"
#include "model/facts.h"
#include "util/error.h"

/* ---- row operations: one submission each ---- */

/* M vectors of n in one submission: a workgroup each */
void vk_rmsnorm_rows(const facet_backend *cbe, float *y, const float *x, const float *w,
                            int n, int M, double eps, float offset) {
    vk_backend *b = vkb(cbe);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    size_t nm = (size_t)n * (size_t)M;
    if (b->st != FACET_OK || M <= 0) return;
    if (fail(b, vk_begin(c, 2 * fbytes(c, nm) + fbytes(c, (size_t)n), &err), &err) != FACET_OK)
        return;
    vk_range rx = put(c, x, nm), rw = put(c, w, (size_t)n), ry = put(c, NULL, nm);
    struct {
        uint32_t n, M;
        float eps, offset;
    } p = {(uint32_t)n, (uint32_t)M, (float)eps, offset};
    vk_range r[3] = {rx, rw, ry};
    facet_status st = vk_dispatch(c, VK_SH_RMSNORM, 0, r, 3, &p, sizeof p, (uint32_t)M, 1, 1,
                                  &err);
    if (st == FACET_OK) st = vk_submit(c, &err);
    else vk_submit(c, NULL);
    if (fail(b, st, &err) == FACET_OK) memcpy(y, host_of(c, ry), nm * sizeof(float));
}

void vk_rmsnorm(const facet_backend *cbe, float *y, const float *x, const float *w, int n,
                       double eps, float offset) {
    vk_rmsnorm_rows(cbe, y, x, w, n, 1, eps, offset);
}

void vk_rope(const facet_backend *cbe, float *x, int n_heads, int head_dim, int rot,
                    const float *cos, const float *sin) {
    vk_backend *b = vkb(cbe);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    size_t n = (size_t)n_heads * (size_t)head_dim, half = (size_t)rot / 2;
    if (b->st != FACET_OK || half == 0) return;
    if (fail(b, vk_begin(c, fbytes(c, n) + 2 * fbytes(c, half), &err), &err) != FACET_OK) return;
    vk_range rx = put(c, x, n), rc = put(c, cos, half), rs = put(c, sin, half);
    struct {
        uint32_t n_heads, head_dim, half_rot, M;
    } p = {(uint32_t)n_heads, (uint32_t)head_dim, (uint32_t)half, 1};
    vk_range r[3] = {rx, rc, rs};
    uint32_t groups = (uint32_t)(((size_t)n_heads * half + 63) / 64);
    facet_status st = vk_dispatch(c, VK_SH_ROPE, 0, r, 3, &p, sizeof p, groups, 1, 1, &err);
    if (st == FACET_OK) st = vk_submit(c, &err);
    else vk_submit(c, NULL);
    if (fail(b, st, &err) == FACET_OK) memcpy(x, host_of(c, rx), n * sizeof(float));
}

void vk_gated_act(const facet_backend *cbe, float *gate, const float *up, int n, int act) {
    vk_backend *b = vkb(cbe);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    if (b->st != FACET_OK) return;
    if (act != FACET_ACT_SILU && act != FACET_ACT_GELU_TANH) {
        facet_err(&err, FACET_E_UNSUPPORTED, "vulkan: activation %d has no shader (silu, "
                  "gelu_pytorch_tanh)", act);
        fail(b, FACET_E_UNSUPPORTED, &err);
        return;
    }
    if (fail(b, vk_begin(c, 2 * fbytes(c, (size_t)n), &err), &err) != FACET_OK) return;
    vk_range rg = put(c, gate, (size_t)n), ru = put(c, up, (size_t)n);
    struct {
        uint32_t n, act;
    } p = {(uint32_t)n, act == FACET_ACT_SILU ? 0u : 1u};
    vk_range r[2] = {rg, ru};
    facet_status st = vk_dispatch(c, VK_SH_GATED_ACT, 0, r, 2, &p, sizeof p,
                                  ((uint32_t)n + 63) / 64, 1, 1, &err);
    if (st == FACET_OK) st = vk_submit(c, &err);
    else vk_submit(c, NULL);
    if (fail(b, st, &err) == FACET_OK) memcpy(gate, host_of(c, rg), (size_t)n * sizeof(float));
}

void vk_kv_round(const facet_backend *cbe, float *x, facet_kv_type t, int n) {
    vk_backend *b = vkb(cbe);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    if (b->st != FACET_OK || t == FACET_KV_F32) return;
    if (t != FACET_KV_BF16) {
        facet_err(&err, FACET_E_UNSUPPORTED, "--kv-cache %s is not supported on vulkan "
                  "(supported: f32, bf16)", facet_kv_type_name(t));
        fail(b, FACET_E_UNSUPPORTED, &err);
        return;
    }
    if (fail(b, vk_begin(c, fbytes(c, (size_t)n), &err), &err) != FACET_OK) return;
    vk_range rx = put(c, x, (size_t)n);
    uint32_t p = (uint32_t)n;
    facet_status st = vk_dispatch(c, VK_SH_KV_ROUND, 0, &rx, 1, &p, sizeof p,
                                  ((uint32_t)n + 63) / 64, 1, 1, &err);
    if (st == FACET_OK) st = vk_submit(c, &err);
    else vk_submit(c, NULL);
    if (fail(b, st, &err) == FACET_OK) memcpy(x, host_of(c, rx), (size_t)n * sizeof(float));
}

/* The classic decoders' row operations have no shader yet: the capability table's vulkan
 * column refuses their facts (layer_norm, ffn_ungated) before loading, so reaching these
 * is a bug; it is reported as an error, never computed elsewhere. */
void vk_layernorm(const facet_backend *cbe, float *y, const float *x, const float *w,
                         const float *bias, int n, double eps) {
    (void)y, (void)x, (void)w, (void)bias, (void)n, (void)eps;
    facet_error err;
    facet_err(&err, FACET_E_UNSUPPORTED, "vulkan: LayerNorm has no shader (layer_norm=true "
              "is refused by the capability table)");
    fail(vkb(cbe), FACET_E_UNSUPPORTED, &err);
}

void vk_act(const facet_backend *cbe, float *x, int n, int act) {
    (void)x, (void)n, (void)act;
    facet_error err;
    facet_err(&err, FACET_E_UNSUPPORTED, "vulkan: an ungated MLP's activation has no shader "
              "(ffn_ungated=true is refused by the capability table)");
    fail(vkb(cbe), FACET_E_UNSUPPORTED, &err);
}
