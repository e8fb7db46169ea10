/* tok_stream.c — streaming detokenization. The stream keeps the ids it was given and,
 * on each push, decodes them and emits only the part of the text that no later id can
 * change: it holds back trailing byte-fallback tokens (a byte group is judged as a
 * whole), a trailing U+FFFD run (an incomplete UTF-8 sequence that the next bytes may
 * complete), the last token under BPEDecoder/CTC (they treat the last token or repeats
 * specially), and, when clean_up_tokenization_spaces is on, a trailing " ", " '", " n"
 * ... that the next token could turn into " ." -> "." and the like. The emitted text is
 * checked to be a prefix of each new decode, so the concatenation of all pieces equals
 * facet_detokenize of all ids by construction. Each push decodes the ids so far: O(n)
 * per push, a few microseconds per thousand ids. Two decoders take an incremental path,
 * O(1) per push: ByteLevel alone (byte-level BPE without clean-up) and the SentencePiece
 * chain Replace("▁"->" ") + ByteFallback + Fuse [+ Strip(" ", n, 0)]. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"

struct facet_detok_stream {
    const facet_tokenizer *tok;
    int skip_special;
    tok_ids ids;
    facet_str text;    /* scratch: the current decode */
    facet_str emitted; /* everything emitted so far */
    facet_str piece;   /* the last piece returned */
    int hold_last, has_fallback;
    int bytelevel;   /* incremental path: the decoder is ByteLevel alone, no clean-up */
    facet_str pending; /* ByteLevel bytes not yet converted (an unfinished character), or
                        the pending <0xHH> byte group of the SentencePiece path */
    int sentencepiece;         /* incremental path: Replace("▁"->" "), ByteFallback, Fuse,
                                  [Strip(" ", start, 0)], no clean-up */
    int strip_start, stripped; /* Strip's start count, leading spaces removed so far */
    int started;               /* a character other than a stripped space was emitted */
    tok_ids all;     /* every id pushed (the prompt's text for facet_detok_stream_mark) */
    size_t n_out;    /* bytes given out so far                                          */
    facet_str skip;    /* after a mark: the prompt's text not given out at the mark        */
    size_t skip_pos; /* bytes of `skip` matched by later pieces                          */
    int skipping;    /* later pieces are still matched against `skip`                    */
};

/* Is d exactly Sequence[Replace(String "▁" -> " "), ByteFallback, Fuse] optionally
 * followed by Strip(" ", start, 0)? (Llama 2, Mistral, TinyLlama, Phi-3, Gemma 3.) */
static int is_sentencepiece_chain(const tok_decoder *d, int *strip_start) {
    *strip_start = 0;
    if (!d || d->type != TOK_DEC_SEQUENCE || (d->n_children != 3 && d->n_children != 4)) return 0;
    const tok_decoder *r = d->children[0];
    if (r->type != TOK_DEC_REPLACE || r->pattern.re || r->pattern.len != 3 || memcmp(r->pattern.str, "\xE2\x96\x81", 3) ||
        r->content_len != 1 || r->content[0] != ' ')
        return 0;
    if (d->children[1]->type != TOK_DEC_BYTE_FALLBACK || d->children[2]->type != TOK_DEC_FUSE) return 0;
    if (d->n_children == 4) {
        const tok_decoder *st = d->children[3];
        if (st->type != TOK_DEC_STRIP || st->strip_char != ' ' || st->stop != 0) return 0;
        *strip_start = st->start;
    }
    return 1;
}

static void scan_decoder(const tok_decoder *d, facet_detok_stream *s) {
    if (!d) return;
    if (d->type == TOK_DEC_BYTE_FALLBACK) s->has_fallback = 1;
    if (d->type == TOK_DEC_BPE || d->type == TOK_DEC_CTC) s->hold_last = 1;
    for (size_t i = 0; i < d->n_children; i++) scan_decoder(d->children[i], s);
}

