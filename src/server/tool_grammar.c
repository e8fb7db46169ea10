/* tool_grammar.c — tool_choice "required" / a named function enforced by constrained
 * decoding: the grammar of what follows the assistant turn's opening (r->tool_prefix,
 * chat_bridge.c), so the reply is one call, in the template's tool-call syntax, to a
 * listed function, with arguments valid against its `parameters` schema. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "facet_grammar.h"
#include "grammar/grammar_internal.h"
#include "server/chat_bridge.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

/* Append s as a GBNF literal (quotes and backslashes escaped; s has no newline). */
static void literal(facet_str *g, const char *s) {
    facet_str_putc(g, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') facet_str_putc(g, '\\');
        if (*s == '\n') facet_str_appendz(g, "\\n");
        else facet_str_putc(g, *s);
    }
    facet_str_putc(g, '"');
}

/* The rule `args-I` for function i's parameters: its schema when facet compiles it,
 * else any JSON object (a schema with keywords the compiler refuses still gets a
 * parsable call). */
static facet_status args_rule(facet_str *g, json_t *fn, size_t i, facet_error *err) {
    char name[32];
    snprintf(name, sizeof name, "args-%zu", i);
    json_t *params = json_object_get(fn, "parameters");
    if (json_is_object(params)) {
        char *text = facet_json_dumps_exact(params);
        if (!text) return facet_err(err, FACET_E_NOMEM, "tool grammar");
        facet_str rules = {0};
        facet_error ignored;
        facet_status st = facet_json_schema_gbnf_rule(text, strlen(text), name, &rules, &ignored);
        free(text);
        if (st == FACET_OK) {
            facet_str_append(g, rules.data, rules.len);
            facet_str_free(&rules);
            return FACET_OK;
        }
        facet_str_free(&rules);
        if (st == FACET_E_NOMEM) return facet_err(err, st, "tool grammar");
    }
    facet_str_appendf(g, "%s ::= json-object\n", name);
    return FACET_OK;
}

facet_status srv_tool_grammar(facet_toolcall_format fmt, const oai_request *r,
                              facet_grammar **out, facet_error *err) {
    *out = NULL;
    if (!r->tool_prefix[0] || !r->tools ||
        (fmt != FACET_TOOLCALL_HERMES && fmt != FACET_TOOLCALL_LLAMA3 &&
         fmt != FACET_TOOLCALL_MISTRAL))
        return FACET_OK;
    const char *key = fmt == FACET_TOOLCALL_LLAMA3 ? "parameters" : "arguments";
    const char *close = fmt == FACET_TOOLCALL_HERMES    ? "}\n</tool_call>"
                        : fmt == FACET_TOOLCALL_MISTRAL ? "}]"
                                                        : "}";
    facet_str g = {0};
    facet_status st = FACET_OK;
    facet_str_appendz(&g, "root ::= ");
    size_t i;
    json_t *t;
    int first = 1;
    json_array_foreach(r->tools, i, t) {
        json_t *fn = json_object_get(t, "function");
        const char *name = json_string_value(json_object_get(fn, "name"));
        if (r->tool_choice == OAI_TOOL_NAMED) {
            if (strcmp(name, r->tool_name)) continue;
            facet_str_appendf(&g, "args-%zu ", i); /* the prefix ends before the arguments */
        } else {
            /* the prefix ends inside the name's string: the name (JSON-escaped), then
             * the arguments */
            json_t *js = json_string(name);
            char *q = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
            json_decref(js);
            if (!q) {
                st = facet_err(err, FACET_E_NOMEM, "tool grammar");
                break;
            }
            facet_str rest = {0};
            facet_str_appendf(&rest, "%s, \"%s\": ", q + 1, key);
            free(q);
            if (rest.failed) g.failed = rest.failed; /* reported below */
            facet_str_appendz(&g, first ? "( " : " | ");
            literal(&g, facet_str_cstr(&rest));
            facet_str_appendf(&g, " args-%zu", i);
            facet_str_free(&rest);
        }
        first = 0;
    }
    if (r->tool_choice != OAI_TOOL_NAMED) facet_str_appendz(&g, " )");
    facet_str_appendz(&g, " ");
    literal(&g, close);
    facet_str_appendz(&g, "\n");
    json_array_foreach(r->tools, i, t) {
        if (st != FACET_OK) break;
        json_t *fn = json_object_get(t, "function");
        if (r->tool_choice == OAI_TOOL_NAMED &&
            strcmp(json_string_value(json_object_get(fn, "name")), r->tool_name))
            continue;
        st = args_rule(&g, fn, i, err);
    }
    facet_str_appendz(&g, facet_grammar_json_base_gbnf());
    if (st == FACET_OK && g.failed) st = facet_err(err, FACET_E_NOMEM, "tool grammar");
    if (st == FACET_OK) st = facet_grammar_parse(g.data, g.len, out, err);
    facet_str_free(&g);
    return st;
}
