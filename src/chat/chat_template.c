/*
 * chat_template.c — loading a checkpoint's chat template and rendering conversations
 * with the variables transformers' apply_chat_template passes (facet_chat.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "facet_chat.h"
#include "chat/chat_internal.h"
#include "chat/jinja.h"
#include "io/gguf.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

#define MAX_CONFIG_BYTES (256u << 20)

struct facet_chat_template {
    char *src_default, *src_tools; /* src_tools may be NULL */
    char source[4096];               /* the file the template was read from, or "template" */
    jtemplate t_default, t_tools;
    json_t *special; /* object of special-token variables */
    json_t *tokens;  /* array of the added/special token strings of tokenizer_config.json */
};

int chat_template_mentions(const facet_chat_template *tpl, const char *marker) {
    if (strstr(tpl->src_default, marker) || (tpl->src_tools && strstr(tpl->src_tools, marker))) return 1;
    size_t i;
    json_t *x;
    json_array_foreach(tpl->tokens, i, x) {
        if (!strcmp(json_string_value(x), marker)) return 1;
    }
    return 0;
}

const char *facet_chat_template_origin(const facet_chat_template *tpl) {
    return tpl->source;
}

void facet_chat_template_free(facet_chat_template *tpl) {
    if (!tpl) return;
    jinja_template_free(&tpl->t_default);
    jinja_template_free(&tpl->t_tools);
    free(tpl->src_default);
    free(tpl->src_tools);
    json_decref(tpl->special);
    json_decref(tpl->tokens);
    free(tpl);
}

static facet_status compile(facet_chat_template *t, const char *what, facet_error *err) {
    snprintf(t->source, sizeof t->source, "%s", what);
    facet_status st = jinja_parse(t->src_default, strlen(t->src_default), &t->t_default, err);
    if (!st && t->src_tools) st = jinja_parse(t->src_tools, strlen(t->src_tools), &t->t_tools, err);
    if (st) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        return facet_err(err, st, "%s: %s", what, msg);
    }
    return FACET_OK;
}

/* tokenizer_config.json special tokens -> variables (AddedToken dicts reduced to
 * "content", null tokens skipped), as transformers' special_tokens_map. */
static facet_status special_vars(const json_t *cfg, const char *path, json_t *out, facet_error *err) {
    static const char *const names[] = {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                                        "cls_token", "mask_token", NULL};
    for (int i = 0; names[i]; i++) {
        json_t *v = json_object_get(cfg, names[i]);
        if (!v || json_is_null(v)) continue;
        if (json_is_object(v)) v = json_object_get(v, "content");
        if (!json_is_string(v))
            return facet_err(err, FACET_E_FORMAT, "%s: %s is %s, expected a string or an AddedToken object", path,
                             names[i], facet_json_type_name(v));
        json_object_set(out, names[i], v);
    }
    json_t *add = json_object_get(cfg, "additional_special_tokens");
    if (add && json_is_array(add)) {
        json_t *l = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(add, i, x) {
            json_t *c = json_is_object(x) ? json_object_get(x, "content") : x;
            if (!json_is_string(c)) {
                json_decref(l);
                return facet_err(err, FACET_E_FORMAT, "%s: additional_special_tokens[%zu] is %s, expected a string", path, i,
                                 facet_json_type_name(c));
            }
            json_array_append(l, c);
        }
        json_object_set_new(out, "additional_special_tokens", l);
    }
    return FACET_OK;
}

/* tokenizer_config.json holds integers beyond 64 bits (model_max_length 1e30 written
 * as an integer), which jansson refuses: read exactly (util/json.h), as every tree whose
 * strings reach the template is. */