facet_status facet_detok_stream_create(const facet_tokenizer *tok, int skip_special, facet_detok_stream **out,
                                       facet_error *err) {
    if (!tok || !out) return facet_err(err, FACET_E_INVALID_ARGUMENT, "facet_detok_stream_create: NULL argument");
    facet_detok_stream *s = calloc(1, sizeof *s);
    if (!s) return facet_err(err, FACET_E_NOMEM, "out of memory");
    s->tok = tok;
    s->skip_special = skip_special;
    scan_decoder(tok->decoder, s);
    /* ByteLevel alone decodes each token to bytes independently of its neighbours and
     * then converts the concatenation left to right (from_utf8_lossy): the decided
     * prefix of the pending bytes can be emitted at once, in O(token) per push. */
    const tok_decoder *d = tok->decoder;
    while (d && d->type == TOK_DEC_SEQUENCE && d->n_children == 1) d = d->children[0];
    s->bytelevel = d && d->type == TOK_DEC_BYTELEVEL && !tok->clean_up_spaces;
    /* The SentencePiece chain maps each token on its own except byte groups (judged
     * whole when the group ends) and the leading Strip (the start of the text only). */
    s->sentencepiece = !tok->clean_up_spaces && is_sentencepiece_chain(tok->decoder, &s->strip_start);
    *out = s;
    return FACET_OK;
}

void facet_detok_stream_free(facet_detok_stream *s) {
    if (!s) return;
    free(s->ids.v);
    free(s->all.v);
    facet_str_free(&s->skip);
    facet_str_free(&s->text);
    facet_str_free(&s->emitted);
    facet_str_free(&s->piece);
    facet_str_free(&s->pending);
    free(s);
}

/* Length of the prefix of raw text that later ids cannot change. */
static size_t stable_len(const facet_detok_stream *s, const char *t, size_t len) {
    while (len >= 3 && !memcmp(t + len - 3, "\xEF\xBF\xBD", 3)) len -= 3;
    if (s->tok->clean_up_spaces) {
        /* proper prefixes of the clean-up patterns; cutting one may expose another */
        static const char *const partial[] = {" 'v", " 'r", " n'", " '", " n", " "};
        for (size_t k = 0; k < sizeof partial / sizeof *partial; k++) {
            size_t pl = strlen(partial[k]);
            if (len >= pl && !memcmp(t + len - pl, partial[k], pl)) {
                len -= pl;
                k = (size_t)-1;
            }
        }
    }
    return len;
}

/* Decode ids[0..n) (+ clean-up of the first `keep` raw bytes) and emit what is new. */
static facet_status emit(facet_detok_stream *s, size_t n, int final, const char **piece, size_t *len,
                         facet_error *err) {
    s->text.len = 0;
    s->piece.len = 0;
    facet_status st = tok_decode_raw(s->tok, s->ids.v, n, s->skip_special, &s->text, err);
    if (st) return st;
    if (!final) s->text.len = stable_len(s, s->text.data ? s->text.data : "", s->text.len);
    if (s->tok->clean_up_spaces) tok_cleanup_spaces(&s->text);
    if (facet_str_append(&s->text, "", 0) || facet_str_append(&s->piece, "", 0))
        return facet_err(err, FACET_E_NOMEM, "out of memory decoding");
    if (s->text.len >= s->emitted.len) {
        if (memcmp(s->text.data, s->emitted.data ? s->emitted.data : "", s->emitted.len))
            return facet_err(err, FACET_E_INTERNAL, "streaming decode diverged from the text already emitted");
        size_t add = s->text.len - s->emitted.len;
        if (facet_str_append(&s->piece, s->text.data + s->emitted.len, add) ||
            facet_str_append(&s->emitted, s->text.data + s->emitted.len, add))
            return facet_err(err, FACET_E_NOMEM, "out of memory decoding");
    } else if (final || memcmp(s->text.data, s->emitted.data, s->text.len)) {
        return facet_err(err, FACET_E_INTERNAL, "streaming decode diverged from the text already emitted");
    }
    *piece = s->piece.data;
    *len = s->piece.len;
    return FACET_OK;
}

/* Append the ByteLevel bytes of one token to the pending bytes. */
static int bytelevel_bytes(facet_str *out, const char *t, size_t len) {
    size_t mark = out->len, k;
    for (size_t p = 0; p < len; p += k) {
        int b = tok_bytelevel_byte(tok_utf8_decode(t, len, p, &k));
        if (b < 0) { /* outside the alphabet: the token's own bytes */
            out->len = mark;
            return facet_str_append(out, t, len);
        }
        unsigned char byte = (unsigned char)b;
        if (facet_str_append(out, &byte, 1)) return -1;
    }
    return 0;
}

