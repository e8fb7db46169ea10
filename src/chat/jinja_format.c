/*
 * jinja_format.c — Python string formatting reachable from a sandboxed template:
 * str.format ("{}", "{0}", "{name}", "{0.attr}", "{0[key]}", conversions !s/!r and the
 * format-spec mini-language [[fill]align][sign][0][width][.precision][type] with types
 * s d f F e E g G x X o b % — Python docs "Format Specification Mini-Language") and
 * printf-style `str % args` (%s %r %d %i %f %F %e %E %g %G %x %X %o %c %% with flags
 * -+ 0#, width, precision, %(name)s — Python docs "printf-style String Formatting").
 * What is outside these subsets fails as an unsupported construct, never silently.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"

typedef struct spec {
    char fill[5];
    char align; /* '<' '>' '^' '=' or 0 */
    char sign;  /* '+' '-' ' ' or 0 */
    int alt, zero;
    long width, prec; /* -1 = none */
    char type;        /* 0 = none */
} spec;

static int isnum(jv v) { return v.k == JV_INT || v.k == JV_BOOL || v.k == JV_FLOAT; }

static size_t cp_len(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) c++;
    return c;
}

/* Pad `body` (a number's sign already in front when numeric) into out. */
static int pad(facet_str *out, const char *body, size_t bn, const spec *sp, int numeric) {
    size_t len = cp_len(body, bn);
    long w = sp->width;
    char align = sp->align ? sp->align : (numeric ? '>' : '<');
    const char *fill = sp->fill[0] ? sp->fill : " ";
    if (sp->zero && !sp->align) {
        align = numeric ? '=' : '<';
        fill = "0";
    }
    if (w < 0 || (size_t)w <= len) return facet_str_append(out, body, bn);
    size_t padn = (size_t)w - len, left = 0, right = 0;
    switch (align) {
    case '<': right = padn; break;
    case '^': left = padn / 2; right = padn - left; break;
    default: left = padn; break;
    }
    size_t signlen = 0;
    if (align == '=' && numeric && bn && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) signlen = 1;
    if (facet_str_append(out, body, signlen)) return -1;
    for (size_t i = 0; i < left; i++)
        if (facet_str_appendz(out, fill)) return -1;
    if (facet_str_append(out, body + signlen, bn - signlen)) return -1;
    for (size_t i = 0; i < right; i++)
        if (facet_str_appendz(out, fill)) return -1;
    return 0;
}

