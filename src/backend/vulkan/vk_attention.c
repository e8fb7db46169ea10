/*
 * vk_attention.c — the Vulkan backend's attention and kv_store (backend.h). Attention is
 * attn_flash.comp, a FlashAttention-style kernel (key tiles of 16 positions in shared
 * memory, an online softmax, no scores buffer), one dispatch per sequence group:
 * - a group of more than HEADS_ROWS entries (prefill) in rows mode, a workgroup per
 *   (tile of entries, query head);
 * - a shorter group (decode) in heads mode, a workgroup per (entry, tile of a KV head's
 *   query heads), its keys split into chunks (split-K) when the context is long: each
 *   chunk's workgroup writes a partial (max, sum, acc) to the submission's arena and
 *   attn_reduce.comp combines them.
 * A vulkan session's KV cache is in the device's memory (vk_kvmem.c), so the kernel
 * reads each group's keys and values in place, only the queries uploaded. A ring layer's
 * chunk of several entries (its own rows not stored yet) and a cache on the heap (the
 * unit test's host case) gather keys and values on the host (after the pending work)
 * and upload them, as the CPU's views.
 * The recording (record_group, record_reduce) takes device ranges and is recorded after
 * the pending work (vk_resident.c). kv_store_rows writes the chunk's rows into the cache
 * with kv_store.comp; the single-entry kv_store (kinds that store row by row) is
 * kv_cache.c's, after a wait.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/needs/vk_needs.h"
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

/* ---- the flash kernel's plan (attn_flash.comp, attn_reduce.comp) ---- */

/* A group of up to this many entries (decode, a few speculative rows) runs in heads mode:
 * a workgroup per (entry, tile of a KV head's query heads), so GQA reads each key once
 * per KV head, and its keys may be split (split-K). A longer group (prefill) runs in
 * rows mode: a workgroup per (tile of entries, query head). */
#define HEADS_ROWS 4
/* Split-K: a row of more than SPLIT_MIN_TILES key tiles (16 positions each) splits its
 * keys into chunks of SPLIT_TILES tiles at least, SPLIT_MAX chunks at most. */
#define SPLIT_MIN_TILES 16
#define SPLIT_TILES 8
#define SPLIT_MAX 32

/* The kernel's variant of a head_dim (head_dim <= 64 << variant) and its query tile. */
/* The tiling and its shared memory are declared once, in needs/vk_attention_shared.c,
 * which the device verdict reads too (refusing before loading what this would refuse). */
static int flash_variant(int hd) { return vk_attention_variant(hd); }
static int flash_bq(int variant) { return vk_attention_bq(variant); }

/* Key tiles of a row at position pos: the span from its window's first position
 * (rounded down to 16) to pos. */
static int row_tiles(const facet_attn_chunk *c, int pos) {
    int w = c->p->window, first = w > 0 && pos - w + 1 > 0 ? pos - w + 1 : 0;
    return (pos - first / 16 * 16) / 16 + 1;
}

/* Splits of a heads-mode row of T key tiles (attn_flash.comp takes ceil(T / splits)
 * tiles per split). A row's own span decides, so its bits do not depend on its group. */
static int row_splits(int T) {
    if (T <= SPLIT_MIN_TILES) return 1;
    int ns = (T + SPLIT_TILES - 1) / SPLIT_TILES;
    if (ns > SPLIT_MAX) ns = SPLIT_MAX;
    int tps = (T + ns - 1) / ns;
    return (T + tps - 1) / tps;
}

/* Splits of the entry at position pos of group g (1: rows mode, or a short span). */
static int entry_splits(const facet_attn_chunk *c, int g, int pos) {
    return c->group_len[g] > HEADS_ROWS ? 1 : row_splits(row_tiles(c, pos));
}

