/* gbnf_parse.c — GBNF text -> facet_grammar (facet_grammar.h): a recursive-descent
 * parser that rewrites groups and repetitions into generated rules, then checks that
 * every rule is defined and none is left-recursive. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_internal.h"
#include "util/error.h"
#include "util/utf8.h"

enum { MAX_REPEAT = 10000, MAX_NESTING = 200 };

typedef FACET_VEC(gram_elem) elem_vec;

typedef struct prule {
    char *name;      /* NULL for generated rules                       */
    elem_vec body;   /* alternatives, each ended by a GRAM_END           */
    int defined;
    int ref_line, ref_col; /* first reference, for "undefined rule"     */
} prule;

typedef struct parser {
    const char *s;
    size_t len, i;
    int line, col;
    int depth;
    FACET_VEC(prule) rules;
    facet_grammar *g;
    facet_error *err;
    facet_status st;
} parser;

static facet_status fail(parser *p, facet_status st, const char *expected) {
    if (p->st != FACET_OK) return p->st;
    char found[32];
    if (p->i >= p->len) snprintf(found, sizeof found, "end of input");
    else if ((unsigned char)p->s[p->i] < 0x20) snprintf(found, sizeof found, "byte 0x%02x", (unsigned char)p->s[p->i]);
    else snprintf(found, sizeof found, "'%c'", p->s[p->i]);
    p->st = facet_err(p->err, st, "grammar:%d:%d: expected %s, found %s", p->line, p->col,
                      expected, found);
    return p->st;
}

static facet_status nomem(parser *p) {
    if (p->st == FACET_OK) p->st = facet_err(p->err, FACET_E_NOMEM, "grammar: out of memory");
    return p->st;
}

static int peek(const parser *p) { return p->i < p->len ? (unsigned char)p->s[p->i] : -1; }

static void adv(parser *p) {
    if (p->i >= p->len) return;
    if (p->s[p->i] == '\n') {
        p->line++;
        p->col = 1;
    } else if (((unsigned char)p->s[p->i] & 0xC0) != 0x80) {
        p->col++;
    }
    p->i++;
}

/* Spaces, tabs, newlines and # comments. */
static void skip_space(parser *p) {
    for (;;) {
        int c = peek(p);
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') adv(p);
        else if (c == '#')
            while (peek(p) != -1 && peek(p) != '\n') adv(p);
        else return;
    }
}

static int is_name_char(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

/* The rule named s[0..n), created (undefined) on first sight. -1 out of memory. */
static int32_t rule_of(parser *p, const char *s, size_t n) {
    for (size_t r = 0; r < p->rules.len; r++)
        if (p->rules.data[r].name && strlen(p->rules.data[r].name) == n &&
            memcmp(p->rules.data[r].name, s, n) == 0)
            return (int32_t)r;
    prule nr = {0};
    nr.name = malloc(n + 1);
    if (!nr.name) return -1;
    memcpy(nr.name, s, n);
    nr.name[n] = 0;
    nr.ref_line = p->line;
    nr.ref_col = p->col;
    if (facet_vec_push(&p->rules, nr)) {
        free(nr.name);
        return -1;
    }
    return (int32_t)p->rules.len - 1;
}

static int32_t new_rule(parser *p) {
    prule nr = {0};
    nr.defined = 1;
    if (facet_vec_push(&p->rules, nr)) return -1;
    return (int32_t)p->rules.len - 1;
}

static int emit(parser *p, int32_t r, int32_t type, int32_t arg) {
    gram_elem e = {type, arg};
    if (facet_vec_push(&p->rules.data[r].body, e)) return nomem(p), -1;
    return 0;
}

/* One code point of UTF-8 at p (advancing), or -1 (invalid UTF-8, reported). */
static long read_cp(parser *p) {
    const unsigned char *u = (const unsigned char *)p->s + p->i;
    size_t left = p->len - p->i;
    size_t ok = facet_utf8_validate((const char *)u, left < 4 ? left : 4);
    unsigned c = u[0];
    size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (ok < n) {
        if (p->st == FACET_OK)
            p->st = facet_err(p->err, FACET_E_UTF8, "grammar:%d:%d: invalid UTF-8", p->line, p->col);
        return -1;
    }
    long cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < n; k++) cp = (cp << 6) | (u[k] & 0x3F);
    for (size_t k = 0; k < n; k++) adv(p);
    return cp;
}

