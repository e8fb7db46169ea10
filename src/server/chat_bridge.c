/* chat_bridge.c — chat completions over the checkpoint's chat template
 * (facet_chat.h; see chat_bridge.h). */
#include "server/chat_bridge.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

void srv_chat_init(srv_server *s) {
    facet_error err;
    s->chat = NULL;
    s->chat_error[0] = '\0';
    facet_status st = facet_chat_template_load(s->cfg.model_dir, &s->chat, &err);
    if (st == FACET_OK) return;
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
 * text parts), the "developer" role read as "system". A new reference. */
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
        json_array_append_new(out, c);
    }
    return out;
}

int srv_chat_prompt(srv_server *s, const oai_request *r, int32_t **ids, size_t *n,
                    oai_error *e) {
    *ids = NULL;
    *n = 0;
    if (!s->chat)
        return oai_fail(e, 400, "invalid_request_error", "messages", "chat_template_unavailable",
                        "%s", s->chat_error);
    if (r->tools && r->tool_choice != OAI_TOOL_NONE)
        return oai_fail(e, 400, "invalid_request_error", "tools", NULL,
                        "'tools' with tool_choice other than \"none\" is not supported by this "
                        "build of facet (no tool-call parser)");
    json_t *msgs = normalize_messages(r->messages);
    char *mjson = msgs ? json_dumps(msgs, JSON_COMPACT) : NULL;
    json_decref(msgs);
    if (!mjson) return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    char *text = NULL;
    size_t len = 0;
    facet_error fe;
    facet_status st = facet_chat_render(s->chat, mjson, NULL, 1, NULL, &text, &len, &fe);
    free(mjson);
    if (st != FACET_OK)
        return oai_fail(e, st == FACET_E_NOMEM ? 500 : 400,
                        st == FACET_E_NOMEM ? "server_error" : "invalid_request_error",
                        "messages", "chat_template_error", "the chat template failed: %s",
                        fe.message);
    /* apply_chat_template tokenizes the rendered text without adding special tokens */
    st = facet_tokenize(s->tok, text, len, 0, ids, n, &fe);
    free(text);
    if (st != FACET_OK)
        return oai_fail(e, 400, "invalid_request_error", "messages", NULL, "%s", fe.message);
    return 0;
}

json_t *srv_chat_message(srv_server *s, const oai_request *r, const char *text, size_t len,
                         srv_finish f, const char **finish) {
    (void)s;
    (void)r;
    (void)f;
    (void)finish;
    return json_pack("{s:s,s:s%}", "role", "assistant", "content", text, len);
}

int srv_chat_holds_stream(srv_server *s, const oai_request *r) {
    (void)s;
    (void)r;
    return 0;
}

json_t *srv_chat_final_delta(srv_server *s, json_t *tools, const char *text, size_t len,
                             srv_finish f, const char **finish) {
    (void)s;
    (void)tools;
    (void)f;
    (void)finish;
    return json_pack("{s:s%}", "content", text, len);
}
