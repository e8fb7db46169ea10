/* tok_pretokenize.c — tokenizer.json pre-tokenizers, as tokenizers/src/pre_tokenizers
 * defines them: Sequence, ByteLevel, Split, Metaspace, Digits, Punctuation, Whitespace,
 * WhitespaceSplit, BertPreTokenizer, CharDelimiterSplit. Splitting follows
 * NormalizedString::split: the matches and the text between them are labelled, merged
 * according to the SplitDelimiterBehavior, and empty pieces are dropped. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"
#include "util/json.h"

/* The GPT-2 pattern of ByteLevel(use_regex=true). */
static const char GPT2_RE[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
/* Whitespace's \w+|[^\w\s]+ (Rust regex crate): \w is Unicode word characters
 * (alphabetic, marks, decimal numbers, connector punctuation, join controls). */
static const char WHITESPACE_RE[] =
    "[\\p{L}\\p{Nl}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]+|[^\\p{L}\\p{Nl}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}\\s]+";

void tok_pretok_free(tok_pretok *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n_children; i++) tok_pretok_free(p->children[i]);
    free(p->children);
    tok_pattern_free(&p->pattern);
    free(p);
}

static facet_status parse_behavior(const json_t *j, const char *path, tok_split_behavior dflt,
                                   tok_split_behavior *out, facet_error *err) {
    const char *s;
    facet_status st = tok_jget_str(j, "behavior", path, 0, &s, NULL, err);
    *out = dflt;
    if (st || !s) return st;
    static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                                        "Contiguous"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, names[i])) {
            *out = (tok_split_behavior)i;
            return FACET_OK;
        }
    return facet_err(err, FACET_E_FORMAT,
                     "%s.behavior: \"%.40s\" is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous",
                     path, s);
}

facet_status tok_pretok_parse(const json_t *j, const char *path, tok_pretok **out, facet_error *err) {
    const char *type;
    facet_status st = tok_jget_type(j, path, &type, err);
    if (st) return st;
    tok_pretok *p = calloc(1, sizeof *p);
    if (!p) return facet_err(err, FACET_E_NOMEM, "out of memory");
    *out = p;
    if (!strcmp(type, "Sequence")) {
        p->type = TOK_PRE_SEQUENCE;
        json_t *arr = json_object_get(j, "pretokenizers");
        if (!json_is_array(arr))
            return facet_err(err, FACET_E_FORMAT, "%s.pretokenizers: expected an array, got %s", path,
                             arr ? facet_json_type_name(arr) : "nothing");
        size_t k = json_array_size(arr);
        p->children = calloc(k ? k : 1, sizeof *p->children);
        if (!p->children) return facet_err(err, FACET_E_NOMEM, "out of memory");
        for (size_t i = 0; i < k; i++) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s.pretokenizers[%zu]", path, i);
            st = tok_pretok_parse(json_array_get(arr, i), sub, &p->children[i], err);
            p->n_children = i + 1;
            if (st) return st;
        }
        return FACET_OK;
    }
    if (!strcmp(type, "ByteLevel")) {
        p->type = TOK_PRE_BYTELEVEL;
        if ((st = tok_jget_bool(j, "add_prefix_space", path, 1, &p->add_prefix_space, err)) ||
            (st = tok_jget_bool(j, "use_regex", path, 1, &p->use_regex, err)))
            return st;
        if (p->use_regex) return tok_pattern_init(&p->pattern, GPT2_RE, strlen(GPT2_RE), 1, path, err);
        return FACET_OK;
    }
    if (!strcmp(type, "Split")) {
        p->type = TOK_PRE_SPLIT;
        if ((st = tok_jget_pattern(j, "pattern", path, &p->pattern, err)) ||
            (st = parse_behavior(j, path, TOK_SPLIT_ISOLATED, &p->behavior, err)) ||
            (st = tok_jget_bool(j, "invert", path, 0, &p->invert, err)))
            return st;
        return FACET_OK;
    }
    if (!strcmp(type, "Metaspace")) {
        p->type = TOK_PRE_METASPACE;
        if ((st = tok_jget_char(j, "replacement", path, 0x2581, &p->replacement, err)) ||
            (st = tok_jget_bool(j, "split", path, 1, &p->split, err)))
            return st;
        const char *scheme;
        if ((st = tok_jget_str(j, "prepend_scheme", path, 0, &scheme, NULL, err))) return st;
        if (!scheme) {
            int aps;
            if ((st = tok_jget_bool(j, "add_prefix_space", path, 1, &aps, err))) return st;
            p->prepend_scheme = aps ? TOK_PREPEND_ALWAYS : TOK_PREPEND_NEVER;
        } else if (!strcmp(scheme, "always")) p->prepend_scheme = TOK_PREPEND_ALWAYS;
        else if (!strcmp(scheme, "first")) p->prepend_scheme = TOK_PREPEND_FIRST;
        else if (!strcmp(scheme, "never")) p->prepend_scheme = TOK_PREPEND_NEVER;
        else
            return facet_err(err, FACET_E_FORMAT, "%s.prepend_scheme: \"%.40s\" is not always, first or never",
                             path, scheme);
        return FACET_OK;
    }
    if (!strcmp(type, "Digits")) {
        p->type = TOK_PRE_DIGITS;
        return tok_jget_bool(j, "individual_digits", path, 0, &p->individual_digits, err);
    }
    if (!strcmp(type, "Punctuation")) {
        p->type = TOK_PRE_PUNCTUATION;
        return parse_behavior(j, path, TOK_SPLIT_ISOLATED, &p->behavior, err);
    }
    if (!strcmp(type, "Whitespace")) {
        p->type = TOK_PRE_WHITESPACE;
        return tok_pattern_init(&p->pattern, WHITESPACE_RE, strlen(WHITESPACE_RE), 1, path, err);
    }
    if (!strcmp(type, "WhitespaceSplit")) { p->type = TOK_PRE_WHITESPACE_SPLIT; return FACET_OK; }
    if (!strcmp(type, "BertPreTokenizer")) { p->type = TOK_PRE_BERT; return FACET_OK; }
    if (!strcmp(type, "CharDelimiterSplit")) {
        p->type = TOK_PRE_CHAR_DELIMITER;
        if ((st = tok_jget_char(j, "delimiter", path, -1, &p->replacement, err))) return st;
        if (p->replacement < 0) return facet_err(err, FACET_E_FORMAT, "%s.delimiter: missing", path);
        return FACET_OK;
    }
    return facet_err(err, FACET_E_UNSUPPORTED, "%s.type: pre-tokenizer \"%s\" is not supported", path, type);
}