/* Group g's splits (the most of its rows; 1: not split). */
static int group_splits(const facet_attn_chunk *c, int g) {
    const int *order = c->order + c->order_at[c->group_row[g]];
    int ns = 1;
    for (int i = 0; i < c->group_len[g]; i++) {
        int r = entry_splits(c, g, c->pos[order[i]]);
        if (r > ns) ns = r;
    }
    return ns;
}

/* Floats of the chunk's split-K partial records (at least 1: a binding's range). */
static size_t partial_floats(const facet_attn_chunk *c) {
    size_t n = 0, rec = (size_t)c->kv->head_dim + 2;
    for (int g = 0; g < c->n_groups; g++) {
        const int *order = c->order + c->order_at[c->group_row[g]];
        for (int i = 0; i < c->group_len[g]; i++) {
            int ns = entry_splits(c, g, c->pos[order[i]]);
            if (ns > 1) n += (size_t)ns * (size_t)c->n_heads * rec;
        }
    }
    return n ? n : 1;
}

/* The kernels' per-slot table: slots are the groups' entries in group order; slot s:
 * entry r, position, splits, first partial record. */
static void fill_meta(const facet_attn_chunk *c, int32_t *meta) {
    int slot = 0, rec = 0;
    for (int g = 0; g < c->n_groups; g++) {
        const int *order = c->order + c->order_at[c->group_row[g]];
        for (int i = 0; i < c->group_len[g]; i++, slot++) {
            int pos = c->pos[order[i]];
            int ns = entry_splits(c, g, pos);
            meta[4 * slot] = order[i];
            meta[4 * slot + 1] = pos;
            meta[4 * slot + 2] = ns;
            meta[4 * slot + 3] = ns > 1 ? rec : 0;
            if (ns > 1) rec += ns * c->n_heads;
        }
    }
}

/* Where a group's keys and values are for attn_flash.comp. */
typedef struct vk_attn_kv {
    vk_range k, v;
    uint32_t rows, ring_cap;  /* in place: cache rows per KV head, the ring's size or 0 */
    int bf16, gathered;       /* gathered: float32 [key][nkv][hd], position kp at kp + kbias */
    int32_t kbias;
} vk_attn_kv;

/* The ranges every dispatch of a chunk binds. */
typedef struct vk_attn_io {
    vk_range q, meta, sinks, part, out, alibi;
} vk_attn_io;

/* 0, or an error naming what this device or head_dim cannot run. */
static facet_status flash_check(const vk_ctx *ctx, const facet_attn_chunk *c, facet_error *err) {
    int hd = c->kv->head_dim;
    if (hd < 1 || hd > 256)
        return facet_err(err, FACET_E_UNSUPPORTED, "vulkan: attention head_dim %d (supported: "
                         "1..256)", hd);
    size_t need = (size_t)vk_attention_shared_bytes(hd);
    if (need > ctx->max_shared)
        return facet_err(err, FACET_E_UNSUPPORTED, "vulkan: attention with head_dim %d needs %zu "
                         "bytes of shared memory; device %s's maxComputeSharedMemorySize is %u",
                         hd, need, ctx->device_name, ctx->max_shared);
    return FACET_OK;
}

/* Record group g's attn_flash dispatch (its slots from slot0). */
static facet_status record_group(vk_ctx *ctx, const facet_attn_chunk *c, int g, int slot0,
                                 const vk_attn_kv *src, const vk_attn_io *io, facet_error *err) {
    int nh = c->n_heads, nkv = c->n_kv_heads, hd = c->kv->head_dim, n = c->group_len[g];
    int variant = flash_variant(hd), bq = flash_bq(variant), ns = group_splits(c, g);
    int heads = n <= HEADS_ROWS;
    struct {
        uint32_t nh, nkv, hd;
        int32_t window;
        float scale, softcap;
        uint32_t flags, rows, ring_cap, slot0, n;
        int32_t kbias;
    } p = {(uint32_t)nh, (uint32_t)nkv, (uint32_t)hd, c->p->window, c->p->scale, c->p->softcap,
           (c->p->sinks ? 1u : 0u) | (src->bf16 ? 2u : 0u) | (src->gathered ? 4u : 0u) |
               (heads ? 8u : 0u) | (c->p->alibi ? 16u : 0u),
           src->rows, src->ring_cap, (uint32_t)slot0, (uint32_t)n, src->kbias};
    int G = nh / nkv, nt = (G + bq - 1) / bq;
    uint32_t gx = heads ? (uint32_t)n : (uint32_t)((n + bq - 1) / bq);
    uint32_t gy = heads ? (uint32_t)(nkv * nt) : (uint32_t)nh, gz = heads ? (uint32_t)ns : 1u;
    vk_range r[8] = {io->q, src->k, src->v, io->meta, io->sinks, io->part, io->out, io->alibi};
    return vk_dispatch(ctx, VK_SH_ATTN_FLASH, variant, r, 8, &p, sizeof p, gx, gy, gz, err);
}

