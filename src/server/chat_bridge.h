/*
 * chat_bridge.h — chat completions on top of the model's chat template: messages (and
 * tools) -> prompt ids, generated text -> the assistant message (content or parsed
 * tool_calls, finish_reason "tool_calls").
 */
#ifndef FACET_SERVER_CHAT_BRIDGE_H
#define FACET_SERVER_CHAT_BRIDGE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "server/http.h"
#include "server/oai_request.h"

/* Load the chat template of the model folder (s->chat), or record in s->chat_error why
 * chat completions are unavailable. */
void srv_chat_init(srv_server *s);

/* Free s->chat. */
void srv_chat_free(srv_server *s);

/* Render r->messages (+ tools) with the model's chat template and the generation prompt,
 * tokenize without adding special tokens (as transformers' apply_chat_template). *ids
 * is malloc'd. Returns 0, or -1 with *e (400 when the model has no usable template or
 * the template fails, naming why). */
int srv_chat_prompt(srv_server *s, const oai_request *r, int32_t **ids, size_t *n,
                    oai_error *e);

/* The assistant message of a finished choice: {"role": "assistant", "content": text},
 * or content null + "tool_calls" when the text parses as tool calls (then *finish
 * becomes "tool_calls"). */
json_t *srv_chat_message(srv_server *s, const oai_request *r, const char *text, size_t len,
                         srv_finish f, const char **finish);

/* Nonzero when a streamed chat response must hold its text until the end (tools may be
 * called, and a tool call is only known once complete). */
int srv_chat_holds_stream(srv_server *s, const oai_request *r);

/* The final delta of a held stream: {"content": text} or {"tool_calls": [...]}. */
json_t *srv_chat_final_delta(srv_server *s, json_t *tools, const char *text, size_t len,
                             srv_finish f, const char **finish);

#endif
