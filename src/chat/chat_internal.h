/*
 * chat_internal.h — facts of a loaded chat template shared inside src/chat.
 */
#ifndef FACET_CHAT_INTERNAL_H
#define FACET_CHAT_INTERNAL_H

#include <jansson.h>

#include "facet_chat.h"

/* Nonzero when `marker` occurs in the template source(s) or is one of the added or
 * special tokens of the template's tokenizer_config.json. */
int chat_template_mentions(const facet_chat_template *tpl, const char *marker);

/* The calls of r as the OpenAI "tool_calls" array (what facet_toolcall_result_json
 * serializes), or NULL when out of memory. */
json_t *toolcall_result_array(const facet_toolcall_result *r);

#endif
