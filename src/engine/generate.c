/* generate.c — one generating sequence stepped with its logits (facet_generate.h). */
#include "facet_generate.h"

#include <stdlib.h>
#include <string.h>

#include "facet_grammar.h"
#include "util/error.h"
#include "util/str.h"

struct facet_generator {
    facet_sampler *sampler;
    facet_detok_stream *stream; /* NULL without a tokenizer                         */
    facet_stop_matcher *stop;
    int32_t *eos;               /* [n_eos]                                          */
    int n_eos;
    int n_vocab, max_tokens, n_ctx, n_prompt, n_gen;
    facet_kv_type kv_type;
    facet_finish_reason finish;
    facet_str prompt_text;      /* the prompt as the stream decoded it              */
    facet_str text, raw;        /* this step's released text and the token's text   */
    const facet_grammar_vocab *gvocab;  /* with a grammar: the token trie (borrowed)    */
    facet_grammar_matcher *matcher;     /* NULL without a grammar                      */
    uint8_t *allowed;                   /* [n_vocab] this step's grammar mask           */
};

const char *facet_finish_reason_name(facet_finish_reason r) {
    switch (r) {
    case FACET_FINISH_STOP: return "stop";
    case FACET_FINISH_LENGTH: return "length";
    default: return NULL;
    }
}

void facet_generator_free(facet_generator *g) {
    if (!g) return;
    facet_sampler_free(g->sampler);
    facet_detok_stream_free(g->stream);
    facet_stop_matcher_free(g->stop);
    free(g->eos);
    facet_grammar_matcher_free(g->matcher);
    free(g->allowed);
    facet_str_free(&g->prompt_text);
    facet_str_free(&g->text);
    facet_str_free(&g->raw);
    free(g);
}

static facet_status check_options(const facet_generator_options *o, const int32_t *prompt,
                                  size_t n_prompt, facet_error *err) {
    if (o->n_vocab <= 0)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "generator: n_vocab=%d (expected > 0)",
                         o->n_vocab);
    if (!prompt || n_prompt == 0)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "generator: the prompt is empty (expected at least one token)");
    if (o->max_tokens < 0)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "generator: max_tokens=%d (expected >= 0)", o->max_tokens);
    if (o->n_ctx <= 0 || n_prompt >= (size_t)o->n_ctx)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "generator: the prompt has %zu tokens and the context %d (expected "
                         "prompt < context)", n_prompt, o->n_ctx);
    if (o->n_eos < 0 || (o->n_eos > 0 && !o->eos_ids) || o->n_stops < 0 ||
        (o->n_stops > 0 && !o->stops))
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "generator: n_eos=%d or n_stops=%d without their arrays", o->n_eos,
                         o->n_stops);
    if (o->n_stops > 0 && !o->tok)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "generator: stop strings match generated text, which needs a "
                         "tokenizer to decode it");
    for (size_t i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= o->n_vocab)
            return facet_err(err, FACET_E_INVALID_ARGUMENT,
                             "generator: prompt token %d at index %zu is outside [0, %d)",
                             prompt[i], i, o->n_vocab);
    return FACET_OK;
}

/* Push the prompt through the stream and mark it: the prompt's text is kept for the
 * caller to echo, and the pieces after the mark are the completion. */
static facet_status prime(facet_generator *g, const int32_t *prompt, size_t n_prompt,
                          facet_error *err) {
    const char *piece;
    size_t len;
    for (size_t i = 0; i < n_prompt; i++) {
        facet_status st = facet_detok_stream_push(g->stream, prompt[i], &piece, &len, err);
        if (st != FACET_OK) return st;
        facet_str_append(&g->prompt_text, piece, len);
    }
    facet_status st = facet_detok_stream_mark(g->stream, &piece, &len, err);
    if (st != FACET_OK) return st;
    if (facet_str_append(&g->prompt_text, piece, len) || facet_str_reserve(&g->prompt_text, 0))
        return facet_err(err, FACET_E_NOMEM, "generator: the prompt's text (%zu bytes)",
                         g->prompt_text.len);
    return FACET_OK;
}

