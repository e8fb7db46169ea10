/*
 * fuzz_grammar.c — libFuzzer target for the grammar engine (facet_grammar.h).
 *
 * The input is split at the first NUL byte: before it, GBNF text (or, when it starts
 * with '{', a JSON schema compiled to GBNF first); after it, text fed to a matcher of
 * whatever grammar was accepted, byte by byte, checking completeness as it goes. Every
 * error must come back as a status; the matcher must not crash or loop on any grammar
 * the parser admits. Seeds: tests/fuzz/seeds/fuzz_grammar/.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "facet_grammar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t n1 = nul ? (size_t)(nul - data) : size;
    facet_error err;
    char *gbnf = NULL;
    const char *text = (const char *)data;
    size_t len = n1;
    if (n1 > 0 && data[0] == '{') {
        if (facet_json_schema_to_gbnf((const char *)data, n1, &gbnf, &err) != FACET_OK) return 0;
        text = gbnf;
        len = strlen(gbnf);
    }
    facet_grammar *g = NULL;
    if (facet_grammar_parse(text, len, &g, &err) == FACET_OK && nul) {
        facet_grammar_matcher *m = NULL;
        if (facet_grammar_matcher_create(g, &m, &err) == FACET_OK) {
            const char *in = (const char *)nul + 1;
            size_t n = size - n1 - 1;
            for (size_t i = 0; i < n && i < 4096; i++) {
                if (facet_grammar_matcher_accept(m, in + i, 1) <= 0) break;
                (void)facet_grammar_matcher_complete(m);
            }
            facet_grammar_matcher_free(m);
        }
    }
    facet_grammar_free(g);
    free(gbnf);
    return 0;
}
