/* tok_gguf_encode.c — encoding with a tokenizer read from GGUF metadata (tok_gguf.c), as
 * llama.cpp's llama_tokenize does (llama-vocab.cpp):
 *
 * 1. Special-token split: for each control, user-defined and unknown token, longest
 *    text first, every occurrence in the text not yet split becomes that token. With
 *    split_special set (parse_special = false in llama.cpp) control and unknown tokens
 *    are left in the text; user-defined ones are still split out. A token marked to
 *    strip (tok_gguf.strip) takes the ASCII whitespace before or after it along.
 * 2. Each remaining piece of text, by model:
 *    SentencePiece ("llama"): a space before the piece when add_space_prefix and the
 *      piece starts the text or follows a special token; spaces become U+2581 "▁"; the
 *      piece is split into characters; repeatedly the adjacent pair whose concatenation
 *      is the token of highest score is merged (the leftmost among equal scores); a final
 *      symbol that is no token becomes its bytes' <0xHH> tokens.
 *    byte-level BPE ("gpt2"): the pre-tokenizer's regex splits, the GPT-2 byte alphabet,
 *      then the merges by rank (tok_bpe.c, shared with tokenizer.json BPE).
 *    WordPiece ("bert"): split at whitespace, around punctuation, ASCII symbols and CJK
 *      ideographs; control characters dropped; accents stripped (NFD, marks dropped) and
 *      lowercase when the file says; each word, as "▁word", is covered greedily by the
 *      longest token at each byte offset, and becomes the unknown token when it cannot be.
 * 3. BOS before and EOS (or SEP) after when add_special, as the file's flags say. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"

#define SPACE_MARK "\xE2\x96\x81" /* U+2581, SentencePiece's space */

/* One piece of text (id < 0) or a special token. */
typedef struct frag {
    size_t start, end;
    int32_t id;
} frag;

typedef FACET_VEC(frag) frag_vec;

/* C isspace in the "C" locale, as llama.cpp's strip test */
static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int split_specials(const facet_tokenizer *tok, const char *text, size_t len, frag_vec *out) {
    frag_vec cur = {0}, next = {0};
    int rc = 0;
    if (len && facet_vec_push(&cur, ((frag){0, len, -1}))) return -1;
    const tok_gguf *g = &tok->gguf;
    for (size_t k = 0; k < g->n_special && !rc; k++) {
        int32_t id = g->special[k];
        uint8_t t = g->type[id];
        if (tok->split_special && t != TOK_TYPE_USER_DEFINED) continue;
        const char *s = tok->id_str[id];
        size_t sl = tok->id_len[id];
        next.len = 0;
        for (size_t i = 0; i < cur.len && !rc; i++) {
            frag f = cur.data[i];
            if (f.id >= 0 || f.end - f.start < sl) {
                rc = facet_vec_push(&next, f);
                continue;
            }
            size_t p = f.start;
            uint8_t strip = g->strip[id];
            for (;;) {
                const char *m = memmem(text + p, f.end - p, s, sl);
                if (!m) break;
                size_t at = (size_t)(m - text), left_end = at;
                while ((strip & TOK_STRIP_LEFT) && left_end > p && is_space(text[left_end - 1])) left_end--;
                if (left_end > p && (rc = facet_vec_push(&next, ((frag){p, left_end, -1})))) break;
                if ((rc = facet_vec_push(&next, ((frag){at, at + sl, id})))) break;
                p = at + sl;
                while ((strip & TOK_STRIP_RIGHT) && p < f.end && is_space(text[p])) p++;
            }
            if (!rc && p < f.end) rc = facet_vec_push(&next, ((frag){p, f.end, -1}));
        }
        frag_vec t2 = cur;
        cur = next;
        next = t2;
    }
    free(next.data);
    if (rc) {
        free(cur.data);
        return -1;
    }
    *out = cur;
    return 0;
}

/* ---- SentencePiece ------------------------------------------------------------------ */
typedef struct spm_sym {
    uint32_t off, n; /* n = 0: merged into its left neighbour */
    int32_t prev, next;
} spm_sym;

typedef struct spm_bigram {
    float score;
    int32_t left, right;
    uint32_t size;
} spm_bigram;

/* the heap's order: higher score first, then the leftmost */
static int bigram_before(const spm_bigram *a, const spm_bigram *b) {
    return a->score != b->score ? a->score > b->score : a->left < b->left;
}

typedef FACET_VEC(spm_bigram) bigram_heap;

static int heap_push(bigram_heap *h, spm_bigram e) {
    if (facet_vec_push(h, e)) return -1;
    size_t i = h->len - 1;
    while (i) {
        size_t up = (i - 1) / 2;
        if (!bigram_before(&e, &h->data[up])) break;
        h->data[i] = h->data[up];
        i = up;
    }
    h->data[i] = e;
    return 0;
}