/* A labelled piece of a word: [start, end) and whether it is a match. */
typedef struct lab {
    size_t start, end;
    int match;
} lab;

typedef struct lablist {
    lab *v;
    size_t n, cap;
} lablist;

static int lab_push(lablist *l, size_t s, size_t e, int m) {
    if (facet_array_reserve(l->v, l->cap, l->n + 1)) return -1;
    l->v[l->n++] = (lab){s, e, m};
    return 0;
}

/* Merge the labelled pieces per behavior and push the kept non-empty pieces. */
static int emit(tok_words *out, const char *s, int orig0, lablist *l, tok_split_behavior b) {
    size_t n = 0;
    lab *v = l->v;
    int prev_match = 0;
    switch (b) {
    case TOK_SPLIT_REMOVED:
        for (size_t i = 0; i < l->n; i++)
            if (!v[i].match) v[n++] = v[i];
        break;
    case TOK_SPLIT_ISOLATED: n = l->n; break;
    case TOK_SPLIT_MERGED_WITH_PREVIOUS:
        for (size_t i = 0; i < l->n; i++) {
            if (v[i].match && !prev_match && n) v[n - 1].end = v[i].end;
            else v[n++] = v[i];
            prev_match = v[i].match;
        }
        break;
    case TOK_SPLIT_MERGED_WITH_NEXT: {
        /* walk from the end: a match is merged into the piece after it */
        size_t w = l->n;
        for (size_t k = l->n; k-- > 0;) {
            lab cur = v[k];
            if (cur.match && !prev_match && w < l->n) v[w].start = cur.start;
            else v[--w] = cur;
            prev_match = cur.match;
        }
        if (l->n > w) memmove(v, v + w, (l->n - w) * sizeof *v);
        n = l->n - w;
        break;
    }
    case TOK_SPLIT_CONTIGUOUS:
        for (size_t i = 0; i < l->n; i++) {
            if (n && v[i].match == prev_match) v[n - 1].end = v[i].end;
            else v[n++] = v[i];
            prev_match = v[i].match;
        }
        break;
    }
    for (size_t i = 0; i < n; i++)
        if (v[i].end > v[i].start &&
            tok_words_push(out, s + v[i].start, v[i].end - v[i].start, orig0 && v[i].start == 0))
            return -1;
    return 0;
}

