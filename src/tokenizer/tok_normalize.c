/* tok_normalize.c — tokenizer.json normalizers, as tokenizers/src/normalizers defines
 * them: Sequence, NFC/NFD/NFKC/NFKD (utf8proc), Lowercase (Rust char::to_lowercase),
 * Strip, StripAccents (drop combining marks), Replace (literal or regex), Prepend,
 * Append, BertNormalizer, Nmt and ByteLevel. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"
#include "util/json.h"

void tok_normalizer_free(tok_normalizer *n) {
    if (!n) return;
    for (size_t i = 0; i < n->n_children; i++) tok_normalizer_free(n->children[i]);
    free(n->children);
    tok_pattern_free(&n->pattern);
    free(n->content);
    free(n);
}

static facet_status set_content(tok_normalizer *n, const json_t *j, const char *key, const char *path,
                                facet_error *err) {
    const char *s;
    size_t len;
    facet_status st = tok_jget_str(j, key, path, 1, &s, &len, err);
    if (st) return st;
    n->content = malloc(len + 1);
    if (!n->content) return facet_err(err, FACET_E_NOMEM, "out of memory");
    memcpy(n->content, s, len + 1);
    n->content_len = len;
    return FACET_OK;
}

facet_status tok_normalizer_parse(const json_t *j, const char *path, tok_normalizer **out,
                                  facet_error *err) {
    const char *type;
    facet_status st = tok_jget_type(j, path, &type, err);
    if (st) return st;
    tok_normalizer *n = calloc(1, sizeof *n);
    if (!n) return facet_err(err, FACET_E_NOMEM, "out of memory");
    *out = n;
    if (!strcmp(type, "Sequence")) {
        n->type = TOK_NORM_SEQUENCE;
        json_t *arr = json_object_get(j, "normalizers");
        if (!json_is_array(arr))
            return facet_err(err, FACET_E_FORMAT, "%s.normalizers: expected an array, got %s", path,
                             arr ? facet_json_type_name(arr) : "nothing");
        size_t k = json_array_size(arr);
        n->children = calloc(k ? k : 1, sizeof *n->children);
        if (!n->children) return facet_err(err, FACET_E_NOMEM, "out of memory");
        for (size_t i = 0; i < k; i++) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s.normalizers[%zu]", path, i);
            st = tok_normalizer_parse(json_array_get(arr, i), sub, &n->children[i], err);
            n->n_children = i + 1;
            if (st) return st;
        }
        return FACET_OK;
    }
    if (!strcmp(type, "NFC")) { n->type = TOK_NORM_NFC; return FACET_OK; }
    if (!strcmp(type, "NFD")) { n->type = TOK_NORM_NFD; return FACET_OK; }
    if (!strcmp(type, "NFKC")) { n->type = TOK_NORM_NFKC; return FACET_OK; }
    if (!strcmp(type, "NFKD")) { n->type = TOK_NORM_NFKD; return FACET_OK; }
    if (!strcmp(type, "Lowercase")) { n->type = TOK_NORM_LOWERCASE; return FACET_OK; }
    if (!strcmp(type, "StripAccents")) { n->type = TOK_NORM_STRIP_ACCENTS; return FACET_OK; }
    if (!strcmp(type, "ByteLevel")) { n->type = TOK_NORM_BYTELEVEL; return FACET_OK; }
    if (!strcmp(type, "Strip")) {
        n->type = TOK_NORM_STRIP;
        if ((st = tok_jget_bool(j, "strip_left", path, 1, &n->left, err))) return st;
        return tok_jget_bool(j, "strip_right", path, 1, &n->right, err);
    }
    if (!strcmp(type, "Replace")) {
        n->type = TOK_NORM_REPLACE;
        if ((st = tok_jget_pattern(j, "pattern", path, &n->pattern, err))) return st;
        return set_content(n, j, "content", path, err);
    }
    if (!strcmp(type, "Prepend")) {
        n->type = TOK_NORM_PREPEND;
        return set_content(n, j, "prepend", path, err);
    }
    if (!strcmp(type, "Append")) {
        n->type = TOK_NORM_APPEND;
        return set_content(n, j, "append", path, err);
    }
    if (!strcmp(type, "Nmt")) { n->type = TOK_NORM_NMT; return FACET_OK; }
    if (!strcmp(type, "BertNormalizer")) {
        n->type = TOK_NORM_BERT;
        json_t *sa = json_object_get(j, "strip_accents");
        if ((st = tok_jget_bool(j, "clean_text", path, 1, &n->clean_text, err)) ||
            (st = tok_jget_bool(j, "handle_chinese_chars", path, 1, &n->handle_chinese_chars, err)) ||
            (st = tok_jget_bool(j, "lowercase", path, 1, &n->lowercase, err)))
            return st;
        if (!sa || json_is_null(sa)) n->strip_accents = -1;
        else if ((st = tok_jget_bool(j, "strip_accents", path, 0, &n->strip_accents, err))) return st;
        return FACET_OK;
    }
    return facet_err(err, FACET_E_UNSUPPORTED, "%s.type: normalizer \"%s\" is not supported", path, type);
}

static int is_mark(int32_t cp) {
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME;
}

static int is_chinese(int32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

static int append_cp(facet_str *out, int32_t cp) {
    char u[4];
    return facet_str_append(out, u, tok_utf8_encode(cp, u));
}

static int lowercase(const char *in, size_t len, facet_str *out) {
    for (size_t i = 0, n; i < len; i += n) {
        int32_t cp = tok_utf8_decode(in, len, i, &n);
        if (cp == 0x130) { /* the one unconditional multi-character lowercase mapping */
            if (facet_str_append(out, "i\xCC\x87", 3)) return -1;
            continue;
        }
        if (append_cp(out, cp < 0x80 ? (cp >= 'A' && cp <= 'Z' ? cp + 32 : cp) : utf8proc_tolower(cp))) return -1;
    }
    return 0;
}

