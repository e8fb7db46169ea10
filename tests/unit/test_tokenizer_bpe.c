/*
 * test_tokenizer_bpe.c — the BPE model and the post-processors on small tokenizer.json
 * files. The BPE cases are those of the reference implementation's unit tests (Hugging
 * Face `tokenizers`, models/bpe/model.rs: test_unk_not_fused, test_unk_get_fused,
 * test_tokenize_with_and_without_dropout, test_bpe_with_continuing_subword_prefix,
 * test_bpe_byte_fallback(_newline), test_ignore_merges) with the ids they assert.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tokenizer/tokenizer_internal.h"

static facet_tokenizer *make(const char *model, const char *post) {
    char json[8192];
    snprintf(json, sizeof json,
             "{\"added_tokens\": [], \"normalizer\": null, \"pre_tokenizer\": null, \"post_processor\": %s,"
             " \"decoder\": null, \"model\": %s}",
             post ? post : "null", model);
    facet_tokenizer *tok = NULL;
    facet_error err;
    facet_status st = tok_load_from_memory(json, strlen(json), NULL, 0, "t.json", &tok, &err);
    if (st) fprintf(stderr, "%s\n", err.message);
    assert_int_equal(st, FACET_OK);
    return tok;
}

static void expect_ids(const facet_tokenizer *tok, const char *text, int add_special, const int32_t *want, size_t n) {
    int32_t *ids;
    size_t got;
    facet_error err;
    assert_int_equal(facet_tokenize(tok, text, strlen(text), add_special, &ids, &got, &err), FACET_OK);
    if (got != n || memcmp(ids, want, n * sizeof *ids)) {
        fprintf(stderr, "\"%s\":", text);
        for (size_t i = 0; i < got; i++) fprintf(stderr, " %d", (int)ids[i]);
        fprintf(stderr, "\n");
    }
    assert_int_equal(got, n);
    assert_memory_equal(ids, want, n * sizeof *ids);
    free(ids);
}

#define IDS(...) (const int32_t[]){__VA_ARGS__}, sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t)

static void test_unk(void **state) {
    (void)state;
    const char *m = "{\"type\": \"BPE\", \"vocab\": {\"<unk>\": 0, \"a\": 1, \"b\": 2}, \"merges\": [], \"unk_token\": \"<unk>\"%s}";
    char spec[512];
    snprintf(spec, sizeof spec, m, "");
    facet_tokenizer *tok = make(spec, NULL);
    expect_ids(tok, "c", 0, IDS(0));
    expect_ids(tok, "cc", 0, IDS(0, 0));
    expect_ids(tok, "accb", 0, IDS(1, 0, 0, 2));
    facet_tokenizer_free(tok);
    snprintf(spec, sizeof spec, m, ", \"fuse_unk\": true");
    tok = make(spec, NULL);
    expect_ids(tok, "c", 0, IDS(0));
    expect_ids(tok, "cc", 0, IDS(0));
    expect_ids(tok, "accb", 0, IDS(1, 0, 2));
    facet_tokenizer_free(tok);
}

static void test_merges(void **state) {
    (void)state;
    facet_tokenizer *tok = make(
        "{\"type\": \"BPE\", \"vocab\": {\"u\": 0, \"n\": 1, \"r\": 2, \"e\": 3, \"l\": 4, \"a\": 5, \"t\": 6, \"d\": 7,"
        " \"re\": 8, \"at\": 9, \"ed\": 10, \"un\": 11, \"ated\": 12, \"rel\": 13, \"related\": 14, \"unrelated\": 15},"
        " \"merges\": [\"r e\", \"a t\", \"e d\", \"u n\", \"at ed\", \"re l\", \"rel ated\", \"un related\"]}",
        NULL);
    expect_ids(tok, "unrelated", 0, IDS(15));
    facet_tokenizer_free(tok);
    /* merges given as pairs, and continuing_subword_prefix */
    tok = make("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"##b\": 1, \"##c\": 2, \"ab\": 3, \"abc\": 4},"
               " \"merges\": [[\"a\", \"##b\"], [\"ab\", \"##c\"]], \"continuing_subword_prefix\": \"##\"}",
               NULL);
    expect_ids(tok, "ab", 0, IDS(3));
    expect_ids(tok, "abc", 0, IDS(4));
    facet_tokenizer_free(tok);
}

static void test_byte_fallback(void **state) {
    (void)state;
    facet_tokenizer *tok = make("{\"type\": \"BPE\", \"vocab\": {\"<unk>\": 0, \"<0x61>\": 1, \"<0x0A>\": 2}, \"merges\": [],"
                                " \"unk_token\": \"<unk>\", \"byte_fallback\": true}",
                                NULL);
    expect_ids(tok, "c", 0, IDS(0));
    expect_ids(tok, "a", 0, IDS(1));
    expect_ids(tok, "\n", 0, IDS(2));
    facet_tokenizer_free(tok);
}

static void test_ignore_merges(void **state) {
    (void)state;
    const char *m =
        "{\"type\": \"BPE\", \"ignore_merges\": %s, \"vocab\": {\".:.:\": 0, \"\\u0120belirtilen\": 1, \".\": 2, \":\": 3,"
        " \"bel\": 4, \"irtilen\": 5, \"\\u0120\": 6, \".:\": 7, \"belirtilen\": 8, \".:.\": 9, \"be\": 10, \"l\": 11,"
        " \"ir\": 12, \"ti\": 13, \"en\": 14, \"irtil\": 15, \"irti\": 16, \"i\": 17, \"r\": 18, \"t\": 19, \"b\": 20,"
        " \"e\": 21, \"n\": 22}, \"merges\": [\". :\", \"b e\", \"be l\", \"i r\", \"t i\", \"ir ti\", \"e n\", \"irti l\"]}";
    char spec[1024];
    snprintf(spec, sizeof spec, m, "true");
    facet_tokenizer *tok = make(spec, NULL);
    expect_ids(tok, ".:.:", 0, IDS(0));
    expect_ids(tok, "\xC4\xA0" "belirtilen", 0, IDS(1));
    facet_tokenizer_free(tok);
    snprintf(spec, sizeof spec, m, "false");
    tok = make(spec, NULL);
    expect_ids(tok, ".:.:", 0, IDS(7, 7));
    expect_ids(tok, "\xC4\xA0" "belirtilen", 0, IDS(6, 4, 15, 14));
    facet_tokenizer_free(tok);
}

