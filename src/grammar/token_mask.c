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
    if (st == FACET_OK) st = facet_tokenize(tok, "a", 1, 0, &rid, &n_rid, err);
    if (st == FACET_OK && n_rid == 1) {
        ref = rid[0];
        facet_str r = {0};
        st = tok_decode_raw(tok, &ref, 1, 0, &r, err);
        if (st == FACET_OK && r.len == 1 && r.data[0] == 'a') ref_len = 1;
        else ref = -1;
        facet_str_free(&r);
    }
    free(rid);
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

/* ---- matcher states as a deterministic automaton -----------------------------------
 * Each distinct state (pv, prem, plen, sorted stack set) met gets an id; its transition
 * on each byte is computed once and remembered, and so is its mask. Inside a JSON string
 * every character leads to the same few states, so after the first steps a walk of the
 * trie is a table lookup per node, and a step whose state was seen before costs one copy
 * of its mask. Everything is dropped when it grows past its bounds (and when the matcher
 * compacts its nodes, whose ids the keys hold). */

enum { MAX_DSTATES = 1 << 15, MAX_MASKS = 256, TRANS_UNKNOWN = -2, TRANS_DEAD = -1 };

typedef struct dstate {
    int32_t *key;   /* [n_key]: pv, prem | plen << 8, the sorted set             */
    size_t n_key;
    int32_t *trans; /* [256] next state per byte, TRANS_UNKNOWN / TRANS_DEAD       */
    uint8_t *bits;  /* the mask ([ceil(n_vocab / 8)]) once computed, else NULL    */
    int n_allowed;
} dstate;

struct gram_mask_cache {
    FACET_VEC(dstate) st;
    int32_t *tab;   /* open-addressed ids by key hash, -1 empty                  */
    size_t tab_cap;
    int n_masks;    /* states holding a mask (each n_vocab / 8 bytes)            */
};

void gram_cache_clear(gram_mask_cache *c) {
    if (!c) return;
    for (size_t i = 0; i < c->st.len; i++) {
        free(c->st.data[i].key);
        free(c->st.data[i].trans);
        free(c->st.data[i].bits);
    }
    c->st.len = 0;
    c->n_masks = 0;
    if (c->tab) memset(c->tab, 0xFF, c->tab_cap * sizeof *c->tab);
}

void gram_cache_free(gram_mask_cache *c) {
    if (!c) return;
    gram_cache_clear(c);
    facet_vec_free(&c->st);
    free(c->tab);
    free(c);
}

static size_t key_hash(const int32_t *k, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint32_t)k[i]) * 1099511628211ull;
    return (size_t)(h ^ h >> 29);
}

static int key_is(const dstate *d, const gram_state *s) {
    return d->n_key == s->set.len + 2 && d->key[0] == (int32_t)s->pv &&
           d->key[1] == (s->prem | s->plen << 8) &&
           memcmp(d->key + 2, s->set.data, s->set.len * sizeof *s->set.data) == 0;
}

/* The id of state s, added when new; -1 out of memory, -2 the table is full. */
static int32_t dstate_of(gram_mask_cache *c, const gram_state *s) {
    if (c->st.len >= MAX_DSTATES) return -2;
    if (2 * (c->st.len + 1) > c->tab_cap) {
        size_t cap = c->tab_cap ? 2 * c->tab_cap : 1024;
        int32_t *t = malloc(cap * sizeof *t);
        if (!t) return -1;
        memset(t, 0xFF, cap * sizeof *t);
        for (size_t i = 0; i < c->st.len; i++) {
            size_t h = key_hash(c->st.data[i].key, c->st.data[i].n_key) & (cap - 1);
            while (t[h] >= 0) h = (h + 1) & (cap - 1);
            t[h] = (int32_t)i;
        }
        free(c->tab);
        c->tab = t;
        c->tab_cap = cap;
    }
    dstate d = {0};
    d.n_key = s->set.len + 2;
    d.key = malloc(d.n_key * sizeof *d.key);
    if (!d.key) return -1;
    d.key[0] = (int32_t)s->pv;
    d.key[1] = s->prem | s->plen << 8;
    if (s->set.len) memcpy(d.key + 2, s->set.data, s->set.len * sizeof *s->set.data);
    size_t h = key_hash(d.key, d.n_key) & (c->tab_cap - 1);
    for (; c->tab[h] >= 0; h = (h + 1) & (c->tab_cap - 1))
        if (key_is(&c->st.data[c->tab[h]], s)) {
            free(d.key);
            return c->tab[h];
        }
    if (facet_vec_push(&c->st, d)) {
        free(d.key);
        return -1;
    }
    c->tab[h] = (int32_t)c->st.len - 1;
    return c->tab[h];
}

