/* json.c — jansson loading with facet errors. */
#include "util/json.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/fs.h"
#include "util/str.h"

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

/* Python's json writes float('inf') and float('nan') as the bare tokens Infinity,
 * -Infinity and NaN (transformers' older config.json files: Mamba-2's time_step_limit);
 * transformers 5 writes {"__float__": "Infinity"}. Rewrite the bare tokens outside strings
 * into that object into *s; 0 when there is none (or memory failed). */
static int python_floats(const char *t, size_t n, facet_str *s) {
    static const char *const tokens[] = {"-Infinity", "Infinity", "NaN"};
    int in_string = 0, found = 0;
    for (size_t i = 0; i < n; i++) {
        if (in_string) {
            if (t[i] == '\\' && i + 1 < n) {
                facet_str_append(s, t + i, 2);
                i++;
                continue;
            }
            in_string = t[i] != '"';
        } else if (t[i] == '"') {
            in_string = 1;
        } else {
            size_t k = 0;
            while (k < 3 && !(n - i >= strlen(tokens[k]) && !memcmp(t + i, tokens[k], strlen(tokens[k]))))
                k++;
            if (k < 3) {
                facet_str_appendf(s, "{\"__float__\": \"%s\"}", tokens[k]);
                i += strlen(tokens[k]) - 1;
                found = 1;
                continue;
            }
        }
        facet_str_putc(s, t[i]);
    }
    return found && !s->failed;
}

facet_status facet_json_load_file(const char *path, size_t max_bytes, json_t **out,
                                  facet_error *err) {
    char *data;
    size_t len;
    *out = NULL;
    facet_status st = facet_read_file(path, max_bytes, &data, &len, err);
    if (st != FACET_OK) return st;
    st = facet_json_parse(data, len, path, out, err);
    if (st == FACET_E_PARSE) { /* Python's spellings of inf / nan: read as transformers 5's */
        facet_str s = {0};
        json_error_t je;
        if (python_floats(data, len, &s)) *out = json_loadb(s.data, s.len, JSON_DECODE_ANY, &je);
        if (*out) {
            facet_err_clear(err);
            st = FACET_OK;
        }
        facet_str_free(&s);
    }
    free(data);
    return st;
}

const char *facet_json_type_name(const json_t *v) {
    if (!v) return "absent";
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