static void test_post_processors(void **state) {
    (void)state;
    const char *m = "{\"type\": \"BPE\", \"vocab\": {\"<s>\": 0, \"</s>\": 1, \"a\": 2, \"[CLS]\": 3, \"[SEP]\": 4}, \"merges\": []}";
    /* RobertaProcessing: <s> A </s>; BertProcessing: [CLS] A [SEP]; nothing without special tokens */
    facet_tokenizer *tok = make(m, "{\"type\": \"RobertaProcessing\", \"sep\": [\"</s>\", 1], \"cls\": [\"<s>\", 0],"
                                   " \"trim_offsets\": true, \"add_prefix_space\": true}");
    expect_ids(tok, "aa", 1, IDS(0, 2, 2, 1));
    expect_ids(tok, "aa", 0, IDS(2, 2));
    facet_tokenizer_free(tok);
    tok = make(m, "{\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", 4], \"cls\": [\"[CLS]\", 3]}");
    expect_ids(tok, "a", 1, IDS(3, 2, 4));
    facet_tokenizer_free(tok);
    /* TemplateProcessing "[CLS] $A [SEP]" with a multi-id special token, inside a Sequence after ByteLevel */
    tok = make(m, "{\"type\": \"Sequence\", \"processors\": [{\"type\": \"ByteLevel\", \"add_prefix_space\": false,"
                  " \"trim_offsets\": false, \"use_regex\": false}, {\"type\": \"TemplateProcessing\", \"single\": ["
                  "{\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}},"
                  " {\"SpecialToken\": {\"id\": \"END\", \"type_id\": 0}}], \"pair\": [], \"special_tokens\": {"
                  "\"[CLS]\": {\"id\": \"[CLS]\", \"ids\": [3], \"tokens\": [\"[CLS]\"]},"
                  " \"END\": {\"id\": \"END\", \"ids\": [4, 1], \"tokens\": [\"[SEP]\", \"</s>\"]}}}]}");
    expect_ids(tok, "a", 1, IDS(3, 2, 4, 1));
    expect_ids(tok, "", 1, IDS(3, 4, 1));
    facet_tokenizer_free(tok);
}

/* WordPiece (models/wordpiece tests: "banana" -> ba ##na ##na, "nanana" -> [UNK]) and a
 * BERT-style pipeline: BertNormalizer, BertPreTokenizer, WordPiece, BertProcessing. */
static void test_wordpiece(void **state) {
    (void)state;
    facet_tokenizer *tok = make("{\"type\": \"WordPiece\", \"vocab\": {\"##na\": 0, \"ba\": 1, \"[UNK]\": 2, \"a\": 3,"
                                " \"sentence\": 4}, \"max_input_chars_per_word\": 8}",
                                NULL);
    expect_ids(tok, "banana", 0, IDS(1, 0, 0));
    expect_ids(tok, "nanana", 0, IDS(2));
    expect_ids(tok, "a", 0, IDS(3));
    expect_ids(tok, "sentence", 0, IDS(4));
    expect_ids(tok, "bananana", 0, IDS(1, 0, 0, 0));
    expect_ids(tok, "banananan", 0, IDS(2)); /* 9 characters > max_input_chars_per_word */
    facet_tokenizer_free(tok);
    char json[2048];
    snprintf(json, sizeof json,
             "{\"added_tokens\": [{\"id\": 0, \"content\": \"[CLS]\", \"special\": true, \"normalized\": false},"
             " {\"id\": 1, \"content\": \"[SEP]\", \"special\": true, \"normalized\": false}],"
             " \"normalizer\": {\"type\": \"BertNormalizer\", \"lowercase\": true},"
             " \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},"
             " \"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", 1], \"cls\": [\"[CLS]\", 0]},"
             " \"decoder\": {\"type\": \"WordPiece\", \"prefix\": \"##\", \"cleanup\": true},"
             " \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"vocab\": {\"[CLS]\": 0, \"[SEP]\": 1,"
             " \"[UNK]\": 2, \"hello\": 3, \"world\": 4, \"!\": 5, \"play\": 6, \"##ing\": 7}}}");
    facet_error err;
    assert_int_equal(tok_load_from_memory(json, strlen(json), NULL, 0, "bert.json", &tok, &err), FACET_OK);
    expect_ids(tok, "Hello, WORLD! Playing", 1, IDS(0, 3, 2, 4, 5, 6, 7, 1));
    char *text;
    size_t len;
    assert_int_equal(facet_detokenize(tok, (const int32_t[]){0, 3, 4, 5, 6, 7, 1}, 7, 1, &text, &len, &err), FACET_OK);
    assert_string_equal(text, "hello world! playing");
    free(text);
    facet_tokenizer_free(tok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unk),
        cmocka_unit_test(test_merges),
        cmocka_unit_test(test_byte_fallback),
        cmocka_unit_test(test_ignore_merges),
        cmocka_unit_test(test_post_processors),
        cmocka_unit_test(test_wordpiece),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
