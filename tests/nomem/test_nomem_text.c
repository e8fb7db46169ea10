/*
 * Allocation failure in the text path (alloc_fail.h): tokenizer load (the bundled
 * stories260k tokenizer.json, a SentencePiece-style BPE, and a byte-level BPE built here
 * with added tokens, a Split + ByteLevel pre-tokenizer and a template post-processor),
 * encode, decode and the streaming decoder; tokenizers from GGUF metadata (load and
 * encode, the SentencePiece, BPE and WordPiece seeds of fuzz_gguf_tokenizer); the generator (facet_generate.h: create and
 * step with a stop string held across tokens); chat template load and render (Qwen3's
 * template from tests/data/chat, with tools and tool calls, and with integers beyond 64
 * bits in the messages and tools).
 *
 * Every failed run must return FACET_E_NOMEM with nothing to free, and leave the
 * object usable: the same call without a failure gives the output of a call that never
 * failed. All sweeps are exhaustive (every n up to the first run without a failure).
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc_fail.h"
#include "facet_chat.h"
#include "facet_generate.h"
#include "facet_tokenizer.h"
#include "tokenizer/tokenizer_internal.h"

#define MODEL_DIR FACET_SOURCE_DIR "/models/stories260k"
#define CHAT_DIR FACET_TEST_DATA "/chat/configs__Qwen__Qwen3-1.7B__resaved"

/* A failed run's status: FACET_E_NOMEM with a message. */
static void expect_nomem(long n, int st, const facet_error *err, const char *what) {
    if (st != FACET_E_NOMEM)
        fail_msg("%s: allocation %ld failed: %s (%s), expected FACET_E_NOMEM", what, n,
                 facet_status_name(st), err->message);
    assert_true(err->message[0] != 0);
}

/* ---- tokenizer load ---- */

static char bl_json[8192]; /* the byte-level tokenizer */

