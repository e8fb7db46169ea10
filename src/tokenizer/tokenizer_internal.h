/*
 * tokenizer_internal.h — the data model of a loaded tokenizer.json and the pieces of
 * the encode/decode pipeline shared by the files of src/tokenizer.
 *
 * The pipeline follows Hugging Face `tokenizers` (TokenizerImpl::encode_single_sequence
 * and TokenizerImpl::decode):
 *   raw text -> split out non-normalized added tokens (tok_added.c)
 *            -> normalizer on each remaining piece (tok_normalize.c)
 *            -> split out normalized added tokens (tok_added.c)
 *            -> pre-tokenizer on each remaining piece (tok_pretokenize.c)
 *            -> model on each word (tok_bpe.c)
 *            -> post-processor (tok_post.c)
 *   ids -> token strings -> decoder chain (tok_decode.c) -> clean-up (transformers)
 */
#ifndef FACET_TOKENIZER_INTERNAL_H
#define FACET_TOKENIZER_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "facet_tokenizer.h"
#include "util/str.h"
#include "util/vec.h"

/* Token ids are below this bound (2^22 = 4194304; the largest real vocabularies have
 * about 2.6e5 ids): the id tables are arrays indexed by id. */
#define TOK_MAX_ID 4194304

/* Zeroed memory for large tables: 2 MiB-aligned with transparent huge pages requested
 * (madvise), which cuts the page faults of first touch by 512x; calloc for small
 * sizes. Released with free(). */
void *tok_table_calloc(size_t n, size_t size);

/* Byte buffers are facet_str (util/str.h): NUL-terminated once anything was appended,
 * 0 / -1 from every append. */

/* ---- UTF-8 and Unicode helpers (tok_utf8.c) ---------------------------------------- */
/* Offset of the first invalid byte of `s` (strict UTF-8: no overlongs, no surrogates,
 * at most U+10FFFF), or len when it is valid. */
size_t tok_utf8_invalid_at(const char *s, size_t len);
/* Decode the code point at s[i] (valid UTF-8 assumed); *n gets its byte length. */
int32_t tok_utf8_decode(const char *s, size_t len, size_t i, size_t *n);
/* Length of the UTF-8 sequence beginning with lead byte c (1 for invalid leads). */
size_t tok_utf8_seqlen(unsigned char c);
/* Encode code point cp into out (4 bytes room); returns its length. */
size_t tok_utf8_encode(int32_t cp, char *out);
/* Append `len` bytes as Rust's String::from_utf8_lossy does (each maximal invalid
 * subsequence becomes U+FFFD). */
int tok_utf8_lossy_append(facet_str *out, const unsigned char *s, size_t len);
/* The streaming form of tok_utf8_lossy_append: converts the longest prefix whose
 * conversion no further byte can change (everything but a valid-so-far sequence cut
 * short by the end) and returns its length, or (size_t)-1 when out of memory. */
size_t tok_utf8_lossy_decided(facet_str *out, const unsigned char *s, size_t len);
/* Rust char::is_whitespace (the White_Space property). */
int tok_is_whitespace(int32_t cp);
/* Unicode punctuation (P*) or ASCII punctuation, as `tokenizers` is_punc. */
int tok_is_punctuation(int32_t cp);

/* ---- string -> int32 hash map (tok_map.c) ------------------------------------------ */
typedef struct tok_strmap {
    /* open addressing, linear probing; a lookup touches one slot line and the key */
    struct tok_strmap_slot {
        uint32_t hash;
        uint32_t off; /* 1 + offset of the key in keys, 0 = empty slot */
        uint32_t len;
        int32_t value;
    } *slots;
    size_t cap, n; /* cap is a power of two */
    facet_str keys;  /* the key bytes, each followed by a NUL */
} tok_strmap;

uint32_t tok_hash(const char *s, size_t len);
/* Size the map for about n entries and key_bytes of keys (an optional hint). */
int tok_strmap_reserve(tok_strmap *m, size_t n, size_t key_bytes);
/* Insert or overwrite key -> value. 0 ok, -1 no memory. */
int tok_strmap_put(tok_strmap *m, const char *key, size_t len, int32_t value);
/* The value of key, or -1 when absent. */
int32_t tok_strmap_get(const tok_strmap *m, const char *key, size_t len);
/* The same with the key's tok_hash precomputed, and a prefetch of its first slot:
 * loading issues several independent lookups / inserts to overlap cache misses. */