/* Label a word by regex/literal matches (Pattern::find_matches for strings/regexes). */
static facet_status label_pattern(const tok_pattern *p, const char *s, size_t len, int invert, lablist *l,
                                  facet_error *err) {
    tok_range *m;
    size_t nm, prev = 0;
    l->n = 0;
    facet_status st = tok_pattern_find_all(p, s, len, &m, &nm, err);
    if (st) return st;
    int rc = 0;
    for (size_t i = 0; !rc && i < nm; i++) {
        if (prev != m[i].start) rc |= lab_push(l, prev, m[i].start, invert);
        rc |= lab_push(l, m[i].start, m[i].end, !invert);
        prev = m[i].end;
    }
    if (!rc && prev != len) rc = lab_push(l, prev, len, invert);
    free(m);
    return rc ? facet_err(err, FACET_E_NOMEM, "out of memory pre-tokenizing") : FACET_OK;
}

typedef int (*char_pred)(int32_t cp, const tok_pretok *p);

/* Digits splits on Rust char::is_numeric: general categories Nd, Nl, No. */
static int pred_digit(int32_t cp, const tok_pretok *p) {
    (void)p;
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}
static int pred_punct(int32_t cp, const tok_pretok *p) { (void)p; return tok_is_punctuation(cp); }
static int pred_space(int32_t cp, const tok_pretok *p) { (void)p; return tok_is_whitespace(cp); }
static int pred_char(int32_t cp, const tok_pretok *p) { return cp == p->replacement; }

/* Label each matching character as its own match (Pattern for Fn(char) -> bool). */
static int label_chars(const char *s, size_t len, char_pred f, const tok_pretok *p, lablist *l) {
    size_t last = 0, k;
    l->n = 0;
    for (size_t i = 0; i < len; i += k) {
        int32_t cp = tok_utf8_decode(s, len, i, &k);
        if (!f(cp, p)) continue;
        if (last < i && lab_push(l, last, i, 0)) return -1;
        if (lab_push(l, i, i + k, 1)) return -1;
        last = i + k;
    }
    if (last < len && lab_push(l, last, len, 0)) return -1;
    return 0;
}

static facet_status split_chars(tok_words *in, tok_words *out, char_pred f, const tok_pretok *p,
                                tok_split_behavior b, lablist *l, facet_error *err) {
    for (size_t i = 0; i < in->n; i++) {
        const char *s = in->text.data + in->spans[i].off;
        if (label_chars(s, in->spans[i].len, f, p, l) || emit(out, s, in->spans[i].orig0, l, b))
            return facet_err(err, FACET_E_NOMEM, "out of memory pre-tokenizing");
    }
    return FACET_OK;
}

static facet_status split_pattern(tok_words *in, tok_words *out, const tok_pattern *pat, int invert,
                                  tok_split_behavior b, lablist *l, facet_error *err) {
    for (size_t i = 0; i < in->n; i++) {
        const char *s = in->text.data + in->spans[i].off;
        facet_status st = label_pattern(pat, s, in->spans[i].len, invert, l, err);
        if (st) return st;
        if (emit(out, s, in->spans[i].orig0, l, b))
            return facet_err(err, FACET_E_NOMEM, "out of memory pre-tokenizing");
    }
    return FACET_OK;
}

static facet_status metaspace(const tok_pretok *p, tok_words *in, tok_words *out, lablist *l, facet_error *err) {
    char rep[4];
    size_t rlen = tok_utf8_encode(p->replacement, rep);
    facet_str w = {0};
    facet_status st = FACET_OK;
    for (size_t i = 0; i < in->n; i++) {
        const char *s = in->text.data + in->spans[i].off;
        size_t len = in->spans[i].len;
        w.len = 0;
        int rc = facet_str_reserve(&w, len + rlen);
        for (size_t k = 0; !rc && k < len; k++)
            rc = s[k] == ' ' ? facet_str_append(&w, rep, rlen) : facet_str_append(&w, s + k, 1);
        if (rc) goto nomem;
        int starts = w.len >= rlen && !memcmp(w.data, rep, rlen);
        if (!starts && (p->prepend_scheme == TOK_PREPEND_ALWAYS ||
                        (p->prepend_scheme == TOK_PREPEND_FIRST && in->spans[i].orig0))) {
            if (facet_str_reserve(&w, rlen)) goto nomem;
            memmove(w.data + rlen, w.data, w.len);
            memcpy(w.data, rep, rlen);
            w.len += rlen;
        }
        if (!p->split) {
            if (w.len && tok_words_push(out, w.data, w.len, in->spans[i].orig0)) goto nomem;
            continue;
        }
        if (label_chars(w.data, w.len, pred_char, p, l) ||
            emit(out, w.data, in->spans[i].orig0, l, TOK_SPLIT_MERGED_WITH_NEXT))
            goto nomem;
    }
    goto done;
nomem:
    st = facet_err(err, FACET_E_NOMEM, "out of memory pre-tokenizing");
done:
    facet_str_free(&w);
    return st;
}

