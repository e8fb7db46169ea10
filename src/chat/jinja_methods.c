/*
 * jinja_methods.c — the Python methods a sandboxed template may call on data:
 * str (strip, lstrip, rstrip, split, splitlines, startswith, endswith, upper, lower,
 * title, capitalize, replace, find, rfind, count, join, format, is*), dict (items, keys,
 * values, get, copy) and list/tuple (index, count), with CPython's semantics on UTF-8
 * text (indices count code points). Also the Python string helpers filters share.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "chat/jinja.h"

/* str.isspace (CPython _PyUnicode_IsWhitespace). */
int jpy_isspace(int32_t cp) {
    if ((cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
        (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000)
        return 1;
    return 0;
}

static int32_t cp_at(const char *s, size_t n, size_t i, size_t *len) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
    if (k <= 0) {
        *len = 1;
        return (unsigned char)s[i];
    }
    *len = (size_t)k;
    return cp;
}

static int in_chars(int32_t cp, const char *chars, size_t nchars) {
    for (size_t i = 0; i < nchars;) {
        size_t k;
        if (cp_at(chars, nchars, i, &k) == cp) return 1;
        i += k;
    }
    return 0;
}

int jpy_strip(const char *s, size_t n, const char *chars, size_t nchars, int left, int right, size_t *start,
              size_t *end) {
    size_t a = 0, b = n;
    if (left) {
        while (a < b) {
            size_t k;
            int32_t cp = cp_at(s, n, a, &k);
            if (chars ? !in_chars(cp, chars, nchars) : !jpy_isspace(cp)) break;
            a += k;
        }
    }
    if (right) {
        while (b > a) {
            size_t st = b - 1;
            while (st > a && ((unsigned char)s[st] & 0xC0) == 0x80) st--;
            size_t k;
            int32_t cp = cp_at(s, n, st, &k);
            if (chars ? !in_chars(cp, chars, nchars) : !jpy_isspace(cp)) break;
            b = st;
        }
    }
    *start = a;
    *end = b;
    return 0;
}

/* Python's cased characters: Lu, Ll, Lt, anything with a case mapping, and the
 * Other_Lowercase/Other_Uppercase letters without one (ranges from Python 3.11's
 * unicodedata: str.islower() or str.isupper() true, no mapping, not L[ult]). */
static int is_cased(int32_t cp) {
    static const int32_t other[][2] = {
        {0xAA, 0xAA}, {0xBA, 0xBA}, {0x2B0, 0x2B8}, {0x2C0, 0x2C1}, {0x2E0, 0x2E4}, {0x37A, 0x37A},
        {0x1D2C, 0x1D6A}, {0x1D78, 0x1D78}, {0x1D9B, 0x1DBF}, {0x2071, 0x2071}, {0x207F, 0x207F},
        {0x2090, 0x209C}, {0x2C7C, 0x2C7D}, {0xA69C, 0xA69D}, {0xA770, 0xA770}, {0xA7F8, 0xA7F9},
        {0xAB5C, 0xAB5F}, {0x10780, 0x10780}, {0x10783, 0x10785}, {0x10787, 0x107B0}, {0x107B2, 0x107BA},
        {0x1F130, 0x1F149}, {0x1F150, 0x1F169}, {0x1F170, 0x1F189}};
    utf8proc_category_t c = utf8proc_category(cp);
    if (c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
        utf8proc_toupper(cp) != cp || utf8proc_tolower(cp) != cp)
        return 1;
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        if (cp >= other[i][0] && cp <= other[i][1]) return 1;
    return 0;
}

static int put_cp(facet_str *b, int32_t cp) {
    utf8proc_uint8_t tmp[4];
    utf8proc_ssize_t k = utf8proc_encode_char(cp, tmp);
    return facet_str_append(b, (const char *)tmp, (size_t)k);
}

static int case_ignorable(int32_t cp) {
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_ME || c == UTF8PROC_CATEGORY_CF ||
           c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_SK || cp == '\'' || cp == '.' || cp == ':' ||
           cp == 0xB7 || cp == 0x2018 || cp == 0x2019 || cp == 0x2024 || cp == 0xFE52 || cp == 0xFF07 || cp == 0xFF0E;
}

/* Python's Final_Sigma: capital sigma lowers to final sigma after a cased letter and
 * not before one (case-ignorable characters skipped). */
static int32_t lower_sigma(const int32_t *cps, size_t lo, size_t hi, size_t i) {
    size_t j = i;
    while (j > lo && case_ignorable(cps[j - 1])) j--;
    if (j == lo || !is_cased(cps[j - 1])) return 0x3C3;
    j = i + 1;
    while (j < hi && case_ignorable(cps[j])) j++;
    return (j == hi || !is_cased(cps[j])) ? 0x3C2 : 0x3C3;
}

/* Map code point i: kind 0 lower, 1 upper, 2 title (full mappings, as Python); the
 * string being lowered is cps[lo, hi) (for the Final_Sigma context). */
static int put_mapped(facet_str *b, const int32_t *cps, size_t lo, size_t hi, size_t i, int kind) {
    int32_t cp = cps[i];
    const char *sp = jpy_special_case(cp, kind);
    if (sp) return facet_str_appendz(b, sp);
    if (kind == 0) return put_cp(b, cp == 0x3A3 ? lower_sigma(cps, lo, hi, i) : utf8proc_tolower(cp));
    return put_cp(b, kind == 1 ? utf8proc_toupper(cp) : utf8proc_totitle(cp));
}

jv jpy_case(const char *s, size_t n, int mode) {
    int32_t *cps = malloc((n + 1) * sizeof(int32_t));
    if (!cps) return jv_none();
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        size_t k;
        cps[m++] = cp_at(s, n, i, &k);
        i += k;
    }
    facet_str b = {0};
    int prev_cased = 0, rc = 0;
    size_t word = 0, word_end = 0; /* mode 4: current word [word, word_end) */
    for (size_t i = 0; i < m && !rc; i++) {
        int32_t cp = cps[i];
        switch (mode) {
        case 0: rc = put_mapped(&b, cps, 0, m, i, 0); break;
        case 1: rc = put_mapped(&b, cps, 0, m, i, 1); break;
        case 2: rc = put_mapped(&b, cps, 0, m, i, i == 0 ? 2 : 0); break;
        case 3:
            rc = put_mapped(&b, cps, 0, m, i, prev_cased ? 0 : 2);
            prev_cased = is_cased(cp);
            break;
        default: {
            /* Jinja's title filter: words split at runs of [-\s({\[<], then
             * word[0].upper() + word[1:].lower() */
            int sep = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || jpy_isspace(cp);
            if (sep) {
                rc = put_cp(&b, cp);
                break;
            }
            if (i >= word_end) { /* a new word starts here */
                word = i;
                for (word_end = i; word_end < m; word_end++) {
                    int32_t c2 = cps[word_end];
                    if (c2 == '-' || c2 == '(' || c2 == '{' || c2 == '[' || c2 == '<' || jpy_isspace(c2)) break;
                }
            }
            rc = put_mapped(&b, cps, word + 1, word_end, i, i == word ? 1 : 0);
            break;
        }
        }
    }
    free(cps);
    if (rc) facet_str_free(&b);
    return rc ? jv_none() : jv_str_take(&b);
}

