/* grammar_opt.c — `facet run --json-schema FILE` / `--grammar FILE`: the file read,
 * compiled (facet_grammar.h) and paired with the vocabulary's token trie. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "facet_grammar.h"
#include "util/fs.h"

int cli_grammar_load(const char *schema_file, const char *grammar_file,
                     const facet_tokenizer *tok, int n_vocab, facet_grammar **g,
                     facet_grammar_vocab **v) {
    *g = NULL;
    *v = NULL;
    if (!schema_file && !grammar_file) return 0;
    if (schema_file && grammar_file) {
        fprintf(stderr, "facet: run: --json-schema and --grammar exclude each other\n");
        return 1;
    }
    const char *path = schema_file ? schema_file : grammar_file;
    if (!tok) {
        fprintf(stderr, "facet: %s: constrained decoding needs the model's tokenizer.json\n", path);
        return 1;
    }
    facet_error err = {0};
    char *text = NULL, *gbnf = NULL;
    size_t len = 0;
    facet_status st = facet_read_file(path, 16u << 20, &text, &len, &err);
    if (st == FACET_OK && schema_file) {
        st = facet_json_schema_to_gbnf(text, len, &gbnf, &err);
        free(text);
        text = gbnf;
        len = gbnf ? strlen(gbnf) : 0;
    }
    if (st == FACET_OK) st = facet_grammar_parse(text, len, g, &err);
    free(text);
    if (st == FACET_OK) st = facet_grammar_vocab_create(tok, n_vocab, v, &err);
    if (st != FACET_OK) {
        facet_grammar_free(*g);
        *g = NULL;
        return cli_fail_at(path, &err);
    }
    return 0;
}