static facet_status load_config(const char *path, json_t **out, facet_error *err) {
    char *text;
    size_t len;
    facet_status st = facet_read_file(path, MAX_CONFIG_BYTES, &text, &len, err);
    if (st) return st;
    json_error_t je;
    *out = facet_json_loadb_exact(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    free(text);
    if (!*out && facet_json_nomem(&je)) return facet_err(err, FACET_E_NOMEM, "%s: out of memory", path);
    if (!*out) return facet_err(err, FACET_E_PARSE, "%s:%d:%d: not valid JSON: %s", path, je.line, je.column, je.text);
    return FACET_OK;
}

/* The text of token `id_key`'s id in the GGUF file's token list, set as variable `name`;
 * absent or out-of-range ids set nothing (the tokenizer's load reports those). */
static void gguf_special_var(const gguf_file *f, const char *id_key, const char *name, json_t *out) {
    int64_t id;
    int present = 0;
    const gguf_kv *toks = gguf_find_kv(f, "tokenizer.ggml.tokens");
    if (!toks || gguf_get_int(f, id_key, 0, 0, INT32_MAX, &id, &present, NULL) != FACET_OK || !present) return;
    const char *s;
    uint64_t len;
    if (gguf_arr_str(toks, (uint64_t)id, &s, &len)) json_object_set_new(out, name, json_stringn_nocheck(s, len));
}

/* The chat template of a GGUF model: tokenizer.chat_template (and .tool_use), with the
 * special tokens and the control / user-defined token strings of its vocabulary. */
static facet_status load_gguf(const char *path, facet_chat_template *t, facet_error *err) {
    gguf_model gm;
    facet_status st = gguf_model_open(path, &gm, err);
    if (st) return st;
    const gguf_file *f = &gm.files[0];
    const char *src;
    uint64_t len;
    int present = 0;
    st = gguf_get_str(f, "tokenizer.chat_template", 0, &src, &len, &present, err);
    if (!st && !present)
        st = facet_err(err, FACET_E_NOT_FOUND, "%s: no chat template (the GGUF metadata has no tokenizer.chat_template)",
                       f->path);
    if (!st && memchr(src, 0, (size_t)len))
        st = facet_err(err, FACET_E_FORMAT, "%s: key tokenizer.chat_template holds a NUL byte, expected Jinja text",
                       f->path);
    if (!st && !(t->src_default = strndup(src, (size_t)len))) st = facet_err(err, FACET_E_NOMEM, "out of memory");
    if (!st && gguf_get_str(f, "tokenizer.chat_template.tool_use", 0, &src, &len, &present, NULL) == FACET_OK &&
        present && !memchr(src, 0, (size_t)len) && !(t->src_tools = strndup(src, (size_t)len)))
        st = facet_err(err, FACET_E_NOMEM, "out of memory");
    if (!st) {
        static const char *const keys[][2] = {{"tokenizer.ggml.bos_token_id", "bos_token"},
                                              {"tokenizer.ggml.eos_token_id", "eos_token"},
                                              {"tokenizer.ggml.unknown_token_id", "unk_token"},
                                              {"tokenizer.ggml.seperator_token_id", "sep_token"},
                                              {"tokenizer.ggml.padding_token_id", "pad_token"}};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) gguf_special_var(f, keys[i][0], keys[i][1], t->special);
        /* control (3) and user-defined (4) tokens: the added tokens of tokenizer.json */
        const gguf_kv *toks = gguf_find_kv(f, "tokenizer.ggml.tokens"), *types = gguf_find_kv(f, "tokenizer.ggml.token_type");
        if (toks && types && types->type == GGUF_T_ARRAY && types->arr_type == GGUF_T_INT32) {
            uint64_t pos = 0;
            for (uint64_t i = 0; i < types->arr_n && gguf_arr_str_next(toks, &pos, &src, &len); i++) {
                const uint8_t *v = types->val + 4 * i;
                int32_t ty = (int32_t)((uint32_t)v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16 | (uint32_t)v[3] << 24);
                if (ty == 3 || ty == 4) json_array_append_new(t->tokens, json_stringn_nocheck(src, len));
            }
        }
        char what[4200];
        snprintf(what, sizeof what, "%s: tokenizer.chat_template", f->path);
        st = compile(t, what, err);
    }
    gguf_model_close(&gm);
    return st;
}

