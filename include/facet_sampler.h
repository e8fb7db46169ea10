/*
 * facet_sampler.h — the sampling chain (logits -> next token) and the stop-string
 * matcher, shared by `facet run` and `facet serve`.
 *
 * The chain, applied in this order to a copy of one row of logits:
 *
 *   1. repetition_penalty  over every distinct token seen in the prompt and the output,
 *                          as transformers' RepetitionPenaltyLogitsProcessor: a logit
 *                          l > 0 becomes l / r, a logit l <= 0 becomes l * r.
 *   2. presence_penalty,   over generated tokens only, as OpenAI documents them:
 *      frequency_penalty   l[j] -= c[j] * frequency_penalty + (c[j] > 0) * presence_penalty
 *                          where c[j] is how often j was generated so far.
 *   3. logit_bias          l[j] += bias[j] (OpenAI: ids of the tokenizer, bias in
 *                          [-100, 100]).
 *   4. temperature         temperature == 0 stops here and returns the argmax of the
 *                          processed logits (lowest id among equal maxima, as
 *                          facet_sample_greedy); otherwise l /= temperature.
 *   5. top_k               keep the k largest (0 = off). Order: logit descending, then id
 *                          ascending, so top_k == 1 is the greedy choice at any
 *                          temperature.
 *   6. min_p               keep tokens with p >= min_p * p_max (p = softmax of the kept
 *                          logits; 0 = off; 1 keeps only the most likely token(s)).
 *   7. top_p               nucleus: keep the shortest prefix (in the order of 5) whose
 *                          probability mass reaches top_p, always at least one token, as
 *                          transformers' TopPLogitsWarper (top_p == 0 keeps the top token,
 *                          1 = off).
 *   8. draw                u = next uniform double in [0, 1) of the sequence's PRNG;
 *                          the token is the first kept one (order of 5) whose cumulative
 *                          probability exceeds u * total.
 *
 * PRNG (platform independent, bit for bit): xoshiro256** 1.0 (Blackman & Vigna, 2018)
 * seeded by expanding the 64-bit seed with SplitMix64 (state[i] = splitmix64_next() for
 * i = 0..3, the seeding the xoshiro authors recommend). A uniform double is
 * (next() >> 11) * 2^-53. Each draw consumes exactly one 64-bit output, and greedy
 * choices (temperature 0, or a single kept token) consume none.
 *
 * Probabilities are computed in double from float32 logits. Steps 1-4 run in float32;
 * where float32 overflows (a temperature near 0, an extreme repetition_penalty: the
 * largest processed logit is +inf, or all are -inf), they are redone in double with the
 * maximum subtracted before the division by the temperature, so any positive temperature
 * samples from the chain's distribution (tending to the argmax as it tends to 0) and
 * the greedy choice stays the true argmax. Errors follow facet.h.
 */
#ifndef FACET_SAMPLER_H
#define FACET_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "facet_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One logit_bias entry: add `bias` to the logit of `token`. */
typedef struct facet_logit_bias {
    int32_t token; /* in [0, n_vocab)  */
    float bias;    /* in [-100, 100]   */
} facet_logit_bias;

/* Sampling parameters. Fill with facet_sampler_params_default, then change fields. */
typedef struct facet_sampler_params {
    float temperature;        /* >= 0; 0 = greedy. Default 1.                          */
    int top_k;                /* >= 0; 0 = off. Default 0.                             */
    float top_p;              /* [0, 1]; 1 = off. Default 1.                           */
    float min_p;              /* [0, 1]; 0 = off. Default 0.                           */
    float repetition_penalty; /* > 0; 1 = off. Default 1.                              */
    float presence_penalty;   /* [-2, 2]; 0 = off. Default 0.                          */
    float frequency_penalty;  /* [-2, 2]; 0 = off. Default 0.                          */
    uint64_t seed;            /* PRNG seed. Default 0.                                 */
    int n_logit_bias;         /* entries in logit_bias                                 */
    const facet_logit_bias *logit_bias; /* borrowed; copied by facet_sampler_create    */
} facet_sampler_params;

/* Set *p to the defaults above (sampling at temperature 1, everything else off). */
void facet_sampler_params_default(facet_sampler_params *p);

/* The float32 a sampling parameter given as a double (a command-line value, a JSON
 * number) becomes: the one conversion `facet run` and `facet serve` share, so that both
 * accept the same values. Returns 0 when x is not finite or |x| > 1e30 (*out unchanged);
 * otherwise 1, with *out = (float)x, except that a nonzero x float32 would round to 0
 * (|x| < 2^-150, e.g. 1e-50) becomes the smallest float32 of its sign: a positive
 * temperature stays positive (the argmax limit of the distribution, equal maxima
 * sharing it) instead of turning greedy. Each field's range is then checked by
 * facet_sampler_params_validate. */
