/*
 * jinja_lex.c — template source to tokens, following jinja2/lexer.py (3.1) with
 * trim_blocks and lstrip_blocks on and keep_trailing_newline off: newlines are
 * normalized to "\n" and one trailing newline is dropped; "{%-"/"-%}" strip whitespace;
 * "{%+"/"+%}" disable lstrip/trim; block and comment tags alone on a line lose their
 * indentation (lstrip_blocks) and the newline after them (trim_blocks).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"

typedef struct lexer {
    char *s; /* normalized source */
    size_t n, pos;
    int line, col; /* of s[pos] */
    jtoks *out;
    facet_error *err;
} lexer;

static void advance(lexer *L, size_t k) {
    for (size_t i = 0; i < k && L->pos < L->n; i++, L->pos++) {
        if (L->s[L->pos] == '\n') {
            L->line++;
            L->col = 1;
        } else {
            L->col++;
        }
    }
}

static int fail(lexer *L, facet_status st, const char *msg) {
    facet_err(L->err, st, "template line %d:%d: %s", L->line, L->col, msg);
    return -1;
}

static jtok *push(lexer *L, jtok_kind k, int line, int col) {
    if (facet_vec_push(L->out, (jtok){0})) {
        fail(L, FACET_E_NOMEM, "out of memory");
        return NULL;
    }
    jtok *t = &L->out->data[L->out->len - 1];
    t->k = k;
    t->line = line;
    t->col = col;
    return t;
}

static int isws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static int isdig(char c) { return c >= '0' && c <= '9'; }
static int isident0(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

/* Emit text [a, b) (with its starting line/col). */
static int emit_text(lexer *L, size_t a, size_t b, int line, int col) {
    if (b <= a) return 0;
    jtok *t = push(L, T_TEXT, line, col);
    if (!t) return -1;
    t->s = malloc(b - a + 1);
    if (!t->s) return fail(L, FACET_E_NOMEM, "out of memory");
    memcpy(t->s, L->s + a, b - a);
    t->s[b - a] = 0;
    t->slen = b - a;
    return 0;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static size_t put_utf8(char *o, uint32_t cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F)); return 4;
}

/* A string literal: quotes at s[pos]; decodes Python "unicode-escape" escapes. */
static int lex_string(lexer *L, int line, int col) {
    char q = L->s[L->pos];
    size_t i = L->pos + 1;
    while (i < L->n && L->s[i] != q) i += (L->s[i] == '\\' && i + 1 < L->n) ? 2 : 1;
    if (i >= L->n) return fail(L, FACET_E_PARSE, "unterminated string literal");
    size_t a = L->pos + 1, b = i;
    char *o = malloc(b - a + 1);
    if (!o) return fail(L, FACET_E_NOMEM, "out of memory");
    size_t on = 0;
    for (size_t k = a; k < b;) {
        char c = L->s[k];
        if (c != '\\') {
            o[on++] = c;
            k++;
            continue;
        }
        char e = L->s[k + 1];
        k += 2;
        uint32_t cp;
        int nhex = 0;
        switch (e) {
        case '\\': o[on++] = '\\'; continue;
        case '\'': o[on++] = '\''; continue;
        case '"': o[on++] = '"'; continue;
        case 'a': o[on++] = '\a'; continue;
        case 'b': o[on++] = '\b'; continue;
        case 'f': o[on++] = '\f'; continue;
        case 'n': o[on++] = '\n'; continue;
        case 'r': o[on++] = '\r'; continue;
        case 't': o[on++] = '\t'; continue;
        case 'v': o[on++] = '\v'; continue;
        case '\n': continue;
        case 'x': nhex = 2; break;
        case 'u': nhex = 4; break;
        case 'U': nhex = 8; break;
        case 'N':
            free(o);
            return fail(L, FACET_E_UNSUPPORTED, "unsupported construct: \\N{...} escape in a string literal");
        default:
            if (e >= '0' && e <= '7') {
                cp = (uint32_t)(e - '0');
                for (int d = 0; d < 2 && k < b && L->s[k] >= '0' && L->s[k] <= '7'; d++, k++)
                    cp = cp * 8 + (uint32_t)(L->s[k] - '0');
                on += put_utf8(o + on, cp);
                continue;
            }
            o[on++] = '\\';
            o[on++] = e;
            continue;
        }
        cp = 0;
        for (int d = 0; d < nhex; d++, k++) {
            int h = k < b ? hexval(L->s[k]) : -1;
            if (h < 0) {
                free(o);
                return fail(L, FACET_E_PARSE, "truncated \\x/\\u/\\U escape in a string literal");
            }
            cp = cp * 16 + (uint32_t)h;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            free(o);
            return fail(L, FACET_E_PARSE, "escape is not a valid Unicode scalar value");
        }
        on += put_utf8(o + on, cp); /* an escape is >= 4 source bytes, so this fits */
    }
    o[on] = 0;
    jtok *t = push(L, T_STRING, line, col);
    if (!t) {
        free(o);
        return -1;
    }
    t->s = o;
    t->slen = on;
    advance(L, i + 1 - L->pos);
    return 0;
}

