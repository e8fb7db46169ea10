/*
 * jinja_json.c — the bridge between JSON (jansson) and template values, and the
 * `tojson` filter exactly as transformers defines it:
 * json.dumps(x, ensure_ascii=False, indent=indent) — ", " and ": " separators (","
 * when indented), key order kept, floats as Python repr, NaN/Infinity spelled as Python
 * spells them, no HTML escaping (Python Lib/json/encoder.py).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "chat/jinja.h"
#include "util/json.h"

jv jv_from_json(const json_t *j) {
    switch (json_typeof(j)) {
    case JSON_NULL: return jv_none();
    case JSON_TRUE: return jv_bool(1);
    case JSON_FALSE: return jv_bool(0);
    case JSON_INTEGER: return jv_int((int64_t)json_integer_value(j));
    case JSON_REAL: return jv_float(json_real_value(j));
    case JSON_STRING: { /* trees come from facet_json_parse_exact: big integers are marked */
        const char *digits = facet_json_exact_int(j);
        size_t n;
        const char *s = digits ? NULL : facet_json_exact_string(j, &n);
        jv v = digits ? jv_bigint(digits) : jv_str(s, n);
        return v.k == JV_STR || v.k == JV_BIGINT ? v : jv_undef();
    }
    case JSON_ARRAY: {
        jv l = jv_list_new(JL_LIST);
        if (l.k != JV_LIST) return jv_undef();
        size_t i;
        json_t *x;
        json_array_foreach(j, i, x) {
            jv v = jv_from_json(x);
            if (v.k == JV_UNDEF || jv_list_push(l, v)) {
                jv_unref(l);
                return jv_undef();
            }
        }
        return l;
    }
    case JSON_OBJECT: {
        jv d = jv_dict_new(0);
        if (d.k != JV_DICT) return jv_undef();
        const char *k;
        size_t klen;
        json_t *x;
        json_object_keylen_foreach((json_t *)j, k, klen, x) {
            jv key = jv_str(k, klen), v = jv_from_json(x);
            if (key.k != JV_STR || v.k == JV_UNDEF) {
                jv_unref(key);
                jv_unref(v);
                jv_unref(d);
                return jv_undef();
            }
            if (jv_dict_set(d, key, v)) {
                jv_unref(d);
                return jv_undef();
            }
        }
        return d;
    }
    }
    return jv_none();
}

static int json_str_ascii(facet_str *b, const char *s, size_t n);

static int json_str(facet_str *b, const char *s, size_t n) {
    if (facet_str_putc(b, '"')) return -1;
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
            if (facet_str_append(b, s + run, i - run) || facet_str_appendz(b, esc)) return -1;
            run = i + 1;
        }
    }
    if (facet_str_append(b, s + run, n - run)) return -1;
    return facet_str_putc(b, '"');
}

static int json_float(facet_str *b, double f) {
    if (isnan(f)) return facet_str_appendz(b, "NaN");
    if (isinf(f)) return facet_str_appendz(b, f < 0 ? "-Infinity" : "Infinity");
    char num[40];
    jv_format_float(f, num);
    return facet_str_appendz(b, num);
}

