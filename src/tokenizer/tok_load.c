/* tok_load.c — reading tokenizer.json (+ tokenizer_config.json) into a facet_tokenizer.
 * Field meanings follow the Hugging Face `tokenizers` serialization (tokenizer.json
 * "version" 1.0) and transformers' PreTrainedTokenizerFast / LlamaTokenizerFast /
 * GemmaTokenizerFast constructors for the config rules. */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

#define TOK_MAX_FILE ((size_t)1 << 30)

/* Merges are resolved in batches: the 3 * MB vocabulary lookups of a batch (a, b and
 * the merged token) are hashed and their slots and keys prefetched before any is
 * probed, so the cache misses of a 10^5..10^6-entry table overlap. */
#define MB 32

typedef struct merge_ctx {
    facet_tokenizer *tok;
    const char *what;
    facet_str text;              /* a, b and a+b of each pending merge */
    size_t off[MB][3], len[MB][3], rank[MB];
    uint32_t hash[MB][3];
    size_t n;
} merge_ctx;

static facet_status flush_merges(merge_ctx *c, facet_error *err) {
    tok_bpe *m = &c->tok->bpe;
    const tok_strmap *v = &m->vocab;
    for (size_t i = 0; i < c->n; i++)
        for (int k = 0; k < 3; k++) {
            c->hash[i][k] = tok_hash(c->text.data + c->off[i][k], c->len[i][k]);
            tok_strmap_prefetch(v, c->hash[i][k]);
        }
    for (size_t i = 0; i < c->n && v->cap; i++)
        for (int k = 0; k < 3; k++) {
            const struct tok_strmap_slot *sl = &v->slots[c->hash[i][k] & (v->cap - 1)];
            if (sl->off) __builtin_prefetch(v->keys.data + sl->off - 1);
        }
    int32_t id[MB][3];
    for (size_t i = 0; i < c->n; i++) {
        for (int k = 0; k < 3; k++)
            id[i][k] = tok_strmap_get_h(v, c->text.data + c->off[i][k], c->len[i][k], c->hash[i][k]);
        for (int k = 0; k < 3; k++) {
            if (id[i][k] >= 0) continue;
            size_t l = c->len[i][k] > 60 ? 60 : c->len[i][k];
            return facet_err(err, FACET_E_FORMAT, "%s: model.merges[%zu]: %s \"%.*s\" is not in model.vocab", c->what,
                             c->rank[i], k == 2 ? "merged token" : "token", (int)l, c->text.data + c->off[i][k]);
        }
        tok_pairmap_prefetch(&m->merges, id[i][0], id[i][1]);
    }
    for (size_t i = 0; i < c->n; i++)
        if (tok_pairmap_put(&m->merges, id[i][0], id[i][1], (uint32_t)c->rank[i], id[i][2]))
            return facet_err(err, FACET_E_NOMEM, "out of memory reading merges");
    c->n = 0;
    c->text.len = 0;
    return FACET_OK;
}

static facet_status add_merge(void *vctx, size_t rank, const char *a, size_t alen, const char *b, size_t blen,
                              facet_error *err) {
    merge_ctx *c = vctx;
    tok_bpe *m = &c->tok->bpe;
    /* the merged token: a + b without b's continuing_subword_prefix length (tokenizers) */
    size_t skip = m->prefix_len <= blen ? m->prefix_len : blen;
    size_t i = c->n;
    c->rank[i] = rank;
    c->off[i][0] = c->text.len, c->len[i][0] = alen;
    c->off[i][1] = c->text.len + alen, c->len[i][1] = blen;
    c->off[i][2] = c->text.len + alen + blen, c->len[i][2] = alen + blen - skip;
    if (facet_str_append(&c->text, a, alen) || facet_str_append(&c->text, b, blen) || facet_str_append(&c->text, a, alen) ||
        facet_str_append(&c->text, b + skip, blen - skip))
        return facet_err(err, FACET_E_NOMEM, "out of memory reading merges");
    c->n++;
    return c->n == MB ? flush_merges(c, err) : FACET_OK;
}

