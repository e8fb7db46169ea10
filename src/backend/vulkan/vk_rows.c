/*
 * vk_rows.c — the Vulkan backend's row and element operations (backend.h): rmsnorm over
 * M rows (rmsnorm_rows: a chunk's rows, or a row's heads for qk-norm), RoPE of a chunk's
 * rows (rope_rows), the gated activation, bf16 rounding and the residual (add_scaled),
 * each one dispatch over the whole range it is given, recorded after the pending work
 * (vk_resident.c: operands in the session's device buffers stay there). LayerNorm and
 * the ungated activation have no shader: the capability table refuses their facts.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_ops.h"
#include "model/facts.h"
#include "util/error.h"

/* Record `shader` over ranges r[0..n) with push constants p, over `items` elements of 64
 * per workgroup in a 2-D grid (the elementwise shaders). */
static facet_status dispatch_elems(vk_ctx *c, vk_shader shader, const vk_range *r, int n,
                                   const void *p, size_t pbytes, uint64_t items,
                                   facet_error *err) {
    uint32_t gx, gy;
    vk_grid(c, (items + 63) / 64, &gx, &gy);
    return vk_dispatch(c, shader, 0, r, n, p, pbytes, gx, gy, 1, err);
}

/* M vectors of n: a workgroup each */
void vk_rmsnorm_rows(const facet_backend *cbe, float *y, const float *x, const float *w, int n,
                     int M, double eps, float offset) {
    vk_backend *b = vkb(cbe);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    vk_outs o = {0};
    size_t nm = (size_t)n * (size_t)M;
    if (b->st != FACET_OK || M <= 0) return;
    vk_range rx, rw, ry;
    facet_status st = vk_open(c, &err);
    if (st == FACET_OK) st = vk_in(b, x, nm, &rx, &err);
    if (st == FACET_OK) st = vk_in(b, w, (size_t)n, &rw, &err);
    if (st == FACET_OK) st = vk_out(b, y, nm, &o, &ry, &err);
    struct {
        uint32_t n, M;
        float eps, offset;
    } p = {(uint32_t)n, (uint32_t)M, (float)eps, offset};
    vk_range r[3] = {rx, rw, ry};
    uint32_t gx, gy;
    vk_grid(c, (uint64_t)M, &gx, &gy);
    if (st == FACET_OK) st = vk_dispatch(c, VK_SH_RMSNORM, 0, r, 3, &p, sizeof p, gx, gy, 1, &err);
    vk_done(b, &o, st, &err);
}

void vk_rmsnorm(const facet_backend *cbe, float *y, const float *x, const float *w, int n,
                double eps, float offset) {
    vk_rmsnorm_rows(cbe, y, x, w, n, 1, eps, offset);
}

void vk_rope_rows(const facet_backend *cbe, float *x, int M, int n_heads, int head_dim, int rot,
                  const float *cos, const float *sin) {
    vk_backend *b = vkb(cbe);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    vk_outs o = {0};
    size_t n = (size_t)n_heads * (size_t)head_dim * (size_t)M, half = (size_t)rot / 2;
    if (b->st != FACET_OK || half == 0 || M <= 0) return;
    vk_range rx, rc, rs;
    facet_status st = vk_open(c, &err);
    if (st == FACET_OK) st = vk_inout(b, x, n, &o, &rx, &err);
    if (st == FACET_OK) st = vk_in(b, cos, half * (size_t)M, &rc, &err);
    if (st == FACET_OK) st = vk_in(b, sin, half * (size_t)M, &rs, &err);
    struct {
        uint32_t n_heads, head_dim, half_rot, M;
    } p = {(uint32_t)n_heads, (uint32_t)head_dim, (uint32_t)half, (uint32_t)M};
    vk_range r[3] = {rx, rc, rs};
    if (st == FACET_OK)
        st = dispatch_elems(c, VK_SH_ROPE, r, 3, &p, sizeof p, (uint64_t)n_heads * half * M, &err);
    vk_done(b, &o, st, &err);
}

