/*
 * vk_resident.c — where an operation's operands live (vk_ops.h): a vulkan session's
 * activations (its batch scratch, backend.h scratch_alloc) are buffers of the device's
 * memory, mapped, so an operation binds them in place and its result stays on the
 * device for the next one; nothing is submitted until the engine needs the host to see
 * them (sync, status) — a forward chunk is one submission. Operands in host memory (the
 * model's norm weights and biases, a caller's logits, a unit test's arrays) are copied
 * into the arena, and an operation writing host memory waits for its work and copies
 * the result out before it returns, as the CPU's operations do.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_ops.h"
#include "util/error.h"

/* The scratch buffer holding [p, p + bytes), or NULL. */
static const vk_buf *scratch_of(const vk_backend *b, const void *p, size_t bytes) {
    const uint8_t *q = p;
    for (size_t i = 0; i < b->n_scratch; i++) {
        const uint8_t *m = b->scratch[i].map;
        if (q >= m && q + bytes <= m + b->scratch[i].size) return &b->scratch[i];
    }
    return NULL;
}

int vk_resident(const vk_backend *b, const void *p, size_t n, vk_range *out) {
    if (!p) return 0;
    size_t bytes = n * sizeof(float);
    const vk_buf *s = scratch_of(b, p, bytes);
    if (!s) return 0;
    VkDeviceSize off = (VkDeviceSize)((const uint8_t *)p - (const uint8_t *)s->map);
    if (off % b->d->c.align) return 0; /* not bindable there: copied like host memory */
    *out = (vk_range){s->buf, off, bytes ? (VkDeviceSize)bytes : 4};
    return 1;
}

facet_status vk_tmp(vk_backend *b, size_t n, vk_range *out, facet_error *err) {
    return vk_take(&b->d->c, n * sizeof(float), out, NULL, err);
}

facet_status vk_in(vk_backend *b, const float *p, size_t n, vk_range *out, facet_error *err) {
    vk_ctx *c = &b->d->c;
    if (!p) return vk_take(c, 16, out, NULL, err);
    if (vk_resident(b, p, n, out)) return FACET_OK;
    /* device memory at an offset no binding takes: the pending work may write it */
    if (c->recording && scratch_of(b, p, n * sizeof(float))) {
        facet_status st = vk_wait(c, err);
        if (st == FACET_OK) st = vk_open(c, err); /* the operation goes on recording */
        if (st != FACET_OK) return st;
    }
    void *host;
    facet_status st = vk_take(c, n * sizeof(float), out, &host, err);
    if (st == FACET_OK) memcpy(host, p, n * sizeof(float));
    return st;
}

facet_status vk_out(vk_backend *b, float *p, size_t n, vk_outs *o, vk_range *out,
                    facet_error *err) {
    if (vk_resident(b, p, n, out)) return FACET_OK;
    if (o->n == VK_MAX_OUTS)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "vulkan: more than %d host outputs",
                         VK_MAX_OUTS);
    void *host;
    facet_status st = vk_take(&b->d->c, n * sizeof(float), out, &host, err);
    if (st != FACET_OK) return st;
    o->dst[o->n] = p;
    o->src[o->n] = host;
    o->bytes[o->n++] = n * sizeof(float);
    return FACET_OK;
}

facet_status vk_inout(vk_backend *b, float *p, size_t n, vk_outs *o, vk_range *out,
                      facet_error *err) {
    if (vk_resident(b, p, n, out)) return FACET_OK;
    facet_status st = vk_in(b, p, n, out, err);
    if (st != FACET_OK) return st;
    if (o->n == VK_MAX_OUTS)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "vulkan: more than %d host outputs",
                         VK_MAX_OUTS);
    const vk_buf *a = NULL;
    for (int i = 0; i < b->d->c.n_arenas && !a; i++)
        if (b->d->c.arenas[i].buf == out->buf) a = &b->d->c.arenas[i];
    o->dst[o->n] = p;
    o->src[o->n] = (const uint8_t *)a->map + out->off;
    o->bytes[o->n++] = n * sizeof(float);
    return FACET_OK;
}

facet_status vk_done(vk_backend *b, const vk_outs *o, facet_status st, const facet_error *err) {
    facet_error e2 = {0};
    if (st != FACET_OK) return fail(b, st, err);
    if (!o || o->n == 0) return FACET_OK;
    if ((st = vk_wait(&b->d->c, &e2)) != FACET_OK) return fail(b, st, &e2);
    for (int i = 0; i < o->n; i++) memcpy(o->dst[i], o->src[i], o->bytes[i]);
    return vk_sync(&b->d->c, NULL); /* nothing pending: only empties the arena */
}

void *vk_scratch_alloc(facet_backend *be, size_t bytes) {
    vk_backend *b = vkb(be);
    if (b->n_scratch == b->cap_scratch) {
        size_t cap = b->cap_scratch ? 2 * b->cap_scratch : 64;
        vk_buf *nb = realloc(b->scratch, cap * sizeof *nb);
        if (!nb) return NULL;
        b->scratch = nb;
        b->cap_scratch = cap;
    }
    vk_buf buf;
    facet_error err;
    if (vk_buf_create(&b->d->c, bytes ? bytes : 16, &buf, &err) != FACET_OK) return NULL;
    b->scratch[b->n_scratch++] = buf;
    return buf.map;
}

void vk_scratch_free(facet_backend *be, void *p) {
    vk_backend *b = vkb(be);
    if (!p) return;
    vk_sync(&b->d->c, NULL); /* nothing pending may still use it */
    for (size_t i = 0; i < b->n_scratch; i++)
        if (b->scratch[i].map == p) {
            vk_buf_destroy(&b->d->c, &b->scratch[i]);
            b->scratch[i] = b->scratch[--b->n_scratch];
            return;
        }
}
