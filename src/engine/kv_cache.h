/*
 * kv_cache.h — the per-sequence cache of a session: attention keys and values (and, with
 * issue 26, the recurrent state of hybrid families), one slot per layer and sequence.
 *
 * Contract
 *
 * Slots. Every layer has one slot kind, fixed when the cache is created and shared by all
 * sequences:
 *   FACET_KV_SLOT_GLOBAL  attention over every position: position p at row p; the rows
 *                         grow on demand (below), up to n_ctx rounded up to a key group.
 *   FACET_KV_SLOT_RING    sliding-window attention when the window is shorter than n_ctx:
 *                         a ring of `ring_cap` positions (sliding_window rounded up to
 *                         whole key groups, so a wrap falls between key groups),
 *                         position p at row p % ring_cap, allocated once in full on the
 *                         sequence's first reserve and never grown.
 *   FACET_KV_SLOT_STATE   a recurrent mixer's state (Mamba's conv window and SSM state):
 *                         `state_bytes[l]` bytes per sequence, no rows, no position. It is
 *                         allocated (zeroed) with the other slots of the sequence's first
 *                         reserve (the same all-or-nothing commit) and never grown, zeroed
 *                         by facet_kv_cache_reset, freed by facet_kv_cache_release. Its
 *                         layout belongs to the mixer kind that reads it (mixer_mamba.c).
 *                         A state summarizes every token so far: it cannot be cut back
 *                         (facet_seq_truncate refuses any cut but to 0).
 *
 * Layout of a KV slot. Per KV head, `rows` positions (a multiple of FACET_KV_GROUP = 16;
 * facet_kv_rows): values [row][hd], keys transposed in groups of 16 rows
 * [row / 16][hd][16] (the layout facet_attention reads); each head's keys and its
 * values are one contiguous stream, heads one after another. Elements are of the cache's
 * `type` (float32, bf16 or f16; `elt` bytes each). Buffers are zeroed when allocated: the
 * lanes of a key group past the last position are read (never used) by attention.
 * KV bytes per sequence = k * (G * min(c, n_ctx) + S * min(c, w)), counts rounded up to
 * whole key groups (facet_plan_kv_bytes says the same).
 *
 * Growth (facet_kv_cache_reserve). `cap` is the rows of every GLOBAL slot of the sequence; it
 * starts at 64 and doubles until it holds the need, clamped to n_ctx rounded up to a key
 * group. Growth is all-or-nothing: every layer's new buffers are allocated first, then
 * committed together (rows copied, old buffers freed). On FACET_E_NOMEM the sequence is
 * exactly as before (same cap, same buffers, same contents) and still usable. Peak memory
 * during a growth is the old plus the new buffers of every global slot.
 *
 * Store (facet_kv_cache_store). A position's keys and values (float32, after norm and RoPE) are
 * rounded to `type` and written to their row. On a RING slot, a position that a later
 * position of the same forward chunk will overwrite (pos + ring_cap <= len - 1, the chunk
 * being counted in len already) is skipped, so rows stored in parallel never race for
 * one ring slot. Stores of distinct (sequence, position) pairs may run concurrently.
 *
 * Ring reading. A chunk of several positions of one sequence must read its own positions
 * from the forward scratch, not the ring: the ring still holds the window before the chunk
 * and is written after attention (forward.c), so no entry needs a row older than the
 * window. A single position (decode) is stored first and read from the ring.
 *
 * Latent caches (latent = 1: multi-head latent attention, mixer_mla.c). Every GLOBAL slot
 * holds one "head" of head_dim = kv_lora_rank + qk_rope_head_dim elements per position:
 * the normed latent, then the rope key, in the key buffer's layout above; there is no
 * value buffer (v stays NULL: the values are the latent's first kv_lora_rank elements of
 * the same rows), so a position costs head_dim elements per layer, not 2 x nh x hd.
 *
 * Release (facet_kv_cache_release) frees a sequence's buffers; len and cap return to 0 and the
 * next reserve grows it again from nothing. Reset (facet_kv_cache_reset) forgets the tokens and
 * keeps the memory. Both are safe on a sequence that never grew or whose growth failed.
 *
 * Threads: reserve, release and reset must not run concurrently with anything else on
 * the same cache.
 */
#ifndef FACET_ENGINE_KV_CACHE_H
#define FACET_ENGINE_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "facet.h"
#include "kernels/cpu/kernels.h"

typedef enum facet_kv_slot_kind {
    FACET_KV_SLOT_GLOBAL = 0,
    FACET_KV_SLOT_RING = 1,
    FACET_KV_SLOT_STATE = 2,
    FACET_KV_SLOT_NONE = 3,        /* a layer another pipeline stage runs: no buffers  */
} facet_kv_slot_kind;

