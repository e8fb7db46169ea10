/*
 * vk_attention.c — the Vulkan backend's attention and K/V stores (backend.h). A vulkan
 * session's KV cache is in the device's memory (vk_kvmem.c): kv_store_rows writes the
 * chunk's rows with kv_store.comp and attention_kv reads each sequence group's keys and
 * values in place, one dispatch per group. A ring layer's chunk of several entries (its
 * own rows not stored yet) and a cache on the heap (the unit test's host case) take
 * attention.comp over keys and values gathered by the host after the pending work. The
 * single-entry kv_store (kinds that store row by row) is kv_cache.c's, after a wait.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_ops.h"
#include "kernels/cpu/matmul_internal.h"
#include "model/facts.h"
#include "util/error.h"

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
    vk_outs o = {0};
    vk_range rq, rm, rsink, rs, ro;
    int32_t *meta = NULL;
    facet_status st = vk_open(ctx, &err);
    if (st == FACET_OK) st = vk_in(b, c->q, (size_t)n * qd, &rq, &err);
    if (st == FACET_OK) st = vk_take(ctx, 4 * (size_t)n * sizeof(int32_t), &rm, (void **)&meta, &err);
    if (st == FACET_OK) st = vk_in(b, c->p->sinks, (size_t)nh, &rsink, &err);
    if (st == FACET_OK) st = vk_tmp(b, (size_t)n * nh * (size_t)maxk, &rs, &err);
    if (st == FACET_OK) st = vk_out(b, c->out, (size_t)n * qd, &o, &ro, &err);
    if (st != FACET_OK) {
        vk_done(b, &o, st, &err);
        return;
    }
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
    vk_done(b, &o, st, &err);
}

void vk_attention(facet_backend *be, const facet_attn_chunk *c) {
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
    vk_outs o = {0};
    vk_range rq, rk, rv, rm, rsink, rs, ro;
    float *K = NULL, *V = NULL;
    int32_t *meta = NULL;
    /* the keys and values are gathered by the host: the pending work (the chunk's rows,
     * the stores into the cache) finishes first */
    facet_status st = vk_wait(ctx, &err);
    if (st == FACET_OK) st = vk_open(ctx, &err);
    if (st == FACET_OK) st = vk_in(b, c->q, (size_t)n * qd, &rq, &err);
    if (st == FACET_OK) st = vk_take(ctx, keys * kvd * sizeof(float), &rk, (void **)&K, &err);
    if (st == FACET_OK) st = vk_take(ctx, keys * kvd * sizeof(float), &rv, (void **)&V, &err);
    if (st == FACET_OK) st = vk_take(ctx, 4 * (size_t)n * sizeof(int32_t), &rm, (void **)&meta, &err);
    if (st == FACET_OK) st = vk_in(b, c->p->sinks, (size_t)nh, &rsink, &err);
    if (st == FACET_OK) st = vk_tmp(b, (size_t)n * nh * (size_t)maxk, &rs, &err);
    if (st == FACET_OK) st = vk_out(b, c->out, (size_t)n * qd, &o, &ro, &err);
    if (st != FACET_OK) {
        vk_done(b, &o, st, &err);
        return;
    }
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
    st = vk_dispatch(ctx, VK_SH_ATTENTION, 0, r, 7, &p, sizeof p, (uint32_t)nh, (uint32_t)n, 1,
                     &err);
    vk_done(b, &o, st, &err);
}

/* One entry's store by the host, writing through the cache's mapping (a kind that stores
 * row by row; the attention kind stores a chunk with kv_store_rows): the pending work,
 * which may write k, v or read the cache, finishes first. */
void vk_kv_store(facet_backend *be, facet_kv_cache *kv, int seq, int layer, int pos,
                 const float *k, const float *v) {
    vk_backend *b = vkb(be);
    facet_error err = {0};
    if (b->st != FACET_OK) return;
    if (fail(b, vk_wait(&b->d->c, &err), &err) != FACET_OK) return;
    facet_kv_cache_store(kv, seq, layer, pos, k, v);
}