/* Format one number per type; returns 0, 1 = type not valid for the value, -1 OOM. */
static int number(facet_str *b, jv v, const spec *sp, int printf_style) {
    char t = sp->type, tmp[512];
    double f = v.k == JV_FLOAT ? v.u.f : v.k == JV_INT ? (double)v.u.i : v.u.b;
    int64_t i = v.k == JV_INT ? v.u.i : v.u.b;
    const char *sgn = "";
    if (strchr("dxXobc", t) && t) {
        if (v.k == JV_FLOAT) {
            if (!printf_style || t == 'c' || !isfinite(f)) return 1;
            if (fabs(f) >= 9.2e18) return 1;
            i = (int64_t)f; /* '%d' % 3.7 == '3' */
        }
        if (t == 'c') return 1; /* %c is rare; refused rather than guessed */
        uint64_t mag = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
        if (i < 0) sgn = "-";
        else if (sp->sign == '+') sgn = "+";
        else if (sp->sign == ' ') sgn = " ";
        char digits[80];
        const char *prefix = "";
        if (t == 'x' || t == 'X') {
            snprintf(digits, sizeof digits, t == 'x' ? "%llx" : "%llX", (unsigned long long)mag);
            if (sp->alt) prefix = t == 'x' ? "0x" : "0X";
        } else if (t == 'o') {
            snprintf(digits, sizeof digits, "%llo", (unsigned long long)mag);
            if (sp->alt) prefix = "0o";
        } else if (t == 'b') {
            int k = 0;
            char rev[70];
            do {
                rev[k++] = (char)('0' + (mag & 1));
                mag >>= 1;
            } while (mag);
            for (int j = 0; j < k; j++) digits[j] = rev[k - 1 - j];
            digits[k] = 0;
            if (sp->alt) prefix = "0b";
        } else {
            snprintf(digits, sizeof digits, "%llu", (unsigned long long)mag);
        }
        if (printf_style && sp->prec >= 0) { /* '%.3d' % 5 == '005' */
            size_t dl = strlen(digits);
            if ((size_t)sp->prec > dl && sp->prec < 400) {
                char z[512];
                memset(z, '0', (size_t)sp->prec - dl);
                strcpy(z + sp->prec - dl, digits);
                return facet_str_appendz(b, sgn) || facet_str_appendz(b, prefix) || facet_str_appendz(b, z) ? -1 : 0;
            }
        }
        return facet_str_appendz(b, sgn) || facet_str_appendz(b, prefix) || facet_str_appendz(b, digits) ? -1 : 0;
    }
    if (!t || strchr("fFeEgG%", t)) {
        if (!t) {
            if (v.k != JV_FLOAT && sp->prec < 0) {
                snprintf(tmp, sizeof tmp, "%s%lld", (i >= 0 && sp->sign == '+') ? "+" : (i >= 0 && sp->sign == ' ') ? " " : "",
                         (long long)i);
                return facet_str_appendz(b, tmp);
            }
            if (sp->prec >= 0) return 1; /* Python's general format without a type: not implemented */
            char r[40];
            jv_format_float(f, r);
            snprintf(tmp, sizeof tmp, "%s%s", (f >= 0 || isnan(f)) && sp->sign == '+' ? "+" : (f >= 0 || isnan(f)) && sp->sign == ' ' ? " " : "", r);
            return facet_str_appendz(b, tmp);
        }
        long p = sp->prec >= 0 ? sp->prec : 6;
        if (p > 300) return 1;
        double x = t == '%' ? f * 100.0 : f;
        char fmt[48];
        snprintf(fmt, sizeof fmt, "%%%s%s.%ld%c", sp->sign == '+' ? "+" : sp->sign == ' ' ? " " : "", sp->alt ? "#" : "", p,
                 t == '%' ? 'f' : t);
        int need = snprintf(NULL, 0, fmt, x);
        if (need < 0) return 1;
        if ((size_t)need >= sizeof tmp) { /* e.g. '%.300f' % 1e308: write it whole */
            char *big = malloc((size_t)need + 1);
            if (!big) return -1;
            snprintf(big, (size_t)need + 1, fmt, x);
            int r = facet_str_append(b, big, (size_t)need);
            free(big);
            if (r) return -1;
            return t == '%' ? facet_str_putc(b, '%') : 0;
        }
        snprintf(tmp, sizeof tmp, fmt, x);
        /* Python spells non-finite values inf/nan (upper case for F/E/G) */
        if (!isfinite(x)) {
            const char *w = isnan(x) ? "nan" : "inf";
            char up = (t == 'F' || t == 'E' || t == 'G');
            snprintf(tmp, sizeof tmp, "%s%s", x < 0 ? "-" : sp->sign == '+' ? "+" : sp->sign == ' ' ? " " : "",
                     up ? (isnan(x) ? "NAN" : "INF") : w);
        }
        if (facet_str_appendz(b, tmp)) return -1;
        return t == '%' ? facet_str_putc(b, '%') : 0;
    }
    return 1;
}

