/* tok_gguf.c — a tokenizer from a GGUF file's metadata (the tokenizer.ggml.* keys that
 * llama.cpp's convert_hf_to_gguf.py writes and llama-vocab.cpp reads):
 *
 *   tokenizer.ggml.model        "llama" (SentencePiece), "gpt2" (byte-level BPE),
 *                               "bert" (WordPiece)
 *   tokenizer.ggml.pre          gpt2 only: the pre-tokenizer's name (tok_gguf_pre.c)
 *   tokenizer.ggml.tokens       [string], the token of each id
 *   tokenizer.ggml.scores       [f32 or i32], SentencePiece merge priorities
 *   tokenizer.ggml.token_type   [i32], 1 normal, 2 unknown, 3 control, 4 user-defined,
 *                               5 unused, 6 byte (0 undefined)
 *   tokenizer.ggml.merges       [string] "a b", gpt2: the merge of rank i
 *   tokenizer.ggml.{bos,eos,unknown,seperator}_token_id
 *   tokenizer.ggml.add_{bos,eos,sep}_token, tokenizer.ggml.add_space_prefix,
 *   tokenizer.ggml.normalizer.{lowercase,strip_accents}
 *
 * The defaults where a key is absent are llama.cpp's (SentencePiece: bos 1, eos 2, unk 0,
 * BOS added, a space put before the text; WordPiece: [CLS] 101 first and [SEP] 102 last,
 * unk 100, lowercased, accents stripped). Every count and id is bounded: the token
 * list by TOK_MAX_ID, the scores and types arrays at least as long as it, types in
 * 0..6, special ids below the vocabulary size, each merge naming two tokens whose
 * concatenation is a token. A repeated token is refused (llama.cpp asserts on it). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "tokenizer/tok_gguf_pre.h"
#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void tok_gguf_free(tok_gguf *g) {
    free(g->score);
    free(g->type);
    free(g->special);
    free(g->strip);
    memset(g, 0, sizeof *g);
}

/* The array `key` when present: of element type t1 (or t2), at least n elements. */
static facet_status get_array(const gguf_file *f, const char *key, uint32_t t1, uint32_t t2, const char *expected,
                              uint64_t n, const gguf_kv **out, facet_error *err) {
    *out = gguf_find_kv(f, key);
    if (!*out) return FACET_OK;
    const gguf_kv *kv = *out;
    if (kv->type != GGUF_T_ARRAY || (kv->arr_type != t1 && kv->arr_type != t2)) {
        char shown[64];
        gguf_kv_render(kv, shown, sizeof shown);
        return facet_err(err, FACET_E_FORMAT, "%s: key %s is %s, expected %s", f->path, key, shown, expected);
    }
    if (kv->arr_n < n)
        return facet_err(err, FACET_E_FORMAT, "%s: key %s has %llu elements, expected one per token (%llu)", f->path,
                         key, (unsigned long long)kv->arr_n, (unsigned long long)n);
    return FACET_OK;
}

/* A token id key: absent leaves *id; present must name a token. */
static facet_status get_id(const gguf_file *f, const char *key, int n_vocab, int32_t *id, facet_error *err) {
    int64_t v;
    int present = 0;
    facet_status st = gguf_get_int(f, key, 0, 0, n_vocab - 1, &v, &present, err);
    if (st == FACET_OK && present) *id = (int32_t)v;
    return st;
}

static facet_status get_flag(const gguf_file *f, const char *key, int *flag, facet_error *err) {
    int v, present = 0;
    facet_status st = gguf_get_bool(f, key, 0, &v, &present, err);
    if (st == FACET_OK && present) *flag = v;
    return st;
}

