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
    vk_buf *scratch;               /* the session's activations (scratch_alloc)        */
    size_t n_scratch, cap_scratch;
} vk_backend;

/* Outputs of one operation bound for host memory: written to the arena by the shaders,
 * copied to their destinations once the work is waited for (vk_done). */
#define VK_MAX_OUTS 4
typedef struct vk_outs {
    int n;
    float *dst[VK_MAX_OUTS];
    const void *src[VK_MAX_OUTS];
    size_t bytes[VK_MAX_OUTS];
} vk_outs;

static inline vk_backend *vkb(const facet_backend *be) { return (vk_backend *)be; }

/* Keep the first error. Returns st. */
static inline facet_status fail(vk_backend *b, facet_status st, const facet_error *err) {
    if (st != FACET_OK && b->st == FACET_OK) {
        b->st = st;
        if (err) b->err = *err;
    }
    return st;
}

/* The range of the n floats at p when they lie in one of the session's device buffers
 * at an offset the device can bind (1); 0 otherwise (host memory). */
int vk_resident(const vk_backend *b, const void *p, size_t n, vk_range *out);

/* An input of n floats at p (NULL: a small unused range, for an absent bias or sinks):
 * its range in place when resident, else a copy in the arena (device memory the pending
 * work may still write is waited for first). Errors: those of vk_take / vk_sync. */
facet_status vk_in(vk_backend *b, const float *p, size_t n, vk_range *out, facet_error *err);
/* An output of n floats at p: its range in place when resident, else an arena range
 * recorded in o, copied to p by vk_done. In-place operands (x of rope) are vk_in'd and
 * then vk_out'd: a host operand's arena copy is then the output's too (vk_inout). */
facet_status vk_out(vk_backend *b, float *p, size_t n, vk_outs *o, vk_range *out,
                    facet_error *err);
facet_status vk_inout(vk_backend *b, float *p, size_t n, vk_outs *o, vk_range *out,
                      facet_error *err);
/* End an operation: when some output is bound for host memory, wait for the pending work
 * and copy those outputs out (an operation on host buffers completes before it returns,
 * as the CPU's; on the session's device buffers it stays pending until vk_sync). An
 * error is kept (fail) and returned. */
facet_status vk_done(vk_backend *b, const vk_outs *o, facet_status st, const facet_error *err);

/* n uninitialised floats of the arena (a temporary). */
facet_status vk_tmp(vk_backend *b, size_t n, vk_range *out, facet_error *err);

/* backend.h scratch_alloc / scratch_free: a buffer of the device's memory, mapped (not
 * zeroed); freeing waits for the pending work first. */
void *vk_scratch_alloc(facet_backend *be, size_t bytes);
void vk_scratch_free(facet_backend *be, void *p);

/* The operations (backend.h facet_backend_ops), by file. */
/* vk_matmul.c */
void vk_matmul(facet_backend *be, float *Y, const float *X, const facet_wtensor *W,
               const float *bias, int n_rows);
void vk_matmul_multi(facet_backend *be, int n_mats, float *const *Y, const float *X,
                     const facet_wtensor *const *W, const float *const *bias, int n_rows);
void vk_matmul_each(facet_backend *be, int n_mats, float *const *Y, const float *const *X,
                    const facet_wtensor *const *W, const float *const *bias);
/* vk_rows.c */
void vk_rmsnorm(const facet_backend *be, float *y, const float *x, const float *w, int n,
                double eps, float offset);
void vk_rmsnorm_rows(const facet_backend *be, float *y, const float *x, const float *w, int n,
                     int M, double eps, float offset);
void vk_rope(const facet_backend *be, float *x, int n_heads, int head_dim, int rot,
             const float *cos, const float *sin);
void vk_rope_rows(const facet_backend *be, float *x, int M, int n_heads, int head_dim, int rot,
                  const float *cos, const float *sin);
void vk_add_scaled(const facet_backend *be, float *x, const float *h, size_t n, float mult);
void vk_gated_act(const facet_backend *be, float *gate, const float *up, int n, int act);
void vk_gated_act_rows(const facet_backend *be, float *gate, const float *up, int n, int M,
                       int act);
void vk_kv_round(const facet_backend *be, float *x, facet_kv_type t, int n);
void vk_layernorm(const facet_backend *be, float *y, const float *x, const float *w,
                  const float *b, int n, double eps);
void vk_act(const facet_backend *be, float *x, int n, int act);
void vk_layernorm_rows(const facet_backend *be, float *y, const float *x, const float *w,
                       const float *b, int n, int M, double eps);
void vk_act_rows(const facet_backend *be, float *x, int n, int M, int act);
void vk_rope_pairs_rows(const facet_backend *be, float *x, int M, int n_heads, int head_dim,
                        int rot, const float *cos, const float *sin);
void vk_copy(const facet_backend *be, float *y, const float *x, size_t n);
/* vk_attention.c */
void vk_attention(facet_backend *be, const facet_attn_chunk *c);
void vk_kv_store(facet_backend *be, facet_kv_cache *kv, int seq, int layer, int pos,
                 const float *k, const float *v);
void vk_kv_store_rows(facet_backend *be, facet_kv_cache *kv, int layer, int n, const int *rows,
                      const int32_t *seq_ids, const int *pos, const float *k, const float *v);

#endif