static spm_bigram heap_pop(bigram_heap *h) {
    spm_bigram top = h->data[0], last = h->data[--h->len];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->len) break;
        if (c + 1 < h->len && bigram_before(&h->data[c + 1], &h->data[c])) c++;
        if (!bigram_before(&h->data[c], &last)) break;
        h->data[i] = h->data[c];
        i = c;
    }
    if (h->len) h->data[i] = last;
    return top;
}

static int try_bigram(const facet_tokenizer *tok, const facet_str *t, const spm_sym *sy, int32_t l, int32_t r,
                      bigram_heap *h) {
    if (l < 0 || r < 0) return 0;
    uint32_t size = sy[l].n + sy[r].n;
    int32_t id = tok_strmap_get(&tok->bpe.vocab, t->data + sy[l].off, size);
    if (id < 0) return 0;
    return heap_push(h, (spm_bigram){tok->gguf.score[id], l, r, size});
}

/* The token of one byte: <0xHH>, else the byte itself as a token, else unk. */
static int32_t spm_byte(const facet_tokenizer *tok, unsigned char b) {
    if (tok->bpe.fallback_id[b] >= 0) return tok->bpe.fallback_id[b];
    char one = (char)b;
    int32_t id = tok_strmap_get(&tok->bpe.vocab, &one, 1);
    return id >= 0 ? id : tok->gguf.unk_id;
}

static facet_status spm_piece(const facet_tokenizer *tok, const char *s, size_t len, int space_before, tok_ids *out,
                              facet_error *err) {
    facet_str t = {0};
    FACET_VEC(spm_sym) sy = {0};
    bigram_heap h = {0};
    int rc = space_before ? facet_str_append(&t, SPACE_MARK, 3) : 0;
    for (size_t i = 0; i < len && !rc; i++)
        rc = s[i] == ' ' ? facet_str_append(&t, SPACE_MARK, 3) : facet_str_append(&t, s + i, 1);
    if (!rc && t.len > UINT32_MAX / 2) {
        facet_str_free(&t);
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "text of %zu bytes is too long to tokenize", len);
    }
    for (size_t off = 0, k; off < t.len && !rc; off += k) {
        k = tok_utf8_seqlen((unsigned char)t.data[off]);
        if (k > t.len - off) k = t.len - off;
        int32_t i = (int32_t)sy.len;
        rc = facet_vec_push(&sy, ((spm_sym){(uint32_t)off, (uint32_t)k, i - 1, off + k == t.len ? -1 : i + 1}));
    }
    for (size_t i = 1; i < sy.len && !rc; i++) rc = try_bigram(tok, &t, sy.data, (int32_t)i - 1, (int32_t)i, &h);
    while (h.len && !rc) {
        spm_bigram b = heap_pop(&h);
        spm_sym *l = &sy.data[b.left], *r = &sy.data[b.right];
        if (!l->n || !r->n || l->n + r->n != b.size) continue; /* outdated */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sy.data[r->next].prev = b.left;
        rc = try_bigram(tok, &t, sy.data, l->prev, b.left, &h) || try_bigram(tok, &t, sy.data, b.left, l->next, &h);
    }
    for (int32_t i = sy.len ? 0 : -1; i >= 0 && !rc; i = sy.data[i].next) {
        const spm_sym *y = &sy.data[i];
        int32_t id = tok_strmap_get(&tok->bpe.vocab, t.data + y->off, y->n);
        if (id >= 0) {
            rc = tok_ids_push(out, id);
            continue;
        }
        for (uint32_t j = 0; j < y->n && !rc; j++) {
            int32_t b = spm_byte(tok, (unsigned char)t.data[y->off + j]);
            if (b >= 0) rc = tok_ids_push(out, b);
        }
    }
    facet_str_free(&t);
    free(sy.data);
    free(h.data);
    return rc ? facet_err(err, FACET_E_NOMEM, "out of memory encoding") : FACET_OK;
}

/* ---- byte-level BPE ------------------------------------------------------------------ */
static facet_status bpe_piece(const facet_tokenizer *tok, const char *s, size_t len, tok_ids *out, facet_error *err) {
    tok_words a = {0}, b = {0};
    facet_status st = FACET_OK;
    if (tok_words_push(&a, s, len, 1)) st = facet_err(err, FACET_E_NOMEM, "out of memory encoding");
    if (!st) st = tok_pretokenize(tok->pretok, &a, &b, err);
    for (size_t i = 0; i < b.n && !st; i++)
        st = tok_bpe_word(tok, b.text.data + b.spans[i].off, b.spans[i].len, b.bytelevel, out, err);
    tok_words_free(&a);
    tok_words_free(&b);
    return st;
}

