/*
 * vk_rows.c — the Vulkan backend's row and element operations (backend.h): rmsnorm over
 * M rows (rmsnorm_rows: a chunk's rows, or a row's heads for qk-norm), RoPE of a chunk's
 * rows (rope_rows), the gated activation, bf16 rounding and the residual (add_scaled),
 * each one dispatch over the whole range it is given, recorded after the pending work
 * (vk_resident.c: operands in the session's device buffers stay there); the classic
 * decoders' LayerNorm over M rows (layernorm_rows, also BLOOM's embedding norm), the
 * ungated MLP's activation (act_rows), GPT-J's RoPE on pairs (rope_pairs_rows: rope.comp's
 * variant 1) and the parallel residual's copy.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_ops.h"
#include "model/facts.h"
#include "util/error.h"

/* Record `shader` over ranges r[0..n) with push constants p, over `items` elements of 64
 * per workgroup in a 2-D grid (the elementwise shaders), its specialization constant
 * `variant`. */
static facet_status dispatch_variant(vk_ctx *c, vk_shader shader, int variant,
                                     const vk_range *r, int n, const void *p, size_t pbytes,
                                     uint64_t items, facet_error *err) {
    uint32_t gx, gy;
    vk_grid(c, (items + 63) / 64, &gx, &gy);
    return vk_dispatch(c, shader, variant, r, n, p, pbytes, gx, gy, 1, err);
}