int facet_sampler_param_from_double(double x, float *out);

/* Check every field against its domain (non-finite values are invalid). Errors:
 * FACET_E_INVALID_ARGUMENT naming the parameter, its value and the expected range, e.g.
 * "top_p=1.5 is out of range (expected 0 <= top_p <= 1)". n_vocab bounds the logit_bias
 * token ids. */
facet_status facet_sampler_params_validate(const facet_sampler_params *p, int n_vocab,
                                           facet_error *err);

/* A sampler for one sequence: parameters, PRNG state, and the token counts the
 * penalties need. Not thread-safe; one per sequence. */
typedef struct facet_sampler facet_sampler;

/* Create a sampler over a vocabulary of n_vocab (> 0) logits. The parameters are
 * validated (facet_sampler_params_validate) and copied. *out is released by
 * facet_sampler_free. Errors: FACET_E_INVALID_ARGUMENT, FACET_E_NOMEM. */
facet_status facet_sampler_create(const facet_sampler_params *p, int n_vocab,
                                  facet_sampler **out, facet_error *err);

/* Release a sampler. NULL is accepted. */
void facet_sampler_free(facet_sampler *s);

/* Record prompt tokens (they count for repetition_penalty only). Ids outside
 * [0, n_vocab) are FACET_E_INVALID_ARGUMENT and nothing is recorded. */
facet_status facet_sampler_accept_prompt(facet_sampler *s, const int32_t *ids, size_t n,
                                         facet_error *err);

/* Record one generated token (counts for all three penalties). Call it with each token
 * the caller keeps, after facet_sampler_sample. Out-of-range ids are ignored. */
void facet_sampler_accept(facet_sampler *s, int32_t id);

/* Choose the next token from one row of n_vocab logits (not modified) with the chain
 * above. Does not record the token (see facet_sampler_accept). */
int32_t facet_sampler_sample(facet_sampler *s, const float *logits);

/* Restrict the next facet_sampler_sample to the ids with allowed[id] != 0 (n_vocab
 * entries, borrowed until that call; NULL = no restriction): the others get logit -inf
 * after step 3, so greedy and sampled choices both obey it (constrained decoding,
 * facet_grammar.h). The mask applies to one call only. At least one id must be
 * allowed. */
void facet_sampler_set_mask(facet_sampler *s, const uint8_t *allowed);

/* Natural-log probability of token `id` under log_softmax(logits), in double, from the
 * raw logits (before any step of the chain), as OpenAI's `logprobs` report it. */
double facet_logprob_of(const float *logits, int n_vocab, int32_t id);

/* ---------------------------------------------------------------------------------
 * Stop strings matched over streamed text, across token boundaries.
 *
 * Text is pushed piece by piece (whole UTF-8 characters, as facet_detok_stream gives
 * them). Each push releases the text that can no longer be part of a stop string; the
 * longest tail that is a proper prefix of some stop string is held back. When a stop
 * string occurs (the earliest occurrence in the text; ties: the first listed), the text
 * before it is released and the match is reported; the stop string and anything after
 * it are dropped (OpenAI: the returned text does not contain the stop sequence). At the
 * end of a generation that did not stop on a string, flush releases what is held, so
 * no text is ever lost.
 * ------------------------------------------------------------------------------ */
typedef struct facet_stop_matcher facet_stop_matcher;

/* Create a matcher for n_stops strings (each non-empty valid UTF-8; the strings are
 * copied). n_stops may be 0 (everything passes through). Errors:
 * FACET_E_INVALID_ARGUMENT (an empty string, naming its index), FACET_E_UTF8,
 * FACET_E_NOMEM. */
facet_status facet_stop_matcher_create(const char *const *stops, int n_stops,
                                       facet_stop_matcher **out, facet_error *err);

/* Release a matcher. NULL is accepted. */
void facet_stop_matcher_free(facet_stop_matcher *m);

/* Push len bytes of text. *out / *out_len receive the released text (owned by the
 * matcher, valid until the next call on it, NUL-terminated). *stopped is set to the
 * index of the stop string that matched, or -1. After a match further pushes release
 * nothing. Errors: FACET_E_NOMEM. */
facet_status facet_stop_matcher_push(facet_stop_matcher *m, const char *text, size_t len,
                                     const char **out, size_t *out_len, int *stopped,
                                     facet_error *err);

/* Release the held-back text (empty after a match). Same ownership as push. */
void facet_stop_matcher_flush(facet_stop_matcher *m, const char **out, size_t *out_len);

#ifdef __cplusplus
}
#endif

#endif /* FACET_SAMPLER_H */