static int lex_number(lexer *L, int line, int col) {
    size_t i = L->pos;
    /* 0x / 0o / 0b integer literals (jinja2.lexer integer_re), underscores allowed */
    if (L->s[i] == '0' && i + 2 < L->n && strchr("xXoObB", L->s[i + 1])) {
        int base = (L->s[i + 1] == 'x' || L->s[i + 1] == 'X') ? 16 : (L->s[i + 1] == 'o' || L->s[i + 1] == 'O') ? 8 : 2;
        size_t j = i + 2;
        uint64_t v = 0;
        int nd = 0, over = 0;
        for (; j < L->n; j++) {
            char c = L->s[j];
            if (c == '_' && nd) continue;
            int d = hexval(c);
            if (d < 0 || d >= base) break;
            if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) over = 1;
            v = v * (uint64_t)base + (uint64_t)d;
            nd++;
        }
        if (nd) {
            if (over || v > INT64_MAX) return fail(L, FACET_E_UNSUPPORTED, "unsupported construct: integer literal beyond 64 bits");
            jtok *t = push(L, T_INT, line, col);
            if (!t) return -1;
            t->i = (int64_t)v;
            advance(L, j - L->pos);
            return 0;
        }
    }
    /* the literal's digits without underscores, never truncated */
    facet_str nb = {0};
    int isf = 0;
#define DIGITS()                                                                                     \
    while (i < L->n && (isdig(L->s[i]) || (L->s[i] == '_' && i + 1 < L->n && isdig(L->s[i + 1])))) { \
        if (L->s[i] != '_') facet_str_putc(&nb, L->s[i]);                                            \
        i++;                                                                                         \
    }
    DIGITS();
    if (i + 1 < L->n && L->s[i] == '.' && isdig(L->s[i + 1])) {
        isf = 1;
        facet_str_putc(&nb, '.');
        i++;
        DIGITS();
    }
    if (i < L->n && (L->s[i] == 'e' || L->s[i] == 'E')) {
        size_t j = i + 1;
        if (j < L->n && (L->s[j] == '+' || L->s[j] == '-')) j++;
        if (j < L->n && isdig(L->s[j])) {
            isf = 1;
            facet_str_putc(&nb, 'e');
            if (L->s[i + 1] == '-' || L->s[i + 1] == '+') facet_str_putc(&nb, L->s[i + 1]);
            i = j;
            DIGITS();
        }
    }
#undef DIGITS
    if (nb.failed || !nb.data) { /* errors are sticky: one check */
        facet_str_free(&nb);
        return fail(L, FACET_E_NOMEM, "out of memory");
    }
    const char *buf = nb.data;
    size_t bn = nb.len;
    jtok *t = push(L, isf ? T_FLOAT : T_INT, line, col);
    if (!t) {
        facet_str_free(&nb);
        return -1;
    }
    int bad = 0;
    if (isf) {
        t->f = strtod(buf, NULL);
    } else if (buf[0] == '0' && strspn(buf, "0") != bn) { /* jinja2 integer_re: 0(_?0)* only */
        bad = 1;
    } else {
        errno = 0;
        char *end;
        long long v = strtoll(buf, &end, 10);
        if (errno) bad = 2;
        t->i = v;
    }
    facet_str_free(&nb);
    if (bad == 1) return fail(L, FACET_E_PARSE, "leading zeros in a decimal integer literal");
    if (bad == 2) return fail(L, FACET_E_UNSUPPORTED, "unsupported construct: integer literal beyond 64 bits");
    advance(L, i - L->pos);
    return 0;
}

static const char *OPS2[] = {"//", "**", "==", "!=", "<=", ">=", NULL};
static const char OPS1[] = "+-/*%~[](){}<>=.:|,;";

/* Tokens inside {{ }} or {% %} up to the end marker (which is consumed, with the
 * whitespace rules of its modifier). */