/* ------------------------------------------------------------------ helpers ---- */

static int oom(jctx *cx, const jnode *at) { return jx_fail(cx, at, FACET_E_NOMEM, "out of memory"); }

static long cp_count(const char *s, size_t n) {
    long c = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) c++;
    return c;
}

/* Python str.splitlines boundaries. */
static int line_break(const char *s, size_t n, size_t i, size_t *len) {
    size_t k;
    int32_t cp = cp_at(s, n, i, &k);
    if (cp == '\r' && i + 1 < n && s[i + 1] == '\n') {
        *len = 2;
        return 1;
    }
    *len = k;
    return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D || cp == 0x1E ||
           cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

jv jpy_splitlines(const char *s, size_t n, int keepends) {
    jv l = jv_list_new(JL_LIST);
    if (l.k != JV_LIST) return l;
    size_t a = 0, i = 0;
    while (i < n) {
        size_t k;
        if (line_break(s, n, i, &k)) {
            if (jv_list_push(l, jv_str(s + a, keepends ? i + k - a : i - a))) break;
            i += k;
            a = i;
        } else {
            i += k;
        }
    }
    if (a < n) jv_list_push(l, jv_str(s + a, n - a));
    return l;
}

static int do_split(jctx *cx, const jnode *at, jv self, jv *sep, jv *maxs, int rsplit, jv *out) {
    const char *s = JS(self)->s;
    size_t n = JS(self)->len;
    int64_t max = -1;
    if (maxs && maxs->k != JV_NONE) {
        if (maxs->k != JV_INT) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: maxsplit must be an integer");
        max = maxs->u.i;
    }
    if (sep && sep->k != JV_NONE && sep->k != JV_STR)
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: must be str or None, not %s", jv_type_name(*sep));
    if (sep && sep->k == JV_STR && JS(*sep)->len == 0)
        return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: empty separator");
    if (rsplit && max >= 0)
        return jx_fail(cx, at, FACET_E_UNSUPPORTED, "unsupported construct: str.rsplit with maxsplit");
    jv l = jv_list_new(JL_LIST);
    if (l.k != JV_LIST) return oom(cx, at);
    int64_t splits = 0;
    if (!sep || sep->k == JV_NONE) {
        size_t i = 0;
        while (i < n) {
            size_t k;
            while (i < n && jpy_isspace(cp_at(s, n, i, &k))) i += k;
            if (i >= n) break;
            if (max >= 0 && splits >= max) {
                size_t e = n, st, en;
                jpy_strip(s + i, e - i, NULL, 0, 0, 1, &st, &en);
                if (jv_list_push(l, jv_str(s + i, en))) goto nomem;
                break;
            }
            size_t a = i;
            while (i < n && !jpy_isspace(cp_at(s, n, i, &k))) i += k;
            if (jv_list_push(l, jv_str(s + a, i - a))) goto nomem;
            splits++;
        }
    } else {
        const char *p = JS(*sep)->s;
        size_t pl = JS(*sep)->len, a = 0;
        for (;;) {
            const char *hit = (max < 0 || splits < max) ? memmem(s + a, n - a, p, pl) : NULL;
            if (!hit) {
                if (jv_list_push(l, jv_str(s + a, n - a))) goto nomem;
                break;
            }
            if (jv_list_push(l, jv_str(s + a, (size_t)(hit - (s + a))))) goto nomem;
            a = (size_t)(hit - s) + pl;
            splits++;
        }
    }
    *out = l;
    return 0;
nomem:
    jv_unref(l);
    return oom(cx, at);
}

static int affix(jctx *cx, const jnode *at, jv self, jv *p, int end, jv *out) {
    if (!p) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: %s() takes at least 1 argument (0 given)", end ? "endswith" : "startswith");
    jv one[1];
    jv *cands = one;
    size_t nc = 1;
    if (p->k == JV_STR) one[0] = *p;
    else if (p->k == JV_LIST && JL(*p)->flavor == JL_TUPLE) {
        cands = JL(*p)->data;
        nc = JL(*p)->len;
    } else {
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: %s first arg must be str or a tuple of str, not %s",
                       end ? "endswith" : "startswith", jv_type_name(*p));
    }
    int hit = 0;
    for (size_t i = 0; i < nc && !hit; i++) {
        if (cands[i].k != JV_STR) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: tuple for %s must only contain str", end ? "endswith" : "startswith");
        size_t pl = JS(cands[i])->len, n = JS(self)->len;
        if (pl <= n) hit = !memcmp(JS(self)->s + (end ? n - pl : 0), JS(cands[i])->s, pl);
    }
    *out = jv_bool(hit);
    return 0;
}

