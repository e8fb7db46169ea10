/* chat_bridge.c — chat completions over the checkpoint's chat template
 * (facet_chat.h; see chat_bridge.h). */
#include "server/chat_bridge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat_internal.h"
#include "util/error.h"
#include "util/json.h"

void srv_chat_init(srv_server *s) {
    facet_error err;
    s->chat = NULL;
    s->chat_error[0] = '\0';
    s->toolcall_format = FACET_TOOLCALL_NONE;
    facet_status st = facet_chat_template_load(s->cfg.model_dir, &s->chat, &err);
    if (st == FACET_OK) {
        s->toolcall_format = facet_toolcall_format_detect(s->chat);
        return;
    }
    if (st == FACET_E_NOT_FOUND)
        snprintf(s->chat_error, sizeof s->chat_error,
                 "model '%.200s' has no chat template (no chat_template.jinja or "
                 "tokenizer_config.json chat_template); use /v1/completions",
                 s->model_id);
    else
        snprintf(s->chat_error, sizeof s->chat_error,
                 "model '%.100s' has a chat template facet cannot use: %.300s", s->model_id,
                 err.message);
}

void srv_chat_free(srv_server *s) {
    facet_chat_template_free(s->chat);
    s->chat = NULL;
}

/* Messages as templates expect them: content parts joined into one string (OpenAI
 * text parts), the "developer" role read as "system", tool_calls' "arguments" strings
 * parsed into objects when they are JSON objects (transformers' templates render
 * arguments as mappings). A new reference. */
static json_t *normalize_messages(json_t *messages) {
    json_t *out = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(messages, i, m) {
        json_t *c = json_deep_copy(m);
        json_t *content = json_object_get(c, "content");
        if (json_is_array(content)) {
            size_t j, len = 0;
            json_t *part;
            json_array_foreach(content, j, part) len +=
                json_string_length(json_object_get(part, "text"));
            char *joined = malloc(len + 1);
            if (joined) {
                size_t off = 0;
                json_array_foreach(content, j, part) {
                    json_t *t = json_object_get(part, "text");
                    memcpy(joined + off, json_string_value(t), json_string_length(t));
                    off += json_string_length(t);
                }
                json_object_set_new(c, "content", json_stringn_nocheck(joined, len));
                free(joined);
            }
        }
        json_t *role = json_object_get(c, "role");
        if (json_is_string(role) && !strcmp(json_string_value(role), "developer"))
            json_object_set_new(c, "role", json_string("system"));
        json_t *calls = json_object_get(c, "tool_calls");
        size_t k;
        json_t *call;
        json_array_foreach(calls, k, call) {
            json_t *fn = json_object_get(call, "function");
            json_t *args = json_object_get(fn, "arguments");
            if (!json_is_string(args)) continue;
            json_t *parsed = json_loadb(json_string_value(args), json_string_length(args), 0, NULL);
            if (json_is_object(parsed)) json_object_set_new(fn, "arguments", parsed);
            else json_decref(parsed);
        }
        json_array_append_new(out, c);
    }
    return out;
}

/* The assistant turn's opening for tool_choice required / named (see chat_bridge.h). */
static void tool_prefix(facet_toolcall_format fmt, const oai_request *r, char *out, size_t cap) {
    out[0] = '\0';
    if (r->tool_choice != OAI_TOOL_REQUIRED && r->tool_choice != OAI_TOOL_NAMED) return;
    const char *open = fmt == FACET_TOOLCALL_HERMES    ? "<tool_call>\n{\"name\": \""
                       : fmt == FACET_TOOLCALL_MISTRAL ? "[TOOL_CALLS][{\"name\": \""
                                                       : "{\"name\": \"";
    if (r->tool_choice == OAI_TOOL_REQUIRED) {
        snprintf(out, cap, "%s", open);
        return;
    }
    /* the name is JSON-escaped as it would appear in the call */
    json_t *name = json_string(r->tool_name);
    char *quoted = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
    json_decref(name);
    if (!quoted) return;
    size_t ql = strlen(quoted);
    snprintf(out, cap, "%s%.*s\", \"%s\": ", open, ql >= 2 ? (int)(ql - 2) : 0, quoted + 1,
             fmt == FACET_TOOLCALL_LLAMA3 ? "parameters" : "arguments");
    free(quoted);
}