int32_t tok_strmap_get_h(const tok_strmap *m, const char *key, size_t len, uint32_t h);
int tok_strmap_put_h(tok_strmap *m, const char *key, size_t len, uint32_t h, int32_t value);
static inline void tok_strmap_prefetch(const tok_strmap *m, uint32_t h) {
    if (m->cap) __builtin_prefetch(&m->slots[h & (m->cap - 1)]);
}
void tok_strmap_free(tok_strmap *m);

/* ---- (id, id) -> (rank, new id) map for BPE merges (tok_map.c) ---------------------- */
typedef struct tok_pairmap {
    struct tok_pair_slot {
        uint64_t key; /* (a << 32 | b) + 1, 0 = empty */
        uint32_t rank;
        int32_t new_id;
    } *slots; /* one cache line holds four slots: a lookup is one miss */
    size_t cap, n;
} tok_pairmap;

int tok_pairmap_put(tok_pairmap *m, int32_t a, int32_t b, uint32_t rank, int32_t new_id);
/* Prefetch the first slot of pair (a, b). */
void tok_pairmap_prefetch(const tok_pairmap *m, int32_t a, int32_t b);
/* Size the map for about n pairs. 0 ok, -1 no memory. */
int tok_pairmap_reserve(tok_pairmap *m, size_t n);
/* 1 and the rank / new id when the pair merges, else 0. */
int tok_pairmap_get(const tok_pairmap *m, int32_t a, int32_t b, uint32_t *rank, int32_t *new_id);
void tok_pairmap_free(tok_pairmap *m);

/* ---- patterns (a literal string or a PCRE2 regex; tok_pattern.c) -------------------- */
typedef struct tok_pattern {
    char *str; /* literal text, or the regex source */
    size_t len;
    pcre2_code *re; /* NULL for a literal */
} tok_pattern;

/* Compile `src` (len bytes) as a regex with PCRE2_UTF | PCRE2_UCP (+ JIT when
 * available) or keep it as a literal. `path` names the JSON field for errors. */
facet_status tok_pattern_init(tok_pattern *p, const char *src, size_t len, int is_regex,
                              const char *path, facet_error *err);
void tok_pattern_free(tok_pattern *p);

/* One match: [start, end) byte offsets. */
typedef struct tok_range {
    size_t start, end;
} tok_range;

/* All non-overlapping matches of p in text[0..len), left to right, as Rust's
 * find_iter does (an empty match advances by one character). *out is malloc'd. */
facet_status tok_pattern_find_all(const tok_pattern *p, const char *text, size_t len,
                                  tok_range **out, size_t *n, facet_error *err);

/* ---- word lists: the pieces moving through pre-tokenization ------------------------ */
typedef struct tok_span {
    uint32_t off, len; /* into the owning list's text */
    uint8_t orig0;     /* the piece begins at offset 0 of the original input */
} tok_span;

typedef struct tok_words {
    facet_str text;
    tok_span *spans;
    size_t n, cap;
    int bytelevel; /* the words are raw bytes still to be mapped by the ByteLevel
                      alphabet (mapping is deferred to the model, see tok_bpe.c) */
} tok_words;

int tok_words_push(tok_words *w, const char *s, size_t len, int orig0);
void tok_words_clear(tok_words *w);
void tok_words_free(tok_words *w);
/* Replace deferred ByteLevel bytes by their mapped characters (no-op otherwise). */
int tok_words_materialize(tok_words *w);

/* The ByteLevel alphabet: byte b is represented by code point tok_bytelevel_cp[b]. */
extern const uint16_t tok_bytelevel_cp[256];
/* Append the ByteLevel characters of bytes s[0..len) to out. */
int tok_bytelevel_map(facet_str *out, const char *s, size_t len);
/* The byte a ByteLevel character stands for, or -1. */
int tok_bytelevel_byte(int32_t cp);

/* ---- normalizers (tok_normalize.c) -------------------------------------------------- */
typedef enum tok_norm_type {
    TOK_NORM_SEQUENCE,
    TOK_NORM_NFC,
    TOK_NORM_NFD,
    TOK_NORM_NFKC,
    TOK_NORM_NFKD,
    TOK_NORM_LOWERCASE,
    TOK_NORM_STRIP,
    TOK_NORM_STRIP_ACCENTS,
    TOK_NORM_REPLACE,
    TOK_NORM_PREPEND,
    TOK_NORM_BERT,
    TOK_NORM_BYTELEVEL,
    TOK_NORM_NMT,
    TOK_NORM_APPEND,
} tok_norm_type;

