/*
 * jinja_filters.c — Jinja2's builtin filters (jinja2/filters.py, 3.1) that chat
 * templates use, plus transformers' `tojson` (json.dumps(ensure_ascii=False)).
 * Filters that return generators in Jinja2 (map, select, reject, selectattr,
 * rejectattr, unique, batch, items, reverse of a list) return JL_GEN lists here, so
 * `|length` on them fails and their truth value is always true, exactly as in Python.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "chat/jinja.h"

static int oom(jctx *cx, const jnode *at) { return jx_fail(cx, at, FACET_E_NOMEM, "out of memory"); }

/* str(v) as a new string value. */
static int soft_str(jctx *cx, const jnode *at, jv v, jv *out) {
    if (v.k == JV_STR) {
        *out = jv_ref(v);
        return 0;
    }
    facet_str b = {0};
    if (jx_str(cx, at, v, &b)) {
        facet_str_free(&b);
        return -1;
    }
    *out = jv_str_take(&b);
    return out->k == JV_STR ? 0 : oom(cx, at);
}

static int length_of(jctx *cx, const jnode *at, jv v, int64_t *n) {
    switch (v.k) {
    case JV_UNDEF: *n = 0; return 0;
    case JV_STR: {
        int64_t c = 0;
        for (size_t i = 0; i < JS(v)->len; i++)
            if (((unsigned char)JS(v)->s[i] & 0xC0) != 0x80) c++;
        *n = c;
        return 0;
    }
    case JV_LIST:
        if (JL(v)->flavor == JL_GEN) break;
        *n = (int64_t)JL(v)->len;
        return 0;
    case JV_DICT: *n = (int64_t)JD(v)->n; return 0;
    case JV_LOOP: *n = (int64_t)((jloop *)v.u.o)->items->len; return 0;
    default: break;
    }
    return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: object of type '%s' has no len()", jv_type_name(v));
}

/* Attribute lookup for map/selectattr/sort(attribute=): dotted paths, integer parts
 * index (jinja2.filters.make_attrgetter, environment.getitem). */
static int get_attr_path(jctx *cx, const jnode *at, jv item, jv attr, jv *out) {
    if (attr.k == JV_INT) return jx_getitem(cx, at, item, attr, out);
    if (attr.k != JV_STR) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: attribute must be a string or integer");
    jv cur = jv_ref(item);
    const char *p = JS(attr)->s;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        jv key;
        int digits = len > 0;
        for (size_t i = 0; i < len; i++)
            if (p[i] < '0' || p[i] > '9') digits = 0;
        if (digits) key = jv_int(strtoll(p, NULL, 10));
        else key = jv_str(p, len);
        jv nx;
        int rc = jx_getitem(cx, at, cur, key, &nx);
        jv_unref(key);
        jv_unref(cur);
        if (rc) return -1;
        cur = nx;
        if (!dot) break;
        p = dot + 1;
    }
    *out = cur;
    return 0;
}

/* What an item is judged by: its attribute path `attr` (the attribute= of sort,
 * unique, min, max, sum, join), or the item itself when attr is NULL. */
static int item_key(jctx *cx, const jnode *at, jv item, const jv *attr, jv *out) {
    if (attr) return get_attr_path(cx, at, item, *attr, out);
    *out = jv_ref(item);
    return 0;
}

/* The tail of a filter that built `res`: hand it to *out when rc is 0, else release
 * it. Returns 0 or -1. */
static int finish(int rc, jv res, jv *out) {
    if (rc) {
        jv_unref(res);
        return -1;
    }
    *out = res;
    return 0;
}

static int lower_if_str(jv v, int case_sensitive, jv *out) {
    if (v.k == JV_STR && !case_sensitive) {
        *out = jpy_case(JS(v)->s, JS(v)->len, 0);
        return out->k == JV_STR ? 0 : -1;
    }
    *out = jv_ref(v);
    return 0;
}

/* The key sort, min, max and unique compare: item_key, lower-cased when it is a string
 * and the comparison is not case_sensitive. */
static int compare_key(jctx *cx, const jnode *at, jv item, const jv *attr, int case_sensitive, jv *out) {
    jv k;
    if (item_key(cx, at, item, attr, &k)) return -1;
    int rc = lower_if_str(k, case_sensitive, out) ? oom(cx, at) : 0;
    jv_unref(k);
    return rc;
}

/* Stable merge sort of keys[] carrying vals[]; Python's sorted() is stable. */
static int sort_pairs(jctx *cx, const jnode *at, jv *keys, jv *vals, size_t n, int reverse) {
    if (n < 2) return 0;
    jv *tk = malloc(n * sizeof(jv)), *tv = malloc(n * sizeof(jv));
    if (!tk || !tv) {
        free(tk);
        free(tv);
        return oom(cx, at);
    }
    int rc = 0;
    for (size_t w = 1; w < n && !rc; w *= 2) {
        for (size_t lo = 0; lo < n && !rc; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                int lt;
                /* take right first only when strictly before left (stability) */
                if (reverse) rc = jx_less(cx, at, keys[i], keys[j], &lt);
                else rc = jx_less(cx, at, keys[j], keys[i], &lt);
                if (rc) break;
                if (lt) {
                    tk[o] = keys[j];
                    tv[o++] = vals[j++];
                } else {
                    tk[o] = keys[i];
                    tv[o++] = vals[i++];
                }
            }
            if (rc) break;
            while (i < mid) {
                tk[o] = keys[i];
                tv[o++] = vals[i++];
            }
            while (j < hi) {
                tk[o] = keys[j];
                tv[o++] = vals[j++];
            }
            memcpy(keys + lo, tk + lo, (hi - lo) * sizeof(jv));
            memcpy(vals + lo, tv + lo, (hi - lo) * sizeof(jv));
        }
    }
    free(tk);
    free(tv);
    return rc;
}

