/*
 * json.h — loading JSON files through jansson with facet errors.
 *
 * jansson keeps object key order, distinguishes integers from reals and rejects
 * integers that overflow 64 bits, which the config, tokenizer and template code rely on.
 */
#ifndef FACET_UTIL_JSON_H
#define FACET_UTIL_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "facet_status.h"

/* Parse `len` bytes of `text` as one JSON value. `what` names the source in messages
 * (a path). Errors: FACET_E_PARSE "WHAT:LINE:COLUMN: reason". The caller owns *out
 * (json_decref). */
facet_status facet_json_parse(const char *text, size_t len, const char *what, json_t **out,
                              facet_error *err);

/* Read and parse file `path` (at most max_bytes). Errors: as facet_read_file and
 * facet_json_parse. */
facet_status facet_json_load_file(const char *path, size_t max_bytes, json_t **out,
                                  facet_error *err);

/* Name of a JSON value's type as Python would say it: "object", "array", "string",
 * "integer", "number", "true", "false", "null". */
const char *facet_json_type_name(const json_t *v);

#endif