static char *dupn(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static facet_status parse_added(facet_tokenizer *tok, const json_t *root, const char *what,
                                facet_error *err) {
    json_t *arr = json_object_get(root, "added_tokens");
    if (!arr || json_is_null(arr)) return FACET_OK;
    if (!json_is_array(arr))
        return facet_err(err, FACET_E_FORMAT, "%s: added_tokens: expected an array, got %s", what,
                         facet_json_type_name(arr));
    size_t n = json_array_size(arr);
    tok->added = calloc(n ? n : 1, sizeof *tok->added);
    if (!tok->added) return facet_err(err, FACET_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(arr, i);
        char path[128];
        snprintf(path, sizeof path, "%s: added_tokens[%zu]", what, i);
        if (!json_is_object(o))
            return facet_err(err, FACET_E_FORMAT, "%s: expected an object, got %s", path, facet_json_type_name(o));
        tok_added *a = &tok->added[tok->n_added];
        long long id;
        const char *content;
        size_t clen;
        int b[5];
        facet_status st;
        if ((st = tok_jget_int(o, "id", path, -1, &id, err)) != FACET_OK) return st;
        if (id < 0 || id >= TOK_MAX_ID)
            return facet_err(err, FACET_E_FORMAT, "%s.id: expected a token id 0..%d, got %lld", path, TOK_MAX_ID - 1, id);
        if ((st = tok_jget_str(o, "content", path, 1, &content, &clen, err)) != FACET_OK) return st;
        if (!clen) return facet_err(err, FACET_E_FORMAT, "%s.content: empty added token", path);
        if ((st = tok_jget_bool(o, "special", path, 0, &b[0], err)) ||
            (st = tok_jget_bool(o, "single_word", path, 0, &b[1], err)) ||
            (st = tok_jget_bool(o, "lstrip", path, 0, &b[2], err)) ||
            (st = tok_jget_bool(o, "rstrip", path, 0, &b[3], err)) ||
            (st = tok_jget_bool(o, "normalized", path, !b[0], &b[4], err)))
            return st;
        a->id = (int32_t)id;
        a->content = dupn(content, clen);
        if (!a->content) return facet_err(err, FACET_E_NOMEM, "out of memory");
        a->len = clen;
        a->special = (uint8_t)b[0], a->single_word = (uint8_t)b[1], a->lstrip = (uint8_t)b[2];
        a->rstrip = (uint8_t)b[3], a->normalized = (uint8_t)b[4];
        tok->n_added++;
        if (tok_strmap_put(&tok->added_map, a->content, a->len, a->id))
            return facet_err(err, FACET_E_NOMEM, "out of memory");
    }
    return FACET_OK;
}

static facet_status parse_model(facet_tokenizer *tok, const json_t *model, const char *what,
                                facet_error *err) {
    char path[128];
    snprintf(path, sizeof path, "%s: model", what);
    if (!json_is_object(model))
        return facet_err(err, FACET_E_FORMAT, "%s: expected an object, got %s", path,
                         model ? facet_json_type_name(model) : "nothing");
    const char *type;
    facet_status st = tok_jget_str(model, "type", path, 0, &type, NULL, err);
    if (st != FACET_OK) return st;
    if (!type) type = "BPE"; /* tokenizers accepts an untagged BPE model */
    tok_bpe *m = &tok->bpe;
    const char *s;
    size_t len;
    if (!strcmp(type, "WordPiece")) {
        /* WordPiece: unk_token "[UNK]", continuing_subword_prefix "##" and
         * max_input_chars_per_word 100 by default (tokenizers WordPieceBuilder) */
        long long maxc;
        m->wordpiece = 1;
        if ((st = tok_jget_str(model, "unk_token", path, 0, &s, &len, err))) return st;
        if (!s) s = "[UNK]", len = 5;
        if (!(m->unk_token = dupn(s, len))) return facet_err(err, FACET_E_NOMEM, "out of memory");
        m->unk_id = tok_strmap_get(&m->vocab, s, len);
        if ((st = tok_jget_str(model, "continuing_subword_prefix", path, 0, &s, &len, err))) return st;
        if (!s) s = "##", len = 2;
        if (!(m->prefix = dupn(s, len))) return facet_err(err, FACET_E_NOMEM, "out of memory");
        m->prefix_len = len;
        if ((st = tok_jget_int(model, "max_input_chars_per_word", path, 100, &maxc, err))) return st;
        if (maxc < 0) return facet_err(err, FACET_E_FORMAT, "%s.max_input_chars_per_word: %lld is negative", path, maxc);
        m->max_input_chars_per_word = (size_t)maxc;
        return FACET_OK;
    }
    if (strcmp(type, "BPE"))
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "%s.type: model type \"%s\" is not supported (supported: BPE, WordPiece)", path, type);
    json_t *dropout = json_object_get(model, "dropout");
    if (dropout && !json_is_null(dropout) &&
        !(json_is_number(dropout) && (json_number_value(dropout) == 0.0 || json_number_value(dropout) == 1.0)))
        return facet_err(err, FACET_E_UNSUPPORTED, "%s.dropout: BPE dropout (random merges) is not supported", path);
    if ((st = tok_jget_str(model, "continuing_subword_prefix", path, 0, &s, &len, err))) return st;
    if (s && len) {
        if (!(m->prefix = dupn(s, len))) return facet_err(err, FACET_E_NOMEM, "out of memory");
        m->prefix_len = len;
    }
    if ((st = tok_jget_str(model, "end_of_word_suffix", path, 0, &s, &len, err))) return st;
    if (s && len) {
        if (!(m->suffix = dupn(s, len))) return facet_err(err, FACET_E_NOMEM, "out of memory");
        m->suffix_len = len;
    }
    if ((st = tok_jget_bool(model, "fuse_unk", path, 0, &m->fuse_unk, err)) ||
        (st = tok_jget_bool(model, "byte_fallback", path, 0, &m->byte_fallback, err)) ||
        (st = tok_jget_bool(model, "ignore_merges", path, 0, &m->ignore_merges, err)))
        return st;
    m->unk_id = -1;
    if ((st = tok_jget_str(model, "unk_token", path, 0, &s, &len, err))) return st;
    if (s) {
        m->unk_id = tok_strmap_get(&m->vocab, s, len);
        if (m->unk_id < 0)
            return facet_err(err, FACET_E_FORMAT, "%s.unk_token: \"%.60s\" is not in model.vocab", path, s);
    }
    return FACET_OK;
}