facet_status facet_chat_template_load(const char *dir, facet_chat_template **out, facet_error *err) {
    *out = NULL;
    if (!facet_is_dir(dir) && gguf_path_is_gguf(dir)) { /* a .gguf file: its metadata */
        facet_chat_template *t = calloc(1, sizeof *t);
        if (!t) return facet_err(err, FACET_E_NOMEM, "%s: out of memory", dir);
        t->special = json_object();
        t->tokens = json_array();
        facet_status st = load_gguf(dir, t, err);
        if (st) {
            facet_chat_template_free(t);
            return st;
        }
        *out = t;
        return FACET_OK;
    }
    if (!facet_is_dir(dir))
        return facet_err(err, FACET_E_NOT_FOUND, "%s: no such folder (a chat template is read from "
                         "a model folder)", dir);
    char path[4096], cfgpath[4096];
    facet_chat_template *t = calloc(1, sizeof *t);
    if (!t) return facet_err(err, FACET_E_NOMEM, "%s: out of memory", dir);
    t->special = json_object();
    t->tokens = json_array();
    json_t *cfg = NULL;
    facet_status st = FACET_OK;
    if (!facet_path_join(cfgpath, sizeof cfgpath, dir, "tokenizer_config.json")) {
        st = facet_err(err, FACET_E_INVALID_ARGUMENT, "%s: path too long", dir);
        goto done;
    }
    if (facet_is_file(cfgpath)) {
        if ((st = load_config(cfgpath, &cfg, err))) goto done;
        if (!json_is_object(cfg)) {
            st = facet_err(err, FACET_E_FORMAT, "%s: expected a JSON object, got %s", cfgpath, facet_json_type_name(cfg));
            goto done;
        }
        if ((st = special_vars(cfg, cfgpath, t->special, err))) goto done;
        json_t *dec = json_object_get(cfg, "added_tokens_decoder");
        const char *k;
        json_t *x;
        json_object_foreach(dec, k, x) {
            json_t *c = json_object_get(x, "content");
            if (json_is_string(c)) json_array_append(t->tokens, c);
        }
        json_t *add = json_object_get(t->special, "additional_special_tokens");
        if (add) json_array_extend(t->tokens, add);
    }
    /* 1. chat_template.jinja */
    facet_path_join(path, sizeof path, dir, "chat_template.jinja");
    if (facet_is_file(path)) {
        size_t len;
        if ((st = facet_read_file(path, MAX_CONFIG_BYTES, &t->src_default, &len, err))) goto done;
        st = compile(t, path, err);
        goto done;
    }
    /* 2. tokenizer_config.json chat_template */
    json_t *ct = cfg ? json_object_get(cfg, "chat_template") : NULL;
    if (ct && json_is_string(ct)) {
        t->src_default = strdup(json_string_value(ct));
        st = t->src_default ? compile(t, cfgpath, err) : facet_err(err, FACET_E_NOMEM, "out of memory");
        goto done;
    }
    if (ct && json_is_array(ct)) {
        size_t i;
        json_t *x;
        json_array_foreach(ct, i, x) {
            const char *nm = json_string_value(json_object_get(x, "name"));
            const char *src = json_string_value(json_object_get(x, "template"));
            if (!nm || !src) {
                st = facet_err(err, FACET_E_FORMAT, "%s: chat_template[%zu] needs string \"name\" and \"template\"", cfgpath, i);
                goto done;
            }
            if (!strcmp(nm, "default") && !t->src_default) t->src_default = strdup(src);
            if (!strcmp(nm, "tool_use") && !t->src_tools) t->src_tools = strdup(src);
        }
        if (!t->src_default) {
            st = facet_err(err, FACET_E_NOT_FOUND, "%s: chat_template list has no \"default\" entry", cfgpath);
            goto done;
        }
        st = compile(t, cfgpath, err);
        goto done;
    }
    if (ct && !json_is_null(ct)) {
        st = facet_err(err, FACET_E_FORMAT, "%s: chat_template is %s, expected a string or a list of {name, template}",
                       cfgpath, facet_json_type_name(ct));
        goto done;
    }
    /* 3. chat_template.json */
    facet_path_join(path, sizeof path, dir, "chat_template.json");
    if (facet_is_file(path)) {
        json_t *j;
        if ((st = facet_json_load_file(path, MAX_CONFIG_BYTES, &j, err))) goto done;
        const char *src = json_string_value(json_object_get(j, "chat_template"));
        if (!src) {
            json_decref(j);
            st = facet_err(err, FACET_E_FORMAT, "%s: expected an object with a string \"chat_template\"", path);
            goto done;
        }
        t->src_default = strdup(src);
        json_decref(j);
        st = compile(t, path, err);
        goto done;
    }
    if (gguf_path_is_gguf(dir)) { /* a folder holding a GGUF model: its metadata */
        st = load_gguf(dir, t, err);
        goto done;
    }
    st = facet_err(err, FACET_E_NOT_FOUND,
                   "%s: no chat template (looked for chat_template.jinja, tokenizer_config.json \"chat_template\", "
                   "chat_template.json)", dir);
done:
    json_decref(cfg);
    if (st) {
        facet_chat_template_free(t);
        return st;
    }
    *out = t;
    return FACET_OK;
}

