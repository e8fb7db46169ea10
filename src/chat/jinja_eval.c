/*
 * jinja_eval.c — renders an AST: scopes (a fresh scope per loop iteration and per
 * macro call, so `set` inside a loop does not leak, as in Jinja2), expressions with
 * Python semantics, the sandbox's attribute rules (ImmutableSandboxedEnvironment:
 * mutating methods of lists/dicts are unsafe), globals (range, namespace, dict,
 * raise_exception, strftime_now) and the render limits.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat/jinja.h"

#define MAX_RANGE 100000 /* jinja2.sandbox.MAX_RANGE */
enum { FLOW_OK = 0, FLOW_BREAK = 1, FLOW_CONTINUE = 2, FLOW_ERR = -1 };

struct jscope {
    jscope *parent;
    jv vars; /* dict */
    uint64_t serial;
};

struct jctx {
    facet_error *err;
    int failed;
    jlimits lim;
    int depth;
    int64_t iters;
    facet_str *out;
    jscope *cur, *root;
    FACET_VEC(jscope *) live; /* the scopes not yet popped (a macro checks its defining scope) */
    uint64_t serial;
    int64_t now;
    int now_local;
};

int jx_fail(jctx *cx, const jnode *n, facet_status st, const char *fmt, ...) {
    if (cx->failed) return -1;
    char msg[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    facet_err(cx->err, st, "template line %d:%d: %s", n ? n->line : 0, n ? n->col : 0, msg);
    cx->failed = 1;
    return -1;
}

static int oom(jctx *cx, const jnode *n) {
    return jx_fail(cx, n, FACET_E_NOMEM, "out of memory");
}

/* A buffer write failed: the output limit or memory. */
static int buf_fail(jctx *cx, const jnode *n, facet_str *b) {
    if (b->failed == FACET_STR_OVER)
        return jx_fail(cx, n, FACET_E_LIMIT, "rendered output exceeds the limit of %zu bytes", cx->lim.max_output);
    return oom(cx, n);
}

size_t jx_max_output(const jctx *cx) { return cx->lim.max_output; }

int jx_undef_error(jctx *cx, const jnode *at, jv v) {
    if (v.k == JV_UNDEF && v.u.o) {
        const char *h = JS(v)->s;
        if (!strncmp(h, "access to attribute", 19)) return jx_fail(cx, at, FACET_E_TEMPLATE, "SecurityError: %s", h);
        return jx_fail(cx, at, FACET_E_TEMPLATE, "UndefinedError: %s", h);
    }
    return jx_fail(cx, at, FACET_E_TEMPLATE, "UndefinedError: undefined value");
}

int jx_str(jctx *cx, const jnode *at, jv v, facet_str *b) {
    /* bounded by the output limit (a shared list nested n deep prints 2^n items) */
    size_t limit = b->limit;
    if (!b->limit || b->limit - b->len > cx->lim.max_output) b->limit = b->len + cx->lim.max_output;
    int rc = jv_to_pystr(b, v);
    b->limit = limit;
    if (rc == 0) return 0;
    /* a container fails when it holds a macro, function or loop (below) */
    if (b->failed == FACET_STR_OVER || (v.k != JV_LIST && v.k != JV_DICT && v.k != JV_NS && v.k != JV_MACRO && v.k != JV_LOOP &&
                    v.k != JV_FUNC))
        return buf_fail(cx, at, b);
    return jx_fail(cx, at, FACET_E_UNSUPPORTED,
                   "unsupported construct: printing a %s object (Python prints its memory address)", jv_type_name(v));
}

static int holds(jv v, const jobj *o, int depth, int64_t *budget);
/* references holds() follows before it gives up (-1): a value that shares one list n
 * deep has 2^n paths */
#define HOLDS_BUDGET 1000000

/* ----------------------------------------------------------------- scopes ---- */

static jscope *scope_push(jctx *cx, jscope *parent, const jnode *at) {
    jscope *s = calloc(1, sizeof *s);
    if (!s) {
        oom(cx, at);
        return NULL;
    }
    s->vars = jv_dict_new(0);
    if (s->vars.k != JV_DICT) {
        free(s);
        oom(cx, at);
        return NULL;
    }
    s->parent = parent;
    s->serial = ++cx->serial;
    if (facet_vec_push(&cx->live, s)) {
        jv_unref(s->vars);
        free(s);
        oom(cx, at);
        return NULL;
    }
    return s;
}

static void scope_pop(jctx *cx, jscope *s) {
    for (size_t i = cx->live.len; i-- > 0;)
        if (cx->live.data[i] == s) {
            memmove(cx->live.data + i, cx->live.data + i + 1, (cx->live.len - i - 1) * sizeof *cx->live.data);
            cx->live.len--;
            break;
        }
    jv_unref(s->vars);
    free(s);
}

static int scope_alive(jctx *cx, jscope *s, uint64_t serial) {
    for (size_t i = 0; i < cx->live.len; i++)
        if (cx->live.data[i] == s && s->serial == serial) return 1;
    return 0;
}

static int scope_set(jctx *cx, const jnode *at, jscope *s, const char *name, jv v) {
    jv k = jv_cstr(name);
    if (k.k != JV_STR) {
        jv_unref(v);
        return oom(cx, at);
    }
    if (jv_dict_set(s->vars, k, v)) return oom(cx, at);
    return 0;
}

typedef struct jglobal_row jglobal_row;
static const jglobal_row *global_row(const char *name);

static jv lookup(jctx *cx, const char *name) {
    for (jscope *s = cx->cur; s; s = s->parent) {
        jv *v = jv_dict_gets(s->vars, name);
        if (v) return jv_ref(*v);
    }
    if (global_row(name)) return jv_func(name, jv_undef());
    return jv_undef_hint("'%s' is undefined", name);
}

/* --------------------------------------------------------- attribute access ---- */

static const char *obj_type_repr(jv v) {
    switch (v.k) {
    case JV_NONE: return "None";
    case JV_BOOL: return "bool object";
    case JV_INT: case JV_BIGINT: return "int object";
    case JV_FLOAT: return "float object";
    case JV_STR: return "str object";
    case JV_LIST:
        switch (JL(v)->flavor) {
        case JL_TUPLE: return "tuple object";
        case JL_GEN: return "generator object";
        case JL_KEYS: return "dict_keys object";
        case JL_VALUES: return "dict_values object";
        case JL_ITEMS: return "dict_items object";
        default: return "list object";
        }
    case JV_DICT: return "dict object";
    case JV_NS: return "jinja2.utils.Namespace object";
    case JV_LOOP: return "jinja2.runtime.LoopContext object";
    default: return "object";
    }
}

static const char *const UNSAFE_LIST[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear", "__setitem__", "__delitem__", NULL};
static const char *const UNSAFE_DICT[] = {"clear", "pop", "popitem", "setdefault", "update", "__setitem__", "__delitem__", NULL};

static int in_list(const char *const *l, const char *s) {
    for (int i = 0; l[i]; i++)
        if (!strcmp(l[i], s)) return 1;
    return 0;
}

static int loop_attr(jctx *cx, const jnode *at, jv obj, const char *name, jv *out) {
    (void)cx;
    (void)at;
    jloop *lp = (jloop *)obj.u.o;
    int64_t n = (int64_t)lp->items->len, i = (int64_t)lp->idx;
    if (!strcmp(name, "index")) *out = jv_int(i + 1);
    else if (!strcmp(name, "index0")) *out = jv_int(i);
    else if (!strcmp(name, "revindex")) *out = jv_int(n - i);
    else if (!strcmp(name, "revindex0")) *out = jv_int(n - i - 1);
    else if (!strcmp(name, "first")) *out = jv_bool(i == 0);
    else if (!strcmp(name, "last")) *out = jv_bool(i == n - 1);
    else if (!strcmp(name, "length")) *out = jv_int(n);
    else if (!strcmp(name, "depth")) *out = jv_int(1);
    else if (!strcmp(name, "depth0")) *out = jv_int(0);
    else if (!strcmp(name, "previtem"))
        *out = i > 0 ? jv_ref(lp->items->data[i - 1]) : jv_undef_hint("there is no previous item");
    else if (!strcmp(name, "nextitem"))
        *out = i + 1 < n ? jv_ref(lp->items->data[i + 1]) : jv_undef_hint("there is no next item");
    else if (!strcmp(name, "cycle")) *out = jv_func("cycle", jv_ref(obj));
    else if (!strcmp(name, "changed")) *out = jv_func("changed", jv_ref(obj));
    else *out = jv_undef_hint("'%s' has no attribute '%s'", obj_type_repr(obj), name);
    return 0;
}

int jx_getattr(jctx *cx, const jnode *at, jv obj, const char *name, jv *out) {
    switch (obj.k) {
    case JV_UNDEF: return jx_undef_error(cx, at, obj);
    case JV_LOOP: return loop_attr(cx, at, obj, name, out);
    case JV_NS: {
        jv *v = jv_dict_gets(obj, name);
        *out = v ? jv_ref(*v) : jv_undef_hint("'%s' has no attribute '%s'", obj_type_repr(obj), name);
        return 0;
    }
    case JV_DICT:
        if (in_list(UNSAFE_DICT, name)) {
            *out = jv_undef_hint("access to attribute '%s' of 'dict' object is unsafe.", name);
            return 0;
        }
        if (jx_has_method(obj, name) || jx_unimplemented_method(obj, name)) break;
        {
            jv *v = jv_dict_gets(obj, name);
            *out = v ? jv_ref(*v) : jv_undef_hint("'%s' has no attribute '%s'", obj_type_repr(obj), name);
            return 0;
        }
    case JV_LIST:
        if (JL(obj)->flavor == JL_LIST && in_list(UNSAFE_LIST, name)) {
            *out = jv_undef_hint("access to attribute '%s' of 'list' object is unsafe.", name);
            return 0;
        }
        break;
    default: break;
    }
    if (jx_has_method(obj, name)) {
        *out = jv_func(name, jv_ref(obj));
        return out->k == JV_FUNC ? 0 : oom(cx, at);
    }
    if (jx_unimplemented_method(obj, name))
        return jx_fail(cx, at, FACET_E_UNSUPPORTED, "unsupported construct: the %s method '%s'",
                       jv_type_name(obj), name);
    *out = jv_undef_hint("'%s' has no attribute '%s'", obj_type_repr(obj), name);
    return 0;
}

/* UTF-8 code point boundaries of s: offs[i] = byte offset of code point i, offs[n] =
 * len. Returns the count, or -1 on OOM. */
static long cp_offsets(const char *s, size_t len, size_t **offs) {
    size_t *o = malloc((len + 1) * sizeof(size_t));
    if (!o) return -1;
    long n = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) o[n++] = i;
    o[n] = len;
    *offs = o;
    return n;
}

int jx_getitem(jctx *cx, const jnode *at, jv obj, jv key, jv *out) {
    if (obj.k == JV_UNDEF) return jx_undef_error(cx, at, obj);
    if (obj.k == JV_DICT || obj.k == JV_NS) {
        jv *v = jv_dict_get(obj, key);
        if (v) {
            *out = jv_ref(*v);
            return 0;
        }
    } else if ((obj.k == JV_LIST && JL_IS_SEQ(JL(obj))) || obj.k == JV_STR) {
        if (key.k == JV_INT || key.k == JV_BOOL) {
            int64_t i = key.k == JV_INT ? key.u.i : key.u.b;
            if (obj.k == JV_LIST) {
                int64_t n = (int64_t)JL(obj)->len;
                if (i < 0) i += n;
                if (i >= 0 && i < n) {
                    *out = jv_ref(JL(obj)->data[i]);
                    return 0;
                }
            } else {
                size_t *offs;
                long n = cp_offsets(JS(obj)->s, JS(obj)->len, &offs);
                if (n < 0) return oom(cx, at);
                if (i < 0) i += n;
                if (i >= 0 && i < n) {
                    *out = jv_str(JS(obj)->s + offs[i], offs[i + 1] - offs[i]);
                    free(offs);
                    return 0;
                }
                free(offs);
            }
        }
    } else if (obj.k == JV_LOOP && key.k == JV_STR) {
        return loop_attr(cx, at, obj, JS(key)->s, out);
    }
    if (key.k == JV_STR && obj.k != JV_NS) {
        if ((obj.k == JV_DICT && in_list(UNSAFE_DICT, JS(key)->s)) ||
            (obj.k == JV_LIST && JL(obj)->flavor == JL_LIST && in_list(UNSAFE_LIST, JS(key)->s))) {
            *out = jv_undef_hint("access to attribute '%s' of '%s' object is unsafe.", JS(key)->s, jv_type_name(obj));
            return 0;
        }
        if (jx_has_method(obj, JS(key)->s)) {
            *out = jv_func(JS(key)->s, jv_ref(obj));
            return out->k == JV_FUNC ? 0 : oom(cx, at);
        }
        *out = jv_undef_hint("'%s' has no attribute '%s'", obj_type_repr(obj), JS(key)->s);
        return 0;
    }
    facet_str r = {0};
    jv_to_pyrepr(&r, key);
    *out = jv_undef_hint("'%s' has no element %s", obj_type_repr(obj), r.failed || !r.data ? "?" : r.data);
    facet_str_free(&r);
    return 0;
}

/* A given slice bound clamped as PySlice_AdjustIndices does: negative counts from the
 * end; out of range goes to the nearest end (one before the start when stepping back). */
static int64_t slice_bound(int64_t i, int64_t len, int64_t step) {
    if (i < 0) {
        i += len;
        if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= len) {
        i = step < 0 ? len - 1 : len;
    }
    return i;
}

/* Python slice semantics (PySlice_AdjustIndices). */
static int do_slice(jctx *cx, const jnode *at, jv obj, jv s0, jv s1, jv s2, jv *out) {
    if (obj.k == JV_UNDEF) return jx_undef_error(cx, at, obj);
    int64_t idx[3];
    int has[3];
    jv parts[3] = {s0, s1, s2};
    for (int i = 0; i < 3; i++) {
        has[i] = parts[i].k != JV_NONE && parts[i].k != JV_UNDEF;
        if (has[i] && parts[i].k != JV_INT && parts[i].k != JV_BOOL)
            return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: slice indices must be integers or None");
        idx[i] = has[i] ? (parts[i].k == JV_INT ? parts[i].u.i : parts[i].u.b) : 0;
    }
    int64_t step = has[2] ? idx[2] : 1;
    if (step == 0) return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: slice step cannot be zero");
    if (step == INT64_MIN) step = -INT64_MAX;
    size_t *offs = NULL;
    int64_t len;
    if (obj.k == JV_STR) {
        long n = cp_offsets(JS(obj)->s, JS(obj)->len, &offs);
        if (n < 0) return oom(cx, at);
        len = n;
    } else if (obj.k == JV_LIST && JL_IS_SEQ(JL(obj))) {
        len = (int64_t)JL(obj)->len;
    } else {
        *out = jv_undef_hint("'%s' has no element slice", obj_type_repr(obj));
        return 0;
    }
    int64_t start = has[0] ? slice_bound(idx[0], len, step) : step < 0 ? len - 1 : 0;
    int64_t stop = has[1] ? slice_bound(idx[1], len, step) : step < 0 ? -1 : len;
    if (obj.k == JV_STR) {
        facet_str b = {0};
        int rc = 0;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
            if ((rc = facet_str_append(&b, JS(obj)->s + offs[i], offs[i + 1] - offs[i]))) break;
        free(offs);
        if (rc) {
            facet_str_free(&b);
            return oom(cx, at);
        }
        *out = jv_str_take(&b);
        return out->k == JV_STR ? 0 : oom(cx, at);
    }
    jv l = jv_list_new(JL(obj)->flavor);
    if (l.k != JV_LIST) return oom(cx, at);
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
        if (jv_list_push(l, jv_ref(JL(obj)->data[i]))) {
            jv_unref(l);
            return oom(cx, at);
        }
    *out = l;
    return 0;
}

int jx_iterate(jctx *cx, const jnode *at, jv v, jv *out) {
    switch (v.k) {
    case JV_LIST: *out = jv_ref(v); return 0;
    case JV_UNDEF: *out = jv_list_new(JL_LIST); return out->k == JV_LIST ? 0 : oom(cx, at);
    case JV_DICT: {
        jv l = jv_list_new(JL_LIST);
        if (l.k != JV_LIST) return oom(cx, at);
        for (size_t i = 0; i < JD(v)->n; i++)
            if (jv_list_push(l, jv_ref(JD(v)->key[i]))) {
                jv_unref(l);
                return oom(cx, at);
            }
        *out = l;
        return 0;
    }
    case JV_STR: {
        jv l = jv_list_new(JL_LIST);
        if (l.k != JV_LIST) return oom(cx, at);
        size_t *offs;
        long n = cp_offsets(JS(v)->s, JS(v)->len, &offs);
        if (n < 0) {
            jv_unref(l);
            return oom(cx, at);
        }
        for (long i = 0; i < n; i++)
            if (jv_list_push(l, jv_str(JS(v)->s + offs[i], offs[i + 1] - offs[i]))) {
                free(offs);
                jv_unref(l);
                return oom(cx, at);
            }
        free(offs);
        *out = l;
        return 0;
    }
    default:
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: '%s' object is not iterable", jv_type_name(v));
    }
}

/* ------------------------------------------------------------- operators ---- */

static int isnum(jv v) { return v.k == JV_INT || v.k == JV_FLOAT || v.k == JV_BOOL; }
static double fval(jv v) { return v.k == JV_FLOAT ? v.u.f : v.k == JV_INT ? (double)v.u.i : v.u.b; }
static int64_t ival(jv v) { return v.k == JV_INT ? v.u.i : v.u.b; }

/* An integer beyond 64 bits (JSON input): printed exactly, never computed with. */
static int bigint_err(jctx *cx, const jnode *at, const char *op, jv a, jv b) {
    jv big = a.k == JV_BIGINT ? a : b;
    return jx_fail(cx, at, FACET_E_UNSUPPORTED,
                   "'%s' on the integer %.*s, which is beyond 64 bits: facet keeps such "
                   "integers exact for output (str, tojson, ==) but does no arithmetic or "
                   "ordering on them", op, (int)(JS(big)->len > 60 ? 60 : JS(big)->len),
                   JS(big)->s);
}

int jx_less(jctx *cx, const jnode *at, jv a, jv b, int *lt) {
    if (isnum(a) && isnum(b)) {
        if (a.k != JV_FLOAT && b.k != JV_FLOAT) *lt = ival(a) < ival(b);
        else *lt = fval(a) < fval(b);
        return 0;
    }
    if (a.k == JV_STR && b.k == JV_STR) {
        size_t n = JS(a)->len < JS(b)->len ? JS(a)->len : JS(b)->len;
        int c = memcmp(JS(a)->s, JS(b)->s, n);
        *lt = c < 0 || (c == 0 && JS(a)->len < JS(b)->len);
        return 0;
    }
    if (a.k == JV_LIST && b.k == JV_LIST && JL(a)->flavor == JL(b)->flavor && JL_IS_SEQ(JL(a))) {
        jlist *x = JL(a), *y = JL(b);
        for (size_t i = 0; i < x->len && i < y->len; i++) {
            if (jv_equal(x->data[i], y->data[i])) continue;
            return jx_less(cx, at, x->data[i], y->data[i], lt);
        }
        *lt = x->len < y->len;
        return 0;
    }
    if (a.k == JV_UNDEF) return jx_undef_error(cx, at, a);
    if (b.k == JV_UNDEF) return jx_undef_error(cx, at, b);
    if (a.k == JV_BIGINT || b.k == JV_BIGINT) return bigint_err(cx, at, "<", a, b);
    return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: '<' not supported between instances of '%s' and '%s'",
                   jv_type_name(a), jv_type_name(b));
}

