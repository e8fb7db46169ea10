/* tok_pattern.c — Split/Replace patterns of tokenizer.json: a literal string or a
 * regular expression. tokenizers compiles its regexes with Oniguruma; facet uses PCRE2
 * with PCRE2_UTF | PCRE2_UCP (\p{L}, \s, \w by Unicode properties) and JIT when
 * available. Iteration follows Rust's find_iter: non-overlapping, left to right, and an
 * empty match directly after the previous match is skipped. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"

facet_status tok_pattern_init(tok_pattern *p, const char *src, size_t len, int is_regex,
                              const char *path, facet_error *err) {
    memset(p, 0, sizeof *p);
    p->str = malloc(len + 1);
    if (!p->str) return facet_err(err, FACET_E_NOMEM, "out of memory compiling %s", path);
    memcpy(p->str, src, len);
    p->str[len] = '\0';
    p->len = len;
    if (!is_regex) return FACET_OK;
    int code;
    PCRE2_SIZE where;
    p->re = pcre2_compile((PCRE2_SPTR)src, len, PCRE2_UTF | PCRE2_UCP, &code, &where, NULL);
    if (!p->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return facet_err(err, FACET_E_FORMAT, "%s: regex does not compile at offset %zu: %s", path,
                         (size_t)where, (const char *)msg);
    }
    (void)pcre2_jit_compile(p->re, PCRE2_JIT_COMPLETE); /* interpreter when JIT is absent */
    return FACET_OK;
}

void tok_pattern_free(tok_pattern *p) {
    free(p->str);
    if (p->re) pcre2_code_free(p->re);
    memset(p, 0, sizeof *p);
}

static int push_range(tok_range **v, size_t *n, size_t *cap, size_t s, size_t e) {
    if (facet_array_reserve(*v, *cap, *n + 1)) return -1;
    (*v)[*n].start = s;
    (*v)[(*n)++].end = e;
    return 0;
}

facet_status tok_pattern_find_all(const tok_pattern *p, const char *text, size_t len,
                                  tok_range **out, size_t *n, facet_error *err) {
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    if (!p->re) {
        if (!p->len) return FACET_OK;
        for (size_t i = 0; i + p->len <= len;) {
            const char *hit = memmem(text + i, len - i, p->str, p->len);
            if (!hit) break;
            size_t s = (size_t)(hit - text);
            if (push_range(out, n, &cap, s, s + p->len)) goto nomem;
            i = s + p->len;
        }
        return FACET_OK;
    }
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md) goto nomem;
    size_t pos = 0, last_end = (size_t)-1;
    while (pos <= len) {
        int rc = pcre2_match(p->re, (PCRE2_SPTR)text, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
            rc = pcre2_match(p->re, (PCRE2_SPTR)text, len, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md,
                             NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            pcre2_match_data_free(md);
            free(*out);
            *out = NULL;
            return facet_err(err, FACET_E_LIMIT, "regex /%.80s/ failed at byte %zu: %s", p->str, pos,
                             (const char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t s = ov[0], e = ov[1];
        if (s == e && e == last_end) {
            if (s >= len) break;
            pos = s + tok_utf8_seqlen((unsigned char)text[s]);
            continue;
        }
        if (push_range(out, n, &cap, s, e)) {
            pcre2_match_data_free(md);
            goto nomem;
        }
        last_end = e;
        pos = e;
    }
    pcre2_match_data_free(md);
    return FACET_OK;
nomem:
    free(*out);
    *out = NULL;
    *n = 0;
    return facet_err(err, FACET_E_NOMEM, "out of memory matching a pattern");
}