typedef struct tok_normalizer {
    tok_norm_type type;
    struct tok_normalizer **children; /* Sequence */
    size_t n_children;
    tok_pattern pattern;    /* Replace */
    char *content;          /* Replace content, Prepend prepend, Append append */
    size_t content_len;
    int left, right;        /* Strip */
    int clean_text, handle_chinese_chars, strip_accents, lowercase; /* Bert; strip_accents
                                                                       -1 = follow lowercase */
} tok_normalizer;

struct json_t;
facet_status tok_normalizer_parse(const struct json_t *j, const char *path, tok_normalizer **out,
                                  facet_error *err);
void tok_normalizer_free(tok_normalizer *n);
/* Normalize in[0..len) into out (appended). */
facet_status tok_normalize(const tok_normalizer *n, const char *in, size_t len, facet_str *out,
                           facet_error *err);

/* ---- pre-tokenizers (tok_pretokenize.c) ---------------------------------------------- */
typedef enum tok_split_behavior {
    TOK_SPLIT_REMOVED,
    TOK_SPLIT_ISOLATED,
    TOK_SPLIT_MERGED_WITH_PREVIOUS,
    TOK_SPLIT_MERGED_WITH_NEXT,
    TOK_SPLIT_CONTIGUOUS,
} tok_split_behavior;

typedef enum tok_pretok_type {
    TOK_PRE_SEQUENCE,
    TOK_PRE_BYTELEVEL,
    TOK_PRE_SPLIT,
    TOK_PRE_METASPACE,
    TOK_PRE_DIGITS,
    TOK_PRE_PUNCTUATION,
    TOK_PRE_WHITESPACE,
    TOK_PRE_WHITESPACE_SPLIT,
    TOK_PRE_BERT,
    TOK_PRE_CHAR_DELIMITER,
} tok_pretok_type;

typedef enum tok_prepend_scheme { TOK_PREPEND_ALWAYS, TOK_PREPEND_FIRST, TOK_PREPEND_NEVER } tok_prepend_scheme;

typedef struct tok_pretok {
    tok_pretok_type type;
    struct tok_pretok **children;
    size_t n_children;
    tok_pattern pattern;            /* Split; ByteLevel's GPT-2 regex; Whitespace */
    tok_split_behavior behavior;    /* Split, Punctuation */
    int invert;                     /* Split */
    int add_prefix_space, use_regex; /* ByteLevel */
    int32_t replacement;            /* Metaspace: code point; CharDelimiterSplit */
    tok_prepend_scheme prepend_scheme;
    int split;                      /* Metaspace */
    int individual_digits;          /* Digits */
} tok_pretok;

facet_status tok_pretok_parse(const struct json_t *j, const char *path, tok_pretok **out,
                              facet_error *err);
void tok_pretok_free(tok_pretok *p);
/* Pre-tokenize: words of *in become the words of *out (both owned by the caller). */
facet_status tok_pretokenize(const tok_pretok *p, tok_words *in, tok_words *out, facet_error *err);

/* ---- decoders (tok_decode.c) ------------------------------------------------------- */
typedef enum tok_dec_type {
    TOK_DEC_SEQUENCE,
    TOK_DEC_BYTELEVEL,
    TOK_DEC_METASPACE,
    TOK_DEC_BYTE_FALLBACK,
    TOK_DEC_FUSE,
    TOK_DEC_STRIP,
    TOK_DEC_REPLACE,
    TOK_DEC_WORDPIECE,
    TOK_DEC_BPE,
    TOK_DEC_CTC,
} tok_dec_type;

typedef struct tok_decoder {
    tok_dec_type type;
    struct tok_decoder **children;
    size_t n_children;
    tok_pattern pattern;  /* Replace */
    char *content;        /* Replace content; Strip content; WordPiece prefix; BPE suffix;
                             CTC pad token */
    size_t content_len;
    char *content2;       /* CTC word delimiter */
    size_t content2_len;
    int32_t strip_char;   /* Strip */
    int start, stop;      /* Strip */
    int cleanup;          /* WordPiece, CTC */
    int32_t replacement;  /* Metaspace */
    tok_prepend_scheme prepend_scheme;
} tok_decoder;