/* The id -> text list, its map, and the per-id types and scores. */
static facet_status read_tokens(facet_tokenizer *tok, const gguf_file *f, facet_error *err) {
    const gguf_kv *kv = gguf_find_kv(f, "tokenizer.ggml.tokens");
    if (!kv) return facet_err(err, FACET_E_NOT_FOUND, "%s: required key tokenizer.ggml.tokens is missing", f->path);
    if (kv->type != GGUF_T_ARRAY || kv->arr_type != GGUF_T_STRING) {
        char shown[64];
        gguf_kv_render(kv, shown, sizeof shown);
        return facet_err(err, FACET_E_FORMAT, "%s: key tokenizer.ggml.tokens is %s, expected an array of strings",
                         f->path, shown);
    }
    if (kv->arr_n < 1 || kv->arr_n > TOK_MAX_ID)
        return facet_err(err, FACET_E_FORMAT, "%s: key tokenizer.ggml.tokens has %llu tokens, expected 1..%d",
                         f->path, (unsigned long long)kv->arr_n, TOK_MAX_ID);
    size_t n = (size_t)kv->arr_n;
    tok_gguf *g = &tok->gguf;
    g->type = calloc(n, 1);
    g->score = calloc(n, sizeof *g->score);
    if (!g->type || !g->score || tok_strmap_reserve(&tok->bpe.vocab, n, kv->val_len))
        return facet_err(err, FACET_E_NOMEM, "%s: out of memory for %zu tokens", f->path, n);
    uint64_t pos = 0;
    const char *s;
    uint64_t len;
    for (size_t i = 0; i < n; i++) {
        if (!gguf_arr_str_next(kv, &pos, &s, &len))
            return facet_err(err, FACET_E_FORMAT, "%s: tokenizer.ggml.tokens[%zu] is missing", f->path, i);
        if (len > 65536)
            return facet_err(err, FACET_E_FORMAT, "%s: tokenizer.ggml.tokens[%zu] is %llu bytes, expected at most 65536",
                             f->path, i, (unsigned long long)len);
        if (len > g->max_token_len) g->max_token_len = (size_t)len;
        if (!len) continue; /* an empty token: no text maps to it (llama.cpp renames it) */
        int32_t prev = tok_strmap_get(&tok->bpe.vocab, s, (size_t)len);
        if (prev >= 0)
            return facet_err(err, FACET_E_FORMAT, "%s: tokenizer.ggml.tokens[%zu] \"%.*s\" repeats token %d", f->path,
                             i, len > 40 ? 40 : (int)len, s, (int)prev);
        if (tok_strmap_put(&tok->bpe.vocab, s, (size_t)len, (int32_t)i))
            return facet_err(err, FACET_E_NOMEM, "%s: out of memory for %zu tokens", f->path, n);
    }
    const gguf_kv *sc, *ty;
    facet_status st;
    if ((st = get_array(f, "tokenizer.ggml.scores", GGUF_T_FLOAT32, GGUF_T_INT32, "an array of f32 or i32", n, &sc,
                        err)) ||
        (st = get_array(f, "tokenizer.ggml.token_type", GGUF_T_INT32, GGUF_T_INT32, "an array of i32", n, &ty, err)))
        return st;
    for (size_t i = 0; i < n; i++) {
        g->type[i] = TOK_TYPE_NORMAL;
        if (ty) {
            int32_t t = (int32_t)le32(ty->val + 4 * i);
            if (t < 0 || t >= TOK_TYPE_COUNT)
                return facet_err(err, FACET_E_FORMAT,
                                 "%s: tokenizer.ggml.token_type[%zu] is %d, expected a llama.cpp token type 0..6",
                                 f->path, i, (int)t);
            g->type[i] = (uint8_t)t;
        }
        if (sc) {
            uint32_t b = le32(sc->val + 4 * i);
            if (sc->arr_type == GGUF_T_INT32) {
                g->score[i] = (float)(int32_t)b;
            } else {
                memcpy(&g->score[i], &b, 4);
                if (g->score[i] != g->score[i])
                    return facet_err(err, FACET_E_FORMAT, "%s: tokenizer.ggml.scores[%zu] is NaN, expected a number",
                                     f->path, i);
            }
        }
    }
    return FACET_OK;
}

