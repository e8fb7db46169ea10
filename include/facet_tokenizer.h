/*
 * facet_tokenizer.h — Hugging Face tokenizer.json, natively: encode text to token ids
 * and decode ids to text exactly as the `tokenizers` library (and transformers' rules on
 * top of it) does. Included by facet.h; see there for the error conventions.
 *
 * Semantics follow `tokenizers` (Rust) TokenizerImpl::encode / decode and transformers
 * v4 PreTrainedTokenizerFast (AutoTokenizer) for what tokenizer_config.json changes.
 * Supported: models BPE (byte-level and SentencePiece-style with byte_fallback; merges
 * as "a b" strings or pairs; ignore_merges, continuing_subword_prefix,
 * end_of_word_suffix, fuse_unk, unk_token) and WordPiece (BERT); normalizers Sequence,
 * NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace, Prepend, Append,
 * BertNormalizer, Nmt, ByteLevel; pre-tokenizers Sequence,
 * ByteLevel, Split, Metaspace, Digits, Punctuation, Whitespace, WhitespaceSplit,
 * BertPreTokenizer, CharDelimiterSplit; added tokens (special or not, single_word,
 * lstrip, rstrip, normalized; leftmost-longest match); post-processors
 * TemplateProcessing, ByteLevel, RobertaProcessing, BertProcessing, Sequence; decoders
 * ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, WordPiece, BPEDecoder, CTC,
 * Sequence. From tokenizer_config.json: add_bos_token / add_eos_token for
 * LlamaTokenizer(Fast) and GemmaTokenizer(Fast), clean_up_tokenization_spaces,
 * split_special_tokens (`legacy` changes nothing once tokenizer.json exists).
 * GGUF metadata (tokenizer.ggml.*): see facet_tokenizer_load.
 * Refused with FACET_E_UNSUPPORTED naming the type: models Unigram and WordLevel;
 * normalizer Precompiled; pre-tokenizer UnicodeScripts; BPE dropout;
 * a Llama-class config with add_prefix_space (transformers rebuilds that tokenizer from
 * tokenizer.model).
 *
 * Regular expressions run on PCRE2 (UTF + Unicode properties, JIT) where `tokenizers`
 * uses Oniguruma; the patterns real tokenizers use behave the same in both.
 *
 * Threads: a loaded tokenizer is read-only except for an internal word cache under a
 * lock; facet_tokenize / facet_detokenize may run on one tokenizer from several threads
 * at once. A detok stream belongs to one thread at a time.
 */
#ifndef FACET_TOKENIZER_H
#define FACET_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "facet_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct facet_tokenizer facet_tokenizer;

/*
 * Load the tokenizer of folder `dir`: tokenizer.json plus, when present,
 * tokenizer_config.json (add_bos_token / add_eos_token, clean_up_tokenization_spaces,
 * as transformers reads them). Without a tokenizer.json, `dir` may be a GGUF model (a
 * .gguf file, any part of a split file, or a folder holding one): the tokenizer is
 * built from its tokenizer.ggml.* metadata as llama.cpp's llama-vocab.cpp reads it
 * (models "llama" = SentencePiece, "gpt2" = byte-level BPE with the pre-tokenizer
 * named by tokenizer.ggml.pre, "bert" = WordPiece; docs/SUPPORT.md lists the names);
 * a folder holding both prefers tokenizer.json. A GGUF tokenizer encodes as
 * llama_tokenize (add_special = BOS/EOS per tokenizer.ggml.add_bos_token /
 * add_eos_token; special-token text parsed unless facet_tokenizer_set_split_special)
 * and decodes with the SentencePiece, ByteLevel or WordPiece rules. On success *out is owned by the caller and released by
 * facet_tokenizer_free. Errors: FACET_E_IO (no tokenizer.json), FACET_E_UNSUPPORTED (only a
 * tiktoken.model or tokenizer.model, see facet_tokenizer_unread), FACET_E_PARSE (not
 * JSON; the message names file, line and column), FACET_E_FORMAT (a field of the wrong
 * type, naming its JSON path), FACET_E_UNSUPPORTED (a model/normalizer/pre-tokenizer/
 * decoder type not implemented, named).
 */
facet_status facet_tokenizer_load(const char *dir, facet_tokenizer **out, facet_error *err);

/* Nonzero when facet_tokenizer_load(path) has a tokenizer to read: `path` is a folder
 * holding tokenizer.json, or a GGUF model (a .gguf file, a split part, or a folder
 * holding one) whose metadata has tokenizer.ggml.model. A GGUF file that cannot be
 * parsed counts as having one, so that loading it reports the error. */
int facet_tokenizer_present(const char *path);

/* FACET_OK when `dir` holds no tokenizer file facet leaves unread; FACET_E_UNSUPPORTED,
 * the message naming the file, when it holds tiktoken.model (a tiktoken BPE vocabulary,
 * as Kimi K2 ships with tokenization_kimi.py) or tokenizer.model (tiktoken ranks, as
 * GLM-4 ships, or a SentencePiece model, as ChatGLM3 and InternLM2 ship with their own
 * tokenization code; the message says which) and no tokenizer.json: its text cannot be
 * tokenized here (token ids still run). facet_tokenizer_load returns the same error for
 * such a folder; `facet run` / `facet chat` report it where they would need the text. */
