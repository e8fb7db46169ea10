/* tok_json.c — typed access to tokenizer.json fields; every error names the JSON path
 * of the offending field, its type or value and what was expected. */
#include <jansson.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"
#include "util/json.h"

facet_status tok_jget_str(const json_t *o, const char *key, const char *path, int required,
                          const char **s, size_t *len, facet_error *err) {
    json_t *v = json_object_get(o, key);
    *s = NULL;
    if (len) *len = 0;
    if (!v || json_is_null(v)) {
        if (required) return facet_err(err, FACET_E_FORMAT, "%s.%s: missing (expected a string)", path, key);
        return FACET_OK;
    }
    if (!json_is_string(v))
        return facet_err(err, FACET_E_FORMAT, "%s.%s: expected a string, got %s", path, key,
                         facet_json_type_name(v));
    *s = json_string_value(v);
    if (len) *len = json_string_length(v);
    return FACET_OK;
}

facet_status tok_jget_bool(const json_t *o, const char *key, const char *path, int dflt, int *out,
                           facet_error *err) {
    json_t *v = json_object_get(o, key);
    *out = dflt;
    if (!v || json_is_null(v)) return FACET_OK;
    if (!json_is_boolean(v))
        return facet_err(err, FACET_E_FORMAT, "%s.%s: expected true or false, got %s", path, key,
                         facet_json_type_name(v));
    *out = json_is_true(v);
    return FACET_OK;
}

facet_status tok_jget_int(const json_t *o, const char *key, const char *path, long long dflt,
                          long long *out, facet_error *err) {
    json_t *v = json_object_get(o, key);
    *out = dflt;
    if (!v || json_is_null(v)) return FACET_OK;
    if (!json_is_integer(v))
        return facet_err(err, FACET_E_FORMAT, "%s.%s: expected an integer, got %s", path, key,
                         facet_json_type_name(v));
    *out = json_integer_value(v);
    return FACET_OK;
}

facet_status tok_jget_type(const json_t *o, const char *path, const char **type, facet_error *err) {
    if (!json_is_object(o))
        return facet_err(err, FACET_E_FORMAT, "%s: expected an object, got %s", path,
                         facet_json_type_name(o));
    return tok_jget_str(o, "type", path, 1, type, NULL, err);
}

facet_status tok_jget_pattern(const json_t *o, const char *key, const char *path, tok_pattern *p,
                              facet_error *err) {
    char sub[512];
    snprintf(sub, sizeof sub, "%s.%s", path, key);
    json_t *v = json_object_get(o, key);
    memset(p, 0, sizeof *p);
    if (!v || !json_is_object(v))
        return facet_err(err, FACET_E_FORMAT, "%s: expected {\"String\": ...} or {\"Regex\": ...}, got %s",
                         sub, v ? facet_json_type_name(v) : "nothing");
    json_t *s = json_object_get(v, "String"), *r = json_object_get(v, "Regex");
    json_t *x = s ? s : r;
    if (!x || !json_is_string(x))
        return facet_err(err, FACET_E_FORMAT, "%s: expected {\"String\": STRING} or {\"Regex\": STRING}", sub);
    return tok_pattern_init(p, json_string_value(x), json_string_length(x), x == r, sub, err);
}

facet_status tok_jget_char(const json_t *o, const char *key, const char *path, int32_t dflt,
                           int32_t *cp, facet_error *err) {
    const char *s;
    size_t len, n;
    *cp = dflt;
    facet_status st = tok_jget_str(o, key, path, 0, &s, &len, err);
    if (st != FACET_OK || !s) return st;
    if (!len || tok_utf8_invalid_at(s, len) != len || (tok_utf8_decode(s, len, 0, &n), n != len))
        return facet_err(err, FACET_E_FORMAT, "%s.%s: expected one character, got \"%.40s\"", path, key, s);
    *cp = tok_utf8_decode(s, len, 0, &n);
    return FACET_OK;
}
