/*
 * jinja_value.c — the template value model: reference-counted strings, lists, dicts,
 * namespaces, macros and functions; Python truthiness, equality, str() and repr().
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "chat/jinja.h"

int jv_is_obj(jv v) {
    switch (v.k) {
    case JV_UNDEF: return v.u.o != NULL;
    case JV_STR: case JV_LIST: case JV_DICT: case JV_NS: case JV_MACRO: case JV_LOOP:
    case JV_FUNC: case JV_BIGINT: return v.u.o != NULL;
    default: return 0;
    }
}

jv jv_ref(jv v) {
    if (jv_is_obj(v)) v.u.o->rc++;
    return v;
}

void jv_unref(jv v) {
    if (!jv_is_obj(v)) return;
    if (--v.u.o->rc > 0) return;
    switch (v.k) {
    case JV_LIST: {
        jlist *l = JL(v);
        for (size_t i = 0; i < l->len; i++) jv_unref(l->data[i]);
        free(l->data);
        break;
    }
    case JV_DICT: case JV_NS: {
        jdict *d = JD(v);
        for (size_t i = 0; i < d->n; i++) {
            jv_unref(d->key[i]);
            jv_unref(d->val[i]);
        }
        free(d->key);
        free(d->val);
        break;
    }
    case JV_LOOP: {
        jloop *lp = (jloop *)v.u.o;
        jv_unref(lp->changed_last);
        if (lp->items) {
            jv t = {JV_LIST, {.o = &lp->items->h}};
            jv_unref(t);
        }
        break;
    }
    case JV_FUNC: jv_unref(((jfunc *)v.u.o)->self); break;
    default: break;
    }
    free(v.u.o);
}

_Thread_local int jv_oom;

jv jv_str(const char *s, size_t len) {
    jstr *o = malloc(sizeof(jstr) + len + 1);
    if (!o) return jv_oom = 1, jv_none();
    o->h.rc = 1;
    o->len = len;
    if (len) memcpy(o->s, s, len);
    o->s[len] = 0;
    jv v = {JV_STR, {.o = &o->h}};
    return v;
}

jv jv_cstr(const char *s) { return jv_str(s, strlen(s)); }

jv jv_str_take(facet_str *b) {
    if (b->failed == FACET_STR_NOMEM) jv_oom = 1;
    jv v = b->failed ? jv_none() : jv_str(facet_str_cstr(b), b->len);
    facet_str_free(b);
    return v;
}

jv jv_undef_hint(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    jv s = jv_cstr(buf);
    jv v = {JV_UNDEF, {.o = s.k == JV_STR ? s.u.o : NULL}};
    return v;
}

jv jv_list_new(int flavor) {
    jlist *l = calloc(1, sizeof *l);
    if (!l) return jv_oom = 1, jv_none();
    l->h.rc = 1;
    l->flavor = flavor;
    jv v = {JV_LIST, {.o = &l->h}};
    return v;
}

int jv_list_push(jv list, jv item) {
    if (facet_vec_push(JL(list), item) == 0) return 0;
    jv_unref(item);
    jv_oom = 1;
    return -1;
}

jv jv_dict_new(int ns) {
    jdict *d = calloc(1, sizeof *d);
    if (!d) return jv_oom = 1, jv_none();
    d->h.rc = 1;
    jv v = {ns ? JV_NS : JV_DICT, {.o = &d->h}};
    return v;
}

jv *jv_dict_get(jv dict, jv key) {
    jdict *d = JD(dict);
    for (size_t i = 0; i < d->n; i++)
        if (jv_equal(d->key[i], key)) return &d->val[i];
    return NULL;
}

jv *jv_dict_gets(jv dict, const char *key) {
    jdict *d = JD(dict);
    size_t kl = strlen(key);
    for (size_t i = 0; i < d->n; i++)
        if (d->key[i].k == JV_STR && JS(d->key[i])->len == kl && !memcmp(JS(d->key[i])->s, key, kl))
            return &d->val[i];
    return NULL;
}

int jv_dict_set(jv dict, jv key, jv val) {
    jv *slot = jv_dict_get(dict, key);
    if (slot) {
        jv_unref(*slot);
        *slot = val;
        jv_unref(key);
        return 0;
    }
    jdict *d = JD(dict);
    if (d->n == d->cap) { /* keys and values: two arrays grown by vec.h's one routine */
        size_t kcap = d->cap, vcap = d->cap;
        int bad = facet_vec_grow_(&d->key, &kcap, d->n + 1, sizeof(jv)) ||
                  facet_vec_grow_(&d->val, &vcap, d->n + 1, sizeof(jv));
        d->cap = kcap < vcap ? kcap : vcap;
        if (bad) {
            jv_unref(key);
            jv_unref(val);
            jv_oom = 1;
            return -1;
        }
    }
    d->key[d->n] = key;
    d->val[d->n] = val;
    d->n++;
    return 0;
}