static int str_replace(jctx *cx, const jnode *at, jv self, jv *old, jv *new_, jv *cnt, jv *out) {
    if (!old || !new_ || old->k != JV_STR || new_->k != JV_STR)
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: replace() arguments must be str");
    int64_t max = -1;
    if (cnt && cnt->k == JV_INT) max = cnt->u.i;
    const char *s = JS(self)->s, *o = JS(*old)->s, *nw = JS(*new_)->s;
    size_t n = JS(self)->len, ol = JS(*old)->len, nl = JS(*new_)->len;
    facet_str b = {0};
    int64_t done = 0;
    int rc = 0;
    if (ol == 0) {
        size_t i = 0;
        for (;;) {
            if (max < 0 || done < max) {
                rc |= facet_str_append(&b, nw, nl);
                done++;
            }
            if (i >= n) break;
            size_t k;
            cp_at(s, n, i, &k);
            rc |= facet_str_append(&b, s + i, k);
            i += k;
        }
    } else {
        size_t a = 0;
        for (;;) {
            const char *hit = (max < 0 || done < max) ? memmem(s + a, n - a, o, ol) : NULL;
            if (!hit) break;
            rc |= facet_str_append(&b, s + a, (size_t)(hit - (s + a)));
            rc |= facet_str_append(&b, nw, nl);
            a = (size_t)(hit - s) + ol;
            done++;
        }
        rc |= facet_str_append(&b, s + a, n - a);
    }
    if (rc) {
        facet_str_free(&b);
        return jx_fail(cx, at, FACET_E_NOMEM, "out of memory in replace()");
    }
    *out = jv_str_take(&b);
    return out->k == JV_STR ? 0 : oom(cx, at);
}

