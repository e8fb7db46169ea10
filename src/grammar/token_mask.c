/* token_mask.c — which tokens of a vocabulary the grammar accepts next: a trie of the
 * tokens' byte strings walked depth first with the matcher's state, so a prefix shared
 * by many tokens is matched once and a rejected prefix prunes its whole subtree; masks
 * are cached per matcher state (a sorted stack set and a pending code point). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_internal.h"
#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"
#include "util/str.h"

typedef struct trie_node {
    int32_t first_child, next_sibling;
    int32_t tok; /* first token whose bytes end here, or -1 (more in next_same) */
    uint8_t byte;
} trie_node;

struct facet_grammar_vocab {
    int n_vocab;
    FACET_VEC(trie_node) nodes; /* node 0 is the root                               */
    int32_t *next_same;         /* [n_vocab] next token with the same bytes, or -1   */
    int32_t *off;               /* [n_vocab + 1] bytes of token id: text[off[id]..off[id+1]) */
    facet_str text;
};

/* ---- the vocabulary trie ------------------------------------------------------------ */

static int32_t child(facet_grammar_vocab *v, int32_t n, uint8_t b) {
    int32_t c = v->nodes.data[n].first_child, prev = -1;
    for (; c >= 0 && v->nodes.data[c].byte < b; c = v->nodes.data[c].next_sibling) prev = c;
    if (c >= 0 && v->nodes.data[c].byte == b) return c;
    trie_node nn = {-1, c, -1, b};
    if (facet_vec_push(&v->nodes, nn)) return -1;
    int32_t id = (int32_t)v->nodes.len - 1;
    if (prev < 0) v->nodes.data[n].first_child = id;
    else v->nodes.data[prev].next_sibling = id;
    return id;
}

/* The bytes token `id` stands for, decoded after a reference token so that a leading
 * space a SentencePiece decoder strips from a text's first token is kept; a token that
 * is part of a UTF-8 character (its decoding is lossy) takes its ByteLevel or <0xHH>
 * bytes, or none when it has neither. */
static facet_status token_bytes(const facet_tokenizer *tok, int32_t ref, size_t ref_len,
                                int32_t id, facet_str *out, facet_error *err) {
    out->len = 0;
    int32_t ids[2] = {ref, id};
    facet_status st = tok_decode_raw(tok, ref >= 0 ? ids : ids + 1, ref >= 0 ? 2 : 1, 0, out, err);
    if (st != FACET_OK) return st;
    if (ref >= 0 && out->len >= ref_len) {
        memmove(out->data, out->data + ref_len, out->len - ref_len);
        out->len -= ref_len;
    }
    if (!out->data || !memmem(out->data, out->len, "\xEF\xBF\xBD", 3)) return FACET_OK;
    /* lossy: recover the raw bytes from the token string */
    out->len = 0;
    const char *s = facet_tokenizer_id_to_token(tok, id);
    if (!s) return FACET_OK;
    size_t n = strlen(s);
    unsigned hh;
    if (n == 6 && sscanf(s, "<0x%2X>", &hh) == 1) return facet_str_putc(out, (char)hh) ? facet_err(err, FACET_E_NOMEM, "vocab") : FACET_OK;
    for (size_t i = 0; i < n;) {
        const unsigned char *u = (const unsigned char *)s + i;
        uint32_t cp;
        size_t k;
        if (u[0] < 0x80) cp = u[0], k = 1;
        else if (u[0] < 0xE0 && i + 1 < n) cp = (u[0] & 0x1Fu) << 6 | (u[1] & 0x3F), k = 2;
        else {
            out->len = 0;
            return FACET_OK;
        }
        int b = tok_bytelevel_byte((int32_t)cp);
        if (b < 0) {
            out->len = 0;
            return FACET_OK;
        }
        if (facet_str_putc(out, (char)b)) return facet_err(err, FACET_E_NOMEM, "vocab");
        i += k;
    }
    return FACET_OK;
}