facet_status facet_chat_template_from_string(const char *source, const char *special_tokens_json,
                                             facet_chat_template **out, facet_error *err) {
    *out = NULL;
    facet_chat_template *t = calloc(1, sizeof *t);
    if (!t) return facet_err(err, FACET_E_NOMEM, "template: out of memory");
    t->tokens = json_array();
    facet_status st = FACET_OK;
    if (special_tokens_json) {
        st = facet_json_parse_exact(special_tokens_json, strlen(special_tokens_json), "special tokens", &t->special, err);
        if (!st && !json_is_object(t->special))
            st = facet_err(err, FACET_E_PARSE, "special tokens: expected a JSON object");
    } else {
        t->special = json_object();
    }
    if (!st) {
        t->src_default = strdup(source);
        st = t->src_default ? compile(t, "template", err) : facet_err(err, FACET_E_NOMEM, "out of memory");
    }
    if (st) {
        facet_chat_template_free(t);
        return st;
    }
    *out = t;
    return FACET_OK;
}

const char *facet_chat_template_token(const facet_chat_template *tpl, const char *name) {
    return json_string_value(json_object_get(tpl->special, name));
}

const char *facet_chat_template_source(const facet_chat_template *tpl, int with_tools) {
    return with_tools && tpl->src_tools ? tpl->src_tools : tpl->src_default;
}

/* The instant strftime_now formats: SOURCE_DATE_EPOCH (UTC) when set to an integer,
 * else the clock in local time, as Python's datetime.now(). */
static int64_t render_now(int *local) {
    const char *e = getenv("SOURCE_DATE_EPOCH");
    *local = 0;
    if (e && *e) {
        char *end;
        errno = 0;
        long long v = strtoll(e, &end, 10);
        if (!errno && !*end) return v;
    }
    *local = 1;
    return (int64_t)time(NULL);
}

facet_status facet_chat_render(const facet_chat_template *tpl, const char *messages_json, const char *tools_json,
                               int add_generation_prompt, const char *vars_json, char **out_text, size_t *out_len,
                               facet_error *err) {
    *out_text = NULL;
    if (out_len) *out_len = 0;
    if (!tpl || !messages_json) return facet_err(err, FACET_E_INVALID_ARGUMENT, "chat render: template and messages are required");
    json_t *vars = json_object(), *msgs = NULL, *tools = NULL, *extra = NULL;
    facet_status st = facet_json_parse_exact(messages_json, strlen(messages_json), "messages", &msgs, err);
    if (!st && !json_is_array(msgs)) st = facet_err(err, FACET_E_PARSE, "messages: expected a JSON array, got %s", facet_json_exact_type_name(msgs));
    if (!st && tools_json) {
        st = facet_json_parse_exact(tools_json, strlen(tools_json), "tools", &tools, err);
        if (!st && !json_is_array(tools) && !json_is_null(tools))
            st = facet_err(err, FACET_E_PARSE, "tools: expected a JSON array, got %s", facet_json_exact_type_name(tools));
    }
    if (!st && vars_json) {
        st = facet_json_parse_exact(vars_json, strlen(vars_json), "variables", &extra, err);
        if (!st && !json_is_object(extra)) st = facet_err(err, FACET_E_PARSE, "variables: expected a JSON object, got %s", facet_json_exact_type_name(extra));
    }
    if (!st) {
        int with_tools = tools && !json_is_null(tools);
        json_object_set(vars, "messages", msgs);
        json_object_set(vars, "tools", tools ? tools : json_null());
        json_object_set_new(vars, "documents", json_null());
        json_object_set_new(vars, "add_generation_prompt", json_boolean(add_generation_prompt));
        json_object_update(vars, tpl->special);
        if (extra) json_object_update(vars, extra);
        const jtemplate *jt = with_tools && tpl->src_tools ? &tpl->t_tools : &tpl->t_default;
        int local;
        int64_t now = render_now(&local);
        st = jinja_render(jt, vars, NULL, now, local, out_text, out_len, err);
    }
    json_decref(vars);
    json_decref(msgs);
    json_decref(tools);
    json_decref(extra);
    return st;
}