/* gpt2: merges "a b" (split at the first space after the first byte), rank = index. */
static facet_status read_merges(facet_tokenizer *tok, const gguf_file *f, facet_error *err) {
    const gguf_kv *kv;
    facet_status st = get_array(f, "tokenizer.ggml.merges", GGUF_T_STRING, GGUF_T_STRING, "an array of strings", 0,
                                &kv, err);
    if (st) return st;
    if (!kv) return facet_err(err, FACET_E_NOT_FOUND, "%s: required key tokenizer.ggml.merges is missing", f->path);
    if (kv->arr_n > (uint64_t)TOK_MAX_ID * 4)
        return facet_err(err, FACET_E_FORMAT, "%s: key tokenizer.ggml.merges has %llu merges, expected at most %d",
                         f->path, (unsigned long long)kv->arr_n, TOK_MAX_ID * 4);
    if (tok_pairmap_reserve(&tok->bpe.merges, (size_t)kv->arr_n + 16))
        return facet_err(err, FACET_E_NOMEM, "%s: out of memory for the merges", f->path);
    facet_str ab = {0};
    uint64_t pos = 0;
    const char *s;
    uint64_t len;
    for (size_t i = 0; i < kv->arr_n; i++) {
        if (!gguf_arr_str_next(kv, &pos, &s, &len)) {
            st = facet_err(err, FACET_E_FORMAT, "%s: tokenizer.ggml.merges[%zu] is missing", f->path, i);
            break;
        }
        const char *sp = len > 1 ? memchr(s + 1, ' ', (size_t)len - 1) : NULL;
        if (!sp) {
            st = facet_err(err, FACET_E_FORMAT, "%s: tokenizer.ggml.merges[%zu] \"%.*s\" is not two tokens \"a b\"",
                           f->path, i, len > 40 ? 40 : (int)len, s);
            break;
        }
        size_t la = (size_t)(sp - s), lb = (size_t)len - la - 1;
        ab.len = 0;
        if (facet_str_append(&ab, s, la) || facet_str_append(&ab, sp + 1, lb)) {
            st = facet_err(err, FACET_E_NOMEM, "%s: out of memory for the merges", f->path);
            break;
        }
        int32_t a = tok_strmap_get(&tok->bpe.vocab, s, la), b = tok_strmap_get(&tok->bpe.vocab, sp + 1, lb),
                m = tok_strmap_get(&tok->bpe.vocab, ab.data, ab.len);
        if (a < 0 || b < 0 || m < 0) {
            const char *what = a < 0 ? s : b < 0 ? sp + 1 : ab.data;
            size_t wl = a < 0 ? la : b < 0 ? lb : ab.len;
            st = facet_err(err, FACET_E_FORMAT, "%s: tokenizer.ggml.merges[%zu]: %s \"%.*s\" is not in tokenizer.ggml.tokens",
                           f->path, i, m < 0 && a >= 0 && b >= 0 ? "merged token" : "token", wl > 40 ? 40 : (int)wl,
                           what);
            break;
        }
        if (tok_pairmap_get(&tok->bpe.merges, a, b, NULL, NULL)) continue; /* the first rank stands */
        if (tok_pairmap_put(&tok->bpe.merges, a, b, (uint32_t)i, m)) {
            st = facet_err(err, FACET_E_NOMEM, "%s: out of memory for the merges", f->path);
            break;
        }
    }
    facet_str_free(&ab);
    return st;
}

/* The pre-tokenizer and decoder chains, built as tokenizer.json would spell them. */
static facet_status build_chains(facet_tokenizer *tok, const gguf_file *f, const tok_gguf_pre *pre,
                                 facet_error *err) {
    json_t *dec = NULL, *pt = NULL;
    tok_gguf *g = &tok->gguf;
    if (g->kind == TOK_GGUF_BPE) {
        dec = json_pack("{s:s}", "type", "ByteLevel");
        json_t *list = json_array();
        for (size_t i = 0; pre->regex[i]; i++)
            json_array_append_new(list, json_pack("{s:s, s:{s:s}, s:s, s:b}", "type", "Split", "pattern", "Regex",
                                                  pre->regex[i], "behavior", "Isolated", "invert", 0));
        json_array_append_new(list, json_pack("{s:s, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", 0,
                                              "use_regex", 0));
        pt = json_pack("{s:s, s:o}", "type", "Sequence", "pretokenizers", list);
    } else if (g->kind == TOK_GGUF_SPM) {
        json_t *list = json_pack("[{s:s, s:{s:s}, s:s}, {s:s}, {s:s}]", "type", "Replace", "pattern", "String",
                                 "\xE2\x96\x81", "content", " ", "type", "ByteFallback", "type", "Fuse");
        if (list && g->add_space_prefix)
            json_array_append_new(list, json_pack("{s:s, s:s, s:i, s:i}", "type", "Strip", "content", " ", "start", 1,
                                                  "stop", 0));
        dec = json_pack("{s:s, s:o}", "type", "Sequence", "decoders", list);
    } else { /* WPM: words begin with "▁", pieces inside a word have no marker */
        dec = json_pack("{s:s, s:[{s:s, s:{s:s}, s:s}, {s:s, s:s, s:i, s:i}]}", "type", "Sequence", "decoders", "type",
                        "Replace", "pattern", "String", "\xE2\x96\x81", "content", " ", "type", "Strip", "content",
                        " ", "start", 1, "stop", 0);
    }
    facet_status st = FACET_OK;
    char what[600];
    snprintf(what, sizeof what, "%.500s: tokenizer.ggml.pre", f->path);
    if (!dec || (g->kind == TOK_GGUF_BPE && !pt)) st = facet_err(err, FACET_E_NOMEM, "%s: out of memory", f->path);
    if (!st && pt) st = tok_pretok_parse(pt, what, &tok->pretok, err);
    if (!st) st = tok_decoder_parse(dec, what, &tok->decoder, err);
    json_decref(dec);
    json_decref(pt);
    return st;
}