/* Record the combine of the chunk's split rows (one dispatch over every slot; a slot of
 * one split returns at once), when any group was split. */
static facet_status record_reduce(vk_ctx *ctx, const facet_attn_chunk *c, const vk_attn_io *io,
                                  facet_error *err) {
    int any = 0;
    for (int g = 0; g < c->n_groups && !any; g++) any = group_splits(c, g) > 1;
    if (!any) return FACET_OK;
    struct {
        uint32_t nh, hd;
    } p = {(uint32_t)c->n_heads, (uint32_t)c->kv->head_dim};
    vk_range r[3] = {io->meta, io->part, io->out};
    return vk_dispatch(ctx, VK_SH_ATTN_REDUCE, 0, r, 3, &p, sizeof p, (uint32_t)c->n_heads,
                       (uint32_t)c->n_rows, 1, err);
}

/* 1 when every group's keys and values are in the cache (not a ring layer's chunk of
 * several entries, whose own rows are stored after the call) and the cache's buffers
 * are the device's (facet_device_kv_memory), of a type attn_flash reads. */
static int in_place(const vk_backend *b, const facet_attn_chunk *c) {
    const facet_kv_cache *kv = c->kv;
    if (kv->latent || (kv->type != FACET_KV_F32 && kv->type != FACET_KV_BF16)) return 0;
    if (kv->buf_ctx != (void *)b->d) return 0;
    if (facet_kv_is_ring(kv, c->layer))
        for (int g = 0; g < c->n_groups; g++)
            if (c->group_len[g] > 1) return 0;
    return 1;
}

/* The ranges every chunk takes (queries, slots, sinks, ALiBi slopes, partials, output),
 * the slots filled; an output in host memory is registered in o (vk_done copies it). */
static facet_status take_io(vk_backend *b, const facet_attn_chunk *c, vk_attn_io *io,
                            vk_outs *o, facet_error *err) {
    vk_ctx *ctx = &b->d->c;
    size_t qd = (size_t)c->n_heads * (size_t)c->kv->head_dim, n = (size_t)c->n_rows;
    int32_t *meta = NULL;
    facet_status st = vk_in(b, c->q, n * qd, &io->q, err);
    if (st == FACET_OK) st = vk_take(ctx, 4 * n * sizeof(int32_t), &io->meta, (void **)&meta, err);
    if (st == FACET_OK) st = vk_in(b, c->p->sinks, (size_t)c->n_heads, &io->sinks, err);
    if (st == FACET_OK) st = vk_in(b, c->p->alibi, (size_t)c->n_heads, &io->alibi, err);
    if (st == FACET_OK) st = vk_tmp(b, partial_floats(c), &io->part, err);
    if (st == FACET_OK) st = vk_out(b, c->out, n * qd, o, &io->out, err);
    if (st == FACET_OK) fill_meta(c, meta);
    return st;
}

/* The chunk's attention over the cache's device buffers in place: one attn_flash
 * dispatch per sequence group (and the split rows' combine), one submission; only the
 * queries go up. */