facet_status tok_build_tables(facet_tokenizer *tok, int32_t max_vocab_id, facet_error *err) {
    int32_t max_id = max_vocab_id;
    for (size_t i = 0; i < tok->n_added; i++)
        if (tok->added[i].id > max_id) max_id = tok->added[i].id;
    if (max_id < 0) return facet_err(err, FACET_E_FORMAT, "tokenizer.json: model.vocab is empty");
    size_t n = (size_t)max_id + 1;
    tok->vocab_size = (int)n;
    tok->id_str = calloc(n, sizeof *tok->id_str);
    tok->id_len = calloc(n, sizeof *tok->id_len);
    tok->id_special = calloc(n, 1);
    tok->id_bytefallback = calloc(n, 1);
    if (!tok->id_str || !tok->id_len || !tok->id_special || !tok->id_bytefallback)
        return facet_err(err, FACET_E_NOMEM, "out of memory for %zu token ids", n);
    tok_strmap *v = &tok->bpe.vocab;
    for (size_t e = 0; e < v->cap; e++) {
        if (!v->slots[e].off) continue;
        int32_t id = v->slots[e].value;
        tok->id_str[id] = v->keys.data + v->slots[e].off - 1;
        tok->id_len[id] = v->slots[e].len;
    }
    for (size_t i = 0; i < tok->n_added; i++) {
        tok_added *a = &tok->added[i];
        tok->id_str[a->id] = a->content;
        tok->id_len[a->id] = (uint32_t)a->len;
        tok->id_special[a->id] = a->special;
    }
    /* byte tables: the ByteLevel character of each byte, and "<0xHH>" fallback tokens */
    for (int b = 0; b < 256; b++) {
        char key[8];
        facet_str tmp = {0};
        unsigned char byte = (unsigned char)b;
        if (tok_bytelevel_map(&tmp, (const char *)&byte, 1)) return facet_err(err, FACET_E_NOMEM, "out of memory");
        tok->bpe.byte_id[b] = tok_strmap_get(v, tmp.data, tmp.len);
        facet_str_free(&tmp);
        if (b < 128) {
            char one = (char)b;
            tok->bpe.ascii_id[b] = tok_strmap_get(v, &one, 1);
        }
        snprintf(key, sizeof key, "<0x%02X>", b);
        tok->bpe.fallback_id[b] = tok_strmap_get(v, key, 6);
        if (tok->bpe.fallback_id[b] >= 0) tok->id_bytefallback[tok->bpe.fallback_id[b]] = 1;
    }
    return FACET_OK;
}