/* Apply a test by name to v with extra args (for select/reject/selectattr). */
static int run_test(jctx *cx, const jnode *at, jv *testname, jv v, jv *targs, size_t nt, int *res) {
    if (!testname) {
        *res = jv_truthy(v);
        return 0;
    }
    if (testname->k != JV_STR) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: test name must be a string");
    int rc = 0;
    if (!jx_test(cx, at, JS(*testname)->s, v, targs, nt, res, &rc))
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TemplateRuntimeError: No test named '%s'.", JS(*testname)->s);
    return rc;
}

/* The start of select/reject and map (jinja2: `if value:`): a falsy input gives an
 * empty generator in *out (returns 1); otherwise *seq holds the items and *res a new
 * empty generator (returns 0). -1 on error. */
static int gen_begin(jctx *cx, const jnode *at, jv in, jv *seq, jv *res, jv *out) {
    if (!jv_truthy(in)) {
        *out = jv_list_new(JL_GEN);
        return out->k == JV_LIST ? 1 : oom(cx, at);
    }
    if (jx_iterate(cx, at, in, seq)) return -1;
    *res = jv_list_new(JL_GEN);
    if (res->k == JV_LIST) return 0;
    jv_unref(*seq);
    return oom(cx, at);
}

/* select, reject, selectattr, rejectattr: mode bit 1 tests an attribute of each item,
 * bit 2 keeps the items that pass (select) instead of those that fail (reject). */
static int do_select(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    int attr = f->mode & 1, keep_if = (f->mode & 2) != 0;
    jv seq, res;
    int rc = gen_begin(cx, at, in, &seq, &res, out);
    if (rc) return rc < 0 ? -1 : 0;
    size_t base = attr ? 1 : 0;
    if (attr && f->n < 1)
        rc = jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: selectattr/rejectattr need an attribute name");
    jv *testname = f->n > base ? &f->a[base] : NULL;
    jv *targs = f->n > base + 1 ? &f->a[base + 1] : NULL;
    size_t nt = f->n > base + 1 ? f->n - base - 1 : 0;
    for (size_t i = 0; i < JL(seq)->len && !rc; i++) {
        jv item = JL(seq)->data[i], probe;
        int r;
        if ((rc = item_key(cx, at, item, attr ? &f->a[0] : NULL, &probe))) break;
        rc = run_test(cx, at, testname, probe, targs, nt, &r);
        jv_unref(probe);
        if (!rc && r == keep_if && jv_list_push(res, jv_ref(item))) rc = oom(cx, at);
    }
    jv_unref(seq);
    return finish(rc, res, out);
}

static int do_map(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    jv seq, res;
    int rc = gen_begin(cx, at, in, &seq, &res, out);
    if (rc) return rc < 0 ? -1 : 0;
    jv *attr = jx_arg(f, 99, "attribute"), *def = jx_arg(f, 99, "default");
    if (!attr && (f->n < 1 || f->a[0].k != JV_STR))
        rc = jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: map requires a filter name or attribute=");
    for (size_t i = 0; i < JL(seq)->len && !rc; i++) {
        jv item = JL(seq)->data[i], r;
        if (attr) {
            rc = get_attr_path(cx, at, item, *attr, &r);
            if (!rc && r.k == JV_UNDEF && def) {
                jv_unref(r);
                r = jv_ref(*def);
            }
        } else {
            const char *fname = JS(f->a[0])->s;
            if (!jx_filter(cx, at, fname, item, f->a + 1, f->n - 1, f->kwn, f->kwv, f->nkw, &r, &rc))
                rc = jx_fail(cx, at, FACET_E_TEMPLATE, "TemplateRuntimeError: No filter named '%s'.", fname);
        }
        if (!rc && jv_list_push(res, r)) rc = oom(cx, at);
    }
    jv_unref(seq);
    return finish(rc, res, out);
}

static int do_escape(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    (void)f;
    jv s;
    if (soft_str(cx, at, in, &s)) return -1;
    facet_str b = {0};
    int rc = 0;
    for (size_t i = 0; i < JS(s)->len && !rc; i++) {
        char c = JS(s)->s[i];
        switch (c) {
        case '&': rc = facet_str_appendz(&b, "&amp;"); break;
        case '<': rc = facet_str_appendz(&b, "&lt;"); break;
        case '>': rc = facet_str_appendz(&b, "&gt;"); break;
        case '"': rc = facet_str_appendz(&b, "&#34;"); break;
        case '\'': rc = facet_str_appendz(&b, "&#39;"); break;
        default: rc = facet_str_putc(&b, c);
        }
    }
    jv_unref(s);
    if (rc) {
        facet_str_free(&b);
        return oom(cx, at);
    }
    *out = jv_str_take(&b);
    return out->k == JV_STR ? 0 : oom(cx, at);
}

