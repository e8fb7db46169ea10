/*
 * chat_bridge.h — chat completions on top of the model's chat template (facet_chat.h):
 * messages (and tools) -> prompt ids, generated text -> the assistant message (content
 * or parsed tool_calls, finish_reason "tool_calls").
 *
 * Tools: the tool-call syntax is the template's own (facet_toolcall_format_detect). A
 * template that shows none refuses tools (400). tool_choice "none" renders no tools;
 * "auto" renders them and parses calls from the output; "required" and a named
 * function also open the assistant turn with the start of a call in the model's syntax
 * (HERMES `<tool_call>\n{"name": "`, LLAMA3 `{"name": "`, MISTRAL
 * `[TOOL_CALLS][{"name": "`; a named function adds its name and `", "arguments": `
 * (LLAMA3: `"parameters"`)), so the model continues inside a call. The opening is part
 * of the prompt and is prepended to the output before parsing. Streamed responses with
 * tools send the text as it comes up to what could still become a call
 * (srv_chat_stream_safe: the start of a call marker, held until it is one or is not),
 * and from a marker on hold the rest until the end, whose chunk carries the tool_calls
 * (or, when no call parses, the held text as content).
 */
#ifndef FACET_SERVER_CHAT_BRIDGE_H
#define FACET_SERVER_CHAT_BRIDGE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "facet_chat.h"
#include "server/http.h"
#include "server/oai_request.h"

/* Load the chat template of the model folder (s->chat, s->toolcall_format), or record
 * in s->chat_error why chat completions are unavailable. */
void srv_chat_init(srv_server *s);

/* Free s->chat. */
void srv_chat_free(srv_server *s);

/* Render r->messages (+ tools) with the model's chat template and the generation prompt,
 * tokenize without adding special tokens (as transformers' apply_chat_template). Sets
 * r->tools_active and r->tool_prefix. *ids is malloc'd. Returns 0, or -1 with *e (400
 * when the model has no usable template, tools without a tool-call syntax, or the
 * template fails, naming why). */
int srv_chat_prompt(srv_server *s, oai_request *r, int32_t **ids, size_t *n, oai_error *e);

/* tool_choice required / named (r->tool_prefix set): *out = the grammar of the rest of
 * the call in format fmt (hermes, llama3, mistral; NULL for the others): one listed
 * function (the named one) with arguments valid against its `parameters` schema (any
 * JSON object when facet's schema compiler refuses it), then the call's closing text.
 * tool_grammar.c. Errors: FACET_E_NOMEM, the grammar parser's. */
struct facet_grammar;
facet_status srv_tool_grammar(facet_toolcall_format fmt, const oai_request *r,
                              struct facet_grammar **out, facet_error *err);

/* The assistant message of a finished choice of text `text` (len bytes):
 * {"role": "assistant", "content": text}, or, when tools are active and
 * prefix + text parses as calls in `fmt`, content (the rest of the text, null when
 * empty) and "tool_calls" (then *finish becomes "tool_calls"). Pure: no server state.
 * NULL when out of memory. */
json_t *srv_chat_build_message(facet_toolcall_format fmt, int tools_active, const char *prefix,
                               const char *text, size_t len, const char **finish);

/* How many leading bytes of a choice's text so far (len bytes, still growing) a stream
 * may send as content while tools are active: the bytes before the first call marker,
 * or before a tail that is the start of one ("<tool" of HERMES `<tool_call>`, "[TOOL"
 * of MISTRAL `[TOOL_CALLS]`, LLAMA3's `<|python_tag|>`). LLAMA3 also calls with bare
 * JSON: an output whose first non-blank byte is '{' or '[' (or that is all blank so
 * far) is held whole, as is every HARMONY output and every output after a non-empty
 * tool_choice opening `prefix` (the whole output is then a call). Never decreases as
 * the text grows. */
size_t srv_chat_stream_safe(facet_toolcall_format fmt, const char *prefix, const char *text,
                            size_t len);

/* The final delta of a tools stream that has sent sent bytes of text as content:
 * srv_chat_build_delta of the whole text with the content already sent left out (the
 * text around calls is trimmed as in the whole message). NULL when out of memory. */
json_t *srv_chat_final_delta(facet_toolcall_format fmt, const char *prefix, const char *text,
                             size_t len, size_t sent, const char **finish);

/* The same as a streaming delta: {"content": ...} and/or {"tool_calls": [{"index": i,
 * "id", "type", "function"}]}. NULL when out of memory. */
json_t *srv_chat_build_delta(facet_toolcall_format fmt, int tools_active, const char *prefix,
                             const char *text, size_t len, const char **finish);

#endif