static facet_status parse_components(facet_tokenizer *tok, const json_t *root, const char *what,
                                     facet_error *err) {
    char path[128];
    facet_status st;
    json_t *j = json_object_get(root, "normalizer");
    snprintf(path, sizeof path, "%s: normalizer", what);
    if (j && !json_is_null(j) && (st = tok_normalizer_parse(j, path, &tok->normalizer, err))) return st;
    j = json_object_get(root, "pre_tokenizer");
    snprintf(path, sizeof path, "%s: pre_tokenizer", what);
    if (j && !json_is_null(j) && (st = tok_pretok_parse(j, path, &tok->pretok, err))) return st;
    j = json_object_get(root, "decoder");
    snprintf(path, sizeof path, "%s: decoder", what);
    if (j && !json_is_null(j) && (st = tok_decoder_parse(j, path, &tok->decoder, err))) return st;
    j = json_object_get(root, "post_processor");
    snprintf(path, sizeof path, "%s: post_processor", what);
    if (j && !json_is_null(j) && (st = tok_post_parse(j, path, tok, &tok->post, err))) return st;
    return FACET_OK;
}

/* jansson over the file with model.vocab and model.merges replaced by {} and []
 * (building a tree of 10^5..10^6 entries is the slow part of loading); parse errors are
 * mapped back to the line and column of the original file. */
static facet_status parse_rest(const char *json, size_t len, const tok_json_spans *sp, const char *what,
                               json_t **root, facet_error *err) {
    size_t cut[2][2] = {{sp->vocab_start, sp->vocab_end}, {sp->merges_start, sp->merges_end}};
    if (cut[1][0] < cut[0][0]) {
        size_t t0 = cut[0][0], t1 = cut[0][1];
        cut[0][0] = cut[1][0], cut[0][1] = cut[1][1], cut[1][0] = t0, cut[1][1] = t1;
    }
    char *text = malloc(len + 8);
    if (!text) return facet_err(err, FACET_E_NOMEM, "out of memory");
    size_t n = 0, from = 0, removed_before[2] = {0, 0}, kept_at[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        if (cut[k][1] <= cut[k][0]) {
            kept_at[k] = (size_t)-1;
            continue;
        }
        memcpy(text + n, json + from, cut[k][0] - from);
        n += cut[k][0] - from;
        text[n++] = json[cut[k][0]] == '[' ? '[' : '{';
        text[n++] = json[cut[k][0]] == '[' ? ']' : '}';
        kept_at[k] = n;
        removed_before[k] = (cut[k][1] - cut[k][0]) - 2;
        from = cut[k][1];
    }
    memcpy(text + n, json + from, len - from);
    n += len - from;
    json_error_t je;
    *root = json_loadb(text, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    free(text);
    if (*root) return FACET_OK;
    size_t pos = (size_t)je.position;
    for (int k = 0; k < 2; k++)
        if (kept_at[k] != (size_t)-1 && pos >= kept_at[k]) pos += removed_before[k];
    if (pos > len) pos = len;
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos; i++) {
        if (json[i] == '\n') line++, col = 1;
        else col++;
    }
    return facet_err(err, FACET_E_PARSE, "%s:%zu:%zu: not valid JSON: %s", what, line, col, je.text);
}