static int lex_tag(lexer *L, int is_block, int *line_starting) {
    int depth = 0;
    for (;;) {
        while (L->pos < L->n && isws(L->s[L->pos])) advance(L, 1);
        if (L->pos >= L->n) return fail(L, FACET_E_PARSE, is_block ? "unexpected end of template, expected '%}'" : "unexpected end of template, expected '}}'");
        const char *p = L->s + L->pos;
        size_t left = L->n - L->pos;
        int line = L->line, col = L->col;
        if (depth == 0) {
            char e = is_block ? '%' : '}';
            int mod = 0;
            if ((p[0] == '-' || p[0] == '+') && left >= 3 && p[1] == e && p[2] == '}') mod = p[0];
            if (mod == '+' && !is_block) mod = 0;
            if (mod || (left >= 2 && p[0] == e && p[1] == '}')) {
                if (!push(L, is_block ? T_BLOCK_END : T_VAR_END, line, col)) return -1;
                advance(L, mod ? 3 : 2);
                int last_nl = 0;
                if (mod == '-') {
                    while (L->pos < L->n && isws(L->s[L->pos])) {
                        last_nl = L->s[L->pos] == '\n';
                        advance(L, 1);
                    }
                } else if (!mod && is_block && L->pos < L->n && L->s[L->pos] == '\n') {
                    advance(L, 1);
                    last_nl = 1;
                }
                *line_starting = last_nl;
                return 0;
            }
        }
        if (p[0] == '\'' || p[0] == '"') {
            if (lex_string(L, line, col)) return -1;
            continue;
        }
        if (isdig(p[0])) {
            if (lex_number(L, line, col)) return -1;
            continue;
        }
        if (isident0(p[0])) {
            size_t k = 1;
            while (k < left && (isident0(p[k]) || isdig(p[k]))) k++;
            jtok *t = push(L, T_NAME, line, col);
            if (!t) return -1;
            t->s = malloc(k + 1);
            if (!t->s) return fail(L, FACET_E_NOMEM, "out of memory");
            memcpy(t->s, p, k);
            t->s[k] = 0;
            t->slen = k;
            advance(L, k);
            continue;
        }
        int olen = 0;
        for (int k = 0; OPS2[k]; k++)
            if (left >= 2 && p[0] == OPS2[k][0] && p[1] == OPS2[k][1]) olen = 2;
        if (!olen && strchr(OPS1, p[0]) && p[0]) olen = 1;
        if (!olen) {
            char msg[64];
            snprintf(msg, sizeof msg, "unexpected character '%c' (0x%02x)", (p[0] >= 32 && p[0] < 127) ? p[0] : '?', (unsigned char)p[0]);
            return fail(L, FACET_E_PARSE, msg);
        }
        if (p[0] == '(' || p[0] == '[' || p[0] == '{') depth++;
        if (olen == 1 && (p[0] == ')' || p[0] == ']' || p[0] == '}')) {
            if (depth == 0) return fail(L, FACET_E_PARSE, "unexpected closing bracket");
            depth--;
        }
        jtok *t = push(L, T_OP, line, col);
        if (!t) return -1;
        memcpy(t->op, p, (size_t)olen);
        advance(L, (size_t)olen);
    }
}

/* At "{%": is this "{%[-+]? raw [-]?%}"? Returns the length of the tag or 0. */
static size_t raw_tag(const char *p, size_t left, const char *word, int *strip_after) {
    size_t i = 2;
    if (i < left && (p[i] == '-' || p[i] == '+')) i++;
    while (i < left && isws(p[i])) i++;
    size_t wl = strlen(word);
    if (i + wl > left || memcmp(p + i, word, wl)) return 0;
    i += wl;
    while (i < left && isws(p[i])) i++;
    *strip_after = 0;
    if (i < left && (p[i] == '-' || p[i] == '+')) {
        *strip_after = p[i] == '-';
        i++;
    }
    if (i + 2 > left || p[i] != '%' || p[i + 1] != '}') return 0;
    return i + 2;
}