static int compare(jctx *cx, const jnode *at, const char *op, jv a, jv b, int *res) {
    if (!strcmp(op, "==")) {
        *res = jv_equal(a, b);
        return 0;
    }
    if (!strcmp(op, "!=")) {
        *res = !jv_equal(a, b);
        return 0;
    }
    if (!strcmp(op, "in") || !strcmp(op, "ni")) {
        int found = 0;
        if (b.k == JV_STR) {
            if (a.k != JV_STR)
                return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: 'in <string>' requires string as left operand, not %s", jv_type_name(a));
            found = JS(a)->len == 0 || memmem(JS(b)->s, JS(b)->len, JS(a)->s, JS(a)->len) != NULL;
        } else if (b.k == JV_DICT || b.k == JV_NS) {
            if (b.k == JV_NS) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: argument of type 'Namespace' is not iterable");
            if (!jv_hashable(a)) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: unhashable type: '%s'", jv_type_name(a));
            found = jv_dict_get(b, a) != NULL;
        } else if (b.k == JV_LIST) {
            for (size_t i = 0; i < JL(b)->len && !found; i++) found = jv_equal(a, JL(b)->data[i]);
        } else if (b.k == JV_UNDEF) {
            found = 0;
        } else {
            return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: argument of type '%s' is not iterable", jv_type_name(b));
        }
        *res = op[0] == 'i' ? found : !found;
        return 0;
    }
    int lt;
    if (!strcmp(op, "<")) return jx_less(cx, at, a, b, res);
    if (!strcmp(op, ">")) return jx_less(cx, at, b, a, res);
    if (!strcmp(op, "<=")) {
        if (jx_less(cx, at, b, a, &lt)) return -1;
        *res = !lt;
        return 0;
    }
    if (jx_less(cx, at, a, b, &lt)) return -1; /* >= */
    *res = !lt;
    return 0;
}

