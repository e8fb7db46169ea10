/*
 * test_tokenizer_oov.c — ids past the tokenizer's vocabulary (a model's extra embedding
 * rows, e.g. Qwen's 151936 vs 151665) decode to nothing, whole and streamed, as the
 * `tokenizers` library's decode drops ids it has no token for; negative ids are errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "facet.h"

#define MODEL_DIR FACET_SOURCE_DIR "/models/stories260k"

static void test_oov_ids_decode_to_nothing(void **state) {
    (void)state;
    facet_error err = {0};
    facet_tokenizer *tok;
    assert_int_equal(facet_tokenizer_load(MODEL_DIR, &tok, &err), FACET_OK);
    assert_int_equal(facet_tokenizer_vocab_size(tok), 512);
    int32_t with[] = {1, 403, 600, 407, 100000, 261, 378};
    int32_t without[] = {1, 403, 407, 261, 378};
    char *a, *b;
    size_t la, lb;
    assert_int_equal(facet_detokenize(tok, with, 7, 1, &a, &la, &err), FACET_OK);
    assert_int_equal(facet_detokenize(tok, without, 5, 1, &b, &lb, &err), FACET_OK);
    assert_string_equal(a, "Once upon a time");
    assert_string_equal(a, b);
    /* streamed one id at a time: the same text */
    facet_detok_stream *s;
    assert_int_equal(facet_detok_stream_create(tok, 1, &s, &err), FACET_OK);
    char out[256] = "";
    for (int i = 0; i < 7; i++) {
        const char *piece;
        size_t len;
        assert_int_equal(facet_detok_stream_push(s, with[i], &piece, &len, &err), FACET_OK);
        strncat(out, piece, len);
    }
    const char *piece;
    size_t len;
    assert_int_equal(facet_detok_stream_flush(s, &piece, &len, &err), FACET_OK);
    strncat(out, piece, len);
    assert_string_equal(out, "Once upon a time");
    /* negative ids are caller errors */
    int32_t neg[] = {1, -3};
    char *c;
    size_t lc;
    assert_int_equal(facet_detokenize(tok, neg, 2, 1, &c, &lc, &err), FACET_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "-3"));
    assert_int_equal(facet_detok_stream_push(s, -1, &piece, &len, &err), FACET_E_INVALID_ARGUMENT);
    facet_detok_stream_free(s);
    free(a);
    free(b);
    facet_tokenizer_free(tok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oov_ids_decode_to_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