static facet_status bytelevel_emit(facet_detok_stream *s, int final, const char **piece, size_t *len,
                                   facet_error *err) {
    s->piece.len = 0;
    size_t used;
    if (final) {
        used = s->pending.len;
        if (tok_utf8_lossy_append(&s->piece, (const unsigned char *)(s->pending.data ? s->pending.data : ""), used))
            used = (size_t)-1;
    } else {
        used = tok_utf8_lossy_decided(&s->piece, (const unsigned char *)(s->pending.data ? s->pending.data : ""),
                                      s->pending.len);
    }
    if (used == (size_t)-1 || facet_str_append(&s->piece, "", 0))
        return facet_err(err, FACET_E_NOMEM, "out of memory decoding");
    if (used && s->pending.len > used) memmove(s->pending.data, s->pending.data + used, s->pending.len - used);
    s->pending.len -= used;
    *piece = s->piece.data;
    *len = s->piece.len;
    return FACET_OK;
}

/* Append text to the piece, dropping the leading spaces Strip removes from the text. */
static int sp_append(facet_detok_stream *s, const char *t, size_t len) {
    while (!s->started && len && s->stripped < s->strip_start && t[0] == ' ') t++, len--, s->stripped++;
    if (len) s->started = 1;
    return facet_str_append(&s->piece, t, len);
}

/* ByteFallback's rule for a finished group: its UTF-8 if valid, else one U+FFFD per byte. */
static int sp_flush_group(facet_detok_stream *s) {
    int rc = 0;
    if (!s->pending.len) return 0;
    if (tok_utf8_invalid_at(s->pending.data, s->pending.len) == s->pending.len) rc = sp_append(s, s->pending.data, s->pending.len);
    else
        for (size_t k = 0; k < s->pending.len && !rc; k++) rc = sp_append(s, "\xEF\xBF\xBD", 3);
    s->pending.len = 0;
    return rc;
}

static facet_status sp_push(facet_detok_stream *s, int32_t id, int final, const char **piece, size_t *len,
                            facet_error *err) {
    const facet_tokenizer *tok = s->tok;
    int rc = 0;
    s->piece.len = 0;
    if (final) {
        rc = sp_flush_group(s);
    } else {
        const char *t = tok->id_str[id];
        size_t tl = tok->id_len[id];
        unsigned v = 0;
        int is_byte = tl == 6 && !memcmp(t, "<0x", 3) && t[5] == '>';
        for (int k = 3; is_byte && k < 5; k++) {
            char c = t[k];
            v = v * 16 + (unsigned)(c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c - 'A' + 10);
            is_byte = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        }
        if (is_byte) {
            unsigned char b = (unsigned char)v;
            rc = facet_str_append(&s->pending, &b, 1);
        } else {
            rc = sp_flush_group(s);
            /* Replace "▁" -> " " */
            for (size_t p = 0; p < tl && !rc;) {
                const char *hit = memmem(t + p, tl - p, "\xE2\x96\x81", 3);
                size_t end = hit ? (size_t)(hit - t) : tl;
                rc = sp_append(s, t + p, end - p);
                if (!rc && hit) rc = sp_append(s, " ", 1);
                p = hit ? end + 3 : tl;
            }
        }
    }
    if (rc || facet_str_append(&s->piece, "", 0))
        return facet_err(err, FACET_E_NOMEM, "out of memory decoding");
    *piece = s->piece.data;
    *len = s->piece.len;
    return FACET_OK;
}

