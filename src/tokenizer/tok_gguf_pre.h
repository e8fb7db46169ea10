/* tok_gguf_pre.h — the table of GGUF pre-tokenizer names (tokenizer.ggml.pre) for
 * byte-level BPE vocabularies, see tok_gguf_pre.c. */
#ifndef FACET_TOK_GGUF_PRE_H
#define FACET_TOK_GGUF_PRE_H

#include <stddef.h>

typedef struct tok_gguf_pre {
    const char *name;
    const char *const *regex; /* PCRE2 sources, NULL-terminated, applied in order      */
    int ignore_merges;        /* a pre-tokenized word that is a token is taken whole   */
    int clean_spaces;         /* decoding applies clean_up_tokenization_spaces         */
    int add_bos;              /* BOS added when tokenizer.ggml.add_bos_token is absent */
} tok_gguf_pre;

/* The entry named name[0..len), or NULL. */
const tok_gguf_pre *tok_gguf_pre_find(const char *name, size_t len);
/* The supported names, comma-separated, into buf (truncated to cap). */
void tok_gguf_pre_names(char *buf, size_t cap);

#endif