facet_status tok_load_from_memory(const char *json, size_t len, const char *config_json,
                                  size_t config_len, const char *what, facet_tokenizer **out,
                                  facet_error *err) {
    *out = NULL;
    tok_json_spans sp;
    json_t *root = NULL, *cfg = NULL;
    merge_ctx mc = {0};
    facet_status st = tok_json_find_model_spans(json, len, what, &sp, err);
    if (st == FACET_E_NOMEM) return st;
    if (st != FACET_OK) {
        /* let jansson name line and column when it can */
        json_t *probe = NULL;
        if (facet_json_parse(json, len, what, &probe, err) == FACET_OK) {
            json_decref(probe);
            facet_err(err, FACET_E_FORMAT, "%s: unexpected JSON layout (top level must be an object)", what);
            return FACET_E_FORMAT;
        }
        return err ? err->status : FACET_E_PARSE;
    }
    facet_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) return facet_err(err, FACET_E_NOMEM, "out of memory");
    /* parse the rest with jansson, the two big values replaced by empty ones */
    if ((st = parse_rest(json, len, &sp, what, &root, err))) goto fail;
    if (!json_is_object(root)) {
        st = facet_err(err, FACET_E_FORMAT, "%s: expected a JSON object at the top level, got %s", what,
                       facet_json_type_name(root));
        goto fail;
    }
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model)) {
        st = facet_err(err, FACET_E_FORMAT, "%s: model: expected an object, got %s", what,
                       model ? facet_json_type_name(model) : "nothing");
        goto fail;
    }
    {
        const char *type = NULL;
        json_t *t = json_object_get(model, "type");
        if (json_is_string(t)) type = json_string_value(t);
        if (type && strcmp(type, "BPE") && strcmp(type, "WordPiece")) {
            st = facet_err(err, FACET_E_UNSUPPORTED,
                           "%s: model.type: model type \"%s\" is not supported (supported: BPE, WordPiece)", what, type);
            goto fail;
        }
    }
    if (sp.vocab_end <= sp.vocab_start) {
        st = facet_err(err, FACET_E_FORMAT, "%s: model.vocab: missing", what);
        goto fail;
    }
    int32_t max_id;
    if ((st = tok_json_parse_vocab(json + sp.vocab_start, sp.vocab_end - sp.vocab_start, what, &tok->bpe.vocab,
                                   &max_id, err)))
        goto fail;
    if ((st = parse_model(tok, model, what, err))) goto fail;
    if (sp.merges_end > sp.merges_start) {
        mc.tok = tok;
        mc.what = what;
        /* count the merges: two quotes per "a b" string, four per ["a", "b"] pair */
        size_t quotes = 0;
        for (const char *q = json + sp.merges_start, *e = json + sp.merges_end;
             (q = memchr(q, '"', (size_t)(e - q))); q++)
            quotes++;
        const char *first = json + sp.merges_start + 1;
        while (first < json + sp.merges_end && (*first == ' ' || *first == '\n' || *first == '\r' || *first == '\t')) first++;
        if (tok_pairmap_reserve(&tok->bpe.merges, quotes / (*first == '[' ? 4 : 2) + 16)) {
            st = facet_err(err, FACET_E_NOMEM, "out of memory reading merges");
            goto fail;
        }
        if ((st = tok_json_parse_merges(json + sp.merges_start, sp.merges_end - sp.merges_start, what, add_merge,
                                        &mc, err)) ||
            (st = flush_merges(&mc, err)))
            goto fail;
    }
    if ((st = parse_added(tok, root, what, err))) goto fail;
    if ((st = tok_build_tables(tok, max_id, err))) goto fail;
    if ((st = parse_components(tok, root, what, err))) goto fail;
    if (config_json) {
        /* integers as reals: configs carry values like model_max_length = 1e30 that do
         * not fit 64 bits; no integer of the config is read here */
        json_error_t je;
        cfg = json_loadb(config_json, config_len, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &je);
        if (!cfg) {
            st = facet_err(err, FACET_E_PARSE, "tokenizer_config.json:%d:%d: not valid JSON: %s", je.line, je.column,
                           je.text);
            goto fail;
        }
        if ((st = tok_apply_config(tok, cfg, err))) goto fail;
    }
    if ((st = tok_trie_build(&tok->trie_raw, tok, 0, err)) || (st = tok_trie_build(&tok->trie_norm, tok, 1, err)))
        goto fail;
    tok->cache = calloc(1, sizeof *tok->cache);
    if (!tok->cache) {
        st = facet_err(err, FACET_E_NOMEM, "out of memory");
        goto fail;
    }
    pthread_mutex_init(&tok->cache->lock, NULL);
    facet_str_free(&mc.text);
    json_decref(root);
    json_decref(cfg);
    *out = tok;
    return FACET_OK;