static int arith_err(jctx *cx, const jnode *at, const char *op, jv a, jv b) {
    if (a.k == JV_UNDEF) return jx_undef_error(cx, at, a);
    if (b.k == JV_UNDEF) return jx_undef_error(cx, at, b);
    if (a.k == JV_BIGINT || b.k == JV_BIGINT) return bigint_err(cx, at, op, a, b);
    if (!strcmp(op, "+") && a.k == JV_STR)
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: can only concatenate str (not \"%s\") to str", jv_type_name(b));
    if (!strcmp(op, "+") && a.k == JV_LIST && JL(a)->flavor == JL_LIST)
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: can only concatenate list (not \"%s\") to list", jv_type_name(b));
    return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: unsupported operand type(s) for %s: '%s' and '%s'", op,
                   jv_type_name(a), jv_type_name(b));
}

static int repeat(jctx *cx, const jnode *at, jv seq, int64_t n, jv *out) {
    if (n < 0) n = 0;
    /* an empty sequence repeats to itself: no loop of n turns (n may be 2^63 - 1) */
    size_t len = seq.k == JV_STR ? JS(seq)->len : JL(seq)->len;
    if (len == 0) n = 0;
    if (seq.k == JV_STR) {
        if (n && (uint64_t)n > cx->lim.max_output / len) /* no product: it could wrap */
            return jx_fail(cx, at, FACET_E_LIMIT, "string repetition exceeds the output limit");
        facet_str b = {0};
        for (int64_t i = 0; i < n; i++)
            if (facet_str_append(&b, JS(seq)->s, JS(seq)->len)) {
                facet_str_free(&b);
                return oom(cx, at);
            }
        *out = jv_str_take(&b);
        return out->k == JV_STR ? 0 : oom(cx, at);
    }
    if (n && (uint64_t)n > (uint64_t)cx->lim.max_iterations / len)
        return jx_fail(cx, at, FACET_E_LIMIT, "list repetition exceeds the iteration limit");
    jv l = jv_list_new(JL(seq)->flavor);
    if (l.k != JV_LIST) return oom(cx, at);
    for (int64_t i = 0; i < n; i++)
        for (size_t j = 0; j < JL(seq)->len; j++)
            if (jv_list_push(l, jv_ref(JL(seq)->data[j]))) {
                jv_unref(l);
                return oom(cx, at);
            }
    *out = l;
    return 0;
}

