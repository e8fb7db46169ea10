/*
 * test_tokenizer_components.c — normalizers, pre-tokenizers and decoders one by one,
 * on the examples of the reference implementation's own unit tests (Hugging Face
 * `tokenizers`, the tests in tokenizers/src/normalizers, pre_tokenizers and decoders): the
 * expected splits and strings below are the values those tests assert. The corpus
 * vectors cover the components real tokenizers use; these cover the others.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "tokenizer/tokenizer_internal.h"

/* Pre-tokenize `text` with the pre-tokenizer described by JSON `spec` and compare the
 * words (ByteLevel words shown in their mapped characters) with want[] (NULL-ended). */
static void pretok_case(const char *spec, const char *text, const char *const *want) {
    json_error_t je;
    json_t *j = json_loads(spec, 0, &je);
    assert_non_null(j);
    tok_pretok *p = NULL;
    facet_error err;
    assert_int_equal(tok_pretok_parse(j, "pre_tokenizer", &p, &err), FACET_OK);
    tok_words in = {0}, out = {0};
    assert_int_equal(tok_words_push(&in, text, strlen(text), 1), 0);
    assert_int_equal(tok_pretokenize(p, &in, &out, &err), FACET_OK);
    assert_int_equal(tok_words_materialize(&out), 0);
    size_t n = 0;
    while (want[n]) n++;
    if (out.n != n) {
        fprintf(stderr, "%s on \"%s\": %zu words, want %zu\n", spec, text, out.n, n);
        for (size_t i = 0; i < out.n; i++) fprintf(stderr, "  [%.*s]\n", (int)out.spans[i].len, out.text.data + out.spans[i].off);
    }
    assert_int_equal(out.n, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(out.spans[i].len, strlen(want[i]));
        assert_memory_equal(out.text.data + out.spans[i].off, want[i], strlen(want[i]));
    }
    tok_words_free(&in);
    tok_words_free(&out);
    tok_pretok_free(p);
    json_decref(j);
}

static void test_pretokenizers(void **state) {
    (void)state;
    static const char *const digits[] = {"Hey ", "123", " friend!", NULL};
    pretok_case("{\"type\": \"Digits\", \"individual_digits\": false}", "Hey 123 friend!", digits);
    static const char *const digits1[] = {"Hey ", "1", "2", "3", " friend!", NULL};
    pretok_case("{\"type\": \"Digits\", \"individual_digits\": true}", "Hey 123 friend!", digits1);
    static const char *const punct[] = {"Hey friend", "!", "     How are you", "?", "!", "?", NULL};
    pretok_case("{\"type\": \"Punctuation\"}", "Hey friend!     How are you?!?", punct);
    static const char *const bert[] = {"Hey", "friend", "!", "How", "are", "you", "?", "!", "?", NULL};
    pretok_case("{\"type\": \"BertPreTokenizer\"}", "Hey friend!     How are you?!?", bert);
    static const char *const ws1[] = {"Hey", "man", "!", NULL};
    pretok_case("{\"type\": \"Whitespace\"}", "Hey man!", ws1);
    static const char *const ws2[] = {"How", "are", "you", "doing", "?", NULL};
    pretok_case("{\"type\": \"Whitespace\"}", "How are you doing?", ws2);
    static const char *const none[] = {NULL};
    pretok_case("{\"type\": \"Whitespace\"}", "\n", none);
    static const char *const wss1[] = {"Hey", "man!", NULL};
    pretok_case("{\"type\": \"WhitespaceSplit\"}", "Hey man!", wss1);
    static const char *const wss2[] = {"Hey,", "man,", "Good?", NULL};
    pretok_case("{\"type\": \"WhitespaceSplit\"}", "Hey, man, Good?", wss2);
    static const char *const bl[] = {"Hello", "\xC4\xA0my", "\xC4\xA0" "friend", ",", "\xC4\xA0how", "\xC4\xA0is",
                                     "\xC4\xA0your", "\xC4\xA0" "day", "\xC4\xA0going", "?", NULL};
    pretok_case("{\"type\": \"ByteLevel\", \"add_prefix_space\": false}", "Hello my friend, how is your day going?", bl);
    static const char *const blp[] = {"\xC4\xA0Hello", "\xC4\xA0my", "\xC4\xA0" "friend", ",", "\xC4\xA0how",
                                      "\xC4\xA0is", "\xC4\xA0your", "\xC4\xA0" "day", "\xC4\xA0going", "?", NULL};
    pretok_case("{\"type\": \"ByteLevel\", \"add_prefix_space\": true}", " Hello my friend, how is your day going?", blp);
    pretok_case("{\"type\": \"ByteLevel\", \"add_prefix_space\": true}", "Hello my friend, how is your day going?", blp);
    static const char *const blnr[] = {"\xC4\xA0Hello\xC4\xA0my\xC4\xA0" "friend,\xC4\xA0how\xC4\xA0is\xC4\xA0your\xC4\xA0"
                                       "day\xC4\xA0going?", NULL};
    pretok_case("{\"type\": \"ByteLevel\", \"use_regex\": false}", "Hello my friend, how is your day going?", blnr);
    static const char *const blnl[] = {"Hello", "\xC4\xA0there", "\xC4\x8A", "Hello", "\xC4\xA0there", NULL};
    pretok_case("{\"type\": \"ByteLevel\", \"add_prefix_space\": false}", "Hello there\nHello there", blnl);
    static const char *const blws[] = {"Hello", "\xC4\xA0there", "\xC4\xA0\xC4\xA0\xC4\xA0\xC4\xA0\xC4\xA0\xC4\xA0",
                                       "\xC4\xA0" "dear", NULL};
    pretok_case("{\"type\": \"ByteLevel\", \"add_prefix_space\": false}", "Hello there       dear", blws);
    static const char *const ms[] = {"\xE2\x96\x81Hey", "\xE2\x96\x81" "friend!", NULL};
    pretok_case("{\"type\": \"Metaspace\", \"replacement\": \"\\u2581\", \"add_prefix_space\": true}", "Hey friend!", ms);
    static const char *const ms2[] = {"\xE2\x96\x81Hey", "\xE2\x96\x81", "\xE2\x96\x81", "\xE2\x96\x81" "friend!", NULL};
    pretok_case("{\"type\": \"Metaspace\", \"replacement\": \"\\u2581\", \"prepend_scheme\": \"always\"}", "Hey   friend!", ms2);
}

