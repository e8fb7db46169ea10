/* matcher.c — the pushdown matcher of facet_grammar.h: a set of hash-consed stacks
 * advanced one code point (one UTF-8 byte at a time) over the text. */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_internal.h"
#include "util/error.h"

enum { COMPACT_NODES = 1 << 21 };

static size_t node_hash(int32_t pos, int32_t parent) {
    uint64_t h = ((uint64_t)(uint32_t)pos << 32 | (uint32_t)parent) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17);
}

static int rehash(facet_grammar_matcher *m, size_t cap) {
    int32_t *t = malloc(cap * sizeof *t);
    if (!t) return -1;
    memset(t, 0xFF, cap * sizeof *t);
    for (size_t i = 1; i < m->nodes.len; i++) {
        size_t h = node_hash(m->nodes.data[i].pos, m->nodes.data[i].parent) & (cap - 1);
        while (t[h] >= 0) h = (h + 1) & (cap - 1);
        t[h] = (int32_t)i;
    }
    free(m->tab);
    m->tab = t;
    m->tab_cap = cap;
    return 0;
}

/* The node (pos, parent), created on first use; -1 out of memory. */
static int32_t intern(facet_grammar_matcher *m, int32_t pos, int32_t parent) {
    if (2 * (m->nodes.len + 1) > m->tab_cap && rehash(m, m->tab_cap ? 2 * m->tab_cap : 1024))
        return -1;
    size_t h = node_hash(pos, parent) & (m->tab_cap - 1);
    for (; m->tab[h] >= 0; h = (h + 1) & (m->tab_cap - 1)) {
        const gram_node *n = &m->nodes.data[m->tab[h]];
        if (n->pos == pos && n->parent == parent) return m->tab[h];
    }
    gram_node nn = {pos, parent};
    if (facet_vec_push(&m->nodes, nn)) return -1;
    m->tab[h] = (int32_t)m->nodes.len - 1;
    return m->tab[h];
}

/* Duplicates are removed once the set is complete (set_finish), not per add: a scan per
 * add is quadratic in the stacks of an ambiguous grammar. */
static int set_add(gram_set *s, int32_t id) { return facet_vec_push(s, id); }

/* Add to `out` every stack reachable from stack `id` whose top is a character class
 * (or the empty stack): rule references are replaced by each of their alternatives,
 * finished alternatives pop. The grammar has no left recursion, so this ends. */
static int expand(facet_grammar_matcher *m, int32_t id, gram_set *out) {
    for (;;) {
        if (++m->work > GRAM_MAX_WORK) return -1;
        if (id == 0) return set_add(out, 0);
        gram_node n = m->nodes.data[id];
        const gram_elem *e = &m->g->elems.data[n.pos];
        if (e->type == GRAM_END) {
            id = n.parent;
            continue;
        }
        if (e->type == GRAM_CHAR) return set_add(out, id);
        /* a reference last in its alternative continues with the parent directly (the
         * END would only pop): tail recursion such as R ::= x R | ε keeps a constant
         * depth, so the states inside a string repeat and their masks are reused */
        int32_t cont = m->g->elems.data[n.pos + 1].type == GRAM_END
                           ? n.parent
                           : intern(m, n.pos + 1, n.parent);
        if (cont < 0) return -1;
        const gram_rule *r = &m->g->rules.data[e->arg];
        for (int32_t a = 0; a < r->n_alts; a++) {
            int32_t s = intern(m, m->g->alt_start.data[r->first_alt + a], cont);
            if (s < 0 || expand(m, s, out)) return -1;
        }
        return 0;
    }
}