facet_status facet_grammar_vocab_create(const facet_tokenizer *tok, int n_vocab,
                                        facet_grammar_vocab **out, facet_error *err) {
    *out = NULL;
    facet_grammar_vocab *v = calloc(1, sizeof *v);
    if (!v) return facet_err(err, FACET_E_NOMEM, "grammar vocabulary");
    v->n_vocab = n_vocab;
    v->next_same = malloc((size_t)n_vocab * sizeof *v->next_same);
    v->off = calloc((size_t)n_vocab + 1, sizeof *v->off);
    trie_node root = {-1, -1, -1, 0};
    facet_status st = FACET_OK;
    if (!v->next_same || !v->off || facet_vec_push(&v->nodes, root))
        st = facet_err(err, FACET_E_NOMEM, "grammar vocabulary");
    /* reference token: the first id of "a" */
    int32_t ref = -1, *rid = NULL;
    size_t n_rid = 0, ref_len = 0;
    if (st == FACET_OK && facet_tokenize(tok, "a", 1, 0, &rid, &n_rid, err) == FACET_OK && n_rid == 1) {
        ref = rid[0];
        facet_str r = {0};
        if (tok_decode_raw(tok, &ref, 1, 0, &r, err) == FACET_OK && r.len == 1) ref_len = 1;
        else ref = -1;
        facet_str_free(&r);
    }
    free(rid);
    facet_err_clear(err);
    facet_str b = {0};
    int nt = facet_tokenizer_vocab_size(tok);
    for (int32_t id = 0; id < n_vocab && st == FACET_OK; id++) {
        v->next_same[id] = -1;
        v->off[id] = (int32_t)v->text.len;
        v->off[id + 1] = (int32_t)v->text.len;
        if (id >= nt || facet_tokenizer_is_special(tok, id) || !facet_tokenizer_id_to_token(tok, id))
            continue;
        st = token_bytes(tok, ref, ref_len, id, &b, err);
        if (st != FACET_OK || b.len == 0) continue;
        if (facet_str_append(&v->text, b.data, b.len)) {
            st = facet_err(err, FACET_E_NOMEM, "grammar vocabulary");
            break;
        }
        v->off[id + 1] = (int32_t)v->text.len;
        int32_t n = 0;
        for (size_t i = 0; i < b.len && n >= 0; i++) n = child(v, n, (uint8_t)b.data[i]);
        if (n < 0) {
            st = facet_err(err, FACET_E_NOMEM, "grammar vocabulary");
            break;
        }
        v->next_same[id] = v->nodes.data[n].tok;
        v->nodes.data[n].tok = id;
    }
    facet_str_free(&b);
    if (st != FACET_OK) {
        facet_grammar_vocab_free(v);
        return st;
    }
    *out = v;
    return FACET_OK;
}

void facet_grammar_vocab_free(facet_grammar_vocab *v) {
    if (!v) return;
    facet_vec_free(&v->nodes);
    free(v->next_same);
    free(v->off);
    facet_str_free(&v->text);
    free(v);
}

/* ---- the mask cache ----------------------------------------------------------------- */

enum { CACHE_MAX = 64 };

typedef struct cache_entry {
    int32_t *key; /* [n_key]: pv, prem, the sorted set */
    size_t n_key;
    uint8_t *bits; /* [ceil(n_vocab / 8)] */
    int n_allowed;
} cache_entry;

struct gram_mask_cache {
    cache_entry e[CACHE_MAX];
    int n;
    int n_vocab;
};

void gram_cache_clear(gram_mask_cache *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        free(c->e[i].key);
        free(c->e[i].bits);
    }
    c->n = 0;
}

void gram_cache_free(gram_mask_cache *c) {
    gram_cache_clear(c);
    free(c);
}