facet_status tok_decoder_parse(const struct json_t *j, const char *path, tok_decoder **out,
                               facet_error *err);
void tok_decoder_free(tok_decoder *d);

/* A list of token strings as the decoders pass them along (decode_chain). */
typedef struct tok_strlist {
    facet_str text;
    size_t *off, *len;
    size_t n, cap;
} tok_strlist;

int tok_strlist_push(tok_strlist *l, const char *s, size_t len);
void tok_strlist_clear(tok_strlist *l);
void tok_strlist_free(tok_strlist *l);
/* Run the decoder chain over *tokens and append the joined result to out. */
facet_status tok_decode_chain(const tok_decoder *d, tok_strlist *tokens, facet_str *out,
                              facet_error *err);
/* The decoder chain's text for ids (tok_encode.c), without the clean-up; ids are
 * checked against the vocabulary (FACET_E_INVALID_ARGUMENT). */
facet_status tok_decode_raw(const facet_tokenizer *tok, const int32_t *ids, size_t n, int skip_special,
                            facet_str *out, facet_error *err);
/* transformers' clean_up_tokenization (" ." -> "." ...) in place over out. */
void tok_cleanup_spaces(facet_str *out);

/* ---- post-processors (tok_post.c) -------------------------------------------------- */
typedef struct tok_post {
    int32_t *prefix, *suffix; /* special ids around sequence A when add_special */
    size_t n_prefix, n_suffix;
} tok_post;

facet_status tok_post_parse(const struct json_t *j, const char *path, const facet_tokenizer *tok,
                            tok_post *out, facet_error *err);
void tok_post_free(tok_post *p);

/* ---- added tokens (tok_added.c) --------------------------------------------------- */
typedef struct tok_added {
    int32_t id;
    char *content;
    size_t len;
    uint8_t special, single_word, lstrip, rstrip, normalized;
} tok_added;

/* A byte trie with leftmost-longest matching over one set of added tokens. */
typedef struct tok_trie {
    tok_pairmap edges;    /* (node, byte) -> child node, stored as pair -> new_id */
    int32_t *terminal;    /* node -> index into the tokenizer's added[], or -1 */
    size_t n_nodes, cap_nodes;
    uint8_t first[32];    /* bitset of first bytes */
} tok_trie;

/* One piece of split text: a string piece (id < 0) or an added token (id >= 0). */
typedef struct tok_piece {
    size_t start, end;
    int32_t id;
} tok_piece;

facet_status tok_trie_build(tok_trie *t, const facet_tokenizer *tok, int normalized_set,
                            facet_error *err);
void tok_trie_free(tok_trie *t);
/* Split text[0..len) around added-token matches, with single_word / lstrip / rstrip as
 * AddedVocabulary::find_matches does. *out is malloc'd. */
facet_status tok_added_split(const facet_tokenizer *tok, const tok_trie *t, const char *text,
                             size_t len, tok_piece **out, size_t *n, facet_error *err);

/* ---- the BPE model (tok_bpe.c) ----------------------------------------------------- */
typedef struct tok_bpe {
    tok_strmap vocab;
    tok_pairmap merges;
    int32_t unk_id;          /* -1 when there is no unk_token */
    char *prefix, *suffix;   /* continuing_subword_prefix / end_of_word_suffix or NULL */
    size_t prefix_len, suffix_len;
    int fuse_unk, byte_fallback, ignore_merges;
    int wordpiece;           /* the model is WordPiece (greedy longest match), not BPE */
    size_t max_input_chars_per_word; /* WordPiece: longer words are unk_token */
    char *unk_token;         /* WordPiece: the unk token string (may be absent from vocab) */
    int32_t byte_id[256];    /* id of the ByteLevel character of each byte, or -1 */
    int32_t fallback_id[256]; /* id of "<0xHH>", or -1 */
    int32_t ascii_id[128];   /* id of each one-character ASCII token, or -1 */
} tok_bpe;

/* The word cache: words -> ids, shared by callers under a mutex. */
typedef struct tok_cache {
    pthread_mutex_t lock;
    tok_strmap map; /* word -> index into ids/lens */
    int32_t *ids;
    size_t n_ids, cap_ids;
    uint32_t *start, *count;
    size_t n_words, cap_words;
} tok_cache;

