/*
 * jinja_tests.c — Jinja2's builtin tests (jinja2/tests.py, 3.1) for `x is NAME`,
 * select/reject and selectattr/rejectattr, with Python's isinstance semantics (a bool
 * is a number but not an integer; Undefined is iterable, a sequence and callable).
 */
#include <math.h>
#include <string.h>

#include "chat/jinja.h"

static const char *const TESTS[] = {
    "defined", "undefined", "none", "boolean", "false", "true", "integer", "float", "number", "string",
    "mapping", "sequence", "iterable", "callable", "lower", "upper", "odd", "even", "divisibleby", "sameas",
    "eq", "equalto", "==", "ne", "!=", "lt", "lessthan", "<", "le", "<=", "gt", "greaterthan", ">", "ge", ">=",
    "in", "escaped", "filter", "test", NULL};

int jx_test_exists(const char *name) {
    for (int i = 0; TESTS[i]; i++)
        if (!strcmp(TESTS[i], name)) return 1;
    return 0;
}

static int need_arg(jctx *cx, const jnode *at, const char *name, size_t nargs) {
    if (nargs < 1) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: test '%s' takes one argument", name);
    return 0;
}

static int mod2(jctx *cx, const jnode *at, jv v, int64_t m, int *r) {
    if (v.k == JV_INT || v.k == JV_BOOL) {
        int64_t x = v.k == JV_INT ? v.u.i : v.u.b;
        if (m == 0) return jx_fail(cx, at, FACET_E_TEMPLATE, "ZeroDivisionError: integer division or modulo by zero");
        if (m == -1) {
            *r = 0;
            return 0;
        }
        int64_t q = x % m;
        if (q != 0 && ((q < 0) != (m < 0))) q += m;
        *r = (int)(q != 0 ? (q == 1 ? 1 : 2) : 0);
        return 0;
    }
    if (v.k == JV_UNDEF) return jx_undef_error(cx, at, v);
    return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: unsupported operand type(s) for %%: '%s' and 'int'", jv_type_name(v));
}

static int cmp_test(jctx *cx, const jnode *at, const char *op, jv a, jv b, int *res) {
    int lt;
    if (!strcmp(op, "eq")) *res = jv_equal(a, b);
    else if (!strcmp(op, "ne")) *res = !jv_equal(a, b);
    else if (!strcmp(op, "lt")) return jx_less(cx, at, a, b, res);
    else if (!strcmp(op, "gt")) return jx_less(cx, at, b, a, res);
    else if (!strcmp(op, "le")) {
        if (jx_less(cx, at, b, a, &lt)) return -1;
        *res = !lt;
    } else {
        if (jx_less(cx, at, a, b, &lt)) return -1;
        *res = !lt;
    }
    return 0;
}

static int case_test(jv v, int upper) {
    facet_str b = {0};
    if (jv_to_pystr(&b, v)) {
        facet_str_free(&b);
        return 0;
    }
    jv s = jv_str_take(&b);
    if (s.k != JV_STR) return 0;
    jv r;
    int rc = 0;
    jx_method(NULL, NULL, s, upper ? "isupper" : "islower", NULL, 0, NULL, NULL, 0, &r, &rc);
    jv_unref(s);
    return r.k == JV_BOOL && r.u.b;
}

