/*
 * reasoning.h — the reasoning part of a reasoning model's output (<think>...</think>),
 * split from its answer as vLLM's reasoning parsers do, returned as
 * "reasoning_content" next to "content".
 *
 * Whether a model reasons is a fact of its chat template (never of its name): a
 * template that writes both "<think>" and "</think>" (Qwen3, DeepSeek-R1, QwQ, SmolLM3)
 * has reasoning. A rendered prompt that ends inside an opened <think> block (a template
 * that opens the block in the generation prompt) starts the output in reasoning; else
 * the output reasons only when it opens with "<think>" (after blanks). Reasoning ends at
 * "</think>"; an output that never closes the block (cut by max_tokens) is all
 * reasoning. The content is what follows "</think>", blanks at its start left out.
 */
#ifndef FACET_SERVER_REASONING_H
#define FACET_SERVER_REASONING_H

#include <stddef.h>

/* Nonzero when a template source shows the <think>...</think> syntax. */
int srv_reasoning_template(const char *source);

/* Nonzero when the rendered prompt (len bytes) ends inside an opened <think> block:
 * its last "<think>" comes after its last "</think>". */
int srv_reasoning_open(const char *prompt, size_t len);

/* The split of an output so far (len bytes). `open`: srv_reasoning_open of the prompt.
 * `final`: the output is whole; otherwise a tail that may still become a tag (a prefix of
 * "<think>" while the output could open with it, of "</think>" in reasoning) and blanks
 * that may precede the content are held back, so that the spans never shrink as the
 * text grows. Reasoning is [*r_beg, *r_end), content [*c_beg, *c_end); empty spans have
 * beg == end. */
typedef struct srv_reasoning_split {
    size_t r_beg, r_end, c_beg, c_end;
    int has_reasoning; /* an opened block was seen (or the prompt opened one)       */
} srv_reasoning_split;
void srv_reasoning_split_text(const char *text, size_t len, int open, int final,
                              srv_reasoning_split *out);

#endif