typedef struct len_id {
    uint32_t len;
    int32_t id;
} len_id;

/* longest first; among equal lengths the lower id first */
static int cmp_special(const void *a, const void *b) {
    const len_id *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The whitespace stripping of special tokens. tokenizer.json marks it per added token
 * (lstrip / rstrip); GGUF metadata has no such field, and llama.cpp's loader restores it
 * by these rules, matched as substrings (llama-vocab.cpp, after the special-token cache
 * is built), first matching rule only. This table is llama.cpp's convention, kept as
 * data; no other code looks at a model's name. */
typedef struct strip_rule {
    const char *key;        /* the metadata key whose string value is matched          */
    int lowercase;          /* matched lowercased (general.name)                       */
    const char *match[3];   /* any of these substrings                                 */
    const char *token;      /* the token given `side`; NULL: every special token       */
    uint8_t side;
} strip_rule;

static const strip_rule strip_rules[] = {
    {"tokenizer.ggml.pre", 0, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}, "<mask>", TOK_STRIP_LEFT},
    {"general.architecture", 0, {"nomic-bert-moe", "jina-bert-v3", NULL}, "<mask>", TOK_STRIP_LEFT},
    /* Phi-3: every special token and </s> swallow the whitespace after them, except
     * <unk>, <s> and <|endoftext|> (phi3_exempt below) */
    {"general.name", 1, {"phi-3", "phi3", NULL}, NULL, TOK_STRIP_RIGHT},
    {"general.name", 1, {"modern-bert", NULL, NULL}, "[MASK]", TOK_STRIP_LEFT},
};

static int rule_matches(const gguf_file *f, const strip_rule *r) {
    const char *v;
    uint64_t len;
    int present = 0;
    if (gguf_get_str(f, r->key, 0, &v, &len, &present, NULL) != FACET_OK || !present) return 0;
    char buf[256];
    size_t n = len < sizeof buf ? (size_t)len : sizeof buf;
    for (size_t i = 0; i < n; i++) buf[i] = (char)(r->lowercase && v[i] >= 'A' && v[i] <= 'Z' ? v[i] + 32 : v[i]);
    for (int k = 0; k < 3 && r->match[k]; k++) {
        size_t m = strlen(r->match[k]);
        for (size_t i = 0; i + m <= n; i++)
            if (!memcmp(buf + i, r->match[k], m)) return 1;
    }
    return 0;
}

static facet_status set_strip(facet_tokenizer *tok, const gguf_file *f, facet_error *err) {
    tok_gguf *g = &tok->gguf;
    if (!(g->strip = calloc((size_t)tok->vocab_size, 1))) return facet_err(err, FACET_E_NOMEM, "out of memory");
    const strip_rule *r = NULL;
    for (size_t i = 0; i < sizeof strip_rules / sizeof strip_rules[0] && !r; i++)
        if (rule_matches(f, &strip_rules[i])) r = &strip_rules[i];
    if (!r) return FACET_OK;
    if (r->token) {
        int32_t id = tok_strmap_get(&tok->bpe.vocab, r->token, strlen(r->token));
        if (id >= 0) g->strip[id] |= r->side;
        return FACET_OK;
    }
    static const char *const phi3_more[] = {"</s>"}, *const phi3_exempt[] = {"<unk>", "<s>", "<|endoftext|>"};
    for (size_t i = 0; i < g->n_special; i++) g->strip[g->special[i]] |= r->side;
    int32_t id = tok_strmap_get(&tok->bpe.vocab, phi3_more[0], strlen(phi3_more[0]));
    if (id >= 0) g->strip[id] |= r->side;
    for (int k = 0; k < 3; k++)
        if ((id = tok_strmap_get(&tok->bpe.vocab, phi3_exempt[k], strlen(phi3_exempt[k]))) >= 0)
            g->strip[id] &= (uint8_t)~r->side;
    return FACET_OK;
}