static int binop(jctx *cx, const jnode *at, const char *op, jv a, jv b, jv *out) {
    if (op[0] == '~') {
        facet_str buf = {0};
        if (jx_str(cx, at, a, &buf) || jx_str(cx, at, b, &buf)) {
            facet_str_free(&buf);
            return -1;
        }
        if (buf.len > cx->lim.max_output) { /* a ~ doubled in a loop grows 2^n */
            facet_str_free(&buf);
            return jx_fail(cx, at, FACET_E_LIMIT, "string concatenation exceeds the output limit");
        }
        *out = jv_str_take(&buf);
        return out->k == JV_STR ? 0 : oom(cx, at);
    }
    if (isnum(a) && isnum(b)) {
        int ints = a.k != JV_FLOAT && b.k != JV_FLOAT;
        int64_t x = ints ? ival(a) : 0, y = ints ? ival(b) : 0, r;
        double fx = fval(a), fy = fval(b);
        switch (op[0]) {
        case '+':
            if (ints) {
                if (__builtin_add_overflow(x, y, &r)) goto overflow;
                *out = jv_int(r);
            } else *out = jv_float(fx + fy);
            return 0;
        case '-':
            if (ints) {
                if (__builtin_sub_overflow(x, y, &r)) goto overflow;
                *out = jv_int(r);
            } else *out = jv_float(fx - fy);
            return 0;
        case '*':
            if (op[1] == '*') {
                if (ints && y >= 0) {
                    int64_t acc = 1;
                    for (int64_t i = 0; i < y; i++) {
                        if (__builtin_mul_overflow(acc, x, &acc)) goto overflow;
                        if (acc == 0 || acc == 1) break;
                        if (acc == -1 && i > 64) {
                            acc = (y % 2) ? -1 : 1;
                            break;
                        }
                    }
                    *out = jv_int(acc);
                    return 0;
                }
                if (fx == 0.0 && fy < 0)
                    return jx_fail(cx, at, FACET_E_TEMPLATE, "ZeroDivisionError: 0.0 cannot be raised to a negative power");
                *out = jv_float(pow(fx, fy));
                return 0;
            }
            if (ints) {
                if (__builtin_mul_overflow(x, y, &r)) goto overflow;
                *out = jv_int(r);
            } else *out = jv_float(fx * fy);
            return 0;
        case '/':
            if (op[1] == '/') {
                if (ints) {
                    if (y == 0) return jx_fail(cx, at, FACET_E_TEMPLATE, "ZeroDivisionError: integer division or modulo by zero");
                    if (x == INT64_MIN && y == -1) goto overflow;
                    int64_t q = x / y;
                    if ((x % y != 0) && ((x < 0) != (y < 0))) q--;
                    *out = jv_int(q);
                } else {
                    if (fy == 0.0) return jx_fail(cx, at, FACET_E_TEMPLATE, "ZeroDivisionError: float floor division by zero");
                    *out = jv_float(floor(fx / fy));
                }
                return 0;
            }
            if (fy == 0.0) return jx_fail(cx, at, FACET_E_TEMPLATE, "ZeroDivisionError: division by zero");
            *out = jv_float(fx / fy);
            return 0;
        case '%':
            if (ints) {
                if (y == 0) return jx_fail(cx, at, FACET_E_TEMPLATE, "ZeroDivisionError: integer division or modulo by zero");
                if (y == -1) {
                    *out = jv_int(0);
                    return 0;
                }
                int64_t m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) m += y;
                *out = jv_int(m);
            } else {
                if (fy == 0.0) return jx_fail(cx, at, FACET_E_TEMPLATE, "ZeroDivisionError: float modulo");
                double m = fmod(fx, fy);
                if (m != 0 && ((m < 0) != (fy < 0))) m += fy;
                *out = jv_float(m);
            }
            return 0;
        }
    }
    if (op[0] == '+' && a.k == JV_STR && b.k == JV_STR) {
        if (JS(a)->len + JS(b)->len > cx->lim.max_output) /* doubled in a loop: 2^n */
            return jx_fail(cx, at, FACET_E_LIMIT, "string concatenation exceeds the output limit");
        facet_str buf = {0};
        if (facet_str_append(&buf, JS(a)->s, JS(a)->len) || facet_str_append(&buf, JS(b)->s, JS(b)->len)) {
            facet_str_free(&buf);
            return oom(cx, at);
        }
        *out = jv_str_take(&buf);
        return out->k == JV_STR ? 0 : oom(cx, at);
    }
    if (op[0] == '+' && a.k == JV_LIST && b.k == JV_LIST && JL(a)->flavor == JL(b)->flavor && JL_IS_SEQ(JL(a))) {
        if ((uint64_t)JL(a)->len + JL(b)->len > (uint64_t)cx->lim.max_iterations)
            return jx_fail(cx, at, FACET_E_LIMIT, "list concatenation exceeds the iteration limit");
        jv l = jv_list_new(JL(a)->flavor);
        if (l.k != JV_LIST) return oom(cx, at);
        for (int s = 0; s < 2; s++) {
            jlist *src = JL(s ? b : a);
            for (size_t i = 0; i < src->len; i++)
                if (jv_list_push(l, jv_ref(src->data[i]))) {
                    jv_unref(l);
                    return oom(cx, at);
                }
        }
        *out = l;
        return 0;
    }
    if (op[0] == '*' && !op[1]) {
        if ((a.k == JV_STR || (a.k == JV_LIST && JL_IS_SEQ(JL(a)))) && (b.k == JV_INT || b.k == JV_BOOL))
            return repeat(cx, at, a, ival(b), out);
        if ((b.k == JV_STR || (b.k == JV_LIST && JL_IS_SEQ(JL(b)))) && (a.k == JV_INT || a.k == JV_BOOL))
            return repeat(cx, at, b, ival(a), out);
    }
    if (op[0] == '%' && a.k == JV_STR) return jx_printf_format(cx, at, a, b, out);
    return arith_err(cx, at, op, a, b);
overflow:
    return jx_fail(cx, at, FACET_E_LIMIT, "integer result of '%s' exceeds 64 bits", op);
}

/* ------------------------------------------------------------ expressions ---- */

static int eval(jctx *cx, const jnode *n, jv *out);
static int exec_list(jctx *cx, const jnlist *body);

typedef struct argv_ {
    jv *pos;
    size_t npos;
    jv *kw;
    size_t nkw;
} argv_;

static void args_free(argv_ *a) {
    for (size_t i = 0; i < a->npos; i++) jv_unref(a->pos[i]);
    for (size_t i = 0; i < a->nkw; i++) jv_unref(a->kw[i]);
    free(a->pos);
    free(a->kw);
}

/* Evaluate call arguments of node n (l1 positional, l2 keyword) with `extra` slots
 * reserved in front of the positional array. */
static int eval_args(jctx *cx, const jnode *n, size_t extra, argv_ *a) {
    memset(a, 0, sizeof *a);
    a->pos = calloc(n->l1.len + extra + 1, sizeof(jv));
    a->kw = calloc(n->l2.len + 1, sizeof(jv));
    if (!a->pos || !a->kw) {
        free(a->pos);
        free(a->kw);
        return oom(cx, n);
    }
    a->npos = extra;
    for (size_t i = 0; i < n->l1.len; i++) {
        if (eval(cx, n->l1.data[i], &a->pos[a->npos])) {
            args_free(a);
            return -1;
        }
        a->npos++;
    }
    for (size_t i = 0; i < n->l2.len; i++) {
        if (eval(cx, n->l2.data[i], &a->kw[a->nkw])) {
            args_free(a);
            return -1;
        }
        a->nkw++;
    }
    return 0;
}

/* The keyword arguments of a macro call as jinja2 sees them: the call's own, then (for
 * {% call %}) caller=<the block's macro> as one more. */
typedef struct kwlist {
    char **name;
    jv *val;
    size_t n;        /* the call's own */
    jv block_caller; /* JV_MACRO, or undefined */
    uint8_t *used;   /* [n + 1] */
} kwlist;

static size_t kw_count(const kwlist *kw) { return kw->n + (kw->block_caller.k == JV_MACRO); }
static const char *kw_name(const kwlist *kw, size_t k) { return k < kw->n ? kw->name[k] : "caller"; }
static jv kw_val(const kwlist *kw, size_t k) { return k < kw->n ? kw->val[k] : kw->block_caller; }

/* Take the first unused keyword `name`: 1 and *v (a new reference), or 0. */
static int kw_take(kwlist *kw, const char *name, jv *v) {
    for (size_t k = 0; k < kw_count(kw); k++)
        if (!kw->used[k] && !strcmp(kw_name(kw, k), name)) {
            kw->used[k] = 1;
            *v = jv_ref(kw_val(kw, k));
            return 1;
        }
    return 0;
}

/* Bind a call's arguments in the macro's scope `s` as jinja2's Macro.__call__ does:
 * parameters from positional arguments, then keywords of their name, then defaults;
 * `caller` from the keyword caller= when the body reads it; the keywords left into
 * `kwargs` (else TypeError), the positional arguments left into `varargs` (else
 * TypeError). */
static int bind_args(jctx *cx, const jnode *at, const jnode *def, const char *mname, jscope *s, jv *args,
                     size_t nargs, kwlist *kw) {
    size_t np = def->names.len;
    int explicit_caller = 0;
    for (size_t p = 0; p < np; p++) {
        if (!strcmp(def->names.data[p], "caller")) explicit_caller = 1;
        jv v = jv_undef();
        if (p < nargs) {
            v = jv_ref(args[p]);
        } else if (!kw_take(kw, def->names.data[p], &v)) {
            if (p < def->l2.len && def->l2.data[p]) {
                if (eval(cx, def->l2.data[p], &v)) return -1;
            } else {
                v = jv_undef_hint("parameter '%s' was not provided", def->names.data[p]);
            }
        }
        if (scope_set(cx, at, s, def->names.data[p], v)) return -1;
    }
    if ((def->catches & JN_CATCH_CALLER) && !explicit_caller) {
        jv v;
        if (!kw_take(kw, "caller", &v)) v = jv_undef_hint("No caller defined");
        if (scope_set(cx, at, s, "caller", v)) return -1;
    }
    if (def->catches & JN_CATCH_KWARGS) {
        jv d = jv_dict_new(0);
        if (d.k != JV_DICT) return oom(cx, at);
        for (size_t k = 0; k < kw_count(kw); k++)
            if (!kw->used[k] && jv_dict_set(d, jv_cstr(kw_name(kw, k)), jv_ref(kw_val(kw, k)))) {
                jv_unref(d);
                return oom(cx, at);
            }
        if (scope_set(cx, at, s, "kwargs", d)) return -1;
    } else {
        const char *left = NULL;
        for (size_t k = 0; k < kw_count(kw); k++)
            if (!kw->used[k]) {
                if (!strcmp(kw_name(kw, k), "caller"))
                    return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: macro '%s' was invoked with two values for "
                                   "the special caller argument. This is most likely a bug.", mname);
                if (!left) left = kw_name(kw, k);
            }
        if (left) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: macro '%s' takes no keyword argument '%s'", mname, left);
    }
    if (def->catches & JN_CATCH_VARARGS) {
        jv t = jv_list_new(JL_TUPLE);
        if (t.k != JV_LIST) return oom(cx, at);
        for (size_t i = np; i < nargs; i++)
            if (jv_list_push(t, jv_ref(args[i]))) {
                jv_unref(t);
                return oom(cx, at);
            }
        if (scope_set(cx, at, s, "varargs", t)) return -1;
    } else if (nargs > np) {
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: macro '%s' takes not more than %zu argument(s)", mname, np);
    }
    return 0;
}

