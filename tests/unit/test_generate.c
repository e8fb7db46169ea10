/* test_generate.c — the generator (facet_generate.h): stop strings across token
 * boundaries, end-of-sequence ids, max_tokens, the context limit, non-finite logits.
 *
 * The logits are one-hot rows (10 at the wanted id, 0 elsewhere) and the sampler is
 * greedy, so each step chooses the id the test names. The tokenizer is the bundled
 * stories260k one (SentencePiece vocabulary of tokenizer.json): 1 "<s>", 2 "</s>" (eos),
 * 403 "▁Once", 407 "▁upon", 261 "▁a", 378 "▁time", 432 ",". The expected texts are
 * worked out by hand: "▁" decodes to a space, the leading space of the prompt's first
 * word is removed, the completion's first token keeps its space (decoded in context). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "facet_generate.h"

#define V 512
static const int32_t prompt[] = {1, 403}; /* "<s>" "▁Once" */
static const int32_t eos[] = {2};
static facet_tokenizer *tok;
static float row[V];

static int setup(void **state) {
    (void)state;
    facet_error err;
    return facet_tokenizer_load(FACET_SOURCE_DIR "/models/stories260k", &tok, &err) != FACET_OK;
}

static int teardown(void **state) {
    (void)state;
    facet_tokenizer_free(tok);
    return 0;
}

static const float *one_hot(int32_t id) {
    memset(row, 0, sizeof row);
    row[id] = 10.0f;
    return row;
}

static facet_sampler_params greedy(void) {
    facet_sampler_params p;
    facet_sampler_params_default(&p);
    p.temperature = 0;
    return p;
}

static facet_generator *make(const char *const *stops, int n_stops, int max_tokens, int n_ctx) {
    facet_sampler_params p = greedy();
    facet_generator_options o = {.sampling = &p, .n_vocab = V, .tok = tok, .stops = stops,
                                 .n_stops = n_stops, .eos_ids = eos, .n_eos = 1,
                                 .max_tokens = max_tokens, .n_ctx = n_ctx};
    facet_generator *g = NULL;
    facet_error err;
    assert_int_equal(facet_generator_create(&o, prompt, 2, &g, &err), FACET_OK);
    return g;
}

/* Step with a one-hot row for `id`; check the token and return the step. */
static facet_gen_step step(facet_generator *g, int32_t id) {
    facet_gen_step s;
    facet_error err;
    assert_int_equal(facet_generator_step(g, one_hot(id), &s, &err), FACET_OK);
    assert_int_equal(s.token, id);
    assert_int_equal(strlen(s.text), s.len);
    assert_int_equal(strlen(s.raw), s.raw_len);
    return s;
}

static void test_prompt_text(void **state) {
    (void)state;
    facet_generator *g = make(NULL, 0, 4, 64);
    size_t len;
    assert_string_equal(facet_generator_prompt_text(g, &len), "Once");
    assert_int_equal(len, 4);
    assert_int_equal(facet_generator_n_generated(g), 0);
    assert_int_equal(facet_generator_finish(g), FACET_FINISH_NONE);
    facet_generator_free(g);
}

/* The stop string "n a t" spans " upon" | " a" | " time": " upon" releases " upo" and
 * holds "n" (a prefix of the stop), " a" releases nothing ("n a" is a prefix), " time"
 * completes the match: the text ends before it, finish stop. */
static void test_stop_across_tokens(void **state) {
    (void)state;
    const char *stops[] = {"n a t"};
    facet_generator *g = make(stops, 1, 10, 64);
    facet_gen_step s = step(g, 407);
    assert_string_equal(s.text, " upo");
    assert_string_equal(s.raw, " upon");
    assert_int_equal(s.finish, FACET_FINISH_NONE);
    s = step(g, 261);
    assert_string_equal(s.text, "");
    assert_string_equal(s.raw, " a");
    assert_int_equal(s.finish, FACET_FINISH_NONE);
    s = step(g, 378);
    assert_string_equal(s.text, "");
    assert_string_equal(s.raw, " time");
    assert_int_equal(s.finish, FACET_FINISH_STOP);
    assert_int_equal(s.eos, 0);
    assert_int_equal(facet_generator_finish(g), FACET_FINISH_STOP);
    assert_int_equal(facet_generator_n_generated(g), 3);
    facet_gen_step again;
    facet_error err;
    assert_int_equal(facet_generator_step(g, one_hot(261), &again, &err),
                     FACET_E_INVALID_ARGUMENT);
    facet_generator_free(g);
}

/* A held-back prefix ("on" of " upon", which may start "on!") is released when the
 * sequence ends on an eos id; the eos id itself adds no text. */
static void test_eos_flushes_held_text(void **state) {
    (void)state;
    const char *stops[] = {"on!"};
    facet_generator *g = make(stops, 1, 10, 64);
    facet_gen_step s = step(g, 407);
    assert_string_equal(s.text, " up");
    s = step(g, 2);
    assert_int_equal(s.eos, 1);
    assert_string_equal(s.text, "on");
    assert_string_equal(s.raw, "");
    assert_int_equal(s.finish, FACET_FINISH_STOP);
    assert_int_equal(facet_generator_n_generated(g), 2);
    facet_generator_free(g);
}

/* With no eos ids (ignore_eos) the eos id is an ordinary token: "</s>" decodes to
 * nothing (special tokens are skipped) and generation goes on. */
static void test_no_eos_ids(void **state) {
    (void)state;
    facet_sampler_params p = greedy();
    facet_generator_options o = {.sampling = &p, .n_vocab = V, .tok = tok, .max_tokens = 3,
                                 .n_ctx = 64};
    facet_generator *g = NULL;
    facet_error err;
    assert_int_equal(facet_generator_create(&o, prompt, 2, &g, &err), FACET_OK);
    facet_gen_step s = step(g, 2);
    assert_int_equal(s.eos, 0);
    assert_int_equal(s.finish, FACET_FINISH_NONE);
    facet_generator_free(g);
}