static facet_status stream_push(facet_detok_stream *s, int32_t id, const char **piece, size_t *len,
                                facet_error *err) {
    const facet_tokenizer *tok = s->tok;
    if (id < 0) return facet_err(err, FACET_E_INVALID_ARGUMENT, "token id %d is negative", (int)id);
    /* an id without a token decodes to nothing (as facet_detokenize) */
    if (id >= tok->vocab_size || !tok->id_str[id] || (s->skip_special && tok->id_special[id])) {
        s->piece.len = 0;
        if (facet_str_append(&s->piece, "", 0)) return facet_err(err, FACET_E_NOMEM, "out of memory");
        *piece = s->piece.data;
        *len = 0;
        return FACET_OK;
    }
    if (s->sentencepiece) return sp_push(s, id, 0, piece, len, err);
    if (s->bytelevel) {
        if (bytelevel_bytes(&s->pending, tok->id_str[id], tok->id_len[id]))
            return facet_err(err, FACET_E_NOMEM, "out of memory decoding");
        return bytelevel_emit(s, 0, piece, len, err);
    }
    if (tok_ids_push(&s->ids, id)) return facet_err(err, FACET_E_NOMEM, "out of memory");
    size_t n = s->ids.n;
    if (s->has_fallback)
        while (n > 0 && tok->id_bytefallback[s->ids.v[n - 1]]) n--;
    if (s->hold_last && n > 0) n--;
    return emit(s, n, 0, piece, len, err);
}

static facet_status stream_flush(facet_detok_stream *s, const char **piece, size_t *len, facet_error *err) {
    if (s->bytelevel) return bytelevel_emit(s, 1, piece, len, err);
    if (s->sentencepiece) return sp_push(s, 0, 1, piece, len, err);
    return emit(s, s->ids.n, 1, piece, len, err);
}

/* Count a piece given out and, after a mark, cut from it the prompt's text: bytes equal
 * to the next bytes of `skip` are the prompt's; at the first difference the piece's
 * output starts at that character (pieces hold whole characters). */
static void give_out(facet_detok_stream *s, const char **piece, size_t *len) {
    s->n_out += *len;
    if (!s->skipping || !*len) return;
    const char *p = *piece;
    size_t n = *len, i = 0;
    while (i < n && s->skip_pos < s->skip.len && p[i] == s->skip.data[s->skip_pos]) i++, s->skip_pos++;
    if (i < n) {
        while (i > 0 && ((unsigned char)p[i] & 0xC0) == 0x80) i--;
        s->skipping = 0;
    } else if (s->skip_pos == s->skip.len) {
        s->skipping = 0;
    }
    *piece = p + i;
    *len = n - i;
}

facet_status facet_detok_stream_push(facet_detok_stream *s, int32_t id, const char **piece, size_t *len,
                                     facet_error *err) {
    if (!s || !piece || !len) return facet_err(err, FACET_E_INVALID_ARGUMENT, "facet_detok_stream_push: NULL argument");
    if (id >= 0 && tok_ids_push(&s->all, id)) return facet_err(err, FACET_E_NOMEM, "out of memory");
    facet_status st = stream_push(s, id, piece, len, err);
    if (st == FACET_OK) give_out(s, piece, len);
    return st;
}

facet_status facet_detok_stream_flush(facet_detok_stream *s, const char **piece, size_t *len, facet_error *err) {
    if (!s || !piece || !len) return facet_err(err, FACET_E_INVALID_ARGUMENT, "facet_detok_stream_flush: NULL argument");
    facet_status st = stream_flush(s, piece, len, err);
    if (st == FACET_OK) give_out(s, piece, len);
    return st;
}

facet_status facet_detok_stream_mark(facet_detok_stream *s, const char **piece, size_t *len, facet_error *err) {
    if (!s || !piece || !len) return facet_err(err, FACET_E_INVALID_ARGUMENT, "facet_detok_stream_mark: NULL argument");
    facet_str t = {0};
    facet_status st = tok_decode_raw(s->tok, s->all.v, s->all.n, s->skip_special, &t, err);
    if (st) {
        facet_str_free(&t);
        return st;
    }
    if (s->tok->clean_up_spaces) tok_cleanup_spaces(&t);
    s->skip.len = 0;
    size_t from = s->n_out < t.len ? s->n_out : t.len;
    int bad = facet_str_append(&s->skip, t.data ? t.data + from : "", t.len - from) ||
              facet_str_append(&s->skip, "", 0); /* NUL-terminated, len unchanged */
    facet_str_free(&t);
    if (bad) return facet_err(err, FACET_E_NOMEM, "out of memory decoding");
    s->skip_pos = 0;
    s->skipping = s->skip.len > 0;
    *piece = s->skip.data;
    *len = s->skip.len;
    return FACET_OK;
}
