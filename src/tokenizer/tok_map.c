/* tok_map.c — the small containers of the tokenizer: byte buffers, open-addressing
 * hash maps (string -> id, id pair -> merge), id vectors, word and string lists. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tokenizer/tokenizer_internal.h"

void *tok_table_calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    size_t bytes = n * size;
    const size_t huge = (size_t)2 << 20;
    if (bytes < 2 * huge) return calloc(n, size);
    void *p;
    bytes = (bytes + huge - 1) & ~(huge - 1);
    if (posix_memalign(&p, huge, bytes)) return NULL;
    (void)madvise(p, bytes, MADV_HUGEPAGE); /* advisory: ignored where THP is off */
    memset(p, 0, bytes);
    return p;
}

/* FNV-1a folded with a final mix; fast on short keys, which vocab keys are. */
uint32_t tok_hash(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (uint32_t)h;
}

static int strmap_rehash(tok_strmap *m, size_t cap) {
    struct tok_strmap_slot *slots = tok_table_calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t j = 0; j < m->cap; j++) {
        if (!m->slots[j].off) continue;
        size_t i = m->slots[j].hash & (cap - 1);
        while (slots[i].off) i = (i + 1) & (cap - 1);
        slots[i] = m->slots[j];
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int tok_strmap_reserve(tok_strmap *m, size_t n, size_t key_bytes) {
    size_t cap = m->cap ? m->cap : 64;
    while (cap < 2 * n) cap *= 2;
    if (cap > m->cap && strmap_rehash(m, cap)) return -1;
    return facet_str_reserve(&m->keys, key_bytes);
}

int tok_strmap_put(tok_strmap *m, const char *key, size_t len, int32_t value) {
    return tok_strmap_put_h(m, key, len, tok_hash(key, len), value);
}

int tok_strmap_put_h(tok_strmap *m, const char *key, size_t len, uint32_t h, int32_t value) {
    if (len >= UINT32_MAX || m->keys.len + len + 2 >= UINT32_MAX) return -1;
    if ((m->n + 1) * 2 > m->cap && strmap_rehash(m, m->cap ? m->cap * 2 : 64)) return -1;
    size_t i = h & (m->cap - 1);
    while (m->slots[i].off) {
        struct tok_strmap_slot *e = &m->slots[i];
        if (e->hash == h && e->len == len && !memcmp(m->keys.data + e->off - 1, key, len)) {
            e->value = value;
            return 0;
        }
        i = (i + 1) & (m->cap - 1);
    }
    uint32_t off = (uint32_t)m->keys.len + 1;
    /* keys are stored NUL-terminated so callers can hand them out as C strings */
    if (facet_str_append(&m->keys, key, len) || facet_str_append(&m->keys, "", 1)) return -1;
    m->slots[i] = (struct tok_strmap_slot){h, off, (uint32_t)len, value};
    m->n++;
    return 0;
}

int32_t tok_strmap_get(const tok_strmap *m, const char *key, size_t len) {
    return tok_strmap_get_h(m, key, len, tok_hash(key, len));
}

int32_t tok_strmap_get_h(const tok_strmap *m, const char *key, size_t len, uint32_t h) {
    if (!m->cap) return -1;
    size_t i = h & (m->cap - 1);
    while (m->slots[i].off) {
        const struct tok_strmap_slot *e = &m->slots[i];
        if (e->hash == h && e->len == len && !memcmp(m->keys.data + e->off - 1, key, len)) return e->value;
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}

void tok_strmap_free(tok_strmap *m) {
    free(m->slots);
    facet_str_free(&m->keys);
    memset(m, 0, sizeof *m);
}

static inline size_t pair_slot(uint64_t k, size_t cap) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

static int pairmap_rehash(tok_pairmap *m, size_t cap) {
    struct tok_pair_slot *slots = tok_table_calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t j = 0; j < m->cap; j++) {
        if (!m->slots[j].key) continue;
        size_t i = pair_slot(m->slots[j].key, cap);
        while (slots[i].key) i = (i + 1) & (cap - 1);
        slots[i] = m->slots[j];
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

void tok_pairmap_prefetch(const tok_pairmap *m, int32_t a, int32_t b) {
    if (!m->cap) return;
    uint64_t k = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    __builtin_prefetch(&m->slots[pair_slot(k, m->cap)]);
}

int tok_pairmap_reserve(tok_pairmap *m, size_t n) {
    size_t cap = m->cap ? m->cap : 64;
    while (cap < 2 * n) cap *= 2;
    return cap > m->cap ? pairmap_rehash(m, cap) : 0;
}

int tok_pairmap_put(tok_pairmap *m, int32_t a, int32_t b, uint32_t rank, int32_t new_id) {
    if ((m->n + 1) * 2 > m->cap && pairmap_rehash(m, m->cap ? m->cap * 2 : 64)) return -1;
    uint64_t k = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    size_t i = pair_slot(k, m->cap);
    while (m->slots[i].key && m->slots[i].key != k) i = (i + 1) & (m->cap - 1);
    if (!m->slots[i].key) m->n++;
    m->slots[i] = (struct tok_pair_slot){k, rank, new_id};
    return 0;
}

int tok_pairmap_get(const tok_pairmap *m, int32_t a, int32_t b, uint32_t *rank, int32_t *new_id) {
    if (!m->cap) return 0;
    uint64_t k = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    size_t i = pair_slot(k, m->cap);
    while (m->slots[i].key) {
        if (m->slots[i].key == k) {
            if (rank) *rank = m->slots[i].rank;
            if (new_id) *new_id = m->slots[i].new_id;
            return 1;
        }
        i = (i + 1) & (m->cap - 1);
    }
    return 0;
}

void tok_pairmap_free(tok_pairmap *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

int tok_ids_push(tok_ids *ids, int32_t id) {
    if (facet_array_reserve(ids->v, ids->cap, ids->n + 1)) return -1;
    ids->v[ids->n++] = id;
    return 0;
}

int tok_words_push(tok_words *w, const char *s, size_t len, int orig0) {
    if (facet_array_reserve(w->spans, w->cap, w->n + 1)) return -1;
    if (w->text.len + len > UINT32_MAX) return -1;
    tok_span *sp = &w->spans[w->n];
    sp->off = (uint32_t)w->text.len;
    sp->len = (uint32_t)len;
    sp->orig0 = (uint8_t)orig0;
    if (facet_str_append(&w->text, s, len)) return -1;
    w->n++;
    return 0;
}

void tok_words_clear(tok_words *w) {
    w->n = 0;
    w->text.len = 0;
    w->bytelevel = 0;
}

void tok_words_free(tok_words *w) {
    facet_str_free(&w->text);
    free(w->spans);
    memset(w, 0, sizeof *w);
}

int tok_words_materialize(tok_words *w) {
    if (!w->bytelevel) return 0;
    facet_str nb = {0};
    for (size_t i = 0; i < w->n; i++) {
        size_t off = nb.len;
        if (tok_bytelevel_map(&nb, w->text.data + w->spans[i].off, w->spans[i].len)) {
            facet_str_free(&nb);
            return -1;
        }
        w->spans[i].off = (uint32_t)off;
        w->spans[i].len = (uint32_t)(nb.len - off);
    }
    facet_str_free(&w->text);
    w->text = nb;
    w->bytelevel = 0;
    return 0;
}

int tok_strlist_push(tok_strlist *l, const char *s, size_t len) {
    if (l->n == l->cap) { /* off and len: parallel, one capacity */
        size_t co = l->cap, cl = l->cap;
        int fail = facet_array_reserve(l->off, co, l->n + 1) |
                   facet_array_reserve(l->len, cl, l->n + 1);
        l->cap = co < cl ? co : cl;
        if (fail) return -1;
    }
    l->off[l->n] = l->text.len;
    l->len[l->n] = len;
    if (facet_str_append(&l->text, s, len)) return -1;
    l->n++;
    return 0;
}

void tok_strlist_clear(tok_strlist *l) {
    l->n = 0;
    l->text.len = 0;
}

void tok_strlist_free(tok_strlist *l) {
    facet_str_free(&l->text);
    free(l->off);
    free(l->len);
    memset(l, 0, sizeof *l);
}
