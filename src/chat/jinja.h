/*
 * jinja.h — internal interface of facet's Jinja2 interpreter (src/chat).
 *
 * Semantics follow Jinja2 3.1 as Hugging Face transformers configures it for chat
 * templates (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
 * keep_trailing_newline off): see jinja2/lexer.py, parser.py, filters.py, tests.py,
 * sandbox.py of Jinja2 and transformers' _compile_jinja_template.
 *
 * Pieces: jinja_value.c (value model, Python str()/repr()), jinja_json.c (JSON <->
 * values, tojson), jinja_lex.c (source -> tokens), jinja_parse.c (tokens -> AST),
 * jinja_eval.c (AST -> text), jinja_filters.c, jinja_tests.c, jinja_methods.c.
 */
#ifndef FACET_CHAT_JINJA_H
#define FACET_CHAT_JINJA_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "util/str.h"
#include "util/vec.h"

/* ---------------------------------------------------------------- values ---- */

typedef enum jv_kind {
    JV_UNDEF = 0, /* Jinja2 Undefined; o = optional jstr hint (the error message) */
    JV_NONE,
    JV_BOOL,
    JV_INT,
    JV_FLOAT,
    JV_STR,   /* o = jstr (UTF-8 bytes)                                          */
    JV_LIST,  /* o = jlist (also tuples and one-shot generators, see flags)      */
    JV_DICT,  /* o = jdict (insertion-ordered)                                   */
    JV_NS,    /* o = jdict, mutable through {% set ns.attr = ... %}               */
    JV_MACRO, /* o = jmacro                                                      */
    JV_LOOP,  /* o = jloop (the `loop` variable of a for block)                  */
    JV_FUNC,  /* o = jfunc: a global function or a bound method                  */
    JV_BIGINT, /* o = jstr: an integer beyond 64 bits from JSON input, its decimal
                * text ("-" and digits). Python's int: str(), repr(), tojson, ==, the
                * integer/number tests and |int/|float take it exactly; arithmetic and
                * ordering refuse it by name (facet computes in 64 bits). */
} jv_kind;

typedef struct jobj {
    int rc;
} jobj; /* header of every heap value; the jv kind says how to free it */

typedef struct jv {
    jv_kind k;
    union {
        int b;
        int64_t i;
        double f;
        jobj *o;
    } u;
} jv;

typedef struct jstr {
    jobj h;
    size_t len;
    char s[];
} jstr;

/* List flavors: Python list, tuple, generator (one-shot iterator: always truthy, no
 * len/index), and the dict views keys()/values()/items() (len, iteration, no index). */
enum { JL_LIST = 0, JL_TUPLE = 1, JL_GEN = 2, JL_KEYS = 3, JL_VALUES = 4, JL_ITEMS = 5 };
#define JL_IS_SEQ(l) ((l)->flavor == JL_LIST || (l)->flavor == JL_TUPLE) /* index, slice, +, * */

typedef struct jlist {
    jobj h;
    int flavor; /* JL_LIST, JL_TUPLE, JL_GEN or a dict view (above) */
    FACET_VEC(jv); /* the items: data[0..len), a growable array (util/vec.h) */
} jlist;

typedef struct jdict {
    jobj h;
    size_t n, cap;
    jv *key, *val;
} jdict;

struct jnode;
typedef struct jmacro {
    jobj h;
    const struct jnode *def; /* N_MACRO node, or N_CALLBLOCK for `caller`       */
    struct jscope *scope;    /* defining scope (checked alive by serial)         */
    uint64_t scope_serial;
} jmacro;

typedef struct jloop {
    jobj h;
    jlist *items; /* the (filtered) sequence being iterated */
    size_t idx;
    jv changed_last; /* arguments of the last loop.changed() call (a tuple), or undefined */
} jloop;

typedef struct jfunc {
    jobj h;
    char name[24]; /* builtin name or method name */
    jv self;       /* bound object (JV_UNDEF for globals) */
} jfunc;

static inline jv jv_undef(void) { jv v = {JV_UNDEF, {.o = NULL}}; return v; }
static inline jv jv_none(void) { jv v = {JV_NONE, {.o = NULL}}; return v; }
static inline jv jv_bool(int b) { jv v = {JV_BOOL, {.b = b != 0}}; return v; }
static inline jv jv_int(int64_t i) { jv v = {JV_INT, {.i = i}}; return v; }
static inline jv jv_float(double f) { jv v = {JV_FLOAT, {.f = f}}; return v; }