static int call_macro(jctx *cx, const jnode *at, jv fn, jv *args, size_t nargs, char **kwn, jv *kwv, size_t nkw,
                      jv block_caller, jv *out) {
    jmacro *m = (jmacro *)fn.u.o;
    const jnode *def = m->def;
    const char *mname = def->k == N_MACRO ? def->name : "caller";
    if (cx->depth >= cx->lim.max_depth)
        return jx_fail(cx, at, FACET_E_LIMIT, "macro calls nested deeper than %d", cx->lim.max_depth);
    uint8_t used_small[32]; /* most calls: no allocation */
    kwlist kw = {kwn, kwv, nkw, block_caller, nkw < sizeof used_small ? used_small : calloc(nkw + 1, 1)};
    if (!kw.used) return oom(cx, at);
    if (kw.used == used_small) memset(used_small, 0, sizeof used_small);
    jscope *parent = scope_alive(cx, m->scope, m->scope_serial) ? m->scope : cx->root;
    jscope *s = scope_push(cx, parent, at);
    if (!s) {
        if (kw.used != used_small) free(kw.used);
        return -1;
    }
    jscope *saved_scope = cx->cur;
    facet_str *saved_out = cx->out;
    facet_str buf = {0};
    buf.limit = cx->lim.max_output;
    cx->cur = s;
    cx->out = &buf;
    cx->depth++;
    int rc = bind_args(cx, at, def, mname, s, args, nargs, &kw);
    if (kw.used != used_small) free(kw.used);
    if (!rc) {
        rc = exec_list(cx, &def->l1);
        if (rc > 0) rc = 0;
    }
    cx->depth--;
    cx->cur = saved_scope;
    cx->out = saved_out;
    scope_pop(cx, s);
    if (rc) {
        facet_str_free(&buf);
        return -1;
    }
    *out = jv_str_take(&buf);
    return out->k == JV_STR ? 0 : oom(cx, at);
}

/* ------------------------------------------------------- global functions ---- */

static int g_range(jctx *cx, const jnode *at, const char *name, const jargs *g, jv *out) {
    (void)name;
    int64_t a[3] = {0, 0, 1};
    if (g->n < 1 || g->n > 3 || g->nkw)
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: range expected 1 to 3 integer arguments");
    for (size_t i = 0; i < g->n; i++) {
        if (g->a[i].k != JV_INT && g->a[i].k != JV_BOOL)
            return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: '%s' object cannot be interpreted as an integer", jv_type_name(g->a[i]));
    }
    if (g->n == 1) a[1] = ival(g->a[0]);
    else {
        a[0] = ival(g->a[0]);
        a[1] = ival(g->a[1]);
        if (g->n == 3) a[2] = ival(g->a[2]);
    }
    if (a[2] == 0) return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: range() arg 3 must not be zero");
    double cnt = a[2] > 0 ? ceil(((double)a[1] - (double)a[0]) / (double)a[2]) : ceil(((double)a[0] - (double)a[1]) / -(double)a[2]);
    if (cnt > MAX_RANGE)
        return jx_fail(cx, at, FACET_E_LIMIT, "OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", MAX_RANGE);
    jv l = jv_list_new(JL_LIST);
    if (l.k != JV_LIST) return oom(cx, at);
    for (int64_t i = a[0]; a[2] > 0 ? i < a[1] : i > a[1]; i += a[2])
        if (jv_list_push(l, jv_int(i))) {
            jv_unref(l);
            return oom(cx, at);
        }
    *out = l;
    return 0;
}

static int g_dict(jctx *cx, const jnode *at, const char *name, const jargs *g, jv *out) { /* dict(), namespace() (mode 1) */
    jv d = jv_dict_new(g->mode);
    if (d.k != JV_DICT && d.k != JV_NS) return oom(cx, at);
    for (size_t i = 0; i < g->n; i++) {
        if (g->a[i].k != JV_DICT && g->a[i].k != JV_NS) {
            jv_unref(d);
            return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: %s() positional argument must be a mapping", name);
        }
        for (size_t k = 0; k < JD(g->a[i])->n; k++)
            if (jv_dict_set(d, jv_ref(JD(g->a[i])->key[k]), jv_ref(JD(g->a[i])->val[k]))) {
                jv_unref(d);
                return oom(cx, at);
            }
    }
    for (size_t k = 0; k < g->nkw; k++)
        if (jv_dict_set(d, jv_cstr(g->kwn[k]), jv_ref(g->kwv[k]))) {
            jv_unref(d);
            return oom(cx, at);
        }
    *out = d;
    return 0;
}

static int g_raise_exception(jctx *cx, const jnode *at, const char *name, const jargs *g, jv *out) {
    (void)name, (void)out;
    facet_str b = {0};
    if (g->n >= 1 && jx_str(cx, at, g->a[0], &b)) {
        facet_str_free(&b);
        return -1;
    }
    jx_fail(cx, at, FACET_E_TEMPLATE, "TemplateError: %s", facet_str_cstr(&b));
    facet_str_free(&b);
    return -1;
}

static int g_strftime_now(jctx *cx, const jnode *at, const char *name, const jargs *g, jv *out) {
    (void)name;
    if (g->n != 1 || g->a[0].k != JV_STR)
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: strftime_now() takes one string argument");
    time_t t = (time_t)cx->now;
    struct tm tm;
    if (!(cx->now_local ? localtime_r(&t, &tm) : gmtime_r(&t, &tm)))
        return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: time out of range");
    if (JS(g->a[0])->len > 4096) return jx_fail(cx, at, FACET_E_LIMIT, "strftime_now format longer than 4096 bytes");
    /* strftime returns 0 when the buffer is too small: grow it (an expansion is at
     * most ~100 bytes per conversion, so 256x the format length always fits) */
    facet_str buf = {0};
    size_t k = 0;
    for (size_t cap = 256; cap <= 256 * (JS(g->a[0])->len + 4); cap *= 4) {
        if (facet_str_reserve(&buf, cap)) { /* room for cap bytes */
            facet_str_free(&buf);
            return oom(cx, at);
        }
        k = strftime(buf.data, cap, JS(g->a[0])->s, &tm);
        if (k > 0) break;
    }
    *out = jv_str(facet_str_cstr(&buf), k);
    facet_str_free(&buf);
    return out->k == JV_STR ? 0 : oom(cx, at);
}

/* The global functions a template may call (transformers adds raise_exception and
 * strftime_now to Jinja2's range, dict and namespace), sorted by name for binary
 * search; a name here resolves to a function value unless a variable shadows it. */
typedef struct jglobal_row {
    const char *name;
    int (*fn)(jctx *cx, const jnode *at, const char *name, const jargs *g, jv *out);
    int mode;
} jglobal_row;

static const jglobal_row GLOBALS[] = {
    {"dict", g_dict, 0},
    {"namespace", g_dict, 1},
    {"raise_exception", g_raise_exception, 0},
    {"range", g_range, 0},
    {"strftime_now", g_strftime_now, 0},
};

static const jglobal_row *global_row(const char *name) {
    return jx_table_find(GLOBALS, sizeof GLOBALS / sizeof GLOBALS[0], sizeof GLOBALS[0], name);
}

int jx_global_table_sorted(void) { return jx_table_sorted(GLOBALS, sizeof GLOBALS / sizeof GLOBALS[0], sizeof GLOBALS[0]); }

static int builtin_call(jctx *cx, const jnode *at, const char *name, jv *args, size_t nargs, char **kwn, jv *kwv,
                        size_t nkw, jv *out) {
    const jglobal_row *row = global_row(name);
    if (!row) return jx_fail(cx, at, FACET_E_INTERNAL, "unknown builtin %s", name);
    jargs g = {args, nargs, kwn, kwv, nkw, row->mode};
    return row->fn(cx, at, name, &g, out);
}

