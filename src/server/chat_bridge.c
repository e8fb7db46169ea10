/* chat_bridge.c — chat completions over the chat template (see chat_bridge.h).
 *
 * This build has no chat-template engine wired in yet (include/facet_chat.h), so every
 * chat request is answered with a clear OpenAI error naming the reason instead of a
 * guessed prompt format. */
#include "server/chat_bridge.h"

int srv_chat_prompt(srv_server *s, const oai_request *r, int32_t **ids, size_t *n,
                    oai_error *e) {
    (void)r;
    *ids = NULL;
    *n = 0;
    return oai_fail(e, 400, "invalid_request_error", "messages", "chat_template_unavailable",
                    "model '%s' cannot serve chat completions: this build of facet has no chat "
                    "template engine; use /v1/completions",
                    s->model_id);
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
