/*
 * backend_vulkan.c — the Vulkan backend (backend.h, issue 24): every compute operation
 * of the interface is a compute shader (shaders/NAME.comp) run on the model's device.
 *
 * What runs where in this first version:
 * - matmul / matmul_multi: the weights resident on the device (vk_weights.c); the
 *   activations written to the submission's arena, the dispatches (all of a
 *   matmul_multi's weights) recorded and submitted once, the outputs read back. Few
 *   rows (decode, <= MATVEC_ROWS) take matvec.comp, more take matmul_tiled.comp.
 * - rmsnorm, rope, gated_act, kv_round: the engine calls these per row; each call is one
 *   submission (they become chunk operations with the engine's next step, backend.h);
 *   rmsnorm_rows norms a row's heads (qk-norm) in one.
 * - attention: a vulkan session's KV cache is in the device's memory (vk_kvmem.c), so
 *   attention_kv reads each sequence group's keys and values in place, one dispatch per
 *   group, only the queries uploaded. A ring layer's chunk of several entries (its own
 *   rows not stored yet) and a cache on the heap (the unit test's host case) take
 *   attention.comp over keys and values gathered and uploaded, as the CPU's views.
 * - kv_store: kv_cache.c's store, writing through the device memory's mapping, so
 *   sequence copies, cuts and rings keep their one implementation; a store shader comes
 *   with activations resident on the device (DESIGN.md, "Backends").
 * The backend runs on the calling thread (threads() = 1); errors of the device (out of
 * memory, device lost) are kept and returned by status() to the forward pass.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/vulkan/vk_internal.h"
#include "kernels/cpu/matmul_internal.h"
#include "model/facts.h"
#include "util/error.h"

/* Input rows up to which a matmul runs the matrix-vector kernel (one workgroup per
 * output); above, the tiled kernel. */
#define MATVEC_ROWS 4

typedef struct {
    facet_backend base;
    facet_device *d;               /* borrowed: the model's                             */
    facet_status st;               /* the first error since status() was asked          */
    facet_error err;
} vk_backend;

static vk_backend *vkb(const facet_backend *be) { return (vk_backend *)be; }

/* Keep the first error. Returns st. */
static facet_status fail(vk_backend *b, facet_status st, const facet_error *err) {
    if (st != FACET_OK && b->st == FACET_OK) {
        b->st = st;
        if (err) b->err = *err;
    }
    return st;
}

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
    return FACET_OK; /* the arena grows at each submission's begin */
}

/* Arena bytes of n floats, aligned as vk_take takes them. */
static size_t fbytes(const vk_ctx *c, size_t n) { return vk_align(c, n * sizeof(float)); }

/* A range holding a copy of n floats of src (NULL: n uninitialised floats). */
static vk_range put(vk_ctx *c, const float *src, size_t n) {
    void *host;
    vk_range r = vk_take(c, n * sizeof(float), &host);
    if (src) memcpy(host, src, n * sizeof(float));
    return r;
}

static void *host_of(vk_ctx *c, vk_range r) { return (uint8_t *)c->arena.map + r.off; }

/* ---- matmul ---- */

typedef struct {
    uint32_t N, K, M, has_bias, wstride;
} mm_push;

static facet_status record_matmul(vk_ctx *c, vk_range y, vk_range x, const vk_weight *w,
                                  const facet_wtensor *W, vk_range bias, int has_bias,
                                  int n_rows, facet_error *err) {
    mm_push p = {(uint32_t)W->rows, (uint32_t)W->cols, (uint32_t)n_rows, (uint32_t)has_bias,
                 w->wstride};
    vk_range wr = {w->buf.buf, 0, w->buf.size};
    vk_range b[4] = {x, wr, bias, y};
    if (n_rows <= MATVEC_ROWS) {
        uint32_t gx = (uint32_t)W->rows < c->max_groups[0] ? (uint32_t)W->rows : c->max_groups[0];
        uint32_t gz = ((uint32_t)W->rows + gx - 1) / gx;
        return vk_dispatch(c, VK_SH_MATVEC, w->variant, b, 4, &p, sizeof p, gx, (uint32_t)n_rows,
                           gz, err);
    }
    return vk_dispatch(c, VK_SH_MATMUL_TILED, w->variant, b, 4, &p, sizeof p,
                       ((uint32_t)W->rows + 15) / 16, ((uint32_t)n_rows + 15) / 16, 1, err);
}

