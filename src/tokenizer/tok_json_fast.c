/* tok_json_fast.c — a fast path for the two large values of tokenizer.json,
 * model.vocab (an object of token -> id) and model.merges (an array). Building a
 * jansson tree for 150k-500k entries costs hundreds of milliseconds, so they are
 * located and parsed here in one pass; the rest of the file (small) goes through
 * jansson with these two values blanked out (tok_load.c). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"

typedef struct scan {
    const char *s;
    size_t len, i;
    int nomem; /* parse_string failed for want of memory, not on the text */
} scan;

static void ws(scan *c) {
    while (c->i < c->len) {
        char ch = c->s[c->i];
        if (ch != ' ' && ch != '\n' && ch != '\r' && ch != '\t') break;
        c->i++;
    }
}

/* Why a scan of `value` ("model.vocab") stopped: a string it could not store, or input
 * that is not valid JSON at byte c->i. */
static facet_status scan_error(const scan *c, const char *what, const char *value,
                               facet_error *err) {
    if (c->nomem) return facet_err(err, FACET_E_NOMEM, "%s: out of memory reading %s", what, value);
    return facet_err(err, FACET_E_PARSE, "%s: %s: not valid JSON near byte %zu of the value", what,
                     value, c->i);
}

/* Enter a container that opens with `open` ('{' or '['): 1 when items follow, 0 when it
 * is empty (`close` next), -1 when the value is not such a container. */
static int enter(scan *c, char open, char close) {
    ws(c);
    if (c->i >= c->len || c->s[c->i] != open) return -1;
    c->i++;
    ws(c);
    return c->i < c->len && c->s[c->i] == close ? 0 : 1;
}

/* After an item: 1 past a ',' (another item follows), 0 at `close`, -1 otherwise. */
static int after_item(scan *c, char close) {
    ws(c);
    if (c->i < c->len && c->s[c->i] == ',') {
        c->i++;
        return 1;
    }
    return c->i < c->len && c->s[c->i] == close ? 0 : -1;
}

static int hex4(const char *p, unsigned *v) {
    *v = 0;
    for (int k = 0; k < 4; k++) {
        char ch = p[k];
        unsigned d;
        if (ch >= '0' && ch <= '9') d = (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') d = (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') d = (unsigned)(ch - 'A' + 10);
        else return -1;
        *v = *v * 16 + d;
    }
    return 0;
}

/* Parse a JSON string at c->i (which must be '"'). Decoded bytes go to out (cleared
 * first) unless out is NULL. Returns 0, or -1 on malformed input. */
