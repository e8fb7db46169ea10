/* tok_decode.c — decoders (tokenizers/src/decoders): each maps the list of token
 * strings to a new list (decode_chain) and the final list is joined. ByteLevel,
 * Metaspace, ByteFallback, Fuse, Strip, Replace, WordPiece, BPEDecoder, CTC and
 * Sequence. Also transformers' clean_up_tokenization. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"
#include "util/json.h"

void tok_decoder_free(tok_decoder *d) {
    if (!d) return;
    for (size_t i = 0; i < d->n_children; i++) tok_decoder_free(d->children[i]);
    free(d->children);
    tok_pattern_free(&d->pattern);
    free(d->content);
    free(d->content2);
    free(d);
}

static facet_status dup_field(const json_t *j, const char *key, const char *path, const char *dflt, char **out,
                              size_t *len, facet_error *err) {
    const char *s;
    size_t n;
    facet_status st = tok_jget_str(j, key, path, 0, &s, &n, err);
    if (st) return st;
    if (!s) s = dflt, n = strlen(dflt);
    *out = malloc(n + 1);
    if (!*out) return facet_err(err, FACET_E_NOMEM, "out of memory");
    memcpy(*out, s, n);
    (*out)[n] = '\0';
    *len = n;
    return FACET_OK;
}

facet_status tok_decoder_parse(const json_t *j, const char *path, tok_decoder **out, facet_error *err) {
    const char *type;
    facet_status st = tok_jget_type(j, path, &type, err);
    if (st) return st;
    tok_decoder *d = calloc(1, sizeof *d);
    if (!d) return facet_err(err, FACET_E_NOMEM, "out of memory");
    *out = d;
    if (!strcmp(type, "Sequence")) {
        d->type = TOK_DEC_SEQUENCE;
        json_t *arr = json_object_get(j, "decoders");
        if (!json_is_array(arr))
            return facet_err(err, FACET_E_FORMAT, "%s.decoders: expected an array, got %s", path,
                             arr ? facet_json_type_name(arr) : "nothing");
        size_t k = json_array_size(arr);
        d->children = calloc(k ? k : 1, sizeof *d->children);
        if (!d->children) return facet_err(err, FACET_E_NOMEM, "out of memory");
        for (size_t i = 0; i < k; i++) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s.decoders[%zu]", path, i);
            st = tok_decoder_parse(json_array_get(arr, i), sub, &d->children[i], err);
            d->n_children = i + 1;
            if (st) return st;
        }
        return FACET_OK;
    }
    if (!strcmp(type, "ByteLevel")) { d->type = TOK_DEC_BYTELEVEL; return FACET_OK; }
    if (!strcmp(type, "ByteFallback")) { d->type = TOK_DEC_BYTE_FALLBACK; return FACET_OK; }
    if (!strcmp(type, "Fuse")) { d->type = TOK_DEC_FUSE; return FACET_OK; }
    if (!strcmp(type, "Metaspace")) {
        d->type = TOK_DEC_METASPACE;
        if ((st = tok_jget_char(j, "replacement", path, 0x2581, &d->replacement, err))) return st;
        const char *scheme;
        if ((st = tok_jget_str(j, "prepend_scheme", path, 0, &scheme, NULL, err))) return st;
        if (!scheme) {
            int aps;
            if ((st = tok_jget_bool(j, "add_prefix_space", path, 1, &aps, err))) return st;
            d->prepend_scheme = aps ? TOK_PREPEND_ALWAYS : TOK_PREPEND_NEVER;
        } else if (!strcmp(scheme, "always")) d->prepend_scheme = TOK_PREPEND_ALWAYS;
        else if (!strcmp(scheme, "first")) d->prepend_scheme = TOK_PREPEND_FIRST;
        else if (!strcmp(scheme, "never")) d->prepend_scheme = TOK_PREPEND_NEVER;
        else
            return facet_err(err, FACET_E_FORMAT, "%s.prepend_scheme: \"%.40s\" is not always, first or never",
                             path, scheme);
        return FACET_OK;
    }
    if (!strcmp(type, "Strip")) {
        d->type = TOK_DEC_STRIP;
        long long a, b;
        if ((st = tok_jget_char(j, "content", path, ' ', &d->strip_char, err)) ||
            (st = tok_jget_int(j, "start", path, 0, &a, err)) || (st = tok_jget_int(j, "stop", path, 0, &b, err)))
            return st;
        if (a < 0 || b < 0 || a > 1000000 || b > 1000000)
            return facet_err(err, FACET_E_FORMAT, "%s: start/stop must be small non-negative counts", path);
        d->start = (int)a, d->stop = (int)b;
        return FACET_OK;
    }
    if (!strcmp(type, "Replace")) {
        d->type = TOK_DEC_REPLACE;
        if ((st = tok_jget_pattern(j, "pattern", path, &d->pattern, err))) return st;
        return dup_field(j, "content", path, "", &d->content, &d->content_len, err);
    }
    if (!strcmp(type, "WordPiece")) {
        d->type = TOK_DEC_WORDPIECE;
        if ((st = tok_jget_bool(j, "cleanup", path, 1, &d->cleanup, err))) return st;
        return dup_field(j, "prefix", path, "##", &d->content, &d->content_len, err);
    }
    if (!strcmp(type, "BPEDecoder")) {
        d->type = TOK_DEC_BPE;
        return dup_field(j, "suffix", path, "</w>", &d->content, &d->content_len, err);
    }
    if (!strcmp(type, "CTC")) {
        d->type = TOK_DEC_CTC;
        if ((st = tok_jget_bool(j, "cleanup", path, 1, &d->cleanup, err)) ||
            (st = dup_field(j, "pad_token", path, "<pad>", &d->content, &d->content_len, err)))
            return st;
        return dup_field(j, "word_delimiter_token", path, "|", &d->content2, &d->content2_len, err);
    }
    return facet_err(err, FACET_E_UNSUPPORTED, "%s.type: decoder \"%s\" is not supported", path, type);
}

/* Replace every occurrence of pat in s (left to right, non-overlapping) into out. */
static int replace_lit(facet_str *out, const char *s, size_t len, const char *pat, size_t plen, const char *rep,
                       size_t rlen) {
    size_t i = 0;
    if (!plen) return facet_str_append(out, s, len);
    while (i < len) {
        const char *hit = memmem(s + i, len - i, pat, plen);
        if (!hit) break;
        size_t at = (size_t)(hit - s);
        if (facet_str_append(out, s + i, at - i) || facet_str_append(out, rep, rlen)) return -1;
        i = at + plen;
    }
    return facet_str_append(out, s + i, len - i);
}