/* Format value v with spec (shared by str.format and %); out appended. */
static int format_value(jctx *cx, const jnode *at, jv v, const spec *sp, int printf_style, facet_str *out) {
    facet_str body = {0};
    int numeric = 0, rc;
    if (sp->type == 's' || (!sp->type && !isnum(v)) || (sp->type == 'r')) {
        if (!printf_style && sp->type == 's' && v.k != JV_STR) {
            facet_str_free(&body);
            return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: Unknown format code 's' for object of type '%s'", jv_type_name(v));
        }
        if (!printf_style && !sp->type && v.k != JV_STR && v.k != JV_UNDEF && v.k != JV_NONE && !isnum(v) &&
            (sp->width >= 0 || sp->prec >= 0 || sp->align))
            return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: unsupported format string passed to %s.__format__", jv_type_name(v));
        rc = sp->type == 'r' ? jv_to_pyrepr(&body, v) : jx_str(cx, at, v, &body);
        if (rc) {
            facet_str_free(&body);
            return sp->type == 'r' ? jx_fail(cx, at, FACET_E_UNSUPPORTED, "unsupported construct: repr of a %s", jv_type_name(v)) : -1;
        }
        if (sp->prec >= 0) { /* truncate to prec code points */
            size_t k = 0, cps = 0;
            while (k < body.len && cps < (size_t)sp->prec) {
                k++;
                while (k < body.len && ((unsigned char)body.data[k] & 0xC0) == 0x80) k++;
                cps++;
            }
            facet_str_truncate(&body, k);
        }
    } else {
        if (!isnum(v)) {
            facet_str_free(&body);
            if (v.k == JV_UNDEF) return jx_undef_error(cx, at, v);
            if (printf_style)
                return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: %%%c format: a real number is required, not %s", sp->type, jv_type_name(v));
            return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: Unknown format code '%c' for object of type '%s'", sp->type, jv_type_name(v));
        }
        numeric = 1;
        rc = number(&body, v, sp, printf_style);
        if (rc) {
            facet_str_free(&body);
            if (rc < 0) return jx_fail(cx, at, FACET_E_NOMEM, "out of memory");
            return jx_fail(cx, at, FACET_E_UNSUPPORTED, "unsupported construct: format type '%c' with a %s", sp->type ? sp->type : '-', jv_type_name(v));
        }
    }
    rc = pad(out, facet_str_cstr(&body), body.len, sp, numeric);
    facet_str_free(&body);
    return rc ? jx_fail(cx, at, FACET_E_LIMIT, "formatted string too large") : 0;
}

static int parse_spec(const char *s, size_t n, spec *sp) {
    memset(sp, 0, sizeof *sp);
    sp->width = sp->prec = -1;
    size_t i = 0;
    /* [[fill]align]: fill is one code point */
    size_t cl = 1;
    while (cl < n && ((unsigned char)s[cl] & 0xC0) == 0x80) cl++;
    if (n > cl && strchr("<>^=", s[cl]) && cl < sizeof sp->fill) {
        memcpy(sp->fill, s, cl);
        sp->align = s[cl];
        i = cl + 1;
    } else if (n > 0 && strchr("<>^=", s[0])) {
        sp->align = s[0];
        i = 1;
    }
    if (i < n && strchr("+- ", s[i])) sp->sign = s[i++];
    if (i < n && s[i] == '#') {
        sp->alt = 1;
        i++;
    }
    if (i < n && s[i] == '0') {
        sp->zero = 1;
        i++;
    }
    if (i < n && s[i] >= '0' && s[i] <= '9') {
        sp->width = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9' && sp->width < 100000) sp->width = sp->width * 10 + (s[i++] - '0');
    }
    if (i < n && (s[i] == ',' || s[i] == '_')) return -1; /* grouping: not implemented */
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n || s[i] < '0' || s[i] > '9') return -1;
        sp->prec = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9' && sp->prec < 100000) sp->prec = sp->prec * 10 + (s[i++] - '0');
    }
    if (i < n && strchr("sdfFeEgGxXob%", s[i])) sp->type = s[i++];
    return i == n ? 0 : -1;
}

