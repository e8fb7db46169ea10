/*
 * oai_echo.h — /v1/completions with "echo": true, what lm-evaluation-harness's
 * loglikelihood requests send (echo, logprobs, max_tokens 0 or 1). Each choice's text
 * starts with the prompt; with logprobs, its logprobs start with the prompt's tokens:
 * "tokens" (each token's text as it adds to the detokenized prompt), "token_logprobs"
 * (null for the first token, then log p(token | the tokens before it), natural log),
 * "top_logprobs" (null first, then the job's top_n alternatives), "text_offset" (from 0,
 * in bytes into the echoed text: a special token added to a text prompt, such as its
 * BOS, takes no room; the generated tokens' offsets count from the end of the prompt).
 */
#ifndef FACET_SERVER_OAI_ECHO_H
#define FACET_SERVER_OAI_ECHO_H

#include <jansson.h>
#include <stddef.h>

#include "server/oai_response.h"

/* Patch the whole completions response `resp` (oai_response) of job j for echo: prompt
 * (prompt_len bytes, the request's prompt text, or the prompt ids detokenized) ahead of
 * each choice's text; prompt log-probabilities (j->p_lp, from
 * srv_job_want_prompt_logprobs; nulls when it was not asked, a one-token prompt) ahead of
 * its logprobs. `drop`: the request asked for max_tokens 0 (the job generated one token
 * to run at all): the generated part is left out, finish_reason "length", usage counts
 * no completion tokens. Returns 0, or -1 out of memory (resp then half patched: send an
 * error instead). */
int oai_echo_patch(json_t *resp, const oai_meta *m, const srv_job *j, const char *prompt,
                   size_t prompt_len, int drop);

#endif
