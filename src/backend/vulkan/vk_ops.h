/*
 * vk_ops.h — what the Vulkan backend's operation files share (backend_vulkan.c: the ops
 * table; vk_matmul.c, vk_rows.c, vk_attention.c: the operations): the backend's state,
 * its first-error rule and the arena helpers of one submission.
 */
#ifndef FACET_BACKEND_VK_OPS_H
#define FACET_BACKEND_VK_OPS_H

#include <string.h>

#include "backend/backend.h"
#include "backend/vulkan/vk_internal.h"

/* Input rows up to which a matmul runs the matrix-vector kernel (one workgroup per
 * output); above, the tiled kernel. */
#define MATVEC_ROWS 4

typedef struct vk_backend {
    facet_backend base;
    facet_device *d;               /* borrowed: the model's                             */
    facet_status st;               /* the first error since status() was asked          */
    facet_error err;
} vk_backend;

static inline vk_backend *vkb(const facet_backend *be) { return (vk_backend *)be; }

/* Keep the first error. Returns st. */
static inline facet_status fail(vk_backend *b, facet_status st, const facet_error *err) {
    if (st != FACET_OK && b->st == FACET_OK) {
        b->st = st;
        if (err) b->err = *err;
    }
    return st;
}

/* Arena bytes of n floats, aligned as vk_take takes them. */
static inline size_t fbytes(const vk_ctx *c, size_t n) { return vk_align(c, n * sizeof(float)); }

/* A range holding a copy of n floats of src (NULL: n uninitialised floats). */
static inline vk_range put(vk_ctx *c, const float *src, size_t n) {
    void *host;
    vk_range r = vk_take(c, n * sizeof(float), &host);
    if (src) memcpy(host, src, n * sizeof(float));
    return r;
}

static inline void *host_of(vk_ctx *c, vk_range r) { return (uint8_t *)c->arena.map + r.off; }

/* The operations (backend.h facet_backend_ops), by file. */
/* vk_matmul.c */
void vk_matmul(facet_backend *be, float *Y, const float *X, const facet_wtensor *W,
               const float *bias, int n_rows);
void vk_matmul_multi(facet_backend *be, int n_mats, float *const *Y, const float *X,
                     const facet_wtensor *const *W, const float *const *bias, int n_rows);
/* vk_rows.c */
void vk_rmsnorm(const facet_backend *be, float *y, const float *x, const float *w, int n,
                double eps, float offset);
void vk_rmsnorm_rows(const facet_backend *be, float *y, const float *x, const float *w, int n,
                     int M, double eps, float offset);
void vk_rope(const facet_backend *be, float *x, int n_heads, int head_dim, int rot,
             const float *cos, const float *sin);
void vk_gated_act(const facet_backend *be, float *gate, const float *up, int n, int act);
void vk_kv_round(const facet_backend *be, float *x, facet_kv_type t, int n);
void vk_layernorm(const facet_backend *be, float *y, const float *x, const float *w,
                  const float *b, int n, double eps);
void vk_act(const facet_backend *be, float *x, int n, int act);
/* vk_attention.c */
void vk_attention(facet_backend *be, const facet_attn_chunk *c);
void vk_kv_store(facet_backend *be, facet_kv_cache *kv, int seq, int layer, int pos,
                 const float *k, const float *v);

#endif