int jx_str_format(jctx *cx, const jnode *at, jv self, jv *args, size_t nargs, char **kwn, jv *kwv, size_t nkw, jv *out) {
    const char *s = JS(self)->s;
    size_t n = JS(self)->len, autoi = 0;
    int manual = 0;
    facet_str b = {0};
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if ((c == '{' || c == '}') && i + 1 < n && s[i + 1] == c) {
            if (facet_str_putc(&b, c)) goto nomem;
            i++;
            continue;
        }
        if (c == '}') {
            facet_str_free(&b);
            return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: Single '}' encountered in format string");
        }
        if (c != '{') {
            if (facet_str_putc(&b, c)) goto nomem;
            continue;
        }
        size_t e = i + 1;
        int depth = 0;
        while (e < n && (s[e] != '}' || depth)) {
            if (s[e] == '{') depth++;
            if (s[e] == '}') depth--;
            e++;
        }
        if (e >= n) {
            facet_str_free(&b);
            return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: expected '}' before end of string");
        }
        const char *f = s + i + 1;
        size_t fl = e - i - 1;
        if (memchr(f, '{', fl)) {
            facet_str_free(&b);
            return jx_fail(cx, at, FACET_E_UNSUPPORTED, "unsupported construct: nested replacement field in str.format");
        }
        const char *colon = memchr(f, ':', fl), *bang = memchr(f, '!', fl);
        if (bang && colon && bang > colon) bang = NULL;
        size_t namel = bang ? (size_t)(bang - f) : colon ? (size_t)(colon - f) : fl;
        char conv = 0;
        if (bang) {
            conv = bang + 1 < f + fl ? bang[1] : 0;
            if ((conv != 'r' && conv != 's') || (bang + 2 != f + fl && bang + 2 != colon)) {
                facet_str_free(&b);
                return jx_fail(cx, at, FACET_E_UNSUPPORTED, "unsupported construct: str.format conversion '!%c'", conv ? conv : '?');
            }
        }
        spec sp;
        if (parse_spec(colon ? colon + 1 : "", colon ? (size_t)(f + fl - colon - 1) : 0, &sp)) {
            facet_str_free(&b);
            return jx_fail(cx, at, FACET_E_UNSUPPORTED, "unsupported construct: format spec '%.*s'", (int)(f + fl - colon - 1), colon + 1);
        }
        /* field name: first part (index or keyword), then .attr / [key] parts */
        size_t k = 0;
        while (k < namel && f[k] != '.' && f[k] != '[') k++;
        jv v;
        if (k == 0) {
            if (manual) goto mixed;
            if (autoi >= nargs) goto missing;
            v = jv_ref(args[autoi++]);
        } else if (f[0] >= '0' && f[0] <= '9') {
            if (autoi) goto mixed;
            manual = 1;
            size_t idx = (size_t)strtoul(f, NULL, 10);
            if (idx >= nargs) goto missing;
            v = jv_ref(args[idx]);
        } else {
            jv *found = NULL;
            for (size_t q = 0; q < nkw; q++)
                if (strlen(kwn[q]) == k && !memcmp(kwn[q], f, k)) found = &kwv[q];
            if (!found) {
                facet_str_free(&b);
                return jx_fail(cx, at, FACET_E_TEMPLATE, "KeyError: '%.*s'", (int)k, f);
            }
            v = jv_ref(*found);
        }
        while (k < namel) {
            jv nx;
            int rc;
            if (f[k] == '.') {
                size_t a = ++k;
                while (k < namel && f[k] != '.' && f[k] != '[') k++;
                char *attr = strndup(f + a, k - a);
                rc = attr ? jx_getattr(cx, at, v, attr, &nx) : jx_fail(cx, at, FACET_E_NOMEM, "out of memory");
                free(attr);
            } else {
                size_t a = ++k;
                while (k < namel && f[k] != ']') k++;
                jv key;
                int digits = k > a;
                for (size_t q = a; q < k; q++)
                    if (f[q] < '0' || f[q] > '9') digits = 0;
                key = digits ? jv_int(strtoll(f + a, NULL, 10)) : jv_str(f + a, k - a);
                k++;
                rc = jx_getitem(cx, at, v, key, &nx);
                jv_unref(key);
            }
            jv_unref(v);
            if (rc) {
                facet_str_free(&b);
                return -1;
            }
            v = nx;
        }
        if (conv == 'r' || conv == 's') {
            facet_str t = {0};
            int rc = conv == 'r' ? jv_to_pyrepr(&t, v) : jx_str(cx, at, v, &t);
            jv_unref(v);
            if (rc) {
                facet_str_free(&t);
                facet_str_free(&b);
                return conv == 'r' ? jx_fail(cx, at, FACET_E_UNSUPPORTED, "unsupported construct: repr of this value") : -1;
            }
            v = jv_str_take(&t);
        }
        int rc = format_value(cx, at, v, &sp, 0, &b);
        jv_unref(v);
        if (rc) {
            facet_str_free(&b);
            return -1;
        }
        i = e;
    }
    *out = jv_str_take(&b);
    return out->k == JV_STR ? 0 : jx_fail(cx, at, FACET_E_NOMEM, "out of memory");
nomem:
    facet_str_free(&b);
    return jx_fail(cx, at, FACET_E_NOMEM, "out of memory");
mixed:
    facet_str_free(&b);
    return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: cannot switch between automatic field numbering and manual field specification");
missing:
    facet_str_free(&b);
    return jx_fail(cx, at, FACET_E_TEMPLATE, "IndexError: Replacement index %zu out of range for positional args tuple", autoi);
}

