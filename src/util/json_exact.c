/*
 * json_exact.c — JSON whose integers may exceed 64 bits, kept exact (see json.h).
 *
 * jansson refuses an integer literal beyond json_int_t ("too big integer"), while
 * Python's json (and so transformers' chat templates) carries it exactly: a tool's JSON
 * schema may say "maximum": 18446744073709551615. Before jansson sees the text, each
 * such literal is rewritten into the string "\u0000i" + its literal text, and every
 * string value that itself begins with NUL gets "\u0000s" prepended, so that a marker
 * can only come from a rewritten number. Keys are never rewritten (a key is a string
 * in both worlds).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

/* 1 when the integer literal s[0..n) (optional '-', digits) lies outside json_int_t.
 * A literal JSON does not allow (a leading zero, no digits) is left to jansson. */
static int beyond_int64(const char *s, size_t n) {
    int neg = s[0] == '-';
    const char *d = s + neg;
    size_t nd = n - (size_t)neg;
    for (size_t i = 0; i < nd; i++)
        if (d[i] < '0' || d[i] > '9') return 0;
    if (nd == 0 || (d[0] == '0' && nd > 1)) return 0;
    const char *lim = neg ? "9223372036854775808" : "9223372036854775807";
    if (nd != 19) return nd > 19;
    return memcmp(d, lim, 19) > 0;
}

/* The end of the string literal that opens at s[i] == '"', or len if unterminated;
 * *nul is set when the literal holds the escape \u0000 (a NUL character). */
static size_t string_end(const char *s, size_t len, size_t i, int *nul) {
    for (i++; i < len; i++) {
        if (s[i] == '\\') {
            if (len - i >= 6 && s[i + 1] == 'u' && !memcmp(s + i + 2, "0000", 4)) *nul = 1;
            i++;
        } else if (s[i] == '"') {
            return i + 1;
        }
    }
    return len;
}

/* Rewrite text into *out when it holds a big integer or a string value beginning with
 * NUL. Returns 1 when rewritten, 0 when the text can go to jansson as it is, -1 when
 * out of memory; *nul is set when a string (key or value) holds a NUL. The scan does
 * not validate: anything it does not recognise is copied and left for jansson to
 * judge. */
static int rewrite(const char *s, size_t len, facet_str *out, int *nul) {
    int changed = 0;
    size_t copied = 0; /* s[0..copied) is in out */
    for (size_t i = 0; i < len;) {
        char c = s[i];
        if (c == '"') {
            size_t e = string_end(s, len, i, nul);
            size_t k = e;
            while (k < len && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r')) k++;
            int is_key = k < len && s[k] == ':';
            if (!is_key && e - i >= 7 && s[i + 1] == '\\' && s[i + 2] == 'u' &&
                !memcmp(s + i + 3, "0000", 4)) {
                facet_str_append(out, s + copied, i + 1 - copied);
                facet_str_appendz(out, "\\u0000s");
                copied = i + 1;
                changed = 1;
            }
            i = e;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t e = i + (c == '-');
            int integer = 1;
            while (e < len && ((s[e] >= '0' && s[e] <= '9') || s[e] == '.' || s[e] == 'e' ||
                               s[e] == 'E' || s[e] == '+' || s[e] == '-')) {
                if (s[e] == '.' || s[e] == 'e' || s[e] == 'E') integer = 0;
                e++;
            }
            if (integer && beyond_int64(s + i, e - i)) {
                facet_str_append(out, s + copied, i - copied);
                facet_str_appendz(out, "\"\\u0000i");
                facet_str_append(out, s + i, e - i);
                facet_str_putc(out, '"');
                copied = e;
                changed = 1;
            }
            i = e;
        } else {
            i++;
        }
    }
    if (!changed) return 0;
    facet_str_append(out, s + copied, len - copied);
    return out->failed ? -1 : 1;
}

json_t *facet_json_loadb_exact(const char *text, size_t len, size_t flags, json_error_t *je) {
    facet_str r = {0};
    int nul = 0;
    int rc = rewrite(text, len, &r, &nul);
    if (rc <= 0) {
        facet_str_free(&r);
        if (rc < 0) {
            memset(je, 0, sizeof *je);
            snprintf(je->text, sizeof je->text, "out of memory");
            je->text[JSON_ERROR_TEXT_LENGTH - 1] = json_error_out_of_memory; /* its code */
            return NULL;
        }
        return json_loadb(text, len, flags, je);
    }
    /* a string holding NUL where the caller refuses them: jansson's own error (the
     * rewritten text holds NULs of its own markers, so the text as given is judged) */
    if (!(flags & JSON_ALLOW_NUL) && nul) {
        facet_str_free(&r);
        return json_loadb(text, len, flags, je);
    }
    json_t *v = json_loadb(r.data, r.len, flags | JSON_ALLOW_NUL, je);
    facet_str_free(&r);
    return v;
}

facet_status facet_json_parse_exact(const char *text, size_t len, const char *what,
                                    json_t **out, facet_error *err) {
    json_error_t je;
    *out = facet_json_loadb_exact(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    return facet_json_load_status(*out, &je, what, err);
}

const char *facet_json_exact_int(const json_t *v) {
    if (!json_is_string(v) || json_string_length(v) < 3) return NULL;
    const char *s = json_string_value(v);
    return s[0] == '\0' && s[1] == 'i' ? s + 2 : NULL;
}

const char *facet_json_exact_type_name(const json_t *v) {
    return facet_json_exact_int(v) ? "integer" : facet_json_type_name(v);
}

const char *facet_json_exact_string(const json_t *v, size_t *len) {
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n >= 2 && s[0] == '\0' && s[1] == 's') {
        s += 2;
        n -= 2;
    }
    *len = n;
    return s;
}

/* Append v as JSON text, markers turned back into what they stand for. */
static void dump(facet_str *b, const json_t *v) {
    const char *digits = facet_json_exact_int(v);
    if (digits) {
        facet_str_appendz(b, digits);
        return;
    }
    if (json_is_array(v)) {
        facet_str_putc(b, '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) facet_str_putc(b, ',');
            dump(b, json_array_get(v, i));
        }
        facet_str_putc(b, ']');
        return;
    }
    if (json_is_object(v)) {
        const char *k;
        size_t klen;
        json_t *x;
        int first = 1;
        facet_str_putc(b, '{');
        json_object_keylen_foreach((json_t *)v, k, klen, x) {
            if (!first) facet_str_putc(b, ',');
            first = 0;
            json_t *key = json_stringn_nocheck(k, klen);
            char *ks = key ? json_dumps(key, JSON_ENCODE_ANY) : NULL;
            if (ks) facet_str_appendz(b, ks);
            else b->failed = b->failed ? b->failed : FACET_STR_NOMEM;
            free(ks);
            json_decref(key);
            facet_str_putc(b, ':');
            dump(b, x);
        }
        facet_str_putc(b, '}');
        return;
    }
    json_t *tmp = NULL;
    if (json_is_string(v)) {
        size_t n;
        const char *s = facet_json_exact_string(v, &n);
        tmp = json_stringn_nocheck(s, n);
        v = tmp;
    }
    char *s = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    if (s) facet_str_appendz(b, s);
    else b->failed = b->failed ? b->failed : FACET_STR_NOMEM;
    free(s);
    json_decref(tmp);
}

char *facet_json_dumps_exact(const json_t *v) {
    facet_str b = {0};
    dump(&b, v);
    return facet_str_take(&b);
}
