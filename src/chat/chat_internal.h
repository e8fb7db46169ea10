/*
 * chat_internal.h — facts of a loaded chat template shared inside src/chat.
 */
#ifndef FACET_CHAT_INTERNAL_H
#define FACET_CHAT_INTERNAL_H

#include "facet_chat.h"

/* Nonzero when `marker` occurs in the template source(s) or is one of the added or
 * special tokens of the template's tokenizer_config.json. */
int chat_template_mentions(const facet_chat_template *tpl, const char *marker);

#endif