static int str_find(jctx *cx, const jnode *at, jv self, jv *sub, int rev, int count, jv *out) {
    if (!sub || sub->k != JV_STR)
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: must be str, not %s", sub ? jv_type_name(*sub) : "nothing");
    const char *s = JS(self)->s, *p = JS(*sub)->s;
    size_t n = JS(self)->len, pl = JS(*sub)->len;
    if (count) {
        if (pl == 0) {
            *out = jv_int(cp_count(s, n) + 1);
            return 0;
        }
        int64_t c = 0;
        size_t a = 0;
        const char *hit;
        while ((hit = memmem(s + a, n - a, p, pl))) {
            c++;
            a = (size_t)(hit - s) + pl;
        }
        *out = jv_int(c);
        return 0;
    }
    long pos = -1;
    if (!rev) {
        const char *hit = memmem(s, n, p, pl);
        if (hit) pos = cp_count(s, (size_t)(hit - s));
    } else {
        for (size_t a = n + 1; a-- > 0;)
            if (a + pl <= n && !memcmp(s + a, p, pl)) {
                pos = cp_count(s, a);
                break;
            }
    }
    *out = jv_int(pos);
    return 0;
}

static int str_is(jv self, const char *what) {
    const char *s = JS(self)->s;
    size_t n = JS(self)->len;
    if (!n && strcmp(what, "islower") && strcmp(what, "isupper")) return 0;
    int cased = 0;
    for (size_t i = 0; i < n;) {
        size_t k;
        int32_t cp = cp_at(s, n, i, &k);
        utf8proc_category_t c = utf8proc_category(cp);
        int alpha = c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
        int digit = c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NO || c == UTF8PROC_CATEGORY_NL;
        if (!strcmp(what, "isdigit") && !(c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NO)) return 0;
        if (!strcmp(what, "isalpha") && !alpha) return 0;
        if (!strcmp(what, "isalnum") && !alpha && !digit) return 0;
        if (!strcmp(what, "isspace") && !jpy_isspace(cp)) return 0;
        if (!strcmp(what, "islower") || !strcmp(what, "isupper")) {
            if (utf8proc_toupper(cp) != cp && !strcmp(what, "isupper")) return 0;
            if (utf8proc_tolower(cp) != cp && !strcmp(what, "islower")) return 0;
            if (is_cased(cp)) cased = 1;
        }
        i += k;
    }
    if (!strcmp(what, "islower") || !strcmp(what, "isupper")) return cased;
    return 1;
}