static void vk_matmul_multi(facet_backend *be, int n_mats, float *const *Y, const float *X,
                            const facet_wtensor *const *W, const float *const *bias,
                            int n_rows) {
    vk_backend *b = vkb(be);
    vk_ctx *c = &b->d->c;
    facet_error err = {0};
    if (b->st != FACET_OK || n_rows <= 0) return;
    if (n_mats > 4) {
        facet_err(&err, FACET_E_INVALID_ARGUMENT, "vulkan: matmul_multi of %d weights (4 at most)",
                  n_mats);
        fail(b, FACET_E_INVALID_ARGUMENT, &err);
        return;
    }
    const vk_weight *w[4];
    size_t arena = fbytes(c, (size_t)n_rows * (size_t)W[0]->cols);
    for (int m = 0; m < n_mats; m++) {
        if (fail(b, vk_weight_get(b->d, W[m], &w[m], &err), &err) != FACET_OK) return;
        arena += fbytes(c, (size_t)n_rows * (size_t)W[m]->rows) + fbytes(c, (size_t)W[m]->rows);
    }
    if (fail(b, vk_begin(c, arena, &err), &err) != FACET_OK) return;
    vk_range x = put(c, X, (size_t)n_rows * (size_t)W[0]->cols), y[4];
    facet_status st = FACET_OK;
    for (int m = 0; m < n_mats && st == FACET_OK; m++) {
        vk_range br = put(c, bias[m], bias[m] ? (size_t)W[m]->rows : 1);
        y[m] = put(c, NULL, (size_t)n_rows * (size_t)W[m]->rows);
        st = record_matmul(c, y[m], x, w[m], W[m], br, bias[m] != NULL, n_rows, &err);
    }
    if (st == FACET_OK) st = vk_submit(c, &err);
    else vk_submit(c, NULL);
    if (fail(b, st, &err) != FACET_OK) return;
    for (int m = 0; m < n_mats; m++)
        memcpy(Y[m], host_of(c, y[m]), (size_t)n_rows * (size_t)W[m]->rows * sizeof(float));
}

static void vk_matmul(facet_backend *be, float *Y, const float *X, const facet_wtensor *W,
                      const float *bias, int n_rows) {
    vk_matmul_multi(be, 1, &Y, X, &W, &bias, n_rows);
}

/* ---- row operations: one submission each ---- */

