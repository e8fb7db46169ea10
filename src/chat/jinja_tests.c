/*
 * jinja_tests.c — Jinja2's builtin tests (jinja2/tests.py, 3.1) for `x is NAME`,
 * select/reject and selectattr/rejectattr, with Python's isinstance semantics (a bool
 * is a number but not an integer; Undefined is iterable, a sequence and callable).
 */
#include <math.h>
#include <string.h>

#include "chat/jinja.h"

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

/* --------------------------------------------------------- the tests ---- */

/* Each test sets *res for value v (and its one argument, when the row takes one);
 * 0 ok, -1 error (set through jx_fail). */
typedef int (*jtest_fn)(jctx *cx, const jnode *at, jv v, const jv *arg, int mode, int *res);

enum { K_DEFINED, K_UNDEFINED, K_NONE, K_BOOLEAN, K_FALSE, K_TRUE, K_INTEGER, K_FLOAT, K_NUMBER, K_STRING,
       K_MAPPING, K_SEQUENCE, K_ITERABLE, K_CALLABLE, K_ESCAPED };

/* Type tests, as Python's isinstance sees template values. */
static int t_kind(jctx *cx, const jnode *at, jv v, const jv *arg, int mode, int *res) {
    (void)cx, (void)at, (void)arg;
    switch (mode) {
    case K_DEFINED: *res = v.k != JV_UNDEF; break;
    case K_UNDEFINED: *res = v.k == JV_UNDEF; break;
    case K_NONE: *res = v.k == JV_NONE; break;
    case K_BOOLEAN: *res = v.k == JV_BOOL; break;
    case K_FALSE: *res = v.k == JV_BOOL && !v.u.b; break;
    case K_TRUE: *res = v.k == JV_BOOL && v.u.b; break;
    case K_INTEGER: *res = v.k == JV_INT || v.k == JV_BIGINT; break;
    case K_FLOAT: *res = v.k == JV_FLOAT; break;
    case K_NUMBER: *res = v.k == JV_INT || v.k == JV_BIGINT || v.k == JV_FLOAT || v.k == JV_BOOL; break;
    case K_STRING: *res = v.k == JV_STR; break;
    case K_MAPPING: *res = v.k == JV_DICT; break;
    case K_SEQUENCE:
        *res = v.k == JV_UNDEF || v.k == JV_STR || v.k == JV_DICT || (v.k == JV_LIST && JL_IS_SEQ(JL(v)));
        break;
    case K_ITERABLE: *res = v.k == JV_UNDEF || v.k == JV_STR || v.k == JV_DICT || v.k == JV_LIST || v.k == JV_LOOP; break;
    case K_CALLABLE: *res = v.k == JV_UNDEF || v.k == JV_MACRO || v.k == JV_FUNC; break;
    default: *res = 0; break; /* escaped: facet has no Markup values */
    }
    return 0;
}

static int t_case(jctx *cx, const jnode *at, jv v, const jv *arg, int upper, int *res) {
    (void)cx, (void)at, (void)arg;
    *res = case_test(v, upper);
    return 0;
}

static int t_odd(jctx *cx, const jnode *at, jv v, const jv *arg, int odd, int *res) { /* mode 0: even */
    (void)arg;
    if (v.k == JV_FLOAT) {
        double m = v.u.f - 2.0 * __builtin_floor(v.u.f / 2.0);
        *res = odd ? m == 1.0 : m == 0.0;
        return 0;
    }
    int r = 0;
    if (mod2(cx, at, v, 2, &r)) return -1;
    *res = odd ? r == 1 : r == 0;
    return 0;
}

static int t_divisibleby(jctx *cx, const jnode *at, jv v, const jv *arg, int mode, int *res) {
    (void)mode;
    jv d = *arg;
    if (d.k == JV_FLOAT || v.k == JV_FLOAT) { /* Python float modulo */
        int nums = (d.k == JV_FLOAT || d.k == JV_INT || d.k == JV_BOOL) && (v.k == JV_FLOAT || v.k == JV_INT || v.k == JV_BOOL);
        if (!nums)
            return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: unsupported operand type(s) for %%: '%s' and '%s'",
                           jv_type_name(v), jv_type_name(d));
        double a = v.k == JV_FLOAT ? v.u.f : v.k == JV_INT ? (double)v.u.i : v.u.b;
        double b = d.k == JV_FLOAT ? d.u.f : d.k == JV_INT ? (double)d.u.i : d.u.b;
        if (b == 0.0) return jx_fail(cx, at, FACET_E_TEMPLATE, "ZeroDivisionError: float modulo");
        *res = fmod(a, b) == 0.0;
        return 0;
    }
    if (d.k != JV_INT && d.k != JV_BOOL) {
        if (v.k == JV_UNDEF) return jx_undef_error(cx, at, v);
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: unsupported operand type(s) for %%: '%s' and '%s'",
                       jv_type_name(v), jv_type_name(d));
    }
    int r = 0;
    if (mod2(cx, at, v, d.k == JV_INT ? d.u.i : d.u.b, &r)) return -1;
    *res = r == 0;
    return 0;
}

static int t_sameas(jctx *cx, const jnode *at, jv v, const jv *arg, int mode, int *res) {
    (void)cx, (void)at, (void)mode;
    jv o = *arg;
    if (v.k != o.k) *res = 0;
    else if (v.k == JV_NONE || v.k == JV_UNDEF) *res = v.k == JV_NONE || v.u.o == o.u.o;
    else if (v.k == JV_BOOL) *res = v.u.b == o.u.b;
    else if (v.k == JV_INT) *res = v.u.i == o.u.i && v.u.i >= -5 && v.u.i <= 256; /* CPython small-int cache */
    else if (v.k == JV_FLOAT) *res = 0;
    else *res = v.u.o == o.u.o;
    return 0;
}