/* One layer's buffers of one sequence (NULL until the sequence's first reserve). */
typedef struct facet_kv_layer {
    uint8_t *k;                    /* [nkv][rows / 16][hd][16] of type                 */
    uint8_t *v;                    /* [nkv][rows][hd] of type                          */
    float *state;                  /* STATE slots: state_bytes[l] bytes, else NULL      */
} facet_kv_layer;

/* One sequence's cache. */
typedef struct facet_kv_seq {
    int len;                       /* tokens in the cache (the next position)          */
    int cap;                       /* rows of each GLOBAL slot (a multiple of 16); 0
                                      until the first reserve                          */
    facet_kv_layer *layers;        /* [n_layers]; NULL until the first reserve         */
} facet_kv_seq;

typedef struct facet_kv_cache {
    int n_layers, n_kv_heads, head_dim;
    int n_seq_max;
    int n_ctx;                     /* positions per sequence at most                   */
    int ring_cap;                  /* positions of a RING slot, a multiple of 16 (0:
                                      no ring slots)                                   */
    facet_kv_type type;            /* element type (resolved, never AUTO)              */
    size_t elt;                    /* bytes per element: 4 or 2                        */
    uint8_t *kind;                 /* [n_layers] facet_kv_slot_kind                    */
    size_t *state_bytes;           /* [n_layers] a state's bytes per sequence (a STATE
                                      slot's, or one beside a KV slot), else 0          */
    int n_state_layers;            /* layers with a state (0: a pure attention model)  */
    int latent;                    /* 1: keys only, no value buffers (latent attention;
                                      see the contract); set after init, before reserve */
    facet_kv_seq *seqs;            /* [n_seq_max]                                      */
    /* where key and value buffers live (set after init, before the first reserve):
     * buf_alloc(buf_ctx, bytes) returns `bytes` zeroed bytes the host can read and write
     * (NULL: out of memory), buf_free gives them back. NULL: the heap (calloc / free).
     * The Vulkan backend sets its device's mapped memory, so attention reads the cache
     * in place (backend_vulkan.c); copies, cuts and rings stay this file's. */
    void *(*buf_alloc)(void *buf_ctx, size_t bytes);
    void (*buf_free)(void *buf_ctx, void *p);
    void *buf_ctx;
} facet_kv_cache;

/* Create the cache of n_seq_max sequences of up to n_ctx positions: n_layers layers of
 * n_kv_heads heads of head_dim elements of `type` (not AUTO). Layer l is a RING slot
 * when layer_sliding[l] and 0 < sliding_window < n_ctx, GLOBAL otherwise; layer_sliding
 * may be NULL (no sliding layers). Allocates the tables only; sequences grow on demand.
 * Errors: FACET_E_NOMEM (kv left empty, facet_kv_cache_free safe). */
facet_status facet_kv_cache_init(facet_kv_cache *kv, int n_layers, int n_kv_heads,
                                 int head_dim, const uint8_t *layer_sliding,
                                 int64_t sliding_window, facet_kv_type type, int n_seq_max,
                                 int n_ctx, facet_error *err);

/* Make layer `layer` a STATE slot of `bytes` (> 0) bytes per sequence (float32
 * elements: bytes a multiple of 4). Call after init, before any reserve. */
void facet_kv_cache_set_state(facet_kv_cache *kv, int layer, size_t bytes);

/* Give layer `layer` a state of `bytes` (> 0, a multiple of 4) per sequence beside its
 * GLOBAL or RING slot (Falcon-H1's parallel mixers: attention and a Mamba-2 state in one
 * layer). The state is allocated, kept, zeroed, copied and freed as a STATE slot's is
 * (the contract above); the layer's KV rows as its kind's. Call after init, before any
 * reserve. */
void facet_kv_cache_add_state(facet_kv_cache *kv, int layer, size_t bytes);

/* Make layer `layer` a NONE slot (another pipeline stage holds its cache): reserve,
 * copy and reset never touch it. Call after init, before any reserve. */
void facet_kv_cache_set_absent(facet_kv_cache *kv, int layer);

/* State bytes of one sequence (every STATE slot), what its first reserve allocates. */
size_t facet_kv_cache_state_bytes(const facet_kv_cache *kv);

/* Free every sequence's buffers and the tables; kv is left zeroed. Safe on a zeroed or
 * failed-init cache. */
void facet_kv_cache_free(facet_kv_cache *kv);

/* Make room for positions 0..need-1 of sequence seq (need <= n_ctx): allocate its slots
 * on the first call, grow its GLOBAL slots when need > cap. All-or-nothing (see the
 * contract). Errors: FACET_E_NOMEM, the sequence unchanged. */
facet_status facet_kv_cache_reserve(facet_kv_cache *kv, int seq, int need, facet_error *err);