static int cmp_id(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Sort a set and drop its duplicates. */
static void set_finish(gram_set *s) {
    if (s->len < 2) return;
    qsort(s->data, s->len, sizeof *s->data, cmp_id);
    size_t k = 1;
    for (size_t i = 1; i < s->len; i++)
        if (s->data[i] != s->data[k - 1]) s->data[k++] = s->data[i];
    s->len = k;
}

/* out = the stacks of `in` that accept code point cp, advanced past it. */
static int step_cp(facet_grammar_matcher *m, const gram_set *in, uint32_t cp, gram_set *out) {
    out->len = 0;
    m->work = 0;
    for (size_t i = 0; i < in->len; i++) {
        int32_t id = in->data[i];
        if (id == 0) continue;
        gram_node n = m->nodes.data[id];
        if (!gram_class_match(m->g, m->g->elems.data[n.pos].arg, cp)) continue;
        int32_t next = intern(m, n.pos + 1, n.parent);
        if (next < 0 || expand(m, next, out)) return -1;
    }
    set_finish(out);
    return 0;
}

/* 1 when some stack of s accepts a code point in [lo, hi]. */
static int feasible(const facet_grammar_matcher *m, const gram_set *s, uint32_t lo, uint32_t hi) {
    for (size_t i = 0; i < s->len; i++)
        if (s->data[i] != 0 &&
            gram_class_overlaps(m->g, m->g->elems.data[m->nodes.data[s->data[i]].pos].arg, lo, hi))
            return 1;
    return 0;
}

int gram_state_copy(gram_state *dst, const gram_state *src) {
    if (facet_vec_reserve(&dst->set, src->set.len)) return -1;
    if (src->set.len) memcpy(dst->set.data, src->set.data, src->set.len * sizeof *src->set.data);
    dst->set.len = src->set.len;
    dst->pv = src->pv;
    dst->prem = src->prem;
    dst->plen = src->plen;
    return 0;
}

int gram_step_byte(facet_grammar_matcher *m, const gram_state *in, uint8_t b, gram_state *out) {
    static const uint32_t k_min[5] = {0, 0, 0x80, 0x800, 0x10000}; /* by length */
    uint32_t pv;
    int32_t prem, plen;
    if (in->prem == 0) {
        if (b < 0x80) {
            out->pv = 0, out->prem = 0;
            if (step_cp(m, &in->set, b, &out->set)) return -1;
            return out->set.len > 0;
        }
        if (b >= 0xC2 && b <= 0xDF) pv = b & 0x1F, prem = 1;
        else if (b >= 0xE0 && b <= 0xEF) pv = b & 0x0F, prem = 2;
        else if (b >= 0xF0 && b <= 0xF4) pv = b & 0x07, prem = 3;
        else return 0;
        plen = prem + 1;
    } else {
        if ((b & 0xC0) != 0x80) return 0;
        pv = in->pv << 6 | (b & 0x3F);
        prem = in->prem - 1;
        plen = in->plen;
        if (prem == 0) { /* overlong forms, surrogates and beyond U+10FFFF are invalid */
            if (pv < k_min[plen] || (pv >= 0xD800 && pv <= 0xDFFF) || pv > 0x10FFFF) return 0;
            out->pv = 0, out->prem = 0;
            if (step_cp(m, &in->set, pv, &out->set)) return -1;
            return out->set.len > 0;
        }
    }
    uint32_t lo = pv << (6 * prem), hi = lo | ((1u << (6 * prem)) - 1);
    if (lo < k_min[plen]) lo = k_min[plen];
    if (hi > 0x10FFFF) hi = 0x10FFFF;
    if (lo > hi || !feasible(m, &in->set, lo, hi)) return 0;
    if (gram_state_copy(out, in)) return -1;
    out->pv = pv;
    out->prem = prem;
    out->plen = plen;
    return 1;
}

gram_state *gram_level(facet_grammar_matcher *m, size_t d) {
    if (d >= m->n_lvl) {
        size_t n = d + 16;
        gram_state *l = realloc(m->lvl, n * sizeof *l);
        if (!l) return NULL;
        memset(l + m->n_lvl, 0, (n - m->n_lvl) * sizeof *l);
        m->lvl = l;
        m->n_lvl = n;
    }
    return &m->lvl[d];
}

facet_status facet_grammar_matcher_create(const facet_grammar *g, facet_grammar_matcher **out,
                                          facet_error *err) {
    *out = NULL;
    facet_grammar_matcher *m = calloc(1, sizeof *m);
    if (!m) return facet_err(err, FACET_E_NOMEM, "grammar matcher");
    m->g = g;
    gram_node nil = {-1, -1};
    int32_t root = -1;
    int rc = facet_vec_push(&m->nodes, nil);
    if (!rc) {
        /* the root rule as a one-element stack: a reference to root, then nothing */
        const gram_rule *r = &g->rules.data[g->root];
        for (int32_t a = 0; a < r->n_alts && !rc; a++) {
            root = intern(m, g->alt_start.data[r->first_alt + a], 0);
            rc = root < 0 || expand(m, root, &m->cur.set);
        }
        if (!rc) set_finish(&m->cur.set);
    }
    if (rc) {
        facet_grammar_matcher_free(m);
        return facet_err(err, FACET_E_NOMEM, "grammar matcher");
    }
    *out = m;
    return FACET_OK;
}

void facet_grammar_matcher_free(facet_grammar_matcher *m) {
    if (!m) return;
    facet_vec_free(&m->nodes);
    free(m->tab);
    facet_vec_free(&m->cur.set);
    for (size_t i = 0; i < m->n_lvl; i++) facet_vec_free(&m->lvl[i].set);
    free(m->lvl);
    gram_cache_free(m->cache);
    free(m);
}

int facet_grammar_matcher_accept(facet_grammar_matcher *m, const char *bytes, size_t len) {
    gram_state *a = gram_level(m, 0), *b = gram_level(m, 1);
    if (!a || !b || gram_state_copy(a, &m->cur)) return -1;
    for (size_t i = 0; i < len; i++) {
        int rc = gram_step_byte(m, a, (uint8_t)bytes[i], b);
        if (rc <= 0) return rc;
        gram_state t = *a;
        *a = *b;
        *b = t;
    }
    if (gram_state_copy(&m->cur, a)) return -1;
    return gram_maybe_compact(m) ? -1 : 1;
}

int facet_grammar_matcher_complete(const facet_grammar_matcher *m) {
    return m->cur.prem == 0 && m->cur.set.len > 0 && m->cur.set.data[0] == 0;
}

int facet_grammar_matcher_finished(const facet_grammar_matcher *m) {
    return facet_grammar_matcher_complete(m) && m->cur.set.len == 1;
}

/* Copy stack id of the old arena `old` into m's fresh arena; -1 out of memory. */
static int32_t recopy(facet_grammar_matcher *m, const gram_node *old, int32_t id) {
    if (id == 0) return 0;
    int32_t parent = recopy(m, old, old[id].parent);
    return parent < 0 ? -1 : intern(m, old[id].pos, parent);
}

int gram_maybe_compact(facet_grammar_matcher *m) {
    if (m->nodes.len < COMPACT_NODES) return 0;
    gram_node *old = m->nodes.data;
    m->nodes.data = NULL;
    m->nodes.len = m->nodes.cap = 0;
    free(m->tab);
    m->tab = NULL;
    m->tab_cap = 0;
    gram_node nil = {-1, -1};
    int rc = facet_vec_push(&m->nodes, nil);
    for (size_t i = 0; i < m->cur.set.len && !rc; i++) {
        int32_t id = recopy(m, old, m->cur.set.data[i]);
        if (id < 0) rc = -1;
        else m->cur.set.data[i] = id;
    }
    free(old);
    if (!rc && m->cur.set.len > 1)
        qsort(m->cur.set.data, m->cur.set.len, sizeof *m->cur.set.data, cmp_id);
    gram_cache_clear(m->cache);
    return rc;
}