/* The state state `id` reaches on byte b: an id, TRANS_DEAD, or -3 out of memory / full. */
static int32_t transition(facet_grammar_matcher *m, int32_t id, uint8_t b) {
    gram_mask_cache *c = m->cache;
    dstate *d = &c->st.data[id];
    if (d->trans && d->trans[b] != TRANS_UNKNOWN) return d->trans[b];
    if (!d->trans) {
        if (!(d->trans = malloc(256 * sizeof *d->trans))) return -3;
        for (int i = 0; i < 256; i++) d->trans[i] = TRANS_UNKNOWN;
    }
    gram_state *in = gram_level(m, 0), *out = gram_level(m, 1);
    if (!in || !out) return -3;
    d = &c->st.data[id];
    if (facet_vec_reserve(&in->set, d->n_key - 2)) return -3;
    memcpy(in->set.data, d->key + 2, (d->n_key - 2) * sizeof *d->key);
    in->set.len = d->n_key - 2;
    in->pv = (uint32_t)d->key[0];
    in->prem = d->key[1] & 0xFF;
    in->plen = d->key[1] >> 8;
    int rc = gram_step_byte(m, in, b, out);
    if (rc < 0) return -3;
    int32_t next = TRANS_DEAD;
    if (rc > 0 && (next = dstate_of(c, out)) < 0) return -3;
    c->st.data[id].trans[b] = next;
    return next;
}

static int walk(facet_grammar_matcher *m, const facet_grammar_vocab *v, int32_t node,
                int32_t sid, uint8_t *allowed, int *count) {
    for (int32_t c = v->nodes.data[node].first_child; c >= 0; c = v->nodes.data[c].next_sibling) {
        int32_t next = transition(m, sid, v->nodes.data[c].byte);
        if (next == -3) return -1;
        if (next < 0) continue;
        for (int32_t t = v->nodes.data[c].tok; t >= 0; t = v->next_same[t]) {
            allowed[t] = 1;
            (*count)++;
        }
        if (v->nodes.data[c].first_child >= 0 && walk(m, v, c, next, allowed, count)) return -1;
    }
    return 0;
}

/* The mask of the committed state into allowed (and cached): the count, or -1 out of
 * memory, -2 when the automaton is full (the caller clears it and tries again). */
static int mask_of_state(facet_grammar_matcher *m, const facet_grammar_vocab *v, uint8_t *allowed) {
    gram_mask_cache *c = m->cache;
    int32_t sid = dstate_of(c, &m->cur);
    if (sid < 0) return sid;
    dstate *d = &c->st.data[sid];
    if (!d->bits && c->n_masks >= MAX_MASKS) return -2;
    size_t nb = ((size_t)v->n_vocab + 7) / 8;
    if (d->bits) {
        for (int i = 0; i < v->n_vocab; i++) allowed[i] = (d->bits[i >> 3] >> (i & 7)) & 1;
        return d->n_allowed;
    }
    memset(allowed, 0, (size_t)v->n_vocab);
    int count = 0;
    if (walk(m, v, 0, sid, allowed, &count)) return c->st.len >= MAX_DSTATES ? -2 : -1;
    d = &c->st.data[sid];
    if (!(d->bits = calloc(nb, 1))) return -1;
    for (int i = 0; i < v->n_vocab; i++)
        if (allowed[i]) d->bits[i >> 3] |= (uint8_t)(1u << (i & 7));
    d->n_allowed = count;
    c->n_masks++;
    return count;
}

int facet_grammar_matcher_mask(facet_grammar_matcher *m, const facet_grammar_vocab *v,
                               const int32_t *eos_ids, int n_eos, uint8_t *allowed) {
    if (!m->cache && !(m->cache = calloc(1, sizeof *m->cache))) return -1;
    int count = mask_of_state(m, v, allowed);
    if (count == -2) { /* full: start the automaton over */
        gram_cache_clear(m->cache);
        count = mask_of_state(m, v, allowed);
    }
    if (count < 0) return -1;
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
