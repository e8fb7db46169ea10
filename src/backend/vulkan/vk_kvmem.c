/*
 * vk_kvmem.c — the KV cache's memory on the device (backend.h facet_device_kv_memory):
 * each key or value buffer of a session's cache (kv_cache.h buf_alloc) is a buffer of the
 * device's one host-visible memory type, mapped, so the host's cache code (stores,
 * sequence copies, cuts, rings) writes it through the mapping and the attention shader
 * reads it in place (backend_vulkan.c), with no upload per call.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/vulkan/vk_internal.h"

static void *kv_alloc(void *ctx, size_t bytes) {
    facet_device *d = ctx;
    if (d->n_kv == d->cap_kv) {
        size_t cap = d->cap_kv ? 2 * d->cap_kv : 32;
        vk_buf *nb = realloc(d->kv, cap * sizeof *nb);
        if (!nb) return NULL;
        d->kv = nb;
        d->cap_kv = cap;
    }
    vk_buf b;
    facet_error err;
    if (vk_buf_create(&d->c, bytes ? bytes : 16, &b, &err) != FACET_OK) return NULL;
    memset(b.map, 0, (size_t)b.size);
    d->kv[d->n_kv++] = b;
    return b.map;
}

static void kv_free(void *ctx, void *p) {
    facet_device *d = ctx;
    for (size_t i = 0; i < d->n_kv; i++)
        if (d->kv[i].map == p) {
            vk_buf_destroy(&d->c, &d->kv[i]);
            d->kv[i] = d->kv[--d->n_kv];
            return;
        }
}

void facet_device_kv_memory(facet_device *d, facet_kv_cache *kv) {
    kv->buf_alloc = kv_alloc;
    kv->buf_free = kv_free;
    kv->buf_ctx = d;
}

int vk_kv_range(const facet_device *d, const void *p, vk_range *out) {
    for (size_t i = 0; i < d->n_kv; i++)
        if (d->kv[i].map == p) {
            *out = (vk_range){d->kv[i].buf, 0, d->kv[i].size};
            return 1;
        }
    return 0;
}

void vk_kv_free_all(facet_device *d) {
    for (size_t i = 0; i < d->n_kv; i++) vk_buf_destroy(&d->c, &d->kv[i]);
    free(d->kv);
    d->kv = NULL;
    d->n_kv = d->cap_kv = 0;
}
