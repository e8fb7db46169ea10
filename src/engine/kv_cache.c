/*
 * kv_cache.c — the per-sequence KV cache: creation, all-or-nothing growth, store,
 * release (the contract is in kv_cache.h).
 */
#include "engine/kv_cache.h"

#include <stdlib.h>
#include <string.h>

#include "model/weights_policy.h"
#include "util/error.h"

/* Positions a GLOBAL slot starts with on a sequence's first reserve. */
#define KV_FIRST_CAP 64

facet_status facet_kv_cache_init(facet_kv_cache *kv, int n_layers, int n_kv_heads,
                                 int head_dim, const uint8_t *layer_sliding,
                                 int64_t sliding_window, facet_kv_type type, int n_seq_max,
                                 int n_ctx, facet_error *err) {
    memset(kv, 0, sizeof *kv);
    kv->n_layers = n_layers;
    kv->n_kv_heads = n_kv_heads;
    kv->head_dim = head_dim;
    kv->n_seq_max = n_seq_max;
    kv->n_ctx = n_ctx;
    kv->type = type;
    kv->elt = facet_kv_type_bytes(type);
    kv->kind = calloc((size_t)n_layers, 1);
    kv->seqs = calloc((size_t)n_seq_max, sizeof *kv->seqs);
    kv->state_bytes = calloc((size_t)n_layers ? (size_t)n_layers : 1, sizeof *kv->state_bytes);
    if (!kv->kind || !kv->seqs || !kv->state_bytes) {
        facet_kv_cache_free(kv);
        return facet_err(err, FACET_E_NOMEM, "KV cache tables for %d sequences", n_seq_max);
    }
    /* a window as long as the context needs no ring: such a layer is a global one */
    int ring = sliding_window > 0 && sliding_window < n_ctx;
    for (int l = 0; l < n_layers; l++)
        if (ring && layer_sliding && layer_sliding[l]) {
            kv->kind[l] = FACET_KV_SLOT_RING;
            /* whole key groups: the attention kernel reads a ring by key groups */
            kv->ring_cap = (int)((sliding_window + FACET_KV_GROUP - 1) / FACET_KV_GROUP *
                                 FACET_KV_GROUP);
        }
    return FACET_OK;
}

void facet_kv_cache_set_state(facet_kv_cache *kv, int layer, size_t bytes) {
    if (!facet_kv_is_state(kv, layer)) kv->n_state_layers++;
    kv->kind[layer] = FACET_KV_SLOT_STATE;
    kv->state_bytes[layer] = bytes;
}

void facet_kv_cache_add_state(facet_kv_cache *kv, int layer, size_t bytes) {
    if (!kv->state_bytes[layer]) kv->n_state_layers++;
    kv->state_bytes[layer] = bytes;
}

void facet_kv_cache_set_absent(facet_kv_cache *kv, int layer) {
    if (kv->state_bytes[layer]) kv->n_state_layers--;
    kv->kind[layer] = FACET_KV_SLOT_NONE;
    kv->state_bytes[layer] = 0;
}

size_t facet_kv_cache_state_bytes(const facet_kv_cache *kv) {
    size_t b = 0;
    for (int l = 0; l < kv->n_layers; l++) b += kv->state_bytes[l];
    return b;
}

/* A key or value buffer of n x size zeroed bytes: the cache's allocator (a device's
 * memory) when set, else the heap. */
static uint8_t *kbuf_alloc(const facet_kv_cache *kv, size_t n, size_t size) {
    if (kv->buf_alloc) return kv->buf_alloc(kv->buf_ctx, n * size);
    return calloc(n, size);
}

static void kbuf_free(const facet_kv_cache *kv, uint8_t *p) {
    if (p && kv->buf_free) kv->buf_free(kv->buf_ctx, p);
    else free(p);
}

static void free_layers(const facet_kv_cache *kv, facet_kv_layer *layers) {
    if (!layers) return;
    for (int l = 0; l < kv->n_layers; l++) {
        kbuf_free(kv, layers[l].k);
        kbuf_free(kv, layers[l].v);
        free(layers[l].state);
    }
    free(layers);
}

void facet_kv_cache_free(facet_kv_cache *kv) {
    if (kv->seqs)
        for (int i = 0; i < kv->n_seq_max; i++) free_layers(kv, kv->seqs[i].layers);
    free(kv->seqs);
    free(kv->kind);
    free(kv->state_bytes);
    memset(kv, 0, sizeof *kv);
}