/* BOS / EOS around the text when add_special, as the file's flags say. */
static facet_status set_post(facet_tokenizer *tok, const gguf_file *f, const tok_gguf_pre *pre, facet_error *err) {
    tok_gguf *g = &tok->gguf;
    int add_bos = g->kind != TOK_GGUF_BPE || pre->add_bos, add_eos = 0, add_sep = g->kind == TOK_GGUF_WPM;
    facet_status st;
    if ((st = get_flag(f, "tokenizer.ggml.add_bos_token", &add_bos, err)) ||
        (st = get_flag(f, "tokenizer.ggml.add_eos_token", &add_eos, err)))
        return st;
    /* a default BOS without a BOS token is dropped; only the file's own flag insists */
    if (add_bos && g->bos_id < 0 && !gguf_find_kv(f, "tokenizer.ggml.add_bos_token")) add_bos = 0;
    if (g->kind == TOK_GGUF_WPM) add_bos = add_sep = 1; /* llama.cpp: [CLS] ... [SEP] always */
    int32_t first = add_bos ? g->bos_id : -1;
    int32_t post = g->kind == TOK_GGUF_WPM ? (add_sep ? g->sep_id : -1) : (add_eos ? g->eos_id : -1);
    const char *missing = g->kind == TOK_GGUF_WPM && (first < 0 || post < 0)
                              ? "model is bert, which puts [CLS] and [SEP] around the text, but bos_token_id "
                                "(default 101) or seperator_token_id (default 102) names no token"
                          : add_bos && first < 0 ? "add_bos_token is true but there is no bos_token_id"
                          : g->kind != TOK_GGUF_WPM && add_eos && post < 0
                              ? "add_eos_token is true but there is no eos_token_id"
                              : NULL;
    if (missing) return facet_err(err, FACET_E_FORMAT, "%s: tokenizer.ggml.%s", f->path, missing);
    if (first >= 0) {
        if (!(tok->post.prefix = malloc(sizeof(int32_t)))) return facet_err(err, FACET_E_NOMEM, "out of memory");
        tok->post.prefix[0] = first, tok->post.n_prefix = 1;
    }
    if (post >= 0) {
        if (!(tok->post.suffix = malloc(sizeof(int32_t)))) return facet_err(err, FACET_E_NOMEM, "out of memory");
        tok->post.suffix[0] = post, tok->post.n_suffix = 1;
    }
    return FACET_OK;
}