int srv_chat_prompt(srv_server *s, oai_request *r, int32_t **ids, size_t *n, oai_error *e) {
    *ids = NULL;
    *n = 0;
    r->tools_active = 0;
    r->tool_prefix[0] = '\0';
    if (!s->chat)
        return oai_fail(e, 400, "invalid_request_error", "messages", "chat_template_unavailable",
                        "%s", s->chat_error);
    int with_tools = r->tools && r->tool_choice != OAI_TOOL_NONE;
    if (with_tools && s->toolcall_format == FACET_TOOLCALL_NONE)
        return oai_fail(e, 400, "invalid_request_error", "tools", NULL,
                        "the chat template of model '%.200s' shows no tool-call syntax, so "
                        "facet cannot parse tool calls; send no 'tools' or tool_choice "
                        "\"none\"",
                        s->model_id);
    json_t *msgs = normalize_messages(r->messages);
    /* the request's integers beyond 64 bits written back exactly (util/json.h) */
    char *mjson = msgs ? facet_json_dumps_exact(msgs) : NULL;
    json_decref(msgs);
    char *tjson = with_tools ? facet_json_dumps_exact(r->tools) : NULL;
    if (!mjson || (with_tools && !tjson)) {
        free(mjson);
        free(tjson);
        return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    char *text = NULL;
    size_t len = 0;
    facet_error fe;
    facet_status st = facet_chat_render(s->chat, mjson, tjson, 1, NULL, &text, &len, &fe);
    free(mjson);
    free(tjson);
    if (st != FACET_OK)
        return oai_fail_status(e, st, "messages", "chat_template_error",
                               "the chat template failed: %s", fe.message);
    if (with_tools) {
        r->tools_active = 1;
        tool_prefix(s->toolcall_format, r, r->tool_prefix, sizeof r->tool_prefix);
        size_t pl = strlen(r->tool_prefix);
        if (pl) {
            char *t = realloc(text, len + pl + 1);
            if (!t) {
                free(text);
                return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
            }
            text = t;
            memcpy(text + len, r->tool_prefix, pl + 1);
            len += pl;
        }
    }
    /* apply_chat_template tokenizes the rendered text without adding special tokens */
    st = facet_tokenize(s->tok, text, len, 0, ids, n, &fe);
    free(text);
    if (st != FACET_OK) return oai_fail_status(e, st, "messages", NULL, "%s", fe.message);
    return 0;
}

/* Parse prefix + text; *calls is the OpenAI tool_calls array (NULL when none) and
 * *content the remaining text (a new reference, null when empty and calls exist).
 * Returns 0, or -1 out of memory (nothing set). */
static int parse_calls(facet_toolcall_format fmt, const char *prefix, const char *text,
                       size_t len, json_t **calls, json_t **content) {
    *calls = NULL;
    *content = NULL;
    size_t pl = strlen(prefix);
    char *all = malloc(pl + len + 1);
    if (!all) return -1;
    memcpy(all, prefix, pl);
    memcpy(all + pl, text, len);
    all[pl + len] = '\0';
    facet_toolcall_result res;
    facet_error e;
    memset(&res, 0, sizeof res);
    int rc = 0;
    if (facet_toolcall_parse(fmt, all, pl + len, &res, &e) != FACET_OK) {
        rc = -1; /* FACET_E_NOMEM, its only error */
    } else if (res.n_calls > 0) {
        json_t *arr = toolcall_result_array(&res);
        /* whitespace around the calls is not content */
        const char *c = res.content;
        size_t cl = strlen(c);
        while (cl && (c[cl - 1] == ' ' || c[cl - 1] == '\n')) cl--;
        while (cl && (*c == ' ' || *c == '\n')) c++, cl--;
        json_t *ct = cl ? json_stringn(c, cl) : json_null();
        if (!arr || !ct) {
            json_decref(arr);
            json_decref(ct);
            rc = -1;
        } else {
            *calls = arr;
            *content = ct;
        }
    }
    facet_toolcall_result_free(&res);
    free(all);
    return rc;
}

json_t *srv_chat_build_message(facet_toolcall_format fmt, int tools_active, const char *prefix,
                               const char *text, size_t len, const char **finish) {
    if (tools_active) {
        json_t *calls, *content;
        if (parse_calls(fmt, prefix, text, len, &calls, &content)) return NULL;
        if (calls) {
            *finish = "tool_calls";
            return json_pack("{s:s,s:o,s:o}", "role", "assistant", "content", content,
                             "tool_calls", calls);
        }
        /* no call recognized: the opening the prompt was given belongs to the text */
        size_t pl = strlen(prefix);
        char *all = malloc(pl + len + 1);
        if (!all) return NULL;
        memcpy(all, prefix, pl);
        memcpy(all + pl, text, len);
        json_t *m = json_pack("{s:s,s:s%}", "role", "assistant", "content", all, pl + len);
        free(all);
        return m;
    }
    return json_pack("{s:s,s:s%}", "role", "assistant", "content", text, len);
}

json_t *srv_chat_build_delta(facet_toolcall_format fmt, int tools_active, const char *prefix,
                             const char *text, size_t len, const char **finish) {
    json_t *m = srv_chat_build_message(fmt, tools_active, prefix, text, len, finish);
    if (!m) return NULL;
    json_object_del(m, "role");
    json_t *calls = json_object_get(m, "tool_calls");
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c) {
        if (json_object_set_new(c, "index", json_integer((json_int_t)i))) {
            json_decref(m);
            return NULL;
        }
    }
    if (calls && json_is_null(json_object_get(m, "content"))) json_object_del(m, "content");
    return m;
}
