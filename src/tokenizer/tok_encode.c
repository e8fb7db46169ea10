/* tok_encode.c — the public encode and decode calls: the pipeline of
 * TokenizerImpl::encode_single_sequence + post-processing, and TokenizerImpl::decode
 * followed by transformers' clean_up_tokenization when the config asks for it. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"

/* Pre-tokenize one piece of normalized text and run the model on each word. */
static facet_status encode_piece(const facet_tokenizer *tok, const char *s, size_t len, int orig0,
                                 tok_words *a, tok_words *b, tok_ids *ids, facet_error *err) {
    if (!len) return FACET_OK;
    if (!tok->pretok) return tok_bpe_word(tok, s, len, 0, ids, err);
    tok_words_clear(a);
    if (tok_words_push(a, s, len, orig0)) return facet_err(err, FACET_E_NOMEM, "out of memory encoding");
    facet_status st = tok_pretokenize(tok->pretok, a, b, err);
    for (size_t i = 0; i < b->n && !st; i++)
        st = tok_bpe_word(tok, b->text.data + b->spans[i].off, b->spans[i].len, b->bytelevel, ids, err);
    return st;
}

/* One piece of raw text between non-normalized added tokens. */
static facet_status encode_segment(const facet_tokenizer *tok, const char *s, size_t len, int orig0,
                                   facet_str *norm, tok_words *a, tok_words *b, tok_ids *ids, facet_error *err) {
    const char *ns = s;
    size_t nlen = len;
    facet_status st;
    if (tok->normalizer) {
        norm->len = 0;
        if ((st = tok_normalize(tok->normalizer, s, len, norm, err))) return st;
        ns = norm->data ? norm->data : "";
        nlen = norm->len;
    }
    if (tok->trie_norm.n_nodes <= 1) return encode_piece(tok, ns, nlen, orig0, a, b, ids, err);
    tok_piece *pieces;
    size_t np;
    if ((st = tok_added_split(tok, &tok->trie_norm, ns, nlen, &pieces, &np, err))) return st;
    for (size_t i = 0; i < np && !st; i++) {
        if (pieces[i].id >= 0) {
            if (tok_ids_push(ids, pieces[i].id)) st = facet_err(err, FACET_E_NOMEM, "out of memory encoding");
            continue;
        }
        st = encode_piece(tok, ns + pieces[i].start, pieces[i].end - pieces[i].start, orig0 && pieces[i].start == 0,
                          a, b, ids, err);
    }
    free(pieces);
    return st;
}

facet_status facet_tokenize(const facet_tokenizer *tok, const char *text, size_t len, int add_special,
                            int32_t **out_ids, size_t *n_ids, facet_error *err) {
    if (!tok || !out_ids || !n_ids || (!text && len))
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "facet_tokenize: NULL argument");
    *out_ids = NULL;
    *n_ids = 0;
    size_t bad = tok_utf8_invalid_at(text, len);
    if (bad != len)
        return facet_err(err, FACET_E_UTF8, "input is not valid UTF-8: byte offset %zu (byte 0x%02X)", bad,
                         (unsigned char)text[bad]);
    tok_ids ids = {0};
    facet_str norm = {0};
    tok_words a = {0}, b = {0};
    tok_piece *pieces = NULL;
    size_t np = 0;
    facet_status st = FACET_OK;
    if (tok->gguf.kind != TOK_GGUF_NONE) { /* a vocabulary from GGUF metadata */
        st = tok_gguf_encode(tok, text, len, add_special, &ids, err);
        goto done;
    }
    for (size_t i = 0; add_special && i < tok->post.n_prefix && !st; i++)
        if (tok_ids_push(&ids, tok->post.prefix[i])) st = facet_err(err, FACET_E_NOMEM, "out of memory encoding");
    if (!st && len) st = tok_added_split(tok, &tok->trie_raw, text, len, &pieces, &np, err);
    for (size_t i = 0; i < np && !st; i++) {
        if (pieces[i].id >= 0) {
            if (tok_ids_push(&ids, pieces[i].id)) st = facet_err(err, FACET_E_NOMEM, "out of memory encoding");
            continue;
        }
        st = encode_segment(tok, text + pieces[i].start, pieces[i].end - pieces[i].start, pieces[i].start == 0, &norm,
                            &a, &b, &ids, err);
    }
    for (size_t i = 0; add_special && i < tok->post.n_suffix && !st; i++)
        if (tok_ids_push(&ids, tok->post.suffix[i])) st = facet_err(err, FACET_E_NOMEM, "out of memory encoding");
done:
    free(pieces);
    facet_str_free(&norm);
    tok_words_free(&a);
    tok_words_free(&b);
    if (st) {
        free(ids.v);
        return st;
    }
    if (!ids.v && !(ids.v = malloc(sizeof(int32_t)))) return facet_err(err, FACET_E_NOMEM, "out of memory encoding");
    *out_ids = ids.v;
    *n_ids = ids.n;
    return FACET_OK;
}

/* The decoder chain's text for ids (without transformers' clean-up). */
facet_status tok_decode_raw(const facet_tokenizer *tok, const int32_t *ids, size_t n, int skip_special, facet_str *out,
                            facet_error *err) {
    tok_strlist toks = {0};
    facet_status st = FACET_OK;
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0) {
            st = facet_err(err, FACET_E_INVALID_ARGUMENT, "token id %d at position %zu is negative", (int)id, i);
            goto out;
        }
        /* an id without a token (a model's embedding rows past the tokenizer's vocabulary,
         * as Qwen's 151936 vs 151665) decodes to nothing, as `tokenizers` drops it */
        if (id >= tok->vocab_size || !tok->id_str[id]) continue;
        if (skip_special && tok->id_special[id]) continue;
        if (tok_strlist_push(&toks, tok->id_str[id], tok->id_len[id])) goto nomem;
    }
    if (tok->decoder) {
        st = tok_decode_chain(tok->decoder, &toks, out, err);
    } else {
        for (size_t i = 0; i < toks.n; i++)
            if ((i && facet_str_append(out, " ", 1)) || facet_str_append(out, toks.text.data + toks.off[i], toks.len[i]))
                goto nomem;
    }
    goto out;
nomem:
    st = facet_err(err, FACET_E_NOMEM, "out of memory decoding");
out:
    tok_strlist_free(&toks);
    return st;
}

facet_status facet_detokenize(const facet_tokenizer *tok, const int32_t *ids, size_t n, int skip_special,
                              char **text, size_t *len, facet_error *err) {
    if (!tok || !text || !len || (!ids && n))
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "facet_detokenize: NULL argument");
    *text = NULL;
    *len = 0;
    facet_str out = {0};
    facet_status st = tok_decode_raw(tok, ids, n, skip_special, &out, err);
    if (!st && tok->clean_up_spaces) tok_cleanup_spaces(&out);
    if (!st && facet_str_append(&out, "", 0)) st = facet_err(err, FACET_E_NOMEM, "out of memory decoding");
    if (st) {
        facet_str_free(&out);
        return st;
    }
    *text = out.data;
    *len = out.len;
    return FACET_OK;
}