jv jv_func(const char *name, jv self) {
    jfunc *f = calloc(1, sizeof *f);
    if (!f) {
        jv_unref(self);
        jv_oom = 1;
        return jv_none();
    }
    f->h.rc = 1;
    snprintf(f->name, sizeof f->name, "%s", name);
    f->self = self;
    jv v = {JV_FUNC, {.o = &f->h}};
    return v;
}

int jv_truthy(jv v) {
    switch (v.k) {
    case JV_UNDEF: case JV_NONE: return 0;
    case JV_BOOL: return v.u.b;
    case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0.0;
    case JV_STR: return JS(v)->len != 0;
    case JV_LIST: return JL(v)->flavor == JL_GEN || JL(v)->len != 0;
    case JV_DICT: return JD(v)->n != 0;
    default: return 1;
    }
}

int jv_hashable(jv v) {
    if (v.k == JV_DICT) return 0;
    if (v.k != JV_LIST) return 1;
    if (JL(v)->flavor != JL_TUPLE) return JL(v)->flavor == JL_GEN;
    for (size_t i = 0; i < JL(v)->len; i++)
        if (!jv_hashable(JL(v)->data[i])) return 0;
    return 1;
}

static int is_num(jv v) { return v.k == JV_BOOL || v.k == JV_INT || v.k == JV_FLOAT; }
static double num_f(jv v) { return v.k == JV_FLOAT ? v.u.f : v.k == JV_INT ? (double)v.u.i : v.u.b; }

int jv_equal(jv a, jv b) {
    if (is_num(a) && is_num(b)) {
        if (a.k != JV_FLOAT && b.k != JV_FLOAT) {
            int64_t x = a.k == JV_INT ? a.u.i : a.u.b, y = b.k == JV_INT ? b.u.i : b.u.b;
            return x == y;
        }
        return num_f(a) == num_f(b);
    }
    if (a.k != b.k) return 0;
    switch (a.k) {
    case JV_UNDEF: case JV_NONE: return 1;
    case JV_STR: case JV_BIGINT:
        return JS(a)->len == JS(b)->len && !memcmp(JS(a)->s, JS(b)->s, JS(a)->len);
    case JV_LIST: {
        jlist *x = JL(a), *y = JL(b);
        if (x->flavor == JL_GEN || y->flavor == JL_GEN || x->flavor == JL_VALUES) return x == y;
        if (x->flavor != y->flavor && (!JL_IS_SEQ(x) || !JL_IS_SEQ(y))) return 0;
        if ((x->flavor == JL_TUPLE) != (y->flavor == JL_TUPLE) || x->len != y->len) return 0;
        for (size_t i = 0; i < x->len; i++)
            if (!jv_equal(x->data[i], y->data[i])) return 0;
        return 1;
    }
    case JV_DICT: {
        jdict *x = JD(a), *y = JD(b);
        if (x->n != y->n) return 0;
        for (size_t i = 0; i < x->n; i++) {
            jv *o = jv_dict_get(b, x->key[i]);
            if (!o || !jv_equal(x->val[i], *o)) return 0;
        }
        return 1;
    }
    default: return a.u.o == b.u.o;
    }
}

const char *jv_type_name(jv v) {
    switch (v.k) {
    case JV_UNDEF: return "Undefined";
    case JV_NONE: return "NoneType";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return "str";
    case JV_LIST: {
        static const char *const names[] = {"list", "tuple", "generator", "dict_keys", "dict_values", "dict_items"};
        return names[JL(v)->flavor];
    }
    case JV_DICT: return "dict";
    case JV_NS: return "Namespace";
    case JV_MACRO: return "Macro";
    case JV_LOOP: return "LoopContext";
    case JV_FUNC: return "function";
    case JV_BIGINT: return "int";
    }
    return "object";
}

/* ---------------------------------------------------------------- buffers ---- */

/* ------------------------------------------------------------ float repr ---- */

/* Python's float repr: the shortest digit string that round-trips, written in fixed
 * notation when -4 <= exponent < 16 and in scientific notation otherwise
 * (Python/pystrtod.c, format code 'r'). */
void jv_format_float(double f, char out[40]) {
    if (isnan(f)) {
        strcpy(out, "nan");
        return;
    }
    if (isinf(f)) {
        strcpy(out, f < 0 ? "-inf" : "inf");
        return;
    }
    char e[40];
    int prec;
    for (prec = 0; prec < 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec, f);
        if (strtod(e, NULL) == f) break;
    }
    /* e = [-]d[.ddd]e[+-]XX */
    char digits[24];
    size_t nd = 0;
    const char *p = e;
    int neg = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[nd++] = *p;
    int exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = 0;
    char *o = out;
    if (neg) *o++ = '-';
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            *o++ = '0';
            *o++ = '.';
            for (int i = 0; i < -exp10 - 1; i++) *o++ = '0';
            memcpy(o, digits, nd);
            o += nd;
        } else {
            for (int i = 0; i <= exp10; i++) *o++ = (size_t)i < nd ? digits[i] : '0';
            *o++ = '.';
            if ((size_t)exp10 + 1 < nd) {
                memcpy(o, digits + exp10 + 1, nd - (size_t)exp10 - 1);
                o += nd - (size_t)exp10 - 1;
            } else {
                *o++ = '0';
            }
        }
        *o = 0;
    } else {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, nd - 1);
            o += nd - 1;
        }
        sprintf(o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
}