static int do_indent(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    if (in.k == JV_UNDEF) return jx_undef_error(cx, at, in);
    if (in.k != JV_STR) /* jinja2 do_indent: s += "\n" */
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: unsupported operand type(s) for +=: '%s' and 'str'", jv_type_name(in));
    jv *w = jx_arg(f, 0, "width"), *first = jx_arg(f, 1, "first"), *blank = jx_arg(f, 2, "blank");
    facet_str ind = {0};
    if (w && w->k == JV_STR) facet_str_append(&ind, JS(*w)->s, JS(*w)->len);
    else {
        int64_t n = 4;
        if (w && (w->k == JV_INT || w->k == JV_BOOL)) n = w->k == JV_INT ? w->u.i : w->u.b;
        else if (w) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: indent width must be an integer or string");
        if (n > 10000) return jx_fail(cx, at, FACET_E_LIMIT, "indent width %lld too large", (long long)n);
        for (int64_t i = 0; i < n; i++) facet_str_putc(&ind, ' ');
    }
    jv s;
    if (soft_str(cx, at, in, &s)) {
        facet_str_free(&ind);
        return -1;
    }
    facet_str tmp = {0};
    facet_str_append(&tmp, JS(s)->s, JS(s)->len);
    facet_str_putc(&tmp, '\n'); /* Jinja's quirk: s += "\n" before splitlines */
    jv_unref(s);
    jv lines = tmp.failed || ind.failed ? jv_none() : jpy_splitlines(facet_str_cstr(&tmp), tmp.len, 0);
    facet_str_free(&tmp);
    if (lines.k != JV_LIST) {
        facet_str_free(&ind);
        return oom(cx, at);
    }
    facet_str b = {0};
    jlist *L = JL(lines);
    const char *is = facet_str_cstr(&ind);
    int indent_blank = blank && jv_truthy(*blank);
    if (first && jv_truthy(*first)) facet_str_appendz(&b, is);
    for (size_t i = 0; i < L->len; i++) {
        if (i) {
            facet_str_putc(&b, '\n');
            if (indent_blank || JS(L->data[i])->len) facet_str_appendz(&b, is);
        }
        facet_str_append(&b, JS(L->data[i])->s, JS(L->data[i])->len);
    }
    jv_unref(lines);
    facet_str_free(&ind);
    *out = jv_str_take(&b);
    return out->k == JV_STR ? 0 : oom(cx, at);
}

/* Python round(x, ndigits) for floats: exact decimal rounding, half to even. */
static double py_round(double x, int64_t nd) {
    if (!isfinite(x)) return x;
    if (nd > 300) return x;
    if (nd < -308) return 0.0 * x;
    if (nd >= 0) {
        char buf[512];
        snprintf(buf, sizeof buf, "%.*f", (int)nd, x);
        return strtod(buf, NULL);
    }
    double p = pow(10.0, (double)-nd);
    double y = x / p;
    double r = nearbyint(y);
    return r * p;
}

static int do_int(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    jv *def = jx_arg(f, 0, "default"), *base = jx_arg(f, 1, "base");
    int b = 10;
    if (base && base->k == JV_INT) b = (int)base->u.i;
    switch (in.k) {
    case JV_INT: case JV_BIGINT: *out = jv_ref(in); return 0;
    case JV_BOOL: *out = jv_int(in.u.b); return 0;
    case JV_FLOAT:
        if (!isfinite(in.u.f)) return jx_fail(cx, at, FACET_E_TEMPLATE, "OverflowError: cannot convert float infinity or NaN to integer");
        if (fabs(in.u.f) >= 9.2e18) return jx_fail(cx, at, FACET_E_LIMIT, "integer beyond 64 bits");
        *out = jv_int((int64_t)in.u.f);
        return 0;
    case JV_STR: {
        size_t a, e;
        jpy_strip(JS(in)->s, JS(in)->len, NULL, 0, 1, 1, &a, &e);
        char buf[128];
        size_t k = 0;
        for (size_t i = a; i < e && k < sizeof buf - 1; i++)
            if (JS(in)->s[i] != '_') buf[k++] = JS(in)->s[i];
        buf[k] = 0;
        if (k && e - a < sizeof buf) {
            char *end;
            errno = 0;
            long long v = strtoll(buf, &end, b);
            if (!*end && !errno && !(buf[0] == ' ')) {
                *out = jv_int(v);
                return 0;
            }
            double d = strtod(buf, &end);
            if (!*end && isfinite(d) && fabs(d) < 9.2e18 && strchr("+-.0123456789", buf[0])) {
                *out = jv_int((int64_t)d);
                return 0;
            }
        }
        break;
    }
    default: break;
    }
    *out = def ? jv_ref(*def) : jv_int(0);
    return 0;
}

static int do_float(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    (void)cx;
    (void)at;
    jv *def = jx_arg(f, 0, "default");
    switch (in.k) {
    case JV_INT: *out = jv_float((double)in.u.i); return 0;
    case JV_BIGINT: *out = jv_float(strtod(JS(in)->s, NULL)); return 0; /* rounded, as float() */
    case JV_BOOL: *out = jv_float(in.u.b); return 0;
    case JV_FLOAT: *out = in; return 0;
    case JV_STR: {
        size_t a, e;
        jpy_strip(JS(in)->s, JS(in)->len, NULL, 0, 1, 1, &a, &e);
        char buf[128];
        if (e > a && e - a < sizeof buf) {
            memcpy(buf, JS(in)->s + a, e - a);
            buf[e - a] = 0;
            char *end;
            double d = strtod(buf, &end);
            if (!*end && !strchr(buf, 'x') && !strchr(buf, 'X')) {
                *out = jv_float(d);
                return 0;
            }
        }
        break;
    }
    default: break;
    }
    *out = def ? jv_ref(*def) : jv_float(0.0);
    return 0;
}

