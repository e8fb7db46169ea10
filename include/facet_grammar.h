/*
 * facet_grammar.h — constrained decoding: a GBNF-style grammar (or a JSON schema compiled
 * to one) restricts, at each step, the tokens the sampler may choose.
 *
 * Grammar text (llama.cpp's GBNF, read as code points of UTF-8 text):
 *
 *     root  ::= "{" ws pair ("," ws pair)* "}"     # a rule: name ::= alternatives
 *     pair  ::= [a-z]+ ":" ws ( "true" | num )      # | alternation, ( ) groups
 *     num   ::= "-"? [0-9]{1,10}                    # ? * + {m} {m,} {m,n} repetition
 *     ws    ::= [ \t\n]{0,4}                        # [..] classes, [^..] negated, . any
 *
 * Literals and classes take the escapes \n \r \t \\ \" \[ \] \- \^ \/ \xHH \uHHHH
 * \UHHHHHHHH. A rule may span lines; it ends where the next `name ::=` begins. The start
 * rule is `root`. Left-recursive rules are refused (the matcher would not terminate).
 *
 * The matcher is a set of pushdown stacks (one per way the text so far can be read),
 * advanced one code point at a time; token masking walks a trie of the vocabulary's byte
 * strings with it, so shared prefixes are checked once, and caches the mask of each stack
 * set it has seen (inside a JSON string every step reaches the same set). Errors follow
 * facet.h.
 */
#ifndef FACET_GRAMMAR_H
#define FACET_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#include "facet_status.h"
#include "facet_tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A compiled grammar: immutable, shareable between threads. */
typedef struct facet_grammar facet_grammar;

/* Parse and compile `len` bytes of GBNF text. Errors: FACET_E_PARSE ("grammar:LINE:COL:
 * expected X, found Y"), FACET_E_FORMAT (an undefined rule, no root rule, a left-
 * recursive rule), FACET_E_LIMIT (a repetition bound over 10000), FACET_E_UTF8,
 * FACET_E_NOMEM. */
facet_status facet_grammar_parse(const char *text, size_t len, facet_grammar **out,
                                 facet_error *err);

/* Compile a JSON schema (JSON text) to GBNF text (*gbnf malloc'd, NUL-terminated).
 * Supported: type (object, array, string, integer, number, boolean, null, or a list of
 * them), properties, required, additionalProperties (false, or a schema when there are
 * no properties), items, minItems, maxItems, minLength, maxLength, enum, const, anyOf,
 * oneOf, allOf with one entry, $ref to #/$defs/.. or #/definitions/.., and annotations
 * (title, description, default, examples, $schema, $id, $comment, strict).
 * `{"type":"object"}` without properties is any JSON object. Objects emit their
 * properties in the schema's order (required ones always, optional ones maybe); no
 * extra properties are produced. Errors: FACET_E_UNSUPPORTED naming the keyword and its
 * JSON pointer ("json_schema: keyword 'pattern' at /properties/a is not supported"),
 * FACET_E_PARSE (not JSON), FACET_E_FORMAT (a bad value, an unresolved $ref),
 * FACET_E_NOMEM. */
facet_status facet_json_schema_to_gbnf(const char *schema, size_t len, char **gbnf,
                                       facet_error *err);

/* The GBNF of any JSON object (`response_format: {"type": "json_object"}`), static. */
const char *facet_grammar_json_object_gbnf(void);

/* Release a grammar. NULL is accepted. */
void facet_grammar_free(facet_grammar *g);

/* The byte strings of a vocabulary's tokens in a trie (special tokens excluded: they
 * are never text the grammar matches). Immutable once built; shareable. */
typedef struct facet_grammar_vocab facet_grammar_vocab;

/* Build the trie of tok's n_vocab ids (ids the tokenizer lacks are never allowed).
 * Errors: FACET_E_NOMEM, the tokenizer's. */
facet_status facet_grammar_vocab_create(const facet_tokenizer *tok, int n_vocab,
                                        facet_grammar_vocab **out, facet_error *err);
void facet_grammar_vocab_free(facet_grammar_vocab *v);

/* One sequence's position in a grammar. Not thread-safe. */
typedef struct facet_grammar_matcher facet_grammar_matcher;

/* A matcher at the start of g (borrowed for the matcher's life). */
facet_status facet_grammar_matcher_create(const facet_grammar *g, facet_grammar_matcher **out,
                                          facet_error *err);
void facet_grammar_matcher_free(facet_grammar_matcher *m);

/* Advance over len bytes of text. Returns 1 when the grammar accepts them (the matcher
 * moved), 0 when it rejects them (the matcher is unchanged), -1 out of memory or a grammar
 * too ambiguous to follow (more than 65536 parse-stack expansions for one code point). */
int facet_grammar_matcher_accept(facet_grammar_matcher *m, const char *bytes, size_t len);

/* 1 when the text so far is a complete sentence of the grammar. */
int facet_grammar_matcher_complete(const facet_grammar_matcher *m);

/* 1 when the text is complete and nothing can follow it. */
int facet_grammar_matcher_finished(const facet_grammar_matcher *m);

/* allowed[id] = 1 for each id of v whose bytes the grammar accepts next, else 0
 * (allowed has v's n_vocab entries); the ids in eos_ids are allowed only when the text
 * is complete. Returns the number of allowed ids, or -1 out of memory. */
int facet_grammar_matcher_mask(facet_grammar_matcher *m, const facet_grammar_vocab *v,
                               const int32_t *eos_ids, int n_eos, uint8_t *allowed);

/* Advance over the bytes of token id of v (see _accept); EOS ids and ids without text
 * accept nothing and return 1. */
int facet_grammar_matcher_accept_token(facet_grammar_matcher *m, const facet_grammar_vocab *v,
                                       int32_t id);

#ifdef __cplusplus
}
#endif

#endif /* FACET_GRAMMAR_H */