/* A character that every normalization form leaves alone and that never combines with
 * a neighbour: canonical combining class 0, no decomposition, no composition, not Hangul
 * (composed algorithmically). Text may be split before and after it. */
static int nf_inert(int32_t cp) {
    if ((cp >= 0x1100 && cp <= 0x11FF) || (cp >= 0xA960 && cp <= 0xA97F) || (cp >= 0xAC00 && cp <= 0xD7FF))
        return 0;
    const utf8proc_property_t *p = utf8proc_get_property(cp);
    return p->combining_class == 0 && p->decomp_seqindex == UINT16_MAX && p->comb_index == UINT16_MAX;
}

static int map_run(const char *in, size_t len, facet_str *out, utf8proc_option_t opt) {
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)in, (utf8proc_ssize_t)len, &dst, opt | UTF8PROC_STABLE);
    if (n < 0) return -1;
    int rc = facet_str_append(out, dst, (size_t)n);
    free(dst);
    return rc;
}

/* NFC/NFD/NFKC/NFKD through utf8proc, applied only to the runs that can change: text
 * is copied as is up to each run of non-inert non-ASCII characters, which is
 * normalized together with the ASCII character before it (a possible first element of
 * a composition). Splitting there is exact: ASCII and inert characters are starters
 * that never compose with what precedes them. */