static int do_minmax(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) { /* mode 1: max */
    int want_max = f->mode;
    jv *cs = jx_arg(f, 0, "case_sensitive"), *attr = jx_arg(f, 1, "attribute");
    jv seq;
    if (jx_iterate(cx, at, in, &seq)) return -1;
    if (JL(seq)->len == 0) {
        jv_unref(seq);
        *out = jv_undef_hint("No aggregated item, sequence was empty.");
        return 0;
    }
    size_t best = 0;
    jv bestk = jv_undef();
    int rc = 0;
    for (size_t i = 0; i < JL(seq)->len && !rc; i++) {
        jv kk;
        if ((rc = compare_key(cx, at, JL(seq)->data[i], attr, cs && jv_truthy(*cs), &kk))) break;
        if (i == 0) {
            bestk = kk;
            continue;
        }
        int lt;
        rc = want_max ? jx_less(cx, at, bestk, kk, &lt) : jx_less(cx, at, kk, bestk, &lt);
        if (!rc && lt) {
            jv_unref(bestk);
            bestk = kk;
            best = i;
        } else {
            jv_unref(kk);
        }
    }
    jv_unref(bestk);
    if (!rc) *out = jv_ref(JL(seq)->data[best]);
    jv_unref(seq);
    return rc;
}

static int do_sort(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) { /* mode 1: dictsort */
    int dictsort = f->mode;
    jv seq;
    int reverse, cs;
    jv *attr = NULL;
    int by_value = 0;
    if (dictsort) {
        jv *c = jx_arg(f, 0, "case_sensitive"), *by = jx_arg(f, 1, "by"), *r = jx_arg(f, 2, "reverse");
        cs = c && jv_truthy(*c);
        reverse = r && jv_truthy(*r);
        if (by) {
            if (by->k == JV_STR && !strcmp(JS(*by)->s, "value")) by_value = 1;
            else if (!(by->k == JV_STR && !strcmp(JS(*by)->s, "key")))
                return jx_fail(cx, at, FACET_E_TEMPLATE, "FilterArgumentError: You can only sort by either \"key\" or \"value\"");
        }
        if (in.k != JV_DICT) return jx_fail(cx, at, FACET_E_TEMPLATE, "AttributeError: '%s' object has no attribute 'items'", jv_type_name(in));
        seq = jv_list_new(JL_LIST);
        if (seq.k != JV_LIST) return oom(cx, at);
        for (size_t i = 0; i < JD(in)->n; i++) {
            jv t = jv_list_new(JL_TUPLE);
            if (t.k != JV_LIST || jv_list_push(t, jv_ref(JD(in)->key[i])) || jv_list_push(t, jv_ref(JD(in)->val[i])) ||
                jv_list_push(seq, t)) {
                jv_unref(seq);
                return oom(cx, at);
            }
        }
    } else {
        jv *r = jx_arg(f, 0, "reverse"), *c = jx_arg(f, 1, "case_sensitive");
        attr = jx_arg(f, 2, "attribute");
        reverse = r && jv_truthy(*r);
        cs = c && jv_truthy(*c);
        jv it;
        if (jx_iterate(cx, at, in, &it)) return -1;
        seq = jv_list_new(JL_LIST);
        for (size_t i = 0; seq.k == JV_LIST && i < JL(it)->len; i++)
            if (jv_list_push(seq, jv_ref(JL(it)->data[i]))) {
                jv_unref(seq);
                seq = jv_none();
            }
        jv_unref(it);
        if (seq.k != JV_LIST) return oom(cx, at);
    }
    size_t n = JL(seq)->len;
    jv *keys = calloc(n + 1, sizeof(jv));
    if (!keys) {
        jv_unref(seq);
        return oom(cx, at);
    }
    int rc = 0;
    size_t made = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        jv item = JL(seq)->data[i];
        if (dictsort) item = JL(item)->data[by_value]; /* a (key, value) pair; attr is NULL */
        if (!(rc = compare_key(cx, at, item, attr, cs, &keys[i]))) made++;
    }
    if (!rc) rc = sort_pairs(cx, at, keys, JL(seq)->data, n, reverse);
    for (size_t i = 0; i < made; i++) jv_unref(keys[i]);
    free(keys);
    return finish(rc, seq, out);
}

static int do_unique(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    jv *c = jx_arg(f, 0, "case_sensitive"), *attr = jx_arg(f, 1, "attribute");
    jv seq;
    if (jx_iterate(cx, at, in, &seq)) return -1;
    jv res = jv_list_new(JL_GEN), seen = jv_list_new(JL_LIST);
    int rc = (res.k != JV_LIST || seen.k != JV_LIST) ? oom(cx, at) : 0;
    for (size_t i = 0; i < JL(seq)->len && !rc; i++) {
        jv kk;
        if ((rc = compare_key(cx, at, JL(seq)->data[i], attr, c && jv_truthy(*c), &kk))) break;
        int dup = 0;
        for (size_t j = 0; j < JL(seen)->len && !dup; j++) dup = jv_equal(JL(seen)->data[j], kk);
        if (dup) jv_unref(kk);
        else if (jv_list_push(seen, kk) || jv_list_push(res, jv_ref(JL(seq)->data[i]))) rc = oom(cx, at);
    }
    jv_unref(seq);
    jv_unref(seen);
    return finish(rc, res, out);
}

static int do_join(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    jv *d = jx_arg(f, 0, "d"), *attr = jx_arg(f, 1, "attribute");
    jv seq;
    if (jx_iterate(cx, at, in, &seq)) return -1;
    jv sep;
    if (!d) sep = jv_cstr("");
    if (d && soft_str(cx, at, *d, &sep)) {
        jv_unref(seq);
        return -1;
    }
    facet_str b = {0};
    int rc = 0;
    for (size_t i = 0; i < JL(seq)->len && !rc; i++) {
        jv x;
        if ((rc = item_key(cx, at, JL(seq)->data[i], attr, &x))) break;
        if (i && facet_str_append(&b, JS(sep)->s, JS(sep)->len)) rc = oom(cx, at);
        if (!rc) rc = jx_str(cx, at, x, &b);
        jv_unref(x);
    }
    jv_unref(seq);
    jv_unref(sep);
    if (rc) {
        facet_str_free(&b);
        return -1;
    }
    *out = jv_str_take(&b);
    return out->k == JV_STR ? 0 : oom(cx, at);
}