static facet_status bytelevel(const tok_pretok *p, tok_words *in, tok_words *out, lablist *l, facet_error *err) {
    if (!p->add_prefix_space && !p->use_regex) {
        tok_words t = *in; /* nothing to split: hand the words over */
        *in = *out;
        *out = t;
        out->bytelevel = 1;
        return FACET_OK;
    }
    facet_str w = {0};
    facet_status st = FACET_OK;
    for (size_t i = 0; i < in->n && !st; i++) {
        const char *s = in->text.data + in->spans[i].off;
        size_t len = in->spans[i].len;
        w.len = 0;
        if ((p->add_prefix_space && (len == 0 || s[0] != ' ') && facet_str_append(&w, " ", 1)) ||
            facet_str_append(&w, s, len)) {
            st = facet_err(err, FACET_E_NOMEM, "out of memory pre-tokenizing");
            break;
        }
        if (!p->use_regex) {
            if (tok_words_push(out, w.data, w.len, in->spans[i].orig0))
                st = facet_err(err, FACET_E_NOMEM, "out of memory pre-tokenizing");
            continue;
        }
        st = label_pattern(&p->pattern, w.data, w.len, 0, l, err);
        if (!st && emit(out, w.data, in->spans[i].orig0, l, TOK_SPLIT_ISOLATED))
            st = facet_err(err, FACET_E_NOMEM, "out of memory pre-tokenizing");
    }
    facet_str_free(&w);
    out->bytelevel = 1;
    return st;
}

static facet_status run(const tok_pretok *p, tok_words *in, tok_words *out, lablist *l, facet_error *err) {
    tok_words_clear(out);
    if (in->bytelevel && tok_words_materialize(in))
        return facet_err(err, FACET_E_NOMEM, "out of memory pre-tokenizing");
    switch (p->type) {
    case TOK_PRE_SEQUENCE: {
        /* ping-pong between the two lists; the result must end in *out */
        for (size_t i = 0; i < p->n_children; i++) {
            facet_status st = run(p->children[i], in, out, l, err);
            if (st) return st;
            tok_words t = *in;
            *in = *out;
            *out = t;
        }
        tok_words t = *in;
        *in = *out;
        *out = t;
        return FACET_OK;
    }
    case TOK_PRE_BYTELEVEL: return bytelevel(p, in, out, l, err);
    case TOK_PRE_SPLIT: return split_pattern(in, out, &p->pattern, p->invert, p->behavior, l, err);
    case TOK_PRE_METASPACE: return metaspace(p, in, out, l, err);
    case TOK_PRE_DIGITS:
        return split_chars(in, out, pred_digit, p, p->individual_digits ? TOK_SPLIT_ISOLATED : TOK_SPLIT_CONTIGUOUS,
                           l, err);
    case TOK_PRE_PUNCTUATION: return split_chars(in, out, pred_punct, p, p->behavior, l, err);
    case TOK_PRE_WHITESPACE: return split_pattern(in, out, &p->pattern, 1, TOK_SPLIT_REMOVED, l, err);
    case TOK_PRE_WHITESPACE_SPLIT: return split_chars(in, out, pred_space, p, TOK_SPLIT_REMOVED, l, err);
    case TOK_PRE_CHAR_DELIMITER: return split_chars(in, out, pred_char, p, TOK_SPLIT_REMOVED, l, err);
    case TOK_PRE_BERT: {
        tok_words mid = {0};
        facet_status st = split_chars(in, &mid, pred_space, p, TOK_SPLIT_REMOVED, l, err);
        if (!st) st = split_chars(&mid, out, pred_punct, p, TOK_SPLIT_ISOLATED, l, err);
        tok_words_free(&mid);
        return st;
    }
    }
    return facet_err(err, FACET_E_INTERNAL, "unknown pre-tokenizer type %d", (int)p->type);
}

facet_status tok_pretokenize(const tok_pretok *p, tok_words *in, tok_words *out, facet_error *err) {
    lablist l = {0};
    facet_status st = run(p, in, out, &l, err);
    free(l.v);
    return st;
}