/* max_tokens 2: the second token finishes with length, its text flushed. */
static void test_max_tokens(void **state) {
    (void)state;
    facet_generator *g = make(NULL, 0, 2, 64);
    facet_gen_step s = step(g, 407);
    assert_string_equal(s.text, " upon");
    assert_int_equal(s.finish, FACET_FINISH_NONE);
    s = step(g, 432);
    assert_string_equal(s.text, ",");
    assert_int_equal(s.finish, FACET_FINISH_LENGTH);
    assert_string_equal(facet_finish_reason_name(s.finish), "length");
    facet_generator_free(g);

    g = make(NULL, 0, 0, 64); /* nothing to generate: finished from the start */
    assert_int_equal(facet_generator_finish(g), FACET_FINISH_LENGTH);
    facet_generator_free(g);
}

/* The context holds 5: a 2-token prompt leaves room for 3 generated tokens, whatever
 * max_tokens says. A stop prefix held at that point is released. */
static void test_context_full(void **state) {
    (void)state;
    const char *stops[] = {"time!"};
    facet_generator *g = make(stops, 1, 100, 5);
    assert_int_equal(step(g, 407).finish, FACET_FINISH_NONE);
    assert_int_equal(step(g, 261).finish, FACET_FINISH_NONE);
    facet_gen_step s = step(g, 378);
    assert_string_equal(s.text, " time"); /* "time" was held until the end */
    assert_int_equal(s.finish, FACET_FINISH_LENGTH);
    assert_int_equal(facet_generator_n_generated(g), 3);
    facet_generator_free(g);
}

/* A NaN or infinite logit: FACET_E_NUMERIC naming the step, the id and f16's range for
 * an f16 KV cache; nothing is sampled, and finite logits step on. */
static void test_nonfinite_logits(void **state) {
    (void)state;
    facet_sampler_params p = greedy();
    facet_generator_options o = {.sampling = &p, .n_vocab = V, .tok = tok, .eos_ids = eos,
                                 .n_eos = 1, .max_tokens = 4, .n_ctx = 64,
                                 .kv_type = FACET_KV_F16};
    facet_generator *g = NULL;
    facet_error err;
    assert_int_equal(facet_generator_create(&o, prompt, 2, &g, &err), FACET_OK);
    step(g, 407);
    float *r = (float *)one_hot(261);
    r[7] = NAN;
    facet_gen_step s;
    assert_int_equal(facet_generator_step(g, r, &s, &err), FACET_E_NUMERIC);
    assert_int_equal(err.status, FACET_E_NUMERIC);
    assert_non_null(strstr(err.message, "the logits of generation step 1 are not finite (id 7: nan)"));
    assert_non_null(strstr(err.message, "f16 KV cache holds only values within +-65504"));
    /* a NaN or infinite weight (a damaged file) gives the same logits: named too */
    assert_non_null(strstr(err.message, "or a weight is NaN or infinite"));
    assert_int_equal(facet_generator_n_generated(g), 1);
    r[7] = 0;
    r[300] = -INFINITY;
    assert_int_equal(facet_generator_step(g, r, &s, &err), FACET_E_NUMERIC);
    assert_non_null(strstr(err.message, "(id 300: -inf)"));
    s = step(g, 261);
    assert_string_equal(s.text, " a");
    facet_generator_free(g);

    o.kv_type = FACET_KV_F32; /* no f16 hint */
    assert_int_equal(facet_generator_create(&o, prompt, 2, &g, &err), FACET_OK);
    r = (float *)one_hot(261);
    r[0] = INFINITY;
    assert_int_equal(facet_generator_step(g, r, &s, &err), FACET_E_NUMERIC);
    assert_null(strstr(err.message, "f16"));
    facet_generator_free(g);
}

static void test_bad_options(void **state) {
    (void)state;
    const char *stops[] = {"x"};
    facet_sampler_params p = greedy();
    facet_generator_options o = {.sampling = &p, .n_vocab = V, .stops = stops, .n_stops = 1, .max_tokens = 4,
                                 .n_ctx = 64};
    facet_generator *g = (facet_generator *)&o;
    facet_error err;
    /* stop strings need a tokenizer to decode the text they match */
    assert_int_equal(facet_generator_create(&o, prompt, 2, &g, &err), FACET_E_INVALID_ARGUMENT);
    assert_null(g);
    o.n_stops = 0;
    o.n_ctx = 2; /* the prompt fills the context */
    assert_int_equal(facet_generator_create(&o, prompt, 2, &g, &err), FACET_E_INVALID_ARGUMENT);
    o.n_ctx = 64;
    const int32_t bad[] = {1, 512};
    assert_int_equal(facet_generator_create(&o, bad, 2, &g, &err), FACET_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "prompt token 512 at index 1 is outside [0, 512)"));
    /* without a tokenizer the ids still come, with no text */
    assert_int_equal(facet_generator_create(&o, prompt, 2, &g, &err), FACET_OK);
    size_t len;
    assert_string_equal(facet_generator_prompt_text(g, &len), "");
    facet_gen_step s = step(g, 407);
    assert_int_equal(s.len, 0);
    assert_int_equal(s.raw_len, 0);
    facet_generator_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prompt_text),        cmocka_unit_test(test_stop_across_tokens),
        cmocka_unit_test(test_eos_flushes_held_text), cmocka_unit_test(test_no_eos_ids),
        cmocka_unit_test(test_max_tokens),         cmocka_unit_test(test_context_full),
        cmocka_unit_test(test_nonfinite_logits),   cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