static int do_tojson(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    /* transformers: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False) */
    jv *ea = jx_arg(f, 0, "ensure_ascii"), *ind = jx_arg(f, 1, "indent"), *sep = jx_arg(f, 2, "separators"), *sk = jx_arg(f, 3, "sort_keys");
    jjson_opts o = {-1, ea && jv_truthy(*ea), sk && jv_truthy(*sk), NULL, NULL};
    if (sep && sep->k != JV_NONE) {
        if (sep->k != JV_LIST || JL(*sep)->len != 2 || JL(*sep)->data[0].k != JV_STR || JL(*sep)->data[1].k != JV_STR)
            return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: separators must be a (item_separator, key_separator) pair of strings");
        o.item_sep = JS(JL(*sep)->data[0])->s;
        o.key_sep = JS(JL(*sep)->data[1])->s;
    }
    int indent = -1;
    if (ind && ind->k != JV_NONE) {
        if (ind->k != JV_INT && ind->k != JV_BOOL)
            return jx_fail(cx, at, FACET_E_UNSUPPORTED, "unsupported construct: tojson indent of type %s", jv_type_name(*ind));
        int64_t v = ind->k == JV_INT ? ind->u.i : ind->u.b;
        if (v > 64) return jx_fail(cx, at, FACET_E_LIMIT, "tojson indent %lld too large", (long long)v);
        indent = v < 0 ? 0 : (int)v;
    }
    o.indent = indent;
    facet_str b = {0};
    b.limit = jx_max_output(cx); /* a list holding itself n deep serializes to 2^n */
    const char *why = NULL;
    if (jv_tojson_opts(&b, in, &o, &why)) {
        int over = b.failed == FACET_STR_OVER;
        facet_str_free(&b);
        if (why) return jx_fail(cx, at, FACET_E_TEMPLATE, "%s", why);
        if (over)
            return jx_fail(cx, at, FACET_E_LIMIT, "tojson output exceeds the output limit of %zu bytes",
                           jx_max_output(cx));
        return oom(cx, at);
    }
    *out = jv_str_take(&b);
    return out->k == JV_STR ? 0 : oom(cx, at);
}

static int do_batch(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    jv *cnt = jx_arg(f, 0, "linecount"), *fill = jx_arg(f, 1, "fill_with");
    if (!cnt || cnt->k != JV_INT || cnt->u.i <= 0)
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: batch linecount must be a positive integer");
    jv seq;
    if (jx_iterate(cx, at, in, &seq)) return -1;
    jv res = jv_list_new(JL_GEN), cur = jv_none();
    int rc = res.k == JV_LIST ? 0 : oom(cx, at);
    for (size_t i = 0; i < JL(seq)->len && !rc; i++) {
        if (cur.k != JV_LIST) {
            cur = jv_list_new(JL_LIST);
            if (cur.k != JV_LIST) rc = oom(cx, at);
        }
        if (!rc && jv_list_push(cur, jv_ref(JL(seq)->data[i]))) rc = oom(cx, at);
        if (!rc && (int64_t)JL(cur)->len == cnt->u.i) {
            if (jv_list_push(res, cur)) rc = oom(cx, at);
            cur = jv_none();
        }
    }
    if (!rc && cur.k == JV_LIST) {
        while (fill && (int64_t)JL(cur)->len < cnt->u.i && !rc)
            if (jv_list_push(cur, jv_ref(*fill))) rc = oom(cx, at);
        if (jv_list_push(res, cur)) rc = oom(cx, at);
        cur = jv_none();
    }
    jv_unref(cur);
    jv_unref(seq);
    return finish(rc, res, out);
}

static int do_sum(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    jv *attr = jx_arg(f, 0, "attribute"), *start = jx_arg(f, 1, "start");
    jv seq;
    if (jx_iterate(cx, at, in, &seq)) return -1;
    jv acc = start ? jv_ref(*start) : jv_int(0);
    int rc = 0;
    for (size_t i = 0; i < JL(seq)->len && !rc; i++) {
        jv x;
        if ((rc = item_key(cx, at, JL(seq)->data[i], attr, &x))) break;
        int nacc = acc.k == JV_INT || acc.k == JV_BOOL || acc.k == JV_FLOAT;
        int nx = x.k == JV_INT || x.k == JV_BOOL || x.k == JV_FLOAT;
        if (!nacc || !nx) {
            rc = jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: unsupported operand type(s) for +: '%s' and '%s'", jv_type_name(acc), jv_type_name(x));
        } else if (acc.k != JV_FLOAT && x.k != JV_FLOAT) {
            int64_t a = acc.k == JV_INT ? acc.u.i : acc.u.b, b = x.k == JV_INT ? x.u.i : x.u.b, r;
            if (__builtin_add_overflow(a, b, &r)) rc = jx_fail(cx, at, FACET_E_LIMIT, "sum exceeds 64 bits");
            acc = jv_int(r);
        } else {
            double a = acc.k == JV_FLOAT ? acc.u.f : acc.k == JV_INT ? (double)acc.u.i : acc.u.b;
            double b = x.k == JV_FLOAT ? x.u.f : x.k == JV_INT ? (double)x.u.i : x.u.b;
            acc = jv_float(a + b);
        }
        jv_unref(x);
    }
    jv_unref(seq);
    return finish(rc, acc, out);
}