static facet_status dispatch_elems(vk_ctx *c, vk_shader shader, const vk_range *r, int n,
                                   const void *p, size_t pbytes, uint64_t items,
                                   facet_error *err) {
    return dispatch_variant(c, shader, 0, r, n, p, pbytes, items, err);
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
    vk_range rx = {0}, rw = {0}, ry = {0};
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

/* rope.comp: variant 0 rotate_half, 1 pairs (2i, 2i+1) */
static void rope_rows(const facet_backend *cbe, int variant, float *x, int M, int n_heads,
                      int head_dim, int rot, const float *cos, const float *sin) {
    vk_backend *b = vkb(cbe);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    vk_outs o = {0};
    size_t n = (size_t)n_heads * (size_t)head_dim * (size_t)M, half = (size_t)rot / 2;
    if (b->st != FACET_OK || half == 0 || M <= 0) return;
    vk_range rx = {0}, rc = {0}, rs = {0};
    facet_status st = vk_open(c, &err);
    if (st == FACET_OK) st = vk_inout(b, x, n, &o, &rx, &err);
    if (st == FACET_OK) st = vk_in(b, cos, half * (size_t)M, &rc, &err);
    if (st == FACET_OK) st = vk_in(b, sin, half * (size_t)M, &rs, &err);
    struct {
        uint32_t n_heads, head_dim, half_rot, M;
    } p = {(uint32_t)n_heads, (uint32_t)head_dim, (uint32_t)half, (uint32_t)M};
    vk_range r[3] = {rx, rc, rs};
    if (st == FACET_OK)
        st = dispatch_variant(c, VK_SH_ROPE, variant, r, 3, &p, sizeof p,
                              (uint64_t)n_heads * half * M, &err);
    vk_done(b, &o, st, &err);
}

void vk_rope_rows(const facet_backend *cbe, float *x, int M, int n_heads, int head_dim, int rot,
                  const float *cos, const float *sin) {
    rope_rows(cbe, 0, x, M, n_heads, head_dim, rot, cos, sin);
}

void vk_rope_pairs_rows(const facet_backend *cbe, float *x, int M, int n_heads, int head_dim,
                        int rot, const float *cos, const float *sin) {
    rope_rows(cbe, 1, x, M, n_heads, head_dim, rot, cos, sin);
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
    if (act < FACET_ACT_SILU || act > FACET_ACT_RELU2) {
        facet_err(&err, FACET_E_UNSUPPORTED, "vulkan: activation %d has no shader (silu, "
                  "gelu_pytorch_tanh, gelu, relu2)", act);
        fail(b, FACET_E_UNSUPPORTED, &err);
        return;
    }
    vk_range rg = {0}, ru = {0};
    facet_status st = vk_open(c, &err);
    if (st == FACET_OK) st = vk_inout(b, gate, (size_t)n, &o, &rg, &err);
    if (st == FACET_OK) st = vk_in(b, up, (size_t)n, &ru, &err);
    struct {
        uint32_t n, act;
    } p = {(uint32_t)n, (uint32_t)act};
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
    vk_range rx = {0};
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
    vk_range rx = {0}, rh = {0};
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

/* M rows of n: y = LayerNorm(x) (* w) (+ b), a workgroup each (layernorm.comp) */
void vk_layernorm_rows(const facet_backend *cbe, float *y, const float *x, const float *w,
                       const float *bias, int n, int M, double eps) {
    vk_backend *b = vkb(cbe);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    vk_outs o = {0};
    size_t nm = (size_t)n * (size_t)M;
    if (b->st != FACET_OK || M <= 0 || n <= 0) return;
    vk_range rx = {0}, rw = {0}, rb = {0}, ry = {0};
    facet_status st = vk_open(c, &err);
    if (st == FACET_OK) st = vk_in(b, x, nm, &rx, &err);
    if (st == FACET_OK) st = vk_in(b, w, (size_t)n, &rw, &err);
    if (st == FACET_OK) st = vk_in(b, bias, (size_t)n, &rb, &err);
    if (st == FACET_OK) st = vk_out(b, y, nm, &o, &ry, &err);
    struct {
        uint32_t n, M;
        float eps;
        uint32_t flags;
    } p = {(uint32_t)n, (uint32_t)M, (float)eps, (w ? 1u : 0u) | (bias ? 2u : 0u)};
    vk_range r[4] = {rx, rw, rb, ry};
    uint32_t gx, gy;
    vk_grid(c, (uint64_t)M, &gx, &gy);
    if (st == FACET_OK) st = vk_dispatch(c, VK_SH_LAYERNORM, 0, r, 4, &p, sizeof p, gx, gy, 1, &err);
    vk_done(b, &o, st, &err);
}

void vk_layernorm(const facet_backend *cbe, float *y, const float *x, const float *w,
                  const float *bias, int n, double eps) {
    vk_layernorm_rows(cbe, y, x, w, bias, n, 1, eps);
}

/* x = act(x) over n * M elements (act.comp: silu, gelu tanh form, gelu erf form, relu2) */
void vk_act_rows(const facet_backend *cbe, float *x, int n, int M, int act) {
    vk_backend *b = vkb(cbe);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    vk_outs o = {0};
    uint64_t nm = (uint64_t)n * (uint64_t)M;
    if (b->st != FACET_OK || n <= 0 || M <= 0) return;
    if (act < FACET_ACT_SILU || act > FACET_ACT_RELU2 || nm > UINT32_MAX) {
        facet_err(&err, FACET_E_UNSUPPORTED, "vulkan: activation %d over %llu elements has no "
                  "shader (silu, gelu_pytorch_tanh, gelu, relu2)", act, (unsigned long long)nm);
        fail(b, FACET_E_UNSUPPORTED, &err);
        return;
    }
    vk_range rx = {0};
    facet_status st = vk_open(c, &err);
    if (st == FACET_OK) st = vk_inout(b, x, (size_t)nm, &o, &rx, &err);
    struct {
        uint32_t n, act;
    } p = {(uint32_t)nm, (uint32_t)act};
    if (st == FACET_OK) st = dispatch_elems(c, VK_SH_ACT, &rx, 1, &p, sizeof p, nm, &err);
    vk_done(b, &o, st, &err);
}

void vk_act(const facet_backend *cbe, float *x, int n, int act) {
    vk_act_rows(cbe, x, n, 1, act);
}

void vk_copy(const facet_backend *cbe, float *y, const float *x, size_t n) {
    vk_backend *b = vkb(cbe);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    vk_outs o = {0};
    if (b->st != FACET_OK || n == 0) return;
    if (n > UINT32_MAX) {
        facet_err(&err, FACET_E_INVALID_ARGUMENT, "vulkan: copy of %zu floats", n);
        fail(b, FACET_E_INVALID_ARGUMENT, &err);
        return;
    }
    vk_range rx = {0}, ry = {0};
    facet_status st = vk_open(c, &err);
    if (st == FACET_OK) st = vk_in(b, x, n, &rx, &err);
    if (st == FACET_OK) st = vk_out(b, y, n, &o, &ry, &err);
    uint32_t p = (uint32_t)n;
    vk_range r[2] = {rx, ry};
    if (st == FACET_OK) st = dispatch_elems(c, VK_SH_COPY, r, 2, &p, sizeof p, n, &err);
    vk_done(b, &o, st, &err);
}