facet_status jinja_lex(const char *src, size_t len, jtoks *out, facet_error *err) {
    facet_error local;
    if (!err) err = &local;
    lexer L = {0};
    L.out = out;
    L.err = err;
    L.line = L.col = 1;
    memset(out, 0, sizeof *out);
    L.s = malloc(len + 1);
    if (!L.s) return facet_err(err, FACET_E_NOMEM, "template: out of memory");
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            L.s[L.n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else {
            L.s[L.n++] = src[i];
        }
    }
    if (L.n && L.s[L.n - 1] == '\n') L.n--;
    L.s[L.n] = 0;

    int line_starting = 1;
    int rc = 0;
    while (L.pos < L.n && !rc) {
        size_t idx = L.pos;
        while (idx + 1 < L.n && !(L.s[idx] == '{' && (L.s[idx + 1] == '{' || L.s[idx + 1] == '%' || L.s[idx + 1] == '#'))) idx++;
        if (idx + 1 >= L.n) idx = L.n;
        int tline = L.line, tcol = L.col;
        size_t tstart = L.pos, tend = idx;
        if (idx == L.n) {
            rc = emit_text(&L, tstart, tend, tline, tcol);
            break;
        }
        char kind = L.s[idx + 1];
        char mod = idx + 2 < L.n ? L.s[idx + 2] : 0;
        if (mod != '-' && mod != '+') mod = 0;
        if (mod == '+' && kind == '{') mod = 0;
        if (mod == '-') {
            while (tend > tstart && isws(L.s[tend - 1])) tend--;
        } else if (!mod && kind != '{') {
            size_t lp = tend;
            while (lp > tstart && L.s[lp - 1] != '\n') lp--;
            if (lp > tstart || line_starting) {
                size_t k = lp;
                while (k < tend && isws(L.s[k])) k++;
                if (k == tend) tend = lp;
            }
        }
        if (emit_text(&L, tstart, tend, tline, tcol)) {
            rc = -1;
            break;
        }
        advance(&L, idx - L.pos);
        if (kind == '#') {
            size_t k = idx + 2;
            while (k + 1 < L.n && !(L.s[k] == '#' && L.s[k + 1] == '}')) k++;
            if (k + 1 >= L.n) {
                rc = fail(&L, FACET_E_PARSE, "missing end of comment tag");
                break;
            }
            char cm = L.s[k - 1];
            advance(&L, k + 2 - L.pos);
            int last_nl = 0;
            if (cm == '-' && k - 1 > idx + 2) {
                while (L.pos < L.n && isws(L.s[L.pos])) {
                    last_nl = L.s[L.pos] == '\n';
                    advance(&L, 1);
                }
            } else if (cm != '+' && L.pos < L.n && L.s[L.pos] == '\n') {
                advance(&L, 1);
                last_nl = 1;
            }
            line_starting = last_nl;
            continue;
        }
        int sa;
        size_t rl;
        if (kind == '%' && (rl = raw_tag(L.s + idx, L.n - idx, "raw", &sa)) > 0) {
            advance(&L, rl);
            if (sa)
                while (L.pos < L.n && isws(L.s[L.pos])) advance(&L, 1);
            size_t k = L.pos, el = 0;
            int esa = 0;
            for (; k + 1 < L.n; k++)
                if (L.s[k] == '{' && L.s[k + 1] == '%' && (el = raw_tag(L.s + k, L.n - k, "endraw", &esa)) > 0) break;
            if (!el) {
                rc = fail(&L, FACET_E_PARSE, "missing {% endraw %}");
                break;
            }
            size_t te = k;
            if (L.s[k + 2] == '-')
                while (te > L.pos && isws(L.s[te - 1])) te--;
            if (emit_text(&L, L.pos, te, L.line, L.col)) {
                rc = -1;
                break;
            }
            advance(&L, k + el - L.pos);
            int last_nl = 0;
            if (esa) {
                while (L.pos < L.n && isws(L.s[L.pos])) {
                    last_nl = L.s[L.pos] == '\n';
                    advance(&L, 1);
                }
            } else if (L.s[k + el - 3] != '+' && L.pos < L.n && L.s[L.pos] == '\n') {
                advance(&L, 1);
                last_nl = 1;
            }
            line_starting = last_nl;
            continue;
        }
        if (!push(&L, kind == '%' ? T_BLOCK_BEGIN : T_VAR_BEGIN, L.line, L.col)) {
            rc = -1;
            break;
        }
        advance(&L, mod ? 3 : 2);
        rc = lex_tag(&L, kind == '%', &line_starting);
    }
    if (!rc && !push(&L, T_EOF, L.line, L.col)) rc = -1;
    free(L.s);
    if (rc) {
        jinja_toks_free(out);
        return err->status;
    }
    return FACET_OK;
}

void jinja_toks_free(jtoks *t) {
    for (size_t i = 0; i < t->len; i++) free(t->data[i].s);
    facet_vec_free(t);
}