static int wordcount(jv s) {
    int c = 0, inword = 0;
    for (size_t i = 0; i < JS(s)->len;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)JS(s)->s + i, (utf8proc_ssize_t)(JS(s)->len - i), &cp);
        if (k <= 0) {
            k = 1;
            cp = 0xFFFD;
        }
        utf8proc_category_t cat = utf8proc_category(cp);
        int w = cp == '_' || (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
                (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
        if (w && !inword) c++;
        inword = w;
        i += (size_t)k;
    }
    return c;
}

static int do_trim(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    jv *chars = jx_arg(f, 0, "chars");
    jv s;
    if (soft_str(cx, at, in, &s)) return -1;
    size_t a, e;
    int has = chars && chars->k == JV_STR;
    jpy_strip(JS(s)->s, JS(s)->len, has ? JS(*chars)->s : NULL, has ? JS(*chars)->len : 0, 1, 1, &a, &e);
    *out = jv_str(JS(s)->s + a, e - a);
    jv_unref(s);
    return out->k == JV_STR ? 0 : oom(cx, at);
}

static int do_length(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    (void)f;
    int64_t n = 0;
    if (length_of(cx, at, in, &n)) return -1;
    *out = jv_int(n);
    return 0;
}

static int do_first(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) { /* mode 1: last */
    int last = f->mode;
    if (last && in.k == JV_LIST && JL(in)->flavor == JL_GEN)
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: 'generator' object is not reversible");
    jv seq;
    if (jx_iterate(cx, at, in, &seq)) return -1;
    size_t n = JL(seq)->len;
    *out = n ? jv_ref(JL(seq)->data[last ? n - 1 : 0]) : jv_undef_hint("No %s item, sequence was empty.", last ? "last" : "first");
    jv_unref(seq);
    return 0;
}

static int do_default(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    jv *dv = jx_arg(f, 0, "default_value"), *boolean = jx_arg(f, 1, "boolean");
    int use = in.k == JV_UNDEF || (boolean && jv_truthy(*boolean) && !jv_truthy(in));
    if (!use) *out = jv_ref(in);
    else if (dv) *out = jv_ref(*dv);
    else if ((*out = jv_cstr("")).k != JV_STR) return oom(cx, at);
    return 0;
}

/* upper, lower, capitalize, title: mode is jpy_case's mode. */
static int do_case(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    jv s;
    if (soft_str(cx, at, in, &s)) return -1;
    *out = jpy_case(JS(s)->s, JS(s)->len, f->mode);
    jv_unref(s);
    return out->k == JV_STR ? 0 : oom(cx, at);
}

static int do_replace(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    jv *old = jx_arg(f, 0, "old"), *nw = jx_arg(f, 1, "new"), *cnt = jx_arg(f, 2, "count");
    jv s, o, n2;
    if (soft_str(cx, at, in, &s)) return -1;
    if (!old || !nw) {
        jv_unref(s);
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: replace filter needs old and new");
    }
    if (soft_str(cx, at, *old, &o)) {
        jv_unref(s);
        return -1;
    }
    if (soft_str(cx, at, *nw, &n2)) {
        jv_unref(s);
        jv_unref(o);
        return -1;
    }
    jv margs[3] = {o, n2, cnt ? *cnt : jv_none()};
    int rc = 0;
    jx_method(cx, at, s, "replace", margs, cnt ? 3 : 2, NULL, NULL, 0, out, &rc);
    jv_unref(s);
    jv_unref(o);
    jv_unref(n2);
    return rc;
}

/* string, safe (facet does not autoescape: both are str()). */
static int do_string(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    (void)f;
    return soft_str(cx, at, in, out);
}

/* A copy of items[0..n) as a new list of the given flavor, in reverse order when asked. */
static int list_copy(jctx *cx, const jnode *at, const jv *items, size_t n, int flavor, int reversed, jv *out) {
    jv l = jv_list_new(flavor);
    for (size_t i = 0; l.k == JV_LIST && i < n; i++)
        if (jv_list_push(l, jv_ref(items[reversed ? n - 1 - i : i]))) {
            jv_unref(l);
            l = jv_none();
        }
    if (l.k != JV_LIST) return oom(cx, at);
    *out = l;
    return 0;
}

static int do_list(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    (void)f;
    jv seq;
    if (jx_iterate(cx, at, in, &seq)) return -1;
    if (JL(seq)->flavor == JL_LIST) {
        *out = seq;
        return 0;
    }
    int rc = list_copy(cx, at, JL(seq)->data, JL(seq)->len, JL_LIST, 0, out);
    jv_unref(seq);
    return rc;
}

static int do_items(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    (void)f;
    if (in.k == JV_UNDEF) {
        *out = jv_list_new(JL_GEN);
        return out->k == JV_LIST ? 0 : oom(cx, at);
    }
    if (in.k != JV_DICT) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: Can only get item pairs from a mapping.");
    int rc = 0;
    if (!jx_method(cx, at, in, "items", NULL, 0, NULL, NULL, 0, out, &rc)) return jx_fail(cx, at, FACET_E_INTERNAL, "dict.items missing");
    if (rc) return -1;
    JL(*out)->flavor = JL_GEN;
    return 0;
}