int jx_call_value(jctx *cx, const jnode *at, jv fn, jv *args, size_t nargs, char **kwn, jv *kwv, size_t nkw, jv *out) {
    if (fn.k == JV_MACRO) /* a caller= keyword is bound like any other (bind_args) */
        return call_macro(cx, at, fn, args, nargs, kwn, kwv, nkw, jv_undef(), out);
    if (fn.k == JV_FUNC) {
        jfunc *f = (jfunc *)fn.u.o;
        if (f->self.k == JV_UNDEF) return builtin_call(cx, at, f->name, args, nargs, kwn, kwv, nkw, out);
        if (f->self.k == JV_LOOP && !strcmp(f->name, "changed")) { /* jinja2 LoopContext.changed */
            if (nkw) return jx_fail(cx, at, FACET_E_UNSUPPORTED, "unsupported construct: keyword arguments to loop.changed()");
            jloop *lp = (jloop *)f->self.u.o;
            jv t = jv_list_new(JL_TUPLE);
            for (size_t i = 0; t.k == JV_LIST && i < nargs; i++)
                if (jv_list_push(t, jv_ref(args[i]))) t = jv_none();
            if (t.k != JV_LIST) return oom(cx, at);
            int differs = lp->changed_last.k == JV_UNDEF || !jv_equal(lp->changed_last, t);
            if (differs) {
                int64_t budget = HOLDS_BUDGET;
                int h = holds(t, &lp->h, 0, &budget);
                if (h) { /* storing the loop in itself would be a cycle */
                    jv_unref(t);
                    if (h < 0)
                        return jx_fail(cx, at, FACET_E_LIMIT, "loop.changed() argument holds more than %d references",
                                       HOLDS_BUDGET);
                    return jx_fail(cx, at, FACET_E_UNSUPPORTED, "unsupported construct: loop.changed(loop)");
                }
                jv_unref(lp->changed_last);
                lp->changed_last = t;
            } else {
                jv_unref(t);
            }
            *out = jv_bool(differs);
            return 0;
        }
        if (f->self.k == JV_LOOP && !strcmp(f->name, "cycle")) {
            if (nargs == 0) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: no items for cycling given");
            jloop *lp = (jloop *)f->self.u.o;
            *out = jv_ref(args[lp->idx % nargs]);
            return 0;
        }
        int rc = 0;
        if (jx_method(cx, at, f->self, f->name, args, nargs, kwn, kwv, nkw, out, &rc)) return rc;
        return jx_fail(cx, at, FACET_E_INTERNAL, "method %s vanished", f->name);
    }
    if (fn.k == JV_UNDEF) return jx_undef_error(cx, at, fn);
    return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: '%s' object is not callable", jv_type_name(fn));
}

/* Apply the filter node chain `f` (innermost input NULL -> `input`). */
static int apply_filter(jctx *cx, const jnode *f, jv input, jv *out) {
    jv in;
    if (f->a) {
        if (eval(cx, f->a, &in)) return -1;
    } else {
        in = jv_ref(input);
    }
    argv_ a;
    if (eval_args(cx, f, 0, &a)) {
        jv_unref(in);
        return -1;
    }
    int rc = 0;
    int known = jx_filter(cx, f, f->name, in, a.pos, a.npos, f->names.data, a.kw, a.nkw, out, &rc);
    args_free(&a);
    jv_unref(in);
    if (!known) return jx_fail(cx, f, FACET_E_UNSUPPORTED, "unsupported construct: filter '%s'", f->name);
    return rc;
}

static int apply_filter_chain(jctx *cx, const jnode *f, jv input, jv *out) {
    /* f is the outermost filter; its innermost `a` is NULL. Collect and apply inside out. */
    const jnode *chain[64];
    size_t n = 0;
    for (const jnode *x = f; x; x = x->a) {
        if (n == 64) return jx_fail(cx, f, FACET_E_LIMIT, "filter chain longer than 64");
        chain[n++] = x;
    }
    jv v = jv_ref(input);
    for (size_t i = n; i-- > 0;) {
        argv_ a;
        if (eval_args(cx, chain[i], 0, &a)) {
            jv_unref(v);
            return -1;
        }
        int rc = 0;
        jv r;
        int known = jx_filter(cx, chain[i], chain[i]->name, v, a.pos, a.npos, chain[i]->names.data, a.kw, a.nkw, &r, &rc);
        args_free(&a);
        jv_unref(v);
        if (!known) return jx_fail(cx, chain[i], FACET_E_UNSUPPORTED, "unsupported construct: filter '%s'", chain[i]->name);
        if (rc) return -1;
        v = r;
    }
    *out = v;
    return 0;
}

/* Every expression's value, bounded: a string past the output limit is an error where it
 * is made, so a template that doubles one in a loop (~, +, replace, join, format, tojson)
 * fails at once instead of growing 2^n bytes. */
static int eval_node(jctx *cx, const jnode *n, jv *out);
static int eval(jctx *cx, const jnode *n, jv *out) {
    if (eval_node(cx, n, out)) return -1;
    if (out->k == JV_STR && JS(*out)->len > cx->lim.max_output) {
        size_t len = JS(*out)->len;
        jv_unref(*out);
        *out = jv_none();
        return jx_fail(cx, n, FACET_E_LIMIT, "a string of %zu bytes exceeds the output limit of %zu bytes",
                       len, cx->lim.max_output);
    }
    return 0;
}