static long hex_digits(parser *p, int n) {
    long v = 0;
    for (int k = 0; k < n; k++) {
        int c = peek(p);
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return fail(p, FACET_E_PARSE, "a hexadecimal digit"), -1;
        v = v * 16 + d;
        adv(p);
    }
    if (v > 0x10FFFF) return fail(p, FACET_E_PARSE, "a code point <= 0x10FFFF"), -1;
    return v;
}

/* One character of a literal or class, escapes resolved; -1 on error. */
static long read_char(parser *p) {
    if (peek(p) == -1) return fail(p, FACET_E_PARSE, "a character"), -1;
    if (peek(p) != '\\') return read_cp(p);
    adv(p);
    int c = peek(p);
    adv(p);
    switch (c) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '\'': return c;
    case 'x': return hex_digits(p, 2);
    case 'u': return hex_digits(p, 4);
    case 'U': return hex_digits(p, 8);
    default:
        if (p->i > 0) p->i--, p->col--;
        return fail(p, FACET_E_PARSE, "an escape (\\n \\r \\t \\\\ \\\" \\[ \\] \\- \\^ \\xHH \\uHHHH)"), -1;
    }
}

static int32_t add_class(parser *p, const gram_range *r, int n, int negated) {
    gram_class c = {(int32_t)p->g->ranges.len, n, negated};
    for (int k = 0; k < n; k++)
        if (facet_vec_push(&p->g->ranges, r[k])) return nomem(p), -1;
    if (facet_vec_push(&p->g->classes, c)) return nomem(p), -1;
    return (int32_t)p->g->classes.len - 1;
}

static int parse_alternatives(parser *p, int32_t r);

/* Repeat body[start..) of rule r between lo and hi (-1 = unbounded) times. */
static int repeat(parser *p, int32_t r, size_t start, long lo, long hi) {
    elem_vec *b = &p->rules.data[r].body;
    size_t n = b->len - start;
    gram_elem *item = malloc((n ? n : 1) * sizeof *item);
    if (!item) return nomem(p), -1;
    if (n) memcpy(item, b->data + start, n * sizeof *item); /* an empty body may have no data */
    b->len = start;
    int rc = 0;
    for (long k = 0; k < lo && !rc; k++)
        for (size_t j = 0; j < n && !rc; j++) rc = emit(p, r, item[j].type, item[j].arg);
    if (!rc && hi < 0) { /* R ::= item R | ε */
        int32_t R = new_rule(p);
        if (R < 0) rc = -1, nomem(p);
        for (size_t j = 0; j < n && !rc; j++) rc = emit(p, R, item[j].type, item[j].arg);
        if (!rc) rc = emit(p, R, GRAM_REF, R);
        if (!rc) rc = emit(p, R, GRAM_END, 0);
        if (!rc) rc = emit(p, R, GRAM_END, 0);
        if (!rc) rc = emit(p, r, GRAM_REF, R);
    } else if (!rc && hi > lo) { /* R_k ::= item R_{k-1} | ε, R_0 = nothing */
        int32_t prev = -1;
        for (long k = 0; k < hi - lo && !rc; k++) {
            int32_t R = new_rule(p);
            if (R < 0) {
                rc = -1;
                nomem(p);
                break;
            }
            for (size_t j = 0; j < n && !rc; j++) rc = emit(p, R, item[j].type, item[j].arg);
            if (!rc && prev >= 0) rc = emit(p, R, GRAM_REF, prev);
            if (!rc) rc = emit(p, R, GRAM_END, 0);
            if (!rc) rc = emit(p, R, GRAM_END, 0);
            prev = R;
        }
        if (!rc) rc = emit(p, r, GRAM_REF, prev);
    }
    free(item);
    return rc;
}

static long read_int(parser *p) {
    if (peek(p) < '0' || peek(p) > '9') return fail(p, FACET_E_PARSE, "a number"), -1;
    long v = 0;
    while (peek(p) >= '0' && peek(p) <= '9') {
        v = v * 10 + (peek(p) - '0');
        if (v > MAX_REPEAT) {
            if (p->st == FACET_OK)
                p->st = facet_err(p->err, FACET_E_LIMIT,
                                  "grammar:%d:%d: a repetition bound over %d", p->line,
                                  p->col, MAX_REPEAT);
            return -1;
        }
        adv(p);
    }
    return v;
}