/* Make sequence dst hold the first n positions of sequence src (src != dst, n <= src's
 * len): dst is reserved for n positions (growth as facet_kv_cache_reserve) and src's
 * rows of those positions are copied (whole key groups of keys). A RING slot is copied
 * only while src has not wrapped it (src len <= ring_cap; the caller checks). Errors:
 * A STATE slot is copied whole: it is src's state after all its tokens, so n must be
 * src's len when the cache has STATE slots (the caller checks).
 * FACET_E_NOMEM (dst then holds no tokens). */
facet_status facet_kv_cache_copy(facet_kv_cache *kv, int src, int dst, int n, facet_error *err);

/* Forget sequence seq's tokens (its STATE slots zeroed); its memory is kept. */
void facet_kv_cache_reset(facet_kv_cache *kv, int seq);

/* Forget sequence seq's tokens and free its memory. */
void facet_kv_cache_release(facet_kv_cache *kv, int seq);

/* Store position pos of sequence seq in layer `layer`: k and v are n_kv_heads * head_dim
 * float32 values each (heads one after another), rounded to the cache's type; a latent
 * cache stores k alone (v unread, may be NULL). The position must be reserved (pos < cap
 * on a GLOBAL slot) and counted in len. */
void facet_kv_cache_store(facet_kv_cache *kv, int seq, int layer, int pos, const float *k,
                          const float *v);

/* 1 if layer `layer` is a STATE slot. */
static inline int facet_kv_is_state(const facet_kv_cache *kv, int layer) {
    return kv->kind[layer] == FACET_KV_SLOT_STATE;
}

/* 1 if layer `layer` is a NONE slot (another pipeline stage holds it). */
static inline int facet_kv_is_absent(const facet_kv_cache *kv, int layer) {
    return kv->kind[layer] == FACET_KV_SLOT_NONE;
}

/* 1 if layer `layer` is a RING slot. */
static inline int facet_kv_is_ring(const facet_kv_cache *kv, int layer) {
    return kv->kind[layer] == FACET_KV_SLOT_RING;
}

/* Row of position pos in layer `layer` (pos % ring_cap on a RING slot). */
static inline size_t facet_kv_row(const facet_kv_cache *kv, int layer, int pos) {
    return facet_kv_is_ring(kv, layer) ? (size_t)(pos % kv->ring_cap) : (size_t)pos;
}

/* Rows per KV head of layer `layer`'s buffers in sequence c: the ring rounded up to whole
 * key groups on a RING slot, c->cap otherwise. */
static inline size_t facet_kv_rows(const facet_kv_cache *kv, const facet_kv_seq *c, int layer) {
    if (facet_kv_is_ring(kv, layer))
        return ((size_t)kv->ring_cap + FACET_KV_GROUP - 1) / FACET_KV_GROUP * FACET_KV_GROUP;
    return (size_t)c->cap;
}

/* Byte offset of position pos's value row (head_dim contiguous elements) of KV head kvh
 * in layer `layer`'s value buffer of sequence c. */
static inline size_t facet_kv_value_offset(const facet_kv_cache *kv, const facet_kv_seq *c,
                                           int layer, int kvh, int pos) {
    size_t hd = (size_t)kv->head_dim;
    return ((size_t)kvh * facet_kv_rows(kv, c, layer) + facet_kv_row(kv, layer, pos)) * hd *
           kv->elt;
}

/* Byte offset of element 0 of position pos's key (head_dim elements FACET_KV_GROUP apart)
 * of KV head kvh in layer `layer`'s key buffer of sequence c. */
static inline size_t facet_kv_key_offset(const facet_kv_cache *kv, const facet_kv_seq *c,
                                         int layer, int kvh, int pos) {
    size_t hd = (size_t)kv->head_dim, row = facet_kv_row(kv, layer, pos);
    return ((size_t)kvh * facet_kv_rows(kv, c, layer) * hd +
            row / FACET_KV_GROUP * hd * FACET_KV_GROUP + row % FACET_KV_GROUP) * kv->elt;
}

/* Position pos's value row of KV head kvh in layer `layer` of sequence c. */
static inline const uint8_t *facet_kv_value(const facet_kv_cache *kv, const facet_kv_seq *c,
                                            int layer, int kvh, int pos) {
    return c->layers[layer].v + facet_kv_value_offset(kv, c, layer, kvh, pos);
}

/* Position pos's key of KV head kvh in layer `layer` of sequence c; pos 0 gives the
 * head's first key group (what facet_attention takes). */
static inline const uint8_t *facet_kv_key(const facet_kv_cache *kv, const facet_kv_seq *c,
                                          int layer, int kvh, int pos) {
    return c->layers[layer].k + facet_kv_key_offset(kv, c, layer, kvh, pos);
}

#endif