/* M vectors of n in one submission: a workgroup each */
static void vk_rmsnorm_rows(const facet_backend *cbe, float *y, const float *x, const float *w,
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

static void vk_rmsnorm(const facet_backend *cbe, float *y, const float *x, const float *w, int n,
                       double eps, float offset) {
    vk_rmsnorm_rows(cbe, y, x, w, n, 1, eps, offset);
}

static void vk_rope(const facet_backend *cbe, float *x, int n_heads, int head_dim, int rot,
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

static void vk_gated_act(const facet_backend *cbe, float *gate, const float *up, int n, int act) {
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

static void vk_kv_round(const facet_backend *cbe, float *x, facet_kv_type t, int n) {
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
static void vk_layernorm(const facet_backend *cbe, float *y, const float *x, const float *w,
                         const float *bias, int n, double eps) {
    (void)y, (void)x, (void)w, (void)bias, (void)n, (void)eps;
    facet_error err;
    facet_err(&err, FACET_E_UNSUPPORTED, "vulkan: LayerNorm has no shader (layer_norm=true "
              "is refused by the capability table)");
    fail(vkb(cbe), FACET_E_UNSUPPORTED, &err);
}

static void vk_act(const facet_backend *cbe, float *x, int n, int act) {
    (void)x, (void)n, (void)act;
    facet_error err;
    facet_err(&err, FACET_E_UNSUPPORTED, "vulkan: an ungated MLP's activation has no shader "
              "(ffn_ungated=true is refused by the capability table)");
    fail(vkb(cbe), FACET_E_UNSUPPORTED, &err);
}

/* ---- attention ---- */

static float kv_elt(const facet_kv_cache *kv, const uint8_t *p) {
    if (kv->type == FACET_KV_F32) {
        float f;
        memcpy(&f, p, sizeof f);
        return f;
    }
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return kv->type == FACET_KV_BF16 ? facet_bf16_to_f32(h) : facet_f16_to_f32(h);
}

/* Group g's first key position: the window's first visible position of its first
 * entry (0 without a window). */
static int group_first(const facet_attn_chunk *c, int g) {
    int base = c->pos[c->group_row[g]], w = c->p->window;
    return w > 0 && base - w + 1 > 0 ? base - w + 1 : 0;
}

/* Write group g's keys and values (positions first .. last, kvd floats each) to k, v:
 * from the cache, except a ring layer's chunk of several entries, whose own rows are
 * not stored yet and come from the chunk (c->k, c->v). */
static void gather_group(const facet_attn_chunk *c, int g, float *k, float *v) {
    const facet_kv_cache *kv = c->kv;
    int nkv = c->n_kv_heads, hd = kv->head_dim, r0 = c->group_row[g];
    int base = c->pos[r0], last = base + c->group_len[g] - 1, first = group_first(c, g);
    size_t kvd = (size_t)nkv * (size_t)hd;
    const facet_kv_seq *sq = &kv->seqs[c->seq_ids[r0]];
    int from_chunk = facet_kv_is_ring(kv, c->layer) && c->group_len[g] > 1;
    const int *order = c->order + c->order_at[r0];
    for (int t = first; t <= last; t++) {
        float *kr = k + (size_t)(t - first) * kvd, *vr = v + (size_t)(t - first) * kvd;
        if (from_chunk && t >= base) {
            size_t r = (size_t)order[t - base];
            memcpy(kr, c->k + r * kvd, kvd * sizeof(float));
            memcpy(vr, c->v + r * kvd, kvd * sizeof(float));
            continue;
        }
        for (int h = 0; h < nkv; h++) {
            const uint8_t *kp = facet_kv_key(kv, sq, c->layer, h, t);
            const uint8_t *vp = facet_kv_value(kv, sq, c->layer, h, t);
            for (int i = 0; i < hd; i++) {
                kr[(size_t)h * hd + i] = kv_elt(kv, kp + (size_t)i * FACET_KV_GROUP * kv->elt);
                vr[(size_t)h * hd + i] = kv_elt(kv, vp + (size_t)i * kv->elt);
            }
        }
    }
}

/* 1 when every group's keys and values are in the cache (not a ring layer's chunk of
 * several entries, whose own rows are stored after the call) and the cache's buffers
 * are the device's (facet_device_kv_memory), of a type attention_kv reads. */
static int in_place(const vk_backend *b, const facet_attn_chunk *c) {
    const facet_kv_cache *kv = c->kv;
    if (kv->latent || (kv->type != FACET_KV_F32 && kv->type != FACET_KV_BF16)) return 0;
    if (kv->buf_ctx != (void *)b->d) return 0;
    if (facet_kv_is_ring(kv, c->layer))
        for (int g = 0; g < c->n_groups; g++)
            if (c->group_len[g] > 1) return 0;
    return 1;
}

/* The chunk's attention over the cache's device buffers in place: one dispatch of
 * attention_kv per sequence group, one submission; only the queries go up. */
static void attention_in_place(vk_backend *b, const facet_attn_chunk *c) {
    vk_ctx *ctx = &b->d->c;
    facet_error err = {0};
    const facet_kv_cache *kv = c->kv;
    int nh = c->n_heads, hd = kv->head_dim, n = c->n_rows;
    size_t qd = (size_t)nh * hd;
    int maxk = 1;
    for (int g = 0; g < c->n_groups; g++) {
        int nk = c->pos[c->group_row[g]] + c->group_len[g] - group_first(c, g);
        if (nk > maxk) maxk = nk;
    }
    size_t arena = 2 * fbytes(ctx, (size_t)n * qd) + fbytes(ctx, 4 * (size_t)n) +
                   fbytes(ctx, (size_t)nh) + fbytes(ctx, (size_t)n * nh * (size_t)maxk);
    if (fail(b, vk_begin(ctx, arena, &err), &err) != FACET_OK) return;
    vk_range rq = put(ctx, c->q, (size_t)n * qd), rm = put(ctx, NULL, 4 * (size_t)n);
    vk_range rsink = put(ctx, c->p->sinks, c->p->sinks ? (size_t)nh : 1);
    vk_range rs = put(ctx, NULL, (size_t)n * nh * (size_t)maxk);
    vk_range ro = put(ctx, NULL, (size_t)n * qd);
    int32_t *meta = host_of(ctx, rm);
    facet_status st = FACET_OK;
    int slot = 0;
    for (int g = 0; g < c->n_groups && st == FACET_OK; g++) {
        int r0 = c->group_row[g], first = group_first(c, g);
        int nk = c->pos[r0] + c->group_len[g] - first;
        const facet_kv_seq *sq = &kv->seqs[c->seq_ids[r0]];
        const facet_kv_layer *lay = &sq->layers[c->layer];
        vk_range rk, rv;
        if (!vk_kv_range(b->d, lay->k, &rk) || !vk_kv_range(b->d, lay->v, &rv)) {
            st = facet_err(&err, FACET_E_INVALID_ARGUMENT, "vulkan: sequence %d's KV cache of "
                           "layer %d is not in the device's memory", c->seq_ids[r0], c->layer);
            break;
        }
        const int *order = c->order + c->order_at[r0];
        for (int i = 0; i < c->group_len[g]; i++) {
            int r = order[i];
            meta[4 * (slot + i)] = r;
            meta[4 * (slot + i) + 1] = first;
            meta[4 * (slot + i) + 2] = nk;
            meta[4 * (slot + i) + 3] = c->pos[r];
        }
        struct {
            uint32_t nh, nkv, hd, maxk;
            int32_t window;
            float scale, softcap;
            uint32_t has_sinks, rows, ring_cap, bf16, slot0;
        } p = {(uint32_t)nh, (uint32_t)c->n_kv_heads, (uint32_t)hd, (uint32_t)maxk,
               c->p->window, c->p->scale, c->p->softcap, c->p->sinks != NULL,
               (uint32_t)facet_kv_rows(kv, sq, c->layer),
               facet_kv_is_ring(kv, c->layer) ? (uint32_t)kv->ring_cap : 0u,
               kv->type == FACET_KV_BF16, (uint32_t)slot};
        vk_range r[7] = {rq, rk, rv, rm, rsink, rs, ro};
        st = vk_dispatch(ctx, VK_SH_ATTENTION_KV, 0, r, 7, &p, sizeof p, (uint32_t)nh,
                         (uint32_t)c->group_len[g], 1, &err);
        slot += c->group_len[g];
    }
    if (st == FACET_OK) st = vk_submit(ctx, &err);
    else vk_submit(ctx, NULL);
    if (fail(b, st, &err) == FACET_OK)
        memcpy(c->out, host_of(ctx, ro), (size_t)n * qd * sizeof(float));
}

static void vk_attention(facet_backend *be, const facet_attn_chunk *c) {
    vk_backend *b = vkb(be);
    vk_ctx *ctx = &b->d->c;
    facet_error err = {0};
    if (b->st != FACET_OK || c->n_rows <= 0) return;
    if (in_place(b, c)) {
        attention_in_place(b, c);
        return;
    }
    int nh = c->n_heads, nkv = c->n_kv_heads, hd = c->kv->head_dim, n = c->n_rows;
    size_t qd = (size_t)nh * hd, kvd = (size_t)nkv * hd, keys = 0;
    int maxk = 1;
    for (int g = 0; g < c->n_groups; g++) {
        int nk = c->pos[c->group_row[g]] + c->group_len[g] - group_first(c, g);
        keys += (size_t)nk;
        if (nk > maxk) maxk = nk;
    }
    size_t arena = 2 * fbytes(ctx, (size_t)n * qd) + 2 * fbytes(ctx, keys * kvd) +
                   fbytes(ctx, 4 * (size_t)n) + fbytes(ctx, (size_t)nh) +
                   fbytes(ctx, (size_t)n * nh * (size_t)maxk);
    if (fail(b, vk_begin(ctx, arena, &err), &err) != FACET_OK) return;
    vk_range rq = put(ctx, c->q, (size_t)n * qd), rk = put(ctx, NULL, keys * kvd);
    vk_range rv = put(ctx, NULL, keys * kvd), rm = put(ctx, NULL, 4 * (size_t)n);
    vk_range rsink = put(ctx, c->p->sinks, c->p->sinks ? (size_t)nh : 1);
    vk_range rs = put(ctx, NULL, (size_t)n * nh * (size_t)maxk);
    vk_range ro = put(ctx, NULL, (size_t)n * qd);
    float *K = host_of(ctx, rk), *V = host_of(ctx, rv);
    int32_t *meta = host_of(ctx, rm);
    size_t key0 = 0;
    for (int g = 0; g < c->n_groups; g++) {
        int r0 = c->group_row[g], first = group_first(c, g);
        int nk = c->pos[r0] + c->group_len[g] - first;
        gather_group(c, g, K + key0 * kvd, V + key0 * kvd);
        const int *order = c->order + c->order_at[r0];
        for (int i = 0; i < c->group_len[g]; i++) {
            int r = order[i];
            meta[4 * r] = (int32_t)key0;
            meta[4 * r + 1] = first;
            meta[4 * r + 2] = nk;
            meta[4 * r + 3] = c->pos[r];
        }
        key0 += (size_t)nk;
    }
    struct {
        uint32_t nh, nkv, hd, maxk;
        int32_t window;
        float scale, softcap;
        uint32_t has_sinks;
    } p = {(uint32_t)nh, (uint32_t)nkv, (uint32_t)hd, (uint32_t)maxk, c->p->window, c->p->scale,
           c->p->softcap, c->p->sinks != NULL};
    vk_range r[7] = {rq, rk, rv, rm, rsink, rs, ro};
    facet_status st = vk_dispatch(ctx, VK_SH_ATTENTION, 0, r, 7, &p, sizeof p, (uint32_t)nh,
                                  (uint32_t)n, 1, &err);
    if (st == FACET_OK) st = vk_submit(ctx, &err);
    else vk_submit(ctx, NULL);
    if (fail(b, st, &err) == FACET_OK)
        memcpy(c->out, host_of(ctx, ro), (size_t)n * qd * sizeof(float));
}

static void vk_kv_store(facet_backend *be, facet_kv_cache *kv, int seq, int layer, int pos,
                        const float *k, const float *v) {
    (void)be;
    facet_kv_cache_store(kv, seq, layer, pos, k, v);
}

/* ---- names, sizes, status ---- */

static const char *vk_matmul_kernel(const facet_backend *be, facet_wformat f) {
    (void)be;
    switch (vk_weight_variant(f)) {
    case 0: return "vulkan matvec/tiled f32";
    case 1: return "vulkan matvec/tiled bf16";
    case 2: return "vulkan matvec/tiled f16";
    default: return "none (not on vulkan)";
    }
}

static const char *vk_attention_kernel(const facet_backend *be, facet_kv_type t, int head_dim) {
    (void)be, (void)t, (void)head_dim;
    return "vulkan attention (3-pass, f32)";
}

static uint64_t vk_weight_bytes(const facet_backend *be, facet_wformat f, uint64_t rows,
                                uint64_t cols) {
    (void)be;
    return rows * (f == FACET_WF_F32 ? cols * 4 : (cols + 1) / 2 * 4);
}

static facet_status vk_status(facet_backend *be, facet_error *err) {
    vk_backend *b = vkb(be);
    facet_status st = b->st;
    if (st != FACET_OK && err) *err = b->err;
    b->st = FACET_OK;
    return st;
}

static void vk_free(facet_backend *be) { free(be); }

static const facet_backend_ops vulkan_ops = {
    .name = "vulkan",
    .free = vk_free,
    .run = vk_run,
    .threads = vk_threads,
    .reserve = vk_reserve,
    .matmul = vk_matmul,
    .matmul_multi = vk_matmul_multi,
    .attention = vk_attention,
    .kv_store = vk_kv_store,
    .rmsnorm = vk_rmsnorm,
    .rmsnorm_rows = vk_rmsnorm_rows,
    .rope = vk_rope,
    .gated_act = vk_gated_act,
    .layernorm = vk_layernorm,
    .act = vk_act,
    .kv_round = vk_kv_round,
    .matmul_kernel = vk_matmul_kernel,
    .matmul_kernel_best = vk_matmul_kernel,
    .attention_kernel = vk_attention_kernel,
    .weight_bytes = vk_weight_bytes,
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