/* Apply a list of literal replacements in order, each over the whole string. */
static int replace_seq(facet_str *s, const char *const (*pairs)[2], size_t n) {
    facet_str tmp = {0};
    for (size_t k = 0; k < n; k++) {
        if (!s->len || !memmem(s->data, s->len, pairs[k][0], strlen(pairs[k][0]))) continue;
        tmp.len = 0;
        if (replace_lit(&tmp, s->data, s->len, pairs[k][0], strlen(pairs[k][0]), pairs[k][1], strlen(pairs[k][1]))) {
            facet_str_free(&tmp);
            return -1;
        }
        facet_str t = *s;
        *s = tmp;
        tmp = t;
    }
    facet_str_free(&tmp);
    return 0;
}

static const char *const wordpiece_cleanup[][2] = {
    {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
    {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};

static const char *const transformers_cleanup[][2] = {
    {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
    {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};

void tok_cleanup_spaces(facet_str *out) {
    /* on allocation failure the text is left as it is */
    (void)replace_seq(out, transformers_cleanup, sizeof transformers_cleanup / sizeof *transformers_cleanup);
}

static int parse_byte_token(const char *s, size_t len, unsigned char *b) {
    if (len != 6 || memcmp(s, "<0x", 3) || s[5] != '>') return 0;
    unsigned v = 0;
    for (int k = 3; k < 5; k++) {
        char c = s[k];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *b = (unsigned char)v;
    return 1;
}

static int flush_bytes(tok_strlist *out, facet_str *bytes) {
    if (!bytes->len) return 0;
    int rc = 0;
    if (tok_utf8_invalid_at(bytes->data, bytes->len) == bytes->len) rc = tok_strlist_push(out, bytes->data, bytes->len);
    else
        for (size_t k = 0; k < bytes->len && !rc; k++) rc = tok_strlist_push(out, "\xEF\xBF\xBD", 3);
    bytes->len = 0;
    return rc;
}

static size_t count_chars(const char *s, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

/* One decoder step: in -> out (out cleared first). */
static facet_status step(const tok_decoder *d, tok_strlist *in, tok_strlist *out, facet_error *err);

static facet_status step_tokens(const tok_decoder *d, tok_strlist *in, tok_strlist *out, facet_error *err) {
    facet_str tmp = {0};
    int rc = 0;
    char rep[4];
    size_t rlen;
    for (size_t i = 0; i < in->n && !rc; i++) {
        const char *s = in->text.data + in->off[i];
        size_t len = in->len[i], k;
        tmp.len = 0;
        if (facet_str_reserve(&tmp, len)) { rc = -1; break; }
        switch (d->type) {
        case TOK_DEC_METASPACE:
            rlen = tok_utf8_encode(d->replacement, rep);
            for (size_t p = 0; p < len && !rc; p += k) {
                int32_t cp = tok_utf8_decode(s, len, p, &k);
                if (cp == d->replacement) {
                    if (!(i == 0 && d->prepend_scheme != TOK_PREPEND_NEVER)) rc = facet_str_append(&tmp, " ", 1);
                } else {
                    rc = facet_str_append(&tmp, s + p, k);
                }
            }
            (void)rlen;
            break;
        case TOK_DEC_STRIP: {
            /* up to `start` leading and `stop` trailing characters equal to content,
             * counted in characters, the trailing cut never reaching the leading one */
            rlen = tok_utf8_encode(d->strip_char, rep);
            size_t chars = count_chars(s, len), start_cut = 0, stop_cut = 0, p = 0, e = len;
            while ((int)start_cut < d->start && p + rlen <= len && !memcmp(s + p, rep, rlen)) start_cut++, p += rlen;
            while ((int)stop_cut < d->stop && stop_cut < chars - start_cut && e >= p + rlen &&
                   !memcmp(s + e - rlen, rep, rlen))
                stop_cut++, e -= rlen;
            rc = facet_str_append(&tmp, s + p, e - p);
            break;
        }
        case TOK_DEC_REPLACE: {
            tok_range *m;
            size_t nm, prev = 0;
            facet_status st = tok_pattern_find_all(&d->pattern, s, len, &m, &nm, err);
            if (st) {
                facet_str_free(&tmp);
                return st;
            }
            for (size_t q = 0; q < nm && !rc; q++) {
                rc = facet_str_append(&tmp, s + prev, m[q].start - prev) || facet_str_append(&tmp, d->content, d->content_len);
                prev = m[q].end;
            }
            if (!rc) rc = facet_str_append(&tmp, s + prev, len - prev);
            free(m);
            break;
        }
        case TOK_DEC_WORDPIECE:
            if (i != 0) {
                if (len >= d->content_len && !memcmp(s, d->content, d->content_len)) s += d->content_len, len -= d->content_len;
                else rc = facet_str_append(&tmp, " ", 1);
            }
            if (!rc) rc = facet_str_append(&tmp, s, len);
            if (!rc && d->cleanup) rc = replace_seq(&tmp, wordpiece_cleanup, sizeof wordpiece_cleanup / sizeof *wordpiece_cleanup);
            break;
        case TOK_DEC_BPE:
            rc = i + 1 == in->n ? replace_lit(&tmp, s, len, d->content, d->content_len, "", 0)
                                : replace_lit(&tmp, s, len, d->content, d->content_len, " ", 1);
            break;
        case TOK_DEC_CTC:
            if (i > 0 && in->len[i - 1] == len && !memcmp(in->text.data + in->off[i - 1], s, len)) continue;
            rc = replace_lit(&tmp, s, len, d->content, d->content_len, "", 0);
            if (!rc && d->cleanup) {
                rc = replace_seq(&tmp, wordpiece_cleanup, sizeof wordpiece_cleanup / sizeof *wordpiece_cleanup);
                facet_str t2 = {0};
                if (!rc) rc = replace_lit(&t2, tmp.data, tmp.len, d->content2, d->content2_len, " ", 1);
                if (!rc) {
                    facet_str_free(&tmp);
                    tmp = t2;
                } else {
                    facet_str_free(&t2);
                }
            }
            if (!rc && !tmp.len) continue;
            break;
        default: break;
        }
        if (!rc) rc = tok_strlist_push(out, tmp.data ? tmp.data : "", tmp.len);
    }
    facet_str_free(&tmp);
    return rc ? facet_err(err, FACET_E_NOMEM, "out of memory decoding") : FACET_OK;
}

static facet_status step(const tok_decoder *d, tok_strlist *in, tok_strlist *out, facet_error *err) {
    tok_strlist_clear(out);
    int rc = 0;
    switch (d->type) {
    case TOK_DEC_SEQUENCE: {
        tok_strlist a = {0}, b = {0};
        for (size_t i = 0; i < in->n && !rc; i++) rc = tok_strlist_push(&a, in->text.data + in->off[i], in->len[i]);
        facet_status st = FACET_OK;
        for (size_t c = 0; c < d->n_children && !rc && !st; c++) {
            st = step(d->children[c], &a, &b, err);
            tok_strlist t = a;
            a = b;
            b = t;
        }
        for (size_t i = 0; i < a.n && !rc && !st; i++) rc = tok_strlist_push(out, a.text.data + a.off[i], a.len[i]);
        tok_strlist_free(&a);
        tok_strlist_free(&b);
        if (st) return st;
        break;
    }
    case TOK_DEC_BYTELEVEL: {
        facet_str bytes = {0}, text = {0};
        for (size_t i = 0; i < in->n && !rc; i++) {
            const char *s = in->text.data + in->off[i];
            size_t len = in->len[i], k, mark = bytes.len;
            int ok = 1;
            for (size_t p = 0; p < len && !rc; p += k) {
                int b = tok_bytelevel_byte(tok_utf8_decode(s, len, p, &k));
                if (b < 0) { ok = 0; break; }
                unsigned char byte = (unsigned char)b;
                rc = facet_str_append(&bytes, &byte, 1);
            }
            if (!ok) { /* a token outside the alphabet contributes its own bytes */
                bytes.len = mark;
                rc = facet_str_append(&bytes, s, len);
            }
        }
        if (!rc) rc = tok_utf8_lossy_append(&text, (const unsigned char *)(bytes.data ? bytes.data : ""), bytes.len);
        if (!rc) rc = tok_strlist_push(out, text.data ? text.data : "", text.len);
        facet_str_free(&bytes);
        facet_str_free(&text);
        break;
    }
    case TOK_DEC_BYTE_FALLBACK: {
        facet_str bytes = {0};
        for (size_t i = 0; i < in->n && !rc; i++) {
            const char *s = in->text.data + in->off[i];
            unsigned char b;
            if (parse_byte_token(s, in->len[i], &b)) {
                rc = facet_str_append(&bytes, &b, 1);
                continue;
            }
            rc = flush_bytes(out, &bytes);
            if (!rc) rc = tok_strlist_push(out, s, in->len[i]);
        }
        if (!rc) rc = flush_bytes(out, &bytes);
        facet_str_free(&bytes);
        break;
    }
    case TOK_DEC_FUSE: {
        facet_str all = {0};
        for (size_t i = 0; i < in->n && !rc; i++) rc = facet_str_append(&all, in->text.data + in->off[i], in->len[i]);
        if (!rc) rc = tok_strlist_push(out, all.data ? all.data : "", all.len);
        facet_str_free(&all);
        break;
    }
    default: return step_tokens(d, in, out, err);
    }
    return rc ? facet_err(err, FACET_E_NOMEM, "out of memory decoding") : FACET_OK;
}

facet_status tok_decode_chain(const tok_decoder *d, tok_strlist *tokens, facet_str *out, facet_error *err) {
    tok_strlist res = {0};
    facet_status st = step(d, tokens, &res, err);
    for (size_t i = 0; i < res.n && !st; i++)
        if (facet_str_append(out, res.text.data + res.off[i], res.len[i]))
            st = facet_err(err, FACET_E_NOMEM, "out of memory decoding");
    tok_strlist_free(&res);
    return st;
}