/* ------------------------------------------------------------ the methods ---- */

/* A method of self's type, called with m (m->mode: the row's mode); `name` is the
 * method's name for messages. 0 ok, -1 error (set through jx_fail). */
typedef int (*jmethod_fn)(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out);

static int m_strip(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out) { /* mode bits: 1 left, 2 right */
    jv *ch = jx_arg(m, 0, "chars");
    if (ch && ch->k != JV_NONE && ch->k != JV_STR)
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: %s arg must be None or str", name);
    size_t a, e;
    int has = ch && ch->k == JV_STR;
    jpy_strip(JS(self)->s, JS(self)->len, has ? JS(*ch)->s : NULL, has ? JS(*ch)->len : 0, m->mode & 1, (m->mode & 2) != 0, &a, &e);
    *out = jv_str(JS(self)->s + a, e - a);
    return out->k == JV_STR ? 0 : oom(cx, at);
}

static int m_split(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out) { /* mode 1: rsplit */
    (void)name;
    return do_split(cx, at, self, jx_arg(m, 0, "sep"), jx_arg(m, 1, "maxsplit"), m->mode, out);
}

static int m_splitlines(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out) {
    (void)name;
    jv *ke = jx_arg(m, 0, "keepends");
    *out = jpy_splitlines(JS(self)->s, JS(self)->len, ke && jv_truthy(*ke));
    return out->k == JV_LIST ? 0 : oom(cx, at);
}

static int m_affix(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out) { /* mode 1: endswith */
    (void)name;
    return affix(cx, at, self, jx_arg(m, 0, NULL), m->mode, out);
}

static int m_case(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out) { /* jpy_case mode */
    (void)name;
    *out = jpy_case(JS(self)->s, JS(self)->len, m->mode);
    return out->k == JV_STR ? 0 : oom(cx, at);
}

static int m_replace(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out) {
    (void)name;
    return str_replace(cx, at, self, jx_arg(m, 0, "old"), jx_arg(m, 1, "new"), jx_arg(m, 2, "count"), out);
}

static int m_find(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out) { /* 0 find, 1 rfind, 2 count */
    (void)name;
    return str_find(cx, at, self, jx_arg(m, 0, NULL), m->mode == 1, m->mode == 2, out);
}

static int m_join(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out) {
    (void)name;
    jv *it = jx_arg(m, 0, NULL);
    if (!it) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: join() takes exactly one argument");
    jv seq;
    if (jx_iterate(cx, at, *it, &seq)) return -1;
    facet_str b = {0};
    for (size_t i = 0; i < JL(seq)->len; i++) {
        jv x = JL(seq)->data[i];
        if (x.k != JV_STR) {
            jv_unref(seq);
            facet_str_free(&b);
            return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: sequence item %zu: expected str instance, %s found", i, jv_type_name(x));
        }
        if (i) facet_str_append(&b, JS(self)->s, JS(self)->len);
        facet_str_append(&b, JS(x)->s, JS(x)->len);
    }
    jv_unref(seq);
    *out = jv_str_take(&b);
    return out->k == JV_STR ? 0 : oom(cx, at);
}

static int m_format(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out) {
    (void)name;
    return jx_str_format(cx, at, self, m->a, m->n, m->kwn, m->kwv, m->nkw, out);
}

static int m_is(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out) {
    (void)cx, (void)at, (void)m;
    *out = jv_bool(str_is(self, name));
    return 0;
}

