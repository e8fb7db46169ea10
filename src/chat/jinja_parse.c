/*
 * jinja_parse.c — tokens to an AST, following the grammar of jinja2/parser.py (3.1):
 * operator precedence (or < and < not < compare < +,- < ~ < *,/,//,% < ** < unary <
 * postfix/filters/tests; the binary levels are one table, BINOPS, read by precedence
 * climbing), conditional expressions, implicit tuples, slices, and the
 * statements chat templates use (if, for, set, macro, call, filter, break, continue,
 * generation). Anything else fails naming the construct and its line:column.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"

#define MAX_NEST 200
#define MAX_TREE_HEIGHT 1000 /* expression tree levels (too_tall) */


typedef struct parser {
    jtoks tk;
    size_t i;
    facet_error *err;
    int failed;
    int depth;
    int loop_depth;
} parser;

static jtok *cur(parser *P) { return &P->tk.data[P->i]; }
static jtok *peek(parser *P, size_t k) {
    size_t j = P->i + k;
    return j < P->tk.len ? &P->tk.data[j] : &P->tk.data[P->tk.len - 1];
}
static void next(parser *P) {
    if (cur(P)->k != T_EOF) P->i++;
}

static jnode *fail(parser *P, const jtok *t, facet_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static jnode *fail(parser *P, const jtok *t, facet_status st, const char *fmt, ...) {
    if (P->failed) return NULL;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    facet_err(P->err, st, "template line %d:%d: %s", t->line, t->col, msg);
    P->failed = 1;
    return NULL;
}

static int is_op(parser *P, const char *op) { return cur(P)->k == T_OP && !strcmp(cur(P)->op, op); }
static int is_name(parser *P, const char *nm) { return cur(P)->k == T_NAME && !strcmp(cur(P)->s, nm); }

static const char *tok_desc(const jtok *t) {
    switch (t->k) {
    case T_EOF: return "end of template";
    case T_TEXT: return "template data";
    case T_VAR_BEGIN: return "'{{'";
    case T_VAR_END: return "'}}'";
    case T_BLOCK_BEGIN: return "'{%'";
    case T_BLOCK_END: return "'%}'";
    case T_NAME: return t->s;
    case T_STRING: return "string";
    case T_INT: return "integer";
    case T_FLOAT: return "float";
    case T_OP: return t->op;
    }
    return "token";
}

static int expect_op(parser *P, const char *op) {
    if (!is_op(P, op)) {
        fail(P, cur(P), FACET_E_PARSE, "expected '%s', got '%s'", op, tok_desc(cur(P)));
        return -1;
    }
    next(P);
    return 0;
}

static int expect_kind(parser *P, jtok_kind k, const char *what) {
    if (cur(P)->k != k) {
        fail(P, cur(P), FACET_E_PARSE, "expected %s, got '%s'", what, tok_desc(cur(P)));
        return -1;
    }
    next(P);
    return 0;
}

static jnode *node(parser *P, jnode_kind k, const jtok *at) {
    jnode *n = calloc(1, sizeof *n);
    if (!n) return fail(P, at, FACET_E_NOMEM, "out of memory");
    n->k = k;
    n->line = at->line;
    n->col = at->col;
    return n;
}

static int nl_push(parser *P, jnlist *l, jnode *x) {
    if (facet_vec_push(l, x) == 0) return 0;
    fail(P, cur(P), FACET_E_NOMEM, "out of memory");
    return -1;
}

static int name_push(parser *P, jnode *n, const char *s) {
    char *d = strdup(s ? s : "");
    if (d && facet_vec_push(&n->names, d) == 0) return 0;
    free(d);
    fail(P, cur(P), FACET_E_NOMEM, "out of memory");
    return -1;
}

static void node_free(jnode *n);
static void nl_free(jnlist *l) {
    for (size_t i = 0; i < l->len; i++) node_free(l->data[i]);
    free(l->data);
}
static void node_free(jnode *n) {
    if (!n) return;
    free(n->name);
    jv_unref(n->lit);
    node_free(n->a);
    node_free(n->b);
    node_free(n->c);
    node_free(n->d);
    nl_free(&n->l1);
    nl_free(&n->l2);
    for (size_t i = 0; i < n->names.len; i++) free(n->names.data[i]);
    free(n->names.data);
    free(n);
}

/* ------------------------------------------------------------ expressions ---- */

static jnode *parse_expression(parser *P, int with_condexpr);
static jnode *parse_unary(parser *P, int with_filter);
static jnode *parse_primary(parser *P);
static jnode *parse_postfix(parser *P, jnode *n);
static jnode *parse_filter_expr(parser *P, jnode *n);

static int tuple_end(parser *P, const char *extra) {
    jtok *t = cur(P);
    if (t->k == T_VAR_END || t->k == T_BLOCK_END || t->k == T_EOF) return 1;
    if (t->k == T_OP && !strcmp(t->op, ")")) return 1;
    if (extra && t->k == T_NAME && !strcmp(t->s, extra)) return 1;
    return 0;
}

static jnode *parse_tuple(parser *P, int simplified, int with_condexpr, const char *extra, int explicit_paren) {
    jtok *start = cur(P);
    jnode *tup = node(P, N_TUPLE, start);
    if (!tup) return NULL;
    int is_tuple = 0;
    for (;;) {
        if (tup->l1.len && expect_op(P, ",")) goto bad;
        if (tuple_end(P, extra)) break;
        jnode *x = simplified ? parse_primary(P) : parse_expression(P, with_condexpr);
        if (!x || nl_push(P, &tup->l1, x)) {
            node_free(x);
            goto bad;
        }
        if (is_op(P, ",")) is_tuple = 1;
        else break;
    }
    if (!is_tuple) {
        if (tup->l1.len) {
            jnode *x = tup->l1.data[0];
            tup->l1.len = 0;
            node_free(tup);
            return x;
        }
        if (!explicit_paren) {
            fail(P, cur(P), FACET_E_PARSE, "expected an expression, got '%s'", tok_desc(cur(P)));
            goto bad;
        }
    }
    return tup;
bad:
    node_free(tup);
    return NULL;
}

/* Height of the tree under n, cached in the nodes (each computed once). */
static int node_height(jnode *n) {
    if (!n) return 0;
    if (n->height) return n->height;
    int h = 0, x;
    jnode *kids[] = {n->a, n->b, n->c, n->d};
    for (int i = 0; i < 4; i++)
        if ((x = node_height(kids[i])) > h) h = x;
    for (size_t i = 0; i < n->l1.len; i++)
        if ((x = node_height(n->l1.data[i])) > h) h = x;
    for (size_t i = 0; i < n->l2.len; i++)
        if ((x = node_height(n->l2.data[i])) > h) h = x;
    return n->height = h + 1;
}

/* Before a left-deep chain (a + b + c, a.b.c, x|f|g) grows by one more operator: the
 * evaluator and node_free recurse on the tree, so its height is bounded. */
static int too_tall(parser *P, jnode *n, const jtok *at) {
    if (node_height(n) <= MAX_TREE_HEIGHT) return 0;
    fail(P, at, FACET_E_LIMIT, "expression deeper than %d operators", MAX_TREE_HEIGHT);
    return 1;
}

/* Binary operators, loosest first, each left-associative (jinja2/parser.py: parse_or,
 * parse_and, parse_math1, parse_concat, parse_math2, parse_pow). `not` and the
 * comparison chain are the level between `and` and `+` (parse_not, parse_compare). */
enum { PREC_OR = 1, PREC_AND, PREC_NOT, PREC_ADD, PREC_CONCAT, PREC_MUL, PREC_POW };

typedef struct binop_row {
    jtok_kind tok;    /* T_NAME (a keyword) or T_OP */
    const char *text; /* the keyword or operator; an N_BINOP node keeps it as its name */
    int prec;         /* PREC_* */
    jnode_kind kind;  /* N_OR, N_AND or N_BINOP */
} binop_row;

static const binop_row BINOPS[] = {
    {T_NAME, "or", PREC_OR, N_OR},       {T_NAME, "and", PREC_AND, N_AND},
    {T_OP, "+", PREC_ADD, N_BINOP},      {T_OP, "-", PREC_ADD, N_BINOP},
    {T_OP, "~", PREC_CONCAT, N_BINOP},   {T_OP, "*", PREC_MUL, N_BINOP},
    {T_OP, "/", PREC_MUL, N_BINOP},      {T_OP, "//", PREC_MUL, N_BINOP},
    {T_OP, "%", PREC_MUL, N_BINOP},      {T_OP, "**", PREC_POW, N_BINOP},
};

/* The binary operator at the current token, or NULL. */
static const binop_row *binop_at(parser *P) {
    const jtok *t = cur(P);
    if (t->k != T_OP && t->k != T_NAME) return NULL;
    for (size_t i = 0; i < sizeof BINOPS / sizeof BINOPS[0]; i++)
        if (BINOPS[i].tok == t->k && !strcmp(BINOPS[i].text, t->k == T_OP ? t->op : t->s)) return &BINOPS[i];
    return NULL;
}

static jnode *parse_not(parser *P);

/* Precedence climbing: an operand of level min_prec (a `not` expression or comparison
 * chain up to PREC_NOT, a unary expression with its postfix and filters above), then
 * every operator of level >= min_prec, its right operand parsed one level tighter so
 * that equal levels group to the left. The tree's height is checked before a chain
 * grows (too_tall). */
static jnode *parse_binary(parser *P, int min_prec) {
    jnode *l = min_prec <= PREC_NOT ? parse_not(P) : parse_unary(P, 1);
    const binop_row *op;
    while (l && (op = binop_at(P)) && op->prec >= min_prec) {
        jtok *at = cur(P);
        if (too_tall(P, l, at)) {
            node_free(l);
            return NULL;
        }
        next(P);
        jnode *r = parse_binary(P, op->prec + 1);
        jnode *n = r ? node(P, op->kind, at) : NULL;
        if (n && op->kind == N_BINOP && !(n->name = strdup(op->text))) {
            node_free(n);
            n = fail(P, at, FACET_E_NOMEM, "out of memory");
        }
        if (!n) {
            node_free(l);
            node_free(r);
            return NULL;
        }
        n->a = l;
        n->b = r;
        l = n;
    }
    return l;
}

static jnode *parse_compare(parser *P) {
    jtok *at = cur(P);
    jnode *first = parse_binary(P, PREC_ADD);
    if (!first) return NULL;
    jnode *cmp = NULL;
    for (;;) {
        const char *op = NULL;
        jtok *t = cur(P);
        if (t->k == T_OP && (!strcmp(t->op, "==") || !strcmp(t->op, "!=") || !strcmp(t->op, "<") ||
                             !strcmp(t->op, "<=") || !strcmp(t->op, ">") || !strcmp(t->op, ">="))) {
            op = t->op;
            next(P);
        } else if (is_name(P, "in")) {
            op = "in";
            next(P);
        } else if (is_name(P, "not") && peek(P, 1)->k == T_NAME && !strcmp(peek(P, 1)->s, "in")) {
            op = "ni";
            next(P);
            next(P);
        } else {
            break;
        }
        if (!cmp) {
            cmp = node(P, N_COMPARE, at);
            if (!cmp) {
                node_free(first);
                return NULL;
            }
            cmp->a = first;
        }
        if (cmp->l1.len >= 8) {
            node_free(cmp);
            return fail(P, t, FACET_E_UNSUPPORTED, "unsupported construct: more than 8 chained comparisons");
        }
        strcpy(cmp->ops[cmp->l1.len], op);
        jnode *r = parse_binary(P, PREC_ADD);
        if (!r || nl_push(P, &cmp->l1, r)) {
            node_free(r);
            node_free(cmp);
            return NULL;
        }
    }
    return cmp ? cmp : first;
}

static jnode *parse_not(parser *P) {
    if (is_name(P, "not")) {
        jtok *at = cur(P);
        next(P);
        if (++P->depth > MAX_NEST) return fail(P, at, FACET_E_LIMIT, "expression nesting deeper than %d", MAX_NEST);
        jnode *x = parse_not(P);
        P->depth--;
        if (!x) return NULL;
        jnode *n = node(P, N_NOT, at);
        if (!n) {
            node_free(x);
            return NULL;
        }
        n->a = x;
        return n;
    }
    return parse_compare(P);
}

static jnode *parse_condexpr(parser *P) {
    jnode *e1 = parse_binary(P, PREC_OR);
    while (e1 && is_name(P, "if")) {
        jtok *at = cur(P);
        if (too_tall(P, e1, at)) {
            node_free(e1);
            return NULL;
        }
        next(P);
        jnode *cond = parse_binary(P, PREC_OR), *e3 = NULL;
        if (cond && is_name(P, "else")) {
            next(P);
            e3 = parse_condexpr(P);
            if (!e3) {
                node_free(cond);
                cond = NULL;
            }
        }
        jnode *n = cond ? node(P, N_COND, at) : NULL;
        if (!n) {
            node_free(e1);
            node_free(cond);
            node_free(e3);
            return NULL;
        }
        n->a = cond;
        n->b = e1;
        n->c = e3;
        e1 = n;
    }
    return e1;
}

static jnode *parse_expression(parser *P, int with_condexpr) {
    if (++P->depth > MAX_NEST) return fail(P, cur(P), FACET_E_LIMIT, "expression nesting deeper than %d", MAX_NEST);
    jnode *n = with_condexpr ? parse_condexpr(P) : parse_binary(P, PREC_OR);
    P->depth--;
    return n;
}

static jnode *parse_unary(parser *P, int with_filter) {
    jtok *at = cur(P);
    jnode *n;
    if (is_op(P, "-") || is_op(P, "+")) {
        int neg = is_op(P, "-");
        next(P);
        if (++P->depth > MAX_NEST) return fail(P, at, FACET_E_LIMIT, "expression nesting deeper than %d", MAX_NEST);
        jnode *x = parse_unary(P, 0);
        P->depth--;
        if (!x) return NULL;
        n = node(P, neg ? N_NEG : N_POS, at);
        if (!n) {
            node_free(x);
            return NULL;
        }
        n->a = x;
    } else {
        n = parse_primary(P);
    }
    if (n) n = parse_postfix(P, n);
    if (n && with_filter) n = parse_filter_expr(P, n);
    return n;
}

static jnode *lit(parser *P, const jtok *at, jv v) {
    jnode *n = node(P, N_LIT, at);
    if (!n) {
        jv_unref(v);
        return NULL;
    }
    n->lit = v;
    return n;
}

static jnode *parse_seq(parser *P, jnode_kind k, const char *close) {
    jtok *at = cur(P);
    next(P);
    jnode *n = node(P, k, at);
    if (!n) return NULL;
    while (!is_op(P, close)) {
        if (n->l1.len && expect_op(P, ",")) goto bad;
        if (is_op(P, close)) break;
        jnode *x = parse_expression(P, 1);
        if (!x || nl_push(P, &n->l1, x)) {
            node_free(x);
            goto bad;
        }
        if (k == N_DICT) {
            if (expect_op(P, ":")) goto bad;
            jnode *v = parse_expression(P, 1);
            if (!v || nl_push(P, &n->l2, v)) {
                node_free(v);
                goto bad;
            }
        }
    }
    next(P);
    return n;
bad:
    node_free(n);
    return NULL;
}

static jnode *parse_primary(parser *P) {
    jtok *t = cur(P);
    switch (t->k) {
    case T_NAME:
        next(P);
        if (!strcmp(t->s, "true") || !strcmp(t->s, "True")) return lit(P, t, jv_bool(1));
        if (!strcmp(t->s, "false") || !strcmp(t->s, "False")) return lit(P, t, jv_bool(0));
        if (!strcmp(t->s, "none") || !strcmp(t->s, "None")) return lit(P, t, jv_none());
        {
            jnode *n = node(P, N_NAME, t);
            if (n && !(n->name = strdup(t->s))) {
                node_free(n);
                return fail(P, t, FACET_E_NOMEM, "out of memory");
            }
            return n;
        }
    case T_STRING: {
        facet_str b = {0};
        while (cur(P)->k == T_STRING) {
            if (facet_str_append(&b, cur(P)->s, cur(P)->slen)) {
                facet_str_free(&b);
                return fail(P, t, FACET_E_NOMEM, "out of memory");
            }
            next(P);
        }
        jv s = jv_str_take(&b);
        if (s.k != JV_STR) return fail(P, t, FACET_E_NOMEM, "out of memory");
        return lit(P, t, s);
    }
    case T_INT: next(P); return lit(P, t, jv_int(t->i));
    case T_FLOAT: next(P); return lit(P, t, jv_float(t->f));
    case T_OP:
        if (!strcmp(t->op, "(")) {
            next(P);
            jnode *n = parse_tuple(P, 0, 1, NULL, 1);
            if (n && expect_op(P, ")")) {
                node_free(n);
                return NULL;
            }
            return n;
        }
        if (!strcmp(t->op, "[")) return parse_seq(P, N_LIST, "]");
        if (!strcmp(t->op, "{")) return parse_seq(P, N_DICT, "}");
        break;
    default: break;
    }
    return fail(P, t, FACET_E_PARSE, "unexpected '%s'", tok_desc(t));
}

/* Call arguments after '(' into n (l1 positional, names/l2 keyword). */
static int parse_call_args(parser *P, jnode *n) {
    if (expect_op(P, "(")) return -1;
    int first = 1;
    while (!is_op(P, ")")) {
        if (!first && expect_op(P, ",")) return -1;
        first = 0;
        if (is_op(P, ")")) break;
        if (is_op(P, "*") || is_op(P, "**")) {
            fail(P, cur(P), FACET_E_UNSUPPORTED, "unsupported construct: *args/**kwargs in a call");
            return -1;
        }
        if (cur(P)->k == T_NAME && peek(P, 1)->k == T_OP && !strcmp(peek(P, 1)->op, "=")) {
            if (name_push(P, n, cur(P)->s)) return -1;
            next(P);
            next(P);
            jnode *v = parse_expression(P, 1);
            if (!v || nl_push(P, &n->l2, v)) {
                node_free(v);
                return -1;
            }
        } else {
            if (n->names.len) {
                fail(P, cur(P), FACET_E_PARSE, "positional argument after keyword argument");
                return -1;
            }
            jnode *v = parse_expression(P, 1);
            if (!v || nl_push(P, &n->l1, v)) {
                node_free(v);
                return -1;
            }
        }
    }
    next(P);
    return 0;
}

static jnode *parse_subscribed(parser *P) {
    jtok *at = cur(P);
    jnode *parts[3] = {NULL, NULL, NULL};
    if (is_op(P, ":")) {
        next(P);
    } else {
        jnode *e = parse_expression(P, 1);
        if (!e) return NULL;
        if (!is_op(P, ":")) return e;
        next(P);
        parts[0] = e;
    }
    if (!is_op(P, ":") && !is_op(P, "]") && !is_op(P, ",")) {
        if (!(parts[1] = parse_expression(P, 1))) goto bad;
    }
    if (is_op(P, ":")) {
        next(P);
        if (!is_op(P, "]") && !is_op(P, ",") && !(parts[2] = parse_expression(P, 1))) goto bad;
    }
    jnode *s = node(P, N_SLICE, at);
    if (!s) goto bad;
    s->b = parts[0];
    s->c = parts[1];
    s->d = parts[2];
    return s;
bad:
    for (int i = 0; i < 3; i++) node_free(parts[i]);
    return NULL;
}

static jnode *parse_postfix(parser *P, jnode *n) {
    for (;;) {
        jtok *at = cur(P);
        if (too_tall(P, n, at)) {
            node_free(n);
            return NULL;
        }
        if (is_op(P, ".")) {
            next(P);
            jtok *t = cur(P);
            jnode *g;
            if (t->k == T_NAME) {
                g = node(P, N_GETATTR, at);
                if (g && !(g->name = strdup(t->s))) {
                    node_free(g);
                    g = fail(P, t, FACET_E_NOMEM, "out of memory");
                }
            } else if (t->k == T_INT) {
                g = node(P, N_GETITEM, at);
                if (g && !(g->b = lit(P, t, jv_int(t->i)))) {
                    node_free(g);
                    g = NULL;
                }
            } else {
                g = fail(P, t, FACET_E_PARSE, "expected an attribute name after '.', got '%s'", tok_desc(t));
            }
            if (!g) {
                node_free(n);
                return NULL;
            }
            next(P);
            g->a = n;
            n = g;
        } else if (is_op(P, "[")) {
            next(P);
            jnode *g = node(P, N_GETITEM, at);
            if (!g) {
                node_free(n);
                return NULL;
            }
            g->a = n;
            n = g;
            jnode *tup = NULL;
            while (!is_op(P, "]")) {
                if ((g->b || tup) && expect_op(P, ",")) {
                    node_free(n);
                    return NULL;
                }
                if (is_op(P, "]")) break;
                jnode *x = parse_subscribed(P);
                if (!x) {
                    node_free(n);
                    return NULL;
                }
                if (!g->b) {
                    g->b = x;
                } else {
                    node_free(x);
                    node_free(n);
                    return fail(P, at, FACET_E_UNSUPPORTED, "unsupported construct: tuple subscript x[a, b]");
                }
            }
            next(P);
            if (!g->b) {
                node_free(n);
                return fail(P, at, FACET_E_PARSE, "expected a subscript expression");
            }
        } else if (is_op(P, "(")) {
            jnode *c = node(P, N_CALL, at);
            if (!c) {
                node_free(n);
                return NULL;
            }
            c->line = n->line; /* errors of a call point at the callee */
            c->col = n->col;
            c->a = n;
            n = c;
            if (parse_call_args(P, c)) {
                node_free(n);
                return NULL;
            }
        } else {
            return n;
        }
    }
}

static int parse_dotted_name(parser *P, char **out) {
    if (cur(P)->k != T_NAME) {
        fail(P, cur(P), FACET_E_PARSE, "expected a filter or test name, got '%s'", tok_desc(cur(P)));
        return -1;
    }
    facet_str b = {0};
    facet_str_appendz(&b, cur(P)->s);
    next(P);
    while (is_op(P, ".") && peek(P, 1)->k == T_NAME) {
        next(P);
        facet_str_putc(&b, '.');
        facet_str_appendz(&b, cur(P)->s);
        next(P);
    }
    if (!(*out = facet_str_take(&b))) { /* NULL when an append failed */
        fail(P, cur(P), FACET_E_NOMEM, "out of memory");
        return -1;
    }
    return 0;
}

/* Filter chain: `| name(args)` repeated; start_inline for {% filter %} blocks. */
static jnode *parse_filter(parser *P, jnode *n, int start_inline) {
    while (is_op(P, "|") || start_inline) {
        jtok *at = cur(P);
        if (n && too_tall(P, n, at)) {
            node_free(n);
            return NULL;
        }
        if (!start_inline) next(P);
        start_inline = 0;
        jnode *f = node(P, N_FILTER, at);
        if (!f) {
            node_free(n);
            return NULL;
        }
        f->a = n;
        n = f;
        if (parse_dotted_name(P, &f->name)) {
            node_free(n);
            return NULL;
        }
        if (!jinja_filter_known(f->name)) {
            fail(P, at, FACET_E_PARSE, "no filter named '%s'", f->name);
            node_free(n);
            return NULL;
        }
        if (is_op(P, "(") && parse_call_args(P, f)) {
            node_free(n);
            return NULL;
        }
    }
    return n;
}

static jnode *parse_test(parser *P, jnode *n) {
    jtok *at = cur(P);
    next(P);
    jnode *t = node(P, N_TEST, at);
    if (!t) {
        node_free(n);
        return NULL;
    }
    t->a = n;
    if (is_name(P, "not")) {
        t->neg = 1;
        next(P);
    }
    if (parse_dotted_name(P, &t->name)) {
        node_free(t);
        return NULL;
    }
    if (!jx_test_exists(t->name)) {
        fail(P, at, FACET_E_PARSE, "no test named '%s'", t->name);
        node_free(t);
        return NULL;
    }
    jtok *c = cur(P);
    if (is_op(P, "(")) {
        if (parse_call_args(P, t)) {
            node_free(t);
            return NULL;
        }
    } else if ((c->k == T_NAME || c->k == T_STRING || c->k == T_INT || c->k == T_FLOAT ||
                (c->k == T_OP && (!strcmp(c->op, "[") || !strcmp(c->op, "{")))) &&
               !(c->k == T_NAME && (!strcmp(c->s, "else") || !strcmp(c->s, "or") || !strcmp(c->s, "and")))) {
        if (c->k == T_NAME && !strcmp(c->s, "is")) {
            node_free(t);
            return fail(P, c, FACET_E_PARSE, "cannot chain multiple tests with 'is'");
        }
        jnode *arg = parse_primary(P);
        if (arg) arg = parse_postfix(P, arg);
        if (!arg || nl_push(P, &t->l1, arg)) {
            node_free(arg);
            node_free(t);
            return NULL;
        }
    }
    return t;
}

static jnode *parse_filter_expr(parser *P, jnode *n) {
    for (;;) {
        if (n && too_tall(P, n, cur(P))) {
            node_free(n);
            return NULL;
        }
        if (is_op(P, "|")) n = parse_filter(P, n, 0);
        else if (is_name(P, "is")) n = parse_test(P, n);
        else if (is_op(P, "(")) {
            jnode *c = node(P, N_CALL, cur(P));
            if (!c) {
                node_free(n);
                return NULL;
            }
            c->a = n;
            n = c;
            if (parse_call_args(P, c)) {
                node_free(n);
                return NULL;
            }
        } else return n;
        if (!n) return NULL;
    }
}

/* ------------------------------------------------------------- statements ---- */

static int subparse(parser *P, jnlist *body, const char *const *ends);

static int block_end(parser *P) { return expect_kind(P, T_BLOCK_END, "'%}'"); }

/* Assignment target: NAME, NAME.attr (namespace), or NAME, NAME, ... */
static int parse_target(parser *P, jnode *n, int with_ns, const char *extra_end) {
    int paren = 0;
    if (is_op(P, "(")) {
        paren = 1;
        next(P);
    }
    for (;;) {
        if (cur(P)->k != T_NAME) {
            fail(P, cur(P), FACET_E_PARSE, "expected an assignment target name, got '%s'", tok_desc(cur(P)));
            return -1;
        }
        if (name_push(P, n, cur(P)->s)) return -1;
        next(P);
        if (with_ns && n->names.len == 1 && !paren && is_op(P, ".")) {
            next(P);
            if (cur(P)->k != T_NAME) {
                fail(P, cur(P), FACET_E_PARSE, "expected an attribute name, got '%s'", tok_desc(cur(P)));
                return -1;
            }
            if (!(n->name = strdup(cur(P)->s))) {
                fail(P, cur(P), FACET_E_NOMEM, "out of memory");
                return -1;
            }
            next(P);
            return 0;
        }
        if (!is_op(P, ",")) break;
        n->neg = 1; /* tuple target */
        next(P);
        if (paren && is_op(P, ")")) break;
        if (!paren && extra_end && is_name(P, extra_end)) break;
    }
    if (paren) {
        n->neg = 1;
        if (expect_op(P, ")")) return -1;
    }
    return 0;
}

static int parse_signature(parser *P, jnode *n) {
    if (expect_op(P, "(")) return -1;
    while (!is_op(P, ")")) {
        if (n->names.len && expect_op(P, ",")) return -1;
        if (is_op(P, ")")) break;
        if (cur(P)->k != T_NAME) {
            fail(P, cur(P), FACET_E_PARSE, "expected a parameter name, got '%s'", tok_desc(cur(P)));
            return -1;
        }
        if (name_push(P, n, cur(P)->s)) return -1;
        next(P);
        jnode *def = NULL;
        if (is_op(P, "=")) {
            next(P);
            if (!(def = parse_expression(P, 1))) return -1;
        } else if (n->l2.len && n->l2.data[n->l2.len - 1]) {
            fail(P, cur(P), FACET_E_PARSE, "non-default argument follows default argument");
            return -1;
        }
        if (nl_push(P, &n->l2, def)) {
            node_free(def);
            return -1;
        }
    }
    next(P);
    return 0;
}

/* The JN_CATCH_* bit of a special macro name, 0 for any other. */
static int special_bit(const char *name) {
    if (!name) return 0;
    if (!strcmp(name, "caller")) return JN_CATCH_CALLER;
    if (!strcmp(name, "kwargs")) return JN_CATCH_KWARGS;
    if (!strcmp(name, "varargs")) return JN_CATCH_VARARGS;
    return 0;
}

static void drop_stored(const jnode *n, int *open) {
    for (size_t i = 0; i < n->names.len; i++) *open &= ~special_bit(n->names.data[i]);
}

/* jinja2's find_undeclared over a macro body, in its node order: a special name read
 * while still open is caught; once stored (a set/for/with target, a nested macro's
 * parameter) it is no longer looked for. Nested macros are visited too. */
static void visit_catches(const jnode *n, int *open, int *found) {
    if (!n) return;
    if (n->k == N_NAME) {
        int bit = special_bit(n->name);
        if (bit & *open) *found |= bit;
        return;
    }
    int stores = n->k == N_FOR || n->k == N_SET || n->k == N_SETBLOCK || n->k == N_MACRO ||
                 n->k == N_WITH;
    if (n->k == N_CALLBLOCK) { /* jinja2's CallBlock: the call, then the parameters */
        visit_catches(n->a, open, found);
        drop_stored(n, open);
    } else {
        if (stores) drop_stored(n, open); /* targets and parameters come first */
        visit_catches(n->a, open, found);
    }
    visit_catches(n->b, open, found);
    visit_catches(n->c, open, found);
    visit_catches(n->d, open, found);
    for (size_t i = 0; i < n->l1.len; i++) visit_catches(n->l1.data[i], open, found);
    for (size_t i = 0; i < n->l2.len; i++) visit_catches(n->l2.data[i], open, found);
}

/* JN_CATCH_* bits of macro (or call block) n, as jinja2's macro_body decides them: the
 * names its body reads, less kwargs/varargs declared as parameters; caller is caught
 * only when no parameter is named caller (JN_CATCH_CALLER then binds it). */
static int macro_catches(const jnode *n) {
    int open = JN_CATCH_CALLER | JN_CATCH_KWARGS | JN_CATCH_VARARGS, found = 0;
    for (size_t i = 0; i < n->l1.len; i++) visit_catches(n->l1.data[i], &open, &found);
    for (size_t i = 0; i < n->names.len; i++) found &= ~special_bit(n->names.data[i]);
    return found;
}

/* `%}`, then the body up to {% END %}, then that tag's `%}`. 0 ok, -1 failed. */
static int block_body(parser *P, jnlist *body, const char *end) {
    const char *const ends[] = {end, NULL};
    if (block_end(P) || subparse(P, body, ends)) return -1;
    next(P);
    return block_end(P);
}

/* The body of a macro or {% call %} block (up to {% END %}): break/continue there do
 * not reach an enclosing loop. Leaves the parser on END. 0 ok, -1 failed. */
static int callable_body(parser *P, jnode *n, const char *end) {
    const char *const ends[] = {end, NULL};
    int saved = P->loop_depth;
    P->loop_depth = 0;
    int rc = block_end(P) || subparse(P, &n->l1, ends);
    P->loop_depth = saved;
    if (rc) return -1;
    n->catches = macro_catches(n);
    next(P);
    return 0;
}

/* Each statement parser fills the node n (of the row's kind) that the dispatcher made
 * for keyword token t, after which the parser stands: 0 ok, -1 after fail(). */
static int stmt_if(parser *P, jtok *t, jnode *n) {
    (void)t;
    jnode *curif = n;
    if (!(n->a = parse_tuple(P, 0, 0, NULL, 0)) || block_end(P)) return -1;
    for (;;) {
        static const char *const ends[] = {"elif", "else", "endif", NULL};
        if (subparse(P, &curif->l1, ends)) return -1;
        jtok *e = cur(P);
        next(P);
        if (strcmp(e->s, "elif")) return !strcmp(e->s, "else") ? block_body(P, &curif->l2, "endif") : block_end(P);
        jnode *el = node(P, N_IF, e);
        if (!el || nl_push(P, &curif->l2, el)) {
            node_free(el);
            return -1;
        }
        curif = el;
        if (!(el->a = parse_tuple(P, 0, 0, NULL, 0)) || block_end(P)) return -1;
    }
}

static int stmt_for(parser *P, jtok *t, jnode *n) {
    (void)t;
    if (parse_target(P, n, 0, "in")) return -1;
    if (!is_name(P, "in")) {
        fail(P, cur(P), FACET_E_PARSE, "expected 'in' in for loop, got '%s'", tok_desc(cur(P)));
        return -1;
    }
    next(P);
    if (!(n->a = parse_tuple(P, 0, 0, "recursive", 0))) return -1;
    if (is_name(P, "if")) {
        next(P);
        if (!(n->b = parse_expression(P, 1))) return -1;
    }
    if (is_name(P, "recursive")) {
        fail(P, cur(P), FACET_E_UNSUPPORTED, "unsupported construct: recursive for loop");
        return -1;
    }
    if (block_end(P)) return -1;
    static const char *const ends[] = {"endfor", "else", NULL};
    P->loop_depth++;
    int rc = subparse(P, &n->l1, ends);
    P->loop_depth--;
    if (rc) return -1;
    int has_else = is_name(P, "else");
    next(P);
    return has_else ? block_body(P, &n->l2, "endfor") : block_end(P);
}

static int stmt_set(parser *P, jtok *t, jnode *n) {
    if (parse_target(P, n, 1, NULL)) return -1;
    if (is_op(P, "=")) {
        next(P);
        return !(n->b = parse_tuple(P, 0, 1, NULL, 0)) || block_end(P) ? -1 : 0;
    }
    n->k = N_SETBLOCK;
    if (n->neg) {
        fail(P, t, FACET_E_PARSE, "a block set takes one target");
        return -1;
    }
    if (is_op(P, "|") && !(n->a = parse_filter(P, NULL, 0))) return -1;
    return block_body(P, &n->l1, "endset");
}

static int stmt_macro(parser *P, jtok *t, jnode *n) {
    (void)t;
    if (cur(P)->k != T_NAME) {
        fail(P, cur(P), FACET_E_PARSE, "expected a macro name, got '%s'", tok_desc(cur(P)));
        return -1;
    }
    if (!(n->name = strdup(cur(P)->s))) {
        fail(P, cur(P), FACET_E_NOMEM, "out of memory");
        return -1;
    }
    next(P);
    if (parse_signature(P, n) || callable_body(P, n, "endmacro")) return -1;
    if (cur(P)->k == T_NAME) next(P); /* {% endmacro name %} */
    return block_end(P);
}

static int stmt_call(parser *P, jtok *t, jnode *n) {
    if (is_op(P, "(") && parse_signature(P, n)) return -1;
    if (!(n->a = parse_expression(P, 1))) return -1;
    if (n->a->k != N_CALL) {
        fail(P, t, FACET_E_PARSE, "expected a call after {%% call %%}");
        return -1;
    }
    return callable_body(P, n, "endcall") || block_end(P) ? -1 : 0;
}

static int stmt_filter(parser *P, jtok *t, jnode *n) {
    (void)t;
    return !(n->a = parse_filter(P, NULL, 1)) || block_body(P, &n->l1, "endfilter") ? -1 : 0;
}

/* {% with a = x, b = y %}...{% endwith %}: values evaluated outside, names scoped */
static int stmt_with(parser *P, jtok *t, jnode *n) {
    (void)t;
    while (cur(P)->k != T_BLOCK_END) {
        if (n->names.len && expect_op(P, ",")) return -1;
        if (cur(P)->k != T_NAME) {
            fail(P, cur(P), FACET_E_PARSE, "expected a name in {%% with %%}, got '%s'", tok_desc(cur(P)));
            return -1;
        }
        if (name_push(P, n, cur(P)->s)) return -1;
        next(P);
        if (expect_op(P, "=")) return -1;
        jnode *v = parse_expression(P, 1);
        if (!v || nl_push(P, &n->l2, v)) {
            node_free(v);
            return -1;
        }
    }
    return block_body(P, &n->l1, "endwith");
}

static int stmt_generation(parser *P, jtok *t, jnode *n) {
    (void)t;
    return block_body(P, &n->l1, "endgeneration");
}

static int stmt_loop_control(parser *P, jtok *t, jnode *n) { /* break, continue */
    (void)n;
    if (!P->loop_depth) {
        fail(P, t, FACET_E_PARSE, "'%s' outside of a loop", t->s);
        return -1;
    }
    return block_end(P);
}

/* The statements facet parses: keyword, node kind, parser (sorted by keyword for
 * binary search). Any other {% name %} is an unsupported construct naming it. */
typedef struct stmt_row {
    const char *keyword;
    jnode_kind kind;
    int (*parse)(parser *P, jtok *t, jnode *n);
} stmt_row;

static const stmt_row STATEMENTS[] = {
    {"break", N_BREAK, stmt_loop_control},    {"call", N_CALLBLOCK, stmt_call},
    {"continue", N_CONTINUE, stmt_loop_control}, {"filter", N_FILTERBLOCK, stmt_filter},
    {"for", N_FOR, stmt_for},                 {"generation", N_GENERATION, stmt_generation},
    {"if", N_IF, stmt_if},                    {"macro", N_MACRO, stmt_macro},
    {"set", N_SET, stmt_set},                 {"with", N_WITH, stmt_with},
};

int jx_statement_table_sorted(void) {
    return jx_table_sorted(STATEMENTS, sizeof STATEMENTS / sizeof STATEMENTS[0], sizeof STATEMENTS[0]);
}

static jnode *parse_statement(parser *P) {
    jtok *t = cur(P);
    if (t->k != T_NAME) return fail(P, t, FACET_E_PARSE, "expected a statement name, got '%s'", tok_desc(t));
    const stmt_row *row = jx_table_find(STATEMENTS, sizeof STATEMENTS / sizeof STATEMENTS[0], sizeof STATEMENTS[0], t->s);
    if (!row) return fail(P, t, FACET_E_UNSUPPORTED, "unsupported construct: {%% %s %%}", t->s);
    next(P);
    jnode *n = node(P, row->kind, t);
    if (n && row->parse(P, t, n)) {
        node_free(n);
        n = NULL;
    }
    return n;
}

/* Parse statements into body until a {% NAME %} with NAME in ends; leaves the parser
 * on that NAME token (block begin consumed). ends == NULL: until end of template. */
static int subparse(parser *P, jnlist *body, const char *const *ends) {
    if (++P->depth > MAX_NEST) {
        fail(P, cur(P), FACET_E_LIMIT, "block nesting deeper than %d", MAX_NEST);
        return -1;
    }
    for (;;) {
        jtok *t = cur(P);
        jnode *n = NULL;
        if (t->k == T_EOF) {
            if (ends) {
                fail(P, t, FACET_E_PARSE, "unexpected end of template, expected '%s'", ends[0]);
                return -1;
            }
            P->depth--;
            return 0;
        }
        if (t->k == T_TEXT) {
            n = node(P, N_TEXT, t);
            if (n) {
                n->lit = jv_str(t->s, t->slen);
                if (n->lit.k != JV_STR) {
                    node_free(n);
                    n = fail(P, t, FACET_E_NOMEM, "out of memory");
                }
            }
            next(P);
        } else if (t->k == T_VAR_BEGIN) {
            next(P);
            jnode *e = parse_tuple(P, 0, 1, NULL, 0);
            if (e && expect_kind(P, T_VAR_END, "'}}'")) {
                node_free(e);
                e = NULL;
            }
            n = e ? node(P, N_OUTPUT, t) : NULL;
            if (n) n->a = e;
            else node_free(e);
        } else if (t->k == T_BLOCK_BEGIN) {
            next(P);
            jtok *nm = cur(P);
            if (nm->k == T_NAME && ends) {
                for (int i = 0; ends[i]; i++)
                    if (!strcmp(nm->s, ends[i])) {
                        P->depth--;
                        return 0;
                    }
            }
            if (nm->k == T_NAME && (!strncmp(nm->s, "end", 3) || !strcmp(nm->s, "else") || !strcmp(nm->s, "elif"))) {
                fail(P, nm, FACET_E_PARSE, "unexpected '%s'%s%s", nm->s, ends ? ", expected " : "", ends ? ends[0] : "");
                return -1;
            }
            n = parse_statement(P);
        } else {
            fail(P, t, FACET_E_PARSE, "unexpected '%s'", tok_desc(t));
            return -1;
        }
        if (!n) return -1;
        if (nl_push(P, body, n)) {
            node_free(n);
            return -1;
        }
    }
}

facet_status jinja_parse(const char *src, size_t len, jtemplate *out, facet_error *err) {
    facet_error local;
    if (!err) err = &local;
    memset(out, 0, sizeof *out);
    parser P = {0};
    P.err = err;
    facet_status st = jinja_lex(src, len, &P.tk, err);
    if (st) return st;
    jtok *t0 = cur(&P);
    jnode *root = node(&P, N_TEXT, t0);
    if (root && subparse(&P, &root->l1, NULL)) {
        node_free(root);
        root = NULL;
    }
    jinja_toks_free(&P.tk);
    if (!root) return err->status ? err->status : facet_err(err, FACET_E_PARSE, "template: parse failed");
    out->root = root;
    return FACET_OK;
}

void jinja_template_free(jtemplate *t) {
    node_free(t->root);
    t->root = NULL;
}