int jx_test(jctx *cx, const jnode *at, const char *name, jv v, jv *args, size_t nargs, int *res, int *rc) {
    *rc = 0;
    *res = 0;
    if (!jx_test_exists(name)) return 0;
    if (!strcmp(name, "defined")) *res = v.k != JV_UNDEF;
    else if (!strcmp(name, "undefined")) *res = v.k == JV_UNDEF;
    else if (!strcmp(name, "none")) *res = v.k == JV_NONE;
    else if (!strcmp(name, "boolean")) *res = v.k == JV_BOOL;
    else if (!strcmp(name, "false")) *res = v.k == JV_BOOL && !v.u.b;
    else if (!strcmp(name, "true")) *res = v.k == JV_BOOL && v.u.b;
    else if (!strcmp(name, "integer")) *res = v.k == JV_INT;
    else if (!strcmp(name, "float")) *res = v.k == JV_FLOAT;
    else if (!strcmp(name, "number")) *res = v.k == JV_INT || v.k == JV_FLOAT || v.k == JV_BOOL;
    else if (!strcmp(name, "string")) *res = v.k == JV_STR;
    else if (!strcmp(name, "mapping")) *res = v.k == JV_DICT;
    else if (!strcmp(name, "sequence"))
        *res = v.k == JV_UNDEF || v.k == JV_STR || v.k == JV_DICT || (v.k == JV_LIST && JL_IS_SEQ(JL(v)));
    else if (!strcmp(name, "iterable"))
        *res = v.k == JV_UNDEF || v.k == JV_STR || v.k == JV_DICT || v.k == JV_LIST || v.k == JV_LOOP;
    else if (!strcmp(name, "callable")) *res = v.k == JV_UNDEF || v.k == JV_MACRO || v.k == JV_FUNC;
    else if (!strcmp(name, "lower") || !strcmp(name, "upper")) *res = case_test(v, name[0] == 'u');
    else if (!strcmp(name, "odd") || !strcmp(name, "even")) {
        int r;
        if (v.k == JV_FLOAT) {
            double m = v.u.f - 2.0 * __builtin_floor(v.u.f / 2.0);
            *res = name[0] == 'o' ? m == 1.0 : m == 0.0;
        } else {
            if ((*rc = mod2(cx, at, v, 2, &r))) return 1;
            *res = name[0] == 'o' ? r == 1 : r == 0;
        }
    } else if (!strcmp(name, "divisibleby")) {
        if ((*rc = need_arg(cx, at, name, nargs))) return 1;
        if (args[0].k == JV_FLOAT || v.k == JV_FLOAT) { /* Python float modulo */
            int nums = (args[0].k == JV_FLOAT || args[0].k == JV_INT || args[0].k == JV_BOOL) &&
                       (v.k == JV_FLOAT || v.k == JV_INT || v.k == JV_BOOL);
            if (!nums) {
                *rc = jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: unsupported operand type(s) for %%: '%s' and '%s'",
                              jv_type_name(v), jv_type_name(args[0]));
                return 1;
            }
            double a = v.k == JV_FLOAT ? v.u.f : v.k == JV_INT ? (double)v.u.i : v.u.b;
            double b = args[0].k == JV_FLOAT ? args[0].u.f : args[0].k == JV_INT ? (double)args[0].u.i : args[0].u.b;
            if (b == 0.0) {
                *rc = jx_fail(cx, at, FACET_E_TEMPLATE, "ZeroDivisionError: float modulo");
                return 1;
            }
            *res = fmod(a, b) == 0.0;
            return 1;
        }
        if (args[0].k != JV_INT && args[0].k != JV_BOOL) {
            if (v.k == JV_UNDEF) *rc = jx_undef_error(cx, at, v);
            else *rc = jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: unsupported operand type(s) for %%: '%s' and '%s'",
                               jv_type_name(v), jv_type_name(args[0]));
            return 1;
        }
        int r;
        if ((*rc = mod2(cx, at, v, args[0].k == JV_INT ? args[0].u.i : args[0].u.b, &r))) return 1;
        *res = r == 0;
    } else if (!strcmp(name, "sameas")) {
        if ((*rc = need_arg(cx, at, name, nargs))) return 1;
        jv o = args[0];
        if (v.k != o.k) *res = 0;
        else if (v.k == JV_NONE || v.k == JV_UNDEF) *res = v.k == JV_NONE || v.u.o == o.u.o;
        else if (v.k == JV_BOOL) *res = v.u.b == o.u.b;
        else if (v.k == JV_INT) *res = v.u.i == o.u.i && v.u.i >= -5 && v.u.i <= 256; /* CPython small-int cache */
        else if (v.k == JV_FLOAT) *res = 0;
        else *res = v.u.o == o.u.o;
    } else if (!strcmp(name, "in")) {
        if ((*rc = need_arg(cx, at, name, nargs))) return 1;
        jv seq = args[0];
        if (seq.k == JV_STR) {
            if (v.k != JV_STR) {
                *rc = jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: 'in <string>' requires string as left operand, not %s", jv_type_name(v));
                return 1;
            }
            *res = JS(v)->len == 0 || memmem(JS(seq)->s, JS(seq)->len, JS(v)->s, JS(v)->len) != NULL;
        } else if (seq.k == JV_DICT) {
            if (!jv_hashable(v)) {
                *rc = jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: unhashable type: '%s'", jv_type_name(v));
                return 1;
            }
            *res = jv_dict_get(seq, v) != NULL;
        } else if (seq.k == JV_LIST) {
            for (size_t i = 0; i < JL(seq)->n && !*res; i++) *res = jv_equal(v, JL(seq)->v[i]);
        } else if (seq.k != JV_UNDEF) {
            *rc = jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: argument of type '%s' is not iterable", jv_type_name(seq));
        }
    } else if (!strcmp(name, "escaped")) *res = 0;
    else if (!strcmp(name, "filter")) {
        *res = v.k == JV_STR && jinja_filter_known(JS(v)->s);
    } else if (!strcmp(name, "test")) *res = v.k == JV_STR && jx_test_exists(JS(v)->s);
    else {
        /* comparison tests */
        const char *op = NULL;
        if (!strcmp(name, "eq") || !strcmp(name, "equalto") || !strcmp(name, "==")) op = "eq";
        else if (!strcmp(name, "ne") || !strcmp(name, "!=")) op = "ne";
        else if (!strcmp(name, "lt") || !strcmp(name, "lessthan") || !strcmp(name, "<")) op = "lt";
        else if (!strcmp(name, "le") || !strcmp(name, "<=")) op = "le";
        else if (!strcmp(name, "gt") || !strcmp(name, "greaterthan") || !strcmp(name, ">")) op = "gt";
        else op = "ge";
        if ((*rc = need_arg(cx, at, name, nargs))) return 1;
        *rc = cmp_test(cx, at, op, v, args[0], res);
    }
    return 1;
}