/* ensure_ascii=True: everything beyond ASCII as \uXXXX (UTF-16 surrogate pairs). */
static int json_str_ascii(facet_str *b, const char *s, size_t n) {
    facet_str t = {0};
    int rc = json_str(&t, s, n);
    for (size_t i = 0; !rc && i < t.len;) {
        unsigned char c = (unsigned char)t.data[i];
        if (c < 0x80) {
            rc = facet_str_putc(b, (char)c);
            i++;
            continue;
        }
        uint32_t cp;
        size_t k = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        cp = k == 1 ? c : c & (0xFF >> (k + 1));
        for (size_t j = 1; j < k && i + j < t.len; j++) cp = (cp << 6) | ((unsigned char)t.data[i + j] & 0x3F);
        if (cp >= 0x10000) {
            cp -= 0x10000;
            rc = facet_str_appendf(b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
        } else {
            rc = facet_str_appendf(b, "\\u%04x", cp);
        }
        i += k;
    }
    facet_str_free(&t);
    return rc;
}

static int newline_indent(facet_str *b, int indent, int level) {
    if (facet_str_putc(b, '\n')) return -1;
    for (int i = 0; i < indent * level; i++)
        if (facet_str_putc(b, ' ')) return -1;
    return 0;
}

static int dump_items(facet_str *b, jdict *d, const size_t *order, const jjson_opts *o, int level, const char *isep,
                      const char *ksep, const char **why);

static int key_less(jv a, jv b) {
    size_t n = JS(a)->len < JS(b)->len ? JS(a)->len : JS(b)->len;
    int c = memcmp(JS(a)->s, JS(b)->s, n);
    return c < 0 || (c == 0 && JS(a)->len < JS(b)->len);
}

static int dump(facet_str *b, jv v, const jjson_opts *o, int level, const char **why) {
    int indent = o->indent;
    const char *isep = o->item_sep ? o->item_sep : indent >= 0 ? "," : ", ";
    const char *ksep = o->key_sep ? o->key_sep : ": ";
    switch (v.k) {
    case JV_NONE: return facet_str_appendz(b, "null");
    case JV_BOOL: return facet_str_appendz(b, v.u.b ? "true" : "false");
    case JV_INT: return facet_str_appendf(b, "%lld", (long long)v.u.i);
    case JV_BIGINT: return facet_str_append(b, JS(v)->s, JS(v)->len);
    case JV_FLOAT: return json_float(b, v.u.f);
    case JV_STR: return o->ensure_ascii ? json_str_ascii(b, JS(v)->s, JS(v)->len) : json_str(b, JS(v)->s, JS(v)->len);
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
        if (l->len == 0) return facet_str_appendz(b, "[]");
        if (level > 512) {
            *why = "RecursionError: maximum recursion depth exceeded in tojson";
            return -1;
        }
        if (facet_str_putc(b, '[')) return -1;
        for (size_t i = 0; i < l->len; i++) {
            if (i && facet_str_appendz(b, isep)) return -1;
            if (indent >= 0 && newline_indent(b, indent, level + 1)) return -1;
            if (dump(b, l->data[i], o, level + 1, why)) return -1;
        }
        if (indent >= 0 && newline_indent(b, indent, level)) return -1;
        return facet_str_putc(b, ']');
    }
    case JV_DICT: {
        jdict *d = JD(v);
        if (d->n == 0) return facet_str_appendz(b, "{}");
        if (level > 512) {
            *why = "RecursionError: maximum recursion depth exceeded in tojson";
            return -1;
        }
        size_t *order = malloc(d->n * sizeof(size_t));
        if (!order) return -1;
        for (size_t i = 0; i < d->n; i++) order[i] = i;
        if (o->sort_keys) { /* insertion sort: stable, dicts are small */
            for (size_t i = 0; i < d->n; i++)
                if (d->key[i].k != JV_STR) {
                    free(order);
                    *why = "TypeError: '<' not supported between instances of non-str keys (sort_keys)";
                    return -1;
                }
            for (size_t i = 1; i < d->n; i++)
                for (size_t j = i; j > 0 && key_less(d->key[order[j]], d->key[order[j - 1]]); j--) {
                    size_t t = order[j];
                    order[j] = order[j - 1];
                    order[j - 1] = t;
                }
        }
        int frc = dump_items(b, d, order, o, level, isep, ksep, why);
        free(order);
        if (frc) return -1;
        if (indent >= 0 && newline_indent(b, indent, level)) return -1;
        return facet_str_putc(b, '}');
    }
    case JV_UNDEF: *why = "TypeError: Object of type Undefined is not JSON serializable"; return -1;
    case JV_NS: *why = "TypeError: Object of type Namespace is not JSON serializable"; return -1;
    case JV_MACRO: *why = "TypeError: Object of type Macro is not JSON serializable"; return -1;
    case JV_LOOP: *why = "TypeError: Object of type LoopContext is not JSON serializable"; return -1;
    case JV_FUNC: *why = "TypeError: Object of type function is not JSON serializable"; return -1;
    }
    return -1;
}

static int dump_items(facet_str *b, jdict *d, const size_t *order, const jjson_opts *o, int level, const char *isep,
                      const char *ksep, const char **why) {
    int indent = o->indent;
    {
        if (facet_str_putc(b, '{')) return -1;
        for (size_t oi = 0; oi < d->n; oi++) {
            size_t i = order[oi];
            if (oi && facet_str_appendz(b, isep)) return -1;
            if (indent >= 0 && newline_indent(b, indent, level + 1)) return -1;
            jv k = d->key[i];
            int rc;
            char num[64];
            switch (k.k) {
            case JV_STR: rc = o->ensure_ascii ? json_str_ascii(b, JS(k)->s, JS(k)->len) : json_str(b, JS(k)->s, JS(k)->len); break;
            case JV_INT: snprintf(num, sizeof num, "\"%lld\"", (long long)k.u.i); rc = facet_str_appendz(b, num); break;
            case JV_BIGINT: rc = json_str(b, JS(k)->s, JS(k)->len); break;
            case JV_BOOL: rc = facet_str_appendz(b, k.u.b ? "\"true\"" : "\"false\""); break;
            case JV_NONE: rc = facet_str_appendz(b, "\"null\""); break;
            case JV_FLOAT: {
                facet_str t = {0};
                rc = json_float(&t, k.u.f) || json_str(b, t.data, t.len);
                facet_str_free(&t);
                break;
            }
            default:
                *why = "TypeError: keys must be str, int, float, bool or None";
                return -1;
            }
            if (rc || facet_str_appendz(b, ksep)) return -1;
            if (dump(b, d->val[i], o, level + 1, why)) return -1;
        }
    }
    return 0;
}

int jv_tojson_opts(facet_str *b, jv v, const jjson_opts *o, const char **why) {
    *why = NULL;
    return dump(b, v, o, 0, why);
}

int jv_tojson(facet_str *b, jv v, int indent, const char **why) {
    jjson_opts o = {indent, 0, 0, NULL, NULL};
    return jv_tojson_opts(b, v, &o, why);
}