/* ---- WordPiece ----------------------------------------------------------------------- */
static int is_chinese(int32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* The first code point of c's canonical decomposition (the base letter of "é"). */
static int32_t nfd_base(int32_t c) {
    utf8proc_int32_t buf[8];
    int last;
    utf8proc_ssize_t n = utf8proc_decompose_char(c, buf, 8, UTF8PROC_DECOMPOSE, &last);
    return n >= 1 && n <= 8 ? buf[0] : c;
}

/* Cover "▁" + word greedily, longest token first at each offset; unk when it fails. */
static int wpm_word(const facet_tokenizer *tok, const facet_str *w, facet_str *tmp, tok_ids *out) {
    if (!w->len) return 0;
    tmp->len = 0;
    if (facet_str_append(tmp, SPACE_MARK, 3) || facet_str_append(tmp, w->data, w->len)) return -1;
    size_t n = tmp->len, mark = out->n, maxl = tok->gguf.max_token_len;
    for (size_t i = 0; i < n;) {
        size_t j = n - i > maxl ? i + maxl : n;
        int32_t id = -1;
        for (; j > i && id < 0; j--) id = tok_strmap_get(&tok->bpe.vocab, tmp->data + i, j - i);
        if (id < 0) {
            out->n = mark;
            break;
        }
        if (tok_ids_push(out, id)) return -1;
        i = j + 1;
    }
    if (out->n == mark && tok->gguf.unk_id >= 0 && tok_ids_push(out, tok->gguf.unk_id)) return -1;
    return 0;
}

static facet_status wpm_piece(const facet_tokenizer *tok, const char *s, size_t len, tok_ids *out, facet_error *err) {
    const tok_gguf *g = &tok->gguf;
    facet_str w = {0}, tmp = {0};
    int rc = 0;
    for (size_t i = 0, k; i < len && !rc; i += k) {
        int32_t c = tok_utf8_decode(s, len, i, &k);
        if (g->strip_accents) c = nfd_base(c);
        if (tok_is_whitespace(c)) {
            rc = wpm_word(tok, &w, &tmp, out);
            w.len = 0;
            continue;
        }
        utf8proc_category_t cat = utf8proc_category(c);
        int control = cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF || cat == UTF8PROC_CATEGORY_CO ||
                      cat == UTF8PROC_CATEGORY_CS;
        if (c == 0 || c == 0xFFFD || control) continue;
        if (g->strip_accents && (cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC ||
                                 cat == UTF8PROC_CATEGORY_ME))
            continue;
        char enc[4];
        size_t el = tok_utf8_encode(g->lowercase ? utf8proc_tolower(c) : c, enc);
        int punct = cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
        int symbol = c < 0x7F && cat >= UTF8PROC_CATEGORY_SM && cat <= UTF8PROC_CATEGORY_SO;
        if (punct || symbol || is_chinese(c)) { /* a word of its own */
            rc = wpm_word(tok, &w, &tmp, out);
            w.len = 0;
            if (!rc) rc = facet_str_append(&w, enc, el) || wpm_word(tok, &w, &tmp, out);
            w.len = 0;
        } else {
            rc = facet_str_append(&w, enc, el);
        }
    }
    if (!rc) rc = wpm_word(tok, &w, &tmp, out);
    facet_str_free(&w);
    facet_str_free(&tmp);
    return rc ? facet_err(err, FACET_E_NOMEM, "out of memory encoding") : FACET_OK;
}

facet_status tok_gguf_encode(const facet_tokenizer *tok, const char *text, size_t len, int add_special,
                             tok_ids *out, facet_error *err) {
    frag_vec fr = {0};
    facet_status st = FACET_OK;
    for (size_t i = 0; add_special && i < tok->post.n_prefix && !st; i++)
        if (tok_ids_push(out, tok->post.prefix[i])) st = facet_err(err, FACET_E_NOMEM, "out of memory encoding");
    if (!st && split_specials(tok, text, len, &fr)) st = facet_err(err, FACET_E_NOMEM, "out of memory encoding");
    int after_special = 1; /* the text's start counts as following a special token */
    for (size_t i = 0; i < fr.len && !st; i++) {
        const frag *f = &fr.data[i];
        if (f->id >= 0) {
            if (tok_ids_push(out, f->id)) st = facet_err(err, FACET_E_NOMEM, "out of memory encoding");
            after_special = 1;
            continue;
        }
        const char *s = text + f->start;
        size_t n = f->end - f->start;
        switch (tok->gguf.kind) {
        case TOK_GGUF_SPM: st = spm_piece(tok, s, n, tok->gguf.add_space_prefix && after_special, out, err); break;
        case TOK_GGUF_BPE: st = bpe_piece(tok, s, n, out, err); break;
        default: st = wpm_piece(tok, s, n, out, err); break;
        }
        after_special = 0;
    }
    for (size_t i = 0; add_special && i < tok->post.n_suffix && !st; i++)
        if (tok_ids_push(out, tok->post.suffix[i])) st = facet_err(err, FACET_E_NOMEM, "out of memory encoding");
    free(fr.data);
    return st;
}