facet_status facet_kv_cache_reserve(facet_kv_cache *kv, int seq, int need, facet_error *err) {
    facet_kv_seq *c = &kv->seqs[seq];
    if (need <= c->cap) return FACET_OK;
    int L = kv->n_layers;
    size_t head_row = (size_t)kv->head_dim * kv->elt; /* one position of one head */
    size_t row_bytes = (size_t)kv->n_kv_heads * head_row;
    int cap = c->cap ? c->cap : KV_FIRST_CAP;
    while (cap < need) cap *= 2;
    int ctx_rows = (kv->n_ctx + FACET_KV_GROUP - 1) / FACET_KV_GROUP * FACET_KV_GROUP;
    if (cap > ctx_rows) cap = ctx_rows; /* whole key groups */

    /* 1. allocate: a new table, new buffers for every GLOBAL slot, and the rings and
     * states on the first reserve (neither ever grows: later reserves keep them) */
    facet_kv_layer *nl = calloc((size_t)L, sizeof *nl);
    if (!nl) return facet_err(err, FACET_E_NOMEM, "KV cache: layer table");
    for (int l = 0; l < L; l++) {
        int kept = (facet_kv_is_ring(kv, l) || facet_kv_is_state(kv, l)) && c->layers;
        if (kept) {
            nl[l] = c->layers[l];
            continue;
        }
        int ok = 1;
        if (facet_kv_is_absent(kv, l)) continue; /* another stage's layer */
        /* a state beside a GLOBAL slot (Falcon-H1) is kept like a STATE slot's */
        if (kv->state_bytes[l] && c->layers)
            nl[l].state = c->layers[l].state;
        else if (kv->state_bytes[l])
            ok = (nl[l].state = calloc(1, kv->state_bytes[l])) != NULL;
        if (ok && !facet_kv_is_state(kv, l)) {
            size_t rows = facet_kv_is_ring(kv, l) ? facet_kv_rows(kv, c, l) : (size_t)cap;
            nl[l].k = kbuf_alloc(kv, rows, row_bytes);
            nl[l].v = kv->latent ? NULL : kbuf_alloc(kv, rows, row_bytes);
            ok = nl[l].k && (kv->latent || nl[l].v);
        }
        if (!ok) {
            /* free only what this call allocated; the sequence keeps its old slots */
            for (int j = 0; j <= l; j++)
                if (!((facet_kv_is_ring(kv, j) || facet_kv_is_state(kv, j)) && c->layers)) {
                    kbuf_free(kv, nl[j].k);
                    kbuf_free(kv, nl[j].v);
                    if (!c->layers) free(nl[j].state);
                }
            free(nl);
            return facet_err(err, FACET_E_NOMEM, "KV cache: %d positions", cap);
        }
    }

    /* 2. commit: each GLOBAL slot's rows (whole key groups of keys, len values per head)
     * move to their place at the new stride; nothing below can fail */
    if (c->layers) {
        size_t used = (size_t)(c->len + FACET_KV_GROUP - 1) / FACET_KV_GROUP * FACET_KV_GROUP;
        for (int l = 0; l < L; l++) {
            if (facet_kv_is_ring(kv, l) || facet_kv_is_state(kv, l) || facet_kv_is_absent(kv, l))
                continue;
            for (int h = 0; h < kv->n_kv_heads && c->len > 0; h++) {
                memcpy(nl[l].k + (size_t)h * cap * head_row,
                       c->layers[l].k + (size_t)h * c->cap * head_row, used * head_row);
                if (kv->latent) continue;
                memcpy(nl[l].v + (size_t)h * cap * head_row,
                       c->layers[l].v + (size_t)h * c->cap * head_row, (size_t)c->len * head_row);
            }
            kbuf_free(kv, c->layers[l].k);
            kbuf_free(kv, c->layers[l].v);
        }
        free(c->layers);
    }
    c->layers = nl;
    c->cap = cap;
    return FACET_OK;
}

facet_status facet_kv_cache_copy(facet_kv_cache *kv, int src, int dst, int n, facet_error *err) {
    facet_kv_seq *b = &kv->seqs[dst];
    facet_kv_cache_reset(kv, dst); /* no tokens, a zero state */
    if (n == 0) return FACET_OK;
    facet_status st = facet_kv_cache_reserve(kv, dst, n, err);
    if (st != FACET_OK) return st;
    const facet_kv_seq *a = &kv->seqs[src];
    size_t head_row = (size_t)kv->head_dim * kv->elt;
    size_t groups = (size_t)(n + FACET_KV_GROUP - 1) / FACET_KV_GROUP * FACET_KV_GROUP;
    for (int l = 0; l < kv->n_layers; l++) {
        if (facet_kv_is_absent(kv, l)) continue;
        if (kv->state_bytes[l]) /* the state after all of src's tokens */
            memcpy(b->layers[l].state, a->layers[l].state, kv->state_bytes[l]);
        if (facet_kv_is_state(kv, l)) continue;
        size_t ra = facet_kv_rows(kv, a, l), rb = facet_kv_rows(kv, b, l);
        for (int h = 0; h < kv->n_kv_heads; h++) {
            memcpy(b->layers[l].k + (size_t)h * rb * head_row,
                   a->layers[l].k + (size_t)h * ra * head_row, groups * head_row);
            if (kv->latent) continue;
            memcpy(b->layers[l].v + (size_t)h * rb * head_row,
                   a->layers[l].v + (size_t)h * ra * head_row, (size_t)n * head_row);
        }
    }
    b->len = n;
    return FACET_OK;
}

void facet_kv_cache_reset(facet_kv_cache *kv, int seq) {
    facet_kv_seq *c = &kv->seqs[seq];
    c->len = 0;
    if (c->layers)
        for (int l = 0; l < kv->n_layers; l++)
            if (c->layers[l].state) memset(c->layers[l].state, 0, kv->state_bytes[l]);
}

void facet_kv_cache_release(facet_kv_cache *kv, int seq) {
    facet_kv_seq *c = &kv->seqs[seq];
    free_layers(kv, c->layers);
    c->layers = NULL;
    c->len = c->cap = 0;
}

void facet_kv_cache_store(facet_kv_cache *kv, int seq, int layer, int pos, const float *k,
                          const float *v) {
    facet_kv_seq *c = &kv->seqs[seq];
    /* ring: a later position of this chunk takes the same row (see the contract) */
    if (facet_kv_is_ring(kv, layer) && pos + kv->ring_cap <= c->len - 1) return;
    int hd = kv->head_dim;
    for (int h = 0; h < kv->n_kv_heads; h++) {
        uint8_t *kat = c->layers[layer].k + facet_kv_key_offset(kv, c, layer, h, pos);
        facet_kv_store_strided(k + (size_t)h * hd, kv->type, kat, hd, FACET_KV_GROUP);
        if (kv->latent) continue;
        uint8_t *vat = c->layers[layer].v + facet_kv_value_offset(kv, c, layer, h, pos);
        facet_kv_store(v + (size_t)h * hd, kv->type, vat, hd);
    }
}
