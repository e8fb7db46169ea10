/* tok_added.c — added tokens (tokenizers/src/tokenizer/added_vocabulary.rs): two
 * sets, the tokens matched on the raw text (normalized: false) and those matched on
 * normalized text (normalized: true, their content normalized first). Matching is
 * leftmost-longest like the Aho-Corasick automaton tokenizers builds, then each match
 * is checked for single_word and widened by lstrip / rstrip as find_matches does. */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"

/* A word character of the Rust regex crate's Unicode \w (single_word uses \w$ / ^\w):
 * letters, letter numbers, marks, decimal digits, connector punctuation, join controls. */
static int is_word_char(int32_t cp) {
    if (cp < 0x80)
        return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
    if (cp == 0x200C || cp == 0x200D) return 1;
    utf8proc_category_t c = utf8proc_category(cp);
    return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) || c == UTF8PROC_CATEGORY_NL ||
           c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME ||
           c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_PC;
}

static int32_t new_node(tok_trie *t) {
    if (facet_array_reserve(t->terminal, t->cap_nodes, t->n_nodes + 1)) return -1;
    t->terminal[t->n_nodes] = -1;
    return (int32_t)t->n_nodes++;
}

static int trie_insert(tok_trie *t, const char *s, size_t len, int32_t index) {
    int32_t node = 0, child;
    if (!len) return 0;
    t->first[(unsigned char)s[0] >> 3] |= (uint8_t)(1u << ((unsigned char)s[0] & 7));
    for (size_t i = 0; i < len; i++) {
        if (!tok_pairmap_get(&t->edges, node, (unsigned char)s[i], NULL, &child)) {
            child = new_node(t);
            if (child < 0 || tok_pairmap_put(&t->edges, node, (unsigned char)s[i], 0, child)) return -1;
        }
        node = child;
    }
    if (t->terminal[node] < 0) t->terminal[node] = index;
    return 0;
}

facet_status tok_trie_build(tok_trie *t, const facet_tokenizer *tok, int normalized_set,
                            facet_error *err) {
    memset(t, 0, sizeof *t);
    if (new_node(t) < 0) return facet_err(err, FACET_E_NOMEM, "out of memory");
    facet_str nb = {0};
    for (size_t i = 0; i < tok->n_added; i++) {
        const tok_added *a = &tok->added[i];
        if (a->normalized != normalized_set) continue;
        const char *s = a->content;
        size_t len = a->len;
        if (normalized_set && tok->normalizer) {
            nb.len = 0;
            facet_status st = tok_normalize(tok->normalizer, a->content, a->len, &nb, err);
            if (st) {
                facet_str_free(&nb);
                return st;
            }
            s = nb.data;
            len = nb.len;
        }
        if (trie_insert(t, s, len, (int32_t)i)) {
            facet_str_free(&nb);
            return facet_err(err, FACET_E_NOMEM, "out of memory");
        }
    }
    facet_str_free(&nb);
    return FACET_OK;
}

void tok_trie_free(tok_trie *t) {
    tok_pairmap_free(&t->edges);
    free(t->terminal);
    memset(t, 0, sizeof *t);
}

/* Longest token starting at text[i]: its added[] index and length, or -1. */
static int32_t longest_at(const tok_trie *t, const char *text, size_t len, size_t i, size_t *mlen) {
    int32_t node = 0, best = -1, child;
    for (size_t j = i; j < len; j++) {
        if (!tok_pairmap_get(&t->edges, node, (unsigned char)text[j], NULL, &child)) break;
        node = child;
        if (t->terminal[node] >= 0) {
            best = t->terminal[node];
            *mlen = j + 1 - i;
        }
    }
    return best;
}

static int32_t last_char(const char *s, size_t end) {
    size_t p = end - 1, n;
    while (p > 0 && ((unsigned char)s[p] & 0xC0) == 0x80) p--;
    return tok_utf8_decode(s, end, p, &n);
}

static int push_piece(tok_piece **v, size_t *n, size_t *cap, size_t s, size_t e, int32_t id) {
    if (facet_array_reserve(*v, *cap, *n + 1)) return -1;
    (*v)[(*n)++] = (tok_piece){s, e, id};
    return 0;
}

facet_status tok_added_split(const facet_tokenizer *tok, const tok_trie *t, const char *text,
                             size_t len, tok_piece **out, size_t *n, facet_error *err) {
    size_t cap = 0, start_offset = 0, i = 0, k;
    *out = NULL;
    *n = 0;
    int rc = 0;
    while (t->n_nodes > 1 && i < len && !rc) {
        unsigned char c = (unsigned char)text[i];
        size_t mlen = 0;
        int32_t idx = (t->first[c >> 3] >> (c & 7)) & 1 ? longest_at(t, text, len, i, &mlen) : -1;
        if (idx < 0) {
            i++;
            continue;
        }
        const tok_added *a = &tok->added[idx];
        size_t start = i, stop = i + mlen;
        i = stop; /* the automaton resumes after this match, even a rejected one */
        if (tok->split_special && a->special) continue; /* encode_special_tokens */
        if (a->single_word) {
            int start_space = start == 0 || !is_word_char(last_char(text, start));
            int stop_space = stop == len || !is_word_char(tok_utf8_decode(text, len, stop, &k));
            if (!start_space || !stop_space) continue;
        }
        if (a->lstrip) {
            size_t ns = start;
            while (ns > 0) {
                size_t p = ns - 1;
                while (p > 0 && ((unsigned char)text[p] & 0xC0) == 0x80) p--;
                if (!tok_is_whitespace(tok_utf8_decode(text, len, p, &k))) break;
                ns = p;
            }
            start = ns > start_offset ? ns : start_offset;
        }
        if (a->rstrip)
            while (stop < len && tok_is_whitespace(tok_utf8_decode(text, len, stop, &k))) stop += k;
        if (start_offset < start) rc |= push_piece(out, n, &cap, start_offset, start, -1);
        rc |= push_piece(out, n, &cap, start, stop, a->id);
        start_offset = stop;
        if (i < stop) i = stop;
    }
    if (!rc && start_offset < len) rc = push_piece(out, n, &cap, start_offset, len, -1);
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
        return facet_err(err, FACET_E_NOMEM, "out of memory splitting added tokens");
    }
    return FACET_OK;
}