static facet_status load(facet_tokenizer *tok, const gguf_file *f, facet_error *err) {
    tok_gguf *g = &tok->gguf;
    const char *model, *pname = NULL;
    uint64_t mlen, plen = 0;
    facet_status st = gguf_get_str(f, "tokenizer.ggml.model", 1, &model, &mlen, NULL, err);
    if (st) return st;
    if (mlen == 5 && !memcmp(model, "llama", 5)) g->kind = TOK_GGUF_SPM;
    else if (mlen == 4 && !memcmp(model, "gpt2", 4)) g->kind = TOK_GGUF_BPE;
    else if (mlen == 4 && !memcmp(model, "bert", 4)) g->kind = TOK_GGUF_WPM;
    else
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "%s: tokenizer.ggml.model is \"%.*s\"; supported: llama (SentencePiece), gpt2 (byte-level "
                         "BPE), bert (WordPiece)",
                         f->path, mlen > 60 ? 60 : (int)mlen, model);
    const tok_gguf_pre *pre = NULL;
    if (g->kind == TOK_GGUF_BPE) { /* the other models have one pre-tokenizer each */
        int present = 0;
        if ((st = gguf_get_str(f, "tokenizer.ggml.pre", 0, &pname, &plen, &present, err))) return st;
        if (!present) pname = "default", plen = 7; /* llama.cpp's fallback, with a warning */
        if (!(pre = tok_gguf_pre_find(pname, (size_t)plen))) {
            char names[1024];
            tok_gguf_pre_names(names, sizeof names);
            return facet_err(err, FACET_E_UNSUPPORTED, "%s: tokenizer.ggml.pre is \"%.*s\"; supported: %s", f->path,
                             plen > 60 ? 60 : (int)plen, pname, names);
        }
    }
    if ((st = read_tokens(tok, f, err))) return st;
    int n = (int)gguf_find_kv(f, "tokenizer.ggml.tokens")->arr_n;
    g->unk_id = g->bos_id = g->eos_id = g->sep_id = -1;
    if (g->kind == TOK_GGUF_SPM) g->unk_id = 0, g->bos_id = 1, g->eos_id = 2;
    if (g->kind == TOK_GGUF_WPM) g->unk_id = 100, g->bos_id = 101, g->sep_id = 102;
    int32_t *defaults[] = {&g->unk_id, &g->bos_id, &g->eos_id, &g->sep_id};
    for (int i = 0; i < 4; i++)
        if (*defaults[i] >= n) *defaults[i] = -1; /* a default past a small vocabulary */
    if ((st = get_id(f, "tokenizer.ggml.unknown_token_id", n, &g->unk_id, err)) ||
        (st = get_id(f, "tokenizer.ggml.bos_token_id", n, &g->bos_id, err)) ||
        (st = get_id(f, "tokenizer.ggml.eos_token_id", n, &g->eos_id, err)) ||
        (st = get_id(f, "tokenizer.ggml.seperator_token_id", n, &g->sep_id, err)))
        return st;
    g->add_space_prefix = g->kind == TOK_GGUF_SPM;
    g->lowercase = g->strip_accents = 1;
    if ((st = get_flag(f, "tokenizer.ggml.add_space_prefix", &g->add_space_prefix, err)) ||
        (st = get_flag(f, "tokenizer.ggml.normalizer.lowercase", &g->lowercase, err)))
        return st;
    g->strip_accents = g->lowercase;
    if ((st = get_flag(f, "tokenizer.ggml.normalizer.strip_accents", &g->strip_accents, err))) return st;
    if (g->kind == TOK_GGUF_BPE) {
        if ((st = read_merges(tok, f, err))) return st;
        tok->bpe.ignore_merges = pre->ignore_merges;
        tok->clean_up_spaces = pre->clean_spaces;
    }
    if (g->kind == TOK_GGUF_WPM) tok->clean_up_spaces = 1;
    tok->bpe.unk_id = -1;
    if ((st = tok_build_tables(tok, n - 1, err))) return st;
    /* control, user-defined and unknown tokens are split out of the text first */
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        uint8_t t = g->type[i];
        tok->id_special[i] = t == TOK_TYPE_CONTROL;
        if (!tok->id_str[i]) tok->id_str[i] = "", tok->id_len[i] = 0;
        k += (t == TOK_TYPE_CONTROL || t == TOK_TYPE_USER_DEFINED || t == TOK_TYPE_UNKNOWN) && tok->id_len[i];
    }
    len_id *order = malloc((k ? k : 1) * sizeof *order);
    g->special = malloc((k ? k : 1) * sizeof *g->special);
    if (!order || !g->special) {
        free(order);
        return facet_err(err, FACET_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        uint8_t t = g->type[i];
        if ((t == TOK_TYPE_CONTROL || t == TOK_TYPE_USER_DEFINED || t == TOK_TYPE_UNKNOWN) && tok->id_len[i])
            order[g->n_special].len = tok->id_len[i], order[g->n_special++].id = i;
    }
    qsort(order, g->n_special, sizeof *order, cmp_special);
    for (size_t i = 0; i < g->n_special; i++) g->special[i] = order[i].id;
    free(order);
    if ((st = set_strip(tok, f, err)) || (st = set_post(tok, f, pre, err))) return st;
    return build_chains(tok, f, pre, err);
}

facet_status tok_load_gguf(const gguf_file *f, facet_tokenizer **out, facet_error *err) {
    *out = NULL;
    facet_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) return facet_err(err, FACET_E_NOMEM, "out of memory");
    facet_status st = load(tok, f, err);
    if (!st) {
        tok->cache = calloc(1, sizeof *tok->cache);
        if (!tok->cache) st = facet_err(err, FACET_E_NOMEM, "out of memory");
        else pthread_mutex_init(&tok->cache->lock, NULL);
    }
    if (st) {
        facet_tokenizer_free(tok);
        return st;
    }
    *out = tok;
    return FACET_OK;
}