/* 1 when a name followed by ::= starts at the cursor (the next rule). */
static int at_rule_start(parser *p) {
    size_t j = p->i;
    while (j < p->len && is_name_char((unsigned char)p->s[j])) j++;
    if (j == p->i) return 0;
    while (j < p->len && (p->s[j] == ' ' || p->s[j] == '\t')) j++;
    return p->len - j >= 3 && memcmp(p->s + j, "::=", 3) == 0;
}

static int parse_item(parser *p, int32_t r) {
    int c = peek(p);
    if (c == '"') {
        adv(p);
        while (peek(p) != '"') {
            if (peek(p) == -1 || peek(p) == '\n') return fail(p, FACET_E_PARSE, "'\"' closing the literal"), -1;
            long cp = read_char(p);
            if (cp < 0) return -1;
            gram_range rg = {(uint32_t)cp, (uint32_t)cp};
            int32_t k = add_class(p, &rg, 1, 0);
            if (k < 0 || emit(p, r, GRAM_CHAR, k)) return -1;
        }
        adv(p);
        return 0;
    }
    if (c == '[') {
        adv(p);
        int neg = 0;
        if (peek(p) == '^') neg = 1, adv(p);
        FACET_VEC(gram_range) rs = {0};
        while (peek(p) != ']') {
            if (peek(p) == -1) {
                facet_vec_free(&rs);
                return fail(p, FACET_E_PARSE, "']' closing the character class"), -1;
            }
            long lo = read_char(p), hi = lo;
            if (lo >= 0 && peek(p) == '-' && p->i + 1 < p->len && p->s[p->i + 1] != ']') {
                adv(p);
                hi = read_char(p);
                if (hi >= 0 && hi < lo) {
                    facet_vec_free(&rs);
                    return fail(p, FACET_E_PARSE, "a range whose end is not below its start"), -1;
                }
            }
            gram_range rg = {(uint32_t)lo, (uint32_t)hi};
            if (lo < 0 || hi < 0 || facet_vec_push(&rs, rg)) {
                facet_vec_free(&rs);
                return lo < 0 || hi < 0 ? -1 : (nomem(p), -1);
            }
        }
        adv(p);
        int32_t k = add_class(p, rs.data, (int)rs.len, neg);
        facet_vec_free(&rs);
        return k < 0 || emit(p, r, GRAM_CHAR, k) ? -1 : 0;
    }
    if (c == '.') {
        adv(p);
        gram_range rg = {0, 0x10FFFF};
        int32_t k = add_class(p, &rg, 1, 0);
        return k < 0 || emit(p, r, GRAM_CHAR, k) ? -1 : 0;
    }
    if (c == '(') {
        adv(p);
        if (++p->depth > MAX_NESTING) {
            if (p->st == FACET_OK)
                p->st = facet_err(p->err, FACET_E_LIMIT, "grammar:%d:%d: groups nested over %d deep", p->line, p->col, MAX_NESTING);
            return -1;
        }
        int32_t R = new_rule(p);
        if (R < 0) return nomem(p), -1;
        if (parse_alternatives(p, R)) return -1;
        p->depth--;
        if (peek(p) != ')') return fail(p, FACET_E_PARSE, "')' closing the group"), -1;
        adv(p);
        return emit(p, r, GRAM_REF, R);
    }
    if (is_name_char(c)) {
        size_t s0 = p->i;
        int l0 = p->line, c0 = p->col;
        while (is_name_char(peek(p))) adv(p);
        int sl = p->line, sc = p->col;
        p->line = l0, p->col = c0;
        int32_t R = rule_of(p, p->s + s0, p->i - s0);
        p->line = sl, p->col = sc;
        if (R < 0) return nomem(p), -1;
        return emit(p, r, GRAM_REF, R);
    }
    return fail(p, FACET_E_PARSE, "a literal, a character class, a rule name or '('"), -1;
}

