/* grammar_mask_bench.c — the cost of constrained decoding's token mask per step
 * (facet_grammar.h) over a real vocabulary: build the token trie once, then walk a
 * grammar for N steps, each step computing the mask and taking a pseudo-random allowed
 * token (EOS excluded), restarting the grammar when it finishes. Reports the trie build
 * time and the mask time per step: mean, and the worst step (a state first seen, whose
 * mask is not cached).
 *
 *   grammar_mask_bench TOKENIZER_DIR (--json-schema FILE | --grammar FILE) [STEPS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "facet_grammar.h"
#include "facet_tokenizer.h"
#include "util/fs.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: grammar_mask_bench TOKENIZER_DIR (--json-schema FILE | --grammar FILE) [STEPS]\n");
        return 2;
    }
    int steps = argc > 4 ? atoi(argv[4]) : 2000;
    facet_error err = {0};
    facet_tokenizer *tok = NULL;
    char *text = NULL, *gbnf = NULL;
    size_t len = 0;
    facet_grammar *g = NULL;
    facet_grammar_vocab *v = NULL;
    if (facet_tokenizer_load(argv[1], &tok, &err) != FACET_OK ||
        facet_read_file(argv[3], 1 << 24, &text, &len, &err) != FACET_OK ||
        (!strcmp(argv[2], "--json-schema") &&
         facet_json_schema_to_gbnf(text, len, &gbnf, &err) != FACET_OK) ||
        facet_grammar_parse(gbnf ? gbnf : text, gbnf ? strlen(gbnf) : len, &g, &err) != FACET_OK) {
        fprintf(stderr, "grammar_mask_bench: %s\n", err.message);
        return 1;
    }
    int n_vocab = facet_tokenizer_vocab_size(tok);
    double t0 = now();
    if (facet_grammar_vocab_create(tok, n_vocab, &v, &err) != FACET_OK) {
        fprintf(stderr, "grammar_mask_bench: %s\n", err.message);
        return 1;
    }
    double t_build = now() - t0;
    uint8_t *allowed = malloc((size_t)n_vocab);
    facet_grammar_matcher *m = NULL;
    facet_grammar_matcher_create(g, &m, &err);
    uint64_t x = 88172645463325252ull;
    double total = 0, worst = 0;
    long n_allowed = 0;
    int docs = 0;
    for (int s = 0; s < steps; s++) {
        double a = now();
        int n = facet_grammar_matcher_mask(m, v, NULL, 0, allowed);
        double dt = now() - a;
        total += dt;
        if (dt > worst) worst = dt;
        n_allowed += n;
        if (n <= 0 || facet_grammar_matcher_finished(m)) { /* a document done: again */
            facet_grammar_matcher_free(m);
            facet_grammar_matcher_create(g, &m, &err);
            docs++;
            continue;
        }
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int k = (int)(x % (uint64_t)n), id = 0;
        for (; id < n_vocab; id++)
            if (allowed[id] && k-- == 0) break;
        facet_grammar_matcher_accept_token(m, v, id);
    }
    printf("vocab %d: trie built in %.1f ms; %d steps (%d documents): mask %.3f ms/step mean, "
           "%.2f ms worst; %.0f tokens allowed per step on average\n",
           n_vocab, t_build * 1e3, steps, docs, total / steps * 1e3, worst * 1e3,
           (double)n_allowed / steps);
    facet_grammar_matcher_free(m);
    facet_grammar_vocab_free(v);
    facet_grammar_free(g);
    facet_tokenizer_free(tok);
    free(allowed);
    free(text);
    free(gbnf);
    return 0;
}
