/* tok_bpe.c — the BPE model (tokenizers/src/models/bpe/model.rs and word.rs): a word is
 * split into characters (with continuing_subword_prefix / end_of_word_suffix,
 * byte_fallback to "<0xHH>" tokens, unk_token with fuse_unk), then merged pair by pair,
 * always the pair of lowest merge rank first (leftmost on ties), through a priority
 * queue over a linked list of symbols. Results are kept in a word cache. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"

#define CACHE_MAX_WORDS 200000
#define CACHE_MAX_WORD_LEN 128

typedef struct sym {
    int32_t id;
    int32_t prev, next;
    uint32_t len; /* 0 = merged away */
} sym;

typedef struct merge_ev {
    uint32_t rank;
    uint32_t pos;
    int32_t new_id;
} merge_ev;

static inline int ev_less(const merge_ev *a, const merge_ev *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

typedef struct heap {
    merge_ev *v;
    size_t n, cap;
} heap;

static int heap_push(heap *h, merge_ev e) {
    if (facet_array_reserve(h->v, h->cap, h->n + 1)) return -1;
    size_t i = h->n++;
    while (i) {
        size_t parent = (i - 1) / 2;
        if (!ev_less(&e, &h->v[parent])) break;
        h->v[i] = h->v[parent];
        i = parent;
    }
    h->v[i] = e;
    return 0;
}

static merge_ev heap_pop(heap *h) {
    merge_ev top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && ev_less(&h->v[c + 1], &h->v[c])) c++;
        if (!ev_less(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = last;
    return top;
}

typedef struct word {
    sym *s;
    size_t n, cap;
} word;

static int word_add(word *w, int32_t id, uint32_t len) {
    if (facet_array_reserve(w->s, w->cap, w->n + 1)) return -1;
    sym *s = &w->s[w->n];
    s->id = id;
    s->len = len;
    s->prev = (int32_t)w->n - 1;
    s->next = -1;
    if (w->n) w->s[w->n - 1].next = (int32_t)w->n;
    w->n++;
    return 0;
}

/* Word::merge_all */
static int merge_all(const tok_pairmap *merges, word *w, heap *h) {
    h->n = 0;
    for (size_t i = 0; i + 1 < w->n; i++) {
        merge_ev e;
        if (tok_pairmap_get(merges, w->s[i].id, w->s[i + 1].id, &e.rank, &e.new_id)) {
            e.pos = (uint32_t)i;
            if (heap_push(h, e)) return -1;
        }
    }
    while (h->n) {
        merge_ev top = heap_pop(h);
        sym *cur = &w->s[top.pos];
        if (!cur->len || cur->next < 0) continue;
        size_t next_pos = (size_t)cur->next;
        sym right = w->s[next_pos];
        int32_t nid;
        if (!tok_pairmap_get(merges, cur->id, right.id, NULL, &nid) || nid != top.new_id) continue;
        cur->id = top.new_id;
        cur->len += right.len;
        cur->next = right.next;
        w->s[next_pos].len = 0;
        if (right.next >= 0 && (size_t)right.next < w->n) w->s[right.next].prev = (int32_t)top.pos;
        merge_ev e;
        if (cur->prev >= 0 && tok_pairmap_get(merges, w->s[cur->prev].id, cur->id, &e.rank, &e.new_id)) {
            e.pos = (uint32_t)cur->prev;
            if (heap_push(h, e)) return -1;
        }
        if (cur->next >= 0 && tok_pairmap_get(merges, cur->id, w->s[cur->next].id, &e.rank, &e.new_id)) {
            e.pos = top.pos;
            if (heap_push(h, e)) return -1;
        }
    }
    return 0;
}

/* BPE::merge_word's character split into initial symbols. */
static int split_chars(const tok_bpe *m, const char *wd, size_t len, word *w, facet_str *tmp) {
    int32_t unk = -1;
    uint32_t unk_len = 0;
    for (size_t i = 0, k; i < len; i += k) {
        k = tok_utf8_seqlen((unsigned char)wd[i]);
        if (i + k > len) k = len - i;
        int first = i == 0, last = i + k == len;
        const char *s = wd + i;
        size_t sl = k;
        if ((!first && m->prefix) || (last && m->suffix)) {
            tmp->len = 0;
            if ((!first && m->prefix && facet_str_append(tmp, m->prefix, m->prefix_len)) || facet_str_append(tmp, wd + i, k) ||
                (last && m->suffix && facet_str_append(tmp, m->suffix, m->suffix_len)))
                return -1;
            s = tmp->data;
            sl = tmp->len;
        }
        int32_t id = sl == 1 && (unsigned char)s[0] < 0x80 ? m->ascii_id[(unsigned char)s[0]]
                                                          : tok_strmap_get(&m->vocab, s, sl);
        if (id >= 0) {
            if (unk >= 0) {
                if (word_add(w, unk, unk_len)) return -1;
                unk = -1;
            }
            if (word_add(w, id, (uint32_t)k)) return -1;
            continue;
        }
        if (m->byte_fallback) {
            int all = 1;
            for (size_t b = 0; b < sl; b++) all &= m->fallback_id[(unsigned char)s[b]] >= 0;
            if (all) {
                for (size_t b = 0; b < sl; b++)
                    if (word_add(w, m->fallback_id[(unsigned char)s[b]], 1)) return -1;
                continue;
            }
        }
        if (m->unk_id >= 0) {
            if (unk >= 0 && m->fuse_unk) {
                unk_len += (uint32_t)k;
            } else {
                if (unk >= 0 && word_add(w, unk, unk_len)) return -1;
                unk = m->unk_id;
                unk_len = (uint32_t)k;
            }
        }
    }
    if (unk >= 0 && word_add(w, unk, unk_len)) return -1;
    return 0;
}

void tok_cache_free(tok_cache *c) {
    pthread_mutex_destroy(&c->lock);
    tok_strmap_free(&c->map);
    free(c->ids);
    free(c->start);
    free(c->count);
}

static int cache_get(tok_cache *c, const char *wd, size_t len, tok_ids *out) {
    if (pthread_mutex_trylock(&c->lock)) return 0;
    int32_t k = tok_strmap_get(&c->map, wd, len);
    int hit = 0;
    if (k >= 0) {
        hit = 1;
        for (uint32_t i = 0; i < c->count[k]; i++)
            if (tok_ids_push(out, c->ids[c->start[k] + i])) {
                hit = -1;
                break;
            }
    }
    pthread_mutex_unlock(&c->lock);
    return hit;
}

static void cache_put(tok_cache *c, const char *wd, size_t len, const int32_t *ids, size_t n) {
    if (pthread_mutex_trylock(&c->lock)) return;
    if (c->n_words >= CACHE_MAX_WORDS) { /* full: start over (cheap, keeps memory bounded) */
        tok_strmap_free(&c->map);
        c->n_words = c->n_ids = 0;
    }
    if (c->n_words == c->cap_words) { /* start and count: parallel, one capacity */
        size_t cs = c->cap_words, ck = c->cap_words;
        int fail = facet_array_reserve(c->start, cs, c->n_words + 1) |
                   facet_array_reserve(c->count, ck, c->n_words + 1);
        c->cap_words = cs < ck ? cs : ck;
        if (fail) goto out;
    }
    if (facet_array_reserve(c->ids, c->cap_ids, c->n_ids + n)) goto out;
    if (tok_strmap_put(&c->map, wd, len, (int32_t)c->n_words)) {
        tok_strmap_free(&c->map);
        c->n_words = c->n_ids = 0;
        goto out;
    }
    if (n) memcpy(c->ids + c->n_ids, ids, n * sizeof *ids);
    c->start[c->n_words] = (uint32_t)c->n_ids;
    c->count[c->n_words] = (uint32_t)n;
    c->n_words++;
    c->n_ids += n;
out:
    pthread_mutex_unlock(&c->lock);
}

facet_status tok_bpe_word(const facet_tokenizer *tok, const char *wd, size_t len, int bytelevel,
                          tok_ids *out, facet_error *err) {
    const tok_bpe *m = &tok->bpe;
    if (!len) return FACET_OK;
    int cacheable = len <= CACHE_MAX_WORD_LEN;
    if (cacheable) {
        int hit = cache_get(tok->cache, wd, len, out);
        if (hit < 0) return facet_err(err, FACET_E_NOMEM, "out of memory encoding");
        if (hit) return FACET_OK;
    }
    size_t start = out->n;
    if (m->wordpiece) {
        facet_str mw = {0};
        const char *ws = wd;
        size_t wl = len;
        if (bytelevel) {
            if (tok_bytelevel_map(&mw, wd, len)) return facet_err(err, FACET_E_NOMEM, "out of memory encoding");
            ws = mw.data, wl = mw.len;
        }
        facet_status wst = tok_wordpiece_word(tok, ws, wl, out, err);
        facet_str_free(&mw);
        if (!wst && cacheable) cache_put(tok->cache, wd, len, out->n > start ? out->v + start : NULL, out->n - start);
        return wst;
    }
    word w = {0};
    heap h = {0};
    facet_str mapped = {0}, tmp = {0};
    facet_status st = FACET_OK;
    const char *s = wd;
    size_t sl = len;
    int need_map = bytelevel && (m->ignore_merges || m->prefix || m->suffix);
    if (bytelevel) {
        for (size_t i = 0; i < len && !need_map; i++) need_map = m->byte_id[(unsigned char)wd[i]] < 0;
    }
    if (need_map) {
        if (tok_bytelevel_map(&mapped, wd, len)) goto nomem;
        s = mapped.data;
        sl = mapped.len;
        bytelevel = 0;
    }
    if (m->ignore_merges) {
        int32_t id = sl == 1 && (unsigned char)s[0] < 0x80 ? m->ascii_id[(unsigned char)s[0]]
                                                          : tok_strmap_get(&m->vocab, s, sl);
        if (id >= 0) {
            if (tok_ids_push(out, id)) goto nomem;
            goto done;
        }
    }
    if (bytelevel) {
        for (size_t i = 0; i < len; i++)
            if (word_add(&w, m->byte_id[(unsigned char)wd[i]], 1)) goto nomem;
    } else if (split_chars(m, s, sl, &w, &tmp)) {
        goto nomem;
    }
    if (merge_all(&m->merges, &w, &h)) goto nomem;
    for (size_t i = 0; i < w.n; i++)
        if (w.s[i].len && tok_ids_push(out, w.s[i].id)) goto nomem;
done:
    if (cacheable) cache_put(tok->cache, wd, len, out->n > start ? out->v + start : NULL, out->n - start);
    goto out;
nomem:
    st = facet_err(err, FACET_E_NOMEM, "out of memory encoding");
out:
    free(w.s);
    free(h.v);
    facet_str_free(&mapped);
    facet_str_free(&tmp);
    return st;
}