facet_status facet_generator_create(const facet_generator_options *o, const int32_t *prompt,
                                    size_t n_prompt, facet_generator **out, facet_error *err) {
    *out = NULL;
    facet_status st = check_options(o, prompt, n_prompt, err);
    if (st != FACET_OK) return st;
    facet_generator *g = calloc(1, sizeof *g);
    if (!g) return facet_err(err, FACET_E_NOMEM, "generator");
    g->n_vocab = o->n_vocab;
    g->max_tokens = o->max_tokens;
    g->n_ctx = o->n_ctx;
    g->n_prompt = (int)n_prompt; /* < n_ctx, an int */
    g->kv_type = o->kv_type;
    g->finish = o->max_tokens == 0 ? FACET_FINISH_LENGTH : FACET_FINISH_NONE;
    if (o->n_eos > 0) {
        g->eos = malloc((size_t)o->n_eos * sizeof *g->eos);
        if (!g->eos) {
            facet_generator_free(g);
            return facet_err(err, FACET_E_NOMEM, "generator: %d end-of-sequence ids", o->n_eos);
        }
        memcpy(g->eos, o->eos_ids, (size_t)o->n_eos * sizeof *g->eos);
        g->n_eos = o->n_eos;
    }
    facet_sampler_params defaults;
    facet_sampler_params_default(&defaults);
    st = facet_sampler_create(o->sampling ? o->sampling : &defaults, o->n_vocab, &g->sampler, err);
    if (st == FACET_OK) st = facet_sampler_accept_prompt(g->sampler, prompt, n_prompt, err);
    if (st == FACET_OK) st = facet_stop_matcher_create(o->stops, o->n_stops, &g->stop, err);
    if (st == FACET_OK && o->tok) st = facet_detok_stream_create(o->tok, 1, &g->stream, err);
    if (st == FACET_OK && g->stream) st = prime(g, prompt, n_prompt, err);
    if (st == FACET_OK && o->grammar) {
        g->gvocab = o->grammar_vocab;
        if (!g->gvocab)
            st = facet_err(err, FACET_E_INVALID_ARGUMENT,
                           "generator: a grammar without its vocabulary trie");
        if (st == FACET_OK) st = facet_grammar_matcher_create(o->grammar, &g->matcher, err);
        if (st == FACET_OK && !(g->allowed = malloc((size_t)o->n_vocab)))
            st = facet_err(err, FACET_E_NOMEM, "generator: grammar mask (out of memory, or a grammar too ambiguous to follow)");
    }
    if (st != FACET_OK) {
        facet_generator_free(g);
        return st;
    }
    *out = g;
    return FACET_OK;
}

const char *facet_generator_prompt_text(const facet_generator *g, size_t *len) {
    *len = g->prompt_text.len;
    return facet_str_cstr(&g->prompt_text);
}

int facet_generator_n_generated(const facet_generator *g) { return g->n_gen; }

facet_finish_reason facet_generator_finish(const facet_generator *g) { return g->finish; }

static int is_eos(const facet_generator *g, int32_t id) {
    for (int i = 0; i < g->n_eos; i++)
        if (g->eos[i] == id) return 1;
    return 0;
}

/* Push text through the stop matcher, appending what it releases to g->text; a match
 * finishes the generation with FACET_FINISH_STOP. */
static facet_status match(facet_generator *g, const char *piece, size_t len, facet_error *err) {
    const char *out;
    size_t out_len;
    int which = -1;
    facet_status st = facet_stop_matcher_push(g->stop, piece, len, &out, &out_len, &which, err);
    if (st != FACET_OK) return st;
    facet_str_append(&g->text, out, out_len);
    if (which >= 0) g->finish = FACET_FINISH_STOP;
    return FACET_OK;
}

/* The generation ends with `reason` unless a stop string already ended it: the stream
 * releases what it held back (part of the token's raw text); unless a stop string
 * ended the text, that tail goes through the matcher and the matcher releases what it
 * held back. */