/* Encode one word; ids appended to *out (growable int32 vector). */
typedef struct tok_ids {
    int32_t *v;
    size_t n, cap;
} tok_ids;
int tok_ids_push(tok_ids *ids, int32_t id);

facet_status tok_bpe_word(const facet_tokenizer *tok, const char *word, size_t len, int bytelevel,
                          tok_ids *out, facet_error *err);

/* ---- typed JSON field access with paths in messages (tok_json.c) ------------------ */
/* String field `key` of object o: *s and *len set (NULL when absent and not required).
 * Errors: FACET_E_FORMAT "PATH.KEY: expected a string, got TYPE" / "missing". */
facet_status tok_jget_str(const struct json_t *o, const char *key, const char *path, int required,
                          const char **s, size_t *len, facet_error *err);
/* Boolean field; absent or null gives dflt. */
facet_status tok_jget_bool(const struct json_t *o, const char *key, const char *path, int dflt,
                           int *out, facet_error *err);
/* Integer field; absent or null gives dflt. */
facet_status tok_jget_int(const struct json_t *o, const char *key, const char *path, long long dflt,
                          long long *out, facet_error *err);
/* The "type" string of a component object. */
facet_status tok_jget_type(const struct json_t *o, const char *path, const char **type,
                           facet_error *err);
/* A pattern object {"String": s} or {"Regex": r} at o[key]. */
facet_status tok_jget_pattern(const struct json_t *o, const char *key, const char *path,
                              tok_pattern *p, facet_error *err);
/* A single-character string field (Metaspace replacement, Strip content) as a code point. */
facet_status tok_jget_char(const struct json_t *o, const char *key, const char *path, int32_t dflt,
                           int32_t *cp, facet_error *err);

/* WordPiece::tokenize (tok_wordpiece.c): ids of one word appended to *out. */
facet_status tok_wordpiece_word(const facet_tokenizer *tok, const char *word, size_t len, tok_ids *out,
                                facet_error *err);

/* ---- vocabularies from GGUF metadata (tok_gguf.c, tok_gguf_encode.c) ----------------
 * A GGUF file's tokenizer.ggml.* keys describe llama.cpp's tokenizers, which do not go
 * through the tokenizer.json pipeline: the id tables, the vocabulary map, the merges,
 * the pre-tokenizer (a Sequence of Split regexes + ByteLevel), the post-processor (BOS /
 * EOS) and the decoder chain of the struct below are filled from the metadata, and
 * facet_tokenize runs tok_gguf_encode instead of the added-token / normalizer steps. */
typedef enum tok_gguf_kind {
    TOK_GGUF_NONE = 0, /* a tokenizer.json tokenizer                                    */
    TOK_GGUF_SPM,      /* "llama": SentencePiece, score-ordered merges, <0xHH> bytes      */
    TOK_GGUF_BPE,      /* "gpt2": byte-level BPE after the pre-tokenizer's regex splits   */
    TOK_GGUF_WPM,      /* "bert": WordPiece over the converted vocabulary (words "▁w")    */
} tok_gguf_kind;

/* llama.cpp's token types (tokenizer.ggml.token_type, llama_token_type). */
enum {
    TOK_TYPE_UNDEFINED = 0, TOK_TYPE_NORMAL = 1, TOK_TYPE_UNKNOWN = 2, TOK_TYPE_CONTROL = 3,
    TOK_TYPE_USER_DEFINED = 4, TOK_TYPE_UNUSED = 5, TOK_TYPE_BYTE = 6, TOK_TYPE_COUNT = 7
};

enum { TOK_STRIP_LEFT = 1, TOK_STRIP_RIGHT = 2 };

typedef struct tok_gguf {
    tok_gguf_kind kind;
    float *score;            /* SPM: per id (0 when the file has no scores)              */
    uint8_t *type;           /* per id, a TOK_TYPE_*                                     */
    int32_t *special;        /* ids of control, user-defined and unknown tokens, longest
                                text first: split out of the text before tokenizing      */
    size_t n_special;
    uint8_t *strip;          /* per id: TOK_STRIP_LEFT / _RIGHT, the whitespace a special
                                token's match swallows on that side (llama.cpp sets these
                                by model name: Phi-3's special tokens, jina's <mask>)      */
    int add_space_prefix;    /* SPM: " " before the text (and after each special token)  */
    int lowercase, strip_accents; /* WPM                                                 */
    size_t max_token_len;    /* bytes of the longest token                               */
    int32_t unk_id, bos_id, eos_id, sep_id; /* -1 when absent                            */
} tok_gguf;