static void attention_in_place(vk_backend *b, const facet_attn_chunk *c) {
    vk_ctx *ctx = &b->d->c;
    facet_error err = {0};
    const facet_kv_cache *kv = c->kv;
    vk_outs o = {0};
    vk_attn_io io = {0};
    facet_status st = vk_open(ctx, &err);
    if (st == FACET_OK) st = take_io(b, c, &io, &o, &err);
    for (int g = 0, slot = 0; g < c->n_groups && st == FACET_OK; slot += c->group_len[g++]) {
        int r0 = c->group_row[g];
        const facet_kv_seq *sq = &kv->seqs[c->seq_ids[r0]];
        const facet_kv_layer *lay = &sq->layers[c->layer];
        vk_attn_kv src = {.rows = (uint32_t)facet_kv_rows(kv, sq, c->layer),
                          .ring_cap = facet_kv_is_ring(kv, c->layer) ? (uint32_t)kv->ring_cap : 0u,
                          .bf16 = kv->type == FACET_KV_BF16};
        if (!vk_kv_range(b->d, lay->k, &src.k) || !vk_kv_range(b->d, lay->v, &src.v)) {
            st = facet_err(&err, FACET_E_INVALID_ARGUMENT, "vulkan: sequence %d's KV cache of "
                           "layer %d is not in the device's memory", c->seq_ids[r0], c->layer);
            break;
        }
        st = record_group(ctx, c, g, slot, &src, &io, &err);
    }
    if (st == FACET_OK) st = record_reduce(ctx, c, &io, &err);
    vk_done(b, &o, st, &err);
}

void vk_attention(facet_backend *be, const facet_attn_chunk *c) {
    vk_backend *b = vkb(be);
    vk_ctx *ctx = &b->d->c;
    facet_error err = {0};
    if (b->st != FACET_OK || c->n_rows <= 0) return;
    if (fail(b, flash_check(ctx, c, &err), &err) != FACET_OK) return;
    if (in_place(b, c)) {
        attention_in_place(b, c);
        return;
    }
    int nkv = c->n_kv_heads, hd = c->kv->head_dim;
    size_t kvd = (size_t)nkv * hd, keys = 0;
    for (int g = 0; g < c->n_groups; g++)
        keys += (size_t)(c->pos[c->group_row[g]] + c->group_len[g] - group_first(c, g));
    vk_outs o = {0};
    vk_attn_io io = {0};
    vk_range rk = {0}, rv = {0};
    float *K = NULL, *V = NULL;
    /* the keys and values are gathered by the host: the pending work (the chunk's rows,
     * the stores into the cache) finishes first */
    facet_status st = vk_wait(ctx, &err);
    if (st == FACET_OK) st = vk_open(ctx, &err);
    if (st == FACET_OK) st = take_io(b, c, &io, &o, &err);
    if (st == FACET_OK) st = vk_take(ctx, keys * kvd * sizeof(float), &rk, (void **)&K, &err);
    if (st == FACET_OK) st = vk_take(ctx, keys * kvd * sizeof(float), &rv, (void **)&V, &err);
    if (st != FACET_OK) {
        vk_done(b, &o, st, &err);
        return;
    }
    size_t key0 = 0;
    for (int g = 0, slot = 0; g < c->n_groups && st == FACET_OK; slot += c->group_len[g++]) {
        int r0 = c->group_row[g], first = group_first(c, g);
        int nk = c->pos[r0] + c->group_len[g] - first;
        gather_group(c, g, K + key0 * kvd, V + key0 * kvd);
        vk_attn_kv src = {.k = rk, .v = rv, .gathered = 1, .kbias = (int32_t)key0 - first};
        st = record_group(ctx, c, g, slot, &src, &io, &err);
        key0 += (size_t)nk;
    }
    if (st == FACET_OK) st = record_reduce(ctx, c, &io, &err);
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
    vk_range rk = {0}, rv = {0};
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
        vk_range rm = {0}, kc = {0}, vc = {0};
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