static int do_round(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    jv *prec = jx_arg(f, 0, "precision"), *method = jx_arg(f, 1, "method");
    int64_t p = prec && prec->k == JV_INT ? prec->u.i : 0;
    const char *m = method && method->k == JV_STR ? JS(*method)->s : "common";
    if (in.k != JV_INT && in.k != JV_FLOAT && in.k != JV_BOOL)
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: type %s doesn't define __round__ method", jv_type_name(in));
    double x = in.k == JV_FLOAT ? in.u.f : in.k == JV_INT ? (double)in.u.i : in.u.b;
    if (!strcmp(m, "common")) {
        if (in.k != JV_FLOAT) *out = jv_int(in.k == JV_INT ? in.u.i : in.u.b);
        else *out = jv_float(py_round(x, p));
    } else if (!strcmp(m, "ceil") || !strcmp(m, "floor")) {
        double sc = pow(10.0, (double)p);
        *out = jv_float((m[0] == 'c' ? ceil(x * sc) : floor(x * sc)) / sc);
    } else {
        return jx_fail(cx, at, FACET_E_TEMPLATE, "FilterArgumentError: method must be common, ceil or floor");
    }
    return 0;
}

static int do_abs(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    (void)f;
    if (in.k == JV_INT) {
        if (in.u.i == INT64_MIN) return jx_fail(cx, at, FACET_E_LIMIT, "abs exceeds 64 bits");
        *out = jv_int(in.u.i < 0 ? -in.u.i : in.u.i);
    } else if (in.k == JV_BOOL) *out = jv_int(in.u.b);
    else if (in.k == JV_FLOAT) *out = jv_float(fabs(in.u.f));
    else return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: bad operand type for abs(): '%s'", jv_type_name(in));
    return 0;
}

static int do_reverse(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    (void)f;
    jv seq;
    if (in.k == JV_STR) {
        if (jx_iterate(cx, at, in, &seq)) return -1;
        facet_str b = {0};
        for (size_t i = JL(seq)->len; i-- > 0;) facet_str_append(&b, JS(JL(seq)->data[i])->s, JS(JL(seq)->data[i])->len);
        jv_unref(seq);
        *out = jv_str_take(&b);
        return out->k == JV_STR ? 0 : oom(cx, at);
    }
    if (in.k == JV_LIST && JL(in)->flavor == JL_GEN)
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: argument to reversed() must be a sequence");
    if (jx_iterate(cx, at, in, &seq)) return -1;
    int rc = list_copy(cx, at, JL(seq)->data, JL(seq)->len, JL_GEN, 1, out);
    jv_unref(seq);
    return rc;
}

static int do_wordcount(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    (void)f;
    jv s;
    if (soft_str(cx, at, in, &s)) return -1;
    *out = jv_int(wordcount(s));
    jv_unref(s);
    return 0;
}

static int do_format(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) { /* jinja2 do_format: value % (args or kwargs) */
    jv s;
    if (soft_str(cx, at, in, &s)) return -1;
    if (f->n && f->nkw) {
        jv_unref(s);
        return jx_fail(cx, at, FACET_E_TEMPLATE, "FilterArgumentError: can't handle positional and keyword arguments at the same time");
    }
    jv a = jv_list_new(f->nkw ? JL_LIST : JL_TUPLE);
    if (f->nkw) {
        jv_unref(a);
        a = jv_dict_new(0);
        for (size_t k = 0; a.k == JV_DICT && k < f->nkw; k++)
            if (jv_dict_set(a, jv_cstr(f->kwn[k]), jv_ref(f->kwv[k]))) a = jv_none();
    } else {
        for (size_t k = 0; a.k == JV_LIST && k < f->n; k++)
            if (jv_list_push(a, jv_ref(f->a[k]))) a = jv_none();
    }
    int rc = a.k == JV_NONE ? oom(cx, at) : jx_printf_format(cx, at, s, a, out);
    jv_unref(a);
    jv_unref(s);
    return rc;
}

static int do_center(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    jv *w = jx_arg(f, 0, "width");
    jv s;
    if (soft_str(cx, at, in, &s)) return -1;
    int64_t width = w && w->k == JV_INT ? w->u.i : 80;
    size_t len = 0;
    for (size_t i = 0; i < JS(s)->len; i++)
        if (((unsigned char)JS(s)->s[i] & 0xC0) != 0x80) len++;
    if (width > 100000) {
        jv_unref(s);
        return jx_fail(cx, at, FACET_E_LIMIT, "center width too large");
    }
    facet_str b = {0};
    if (width > (int64_t)len) { /* CPython str.center: extra space goes right unless odd total */
        size_t marg = (size_t)width - len, left = marg / 2 + (marg & (size_t)width & 1);
        for (size_t i = 0; i < left; i++) facet_str_putc(&b, ' ');
        facet_str_append(&b, JS(s)->s, JS(s)->len);
        for (size_t i = 0; i < marg - left; i++) facet_str_putc(&b, ' ');
    } else {
        facet_str_append(&b, JS(s)->s, JS(s)->len);
    }
    jv_unref(s);
    *out = jv_str_take(&b);
    return out->k == JV_STR ? 0 : oom(cx, at);
}

static int do_attr(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out) {
    jv *nm = jx_arg(f, 0, "name");
    if (!nm || nm->k != JV_STR) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: attr filter needs a name");
    if (in.k != JV_DICT) return jx_getattr(cx, at, in, JS(*nm)->s, out);
    if (jx_has_method(in, JS(*nm)->s)) *out = jv_func(JS(*nm)->s, jv_ref(in));
    else *out = jv_undef_hint("'dict object' has no attribute '%s'", JS(*nm)->s);
    return 0;
}

/* ------------------------------------------------------------ the table ---- */

typedef int (*jfilter_fn)(jctx *cx, const jnode *at, jv in, const jargs *f, jv *out);

/* One row per filter name: Jinja2 3.1's builtins (jinja2/filters.py FILTERS) plus
 * transformers' tojson. `kw` lists the keyword arguments the filter accepts (Jinja2's
 * parameter names; NULL: any, for filters that pass keywords on); fn NULL marks a
 * builtin facet does not implement, which fails as an unsupported construct naming it
 * (the parser accepts every name here and rejects the rest, as Jinja2's compiler does).
 * Sorted by name (strcmp) for binary search; test_chat_jinja checks the order. */