/* Encode text[0..len) with a GGUF tokenizer (valid UTF-8, checked by the caller); ids
 * appended to *out, BOS/EOS per add_special and the file's add_bos/add_eos flags. */
facet_status tok_gguf_encode(const facet_tokenizer *tok, const char *text, size_t len, int add_special,
                             tok_ids *out, facet_error *err);
void tok_gguf_free(tok_gguf *g);

/* ---- the tokenizer ----------------------------------------------------------------- */
struct facet_tokenizer {
    tok_bpe bpe;
    tok_normalizer *normalizer;   /* NULL = none */
    tok_pretok *pretok;           /* NULL = none */
    tok_decoder *decoder;         /* NULL = join with " " */
    tok_post post;
    tok_added *added;
    size_t n_added;
    tok_strmap added_map;         /* content -> id */
    tok_trie trie_raw, trie_norm; /* non-normalized / normalized added tokens */
    /* id -> token string */
    char **id_str;
    uint32_t *id_len;
    uint8_t *id_special;
    uint8_t *id_bytefallback;     /* the token is "<0xHH>" (for streaming hold-back) */
    int vocab_size;               /* highest id + 1 */
    int clean_up_spaces;          /* tokenizer_config.json clean_up_tokenization_spaces */
    int split_special;            /* tokenizer_config.json split_special_tokens: special
                                     added tokens are not matched in the text */
    tok_cache *cache;
    tok_gguf gguf;                /* kind TOK_GGUF_NONE for tokenizer.json               */
};

/* The id tables (id_str, id_len, id_special, id_bytefallback, vocab_size) and the byte
 * tables of tok->bpe from the vocabulary map and the added tokens (tok_load.c). */
facet_status tok_build_tables(facet_tokenizer *tok, int32_t max_vocab_id, facet_error *err);

/* Build a tokenizer from a GGUF file's tokenizer.ggml.* metadata (tok_gguf.c). Errors
 * name the file, the key, the value and what was expected: FACET_E_NOT_FOUND (a required
 * key is missing), FACET_E_FORMAT (a key of the wrong type, an index or count out of
 * range, a merge naming no token), FACET_E_UNSUPPORTED (a tokenizer model or
 * pre-tokenizer name not implemented, with the supported names). */
struct gguf_file;
facet_status tok_load_gguf(const struct gguf_file *f, facet_tokenizer **out, facet_error *err);

/* Apply tokenizer_config.json (tok_config.c). Errors name the config field. */
facet_status tok_apply_config(facet_tokenizer *tok, const struct json_t *cfg, facet_error *err);

/* Build a tokenizer from tokenizer.json text (and tokenizer_config.json text, or NULL).
 * `what` names the file in messages. Used by facet_tokenizer_load and the fuzz target. */
facet_status tok_load_from_memory(const char *json, size_t len, const char *config_json,
                                  size_t config_len, const char *what, facet_tokenizer **out,
                                  facet_error *err);

/* Fast parse of "model.vocab" and "model.merges" (tok_json_fast.c): the spans of the
 * two values inside the text, found without building a JSON tree. */
typedef struct tok_json_spans {
    size_t vocab_start, vocab_end;   /* 0,0 when absent */
    size_t merges_start, merges_end;
} tok_json_spans;
facet_status tok_json_find_model_spans(const char *json, size_t len, const char *what,
                                       tok_json_spans *sp, facet_error *err);
/* Parse the vocab object text into vocab map. */
facet_status tok_json_parse_vocab(const char *s, size_t len, const char *what, tok_strmap *vocab,
                                  int32_t *max_id, facet_error *err);
/* Parse the merges array (strings "a b" or pairs ["a","b"]) calling fn per merge. */
typedef facet_status (*tok_merge_fn)(void *ctx, size_t index, const char *a, size_t alen,
                                     const char *b, size_t blen, facet_error *err);
facet_status tok_json_parse_merges(const char *s, size_t len, const char *what, tok_merge_fn fn,
                                   void *ctx, facet_error *err);

#endif