static int m_get(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out) {
    (void)name;
    jv *k = jx_arg(m, 0, NULL), *def = jx_arg(m, 1, NULL);
    if (!k) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: get expected at least 1 argument, got 0");
    if (!jv_hashable(*k)) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: unhashable type: '%s'", jv_type_name(*k));
    jv *v = jv_dict_get(self, *k);
    *out = v ? jv_ref(*v) : def ? jv_ref(*def) : jv_none();
    return 0;
}

static int m_copy(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out) {
    (void)name, (void)m;
    jdict *d = JD(self);
    jv c = jv_dict_new(0);
    for (size_t i = 0; c.k == JV_DICT && i < d->n; i++)
        if (jv_dict_set(c, jv_ref(d->key[i]), jv_ref(d->val[i]))) {
            jv_unref(c);
            c = jv_none();
        }
    *out = c;
    return c.k == JV_DICT ? 0 : oom(cx, at);
}

/* keys(), values(), items(): mode is the view's list flavor. */
static int m_view(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out) {
    (void)name;
    jdict *d = JD(self);
    jv l = jv_list_new(m->mode);
    if (l.k != JV_LIST) return oom(cx, at);
    for (size_t i = 0; i < d->n; i++) {
        jv item;
        if (m->mode == JL_KEYS) item = jv_ref(d->key[i]);
        else if (m->mode == JL_VALUES) item = jv_ref(d->val[i]);
        else {
            item = jv_list_new(JL_TUPLE);
            if (item.k != JV_LIST || jv_list_push(item, jv_ref(d->key[i])) || jv_list_push(item, jv_ref(d->val[i]))) {
                jv_unref(item);
                jv_unref(l);
                return oom(cx, at);
            }
        }
        if (jv_list_push(l, item)) {
            jv_unref(l);
            return oom(cx, at);
        }
    }
    *out = l;
    return 0;
}

/* list.index(x) (mode 0) and list.count(x) (mode 1). */
static int m_index(jctx *cx, const jnode *at, jv self, const char *name, const jargs *m, jv *out) {
    jv *x = jx_arg(m, 0, NULL);
    if (!x) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: %s() takes exactly one argument (0 given)", name);
    int64_t c = 0, first = -1;
    for (size_t i = 0; i < JL(self)->len; i++)
        if (jv_equal(JL(self)->data[i], *x)) {
            if (first < 0) first = (int64_t)i;
            c++;
        }
    if (m->mode) *out = jv_int(c);
    else if (first < 0) return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: value is not in list");
    else *out = jv_int(first);
    return 0;
}

/* One table per receiver type, sorted by name (strcmp) for binary search. `kw` lists
 * the keyword arguments a method accepts (NULL: any, for str.format); fn NULL marks a
 * method Python has (and the immutable sandbox allows) that facet does not implement:
 * reaching one is an unsupported construct naming it, never an undefined value. */
typedef struct jmethod_row {
    const char *name;
    jmethod_fn fn;
    int mode;
    const char *const *kw;
} jmethod_row;

static const char *const KW_NONE[] = {NULL};
static const char *const KW_STRIP[] = {"chars", NULL};
static const char *const KW_SPLIT[] = {"sep", "maxsplit", NULL};
static const char *const KW_SPLITLINES[] = {"keepends", NULL};
static const char *const KW_REPLACE[] = {"old", "new", "count", NULL};

