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

/* 1 if a jansson load that returned NULL with *je failed for want of memory rather than
 * on the text: jansson says so (json_error_out_of_memory) or, where an allocation of a
 * value fails, leaves the error text empty, which no parse error does. */
int facet_json_nomem(const json_error_t *je);

/* The status of a jansson load that returned `v` with error `je`, for source `what`:
 * FACET_OK when v is not NULL, else FACET_E_NOMEM ("WHAT: out of memory parsing JSON")
 * or FACET_E_PARSE ("WHAT:LINE:COLUMN: not valid JSON: reason"). */
facet_status facet_json_load_status(const json_t *v, const json_error_t *je, const char *what,
                                    facet_error *err);

/* Parse `len` bytes of `text` as one JSON value. `what` names the source in messages
 * (a path). Errors: FACET_E_PARSE "WHAT:LINE:COLUMN: reason", FACET_E_NOMEM. The caller
 * owns *out (json_decref). */
facet_status facet_json_parse(const char *text, size_t len, const char *what, json_t **out,
                              facet_error *err);

/* Read and parse file `path` (at most max_bytes). Python's bare Infinity, -Infinity and
 * NaN (outside strings) are read as transformers 5 writes them, {"__float__": "Infinity"}
 * objects. Errors: as facet_read_file and facet_json_parse. */
facet_status facet_json_load_file(const char *path, size_t max_bytes, json_t **out,
                                  facet_error *err);

/* ---- exact integers (json_exact.c) ----------------------------------------------
 * JSON integers beyond json_int_t (e.g. 18446744073709551615 in a tool's schema), which
 * jansson refuses and Python's json carries exactly. The tree these loaders return holds
 * each such literal as a marker string, "\0i" followed by the literal's text; a string
 * value of the input that begins with NUL is stored with "\0s" prepended, so no input
 * string can pass for a marker. Read strings of such a tree through
 * facet_json_exact_string, integers through facet_json_exact_int, and write it back with
 * facet_json_dumps_exact (never json_dumps, which would print the markers). */

/* json_loadb(text, len, flags, je) keeping big integers as markers. Without
 * JSON_ALLOW_NUL in flags, a text holding a \u0000 is refused as jansson refuses it. */
json_t *facet_json_loadb_exact(const char *text, size_t len, size_t flags, json_error_t *je);

/* facet_json_parse (JSON_DECODE_ANY | JSON_ALLOW_NUL), keeping big integers as markers. */
facet_status facet_json_parse_exact(const char *text, size_t len, const char *what,
                                    json_t **out, facet_error *err);

/* The literal text ("-", digits) of a big-integer marker, or NULL when v is none. */
const char *facet_json_exact_int(const json_t *v);

/* facet_json_type_name of a value of an exact tree: "integer" for a big-integer marker
 * (the input spelled an integer). */
const char *facet_json_exact_type_name(const json_t *v);

/* A string value of an exact tree as the input spelled it (its "\0s" mark removed);
 * *len bytes. v must be a string (and not a big-integer marker). */
const char *facet_json_exact_string(const json_t *v, size_t *len);

/* Compact JSON text of an exact tree (markers written back as the integers they hold);
 * malloc'd, NULL when out of memory. */
char *facet_json_dumps_exact(const json_t *v);

/* Name of a JSON value's type as Python would say it: "object", "array", "string",
 * "integer", "number", "true", "false", "null". */
/* NULL (an absent key) is "absent". */
const char *facet_json_type_name(const json_t *v);

#endif
