/*
 * test_tokenizer_added.c — added-token extraction (single_word, lstrip, rstrip,
 * normalized, special) on the examples of the reference implementation's unit tests
 * (Hugging Face `tokenizers`, tokenizer/added_vocabulary.rs: options_use_cases,
 * test_single_word_is_correct, test_single_word_is_unicode_correct,
 * test_lstrip_unicode_space); the expected splits are the values those tests assert.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tokenizer/tokenizer_internal.h"

/* A tokenizer with a Lowercase normalizer, a one-character vocabulary and the given
 * added tokens (JSON array text). */
static facet_tokenizer *make(const char *added) {
    char json[4096];
    snprintf(json, sizeof json,
             "{\"added_tokens\": %s, \"normalizer\": {\"type\": \"Lowercase\"}, \"pre_tokenizer\": null,"
             " \"post_processor\": null, \"decoder\": null,"
             " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2}, \"merges\": []}}",
             added);
    facet_tokenizer *tok = NULL;
    facet_error err;
    facet_status st = tok_load_from_memory(json, strlen(json), NULL, 0, "t.json", &tok, &err);
    if (st) fprintf(stderr, "%s\n", err.message);
    assert_int_equal(st, FACET_OK);
    return tok;
}

typedef struct split {
    const char *text;
    int id; /* -1 = not an added token */
} split;

/* extract_and_normalize: raw-text tokens, then the normalizer, then normalized tokens. */
static void check(const facet_tokenizer *tok, const char *text, const split *want, size_t n_want) {
    facet_error err;
    tok_piece *raw, *sub;
    size_t nraw, nsub, got = 0;
    assert_int_equal(tok_added_split(tok, &tok->trie_raw, text, strlen(text), &raw, &nraw, &err), FACET_OK);
    for (size_t i = 0; i < nraw; i++) {
        if (raw[i].id >= 0) {
            assert_true(got < n_want);
            assert_int_equal(raw[i].id, want[got].id);
            assert_int_equal(raw[i].end - raw[i].start, strlen(want[got].text));
            assert_memory_equal(text + raw[i].start, want[got].text, strlen(want[got].text));
            got++;
            continue;
        }
        facet_str norm = {0};
        assert_int_equal(tok_normalize(tok->normalizer, text + raw[i].start, raw[i].end - raw[i].start, &norm, &err),
                         FACET_OK);
        assert_int_equal(tok_added_split(tok, &tok->trie_norm, norm.data, norm.len, &sub, &nsub, &err), FACET_OK);
        for (size_t k = 0; k < nsub; k++, got++) {
            assert_true(got < n_want);
            size_t len = sub[k].end - sub[k].start;
            if (sub[k].id != want[got].id || len != strlen(want[got].text) ||
                memcmp(norm.data + sub[k].start, want[got].text, len))
                fprintf(stderr, "split %zu: got [%.*s] id %d, want [%s] id %d\n", got, (int)len, norm.data + sub[k].start,
                        sub[k].id, want[got].text, want[got].id);
            assert_int_equal(sub[k].id, want[got].id);
            assert_int_equal(len, strlen(want[got].text));
            assert_memory_equal(norm.data + sub[k].start, want[got].text, len);
        }
        free(sub);
        facet_str_free(&norm);
    }
    assert_int_equal(got, n_want);
    free(raw);
}

#define T(content, id, sw, l, r, norm, special)                                                              \
    "{\"id\": " #id ", \"content\": \"" content "\", \"single_word\": " #sw ", \"lstrip\": " #l ", \"rstrip\": " #r \
    ", \"normalized\": " #norm ", \"special\": " #special "}"

static void test_options_use_cases(void **state) {
    (void)state;
    facet_tokenizer *tok = make("[" T("my", 10, false, true, true, true, false) "," T("name", 11, false, false, false, true, false)
                                "," T("ony", 12, true, false, false, true, false) "," T("[CLS]", 13, false, false, false, false, true)
                                "," T("[SEP]", 14, false, false, false, false, true) "]");
    static const split want[] = {{"[CLS]", 13}, {" my ", 10}, {"name", 11}, {" is anthony ", -1}, {"[SEP]", 14}};
    check(tok, "[CLS] My name is Anthony [SEP]", want, 5);
    facet_tokenizer_free(tok);
}

static void test_single_word(void **state) {
    (void)state;
    facet_tokenizer *tok = make("[" T("<mask>", 10, true, false, false, true, false) "]");
    static const split want[] = {{"<mask>", 10}, {" my name ", -1}, {"<mask>", 10}, {" a<mask> <mask>ony ", -1}, {"<mask>", 10}};
    check(tok, "<mask> My name <mask> A<mask> <mask>ony <mask>", want, 5);
    /* punctuation and dashes are not word characters; a combining mark is */
    static const split want2[] = {{"<mask>", 10}, {", ", -1}, {"<mask>", 10}, {"- \xE2\x97\x8C\xCC\xB0<mask>", -1}};
    check(tok, "<mask>, <mask>- \xE2\x97\x8C\xCC\xB0<mask>", want2, 4);
    facet_tokenizer_free(tok);
}

static void test_lstrip_rstrip_unicode_space(void **state) {
    (void)state;
    facet_tokenizer *tok = make("[" T("<mask>", 10, true, true, true, true, false) "]");
    static const split want[] = {{"hi", -1}, {" <mask> ", 10}, {"there", -1}, {"\t<mask>\t", 10}, {"<mask>\xE2\x80\x80", 10}};
    check(tok, "Hi <mask> there\t<mask>\t<mask>\xE2\x80\x80", want, 5);
    facet_tokenizer_free(tok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_use_cases),
        cmocka_unit_test(test_single_word),
        cmocka_unit_test(test_lstrip_rstrip_unicode_space),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