static const jmethod_row STR_METHODS[] = {
    {"capitalize", m_case, 2, KW_NONE},      {"casefold", NULL, 0, NULL},
    {"center", NULL, 0, NULL},               {"count", m_find, 2, KW_NONE},
    {"encode", NULL, 0, NULL},               {"endswith", m_affix, 1, KW_NONE},
    {"expandtabs", NULL, 0, NULL},           {"find", m_find, 0, KW_NONE},
    {"format", m_format, 0, NULL},           {"format_map", NULL, 0, NULL},
    {"index", NULL, 0, NULL},                {"isalnum", m_is, 0, KW_NONE},
    {"isalpha", m_is, 0, KW_NONE},           {"isascii", NULL, 0, NULL},
    {"isdecimal", NULL, 0, NULL},            {"isdigit", m_is, 0, KW_NONE},
    {"isidentifier", NULL, 0, NULL},         {"islower", m_is, 0, KW_NONE},
    {"isnumeric", NULL, 0, NULL},            {"isprintable", NULL, 0, NULL},
    {"isspace", m_is, 0, KW_NONE},           {"istitle", NULL, 0, NULL},
    {"isupper", m_is, 0, KW_NONE},           {"join", m_join, 0, KW_NONE},
    {"ljust", NULL, 0, NULL},                {"lower", m_case, 0, KW_NONE},
    {"lstrip", m_strip, 1, KW_STRIP},        {"maketrans", NULL, 0, NULL},
    {"partition", NULL, 0, NULL},            {"removeprefix", NULL, 0, NULL},
    {"removesuffix", NULL, 0, NULL},         {"replace", m_replace, 0, KW_REPLACE},
    {"rfind", m_find, 1, KW_NONE},           {"rindex", NULL, 0, NULL},
    {"rjust", NULL, 0, NULL},                {"rpartition", NULL, 0, NULL},
    {"rsplit", m_split, 1, KW_SPLIT},        {"rstrip", m_strip, 2, KW_STRIP},
    {"split", m_split, 0, KW_SPLIT},         {"splitlines", m_splitlines, 0, KW_SPLITLINES},
    {"startswith", m_affix, 0, KW_NONE},     {"strip", m_strip, 3, KW_STRIP},
    {"swapcase", NULL, 0, NULL},             {"title", m_case, 3, KW_NONE},
    {"translate", NULL, 0, NULL},            {"upper", m_case, 1, KW_NONE},
    {"zfill", NULL, 0, NULL},
};

static const jmethod_row DICT_METHODS[] = {
    {"copy", m_copy, 0, KW_NONE},          {"fromkeys", NULL, 0, NULL},
    {"get", m_get, 0, KW_NONE},            {"items", m_view, JL_ITEMS, KW_NONE},
    {"keys", m_view, JL_KEYS, KW_NONE},    {"values", m_view, JL_VALUES, KW_NONE},
};

/* lists and tuples; copy (unimplemented) is a list's only */
static const jmethod_row LIST_METHODS[] = {
    {"copy", NULL, 0, NULL},
    {"count", m_index, 1, KW_NONE},
    {"index", m_index, 0, KW_NONE},
};

#define ROWS(t) (t), sizeof(t) / sizeof((t)[0]), sizeof((t)[0])

static const jmethod_row *method_row(jv self, const char *name) {
    switch (self.k) {
    case JV_STR: return jx_table_find(ROWS(STR_METHODS), name);
    case JV_DICT: return jx_table_find(ROWS(DICT_METHODS), name);
    case JV_LIST: return JL_IS_SEQ(JL(self)) ? jx_table_find(ROWS(LIST_METHODS), name) : NULL;
    default: return NULL;
    }
}

int jx_method_tables_sorted(void) {
    return jx_table_sorted(ROWS(STR_METHODS)) && jx_table_sorted(ROWS(DICT_METHODS)) && jx_table_sorted(ROWS(LIST_METHODS));
}

int jx_unimplemented_method(jv self, const char *name) {
    const jmethod_row *row = method_row(self, name);
    return row && !row->fn && !(self.k == JV_LIST && JL(self)->flavor != JL_LIST);
}

int jx_has_method(jv self, const char *name) {
    const jmethod_row *row = method_row(self, name);
    return row && row->fn;
}

int jx_method(jctx *cx, const jnode *at, jv self, const char *name, jv *args, size_t nargs, char **kwn, jv *kwv,
              size_t nkw, jv *out, int *rc) {
    const jmethod_row *row = method_row(self, name);
    if (!row || !row->fn) return 0;
    jargs m = {args, nargs, kwn, kwv, nkw, row->mode};
    *rc = jx_check_kw(cx, at, row->kw, &m, name, "()");
    if (!*rc) *rc = row->fn(cx, at, self, name, &m, out);
    return 1;
}