static int eval_node(jctx *cx, const jnode *n, jv *out) {
    if (cx->failed) return -1;
    switch (n->k) {
    case N_LIT:
        /* the AST is shared by concurrent renders: never touch its reference counts */
        if (n->lit.k == JV_STR) {
            *out = jv_str(JS(n->lit)->s, JS(n->lit)->len);
            return out->k == JV_STR ? 0 : oom(cx, n);
        }
        *out = n->lit;
        return 0;
    case N_NAME: *out = lookup(cx, n->name); return 0;
    case N_GETATTR: {
        jv o;
        if (eval(cx, n->a, &o)) return -1;
        int rc = jx_getattr(cx, n, o, n->name, out);
        jv_unref(o);
        return rc;
    }
    case N_GETITEM: {
        jv o;
        if (eval(cx, n->a, &o)) return -1;
        int rc;
        if (n->b->k == N_SLICE) {
            jv p[3] = {jv_none(), jv_none(), jv_none()};
            const jnode *pn[3] = {n->b->b, n->b->c, n->b->d};
            rc = 0;
            for (int i = 0; i < 3 && !rc; i++)
                if (pn[i]) rc = eval(cx, pn[i], &p[i]);
            if (!rc) rc = do_slice(cx, n, o, p[0], p[1], p[2], out);
            for (int i = 0; i < 3; i++) jv_unref(p[i]);
        } else {
            jv k;
            rc = eval(cx, n->b, &k);
            if (!rc) {
                rc = jx_getitem(cx, n, o, k, out);
                jv_unref(k);
            }
        }
        jv_unref(o);
        return rc;
    }
    case N_BINOP: {
        jv a, b;
        if (eval(cx, n->a, &a)) return -1;
        if (eval(cx, n->b, &b)) {
            jv_unref(a);
            return -1;
        }
        int rc = binop(cx, n, n->name, a, b, out);
        jv_unref(a);
        jv_unref(b);
        return rc;
    }
    case N_NEG: case N_POS: {
        jv a;
        if (eval(cx, n->a, &a)) return -1;
        int rc = 0;
        if (a.k == JV_INT && n->k == N_NEG) {
            if (a.u.i == INT64_MIN) rc = jx_fail(cx, n, FACET_E_LIMIT, "integer result of '-' exceeds 64 bits");
            else *out = jv_int(-a.u.i);
        } else if (a.k == JV_BOOL || a.k == JV_INT) *out = jv_int(n->k == N_NEG ? -ival(a) : ival(a));
        else if (a.k == JV_FLOAT) *out = jv_float(n->k == N_NEG ? -a.u.f : a.u.f);
        else if (a.k == JV_UNDEF) rc = jx_undef_error(cx, n, a);
        else rc = jx_fail(cx, n, FACET_E_TEMPLATE, "TypeError: bad operand type for unary %c: '%s'", n->k == N_NEG ? '-' : '+', jv_type_name(a));
        jv_unref(a);
        return rc;
    }
    case N_NOT: {
        jv a;
        if (eval(cx, n->a, &a)) return -1;
        *out = jv_bool(!jv_truthy(a));
        jv_unref(a);
        return 0;
    }
    case N_AND: case N_OR: {
        jv a;
        if (eval(cx, n->a, &a)) return -1;
        int t = jv_truthy(a);
        if ((n->k == N_AND && !t) || (n->k == N_OR && t)) {
            *out = a;
            return 0;
        }
        jv_unref(a);
        return eval(cx, n->b, out);
    }
    case N_COMPARE: {
        jv left;
        if (eval(cx, n->a, &left)) return -1;
        int res = 1;
        for (size_t i = 0; i < n->l1.len && res; i++) {
            jv right;
            if (eval(cx, n->l1.data[i], &right)) {
                jv_unref(left);
                return -1;
            }
            if (compare(cx, n, n->ops[i], left, right, &res)) {
                jv_unref(right);
                jv_unref(left);
                return -1;
            }
            jv_unref(left);
            left = right;
        }
        jv_unref(left);
        *out = jv_bool(res);
        return 0;
    }
    case N_COND: {
        jv c;
        if (eval(cx, n->a, &c)) return -1;
        int t = jv_truthy(c);
        jv_unref(c);
        if (t) return eval(cx, n->b, out);
        if (n->c) return eval(cx, n->c, out);
        *out = jv_undef_hint("the inline if-expression evaluated to false and no else section was defined.");
        return 0;
    }
    case N_LIST: case N_TUPLE: {
        jv l = jv_list_new(n->k == N_TUPLE ? JL_TUPLE : JL_LIST);
        if (l.k != JV_LIST) return oom(cx, n);
        for (size_t i = 0; i < n->l1.len; i++) {
            jv x;
            if (eval(cx, n->l1.data[i], &x)) {
                jv_unref(l);
                return -1;
            }
            if (jv_list_push(l, x)) {
                jv_unref(l);
                return oom(cx, n);
            }
        }
        *out = l;
        return 0;
    }
    case N_DICT: {
        jv d = jv_dict_new(0);
        if (d.k != JV_DICT) return oom(cx, n);
        for (size_t i = 0; i < n->l1.len; i++) {
            jv k, v;
            if (eval(cx, n->l1.data[i], &k)) {
                jv_unref(d);
                return -1;
            }
            if (!jv_hashable(k)) {
                jx_fail(cx, n, FACET_E_TEMPLATE, "TypeError: unhashable type: '%s'", jv_type_name(k));
                jv_unref(k);
                jv_unref(d);
                return -1;
            }
            if (eval(cx, n->l2.data[i], &v)) {
                jv_unref(k);
                jv_unref(d);
                return -1;
            }
            if (jv_dict_set(d, k, v)) {
                jv_unref(d);
                return oom(cx, n);
            }
        }
        *out = d;
        return 0;
    }
    case N_CALL: {
        jv fn;
        if (eval(cx, n->a, &fn)) return -1;
        argv_ a;
        if (eval_args(cx, n, 0, &a)) {
            jv_unref(fn);
            return -1;
        }
        int rc = jx_call_value(cx, n, fn, a.pos, a.npos, n->names.data, a.kw, a.nkw, out);
        args_free(&a);
        jv_unref(fn);
        return rc;
    }
    case N_FILTER: return apply_filter(cx, n, jv_undef(), out);
    case N_TEST: {
        jv in;
        if (eval(cx, n->a, &in)) return -1;
        argv_ a;
        if (n->names.len) {
            jv_unref(in);
            return jx_fail(cx, n, FACET_E_UNSUPPORTED, "unsupported construct: keyword arguments to test '%s'", n->name);
        }
        if (eval_args(cx, n, 0, &a)) {
            jv_unref(in);
            return -1;
        }
        int res = 0, rc = 0;
        int known = jx_test(cx, n, n->name, in, a.pos, a.npos, &res, &rc);
        args_free(&a);
        jv_unref(in);
        if (!known) return jx_fail(cx, n, FACET_E_UNSUPPORTED, "unsupported construct: test '%s'", n->name);
        if (rc) return -1;
        *out = jv_bool(n->neg ? !res : res);
        return 0;
    }
    default:
        return jx_fail(cx, n, FACET_E_INTERNAL, "node kind %d is not an expression", (int)n->k);
    }
}

/* ------------------------------------------------------------- statements ---- */

static int assign_targets(jctx *cx, const jnode *at, jscope *s, char **names, size_t nn, int tuple, jv v) {
    if (!tuple) return scope_set(cx, at, s, names[0], v);
    jv seq;
    if (v.k == JV_LIST && JL(v)->flavor != JL_GEN) seq = v;
    else {
        int rc = jx_iterate(cx, at, v, &seq);
        jv_unref(v);
        if (rc) return -1;
    }
    if (JL(seq)->len != nn) {
        size_t got = JL(seq)->len;
        jv_unref(seq);
        if (got > nn) return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: too many values to unpack (expected %zu)", nn);
        return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: not enough values to unpack (expected %zu, got %zu)", nn, got);
    }
    for (size_t i = 0; i < nn; i++)
        if (scope_set(cx, at, s, names[i], jv_ref(JL(seq)->data[i]))) {
            jv_unref(seq);
            return -1;
        }
    jv_unref(seq);
    return 0;
}

/* Whether value v holds a reference to object o (values are acyclic, so this ends): 1, 0,
 * or -1 when more than *budget references were followed (a shared list nested n deep has
 * 2^n paths: the walk would take as long). */
static int holds(jv v, const jobj *o, int depth, int64_t *budget) {
    if (!jv_is_obj(v) || depth > 10000) return 0;
    if (--*budget < 0) return -1;
    if (v.u.o == o) return 1;
    int h = 0;
    switch (v.k) {
    case JV_LIST:
        for (size_t i = 0; !h && i < JL(v)->len; i++) h = holds(JL(v)->data[i], o, depth + 1, budget);
        return h;
    case JV_DICT: case JV_NS:
        for (size_t i = 0; !h && i < JD(v)->n; i++) {
            h = holds(JD(v)->val[i], o, depth + 1, budget);
            if (!h) h = holds(JD(v)->key[i], o, depth + 1, budget);
        }
        return h;
    case JV_LOOP: {
        jv items = {JV_LIST, {.o = &((jloop *)v.u.o)->items->h}};
        return holds(items, o, depth + 1, budget);
    }
    case JV_FUNC: return holds(((jfunc *)v.u.o)->self, o, depth + 1, budget);
    default: return 0;
    }
}

static int set_ns_attr(jctx *cx, const jnode *at, const char *nsname, const char *attr, jv v) {
    jv ns = lookup(cx, nsname);
    if (ns.k != JV_NS) {
        jv_unref(ns);
        jv_unref(v);
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TemplateRuntimeError: cannot assign attribute on non-namespace object");
    }
    int64_t budget = HOLDS_BUDGET;
    int h = holds(v, ns.u.o, 0, &budget);
    if (h) { /* a cycle: Python would allow it, but printing it recurses */
        jv_unref(ns);
        jv_unref(v);
        if (h < 0)
            return jx_fail(cx, at, FACET_E_LIMIT, "a namespace attribute's value holds more than %d references",
                           HOLDS_BUDGET);
        return jx_fail(cx, at, FACET_E_UNSUPPORTED, "unsupported construct: a namespace attribute holding the namespace itself");
    }
    int rc = jv_dict_set(ns, jv_cstr(attr), v) ? oom(cx, at) : 0;
    jv_unref(ns);
    return rc;
}

static int capture(jctx *cx, const jnode *n, const jnlist *body, jv *out) {
    facet_str *saved = cx->out;
    facet_str buf = {0};
    buf.limit = cx->lim.max_output;
    cx->out = &buf;
    int rc = exec_list(cx, body);
    cx->out = saved;
    if (rc < 0) {
        facet_str_free(&buf);
        return -1;
    }
    if (rc > 0) {
        facet_str_free(&buf);
        return jx_fail(cx, n, FACET_E_UNSUPPORTED, "unsupported construct: break/continue out of a captured block");
    }
    *out = jv_str_take(&buf);
    return out->k == JV_STR ? 0 : oom(cx, n);
}