static void make_bytelevel_json(void) {
    char vocab[4096] = "";
    size_t k = 0;
    /* ids 0..25: a..z; 26: "Ġ" (space, byte-level); 27..: merges' results */
    for (int c = 0; c < 26; c++) k += (size_t)snprintf(vocab + k, sizeof vocab - k, "\"%c\": %d, ", 'a' + c, c);
    snprintf(vocab + k, sizeof vocab - k,
             "\"\\u0120\": 26, \"he\": 27, \"ll\": 28, \"hell\": 29, \"hello\": 30, \"\\u0120w\": 31");
    snprintf(bl_json, sizeof bl_json,
             "{\"version\": \"1.0\", \"added_tokens\": ["
             "{\"id\": 32, \"content\": \"<|end|>\", \"single_word\": false, \"lstrip\": false,"
             " \"rstrip\": false, \"normalized\": false, \"special\": true},"
             "{\"id\": 33, \"content\": \"<|user|>\", \"single_word\": false, \"lstrip\": false,"
             " \"rstrip\": false, \"normalized\": false, \"special\": true}],"
             " \"normalizer\": {\"type\": \"NFC\"},"
             " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
             "{\"type\": \"Split\", \"pattern\": {\"Regex\": \" ?\\\\p{L}+| ?[^\\\\s\\\\p{L}]+|\\\\s+\"},"
             " \"behavior\": \"Isolated\", \"invert\": false},"
             "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false,"
             " \"use_regex\": false}]},"
             " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": ["
             "{\"SpecialToken\": {\"id\": \"<|user|>\", \"type_id\": 0}},"
             " {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [],"
             " \"special_tokens\": {\"<|user|>\": {\"id\": \"<|user|>\", \"ids\": [33],"
             " \"tokens\": [\"<|user|>\"]}}},"
             " \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false,"
             " \"trim_offsets\": false, \"use_regex\": false},"
             " \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null,"
             " \"continuing_subword_prefix\": null, \"end_of_word_suffix\": null,"
             " \"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": false,"
             " \"vocab\": {%s}, \"merges\": [\"h e\", \"l l\", \"he ll\", \"hell o\", \"\\u0120 w\"]}}",
             vocab);
}

typedef struct {
    int bytelevel;
    facet_tokenizer *tok;
    facet_error err;
} tokload_ctx;

static int tokload_op(void *p) {
    tokload_ctx *c = p;
    memset(&c->err, 0, sizeof c->err);
    c->tok = (facet_tokenizer *)0x1;
    if (c->bytelevel)
        return (int)tok_load_from_memory(bl_json, strlen(bl_json), NULL, 0, "bl.json", &c->tok,
                                         &c->err);
    return (int)facet_tokenizer_load(MODEL_DIR, &c->tok, &c->err);
}

static void tokload_check(void *p, long n, int st) {
    tokload_ctx *c = p;
    if (n) {
        expect_nomem(n, st, &c->err, "tokenizer load");
        assert_null(c->tok);
        return;
    }
    if (st != FACET_OK) fail_msg("tokenizer load: %s", c->err.message);
    facet_tokenizer_free(c->tok);
}

static void test_tokenizer_load(void **state) {
    (void)state;
    make_bytelevel_json();
    for (int b = 0; b < 2; b++) {
        tokload_ctx c = {.bytelevel = b};
        long runs = alloc_fail_sweep(tokload_op, tokload_check, &c, 0, 1);
        print_message("tokenizer load (%s): %ld runs\n", b ? "byte-level" : "stories260k", runs);
    }
}

/* ---- a tokenizer from GGUF metadata (the fuzz seeds: SentencePiece, BPE, WordPiece) -- */

#define GGUF_SEEDS FACET_SOURCE_DIR "/tests/fuzz/seeds/fuzz_gguf_tokenizer/"

typedef struct {
    const char *path, *text;
    facet_tokenizer *tok;
    int32_t *ids, want[64];
    size_t n, n_want;
    facet_error err;
} gguf_ctx;

static int ggufload_op(void *p) {
    gguf_ctx *c = p;
    memset(&c->err, 0, sizeof c->err);
    c->tok = (facet_tokenizer *)0x1;
    return (int)facet_tokenizer_load(c->path, &c->tok, &c->err);
}

static void ggufload_check(void *p, long n, int st) {
    gguf_ctx *c = p;
    if (n) {
        expect_nomem(n, st, &c->err, c->path);
        assert_null(c->tok);
        return;
    }
    if (st != FACET_OK) fail_msg("%s: %s", c->path, c->err.message);
    facet_tokenizer_free(c->tok);
}

static int ggufenc_op(void *p) {
    gguf_ctx *c = p;
    memset(&c->err, 0, sizeof c->err);
    c->ids = NULL;
    return (int)facet_tokenize(c->tok, c->text, strlen(c->text), 1, &c->ids, &c->n, &c->err);
}

static void ggufenc_check(void *p, long n, int st) {
    gguf_ctx *c = p;
    if (n && st != FACET_OK) {
        expect_nomem(n, st, &c->err, c->path);
        return;
    }
    assert_int_equal(st, FACET_OK);
    assert_int_equal(c->n, c->n_want);
    assert_memory_equal(c->ids, c->want, c->n * sizeof *c->ids);
    free(c->ids);
}

static void test_gguf_tokenizer(void **state) {
    (void)state;
    static const char *const names[] = {"spm.gguf", "bpe.gguf", "wpm.gguf"};
    for (int i = 0; i < 3; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s%s", GGUF_SEEDS, names[i]);
        gguf_ctx c = {.path = path, .text = "hello ab playing, c <|user|>ab h\xC3\xA9llo\n\n <s>"};
        long runs = alloc_fail_sweep(ggufload_op, ggufload_check, &c, 0, 1);
        assert_int_equal(facet_tokenizer_load(path, &c.tok, NULL), FACET_OK);
        int32_t *ids;
        assert_int_equal(facet_tokenize(c.tok, c.text, strlen(c.text), 1, &ids, &c.n_want, NULL), FACET_OK);
        assert_true(c.n_want <= 64);
        memcpy(c.want, ids, c.n_want * sizeof *ids);
        free(ids);
        runs += alloc_fail_sweep(ggufenc_op, ggufenc_check, &c, 0, 1);
        facet_tokenizer_free(c.tok);
        print_message("GGUF tokenizer %s: %ld runs\n", names[i], runs);
    }
}

/* ---- encode, decode, stream ---- */

typedef struct {
    facet_tokenizer *tok;
    const char *text;
    int32_t *ids;
    size_t n;
    int32_t *want;
    size_t n_want;
    char *out;
    size_t out_len;
    facet_error err;
} codec_ctx;

static int encode_op(void *p) {
    codec_ctx *c = p;
    memset(&c->err, 0, sizeof c->err);
    c->ids = NULL;
    return (int)facet_tokenize(c->tok, c->text, strlen(c->text), 1, &c->ids, &c->n, &c->err);
}

/* A failure may also be absorbed: the word cache is an optimization, and encode goes on
 * without the entry it could not add; the ids must be those of a run that never failed. */
static void encode_check(void *p, long n, int st) {
    codec_ctx *c = p;
    if (n && st != FACET_OK) {
        expect_nomem(n, st, &c->err, "encode");
        return;
    }
    assert_int_equal(st, FACET_OK);
    assert_int_equal(c->n, c->n_want);
    assert_memory_equal(c->ids, c->want, c->n * sizeof *c->ids);
    free(c->ids);
}

static int decode_op(void *p) {
    codec_ctx *c = p;
    memset(&c->err, 0, sizeof c->err);
    c->out = NULL;
    return (int)facet_detokenize(c->tok, c->want, c->n_want, 0, &c->out, &c->out_len, &c->err);
}

static void decode_check(void *p, long n, int st) {
    codec_ctx *c = p;
    if (n) {
        expect_nomem(n, st, &c->err, "decode");
        return;
    }
    assert_int_equal(st, FACET_OK);
}

/* The whole stream (create, a push per id, flush) as one operation; its text must be
 * decode's. */
static char stream_text[4096];

static int stream_op(void *p) {
    codec_ctx *c = p;
    memset(&c->err, 0, sizeof c->err);
    facet_detok_stream *s = NULL;
    facet_status st = facet_detok_stream_create(c->tok, 0, &s, &c->err);
    if (st) return (int)st;
    size_t at = 0, len;
    const char *piece;
    for (size_t i = 0; i <= c->n_want && !st; i++) {
        st = i < c->n_want ? facet_detok_stream_push(s, c->want[i], &piece, &len, &c->err)
                           : facet_detok_stream_flush(s, &piece, &len, &c->err);
        if (!st) {
            assert_true(at + len < sizeof stream_text);
            memcpy(stream_text + at, piece, len);
            at += len;
        }
    }
    stream_text[at] = 0;
    facet_detok_stream_free(s);
    return (int)st;
}

static void stream_check(void *p, long n, int st) {
    codec_ctx *c = p;
    if (n) {
        expect_nomem(n, st, &c->err, "detok stream");
        return;
    }
    assert_int_equal(st, FACET_OK);
    assert_string_equal(stream_text, c->out);
}

static void test_codec(void **state) {
    (void)state;
    make_bytelevel_json();
    static const char *texts[2] = {
        "Once upon a time, <s>there was a tiny 🐱 named Lily.\n\n  She said: \"hi!\" </s>",
        "<|user|>hello world, hell\xc3\xa9 <|end|> hello\tworld  ",
    };
    for (int b = 0; b < 2; b++) {
        codec_ctx c = {.text = texts[b]};
        if (b)
            assert_int_equal(tok_load_from_memory(bl_json, strlen(bl_json), NULL, 0, "bl.json",
                                                  &c.tok, NULL), FACET_OK);
        else
            assert_int_equal(facet_tokenizer_load(MODEL_DIR, &c.tok, NULL), FACET_OK);
        /* the reference: a fresh tokenizer's ids, its word cache cold */
        assert_int_equal(encode_op(&c), FACET_OK);
        c.want = c.ids;
        c.n_want = c.n;
        facet_tokenizer_free(c.tok);
        if (b)
            assert_int_equal(tok_load_from_memory(bl_json, strlen(bl_json), NULL, 0, "bl.json",
                                                  &c.tok, NULL), FACET_OK);
        else
            assert_int_equal(facet_tokenizer_load(MODEL_DIR, &c.tok, NULL), FACET_OK);
        long r1 = alloc_fail_sweep(encode_op, encode_check, &c, 0, 1);
        long r2 = alloc_fail_sweep(encode_op, encode_check, &c, 0, 1); /* warm word cache */
        long r3 = alloc_fail_sweep(decode_op, decode_check, &c, 0, 1);
        long r4 = alloc_fail_sweep(stream_op, stream_check, &c, 0, 1);
        free(c.out);
        print_message("%s: encode %ld + %ld runs, decode %ld, stream %ld (%zu ids)\n",
                      b ? "byte-level" : "stories260k", r1, r2, r3, r4, c.n_want);
        free(c.want);
        facet_tokenizer_free(c.tok);
    }
}

/* ---- generator ---- */

/* A generation as one operation: create (prompt "<s> Once", stop string "time!", eos
 * </s>, max_tokens 4), then a step per one-hot row of 407 " upon", 261 " a", 378
 * " time", 432 ",". Hand-worked: "time" is held as a prefix of the stop string and
 * released by ","; the fourth token ends it with length. */
#define GEN_V 512
static char gen_text[256];
static facet_error gen_err;
static facet_finish_reason gen_finish;

static int generate_op(void *p) {
    facet_tokenizer *tok = p;
    static const int32_t prompt[] = {1, 403}, eos[] = {2}, ids[] = {407, 261, 378, 432};
    static const char *const stops[] = {"time!"};
    static float row[GEN_V];
    facet_sampler_params sp;
    facet_sampler_params_default(&sp);
    sp.temperature = 0;
    facet_generator_options o = {.sampling = &sp, .n_vocab = GEN_V, .tok = tok, .stops = stops,
                                 .n_stops = 1, .eos_ids = eos, .n_eos = 1, .max_tokens = 4,
                                 .n_ctx = 64};
    memset(&gen_err, 0, sizeof gen_err);
    gen_text[0] = 0;
    gen_finish = FACET_FINISH_NONE;
    facet_generator *g = NULL;
    facet_status st = facet_generator_create(&o, prompt, 2, &g, &gen_err);
    size_t at = 0;
    for (int i = 0; st == FACET_OK && i < 4 && gen_finish == FACET_FINISH_NONE; i++) {
        memset(row, 0, sizeof row);
        row[ids[i]] = 10.0f;
        facet_gen_step step;
        st = facet_generator_step(g, row, &step, &gen_err);
        if (st == FACET_OK) {
            assert_true(at + step.len < sizeof gen_text);
            memcpy(gen_text + at, step.text, step.len + 1);
            at += step.len;
            gen_finish = step.finish;
        }
    }
    facet_generator_free(g);
    return (int)st;
}

static void generate_check(void *p, long n, int st) {
    (void)p;
    if (n) {
        expect_nomem(n, st, &gen_err, "generator");
        return;
    }
    assert_int_equal(st, FACET_OK);
    assert_string_equal(gen_text, " upon a time,");
    assert_int_equal(gen_finish, FACET_FINISH_LENGTH);
}

static void test_generator(void **state) {
    (void)state;
    facet_tokenizer *tok;
    assert_int_equal(facet_tokenizer_load(MODEL_DIR, &tok, NULL), FACET_OK);
    long runs = alloc_fail_sweep(generate_op, generate_check, tok, 0, 1);
    print_message("generator: %ld runs\n", runs);
    facet_tokenizer_free(tok);
}

/* ---- chat template ---- */

typedef struct {
    facet_chat_template *tpl;
    const char *messages, *tools, *vars;
    const char *want;
    char *out;
    facet_error err;
} chat_ctx;

static int tplload_op(void *p) {
    chat_ctx *c = p;
    memset(&c->err, 0, sizeof c->err);
    c->tpl = (facet_chat_template *)0x1;
    return (int)facet_chat_template_load(CHAT_DIR, &c->tpl, &c->err);
}

static void tplload_check(void *p, long n, int st) {
    chat_ctx *c = p;
    if (n) {
        expect_nomem(n, st, &c->err, "template load");
        assert_null(c->tpl);
        return;
    }
    if (st != FACET_OK) fail_msg("template load: %s", c->err.message);
    facet_chat_template_free(c->tpl);
}

static int render_op(void *p) {
    chat_ctx *c = p;
    memset(&c->err, 0, sizeof c->err);
    c->out = NULL;
    return (int)facet_chat_render(c->tpl, c->messages, c->tools, 1, c->vars, &c->out, NULL,
                                  &c->err);
}

static void render_check(void *p, long n, int st) {
    chat_ctx *c = p;
    if (n) {
        expect_nomem(n, st, &c->err, "render");
        assert_null(c->out);
        return;
    }
    if (st != FACET_OK) fail_msg("render: %s", c->err.message);
    assert_string_equal(c->out, c->want);
    free(c->out);
}

static void test_chat_template(void **state) {
    (void)state;
    chat_ctx c = {0};
    long runs = alloc_fail_sweep(tplload_op, tplload_check, &c, 0, 1);
    print_message("template load: %ld runs\n", runs);
    assert_int_equal(facet_chat_template_load(CHAT_DIR, &c.tpl, NULL), FACET_OK);
    /* the cases with tools and tool calls, and one with thinking disabled; the expected
     * text is transformers' rendering (chat_cases.jsonl) */
    FILE *f = fopen(CHAT_DIR "/chat_cases.jsonl", "r");
    assert_non_null(f);
    char line[16384];
    long total = 0, cases = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *cs = json_loads(line, 0, NULL);
        assert_non_null(cs);
        json_t *tools = json_object_get(cs, "tools"), *extra = json_object_get(cs, "extra");
        if (json_is_null(tools) && !json_object_size(extra)) {
            json_decref(cs);
            continue;
        }
        if (!json_is_true(json_object_get(cs, "add_generation_prompt"))) {
            json_decref(cs);
            continue;
        }
        char *m = json_dumps(json_object_get(cs, "messages"), 0);
        char *t = json_is_null(tools) ? NULL : json_dumps(tools, 0);
        char *v = json_object_size(extra) ? json_dumps(extra, 0) : NULL;
        c.messages = m;
        c.tools = t;
        c.vars = v;
        c.want = json_string_value(json_object_get(cs, "rendered"));
        total += alloc_fail_sweep(render_op, render_check, &c, 0, 1);
        cases++;
        free(m);
        free(t);
        free(v);
        json_decref(cs);
    }
    fclose(f);
    assert_true(cases >= 5);
    /* integers beyond 64 bits in the messages and tools: the exact reader rewrites the
     * text first (an allocation of its own); expected: a render that never failed */
    c.messages = "[{\"role\": \"user\", \"content\": \"n\", \"n\": 123456789012345678901234567890}]";
    c.tools = "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
              "{\"type\": \"object\", \"properties\": {\"x\": {\"type\": \"integer\", "
              "\"maximum\": 99999999999999999999999}}}}}]";
    c.vars = NULL;
    char *want = NULL;
    assert_int_equal(facet_chat_render(c.tpl, c.messages, c.tools, 1, NULL, &want, NULL, NULL),
                     FACET_OK);
    assert_non_null(strstr(want, "99999999999999999999999"));
    c.want = want;
    total += alloc_fail_sweep(render_op, render_check, &c, 0, 1);
    cases++;
    free(want);
    print_message("render: %ld runs over %ld cases\n", total, cases);
    facet_chat_template_free(c.tpl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokenizer_load),
        cmocka_unit_test(test_gguf_tokenizer),
        cmocka_unit_test(test_codec),
        cmocka_unit_test(test_generator),
        cmocka_unit_test(test_chat_template),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