typedef struct jfilter_row {
    const char *name;
    jfilter_fn fn;
    int mode; /* jargs.mode */
    const char *const *kw;
} jfilter_row;

static const char *const KW_NONE[] = {NULL};
static const char *const KW_ATTR[] = {"name", NULL};
static const char *const KW_BATCH[] = {"linecount", "fill_with", NULL};
static const char *const KW_CENTER[] = {"width", NULL};
static const char *const KW_DEFAULT[] = {"default_value", "boolean", NULL};
static const char *const KW_DICTSORT[] = {"case_sensitive", "by", "reverse", NULL};
static const char *const KW_FLOAT[] = {"default", NULL};
static const char *const KW_INDENT[] = {"width", "first", "blank", NULL};
static const char *const KW_INT[] = {"default", "base", NULL};
static const char *const KW_JOIN[] = {"d", "attribute", NULL};
static const char *const KW_MINMAX[] = {"case_sensitive", "attribute", NULL}; /* also unique */
static const char *const KW_REPLACE[] = {"old", "new", "count", NULL};
static const char *const KW_ROUND[] = {"precision", "method", NULL};
static const char *const KW_SORT[] = {"reverse", "case_sensitive", "attribute", NULL};
static const char *const KW_SUM[] = {"attribute", "start", NULL};
static const char *const KW_TOJSON[] = {"ensure_ascii", "indent", "separators", "sort_keys", NULL};
static const char *const KW_TRIM[] = {"chars", NULL};

static const jfilter_row FILTERS[] = {
    {"abs", do_abs, 0, KW_NONE},
    {"attr", do_attr, 0, KW_ATTR},
    {"batch", do_batch, 0, KW_BATCH},
    {"capitalize", do_case, 2, KW_NONE},
    {"center", do_center, 0, KW_CENTER},
    {"count", do_length, 0, KW_NONE},
    {"d", do_default, 0, KW_DEFAULT},
    {"default", do_default, 0, KW_DEFAULT},
    {"dictsort", do_sort, 1, KW_DICTSORT},
    {"e", do_escape, 0, KW_NONE},
    {"escape", do_escape, 0, KW_NONE},
    {"filesizeformat", NULL, 0, NULL},
    {"first", do_first, 0, KW_NONE},
    {"float", do_float, 0, KW_FLOAT},
    {"forceescape", do_escape, 0, KW_NONE},
    {"format", do_format, 0, NULL},
    {"groupby", NULL, 0, NULL},
    {"indent", do_indent, 0, KW_INDENT},
    {"int", do_int, 0, KW_INT},
    {"items", do_items, 0, KW_NONE},
    {"join", do_join, 0, KW_JOIN},
    {"last", do_first, 1, KW_NONE},
    {"length", do_length, 0, KW_NONE},
    {"list", do_list, 0, KW_NONE},
    {"lower", do_case, 0, KW_NONE},
    {"map", do_map, 0, NULL},
    {"max", do_minmax, 1, KW_MINMAX},
    {"min", do_minmax, 0, KW_MINMAX},
    {"pprint", NULL, 0, NULL},
    {"random", NULL, 0, NULL},
    {"reject", do_select, 0, NULL},
    {"rejectattr", do_select, 1, NULL},
    {"replace", do_replace, 0, KW_REPLACE},
    {"reverse", do_reverse, 0, KW_NONE},
    {"round", do_round, 0, KW_ROUND},
    {"safe", do_string, 0, KW_NONE},
    {"select", do_select, 2, NULL},
    {"selectattr", do_select, 3, NULL},
    {"slice", NULL, 0, NULL},
    {"sort", do_sort, 0, KW_SORT},
    {"string", do_string, 0, KW_NONE},
    {"striptags", NULL, 0, NULL},
    {"sum", do_sum, 0, KW_SUM},
    {"title", do_case, 4, KW_NONE},
    {"tojson", do_tojson, 0, KW_TOJSON},
    {"trim", do_trim, 0, KW_TRIM},
    {"truncate", NULL, 0, NULL},
    {"unique", do_unique, 0, KW_MINMAX},
    {"upper", do_case, 1, KW_NONE},
    {"urlencode", NULL, 0, NULL},
    {"urlize", NULL, 0, NULL},
    {"wordcount", do_wordcount, 0, KW_NONE},
    {"wordwrap", NULL, 0, NULL},
    {"xmlattr", NULL, 0, NULL},
};

static const jfilter_row *filter_row(const char *name) {
    return jx_table_find(FILTERS, sizeof FILTERS / sizeof FILTERS[0], sizeof FILTERS[0], name);
}

int jinja_filter_known(const char *name) { return filter_row(name) != NULL; }

int jx_filter_table_sorted(void) {
    return jx_table_sorted(FILTERS, sizeof FILTERS / sizeof FILTERS[0], sizeof FILTERS[0]);
}

int jx_filter(jctx *cx, const jnode *at, const char *name, jv in, jv *args, size_t nargs, char **kwn, jv *kwv,
              size_t nkw, jv *out, int *rc) {
    const jfilter_row *row = filter_row(name);
    *rc = 0;
    if (!row || !row->fn) return 0;
    jargs f = {args, nargs, kwn, kwv, nkw, row->mode};
    *rc = jx_check_kw(cx, at, row->kw, &f, name, " filter");
    if (!*rc) *rc = row->fn(cx, at, in, &f, out);
    return 1;
}