/* Decode the space-separated tokens of `tokens` with the decoder described by JSON. */
static void decode_case(const char *spec, const char *tokens, char sep, const char *want) {
    json_error_t je;
    json_t *j = json_loads(spec, 0, &je);
    assert_non_null(j);
    tok_decoder *d = NULL;
    facet_error err;
    assert_int_equal(tok_decoder_parse(j, "decoder", &d, &err), FACET_OK);
    tok_strlist l = {0};
    for (const char *p = tokens;;) {
        const char *e = strchr(p, sep);
        size_t n = e ? (size_t)(e - p) : strlen(p);
        assert_int_equal(tok_strlist_push(&l, p, n), 0);
        if (!e) break;
        p = e + 1;
    }
    facet_str out = {0};
    assert_int_equal(tok_decode_chain(d, &l, &out, &err), FACET_OK);
    facet_str_append(&out, "", 0);
    if (strcmp(out.data, want)) fprintf(stderr, "%s: got \"%s\", want \"%s\"\n", spec, out.data, want);
    assert_string_equal(out.data, want);
    facet_str_free(&out);
    tok_strlist_free(&l);
    tok_decoder_free(d);
    json_decref(j);
}

static void test_decoders(void **state) {
    (void)state;
    decode_case("{\"type\": \"Strip\", \"content\": \"H\", \"start\": 1, \"stop\": 0}", "Hey| friend!|HHH", '|', "ey friend!HH");
    decode_case("{\"type\": \"Strip\", \"content\": \"y\", \"start\": 0, \"stop\": 1}", "Hey| friend!", '|', "He friend!");
    decode_case("{\"type\": \"CTC\"}", "<pad> <pad> h e e l l <pad> l o o o <pad>", ' ', "hello");
    decode_case("{\"type\": \"CTC\"}",
                "<pad> <pad> h e e l l <pad> l o o o <pad> <pad> | <pad> w o o o r <pad> <pad> l l d <pad> <pad> <pad> <pad>",
                ' ', "hello world");
    decode_case("{\"type\": \"WordPiece\", \"prefix\": \"##\", \"cleanup\": false}", "##uelo Ara ##új ##o No ##guera", ' ',
                "##uelo Araújo Noguera");
    decode_case("{\"type\": \"Metaspace\", \"replacement\": \"\\u2581\", \"add_prefix_space\": true}",
                "\xE2\x96\x81Hey \xE2\x96\x81" "friend!", ' ', "Hey friend!");
    decode_case("{\"type\": \"ByteLevel\"}",
                "Hello \xC4\xA0my \xC4\xA0" "friend , \xC4\xA0how \xC4\xA0is \xC4\xA0your \xC4\xA0" "day \xC4\xA0going ?", ' ',
                "Hello my friend, how is your day going?");
    decode_case("{\"type\": \"ByteFallback\"}", "<0x61>|<0xE6>|<0x97>|<0xA5>|b|<0xFF>|<0x61>", '|', "a日b\xEF\xBF\xBD\xEF\xBF\xBD");
    decode_case("{\"type\": \"BPEDecoder\", \"suffix\": \"</w>\"}", "My</w> na me</w> is</w> John</w>", ' ', "My name is John");
    decode_case("{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \"\\u2581\"}, "
                "\"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}, {\"type\": \"Strip\", \"content\": \" \", "
                "\"start\": 1, \"stop\": 0}]}",
                "\xE2\x96\x81Hey \xE2\x96\x81" "friend!", ' ', "Hey friend!");
}

