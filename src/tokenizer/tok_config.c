/* tok_config.c — what transformers (v4, PreTrainedTokenizerFast and the Llama / Gemma
 * fast tokenizer classes) changes on top of tokenizer.json, read from
 * tokenizer_config.json: clean_up_tokenization_spaces (decode), split_special_tokens
 * (encode), and for LlamaTokenizer(Fast) / GemmaTokenizer(Fast) the post-processor
 * rebuilt from add_bos_token (default true) and add_eos_token (default false).
 * `legacy` only matters when transformers converts from tokenizer.model, which facet
 * never does. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"
#include "util/json.h"

/* Apply the config rules above to a loaded tokenizer (see tokenizer_internal.h). */
facet_status tok_apply_config(facet_tokenizer *tok, const json_t *cfg, facet_error *err) {
    const char *path = "tokenizer_config.json";
    if (!json_is_object(cfg))
        return facet_err(err, FACET_E_FORMAT, "%s: expected an object, got %s", path, facet_json_type_name(cfg));
    facet_status st;
    if ((st = tok_jget_bool(cfg, "clean_up_tokenization_spaces", path, 0, &tok->clean_up_spaces, err)) ||
        (st = tok_jget_bool(cfg, "split_special_tokens", path, 0, &tok->split_special, err)))
        return st;
    const char *cls;
    if ((st = tok_jget_str(cfg, "tokenizer_class", path, 0, &cls, NULL, err))) return st;
    if (!cls) return FACET_OK;
    /* LlamaTokenizer(Fast) and GemmaTokenizer(Fast) rebuild the post-processor from
     * add_bos_token (default true) and add_eos_token (default false). */
    static const char *const rebuild[] = {"LlamaTokenizer", "LlamaTokenizerFast", "GemmaTokenizer",
                                          "GemmaTokenizerFast"};
    int match = 0;
    for (size_t i = 0; i < sizeof rebuild / sizeof *rebuild; i++) match |= !strcmp(cls, rebuild[i]);
    if (!match) return FACET_OK;
    /* LlamaTokenizerFast given add_prefix_space rebuilds itself from tokenizer.model
     * (from_slow): tokenizer.json alone does not say what that gives. */
    json_t *aps = json_object_get(cfg, "add_prefix_space");
    if (!strncmp(cls, "Llama", 5) && aps && !json_is_null(aps))
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "%s.add_prefix_space: %s with add_prefix_space is rebuilt by transformers from "
                         "tokenizer.model (SentencePiece), which facet does not read",
                         path, cls);
    int add_bos, add_eos;
    if ((st = tok_jget_bool(cfg, "add_bos_token", path, 1, &add_bos, err)) ||
        (st = tok_jget_bool(cfg, "add_eos_token", path, 0, &add_eos, err)))
        return st;
    int32_t ids[2];
    const char *keys[2] = {"bos_token", "eos_token"};
    int want[2] = {add_bos, add_eos};
    for (int k = 0; k < 2; k++) {
        ids[k] = -1;
        if (!want[k]) continue;
        json_t *v = json_object_get(cfg, keys[k]);
        if (json_is_object(v)) v = json_object_get(v, "content");
        if (!json_is_string(v))
            return facet_err(err, FACET_E_FORMAT, "%s.%s: add_%s is true but %s is not a token string", path,
                             keys[k], keys[k], keys[k]);
        ids[k] = facet_tokenizer_token_to_id(tok, json_string_value(v));
        if (ids[k] < 0)
            return facet_err(err, FACET_E_FORMAT, "%s.%s: \"%.60s\" is not a token of tokenizer.json", path,
                             keys[k], json_string_value(v));
    }
    tok_post_free(&tok->post);
    if (add_bos) {
        if (!(tok->post.prefix = malloc(sizeof(int32_t)))) return facet_err(err, FACET_E_NOMEM, "out of memory");
        tok->post.prefix[0] = ids[0];
        tok->post.n_prefix = 1;
    }
    if (add_eos) {
        if (!(tok->post.suffix = malloc(sizeof(int32_t)))) return facet_err(err, FACET_E_NOMEM, "out of memory");
        tok->post.suffix[0] = ids[1];
        tok->post.n_suffix = 1;
    }
    return FACET_OK;
}