facet_status facet_tokenizer_unread(const char *dir, facet_error *err);

/* Release a tokenizer. NULL is accepted. */
void facet_tokenizer_free(facet_tokenizer *tok);

/*
 * Encode `len` bytes of UTF-8 `text`. add_special != 0 applies the post-processor's
 * special tokens (like tokenizer.encode(text) in Hugging Face); 0 is
 * add_special_tokens=False. *ids is malloc'd (free with free()), *n_ids its length.
 * Errors: FACET_E_UTF8 (invalid UTF-8; the message names the byte offset),
 * FACET_E_NOMEM.
 */
facet_status facet_tokenize(const facet_tokenizer *tok, const char *text, size_t len, int add_special,
                   int32_t **ids, size_t *n_ids, facet_error *err);

/*
 * Decode ids to text as tokenizer.decode(ids, skip_special_tokens=skip_special). *text
 * is malloc'd and NUL-terminated (free with free()); *len excludes the NUL. A negative
 * id is FACET_E_INVALID_ARGUMENT; an id the tokenizer has no token for (a model's
 * embedding rows past the tokenizer's vocabulary, e.g. Qwen's 151936 vs 151665) decodes
 * to nothing, as the `tokenizers` library drops it.
 */
facet_status facet_detokenize(const facet_tokenizer *tok, const int32_t *ids, size_t n,
                     int skip_special, char **text, size_t *len, facet_error *err);

/* Whether special-token text in the input is matched as the special token (the
 * default: as transformers and llama.cpp's parse_special = true) or tokenized as plain
 * text (split != 0: tokenizer_config.json's split_special_tokens = true, llama.cpp's
 * parse_special = false; a GGUF vocabulary's user-defined tokens are still matched,
 * as llama.cpp matches them). Call before the tokenizer is shared between threads. */
void facet_tokenizer_set_split_special(facet_tokenizer *tok, int split);

/* Number of token ids the tokenizer defines (vocab plus added tokens; the highest id
 * plus one). */
int facet_tokenizer_vocab_size(const facet_tokenizer *tok);

/* The id of token string `token` (vocab or added token), or -1. */
int32_t facet_tokenizer_token_to_id(const facet_tokenizer *tok, const char *token);

/* The token string of `id` as stored in tokenizer.json, or NULL. Owned by `tok`. */
const char *facet_tokenizer_id_to_token(const facet_tokenizer *tok, int32_t id);

/* Nonzero when `id` is a special added token. */
int facet_tokenizer_is_special(const facet_tokenizer *tok, int32_t id);

/*
 * Streaming detokenization: ids arrive one at a time; each push returns the text that
 * became final (complete UTF-8 characters only, never half a character). The text of
 * all pushes followed by flush equals facet_detokenize of all the ids (with the same
 * skip_special), byte for byte. Text that a later id can still change is held back: an
 * unfinished UTF-8 sequence, an unfinished <0xHH> byte group, a trailing " " while
 * clean_up_tokenization_spaces may turn " ." into ".". Cost per push: O(1) for the
 * ByteLevel and SentencePiece (Replace/ByteFallback/Fuse/Strip) decoders, O(ids so far)
 * for other decoder chains.
 */
typedef struct facet_detok_stream facet_detok_stream;

/* Create a stream over `tok` (borrowed). */
facet_status facet_detok_stream_create(const facet_tokenizer *tok, int skip_special,
                              facet_detok_stream **out, facet_error *err);

/* Push one id. *piece points to the newly final text (NUL-terminated, may be empty),
 * owned by the stream and valid until the next call on it; *len is its length.
 * Errors: FACET_E_NOMEM (its buffers' errors are sticky, util/str.h), or the decoder's;
 * after an error on push, flush or mark the stream's text is incomplete: free it. */
facet_status facet_detok_stream_push(facet_detok_stream *s, int32_t id, const char **piece,
                            size_t *len, facet_error *err);

/* End of stream: *piece is whatever was held back (e.g. an incomplete UTF-8 sequence
 * rendered as the decoder renders it). */
facet_status facet_detok_stream_flush(facet_detok_stream *s, const char **piece, size_t *len,
                             facet_error *err);

/* Mark the ids pushed so far as the prompt. *piece is the prompt's text not given out yet
 * (what it holds back: an unfinished byte group, a trailing space clean-up may remove);
 * echo it to show the whole prompt. Later pieces leave that text out, so the pieces after
 * the mark are the completion: decode(prompt + ids after the mark) with decode(prompt)
 * cut from its start, up to the first character where the two differ (a later id can
 * complete a character the prompt left unfinished, or remove its trailing space).
 * *piece is owned by the stream, valid until the next call on it. */
facet_status facet_detok_stream_mark(facet_detok_stream *s, const char **piece, size_t *len,
                                     facet_error *err);

/* Release a stream. NULL is accepted. */
void facet_detok_stream_free(facet_detok_stream *s);

#ifdef __cplusplus
}
#endif

#endif /* FACET_TOKENIZER_H */
