/*
 * fuzz_gguf_tokenizer.c — libFuzzer target: a tokenizer built from fuzzed GGUF metadata.
 *
 * The input bytes are a whole GGUF file (gguf_parse); when it parses, tok_load_gguf
 * builds the tokenizer from its tokenizer.ggml.* keys (every count, id, type, score and
 * merge is untrusted). A tokenizer that loads must encode a fixed set of texts (ASCII,
 * spaces and newlines, accents, CJK, an emoji, special-token text) with and without
 * special tokens and with special text split, give only ids below its vocabulary size,
 * and decode every id it has (and the encoded ids) without error, plain and streamed to
 * the same text. Seeds (tests/fuzz/seeds/fuzz_gguf_tokenizer/, written by
 * tests/fuzz/gguf_vocab_seeds.py): small SentencePiece, byte-level BPE and WordPiece
 * vocabularies with scores, types, merges, special ids and a chat template.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "tokenizer/tokenizer_internal.h"

static const char *const texts[] = {
    "", " ", "Hello world", "  two  spaces\n\nnewlines\ttab", "h\xC3\xA9llo caf\xC3\xA9",
    "\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C", "\xF0\x9F\x98\x80 emoji 123456", "<s>ab</s><|user|>x<unk>",
    "\xE2\x96\x81\xE2\x96\x81 mark", "don't stop 'til 3.14!",
};

static void decode_all(const facet_tokenizer *tok, const int32_t *ids, size_t n) {
    facet_error err;
    for (int skip = 0; skip < 2; skip++) {
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
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_file f;
    facet_error err;
    if (gguf_parse(data, size, "fuzz.gguf", &f, &err) != FACET_OK) return 0;
    facet_tokenizer *tok;
    if (tok_load_gguf(&f, &tok, &err) != FACET_OK) {
        gguf_file_close(&f);
        return 0;
    }
    gguf_file_close(&f); /* the tokenizer keeps no pointer into the file */
    int nv = facet_tokenizer_vocab_size(tok);
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++)
        for (int mode = 0; mode < 3; mode++) {
            facet_tokenizer_set_split_special(tok, mode == 2);
            int32_t *ids;
            size_t n;
            if (facet_tokenize(tok, texts[t], strlen(texts[t]), mode == 0, &ids, &n, &err) != FACET_OK)
                __builtin_trap();
            for (size_t i = 0; i < n; i++)
                if (ids[i] < 0 || ids[i] >= nv) __builtin_trap();
            decode_all(tok, ids, n);
            free(ids);
        }
    int32_t *every = malloc((size_t)nv * sizeof *every);
    if (every) {
        for (int i = 0; i < nv; i++) every[i] = i;
        decode_all(tok, every, (size_t)(nv > 512 ? 512 : nv));
        free(every);
    }
    facet_tokenizer_free(tok);
    return 0;
}