static void norm_case(const char *spec, const char *text, const char *want) {
    json_error_t je;
    json_t *j = json_loads(spec, 0, &je);
    assert_non_null(j);
    tok_normalizer *n = NULL;
    facet_error err;
    assert_int_equal(tok_normalizer_parse(j, "normalizer", &n, &err), FACET_OK);
    facet_str out = {0};
    assert_int_equal(tok_normalize(n, text, strlen(text), &out, &err), FACET_OK);
    facet_str_append(&out, "", 0);
    if (strcmp(out.data, want)) fprintf(stderr, "%s: got \"%s\", want \"%s\"\n", spec, out.data, want);
    assert_string_equal(out.data, want);
    facet_str_free(&out);
    tok_normalizer_free(n);
    json_decref(j);
}

static void test_normalizers(void **state) {
    (void)state;
    const char *nfkd_strip = "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFKD\"}, {\"type\": \"StripAccents\"}]}";
    const char *nfkd_strip_lower = "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFKD\"}, {\"type\": \"StripAccents\"}, "
                                   "{\"type\": \"Lowercase\"}]}";
    norm_case(nfkd_strip, "Me llamó", "Me llamo");
    norm_case(nfkd_strip, "这很简单", "这很简单");
    norm_case(nfkd_strip_lower, "ậ…", "a...");
    norm_case(nfkd_strip_lower, "ำน\xE0\xB9\x89ำ3ลำ", "านา3ลา");
    norm_case("{\"type\": \"StripAccents\"}", "e\xCC\x84\xCC\x84\xCC\x84o", "eo");
    norm_case("{\"type\": \"NFKC\"}", "\xEF\xAC\x81", "fi");
    norm_case("{\"type\": \"Append\", \"append\": \"\\u2581\"}", "Hello", "Hello\xE2\x96\x81");
    norm_case("{\"type\": \"Prepend\", \"prepend\": \"\\u2581\"}", "Hello", "\xE2\x96\x81Hello");
    norm_case("{\"type\": \"Strip\", \"strip_left\": true, \"strip_right\": true}", " \t Hi there \n", "Hi there");
    norm_case("{\"type\": \"Strip\", \"strip_left\": false, \"strip_right\": true}", "  Hi  ", "  Hi");
    norm_case("{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"\\\\s+\"}, \"content\": \" \"}", "a \t\n b", "a b");
    norm_case("{\"type\": \"Lowercase\"}", "HeLLo \xC4\xB0", "hello i\xCC\x87"); /* İ -> i + U+0307 */
    norm_case("{\"type\": \"Nmt\"}", "a\x01" "b\tc\xE2\x80\x8B" "d", "ab c d");
    /* BertNormalizer: clean text, Chinese characters padded, accents stripped with lowercase */
    norm_case("{\"type\": \"BertNormalizer\", \"clean_text\": true, \"handle_chinese_chars\": true, \"strip_accents\": null, "
              "\"lowercase\": true}",
              "H\xC3\xA9llo\x01\t野口", "hello  野  口 ");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pretokenizers),
        cmocka_unit_test(test_decoders),
        cmocka_unit_test(test_normalizers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