static int parse_sequence(parser *p, int32_t r) {
    for (;;) {
        skip_space(p);
        int c = peek(p);
        if (c == -1 || c == '|' || c == ')' || at_rule_start(p)) break;
        size_t start = p->rules.data[r].body.len;
        if (parse_item(p, r)) return -1;
        for (;;) {
            c = peek(p);
            long lo, hi;
            if (c == '*') lo = 0, hi = -1;
            else if (c == '+') lo = 1, hi = -1;
            else if (c == '?') lo = 0, hi = 1;
            else if (c == '{') {
                adv(p);
                skip_space(p);
                lo = read_int(p);
                if (lo < 0) return -1;
                skip_space(p);
                hi = lo;
                if (peek(p) == ',') {
                    adv(p);
                    skip_space(p);
                    hi = peek(p) == '}' ? -1 : read_int(p);
                    if (hi == -1 && peek(p) != '}') return -1;
                    if (hi >= 0 && hi < lo) return fail(p, FACET_E_PARSE, "{m,n} with n >= m"), -1;
                    skip_space(p);
                }
                if (peek(p) != '}') return fail(p, FACET_E_PARSE, "'}' closing the repetition"), -1;
            } else break;
            adv(p);
            if (repeat(p, r, start, lo, hi)) return -1;
        }
    }
    return 0;
}

static int parse_alternatives(parser *p, int32_t r) {
    for (;;) {
        if (parse_sequence(p, r) || emit(p, r, GRAM_END, 0)) return -1;
        if (peek(p) != '|') return 0;
        adv(p);
    }
}

/* ---- checks and flattening --------------------------------------------------------- */

static int nullable_alt(const facet_grammar *g, const int *nullable, int32_t e) {
    for (; g->elems.data[e].type != GRAM_END; e++)
        if (g->elems.data[e].type == GRAM_CHAR || !nullable[g->elems.data[e].arg]) return 0;
    return 1;
}

/* DFS over "rule r can begin with rule s" edges; color 1 = on the path. */
static int left_cycle(const facet_grammar *g, const int *nullable, int *color, int32_t r) {
    if (color[r] == 1) return 1;
    if (color[r] == 2) return 0;
    color[r] = 1;
    const gram_rule *R = &g->rules.data[r];
    for (int32_t a = 0; a < R->n_alts; a++)
        for (int32_t e = g->alt_start.data[R->first_alt + a]; g->elems.data[e].type == GRAM_REF; e++) {
            if (left_cycle(g, nullable, color, g->elems.data[e].arg)) return 1;
            if (!nullable[g->elems.data[e].arg]) break;
        }
    color[r] = 2;
    return 0;
}

static facet_status finish(parser *p) {
    facet_grammar *g = p->g;
    g->root = -1;
    for (size_t r = 0; r < p->rules.len; r++) {
        prule *pr = &p->rules.data[r];
        if (!pr->defined)
            return facet_err(p->err, FACET_E_FORMAT, "grammar:%d:%d: rule '%s' is used but not defined",
                             pr->ref_line, pr->ref_col, pr->name);
        if (pr->name && strcmp(pr->name, "root") == 0) g->root = (int32_t)r;
        gram_rule gr = {(int32_t)g->alt_start.len, 0};
        int32_t base = (int32_t)g->elems.len;
        if (facet_vec_reserve(&g->elems, g->elems.len + pr->body.len)) return nomem(p);
        memcpy(g->elems.data + g->elems.len, pr->body.data, pr->body.len * sizeof *pr->body.data);
        g->elems.len += pr->body.len;
        for (size_t e = 0; e < pr->body.len; e++)
            if (e == 0 || pr->body.data[e - 1].type == GRAM_END) {
                if (facet_vec_push(&g->alt_start, base + (int32_t)e)) return nomem(p);
                gr.n_alts++;
            }
        if (facet_vec_push(&g->rules, gr)) return nomem(p);
    }
    if (g->root < 0)
        return facet_err(p->err, FACET_E_FORMAT, "grammar: no rule named 'root' (the start rule)");
    size_t n = g->rules.len;
    int *nullable = calloc(n, sizeof *nullable), *color = calloc(n, sizeof *color);
    if (!nullable || !color) {
        free(nullable);
        free(color);
        return nomem(p);
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t r = 0; r < n; r++) {
            if (nullable[r]) continue;
            const gram_rule *R = &g->rules.data[r];
            for (int32_t a = 0; a < R->n_alts; a++)
                if (nullable_alt(g, nullable, g->alt_start.data[R->first_alt + a])) {
                    nullable[r] = changed = 1;
                    break;
                }
        }
    }
    facet_status st = FACET_OK;
    for (size_t r = 0; r < n && st == FACET_OK; r++)
        if (left_cycle(g, nullable, color, (int32_t)r)) {
            size_t named = r;
            while (named < n && !p->rules.data[named].name) named++;
            /* a generated rule belongs to the named rule defined before it */
            for (size_t k = r + 1; k-- > 0;)
                if (p->rules.data[k].name) {
                    named = k;
                    break;
                }
            st = facet_err(p->err, FACET_E_FORMAT, "grammar: rule '%s' is left-recursive "
                           "(it can reach itself before matching a character)",
                           named < n ? p->rules.data[named].name : "?");
        }
    free(nullable);
    free(color);
    return st;
}