static int exec_for(jctx *cx, const jnode *n) {
    jv iterv, seq;
    if (eval(cx, n->a, &iterv)) return -1;
    int rc = jx_iterate(cx, n->a, iterv, &seq);
    jv_unref(iterv);
    if (rc) return -1;
    if (n->b) { /* `for x in xs if cond`: filter first, so loop.length counts kept items */
        jv kept = jv_list_new(JL_LIST);
        if (kept.k != JV_LIST) {
            jv_unref(seq);
            return oom(cx, n);
        }
        for (size_t i = 0; i < JL(seq)->len; i++) {
            if (++cx->iters > cx->lim.max_iterations) {
                jv_unref(seq);
                jv_unref(kept);
                return jx_fail(cx, n, FACET_E_LIMIT, "more than %lld loop iterations", (long long)cx->lim.max_iterations);
            }
            jscope *s = scope_push(cx, cx->cur, n);
            if (!s) rc = -1;
            jscope *saved = cx->cur;
            jv c = jv_undef();
            if (!rc) {
                rc = assign_targets(cx, n, s, n->names.data, n->names.len, n->neg, jv_ref(JL(seq)->data[i]));
                cx->cur = s;
                if (!rc) rc = eval(cx, n->b, &c);
                cx->cur = saved;
                scope_pop(cx, s);
            }
            if (!rc && jv_truthy(c) && jv_list_push(kept, jv_ref(JL(seq)->data[i]))) rc = oom(cx, n);
            jv_unref(c);
            if (rc) {
                jv_unref(seq);
                jv_unref(kept);
                return -1;
            }
        }
        jv_unref(seq);
        seq = kept;
    }
    if (JL(seq)->len == 0) {
        jv_unref(seq);
        rc = exec_list(cx, &n->l2);
        return rc;
    }
    jloop *lp = calloc(1, sizeof *lp);
    if (!lp) {
        jv_unref(seq);
        return oom(cx, n);
    }
    lp->h.rc = 1;
    lp->items = JL(seq); /* takes the reference */
    jv loopv = {JV_LOOP, {.o = &lp->h}};
    rc = 0;
    for (size_t i = 0; i < lp->items->len && rc >= 0; i++) {
        if (++cx->iters > cx->lim.max_iterations) {
            rc = jx_fail(cx, n, FACET_E_LIMIT, "more than %lld loop iterations", (long long)cx->lim.max_iterations);
            break;
        }
        lp->idx = i;
        jscope *s = scope_push(cx, cx->cur, n);
        if (!s) {
            rc = -1;
            break;
        }
        rc = scope_set(cx, n, s, "loop", jv_ref(loopv));
        if (!rc) rc = assign_targets(cx, n, s, n->names.data, n->names.len, n->neg, jv_ref(lp->items->data[i]));
        jscope *saved = cx->cur;
        cx->cur = s;
        if (!rc) rc = exec_list(cx, &n->l1);
        cx->cur = saved;
        scope_pop(cx, s);
        if (rc == FLOW_BREAK) {
            rc = 0;
            break;
        }
        if (rc == FLOW_CONTINUE) rc = 0;
    }
    jv_unref(loopv);
    return rc < 0 ? -1 : 0;
}

static int exec_stmt(jctx *cx, const jnode *n) {
    switch (n->k) {
    case N_TEXT:
        if (facet_str_append(cx->out, JS(n->lit)->s, JS(n->lit)->len)) return buf_fail(cx, n, cx->out);
        return 0;
    case N_OUTPUT: {
        jv v;
        if (eval(cx, n->a, &v)) return -1;
        int rc = jx_str(cx, n, v, cx->out);
        jv_unref(v);
        return rc;
    }
    case N_IF: {
        jv c;
        if (eval(cx, n->a, &c)) return -1;
        int t = jv_truthy(c);
        jv_unref(c);
        return exec_list(cx, t ? &n->l1 : &n->l2);
    }
    case N_FOR: return exec_for(cx, n);
    case N_SET: {
        jv v;
        if (eval(cx, n->b, &v)) return -1;
        if (n->name) return set_ns_attr(cx, n, n->names.data[0], n->name, v);
        return assign_targets(cx, n, cx->cur, n->names.data, n->names.len, n->neg, v);
    }
    case N_SETBLOCK: {
        jv v;
        if (capture(cx, n, &n->l1, &v)) return -1;
        if (n->a) {
            jv f;
            int rc = apply_filter_chain(cx, n->a, v, &f);
            jv_unref(v);
            if (rc) return -1;
            v = f;
        }
        if (n->name) return set_ns_attr(cx, n, n->names.data[0], n->name, v);
        return scope_set(cx, n, cx->cur, n->names.data[0], v);
    }
    case N_MACRO: case N_CALLBLOCK: {
        jmacro *m = calloc(1, sizeof *m);
        if (!m) return oom(cx, n);
        m->h.rc = 1;
        m->def = n;
        m->scope = cx->cur;
        m->scope_serial = cx->cur->serial;
        jv mv = {JV_MACRO, {.o = &m->h}};
        if (n->k == N_MACRO) return scope_set(cx, n, cx->cur, n->name, mv);
        /* {% call(...) fn(args) %}body{% endcall %}: fn(args, caller=<body macro>) */
        const jnode *call = n->a;
        jv fn;
        if (eval(cx, call->a, &fn)) {
            jv_unref(mv);
            return -1;
        }
        argv_ a;
        if (eval_args(cx, call, 0, &a)) {
            jv_unref(fn);
            jv_unref(mv);
            return -1;
        }
        jv res = jv_undef();
        int rc;
        if (fn.k == JV_MACRO)
            rc = call_macro(cx, n, fn, a.pos, a.npos, call->names.data, a.kw, a.nkw, mv, &res);
        else
            rc = jx_fail(cx, n, FACET_E_UNSUPPORTED, "unsupported construct: {%% call %%} of a non-macro");
        args_free(&a);
        jv_unref(fn);
        jv_unref(mv);
        if (!rc) rc = jx_str(cx, n, res, cx->out);
        jv_unref(res);
        return rc;
    }
    case N_FILTERBLOCK: {
        jv v, f;
        if (capture(cx, n, &n->l1, &v)) return -1;
        int rc = apply_filter_chain(cx, n->a, v, &f);
        jv_unref(v);
        if (rc) return -1;
        rc = jx_str(cx, n, f, cx->out);
        jv_unref(f);
        return rc;
    }
    case N_GENERATION: return exec_list(cx, &n->l1);
    case N_WITH: {
        jv *vals = calloc(n->names.len + 1, sizeof(jv));
        if (!vals) return oom(cx, n);
        size_t k = 0;
        int rc = 0;
        for (; k < n->names.len && !rc; k++)
            if (eval(cx, n->l2.data[k], &vals[k])) rc = -1;
        if (rc) k--;
        jscope *s = rc ? NULL : scope_push(cx, cx->cur, n);
        if (!rc && !s) rc = -1;
        for (size_t i = 0; i < k; i++) {
            if (!rc) rc = scope_set(cx, n, s, n->names.data[i], vals[i]);
            else jv_unref(vals[i]);
        }
        free(vals);
        if (s) {
            jscope *saved = cx->cur;
            cx->cur = s;
            if (!rc) rc = exec_list(cx, &n->l1);
            cx->cur = saved;
            scope_pop(cx, s);
        }
        return rc;
    }
    case N_BREAK: return FLOW_BREAK;
    case N_CONTINUE: return FLOW_CONTINUE;
    default: return jx_fail(cx, n, FACET_E_INTERNAL, "node kind %d is not a statement", (int)n->k);
    }
}

static int exec_list(jctx *cx, const jnlist *body) {
    for (size_t i = 0; i < body->len; i++) {
        int rc = exec_stmt(cx, body->data[i]);
        if (rc) return rc;
    }
    return 0;
}

facet_status jinja_render(const jtemplate *t, const json_t *vars, const jlimits *lim, int64_t now, int now_local,
                          char **out, size_t *out_len, facet_error *err) {
    facet_error local;
    if (!err) err = &local;
    facet_err_clear(err);
    *out = NULL;
    if (out_len) *out_len = 0;
    jctx cx = {0};
    cx.err = err;
    cx.now = now;
    cx.now_local = now_local;
    cx.lim.max_depth = lim && lim->max_depth > 0 ? lim->max_depth : 100;
    cx.lim.max_iterations = lim && lim->max_iterations > 0 ? lim->max_iterations : 1000000;
    cx.lim.max_output = lim && lim->max_output > 0 ? lim->max_output : (64u << 20);
    facet_str buf = {0};
    buf.limit = cx.lim.max_output;
    cx.out = &buf;
    jv_oom = 0;
    cx.root = scope_push(&cx, NULL, t->root);
    if (!cx.root) return err->status;
    cx.cur = cx.root;
    int rc = 0;
    if (vars && json_is_object(vars)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)vars, k, x) {
            jv v = jv_from_json(x);
            if (v.k == JV_UNDEF) {
                rc = oom(&cx, t->root);
                break;
            }
            if ((rc = scope_set(&cx, t->root, cx.root, k, v))) break;
        }
    }
    if (!rc) rc = exec_list(&cx, &t->root->l1);
    scope_pop(&cx, cx.root);
    facet_vec_free(&cx.live);
    if (jv_oom) { /* a value became None for want of memory: the output cannot be trusted */
        facet_str_free(&buf);
        return facet_err(err, FACET_E_NOMEM, "template: out of memory");
    }
    if (rc) {
        facet_str_free(&buf);
        if (!cx.failed) return facet_err(err, FACET_E_INTERNAL, "template: break/continue escaped a loop");
        return err->status;
    }
    if (out_len) *out_len = buf.len;
    *out = facet_str_take(&buf);
    if (!*out) return facet_err(err, FACET_E_NOMEM, "template: out of memory");
    return FACET_OK;
}