/* Set (per thread) when a value could not be allocated: the constructors below then
 * return None (jv_list_push / jv_dict_set -1), which the evaluator cannot always tell
 * from a real None; jinja_render clears it first and reports FACET_E_NOMEM when it is
 * set at the end, whatever the template did with the None. */
extern _Thread_local int jv_oom;

int jv_is_obj(jv v);
jv jv_ref(jv v);   /* +1 reference, returns v */
void jv_unref(jv v);

jv jv_str(const char *s, size_t len);   /* NULL string object on OOM -> JV_NONE... */
jv jv_cstr(const char *s);
jv jv_bigint(const char *digits); /* a JV_BIGINT of its decimal text; JV_NONE on OOM */
/* A string value holding b's bytes; frees b (keeping its limit). JV_NONE when out of
 * memory or when an append to b had failed (its text would be incomplete). */
jv jv_str_take(facet_str *b);
jv jv_undef_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
jv jv_list_new(int flavor);
int jv_list_push(jv list, jv item); /* takes ownership of item; 0 ok, -1 OOM */
jv jv_dict_new(int ns);
int jv_dict_set(jv dict, jv key, jv val); /* takes ownership of key and val */
jv *jv_dict_get(jv dict, jv key);         /* borrowed, or NULL */
jv *jv_dict_gets(jv dict, const char *key);
jv jv_func(const char *name, jv self);    /* takes ownership of self */

static inline jstr *JS(jv v) { return (jstr *)v.u.o; }
static inline jlist *JL(jv v) { return (jlist *)v.u.o; }
static inline jdict *JD(jv v) { return (jdict *)v.u.o; }

int jv_truthy(jv v);
int jv_hashable(jv v); /* Python hash() works: not a list, dict, view or a tuple holding one */
int jv_equal(jv a, jv b);
const char *jv_type_name(jv v); /* Python type name: str, int, list, dict, NoneType... */

/* Text is built in the project's one growable string (util/str.h): a facet_str with
 * `limit` set stops at the render's output limit (failed == FACET_STR_OVER, told apart
 * from running out of memory, FACET_STR_NOMEM); its errors are sticky. */

/* Python repr(float) (shortest round-trip, "1.0", "1e-05", "inf", "nan"). */
void jv_format_float(double f, char out[40]);
/* Python str(v) appended to b; str of a string is itself. Returns 0, or -1 on OOM
 * or an unprintable value (a generator). */
int jv_to_pystr(facet_str *b, jv v);
/* Python repr(v). */
int jv_to_pyrepr(facet_str *b, jv v);

/* ------------------------------------------------------------ JSON bridge ---- */

/* Map a jansson value to a template value (objects keep key order). JV_UNDEF when out
 * of memory (no JSON value maps to Undefined). */
jv jv_from_json(const json_t *j);
/* json.dumps(v, ensure_ascii=False, indent=indent) (indent < 0: None). Returns 0, or
 * -1 with a Python-style TypeError text in *why for a non-serializable value. */
int jv_tojson(facet_str *b, jv v, int indent, const char **why);

/* json.dumps with every option transformers' tojson forwards: ensure_ascii (escape
 * non-ASCII as \uXXXX, surrogate pairs beyond the BMP), separators (item, key; NULL =
 * Python's default for the indent), sort_keys (string keys only). */
typedef struct jjson_opts {
    int indent; /* < 0: None */
    int ensure_ascii, sort_keys;
    const char *item_sep, *key_sep;
} jjson_opts;
int jv_tojson_opts(facet_str *b, jv v, const jjson_opts *o, const char **why);

/* ---------------------------------------------------------------- tokens ---- */

typedef enum jtok_kind {
    T_EOF = 0,
    T_TEXT,
    T_VAR_BEGIN,
    T_VAR_END,
    T_BLOCK_BEGIN,
    T_BLOCK_END,
    T_NAME,
    T_STRING,
    T_INT,
    T_FLOAT,
    T_OP, /* op[] holds the operator text */
} jtok_kind;

typedef struct jtok {
    jtok_kind k;
    int line, col;
    char op[4];
    char *s; /* owned: TEXT, NAME, STRING contents */
    size_t slen;
    int64_t i;
    double f;
} jtok;

typedef FACET_VEC(jtok) jtoks; /* the tokens, data[0..len), ending with T_EOF */