fail:
    facet_str_free(&mc.text);
    json_decref(root);
    json_decref(cfg);
    facet_tokenizer_free(tok);
    return st;
}

facet_status facet_tokenizer_load(const char *dir, facet_tokenizer **out, facet_error *err) {
    char path[4096], cpath[4096];
    char *data = NULL, *cdata = NULL;
    size_t len = 0, clen = 0;
    *out = NULL;
    if (!facet_path_join(path, sizeof path, dir, "tokenizer.json") ||
        !facet_path_join(cpath, sizeof cpath, dir, "tokenizer_config.json"))
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "path too long: %.200s", dir);
    if (!facet_is_file(path) && gguf_path_is_gguf(dir)) { /* the vocabulary in GGUF metadata */
        gguf_model gm;
        facet_status st = gguf_model_open(dir, &gm, err);
        if (st) return st;
        st = tok_load_gguf(&gm.files[0], out, err);
        gguf_model_close(&gm);
        return st;
    }
    if (!facet_is_dir(dir) && !facet_is_file(dir))
        return facet_err(err, FACET_E_IO, "%s: no such file or folder (expected a folder "
                         "holding tokenizer.json or a .gguf file)", dir);
    if (!facet_is_file(path)) {
        facet_status st = facet_tokenizer_unread(dir, err);
        if (st != FACET_OK) return st;
        return facet_err(err, FACET_E_IO, "%s: no tokenizer.json in this folder", path);
    }
    facet_status st = facet_read_file(path, TOK_MAX_FILE, &data, &len, err);
    if (st != FACET_OK) return st;
    if (facet_is_file(cpath) && (st = facet_read_file(cpath, TOK_MAX_FILE, &cdata, &clen, err))) {
        free(data);
        return st;
    }
    st = tok_load_from_memory(data, len, cdata, clen, path, out, err);
    free(data);
    free(cdata);
    /* the config's errors are worded for a buffer ("tokenizer_config.json:..."): name
     * the file it came from */
    static const char cfg_name[] = "tokenizer_config.json";
    if (st != FACET_OK && err && !strncmp(err->message, cfg_name, sizeof cfg_name - 1)) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%.500s%.500s", cpath, err->message + sizeof cfg_name - 1);
        memcpy(err->message, msg, sizeof msg);
    }
    return st;
}

/* Whether the file at `path` opens as a tiktoken vocabulary: its first line is base64
 * text, one space and a decimal rank. A SentencePiece model is protobuf (its first byte
 * 0x0A, field 1 "pieces"), which this never matches. */
static int looks_tiktoken(const char *path) {
    unsigned char b[256];
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    size_t n = fread(b, 1, sizeof b, fp);
    fclose(fp);
    size_t i = 0;
    while (i < n && (isalnum(b[i]) || b[i] == '+' || b[i] == '/' || b[i] == '=')) i++;
    if (i == 0 || i >= n || b[i++] != ' ' || i >= n || !isdigit(b[i])) return 0;
    while (i < n && isdigit(b[i])) i++;
    return i == n || b[i] == '\n' || b[i] == '\r';
}