int jx_printf_format(jctx *cx, const jnode *at, jv fmt, jv argv, jv *out) {
    jv one[1] = {argv};
    jv *args = one;
    size_t nargs = 1, used = 0;
    int is_tuple = argv.k == JV_LIST && JL(argv)->flavor == JL_TUPLE;
    int mapping = argv.k == JV_DICT || (argv.k == JV_LIST && !is_tuple); /* has __getitem__ */
    if (is_tuple) {
        args = JL(argv)->data;
        nargs = JL(argv)->len;
    }
    const char *s = JS(fmt)->s;
    size_t n = JS(fmt)->len;
    facet_str b = {0};
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            if (facet_str_putc(&b, s[i])) goto nomem;
            continue;
        }
        if (++i >= n) {
            facet_str_free(&b);
            return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: incomplete format");
        }
        jv v = jv_undef();
        int have = 0;
        if (s[i] == '(') {
            size_t e = i + 1;
            while (e < n && s[e] != ')') e++;
            if (e >= n || argv.k != JV_DICT) {
                facet_str_free(&b);
                return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: format requires a mapping");
            }
            jv key = jv_str(s + i + 1, e - i - 1);
            jv *found = jv_dict_get(argv, key);
            jv_unref(key);
            if (!found) {
                facet_str_free(&b);
                return jx_fail(cx, at, FACET_E_TEMPLATE, "KeyError: '%.*s'", (int)(e - i - 1), s + i + 1);
            }
            v = *found;
            have = 1;
            i = e + 1;
        }
        spec sp;
        memset(&sp, 0, sizeof sp);
        sp.width = sp.prec = -1;
        for (; i < n && strchr("-+ 0#", s[i]); i++) {
            if (s[i] == '-') sp.align = '<';
            else if (s[i] == '+') sp.sign = '+';
            else if (s[i] == ' ' && sp.sign != '+') sp.sign = ' ';
            else if (s[i] == '0') sp.zero = 1;
            else sp.alt = 1;
        }
        if (sp.align == '<') sp.zero = 0;
        if (i < n && s[i] == '*') {
            facet_str_free(&b);
            return jx_fail(cx, at, FACET_E_UNSUPPORTED, "unsupported construct: '*' width in %%-formatting");
        }
        /* digits saturate above the limit checked below (no overflow on long runs) */
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            sp.width = sp.width > 1000000 ? sp.width : (sp.width < 0 ? 0 : sp.width) * 10 + (s[i] - '0');
        if (i < n && s[i] == '.') {
            sp.prec = 0;
            for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++)
                sp.prec = sp.prec > 1000000 ? sp.prec : sp.prec * 10 + (s[i] - '0');
        }
        if (sp.width > 100000 || sp.prec > 100000) {
            facet_str_free(&b);
            return jx_fail(cx, at, FACET_E_LIMIT, "%%-format width or precision too large");
        }
        if (i >= n) {
            facet_str_free(&b);
            return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: incomplete format");
        }
        char t = s[i];
        if (t == '%') {
            if (facet_str_putc(&b, '%')) goto nomem;
            continue;
        }
        if (!strchr("srdifFeEgGxXo", t)) {
            facet_str_free(&b);
            if (t == 'c' || t == 'a')
                return jx_fail(cx, at, FACET_E_UNSUPPORTED, "unsupported construct: %%%c in %%-formatting", t);
            return jx_fail(cx, at, FACET_E_TEMPLATE, "ValueError: unsupported format character '%c'", t);
        }
        if (!have) {
            if (used >= nargs) {
                facet_str_free(&b);
                return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: not enough arguments for format string");
            }
            v = args[used++];
        }
        sp.type = t == 'i' ? 'd' : t;
        if (sp.zero && !sp.align && strchr("sr", sp.type)) sp.zero = 0;
        if (sp.type == 'd' && v.k == JV_STR) {
            facet_str_free(&b);
            return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: %%d format: a real number is required, not str");
        }
        if (format_value(cx, at, v, &sp, 1, &b)) {
            facet_str_free(&b);
            return -1;
        }
    }
    if (is_tuple ? used < nargs : (used == 0 && !mapping && argv.k != JV_DICT)) {
        facet_str_free(&b);
        return jx_fail(cx, at, FACET_E_TEMPLATE, "TypeError: not all arguments converted during string formatting");
    }
    *out = jv_str_take(&b);
    return out->k == JV_STR ? 0 : jx_fail(cx, at, FACET_E_NOMEM, "out of memory");
nomem:
    facet_str_free(&b);
    return jx_fail(cx, at, FACET_E_NOMEM, "out of memory");
}