static int key_equal(const cache_entry *e, const gram_state *s) {
    return e->n_key == s->set.len + 2 && e->key[0] == (int32_t)s->pv && e->key[1] == (s->prem | s->plen << 8) &&
           memcmp(e->key + 2, s->set.data, s->set.len * sizeof *s->set.data) == 0;
}

/* ---- the walk ----------------------------------------------------------------------- */

static int walk(facet_grammar_matcher *m, const facet_grammar_vocab *v, int32_t node,
                size_t depth, uint8_t *allowed, int *count) {
    if (!gram_level(m, depth + 1)) return -1; /* m->lvl may move: index it below */
    for (int32_t c = v->nodes.data[node].first_child; c >= 0; c = v->nodes.data[c].next_sibling) {
        int rc = gram_step_byte(m, &m->lvl[depth], v->nodes.data[c].byte, &m->lvl[depth + 1]);
        if (rc < 0) return -1;
        if (rc == 0) continue;
        for (int32_t t = v->nodes.data[c].tok; t >= 0; t = v->next_same[t]) {
            allowed[t] = 1;
            (*count)++;
        }
        if (v->nodes.data[c].first_child >= 0 && walk(m, v, c, depth + 1, allowed, count))
            return -1;
    }
    return 0;
}

int facet_grammar_matcher_mask(facet_grammar_matcher *m, const facet_grammar_vocab *v,
                               const int32_t *eos_ids, int n_eos, uint8_t *allowed) {
    memset(allowed, 0, (size_t)v->n_vocab);
    int count = 0;
    if (!m->cache) {
        m->cache = calloc(1, sizeof *m->cache);
        if (!m->cache) return -1;
        m->cache->n_vocab = v->n_vocab;
    }
    gram_mask_cache *c = m->cache;
    cache_entry *hit = NULL;
    for (int i = 0; i < c->n && !hit; i++)
        if (key_equal(&c->e[i], &m->cur)) hit = &c->e[i];
    if (hit) {
        for (int i = 0; i < v->n_vocab; i++) allowed[i] = (hit->bits[i >> 3] >> (i & 7)) & 1;
        count = hit->n_allowed;
    } else {
        gram_state *l0 = gram_level(m, 0);
        if (!l0 || gram_state_copy(l0, &m->cur)) return -1;
        if (walk(m, v, 0, 0, allowed, &count)) return -1;
        if (c->n == CACHE_MAX) gram_cache_clear(c);
        cache_entry *e = &c->e[c->n];
        e->n_key = m->cur.set.len + 2;
        e->key = malloc(e->n_key * sizeof *e->key);
        e->bits = calloc(((size_t)v->n_vocab + 7) / 8, 1);
        if (e->key && e->bits) {
            e->key[0] = (int32_t)m->cur.pv;
            e->key[1] = m->cur.prem | m->cur.plen << 8;
            memcpy(e->key + 2, m->cur.set.data, m->cur.set.len * sizeof *m->cur.set.data);
            for (int i = 0; i < v->n_vocab; i++)
                if (allowed[i]) e->bits[i >> 3] |= (uint8_t)(1u << (i & 7));
            e->n_allowed = count;
            c->n++;
        } else { /* not cached; the mask itself is complete */
            free(e->key);
            free(e->bits);
            e->key = NULL;
            e->bits = NULL;
        }
    }
    if (facet_grammar_matcher_complete(m))
        for (int i = 0; i < n_eos; i++)
            if (eos_ids[i] >= 0 && eos_ids[i] < v->n_vocab && !allowed[eos_ids[i]]) {
                allowed[eos_ids[i]] = 1;
                count++;
            }
    return count;
}

int facet_grammar_matcher_accept_token(facet_grammar_matcher *m, const facet_grammar_vocab *v,
                                       int32_t id) {
    if (id < 0 || id >= v->n_vocab || v->off[id] == v->off[id + 1]) return 1;
    return facet_grammar_matcher_accept(m, v->text.data + v->off[id],
                                        (size_t)(v->off[id + 1] - v->off[id]));
}