static facet_status end(facet_generator *g, facet_finish_reason reason, facet_error *err) {
    if (g->stream) {
        const char *piece;
        size_t len;
        facet_status st = facet_detok_stream_flush(g->stream, &piece, &len, err);
        if (st != FACET_OK) return st;
        facet_str_append(&g->raw, piece, len);
        if (g->finish == FACET_FINISH_NONE) {
            if ((st = match(g, piece, len, err)) != FACET_OK) return st;
            if (g->finish == FACET_FINISH_NONE) {
                const char *out;
                size_t out_len;
                facet_stop_matcher_flush(g->stop, &out, &out_len);
                facet_str_append(&g->text, out, out_len);
            }
        }
    }
    if (g->finish == FACET_FINISH_NONE) g->finish = reason;
    return FACET_OK;
}

facet_status facet_generator_step(facet_generator *g, const float *logits, facet_gen_step *step,
                                  facet_error *err) {
    memset(step, 0, sizeof *step);
    step->token = -1;
    step->text = step->raw = "";
    if (g->finish != FACET_FINISH_NONE)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "generator: stepped after it finished (%s, %d tokens generated)",
                         facet_finish_reason_name(g->finish), g->n_gen);
    int bad = facet_logits_nonfinite(logits, g->n_vocab);
    if (bad >= 0) /* an overflowed forward pass: nothing meaningful to sample */
        return facet_err(err, FACET_E_NUMERIC,
                         "the logits of generation step %d are not finite (id %d: %g): the "
                         "forward pass overflowed, or a weight is NaN or infinite%s", g->n_gen, bad, logits[bad],
                         g->kv_type == FACET_KV_F16
                             ? "; the f16 KV cache holds only values within +-65504 "
                               "(--kv-cache bf16 or f32 keeps float32's range)"
                             : "");
    facet_str_truncate(&g->text, 0);
    facet_str_truncate(&g->raw, 0);
    if (g->matcher) {
        int n = facet_grammar_matcher_mask(g->matcher, g->gvocab, g->eos, g->n_eos, g->allowed);
        if (n < 0) return facet_err(err, FACET_E_NOMEM, "generator: grammar mask (out of memory, or a grammar too ambiguous to follow)");
        if (n == 0)
            return facet_err(err, FACET_E_FORMAT,
                             "generation step %d: no token of the vocabulary continues the "
                             "text the grammar accepts", g->n_gen);
        facet_sampler_set_mask(g->sampler, g->allowed);
    }
    int32_t tok = facet_sampler_sample(g->sampler, logits);
    facet_sampler_accept(g->sampler, tok);
    if (g->matcher && !is_eos(g, tok) &&
        facet_grammar_matcher_accept_token(g->matcher, g->gvocab, tok) < 0)
        return facet_err(err, FACET_E_NOMEM, "generator: grammar state (out of memory, or a grammar too ambiguous to follow)");
    g->n_gen++;
    step->token = tok;
    facet_status st = FACET_OK;
    if (is_eos(g, tok)) {
        step->eos = 1;
        st = end(g, FACET_FINISH_STOP, err);
    } else {
        if (g->stream) {
            const char *piece;
            size_t len;
            st = facet_detok_stream_push(g->stream, tok, &piece, &len, err);
            if (st == FACET_OK) {
                facet_str_append(&g->raw, piece, len);
                st = match(g, piece, len, err);
            }
        }
        /* the context counts the prompt and every generated token, as transformers'
         * max_length and vLLM's max_model_len do */
        /* a grammar that is complete with nothing to follow ends the text as an
         * end-of-sequence id would */
        int done_grammar = g->matcher && facet_grammar_matcher_finished(g->matcher);
        if (st == FACET_OK &&
            (g->finish != FACET_FINISH_NONE || done_grammar || g->n_gen >= g->max_tokens ||
             g->n_prompt + g->n_gen >= g->n_ctx))
            st = end(g, done_grammar ? FACET_FINISH_STOP : FACET_FINISH_LENGTH, err);
    }
    if (st == FACET_OK && (g->text.failed || g->raw.failed))
        st = facet_err(err, FACET_E_NOMEM, "generator: the text of generation step %d",
                       g->n_gen - 1);
    if (st != FACET_OK) {
        g->finish = FACET_FINISH_STOP; /* the text is incomplete: no further step */
        return st;
    }
    step->text = facet_str_cstr(&g->text);
    step->len = g->text.len;
    step->raw = facet_str_cstr(&g->raw);
    step->raw_len = g->raw.len;
    step->finish = g->finish;
    return FACET_OK;
}