static int unicode_form(const char *in, size_t len, facet_str *out, utf8proc_option_t opt) {
    size_t copied = 0, i = 0, k;
    while (i < len) {
        unsigned char c = (unsigned char)in[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int32_t cp = tok_utf8_decode(in, len, i, &k);
        if (nf_inert(cp)) {
            i += k;
            continue;
        }
        size_t start = i;
        if (start > copied && (unsigned char)in[start - 1] < 0x80) start--;
        size_t end = i + k;
        while (end < len && (unsigned char)in[end] >= 0x80) {
            int32_t c2 = tok_utf8_decode(in, len, end, &k);
            if (nf_inert(c2)) break;
            end += k;
        }
        if (facet_str_append(out, in + copied, start - copied) || map_run(in + start, end - start, out, opt)) return -1;
        copied = i = end;
    }
    return facet_str_append(out, in + copied, len - copied);
}

static int bert(const tok_normalizer *n, const char *in, size_t len, facet_str *out) {
    facet_str a = {0}, b = {0};
    int rc = -1;
    for (size_t i = 0, k; i < len; i += k) {
        int32_t cp = tok_utf8_decode(in, len, i, &k);
        if (n->clean_text) {
            utf8proc_category_t c = utf8proc_category(cp);
            int control = cp != '\t' && cp != '\n' && cp != '\r' &&
                          (c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CN ||
                           c == UTF8PROC_CATEGORY_CO || c == UTF8PROC_CATEGORY_CS);
            if (cp == 0 || cp == 0xFFFD || control) continue;
            if (tok_is_whitespace(cp)) cp = ' ';
        }
        if (n->handle_chinese_chars && is_chinese(cp)) {
            if (facet_str_append(&a, " ", 1) || append_cp(&a, cp) || facet_str_append(&a, " ", 1)) goto out;
            continue;
        }
        if (append_cp(&a, cp)) goto out;
    }
    if (!a.data && facet_str_append(&a, "", 0)) goto out;
    int strip = n->strip_accents < 0 ? n->lowercase : n->strip_accents;
    if (strip) {
        if (unicode_form(a.data, a.len, &b, UTF8PROC_DECOMPOSE)) goto out;
        a.len = 0;
        for (size_t i = 0, k; i < b.len; i += k) {
            int32_t cp = tok_utf8_decode(b.data, b.len, i, &k);
            if (utf8proc_category(cp) == UTF8PROC_CATEGORY_MN) continue;
            if (facet_str_append(&a, b.data + i, k)) goto out;
        }
    }
    rc = n->lowercase ? lowercase(a.data, a.len, out) : facet_str_append(out, a.data, a.len);
out:
    facet_str_free(&a);
    facet_str_free(&b);
    return rc;
}

static facet_status apply_one(const tok_normalizer *n, const char *in, size_t len, facet_str *out,
                              facet_error *err) {
    int rc = 0;
    switch (n->type) {
    case TOK_NORM_SEQUENCE: {
        facet_str cur = {0}, next = {0};
        if (facet_str_append(&cur, in, len)) rc = -1;
        for (size_t i = 0; !rc && i < n->n_children; i++) {
            next.len = 0;
            facet_status st = apply_one(n->children[i], cur.data, cur.len, &next, err);
            if (st) {
                facet_str_free(&cur);
                facet_str_free(&next);
                return st;
            }
            facet_str t = cur;
            cur = next;
            next = t;
        }
        if (!rc) rc = facet_str_append(out, cur.data, cur.len);
        facet_str_free(&cur);
        facet_str_free(&next);
        break;
    }
    case TOK_NORM_NFC: rc = unicode_form(in, len, out, UTF8PROC_COMPOSE); break;
    case TOK_NORM_NFD: rc = unicode_form(in, len, out, UTF8PROC_DECOMPOSE); break;
    case TOK_NORM_NFKC: rc = unicode_form(in, len, out, UTF8PROC_COMPOSE | UTF8PROC_COMPAT); break;
    case TOK_NORM_NFKD: rc = unicode_form(in, len, out, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT); break;
    case TOK_NORM_LOWERCASE: rc = lowercase(in, len, out); break;
    case TOK_NORM_STRIP: {
        size_t s = 0, e = len, k;
        while (n->left && s < e && tok_is_whitespace(tok_utf8_decode(in, len, s, &k))) s += k;
        while (n->right && e > s) {
            size_t p = e - 1;
            while (p > s && ((unsigned char)in[p] & 0xC0) == 0x80) p--;
            if (!tok_is_whitespace(tok_utf8_decode(in, len, p, &k))) break;
            e = p;
        }
        rc = facet_str_append(out, in + s, e - s);
        break;
    }
    case TOK_NORM_STRIP_ACCENTS:
        for (size_t i = 0, k; !rc && i < len; i += k) {
            int32_t cp = tok_utf8_decode(in, len, i, &k);
            if (!is_mark(cp)) rc = facet_str_append(out, in + i, k);
        }
        break;
    case TOK_NORM_REPLACE: {
        tok_range *m;
        size_t nm, prev = 0;
        facet_status st = tok_pattern_find_all(&n->pattern, in, len, &m, &nm, err);
        if (st) return st;
        for (size_t i = 0; !rc && i < nm; i++) {
            rc = facet_str_append(out, in + prev, m[i].start - prev) ||
                 facet_str_append(out, n->content, n->content_len);
            prev = m[i].end;
        }
        if (!rc) rc = facet_str_append(out, in + prev, len - prev);
        free(m);
        break;
    }
    case TOK_NORM_PREPEND:
        if (len) rc = facet_str_append(out, n->content, n->content_len);
        if (!rc) rc = facet_str_append(out, in, len);
        break;
    case TOK_NORM_APPEND:
        rc = facet_str_append(out, in, len);
        if (!rc && len) rc = facet_str_append(out, n->content, n->content_len);
        break;
    case TOK_NORM_NMT:
        /* drop ASCII/C1 controls, map other break and format characters to a space */
        for (size_t i = 0, k; !rc && i < len; i += k) {
            int32_t cp = tok_utf8_decode(in, len, i, &k);
            if ((cp >= 1 && cp <= 8) || cp == 0x0B || (cp >= 0x0E && cp <= 0x1F) || cp == 0x7F || cp == 0x8F ||
                cp == 0x9F)
                continue;
            int space = cp == 0x09 || cp == 0x0A || cp == 0x0C || cp == 0x0D || cp == 0x1680 ||
                        (cp >= 0x200B && cp <= 0x200F) || cp == 0x2028 || cp == 0x2029 || cp == 0x2581 ||
                        cp == 0xFEFF || cp == 0xFFFD;
            rc = space ? facet_str_append(out, " ", 1) : facet_str_append(out, in + i, k);
        }
        break;
    case TOK_NORM_BERT: rc = bert(n, in, len, out); break;
    case TOK_NORM_BYTELEVEL: rc = tok_bytelevel_map(out, in, len); break;
    }
    if (rc) return facet_err(err, FACET_E_NOMEM, "out of memory while normalizing");
    return FACET_OK;
}

facet_status tok_normalize(const tok_normalizer *n, const char *in, size_t len, facet_str *out,
                           facet_error *err) {
    if (facet_str_reserve(out, len)) return facet_err(err, FACET_E_NOMEM, "out of memory while normalizing");
    return apply_one(n, in, len, out, err);
}
