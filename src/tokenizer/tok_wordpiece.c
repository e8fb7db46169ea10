/* tok_wordpiece.c — the WordPiece model (BERT; tokenizers/src/models/wordpiece):
 * greedy longest-match-first. From the start of the word, take the longest prefix that
 * is in the vocabulary, then continue from its end with the continuing_subword_prefix
 * ("##") in front; a word with no full cover, or longer than max_input_chars_per_word
 * characters, becomes the single unk_token. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"

static facet_status unk(const tok_bpe *m, tok_ids *out, facet_error *err) {
    if (m->unk_id < 0)
        return facet_err(err, FACET_E_FORMAT, "model.unk_token \"%.60s\" is not in model.vocab (WordPiece needs it here)",
                         m->unk_token);
    return tok_ids_push(out, m->unk_id) ? facet_err(err, FACET_E_NOMEM, "out of memory encoding") : FACET_OK;
}

facet_status tok_wordpiece_word(const facet_tokenizer *tok, const char *w, size_t len, tok_ids *out,
                                facet_error *err) {
    const tok_bpe *m = &tok->bpe;
    size_t chars = 0;
    for (size_t i = 0; i < len; i++) chars += ((unsigned char)w[i] & 0xC0) != 0x80;
    if (chars > m->max_input_chars_per_word) return unk(m, out, err);
    size_t mark = out->n, start = 0;
    facet_str sub = {0};
    facet_status st = FACET_OK;
    while (start < len) {
        size_t end = len;
        int32_t id = -1;
        while (start < end) {
            const char *s = w + start;
            size_t sl = end - start;
            if (start > 0) {
                sub.len = 0;
                if (facet_str_append(&sub, m->prefix, m->prefix_len) || facet_str_append(&sub, w + start, end - start)) {
                    st = facet_err(err, FACET_E_NOMEM, "out of memory encoding");
                    goto out;
                }
                s = sub.data, sl = sub.len;
            }
            id = tok_strmap_get(&m->vocab, s, sl);
            if (id >= 0) break;
            /* drop the last character */
            do end--;
            while (end > start && ((unsigned char)w[end] & 0xC0) == 0x80);
        }
        if (id < 0) { /* no piece covers this position: the whole word is unknown */
            out->n = mark;
            st = unk(m, out, err);
            goto out;
        }
        if (tok_ids_push(out, id)) {
            st = facet_err(err, FACET_E_NOMEM, "out of memory encoding");
            goto out;
        }
        start = end;
    }
out:
    facet_str_free(&sub);
    return st;
}
