/*
 * fuzz_tokenizer_encode.c — libFuzzer target: encode arbitrary bytes with the bundled
 * tokenizer (models/stories260k). Invalid UTF-8 must be FACET_E_UTF8; valid input must
 * encode, decode back to the input (SentencePiece BPE with byte fallback is lossless
 * here except for U+2581, which decodes to a space), and stream-decode to the same text.
 * The input bytes read as ids are decoded too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

static facet_tokenizer *tok;

static void stream_check(const int32_t *ids, size_t n, int skip) {
    facet_error err;
    char *whole;
    size_t wl;
    if (facet_detokenize(tok, ids, n, skip, &whole, &wl, &err) != FACET_OK) __builtin_trap();
    facet_detok_stream *s;
    if (facet_detok_stream_create(tok, skip, &s, &err) != FACET_OK) __builtin_trap();
    facet_str acc = {0};
    const char *piece;
    size_t pl;
    for (size_t i = 0; i <= n; i++) {
        facet_status st = i < n ? facet_detok_stream_push(s, ids[i], &piece, &pl, &err)
                                : facet_detok_stream_flush(s, &piece, &pl, &err);
        if (st != FACET_OK) __builtin_trap();
        facet_str_append(&acc, piece, pl);
    }
    if (acc.len != wl || (wl && memcmp(acc.data, whole, wl))) __builtin_trap();
    facet_str_free(&acc);
    facet_detok_stream_free(s);
    free(whole);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    facet_error err;
    if (!tok && facet_tokenizer_load(FACET_BUNDLED_MODEL, &tok, &err) != FACET_OK) __builtin_trap();
    const char *text = (const char *)data;
    int32_t *ids;
    size_t n;
    facet_status st = facet_tokenize(tok, text, size, 0, &ids, &n, &err);
    int valid = tok_utf8_invalid_at(text, size) == size;
    if (!valid) {
        if (st != FACET_E_UTF8) __builtin_trap();
    } else {
        if (st != FACET_OK) __builtin_trap();
        char *out;
        size_t len;
        if (facet_detokenize(tok, ids, n, 1, &out, &len, &err) != FACET_OK) __builtin_trap();
        /* expected: the input with U+2581 as a space and added-token literals removed */
        int plain = !memmem(text, size, "\xE2\x96\x81", 3) && !memmem(text, size, "<s>", 3) &&
                    !memmem(text, size, "</s>", 4) && !memmem(text, size, "<unk>", 5);
        if (plain && (len != size || memcmp(out, text, size))) __builtin_trap();
        free(out);
        stream_check(ids, n, 0);
        stream_check(ids, n, 1);
        free(ids);
    }
    /* the bytes as ids (in range) */
    size_t k = size / 2;
    int32_t *rid = malloc((k ? k : 1) * sizeof *rid);
    for (size_t i = 0; i < k; i++) rid[i] = (int32_t)((data[2 * i] | data[2 * i + 1] << 8) % facet_tokenizer_vocab_size(tok));
    stream_check(rid, k, 0);
    stream_check(rid, k, 1);
    free(rid);
    return 0;
}
