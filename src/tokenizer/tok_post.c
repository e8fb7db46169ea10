/* tok_post.c — post-processors (tokenizers/src/processors): TemplateProcessing,
 * RobertaProcessing, BertProcessing, ByteLevel (offsets only: no ids) and Sequence. For
 * a single sequence each reduces to special ids before and after sequence A, added
 * when add_special_tokens is on. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"
#include "util/error.h"
#include "util/json.h"

void tok_post_free(tok_post *p) {
    free(p->prefix);
    free(p->suffix);
    memset(p, 0, sizeof *p);
}

static int push_ids(int32_t **v, size_t *n, const int32_t *ids, size_t k) {
    int32_t *p = realloc(*v, (*n + k + 1) * sizeof *p);
    if (!p) return -1;
    if (k) memcpy(p + *n, ids, k * sizeof *ids);
    *v = p;
    *n += k;
    return 0;
}

static facet_status check_id(const facet_tokenizer *tok, json_t *v, const char *path, int32_t *id,
                             facet_error *err) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= tok->vocab_size)
        return facet_err(err, FACET_E_FORMAT, "%s: expected a token id below %d", path, tok->vocab_size);
    *id = (int32_t)json_integer_value(v);
    return FACET_OK;
}

static facet_status template_single(const json_t *j, const char *path, const facet_tokenizer *tok,
                                    tok_post *out, facet_error *err) {
    json_t *single = json_object_get(j, "single"), *specials = json_object_get(j, "special_tokens");
    if (!json_is_array(single))
        return facet_err(err, FACET_E_FORMAT, "%s.single: expected an array, got %s", path,
                         single ? facet_json_type_name(single) : "nothing");
    int seen_a = 0;
    for (size_t i = 0; i < json_array_size(single); i++) {
        json_t *piece = json_array_get(single, i);
        char sub[512];
        snprintf(sub, sizeof sub, "%s.single[%zu]", path, i);
        json_t *seq = json_object_get(piece, "Sequence"), *sp = json_object_get(piece, "SpecialToken");
        if (json_is_object(seq)) {
            json_t *id = json_object_get(seq, "id");
            if (!json_is_string(id) || strcmp(json_string_value(id), "A") || seen_a)
                return facet_err(err, FACET_E_UNSUPPORTED,
                                 "%s: a single-sequence template must hold sequence \"A\" exactly once", sub);
            seen_a = 1;
            continue;
        }
        if (!json_is_object(sp))
            return facet_err(err, FACET_E_FORMAT, "%s: expected {\"Sequence\": ...} or {\"SpecialToken\": ...}", sub);
        json_t *name = json_object_get(sp, "id");
        if (!json_is_string(name))
            return facet_err(err, FACET_E_FORMAT, "%s.SpecialToken.id: expected a string", sub);
        json_t *def = json_object_get(specials, json_string_value(name));
        json_t *ids = json_object_get(def, "ids");
        if (!json_is_array(ids))
            return facet_err(err, FACET_E_FORMAT, "%s.special_tokens[\"%.60s\"].ids: expected an array", path,
                             json_string_value(name));
        for (size_t k = 0; k < json_array_size(ids); k++) {
            int32_t id = -1;
            char p2[600];
            snprintf(p2, sizeof p2, "%s.special_tokens[\"%.60s\"].ids[%zu]", path, json_string_value(name), k);
            facet_status st = check_id(tok, json_array_get(ids, k), p2, &id, err);
            if (st) return st;
            if (seen_a ? push_ids(&out->suffix, &out->n_suffix, &id, 1) : push_ids(&out->prefix, &out->n_prefix, &id, 1))
                return facet_err(err, FACET_E_NOMEM, "out of memory");
        }
    }
    if (!seen_a) return facet_err(err, FACET_E_UNSUPPORTED, "%s.single: no sequence \"A\" in the template", path);
    return FACET_OK;
}

static facet_status cls_sep(const json_t *j, const char *path, const facet_tokenizer *tok, tok_post *out,
                            facet_error *err) {
    const char *keys[2] = {"cls", "sep"};
    for (int k = 0; k < 2; k++) {
        json_t *v = json_object_get(j, keys[k]);
        char sub[512];
        snprintf(sub, sizeof sub, "%s.%s[1]", path, keys[k]);
        if (!json_is_array(v) || json_array_size(v) != 2)
            return facet_err(err, FACET_E_FORMAT, "%s.%s: expected [token, id]", path, keys[k]);
        int32_t id = -1;
        facet_status st = check_id(tok, json_array_get(v, 1), sub, &id, err);
        if (st) return st;
        if (k == 0 ? push_ids(&out->prefix, &out->n_prefix, &id, 1) : push_ids(&out->suffix, &out->n_suffix, &id, 1))
            return facet_err(err, FACET_E_NOMEM, "out of memory");
    }
    return FACET_OK;
}

facet_status tok_post_parse(const json_t *j, const char *path, const facet_tokenizer *tok, tok_post *out,
                            facet_error *err) {
    const char *type;
    facet_status st = tok_jget_type(j, path, &type, err);
    if (st) return st;
    if (!strcmp(type, "ByteLevel")) return FACET_OK;
    if (!strcmp(type, "TemplateProcessing")) return template_single(j, path, tok, out, err);
    if (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing")) return cls_sep(j, path, tok, out, err);
    if (!strcmp(type, "Sequence")) {
        json_t *arr = json_object_get(j, "processors");
        if (!json_is_array(arr))
            return facet_err(err, FACET_E_FORMAT, "%s.processors: expected an array", path);
        for (size_t i = 0; i < json_array_size(arr); i++) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s.processors[%zu]", path, i);
            tok_post inner = {0};
            st = tok_post_parse(json_array_get(arr, i), sub, tok, &inner, err);
            /* each later processor wraps the result of the earlier ones */
            int32_t *pre = NULL;
            size_t npre = 0;
            if (!st && (push_ids(&pre, &npre, inner.prefix, inner.n_prefix) ||
                        push_ids(&pre, &npre, out->prefix, out->n_prefix) ||
                        push_ids(&out->suffix, &out->n_suffix, inner.suffix, inner.n_suffix)))
                st = facet_err(err, FACET_E_NOMEM, "out of memory");
            if (!st) {
                free(out->prefix);
                out->prefix = pre;
                out->n_prefix = npre;
            } else {
                free(pre);
            }
            tok_post_free(&inner);
            if (st) return st;
        }
        return FACET_OK;
    }
    return facet_err(err, FACET_E_UNSUPPORTED, "%s.type: post-processor \"%s\" is not supported", path, type);
}