static int parse_string(scan *c, facet_str *out) {
    if (c->i >= c->len || c->s[c->i] != '"') return -1;
    c->i++;
    if (out) out->len = 0;
    for (;;) {
        size_t start = c->i;
        while (c->i < c->len) {
            unsigned char ch = (unsigned char)c->s[c->i];
            if (ch == '"' || ch == '\\' || ch < 0x20) break;
            c->i++;
        }
        if (c->i >= c->len) return -1;
        /* skipping (out == NULL) leaves validation to whoever parses the value */
        if (out && tok_utf8_invalid_at(c->s + start, c->i - start) != c->i - start) return -1;
        if (out && facet_str_append(out, c->s + start, c->i - start)) return c->nomem = 1, -1;
        unsigned char ch = (unsigned char)c->s[c->i];
        if (ch == '"') {
            c->i++;
            if (out && facet_str_reserve(out, 0)) return c->nomem = 1, -1;
            if (out) out->data[out->len] = '\0';
            return 0;
        }
        if (ch < 0x20) return -1;
        /* escape */
        if (c->i + 1 >= c->len) return -1;
        char e = c->s[c->i + 1], one;
        c->i += 2;
        switch (e) {
        case '"': one = '"'; break;
        case '\\': one = '\\'; break;
        case '/': one = '/'; break;
        case 'b': one = '\b'; break;
        case 'f': one = '\f'; break;
        case 'n': one = '\n'; break;
        case 'r': one = '\r'; break;
        case 't': one = '\t'; break;
        case 'u': {
            unsigned v, lo;
            if (c->i + 4 > c->len || hex4(c->s + c->i, &v)) return -1;
            c->i += 4;
            if (v >= 0xD800 && v <= 0xDBFF) {
                if (c->i + 6 > c->len || c->s[c->i] != '\\' || c->s[c->i + 1] != 'u' ||
                    hex4(c->s + c->i + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                    return -1;
                c->i += 6;
                v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
            } else if (v >= 0xDC00 && v <= 0xDFFF) {
                return -1;
            }
            char u[4];
            size_t n = tok_utf8_encode((int32_t)v, u);
            if (out && facet_str_append(out, u, n)) return c->nomem = 1, -1;
            continue;
        }
        default: return -1;
        }
        if (out && facet_str_append(out, &one, 1)) return c->nomem = 1, -1;
    }
}

/* Skip one JSON value (structure checked loosely; jansson checks the rest). */
static int skip_value(scan *c) {
    ws(c);
    if (c->i >= c->len) return -1;
    char ch = c->s[c->i];
    if (ch == '"') return parse_string(c, NULL);
    if (ch == '{' || ch == '[') {
        int depth = 0;
        while (c->i < c->len) {
            ch = c->s[c->i];
            if (ch == '"') {
                if (parse_string(c, NULL)) return -1;
                continue;
            }
            if (ch == '{' || ch == '[') depth++;
            else if (ch == '}' || ch == ']') {
                if (--depth == 0) {
                    c->i++;
                    return 0;
                }
            }
            c->i++;
        }
        return -1;
    }
    while (c->i < c->len) {
        ch = c->s[c->i];
        if (ch == ',' || ch == '}' || ch == ']' || ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
            break;
        c->i++;
    }
    return 0;
}

facet_status tok_json_find_model_spans(const char *json, size_t len, const char *what,
                                       tok_json_spans *sp, facet_error *err) {
    scan c = {json, len, 0, 0};
    facet_str key = {0};
    memset(sp, 0, sizeof *sp);
    ws(&c);
    if (c.i >= len || json[c.i] != '{') goto bad;
    c.i++;
    ws(&c);
    if (c.i < len && json[c.i] == '}') goto done;
    for (;;) {
        ws(&c);
        if (parse_string(&c, &key)) goto bad;
        ws(&c);
        if (c.i >= len || json[c.i] != ':') goto bad;
        c.i++;
        ws(&c);
        if (key.len == 5 && !memcmp(key.data, "model", 5) && c.i < len && json[c.i] == '{') {
            c.i++;
            ws(&c);
            if (c.i < len && json[c.i] == '}') {
                c.i++;
            } else {
                for (;;) {
                    ws(&c);
                    if (parse_string(&c, &key)) goto bad;
                    ws(&c);
                    if (c.i >= len || json[c.i] != ':') goto bad;
                    c.i++;
                    ws(&c);
                    size_t start = c.i;
                    int which = (key.len == 5 && !memcmp(key.data, "vocab", 5))    ? 1
                                : (key.len == 6 && !memcmp(key.data, "merges", 6)) ? 2
                                                                                    : 0;
                    if (skip_value(&c)) goto bad;
                    if (which == 1) sp->vocab_start = start, sp->vocab_end = c.i;
                    if (which == 2) sp->merges_start = start, sp->merges_end = c.i;
                    ws(&c);
                    if (c.i < len && json[c.i] == ',') { c.i++; continue; }
                    if (c.i < len && json[c.i] == '}') { c.i++; break; }
                    goto bad;
                }
            }
        } else if (skip_value(&c)) {
            goto bad;
        }
        ws(&c);
        if (c.i < len && json[c.i] == ',') { c.i++; continue; }
        if (c.i < len && json[c.i] == '}') break;
        goto bad;
    }
done:
    facet_str_free(&key);
    return FACET_OK;
bad:
    facet_str_free(&key);
    if (c.nomem) return facet_err(err, FACET_E_NOMEM, "%s: out of memory", what);
    return facet_err(err, FACET_E_PARSE, "%s: not valid JSON near byte %zu", what, c.i);
}

#define BATCH 32

typedef struct vbatch {
    facet_str keys;
    size_t off[BATCH], len[BATCH];
    int32_t val[BATCH];
    uint32_t hash[BATCH];
    size_t n;
} vbatch;

static int batch_add(vbatch *b, const char *k, size_t len, int32_t v) {
    b->off[b->n] = b->keys.len;
    b->len[b->n] = len;
    b->val[b->n] = v;
    if (facet_str_append(&b->keys, k, len)) return -1;
    b->n++;
    return 0;
}

static int batch_flush(vbatch *b, tok_strmap *m) {
    if (m->cap < 2 * (m->n + b->n) && tok_strmap_reserve(m, 2 * (m->n + b->n), 0)) return -1;
    for (size_t i = 0; i < b->n; i++) {
        b->hash[i] = tok_hash(b->keys.data + b->off[i], b->len[i]);
        tok_strmap_prefetch(m, b->hash[i]);
    }
    for (size_t i = 0; i < b->n; i++)
        if (tok_strmap_put_h(m, b->keys.data + b->off[i], b->len[i], b->hash[i], b->val[i])) return -1;
    b->n = 0;
    b->keys.len = 0;
    return 0;
}

facet_status tok_json_parse_vocab(const char *s, size_t len, const char *what, tok_strmap *vocab,
                                  int32_t *max_id, facet_error *err) {
    scan c = {s, len, 0, 0};
    facet_str key = {0};
    vbatch bt = {0};
    facet_status st = FACET_OK;
    *max_id = -1;
    int items = enter(&c, '{', '}');
    if (items < 0) {
        st = facet_err(err, FACET_E_FORMAT, "%s: model.vocab: expected an object of token -> id", what);
        goto out;
    }
    if (!items) goto out;
    size_t quotes = 0; /* two per key */
    for (const char *q = s, *e = s + len; (q = memchr(q, '"', (size_t)(e - q))); q++) quotes++;
    if (tok_strmap_reserve(vocab, quotes / 2 + 16, len)) {
        st = facet_err(err, FACET_E_NOMEM, "%s: out of memory reading model.vocab", what);
        goto out;
    }
    for (size_t n = 0;; n++) {
        ws(&c);
        if (parse_string(&c, &key)) goto bad;
        ws(&c);
        if (c.i >= len || s[c.i] != ':') goto bad;
        c.i++;
        ws(&c);
        size_t vstart = c.i;
        long long v = 0;
        int digits = 0;
        while (c.i < len && s[c.i] >= '0' && s[c.i] <= '9' && v < TOK_MAX_ID) {
            v = v * 10 + (s[c.i++] - '0');
            digits++;
        }
        if (!digits || v >= TOK_MAX_ID ||
            (c.i < len && (s[c.i] == '.' || s[c.i] == 'e' || s[c.i] == 'E' || (s[c.i] >= '0' && s[c.i] <= '9')))) {
            size_t end = vstart; /* the value's own text (not NUL-terminated), up to 20 bytes */
            while (end < len && end - vstart < 20 && !strchr(",}] \t\r\n", s[end])) end++;
            int shown = (int)(end - vstart);
            st = facet_err(err, FACET_E_FORMAT,
                           "%s: model.vocab[\"%.60s\"]: expected a token id (integer 0..%d), got '%.*s'",
                           what, key.data, TOK_MAX_ID - 1, shown, s + vstart);
            goto out;
        }
        /* batched: hash and prefetch BATCH keys, then insert them (overlaps misses) */
        if (batch_add(&bt, key.data, key.len, (int32_t)v) ||
            (bt.n == BATCH && batch_flush(&bt, vocab))) {
            st = facet_err(err, FACET_E_NOMEM, "%s: out of memory reading model.vocab", what);
            goto out;
        }
        if (v > *max_id) *max_id = (int32_t)v;
        int more = after_item(&c, '}');
        if (more < 0) goto bad;
        if (!more) break;
    }
    goto out;
bad:
    st = scan_error(&c, what, "model.vocab", err);
out:
    if (!st && batch_flush(&bt, vocab)) st = facet_err(err, FACET_E_NOMEM, "%s: out of memory reading model.vocab", what);
    facet_str_free(&key);
    facet_str_free(&bt.keys);
    return st;
}

facet_status tok_json_parse_merges(const char *s, size_t len, const char *what, tok_merge_fn fn,
                                   void *ctx, facet_error *err) {
    scan c = {s, len, 0, 0};
    facet_str a = {0}, b = {0};
    facet_status st = FACET_OK;
    int items = enter(&c, '[', ']');
    if (items < 0) {
        st = facet_err(err, FACET_E_FORMAT, "%s: model.merges: expected an array", what);
        goto out;
    }
    if (!items) goto out;
    size_t rank = 0;
    for (size_t n = 0;; n++) {
        ws(&c);
        if (c.i < len && s[c.i] == '"') {
            if (parse_string(&c, &a)) goto bad;
            if (a.len >= 8 && !memcmp(a.data, "#version", 8)) goto next; /* as tokenizers */
            char *sp = memchr(a.data, ' ', a.len);
            if (!sp || memchr(sp + 1, ' ', a.len - (size_t)(sp + 1 - a.data))) {
                st = facet_err(err, FACET_E_FORMAT,
                               "%s: model.merges[%zu]: expected \"A B\" (two tokens separated by a space), got \"%.60s\"",
                               what, n, a.data);
                goto out;
            }
            size_t al = (size_t)(sp - a.data);
            st = fn(ctx, rank++, a.data, al, sp + 1, a.len - al - 1, err);
        } else if (c.i < len && s[c.i] == '[') {
            c.i++;
            ws(&c);
            if (parse_string(&c, &a)) goto pair;
            ws(&c);
            if (c.i >= len || s[c.i] != ',') goto pair;
            c.i++;
            ws(&c);
            if (parse_string(&c, &b)) goto pair;
            ws(&c);
            if (c.i >= len || s[c.i] != ']') goto pair;
            c.i++;
            st = fn(ctx, rank++, a.data, a.len, b.data, b.len, err);
        } else {
            st = facet_err(err, FACET_E_FORMAT, "%s: model.merges[%zu]: expected a string or a pair of strings",
                           what, n);
            goto out;
        }
        if (st != FACET_OK) goto out;
    next: {
        int more = after_item(&c, ']');
        if (more < 0) goto bad;
        if (!more) break;
        continue;
    }
    pair:
        if (c.nomem) goto bad;
        st = facet_err(err, FACET_E_FORMAT, "%s: model.merges[%zu]: expected a pair of two strings", what, n);
        goto out;
    }
    goto out;
bad:
    st = scan_error(&c, what, "model.merges", err);
out:
    facet_str_free(&a);
    facet_str_free(&b);
    return st;
}
