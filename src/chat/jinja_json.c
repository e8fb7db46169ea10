/*
 * jinja_json.c — the bridge between JSON (jansson) and template values, and the
 * `tojson` filter exactly as transformers defines it:
 * json.dumps(x, ensure_ascii=False, indent=indent) — ", " and ": " separators (","
 * when indented), key order kept, floats as Python repr, NaN/Infinity spelled as Python
 * spells them, no HTML escaping (Python Lib/json/encoder.py).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "chat/jinja.h"

jv jv_from_json(const json_t *j) {
    switch (json_typeof(j)) {
    case JSON_NULL: return jv_none();
    case JSON_TRUE: return jv_bool(1);
    case JSON_FALSE: return jv_bool(0);
    case JSON_INTEGER: return jv_int((int64_t)json_integer_value(j));
    case JSON_REAL: return jv_float(json_real_value(j));
    case JSON_STRING: return jv_str(json_string_value(j), json_string_length(j));
    case JSON_ARRAY: {
        jv l = jv_list_new(JL_LIST);
        if (l.k != JV_LIST) return l;
        size_t i;
        json_t *x;
        json_array_foreach(j, i, x) {
            if (jv_list_push(l, jv_from_json(x))) break;
        }
        return l;
    }
    case JSON_OBJECT: {
        jv d = jv_dict_new(0);
        if (d.k != JV_DICT) return d;
        const char *k;
        size_t klen;
        json_t *x;
        json_object_keylen_foreach((json_t *)j, k, klen, x) {
            if (jv_dict_set(d, jv_str(k, klen), jv_from_json(x))) break;
        }
        return d;
    }
    }
    return jv_none();
}

static int json_str(jbuf *b, const char *s, size_t n) {
    if (jbuf_addc(b, '"')) return -1;
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char tmp[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) {
                snprintf(tmp, sizeof tmp, "\\u%04x", c);
                esc = tmp;
            }
        }
        if (esc) {
            if (jbuf_add(b, s + run, i - run) || jbuf_adds(b, esc)) return -1;
            run = i + 1;
        }
    }
    if (jbuf_add(b, s + run, n - run)) return -1;
    return jbuf_addc(b, '"');
}

static int json_float(jbuf *b, double f) {
    if (isnan(f)) return jbuf_adds(b, "NaN");
    if (isinf(f)) return jbuf_adds(b, f < 0 ? "-Infinity" : "Infinity");
    char num[40];
    jv_format_float(f, num);
    return jbuf_adds(b, num);
}

static int newline_indent(jbuf *b, int indent, int level) {
    if (jbuf_addc(b, '\n')) return -1;
    for (int i = 0; i < indent * level; i++)
        if (jbuf_addc(b, ' ')) return -1;
    return 0;
}

static int dump(jbuf *b, jv v, int indent, int level, const char **why) {
    switch (v.k) {
    case JV_NONE: return jbuf_adds(b, "null");
    case JV_BOOL: return jbuf_adds(b, v.u.b ? "true" : "false");
    case JV_INT: return jbuf_printf(b, "%lld", (long long)v.u.i);
    case JV_FLOAT: return json_float(b, v.u.f);
    case JV_STR: return json_str(b, JS(v)->s, JS(v)->len);
    case JV_LIST: {
        jlist *l = JL(v);
        if (!JL_IS_SEQ(l)) {
            static const char *const msg[] = {"", "", "TypeError: Object of type generator is not JSON serializable",
                                              "TypeError: Object of type dict_keys is not JSON serializable",
                                              "TypeError: Object of type dict_values is not JSON serializable",
                                              "TypeError: Object of type dict_items is not JSON serializable"};
            *why = msg[l->flavor];
            return -1;
        }
        if (l->n == 0) return jbuf_adds(b, "[]");
        if (level > 512) {
            *why = "RecursionError: maximum recursion depth exceeded in tojson";
            return -1;
        }
        if (jbuf_addc(b, '[')) return -1;
        for (size_t i = 0; i < l->n; i++) {
            if (i && jbuf_adds(b, indent >= 0 ? "," : ", ")) return -1;
            if (indent >= 0 && newline_indent(b, indent, level + 1)) return -1;
            if (dump(b, l->v[i], indent, level + 1, why)) return -1;
        }
        if (indent >= 0 && newline_indent(b, indent, level)) return -1;
        return jbuf_addc(b, ']');
    }
    case JV_DICT: {
        jdict *d = JD(v);
        if (d->n == 0) return jbuf_adds(b, "{}");
        if (level > 512) {
            *why = "RecursionError: maximum recursion depth exceeded in tojson";
            return -1;
        }
        if (jbuf_addc(b, '{')) return -1;
        for (size_t i = 0; i < d->n; i++) {
            if (i && jbuf_adds(b, indent >= 0 ? "," : ", ")) return -1;
            if (indent >= 0 && newline_indent(b, indent, level + 1)) return -1;
            jv k = d->key[i];
            int rc;
            char num[64];
            switch (k.k) {
            case JV_STR: rc = json_str(b, JS(k)->s, JS(k)->len); break;
            case JV_INT: snprintf(num, sizeof num, "\"%lld\"", (long long)k.u.i); rc = jbuf_adds(b, num); break;
            case JV_BOOL: rc = jbuf_adds(b, k.u.b ? "\"true\"" : "\"false\""); break;
            case JV_NONE: rc = jbuf_adds(b, "\"null\""); break;
            case JV_FLOAT: {
                jbuf t = {0};
                rc = json_float(&t, k.u.f) || json_str(b, t.p, t.n);
                jbuf_free(&t);
                break;
            }
            default:
                *why = "TypeError: keys must be str, int, float, bool or None";
                return -1;
            }
            if (rc || jbuf_adds(b, ": ")) return -1;
            if (dump(b, d->val[i], indent, level + 1, why)) return -1;
        }
        if (indent >= 0 && newline_indent(b, indent, level)) return -1;
        return jbuf_addc(b, '}');
    }
    case JV_UNDEF: *why = "TypeError: Object of type Undefined is not JSON serializable"; return -1;
    case JV_NS: *why = "TypeError: Object of type Namespace is not JSON serializable"; return -1;
    case JV_MACRO: *why = "TypeError: Object of type Macro is not JSON serializable"; return -1;
    case JV_LOOP: *why = "TypeError: Object of type LoopContext is not JSON serializable"; return -1;
    case JV_FUNC: *why = "TypeError: Object of type function is not JSON serializable"; return -1;
    }
    return -1;
}

int jv_tojson(jbuf *b, jv v, int indent, const char **why) {
    *why = NULL;
    return dump(b, v, indent, 0, why);
}
