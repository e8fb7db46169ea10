/*
 * fuzz_tokenizer_load.c — libFuzzer target: tokenizer.json (and, after a NUL byte in
 * the input, tokenizer_config.json) from arbitrary bytes. A tokenizer that loads must
 * encode and decode a fixed text without error other than a typed one, and streaming
 * decode must equal whole decode.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *json = (const char *)data;
    const uint8_t *nul = memchr(data, 0, size);
    size_t jlen = nul ? (size_t)(nul - data) : size;
    const char *cfg = nul ? (const char *)nul + 1 : NULL;
    size_t clen = nul ? size - jlen - 1 : 0;
    facet_tokenizer *tok = NULL;
    facet_error err;
    if (tok_load_from_memory(json, jlen, cfg, clen, "fuzz.json", &tok, &err) != FACET_OK) return 0;
    static const char text[] = "Hello, world! 日本語 <s> 12345 \t\r\n  x\xF0\x9F\x98\x80";
    int32_t *ids;
    size_t n;
    if (facet_tokenize(tok, text, sizeof text - 1, 1, &ids, &n, &err) == FACET_OK) {
        char *out;
        size_t len;
        if (facet_detokenize(tok, ids, n, 0, &out, &len, &err) == FACET_OK) {
            facet_detok_stream *s;
            if (facet_detok_stream_create(tok, 0, &s, &err) == FACET_OK) {
                facet_str acc = {0};
                const char *piece;
                size_t pl;
                int ok = 1;
                for (size_t i = 0; i < n && ok; i++) {
                    ok = facet_detok_stream_push(s, ids[i], &piece, &pl, &err) == FACET_OK;
                    if (ok) facet_str_append(&acc, piece, pl);
                }
                if (ok && facet_detok_stream_flush(s, &piece, &pl, &err) == FACET_OK) {
                    facet_str_append(&acc, piece, pl);
                    if (acc.len != len || (len && memcmp(acc.data, out, len))) __builtin_trap();
                }
                facet_str_free(&acc);
                facet_detok_stream_free(s);
            }
            free(out);
        }
        free(ids);
    }
    facet_tokenizer_free(tok);
    return 0;
}