/* Tokenize `src`. Errors: FACET_E_PARSE / FACET_E_UNSUPPORTED with line:column. */
facet_status jinja_lex(const char *src, size_t len, jtoks *out, facet_error *err);
void jinja_toks_free(jtoks *t);

/* ------------------------------------------------------------------- AST ---- */

typedef enum jnode_kind {
    /* statements */
    N_TEXT, N_OUTPUT, N_IF, N_FOR, N_SET, N_SETBLOCK, N_MACRO, N_CALLBLOCK,
    N_FILTERBLOCK, N_BREAK, N_CONTINUE, N_GENERATION, N_WITH,
    /* expressions */
    N_LIT, N_NAME, N_GETATTR, N_GETITEM, N_SLICE, N_BINOP, N_NEG, N_POS, N_NOT, N_AND,
    N_OR, N_COMPARE, N_COND, N_LIST, N_TUPLE, N_DICT, N_CALL, N_FILTER, N_TEST,
} jnode_kind;

typedef FACET_VEC(struct jnode *) jnlist; /* owned child nodes, data[0..len) */

/* As jinja2's macro_body: a macro whose body reads `varargs` takes extra positional
 * arguments (a tuple), one that reads `kwargs` unknown keyword arguments (a dict), one
 * that reads `caller` (without a parameter of that name) binds the `caller` keyword. */
enum { JN_CATCH_VARARGS = 1, JN_CATCH_KWARGS = 2, JN_CATCH_CALLER = 4 };

typedef struct jnode {
    jnode_kind k;
    int line, col;
    char *name;      /* NAME, GETATTR attr, FILTER/TEST name, MACRO name, op text */
    jv lit;          /* LIT value */
    struct jnode *a, *b, *c, *d;
    jnlist l1, l2;   /* bodies, args, items; l2: else bodies, kwarg values, dict values */
    FACET_VEC(char *) names; /* owned: kwarg names (CALL/FILTER/TEST), targets (FOR/SET), params (MACRO) */
    int neg;         /* TEST: `is not` */
    int catches;     /* MACRO/CALLBLOCK: JN_CATCH_* bits (the body reads varargs, kwargs, caller) */
    int height;      /* levels of the tree under this node (parser's cache; 0 = not yet) */
    char ops[8][4];  /* COMPARE: operators for l1 operands ("==", "in", "ni" = not in) */
} jnode;

typedef struct jtemplate {
    jnode *root; /* a statement list held in root->l1 */
} jtemplate;

/* Parse template source into an AST. Errors carry line:column. */
facet_status jinja_parse(const char *src, size_t len, jtemplate *out, facet_error *err);
void jinja_template_free(jtemplate *t);

/* --------------------------------------------------------------- render ---- */

typedef struct jlimits {
    int max_depth;          /* macro/call nesting and expression recursion */
    int64_t max_iterations; /* total loop iterations in one render */
    size_t max_output;      /* bytes of output (and of any captured block) */
} jlimits;

/* Render `t` with variables from the JSON object `vars` (may be NULL). The output is
 * malloc'd and NUL-terminated; the caller frees it. `now` is the instant strftime_now
 * formats (seconds since the epoch), in local time when now_local is nonzero (Python's
 * datetime.now()), else in UTC (a fixed SOURCE_DATE_EPOCH instant). */
facet_status jinja_render(const jtemplate *t, const json_t *vars, const jlimits *lim,
                          int64_t now, int now_local, char **out, size_t *out_len, facet_error *err);

/* ------------------------------------------------ evaluator internals ---- */

typedef struct jscope jscope;
typedef struct jctx jctx;