static int t_in(jctx *cx, const jnode *at, jv v, const jv *arg, int mode, int *res) {
    (void)mode;
    jv seq = *arg;
    if (seq.k == JV_STR) {
        if (v.k != JV_STR)
            return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: 'in <string>' requires string as left operand, not %s", jv_type_name(v));
        *res = JS(v)->len == 0 || memmem(JS(seq)->s, JS(seq)->len, JS(v)->s, JS(v)->len) != NULL;
    } else if (seq.k == JV_DICT) {
        if (!jv_hashable(v)) return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: unhashable type: '%s'", jv_type_name(v));
        *res = jv_dict_get(seq, v) != NULL;
    } else if (seq.k == JV_LIST) {
        for (size_t i = 0; i < JL(seq)->len && !*res; i++) *res = jv_equal(v, JL(seq)->data[i]);
    } else if (seq.k != JV_UNDEF) {
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: argument of type '%s' is not iterable", jv_type_name(seq));
    }
    return 0;
}

static int t_known(jctx *cx, const jnode *at, jv v, const jv *arg, int test, int *res) { /* mode 0: filter */
    (void)cx, (void)at, (void)arg;
    *res = v.k == JV_STR && (test ? jx_test_exists(JS(v)->s) : jinja_filter_known(JS(v)->s));
    return 0;
}

enum { C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE };

static int t_compare(jctx *cx, const jnode *at, jv a, const jv *arg, int op, int *res) {
    jv b = *arg;
    int lt;
    switch (op) {
    case C_EQ: *res = jv_equal(a, b); return 0;
    case C_NE: *res = !jv_equal(a, b); return 0;
    case C_LT: return jx_less(cx, at, a, b, res);
    case C_GT: return jx_less(cx, at, b, a, res);
    case C_LE:
        if (jx_less(cx, at, b, a, &lt)) return -1;
        *res = !lt;
        return 0;
    default:
        if (jx_less(cx, at, a, b, &lt)) return -1;
        *res = !lt;
        return 0;
    }
}

/* Jinja2 3.1's builtin tests (jinja2/tests.py TESTS), sorted by name (strcmp) for
 * binary search. Tests take no keyword arguments here (the evaluator refuses them as
 * an unsupported construct); `nargs` is 1 for the tests that need their argument. */
typedef struct jtest_row {
    const char *name;
    jtest_fn fn;
    int mode;
    int nargs;
} jtest_row;

static const jtest_row TESTS[] = {
    {"!=", t_compare, C_NE, 1},         {"<", t_compare, C_LT, 1},
    {"<=", t_compare, C_LE, 1},         {"==", t_compare, C_EQ, 1},
    {">", t_compare, C_GT, 1},          {">=", t_compare, C_GE, 1},
    {"boolean", t_kind, K_BOOLEAN, 0},  {"callable", t_kind, K_CALLABLE, 0},
    {"defined", t_kind, K_DEFINED, 0},  {"divisibleby", t_divisibleby, 0, 1},
    {"eq", t_compare, C_EQ, 1},         {"equalto", t_compare, C_EQ, 1},
    {"escaped", t_kind, K_ESCAPED, 0},  {"even", t_odd, 0, 0},
    {"false", t_kind, K_FALSE, 0},      {"filter", t_known, 0, 0},
    {"float", t_kind, K_FLOAT, 0},      {"ge", t_compare, C_GE, 1},
    {"greaterthan", t_compare, C_GT, 1}, {"gt", t_compare, C_GT, 1},
    {"in", t_in, 0, 1},                 {"integer", t_kind, K_INTEGER, 0},
    {"iterable", t_kind, K_ITERABLE, 0}, {"le", t_compare, C_LE, 1},
    {"lessthan", t_compare, C_LT, 1},   {"lower", t_case, 0, 0},
    {"lt", t_compare, C_LT, 1},         {"mapping", t_kind, K_MAPPING, 0},
    {"ne", t_compare, C_NE, 1},         {"none", t_kind, K_NONE, 0},
    {"number", t_kind, K_NUMBER, 0},    {"odd", t_odd, 1, 0},
    {"sameas", t_sameas, 0, 1},         {"sequence", t_kind, K_SEQUENCE, 0},
    {"string", t_kind, K_STRING, 0},    {"test", t_known, 1, 0},
    {"true", t_kind, K_TRUE, 0},        {"undefined", t_kind, K_UNDEFINED, 0},
    {"upper", t_case, 1, 0},
};

static const jtest_row *test_row(const char *name) {
    return jx_table_find(TESTS, sizeof TESTS / sizeof TESTS[0], sizeof TESTS[0], name);
}

int jx_test_exists(const char *name) { return test_row(name) != NULL; }

int jx_test_table_sorted(void) { return jx_table_sorted(TESTS, sizeof TESTS / sizeof TESTS[0], sizeof TESTS[0]); }

int jx_test(jctx *cx, const jnode *at, const char *name, jv v, jv *args, size_t nargs, int *res, int *rc) {
    const jtest_row *row = test_row(name);
    *rc = 0;
    *res = 0;
    if (!row) return 0;
    if (row->nargs && nargs < 1) {
        *rc = jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: test '%s' takes one argument", name);
        return 1;
    }
    *rc = row->fn(cx, at, v, row->nargs ? &args[0] : NULL, row->mode, res);
    return 1;
}
