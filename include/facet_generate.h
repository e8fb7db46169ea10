/*
 * facet_generate.h — one generating sequence, stepped with its logits: the per-token
 * step that `facet run` and `facet serve` share.
 *
 * A generator holds everything that turns one row of logits into the next token and its
 * text: the sampler (facet_sampler.h), a detokenizer stream primed with the prompt, the
 * stop-string matcher, the end-of-sequence ids, and the two length limits (max_tokens,
 * and the context: prompt + generated tokens <= n_ctx). The caller runs the forward
 * pass; the generator never touches a session.
 *
 *     facet_generator_create(opts, prompt)          prompt's text available to echo
 *     loop: forward -> logits of the last position
 *           facet_generator_step(g, logits, &step)  token, its text, finish reason
 *           until step.finish != FACET_FINISH_NONE; else feed step.token next
 *
 * One step, in this order:
 *   1. the logits row is checked: a NaN or infinite logit (an overflowed forward pass)
 *      is FACET_E_NUMERIC and nothing is sampled; with a grammar, the tokens it does not
 *      accept next are masked out (no token left is FACET_E_FORMAT);
 *   2. the sampler chooses the token and records it (facet_sampler_sample, _accept);
 *   3. an end-of-sequence id finishes with FACET_FINISH_STOP; it counts as generated
 *      but adds no text (step.eos is set);
 *   4. otherwise its text goes through the detokenizer stream and the stop matcher; a
 *      stop string finishes with FACET_FINISH_STOP (the string and what follows it are
 *      dropped, OpenAI's rule);
 *   5. otherwise max_tokens generated, or prompt + generated == n_ctx, finishes with
 *      FACET_FINISH_LENGTH.
 * A step that finishes (3 or 5) also flushes what the stream and the matcher held back,
 * so the text of all steps is the whole completion; a stop string found in that flushed
 * tail still finishes with FACET_FINISH_STOP.
 *
 * Text: step.text is the completion text released by this step (stop strings removed);
 * step.raw is the detokenized text the token added (before stop matching, with the
 * flushed tail on the finishing step). Both are decode(prompt + generated) with
 * decode(prompt) cut from the front (facet_detok_stream_mark), so a token's leading
 * space is decoded in context. Errors follow facet.h. Not thread-safe: one thread steps
 * a generator at a time.
 */
#ifndef FACET_GENERATE_H
#define FACET_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "facet.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why a generation ended. Stable values. */
typedef enum facet_finish_reason {
    FACET_FINISH_NONE = 0,   /* still generating                                        */
    FACET_FINISH_STOP = 1,   /* an end-of-sequence id or a stop string                  */
    FACET_FINISH_LENGTH = 2, /* max_tokens generated, or the context is full            */
} facet_finish_reason;

/* "stop", "length" (OpenAI's finish_reason words), or NULL for FACET_FINISH_NONE. */
const char *facet_finish_reason_name(facet_finish_reason r);

/* What a generator is made of. Everything is borrowed for the call and copied. */
typedef struct facet_generator_options {
    const facet_sampler_params *sampling; /* NULL = facet_sampler_params_default      */
    int n_vocab;                  /* logits per row (> 0)                              */
    const facet_tokenizer *tok;   /* decodes the text; NULL = no text (ids only; stop
                                     strings then are FACET_E_INVALID_ARGUMENT). Borrowed
                                     for the generator's life.                          */
    const char *const *stops;     /* n_stops stop strings (non-empty, UTF-8)            */
    int n_stops;
    const int32_t *eos_ids;       /* end-of-sequence ids; n_eos 0 = none (ignore_eos)   */
    int n_eos;
    int max_tokens;               /* >= 0 tokens to generate at most; 0 = finished at
                                     once with FACET_FINISH_LENGTH                      */
    int n_ctx;                    /* the sequence's context: prompt + generated <= n_ctx
                                     (> n_prompt)                                       */
    facet_kv_type kv_type;        /* the session's KV type, only to name the likely
                                     cause of non-finite logits (f16's range)           */
    const struct facet_grammar *grammar;           /* NULL = unconstrained; else each
                                     step samples only tokens the grammar accepts next
                                     (end-of-sequence ids only once the text is
                                     complete), and the generation finishes with
                                     FACET_FINISH_STOP when the grammar is complete and
                                     nothing can follow. Borrowed for the generator's
                                     life.                                              */
    const struct facet_grammar_vocab *grammar_vocab; /* the vocabulary's token trie
                                     (facet_grammar_vocab_create); required with
                                     grammar. Borrowed for the generator's life.        */
} facet_generator_options;

/* The result of one step. The pointers are owned by the generator and valid until the
 * next call on it. */
typedef struct facet_gen_step {
    int32_t token;              /* the chosen id                                       */
    int eos;                    /* 1 when token is an end-of-sequence id (no text)     */
    const char *text;           /* released completion text, NUL-terminated ("" when
                                   the tokenizer is NULL or nothing is final yet)      */
    size_t len;
    const char *raw;            /* the token's detokenized text (+ flushed tail)       */
    size_t raw_len;
    facet_finish_reason finish; /* FACET_FINISH_NONE: step again with the next logits  */
} facet_gen_step;

typedef struct facet_generator facet_generator;

/* Create a generator for a sequence whose prompt is ids[0..n_prompt) (n_prompt >= 1,
 * each id in [0, n_vocab)): the sampler records the prompt (repetition_penalty) and the
 * detokenizer stream is primed with it. *out is released with facet_generator_free.
 * Errors: FACET_E_INVALID_ARGUMENT (n_vocab, n_prompt, max_tokens or n_ctx out of
 * range, a prompt id outside the vocabulary, stop strings without a tokenizer, the
 * sampling parameters of facet_sampler_params_validate, an empty stop string),
 * FACET_E_UTF8 (a stop string), FACET_E_NOMEM, and the tokenizer's errors. */
facet_status facet_generator_create(const facet_generator_options *opts, const int32_t *prompt,
                                    size_t n_prompt, facet_generator **out, facet_error *err);

/* Release a generator. NULL is accepted. */
void facet_generator_free(facet_generator *g);

/* The prompt's text as the stream decoded it (what `facet run` echoes before the
 * completion), NUL-terminated, owned by the generator (valid until it is freed); "" with
 * no tokenizer. *len receives its length. */
const char *facet_generator_prompt_text(const facet_generator *g, size_t *len);

/* Tokens generated so far. */
int facet_generator_n_generated(const facet_generator *g);

/* FACET_FINISH_NONE while generating; the finish reason once a step finished (also
 * FACET_FINISH_LENGTH from the start when max_tokens is 0). */
facet_finish_reason facet_generator_finish(const facet_generator *g);

/* Step with the logits of the sequence's last position (n_vocab floats, not modified);
 * fills *step (see above). Errors: FACET_E_NUMERIC (a NaN or infinite logit: the
 * message names the generation step, the id and its value, and f16's range when
 * kv_type is FACET_KV_F16; nothing is sampled and the generator may be freed or stepped
 * again), FACET_E_INVALID_ARGUMENT (the generator already finished), FACET_E_NOMEM and
 * the tokenizer's errors (the token was chosen and counted, its text lost; free the
 * generator). */
facet_status facet_generator_step(facet_generator *g, const float *logits, facet_gen_step *step,
                                  facet_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FACET_GENERATE_H */