/* The chunk's rows into their sequences' caches on the device (kv_store.comp), one
 * dispatch per run of entries of one sequence; a ring layer's row that a later position
 * of the same chunk overwrites is skipped (facet_kv_cache_store's rule). A cache in host
 * memory (the unit test's) is stored by the host. */
void vk_kv_store_rows(facet_backend *be, facet_kv_cache *kv, int layer, int n, const int *rows,
                      const int32_t *seq_ids, const int *pos, const float *k, const float *v) {
    vk_backend *b = vkb(be);
    vk_ctx *ctx = &b->d->c;
    facet_error err = {0};
    if (b->st != FACET_OK || n <= 0) return;
    size_t kvd = (size_t)kv->n_kv_heads * (size_t)kv->head_dim;
    int max_row = 0;
    for (int e = 0; e < n; e++) {
        int r = rows ? rows[e] : e;
        if (r > max_row) max_row = r;
    }
    vk_range rk, rv;
    facet_status st = FACET_OK;
    int device = kv->buf_ctx == (void *)b->d && !kv->latent &&
                 (kv->type == FACET_KV_F32 || kv->type == FACET_KV_BF16);
    if (!device) {
        if ((st = vk_wait(ctx, &err)) == FACET_OK)
            for (int e = 0; e < n; e++) {
                int r = rows ? rows[e] : e;
                facet_kv_cache_store(kv, seq_ids[r], layer, pos[r], k + (size_t)r * kvd,
                                     v + (size_t)r * kvd);
            }
        fail(b, st, &err);
        return;
    }
    st = vk_open(ctx, &err);
    if (st == FACET_OK) st = vk_in(b, k, (size_t)(max_row + 1) * kvd, &rk, &err);
    if (st == FACET_OK) st = vk_in(b, v, (size_t)(max_row + 1) * kvd, &rv, &err);
    for (int e0 = 0; e0 < n && st == FACET_OK;) {
        int seq = seq_ids[rows ? rows[e0] : e0], e1 = e0, cnt = 0;
        while (e1 < n && seq_ids[rows ? rows[e1] : e1] == seq) e1++;
        const facet_kv_seq *sq = &kv->seqs[seq];
        vk_range rm, kc, vc;
        int32_t *meta = NULL;
        if ((st = vk_take(ctx, 2 * (size_t)(e1 - e0) * sizeof(int32_t), &rm, (void **)&meta,
                          &err)) != FACET_OK)
            break;
        for (int e = e0; e < e1; e++) {
            int r = rows ? rows[e] : e;
            if (facet_kv_is_ring(kv, layer) && pos[r] + kv->ring_cap <= sq->len - 1) continue;
            meta[2 * cnt] = r;
            meta[2 * cnt + 1] = (int32_t)facet_kv_row(kv, layer, pos[r]);
            cnt++;
        }
        if (!vk_kv_range(b->d, sq->layers[layer].k, &kc) ||
            !vk_kv_range(b->d, sq->layers[layer].v, &vc)) {
            st = facet_err(&err, FACET_E_INVALID_ARGUMENT, "vulkan: sequence %d's KV cache of "
                           "layer %d is not in the device's memory", seq, layer);
            break;
        }
        struct {
            uint32_t nkv, hd, rows, bf16, n;
        } p = {(uint32_t)kv->n_kv_heads, (uint32_t)kv->head_dim,
               (uint32_t)facet_kv_rows(kv, sq, layer), kv->type == FACET_KV_BF16, (uint32_t)cnt};
        vk_range r[5] = {rk, rv, kc, vc, rm};
        uint32_t gx, gy;
        vk_grid(ctx, ((uint64_t)cnt * kvd + 63) / 64, &gx, &gy);
        if (cnt) st = vk_dispatch(ctx, VK_SH_KV_STORE, 0, r, 5, &p, sizeof p, gx, gy, 1, &err);
        e0 = e1;
    }
    vk_done(b, NULL, st, &err);
}
