/*
 * oai_response.h — OpenAI response JSON for completions and chat completions: whole
 * responses, SSE chunks, logprobs and usage (shapes of the OpenAI API reference).
 */
#ifndef FACET_SERVER_OAI_RESPONSE_H
#define FACET_SERVER_OAI_RESPONSE_H

#include <jansson.h>
#include <stddef.h>

#include "facet.h"
#include "server/oai_request.h"
#include "server/sched.h"

/* What a response needs besides the job. */
typedef struct oai_meta {
    oai_kind kind;
    const char *id;            /* "cmpl-..." / "chatcmpl-..."                            */
    long created;              /* unix seconds                                           */
    const char *model;
    const facet_tokenizer *tok;
    int logprobs;              /* logprobs requested                                     */
    int top_n;                 /* top entries per token                                  */
    int include_usage;         /* stream_options.include_usage: chunks carry "usage": null
                                  (the last one, built apart, the counts)                */
} oai_meta;

/* "stop", "length", "tool_calls" (or NULL while running). */
const char *oai_finish_name(srv_finish f);

/* {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details":
 * {"cached_tokens"}} (OpenAI's shape; cached: prompt tokens the prefix cache supplied
 * to the first choice). */
json_t *oai_usage(int prompt_tokens, int completion_tokens, int cached_tokens);

/* logprobs object for tokens [from, to) of a choice's outputs c (prompt_last: the prompt's last id,
 * the context of the first token's alternatives); *text_offset (completions only)
 * advances by each token's text length. NULL when not requested. Token strings are
 * the text each token adds to the detokenized stream. NULL also when out of memory (a
 * caller that asked for them must not send the response without them). */
json_t *oai_logprobs(const oai_meta *m, const srv_output *c, int from, int to,
                     int32_t prompt_last, size_t *text_offset);

/* The whole non-streaming response of a finished job; `message` (chat) is the assistant
 * message object of each choice, built by the caller (content / tool_calls), and
 * `finish` its finish_reason (the references of messages are taken). NULL when out of
 * memory (a message NULL included), never a response with a part missing. */
json_t *oai_response(const oai_meta *m, const srv_job *j, json_t **messages,
                     const char **finish);

/* One streaming chunk for choice `index`: completions {"text": delta}, chat
 * {"delta": delta_obj}; finish NULL while running; logprobs may be NULL. Takes the
 * references of delta_obj and logprobs. */
json_t *oai_chunk(const oai_meta *m, int index, const char *text, size_t len,
                  json_t *delta_obj, json_t *logprobs, const char *finish);

/* The text token `id` adds to the detokenized stream after token `prev` (prev < 0: the
 * token's own text), as a JSON string (U+FFFD when not valid UTF-8). NULL when out of
 * memory. */
json_t *oai_token_text(const facet_tokenizer *tok, int32_t prev, int32_t id);

#endif