facet_status facet_grammar_parse(const char *text, size_t len, facet_grammar **out,
                                 facet_error *err) {
    *out = NULL;
    parser p = {.s = text, .len = len, .line = 1, .col = 1, .err = err};
    p.g = calloc(1, sizeof *p.g);
    if (!p.g) return facet_err(err, FACET_E_NOMEM, "grammar");
    skip_space(&p);
    if (peek(&p) == -1) fail(&p, FACET_E_PARSE, "a rule (name ::= ...)");
    while (p.st == FACET_OK && peek(&p) != -1) {
        size_t s0 = p.i;
        while (is_name_char(peek(&p))) adv(&p);
        if (p.i == s0) {
            fail(&p, FACET_E_PARSE, "a rule name");
            break;
        }
        int32_t r = rule_of(&p, text + s0, p.i - s0);
        if (r < 0) {
            nomem(&p);
            break;
        }
        skip_space(&p);
        if (p.len - p.i < 3 || memcmp(text + p.i, "::=", 3) != 0) {
            fail(&p, FACET_E_PARSE, "'::='");
            break;
        }
        if (p.rules.data[r].defined) {
            p.st = facet_err(err, FACET_E_FORMAT, "grammar:%d:%d: rule '%s' is defined twice",
                             p.line, p.col, p.rules.data[r].name);
            break;
        }
        p.rules.data[r].defined = 1;
        adv(&p), adv(&p), adv(&p);
        if (parse_alternatives(&p, r)) break;
        if (peek(&p) == ')') {
            fail(&p, FACET_E_PARSE, "a rule or the end of input ('(' missing)");
            break;
        }
        skip_space(&p);
    }
    facet_status st = p.st == FACET_OK ? finish(&p) : p.st;
    for (size_t r = 0; r < p.rules.len; r++) {
        free(p.rules.data[r].name);
        facet_vec_free(&p.rules.data[r].body);
    }
    facet_vec_free(&p.rules);
    if (st != FACET_OK) {
        facet_grammar_free(p.g);
        return st;
    }
    *out = p.g;
    return FACET_OK;
}

void facet_grammar_free(facet_grammar *g) {
    if (!g) return;
    facet_vec_free(&g->elems);
    facet_vec_free(&g->ranges);
    facet_vec_free(&g->classes);
    facet_vec_free(&g->alt_start);
    facet_vec_free(&g->rules);
    free(g);
}

int gram_class_match(const facet_grammar *g, int32_t c, uint32_t cp) {
    const gram_class *k = &g->classes.data[c];
    int in = 0;
    for (int32_t i = 0; i < k->n && !in; i++) {
        const gram_range *r = &g->ranges.data[k->first + i];
        in = cp >= r->lo && cp <= r->hi;
    }
    return in != k->negated;
}

int gram_class_overlaps(const facet_grammar *g, int32_t c, uint32_t lo, uint32_t hi) {
    const gram_class *k = &g->classes.data[c];
    for (int32_t i = 0; i < k->n; i++) {
        const gram_range *r = &g->ranges.data[k->first + i];
        if (k->negated ? (r->lo <= lo && r->hi >= hi) : (r->lo <= hi && r->hi >= lo))
            return !k->negated;
    }
    return k->negated;
}