void vk_rope(const facet_backend *cbe, float *x, int n_heads, int head_dim, int rot,
             const float *cos, const float *sin) {
    vk_rope_rows(cbe, x, 1, n_heads, head_dim, rot, cos, sin);
}

void vk_gated_act(const facet_backend *cbe, float *gate, const float *up, int n, int act) {
    vk_backend *b = vkb(cbe);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    vk_outs o = {0};
    if (b->st != FACET_OK || n <= 0) return;
    if (act != FACET_ACT_SILU && act != FACET_ACT_GELU_TANH) {
        facet_err(&err, FACET_E_UNSUPPORTED, "vulkan: activation %d has no shader (silu, "
                  "gelu_pytorch_tanh)", act);
        fail(b, FACET_E_UNSUPPORTED, &err);
        return;
    }
    vk_range rg, ru;
    facet_status st = vk_open(c, &err);
    if (st == FACET_OK) st = vk_inout(b, gate, (size_t)n, &o, &rg, &err);
    if (st == FACET_OK) st = vk_in(b, up, (size_t)n, &ru, &err);
    struct {
        uint32_t n, act;
    } p = {(uint32_t)n, act == FACET_ACT_SILU ? 0u : 1u};
    vk_range r[2] = {rg, ru};
    if (st == FACET_OK) st = dispatch_elems(c, VK_SH_GATED_ACT, r, 2, &p, sizeof p, (uint64_t)n, &err);
    vk_done(b, &o, st, &err);
}

void vk_gated_act_rows(const facet_backend *cbe, float *gate, const float *up, int n, int M,
                       int act) {
    vk_gated_act(cbe, gate, up, n * M, act);
}

void vk_kv_round(const facet_backend *cbe, float *x, facet_kv_type t, int n) {
    vk_backend *b = vkb(cbe);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    vk_outs o = {0};
    if (b->st != FACET_OK || t == FACET_KV_F32 || n <= 0) return;
    if (t != FACET_KV_BF16) {
        facet_err(&err, FACET_E_UNSUPPORTED, "--kv-cache %s is not supported on vulkan "
                  "(supported: f32, bf16)", facet_kv_type_name(t));
        fail(b, FACET_E_UNSUPPORTED, &err);
        return;
    }
    vk_range rx;
    facet_status st = vk_open(c, &err);
    if (st == FACET_OK) st = vk_inout(b, x, (size_t)n, &o, &rx, &err);
    uint32_t p = (uint32_t)n;
    if (st == FACET_OK) st = dispatch_elems(c, VK_SH_KV_ROUND, &rx, 1, &p, sizeof p, (uint64_t)n, &err);
    vk_done(b, &o, st, &err);
}

void vk_add_scaled(const facet_backend *cbe, float *x, const float *h, size_t n, float mult) {
    vk_backend *b = vkb(cbe);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    vk_outs o = {0};
    if (b->st != FACET_OK || n == 0) return;
    if (n > UINT32_MAX) {
        facet_err(&err, FACET_E_INVALID_ARGUMENT, "vulkan: add_scaled of %zu floats", n);
        fail(b, FACET_E_INVALID_ARGUMENT, &err);
        return;
    }
    vk_range rx, rh;
    facet_status st = vk_open(c, &err);
    if (st == FACET_OK) st = vk_inout(b, x, n, &o, &rx, &err);
    if (st == FACET_OK) st = vk_in(b, h, n, &rh, &err);
    struct {
        uint32_t n;
        float mult;
    } p = {(uint32_t)n, mult};
    vk_range r[2] = {rx, rh};
    if (st == FACET_OK) st = dispatch_elems(c, VK_SH_ADD_SCALED, r, 2, &p, sizeof p, n, &err);
    vk_done(b, &o, st, &err);
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