/* ------------------------------------------------------------ str / repr ---- */

static int is_printable(int32_t cp) {
    if (cp == ' ') return 1;
    utf8proc_category_t c = utf8proc_category(cp);
    switch (c) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS: return 0;
    default: return 1;
    }
}

static int repr_str(facet_str *b, const char *s, size_t n) {
    int has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = (has_sq && !has_dq) ? '"' : '\'';
    if (facet_str_putc(b, q)) return -1;
    size_t i = 0;
    while (i < n) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0) {
            if (facet_str_appendf(b, "\\x%02x", (unsigned char)s[i])) return -1;
            i++;
            continue;
        }
        int rc = 0;
        if (cp == '\\' || cp == q) {
            rc = facet_str_putc(b, '\\') || facet_str_putc(b, (char)cp);
        } else if (cp == '\n') {
            rc = facet_str_appendz(b, "\\n");
        } else if (cp == '\r') {
            rc = facet_str_appendz(b, "\\r");
        } else if (cp == '\t') {
            rc = facet_str_appendz(b, "\\t");
        } else if (cp < 0x20 || cp == 0x7f) {
            rc = facet_str_appendf(b, "\\x%02x", (unsigned)cp);
        } else if (cp >= 0x80 && !is_printable(cp)) {
            if (cp <= 0xff) rc = facet_str_appendf(b, "\\x%02x", (unsigned)cp);
            else if (cp <= 0xffff) rc = facet_str_appendf(b, "\\u%04x", (unsigned)cp);
            else rc = facet_str_appendf(b, "\\U%08x", (unsigned)cp);
        } else {
            rc = facet_str_append(b, s + i, (size_t)k);
        }
        if (rc) return -1;
        i += (size_t)k;
    }
    return facet_str_putc(b, q);
}

static int str_or_repr(facet_str *b, jv v, int repr) {
    char num[40];
    switch (v.k) {
    case JV_UNDEF: return repr ? facet_str_appendz(b, "Undefined") : 0;
    case JV_NONE: return facet_str_appendz(b, "None");
    case JV_BOOL: return facet_str_appendz(b, v.u.b ? "True" : "False");
    case JV_INT: return facet_str_appendf(b, "%lld", (long long)v.u.i);
    case JV_FLOAT: jv_format_float(v.u.f, num); return facet_str_appendz(b, num);
    case JV_STR: return repr ? repr_str(b, JS(v)->s, JS(v)->len) : facet_str_append(b, JS(v)->s, JS(v)->len);
    case JV_BIGINT: return facet_str_append(b, JS(v)->s, JS(v)->len);
    case JV_LIST: {
        jlist *l = JL(v);
        if (l->flavor == JL_GEN) return -1; /* Python prints an address: not reproducible */
        if (l->flavor >= JL_KEYS) {
            static const char *const pre[] = {"dict_keys(", "dict_values(", "dict_items("};
            if (facet_str_appendz(b, pre[l->flavor - JL_KEYS])) return -1;
            jlist tmp = *l;
            tmp.flavor = JL_LIST;
            jv t = {JV_LIST, {.o = &tmp.h}};
            if (str_or_repr(b, t, 1)) return -1;
            return facet_str_putc(b, ')');
        }
        int tup = l->flavor == JL_TUPLE;
        if (facet_str_putc(b, tup ? '(' : '[')) return -1;
        for (size_t i = 0; i < l->len; i++) {
            if (i && facet_str_appendz(b, ", ")) return -1;
            if (str_or_repr(b, l->data[i], 1)) return -1;
        }
        if (tup && l->len == 1 && facet_str_putc(b, ',')) return -1;
        return facet_str_putc(b, tup ? ')' : ']');
    }
    case JV_DICT: case JV_NS: {
        jdict *d = JD(v);
        if (v.k == JV_NS && facet_str_appendz(b, "<Namespace ")) return -1;
        if (facet_str_putc(b, '{')) return -1;
        for (size_t i = 0; i < d->n; i++) {
            if (i && facet_str_appendz(b, ", ")) return -1;
            if (str_or_repr(b, d->key[i], 1) || facet_str_appendz(b, ": ") || str_or_repr(b, d->val[i], 1))
                return -1;
        }
        if (facet_str_putc(b, '}')) return -1;
        return v.k == JV_NS ? facet_str_putc(b, '>') : 0;
    }
    default: return -1; /* macros, loops, functions print addresses in Python */
    }
}

int jv_to_pystr(facet_str *b, jv v) { return str_or_repr(b, v, 0); }
int jv_to_pyrepr(facet_str *b, jv v) { return str_or_repr(b, v, 1); }

jv jv_bigint(const char *digits) {
    jv v = jv_cstr(digits);
    if (v.k == JV_STR) v.k = JV_BIGINT;
    return v;
}