/* Raise a template error of status `st` at node n ("line L:C: message"). Returns -1. */
int jx_fail(jctx *cx, const jnode *n, facet_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The render's output limit in bytes (jlimits.max_output): the bound on any string it
 * makes. */
size_t jx_max_output(const jctx *cx);
/* Call a callable value with evaluated args (kwargs: names[i] = kwv[i]). */
int jx_call_value(jctx *cx, const jnode *at, jv fn, jv *args, size_t nargs, char **kwn,
                  jv *kwv, size_t nkw, jv *out);
/* Getattr / getitem as Jinja2's sandbox does (attribute first vs item first). */
int jx_getattr(jctx *cx, const jnode *at, jv obj, const char *name, jv *out);
int jx_getitem(jctx *cx, const jnode *at, jv obj, jv key, jv *out);
/* Materialize an iterable (list, tuple, generator, dict keys, string chars, undefined)
 * into a new list reference. */
int jx_iterate(jctx *cx, const jnode *at, jv v, jv *out);
/* Python comparison a < b (for sort/min/max): sets *lt. */
int jx_less(jctx *cx, const jnode *at, jv a, jv b, int *lt);
/* Python str() that fails as Jinja2 would on undefined attribute chains. */
int jx_str(jctx *cx, const jnode *at, jv v, facet_str *b);
/* Report an Undefined being used where Jinja2 raises UndefinedError. */
int jx_undef_error(jctx *cx, const jnode *at, jv v);

/* Name tables (jinja_table.c). Filters, tests and methods are each an array of rows
 * whose first member is the name (const char *), sorted by strcmp: jx_table_find
 * returns the row named `name` or NULL (binary search); jx_table_sorted returns 1 when
 * the names strictly increase (the tests check every table). */
const void *jx_table_find(const void *rows, size_t n, size_t row_size, const char *name);
int jx_table_sorted(const void *rows, size_t n, size_t row_size);
/* Whether each file's table is sorted (for the tests). */
int jx_filter_table_sorted(void);
int jx_test_table_sorted(void);
int jx_method_tables_sorted(void);
int jx_statement_table_sorted(void);
int jx_global_table_sorted(void);

/* Arguments of a filter or method call: positional a[0..n), keywords kwn[k] = kwv[k]
 * (borrowed), and the mode of the table row being called. */
typedef struct jargs {
    jv *a;
    size_t n;
    char **kwn;
    jv *kwv;
    size_t nkw;
    int mode;
} jargs;
/* Parameter i (positional) or keyword `name` (NULL: positional only); NULL if absent. */
jv *jx_arg(const jargs *f, size_t i, const char *name);
/* 0 when every keyword of f is in the NULL-terminated list `accepted` (NULL: any);
 * else fails as Jinja2 does, "TypeError: <name><suffix> got an unexpected keyword
 * argument 'k'" (suffix " filter" or "()"), and returns -1. */
int jx_check_kw(jctx *cx, const jnode *at, const char *const *accepted, const jargs *f, const char *name,
                const char *suffix);

/* filters / tests / methods: return 1 if the name exists (result or error set), 0 if
 * unknown or not implemented by facet (the caller fails naming it as an unsupported
 * construct). rc receives 0 on success or -1 on error. */
int jx_filter(jctx *cx, const jnode *at, const char *name, jv in, jv *args, size_t nargs,
              char **kwn, jv *kwv, size_t nkw, jv *out, int *rc);
int jx_test(jctx *cx, const jnode *at, const char *name, jv in, jv *args, size_t nargs,
            int *result, int *rc);
int jx_test_exists(const char *name);
/* Whether `name` is one of Jinja2's builtin filters (or tojson). */
int jinja_filter_known(const char *name);
int jx_method(jctx *cx, const jnode *at, jv self, const char *name, jv *args, size_t nargs,
              char **kwn, jv *kwv, size_t nkw, jv *out, int *rc);
int jx_has_method(jv self, const char *name);
/* Whether `name` is a Python method of self's type (str, dict, list) that facet does not
 * implement: the caller fails with FACET_E_UNSUPPORTED instead of yielding undefined. */
int jx_unimplemented_method(jv self, const char *name);

/* str.format(*args, **kwargs) and printf-style `fmt % args` (jinja_format.c). */
int jx_str_format(jctx *cx, const jnode *at, jv self, jv *args, size_t nargs, char **kwn, jv *kwv, size_t nkw, jv *out);
int jx_printf_format(jctx *cx, const jnode *at, jv fmt, jv args, jv *out);

/* Python str helpers (UTF-8): whitespace test on a code point, case mapping. */
int jpy_isspace(int32_t cp);
int jpy_strip(const char *s, size_t n, const char *chars, size_t nchars, int left, int right,
              size_t *start, size_t *end);
jv jpy_case(const char *s, size_t n, int mode); /* 0 lower, 1 upper, 2 capitalize, 3 title
                                                  (str.title), 4 Jinja title filter */
jv jpy_splitlines(const char *s, size_t n, int keepends); /* str.splitlines -> list */
/* SpecialCasing multi-code-point mapping of cp (mode 0 lower, 1 upper, 2 title) as a
 * UTF-8 string, or NULL when the one-to-one mapping applies (jinja_casing.c). */
const char *jpy_special_case(int32_t cp, int mode);

#endif
