/* json.c — jansson loading with facet errors. */
#include "util/json.h"

#include <stdlib.h>

#include "util/error.h"
#include "util/fs.h"

int facet_json_nomem(const json_error_t *je) {
    return json_error_code(je) == json_error_out_of_memory || !je->text[0];
}

facet_status facet_json_parse(const char *text, size_t len, const char *what, json_t **out,
                              facet_error *err) {
    json_error_t je;
    *out = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    return facet_json_load_status(*out, &je, what, err);
}

facet_status facet_json_load_status(const json_t *v, const json_error_t *je, const char *what,
                                    facet_error *err) {
    if (v) return FACET_OK;
    if (facet_json_nomem(je))
        return facet_err(err, FACET_E_NOMEM, "%s: out of memory parsing JSON", what);
    return facet_err(err, FACET_E_PARSE, "%s:%d:%d: not valid JSON: %s", what, je->line,
                     je->column, je->text);
}

facet_status facet_json_load_file(const char *path, size_t max_bytes, json_t **out,
                                  facet_error *err) {
    char *data;
    size_t len;
    *out = NULL;
    facet_status st = facet_read_file(path, max_bytes, &data, &len, err);
    if (st != FACET_OK) return st;
    st = facet_json_parse(data, len, path, out, err);
    free(data);
    return st;
}

const char *facet_json_type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    }
    return "unknown";
}