facet_status facet_tokenizer_unread(const char *dir, facet_error *err) {
    char tj[4096], tk[4096], sp[4096];
    facet_err_clear(err);
    if (!dir || !facet_path_join(tj, sizeof tj, dir, "tokenizer.json") ||
        !facet_path_join(tk, sizeof tk, dir, "tiktoken.model") ||
        !facet_path_join(sp, sizeof sp, dir, "tokenizer.model") || facet_is_file(tj))
        return FACET_OK;
    /* tiktoken.model (Kimi K2), or tokenizer.model holding tiktoken ranks (GLM-4) */
    const char *tik = facet_is_file(tk) ? tk : facet_is_file(sp) && looks_tiktoken(sp) ? sp : NULL;
    if (tik)
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "%s: a tiktoken vocabulary (base64 token and rank per line, read by the "
                         "checkpoint's own tokenization code, e.g. Kimi K2's tokenization_kimi.py, "
                         "GLM-4's tokenization_chatglm.py) and no tokenizer.json: facet reads "
                         "tokenizer.json or GGUF vocabularies, not tiktoken files; give the "
                         "prompt as token ids (--prompt-ids)", tik);
    if (facet_is_file(sp)) /* ChatGLM3, InternLM2, Baichuan: a SentencePiece model alone */
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "%s: a SentencePiece model (protobuf, read by the checkpoint's own "
                         "tokenization code, e.g. ChatGLM3's tokenization_chatglm.py) and no "
                         "tokenizer.json: facet reads tokenizer.json or GGUF vocabularies, not "
                         "SentencePiece model files; give the prompt as token ids (--prompt-ids)",
                         sp);
    return FACET_OK;
}

int facet_tokenizer_present(const char *path) {
    char tj[4096];
    if (!path) return 0;
    if (facet_path_join(tj, sizeof tj, path, "tokenizer.json") && facet_is_file(tj)) return 1;
    if (!gguf_path_is_gguf(path)) return 0;
    gguf_model gm;
    facet_error err = {0};
    if (gguf_model_open(path, &gm, &err) != FACET_OK) return 1; /* the load says why */
    int has = gguf_find_kv(&gm.files[0], "tokenizer.ggml.model") != NULL;
    gguf_model_close(&gm);
    return has;
}

void tok_cache_free(tok_cache *c);

void facet_tokenizer_free(facet_tokenizer *tok) {
    if (!tok) return;
    tok_strmap_free(&tok->bpe.vocab);
    tok_pairmap_free(&tok->bpe.merges);
    free(tok->bpe.prefix);
    free(tok->bpe.suffix);
    free(tok->bpe.unk_token);
    tok_normalizer_free(tok->normalizer);
    tok_pretok_free(tok->pretok);
    tok_decoder_free(tok->decoder);
    tok_post_free(&tok->post);
    for (size_t i = 0; i < tok->n_added; i++) free(tok->added[i].content);
    free(tok->added);
    tok_strmap_free(&tok->added_map);
    tok_trie_free(&tok->trie_raw);
    tok_trie_free(&tok->trie_norm);
    free(tok->id_str);
    free(tok->id_len);
    free(tok->id_special);
    free(tok->id_bytefallback);
    tok_gguf_free(&tok->gguf);
    if (tok->cache) {
        tok_cache_free(tok->cache);
        free(tok->cache);
    }
    free(tok);
}

void facet_tokenizer_set_split_special(facet_tokenizer *tok, int split) {
    if (tok) tok->split_special = split != 0;
}

int facet_tokenizer_vocab_size(const facet_tokenizer *tok) { return tok ? tok->vocab_size : 0; }

int32_t facet_tokenizer_token_to_id(const facet_tokenizer *tok, const char *token) {
    if (!tok || !token) return -1;
    size_t n = strlen(token);
    int32_t id = tok_strmap_get(&tok->added_map, token, n);
    return id >= 0 ? id : tok_strmap_get(&tok->bpe.vocab, token, n);
}

const char *facet_tokenizer_id_to_token(const facet_tokenizer *tok, int32_t id) {
    if (!tok || id < 0 || id >= tok->vocab_size) return NULL;
    return tok->id_str[id];
}

int facet_tokenizer_is_special(const facet_tokenizer *tok, int32_t id) {
    if (!tok || id < 0 || id >= tok->vocab_size) return 0;
    return tok->id_special[id];
}
