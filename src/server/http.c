/* http.c — libmicrohttpd daemon, routing, request bodies, and the small endpoints
 * (/health, /v1/models, /metrics, /tokenize, /detokenize). */
#include "server/http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/error.h"
#include "util/str.h"
#include "util/utf8.h"

/* Per-connection request state (MHD's con_cls). */
typedef struct conn_ctx {
    facet_str body;             /* limit: the config's max_body                         */
    int too_big;
} conn_ctx;

/* srv_respond; `failure` 0 counts a status >= 400 in facet_requests_total only. */
static enum MHD_Result respond(srv_server *s, struct MHD_Connection *c, unsigned status,
                               const char *body, size_t len, const char *content_type,
                               int failure) {
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", content_type);
    srv_cors_headers(s, c, r);
    if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    if (status == 503) MHD_add_response_header(r, "Retry-After", "1");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    pthread_mutex_lock(&s->metrics.mu);
    s->metrics.requests_total++;
    if (status >= 400 && failure) s->metrics.requests_error++;
    pthread_mutex_unlock(&s->metrics.mu);
    return ok;
}

enum MHD_Result srv_respond(srv_server *s, struct MHD_Connection *c, unsigned status,
                            const char *body, size_t len, const char *content_type) {
    return respond(s, c, status, body, len, content_type, 1);
}

static enum MHD_Result respond_error(srv_server *s, struct MHD_Connection *c,
                                     const oai_error *e, int failure) {
    /* server-side failures are worth a line in the server's log; client errors are not */
    if (e->http_status >= 500 && e->http_status != 503)
        srv_log(s, "%d %s", e->http_status, e->message);
    char *body = oai_error_json(e);
    if (!body) return MHD_NO;
    enum MHD_Result r = respond(s, c, (unsigned)e->http_status, body, strlen(body),
                                "application/json", failure);
    free(body);
    return r;
}

enum MHD_Result srv_respond_error(srv_server *s, struct MHD_Connection *c, const oai_error *e) {
    return respond_error(s, c, e, 1);
}

enum MHD_Result srv_respond_gone(srv_server *s, struct MHD_Connection *c, const oai_error *e) {
    return respond_error(s, c, e, 0);
}

enum MHD_Result srv_respond_json(srv_server *s, struct MHD_Connection *c, unsigned status,
                                 json_t *v) {
    char *body = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    if (!body) {
        oai_error e;
        oai_fail(&e, 500, "server_error", NULL, NULL, "cannot serialize the response");
        return srv_respond_error(s, c, &e);
    }
    enum MHD_Result r = srv_respond(s, c, status, body, strlen(body), "application/json");
    free(body);
    return r;
}

int srv_client_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 1;
    struct pollfd p = {ci->connect_fd, POLLIN | POLLRDHUP, 0};
    if (poll(&p, 1, 0) < 0) return 0;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* ------------------------------------------------------------ endpoints ---- */

/* The served model's object: OpenAI's fields, vLLM's max_model_len, and what a client
 * needs to know before it calls: whether chat completions work (a usable chat template),
 * the tool-call format the template shows (null when none: tools are refused), the
 * context length, whether the checkpoint is an embedding model (a pooling config), and
 * whether its template reasons (<think>: reasoning_content is split out). */
static json_t *model_object(const srv_server *s) {
    int tools = s->chat && s->toolcall_format != FACET_TOOLCALL_NONE;
    return json_pack("{s:s,s:s,s:I,s:s,s:i,s:{s:b,s:o,s:i,s:b,s:b}}", "id", s->model_id,
                     "object",
                     "model", "created", (json_int_t)s->created, "owned_by", "facet",
                     "max_model_len", s->n_ctx, "capabilities", "chat_template", s->chat != NULL,
                     "tools",
                     tools ? json_string(facet_toolcall_format_name(s->toolcall_format))
                           : json_null(),
                     "context_length", s->n_ctx, "embeddings",
                     s->pooling_config && s->pooling >= 0, "reasoning", s->chat && s->reasoning);
}

static enum MHD_Result handle_models(srv_server *s, struct MHD_Connection *c) {
    return srv_respond_json(s, c, 200,
                            json_pack("{s:s,s:[o]}", "object", "list", "data", model_object(s)));
}

static enum MHD_Result handle_model(srv_server *s, struct MHD_Connection *c, const char *id) {
    if (strcmp(id, s->model_id)) {
        oai_error e;
        oai_fail(&e, 404, "invalid_request_error", "model", "model_not_found",
                 "The model '%.200s' does not exist", id);
        return srv_respond_error(s, c, &e);
    }
    return srv_respond_json(s, c, 200, model_object(s));
}

static enum MHD_Result handle_metrics(srv_server *s, struct MHD_Connection *c) {
    char *text = srv_metrics_render(&s->metrics);
    if (!text) {
        oai_error e;
        oai_fail(&e, 500, "server_error", NULL, NULL, "out of memory");
        return srv_respond_error(s, c, &e);
    }
    enum MHD_Result r =
        srv_respond(s, c, 200, text, strlen(text), "text/plain; version=0.0.4; charset=utf-8");
    free(text);
    return r;
}

/* Parse a JSON object body for the small endpoints. */
static json_t *parse_object(const char *body, size_t len, oai_error *e) {
    json_t *o = oai_parse_json(body, len, e);
    if (!o) return NULL;
    if (!json_is_object(o)) {
        json_decref(o);
        oai_fail(e, 400, "invalid_request_error", NULL, NULL, "the body must be a JSON object");
        return NULL;
    }
    return o;
}

static int check_model(srv_server *s, json_t *o, oai_error *e) {
    json_t *model = json_object_get(o, "model");
    if (!model || json_is_null(model)) return 0;
    if (!json_is_string(model))
        return oai_fail(e, 400, "invalid_request_error", "model", NULL,
                        "'model' must be a string");
    if (strcmp(json_string_value(model), s->model_id))
        return oai_fail(e, 404, "invalid_request_error", "model", "model_not_found",
                        "The model '%.200s' does not exist", json_string_value(model));
    return 0;
}

static enum MHD_Result handle_tokenize(srv_server *s, struct MHD_Connection *c,
                                       const char *body, size_t len) {
    oai_error e;
    json_t *o = parse_object(body, len, &e);
    if (!o) return srv_respond_error(s, c, &e);
    json_t *p = json_object_get(o, "prompt");
    json_t *add = json_object_get(o, "add_special_tokens");
    if (check_model(s, o, &e)) goto fail;
    if (!json_is_string(p)) {
        oai_fail(&e, 400, "invalid_request_error", "prompt", NULL, "'prompt' must be a string");
        goto fail;
    }
    if (add && !json_is_boolean(add)) {
        oai_fail(&e, 400, "invalid_request_error", "add_special_tokens", NULL,
                 "'add_special_tokens' must be a boolean");
        goto fail;
    }
    int32_t *ids;
    size_t n;
    facet_error fe;
    if (facet_tokenize(s->tok, json_string_value(p), json_string_length(p),
                       add ? json_is_true(add) : 1, &ids, &n, &fe) != FACET_OK) {
        oai_fail_status(&e, fe.status, "prompt", NULL, "%s", fe.message);
        goto fail;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(arr, json_integer(ids[i]));
    free(ids);
    json_decref(o);
    return srv_respond_json(s, c, 200,
                            json_pack("{s:o,s:I,s:i}", "tokens", arr, "count", (json_int_t)n,
                                      "max_model_len", s->n_ctx));
fail:
    json_decref(o);
    return srv_respond_error(s, c, &e);
}

static enum MHD_Result handle_detokenize(srv_server *s, struct MHD_Connection *c,
                                         const char *body, size_t len) {
    oai_error e;
    json_t *o = parse_object(body, len, &e);
    if (!o) return srv_respond_error(s, c, &e);
    json_t *t = json_object_get(o, "tokens");
    int32_t *ids = NULL;
    if (check_model(s, o, &e)) goto fail;
    if (!json_is_array(t)) {
        oai_fail(&e, 400, "invalid_request_error", "tokens", NULL,
                 "'tokens' must be an array of token ids");
        goto fail;
    }
    size_t n = json_array_size(t);
    ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) {
        oai_fail(&e, 500, "server_error", NULL, NULL, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(t, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= s->n_vocab) {
            oai_fail(&e, 400, "invalid_request_error", "tokens", NULL,
                     "'tokens[%zu]' is not a token id in [0, %d)", i, s->n_vocab);
            goto fail;
        }
        ids[i] = (int32_t)json_integer_value(v);
    }
    char *text;
    size_t tlen;
    facet_error fe;
    if (facet_detokenize(s->tok, ids, n, 0, &text, &tlen, &fe) != FACET_OK) {
        oai_fail_status(&e, fe.status, "tokens", NULL, "%s", fe.message);
        goto fail;
    }
    free(ids);
    json_decref(o);
    json_t *js = json_stringn_nocheck(text, tlen);
    free(text);
    return srv_respond_json(s, c, 200, json_pack("{s:o}", "prompt", js));
fail:
    free(ids);
    json_decref(o);
    return srv_respond_error(s, c, &e);
}

/* -------------------------------------------------------------- routing ---- */

static enum MHD_Result not_found(srv_server *s, struct MHD_Connection *c, const char *method,
                                 const char *url) {
    oai_error e;
    oai_fail(&e, 404, "invalid_request_error", NULL, "unknown_url",
             "Unknown request URL: %.16s %.200s", method, url);
    return srv_respond_error(s, c, &e);
}

static enum MHD_Result wrong_method(srv_server *s, struct MHD_Connection *c, const char *method,
                                    const char *url) {
    oai_error e;
    oai_fail(&e, 405, "invalid_request_error", NULL, "method_not_allowed",
             "Method %.16s is not allowed on %.200s", method, url);
    return srv_respond_error(s, c, &e);
}

/* The POST endpoints, whose bodies are JSON. */
static int post_endpoint(const char *url) {
    return !strcmp(url, "/v1/completions") || !strcmp(url, "/v1/chat/completions") ||
           !strcmp(url, "/tokenize") || !strcmp(url, "/detokenize") ||
           !strcmp(url, "/v1/score") || !strcmp(url, "/v1/embeddings");
}

/* Content-Type application/json, parameters (charset) allowed, case-insensitive. */
static int json_content_type(const char *ct) {
    static const char want[] = "application/json";
    if (!ct) return 0;
    while (*ct == ' ' || *ct == '\t') ct++;
    if (strncasecmp(ct, want, sizeof want - 1)) return 0;
    ct += sizeof want - 1;
    while (*ct == ' ' || *ct == '\t') ct++;
    return *ct == '\0' || *ct == ';';
}

static enum MHD_Result route(srv_server *s, struct MHD_Connection *c, const char *method,
                             const char *url, const char *body, size_t len) {
    /* HEAD is GET without the body (libmicrohttpd leaves the body out) */
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), post = !strcmp(method, "POST");
    if (!strcmp(method, "OPTIONS")) return srv_preflight(s, c); /* CORS, before any auth */
    if (!strcmp(url, "/health")) {
        if (!get) return wrong_method(s, c, method, url);
        return srv_respond(s, c, 200, "{\"status\":\"ok\"}", 15, "application/json");
    }
    if (!strcmp(url, "/")) {
        if (!get) return wrong_method(s, c, method, url);
        return srv_respond(s, c, 200, srv_chat_page, srv_chat_page_len,
                           "text/html; charset=utf-8");
    }
    if (!strcmp(url, "/metrics")) {
        if (!get) return wrong_method(s, c, method, url);
        return handle_metrics(s, c);
    }
    if (!strcmp(url, "/v1/models")) {
        if (!get) return wrong_method(s, c, method, url);
        return handle_models(s, c);
    }
    if (!strncmp(url, "/v1/models/", 11)) {
        if (!get) return wrong_method(s, c, method, url);
        return handle_model(s, c, url + 11);
    }
    if (!strcmp(url, "/v1/completions")) {
        if (!post) return wrong_method(s, c, method, url);
        return srv_handle_generate(s, c, OAI_COMPLETION, body, len);
    }
    if (!strcmp(url, "/v1/chat/completions")) {
        if (!post) return wrong_method(s, c, method, url);
        return srv_handle_generate(s, c, OAI_CHAT, body, len);
    }
    if (!strcmp(url, "/v1/embeddings")) {
        if (!post) return wrong_method(s, c, method, url);
        return srv_handle_embeddings(s, c, body, len);
    }
    if (!strcmp(url, "/v1/score")) {
        if (!post) return wrong_method(s, c, method, url);
        return srv_handle_score(s, c, body, len);
    }
    if (!strcmp(url, "/tokenize")) {
        if (!post) return wrong_method(s, c, method, url);
        return handle_tokenize(s, c, body, len);
    }
    if (!strcmp(url, "/detokenize")) {
        if (!post) return wrong_method(s, c, method, url);
        return handle_detokenize(s, c, body, len);
    }
    return not_found(s, c, method, url);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    (void)version;
    srv_server *s = cls;
    conn_ctx *ctx = *con_cls;
    if (!ctx) {
        ctx = calloc(1, sizeof *ctx);
        if (!ctx) return MHD_NO;
        ctx->body.limit = s->cfg.max_body;
        *con_cls = ctx;
        /* answers given before the body is read (libmicrohttpd then sends no
         * "100 Continue", reads no body and closes the connection after the answer) */
        oai_error e;
        if (!strcmp(method, "OPTIONS")) return MHD_YES; /* answered once the body is in */
        /* the key guards the API; /health and the chat page (no data) need none */
        if (strcmp(url, "/health") && strcmp(url, "/") && !srv_auth_ok(s, c, &e))
            return srv_respond_error(s, c, &e);
        if (srv_conns_over(s) && strcmp(url, "/health")) {
            oai_fail(&e, 503, "server_error", NULL, "too_many_connections",
                     "the server has more than %d connections open (--max-connections); "
                     "retry later", s->cfg.max_connections);
            return srv_respond_error(s, c, &e);
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > s->cfg.max_body) {
            oai_fail(&e, 413, "invalid_request_error", NULL, "request_too_large",
                     "the request body (Content-Length %.40s) is larger than the limit of "
                     "%zu bytes", cl, s->cfg.max_body);
            return srv_respond_error(s, c, &e);
        }
        if (!strcmp(method, "POST") && post_endpoint(url) &&
            !json_content_type(
                MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type"))) {
            const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
            oai_fail(&e, 415, "invalid_request_error", NULL, "unsupported_media_type",
                     "the body must be JSON with Content-Type: application/json (got %.100s)",
                     ct ? ct : "no Content-Type");
            return srv_respond_error(s, c, &e);
        }
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (ctx->too_big) return MHD_YES; /* read on, to answer 413 */
        if (facet_str_append(&ctx->body, upload_data, n)) {
            if (ctx->body.failed != FACET_STR_OVER) return MHD_NO;
            ctx->too_big = 1;
        }
        return MHD_YES;
    }
    srv_conn_receiving(s, c, 0); /* the whole request is in */
    if (ctx->too_big) {
        oai_error e;
        oai_fail(&e, 413, "invalid_request_error", NULL, "request_too_large",
                 "the request body is larger than the limit of %zu bytes", s->cfg.max_body);
        return srv_respond_error(s, c, &e);
    }
    return route(s, c, method, url, facet_str_cstr(&ctx->body), ctx->body.len);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)toe;
    srv_conn_receiving(cls, c, 1); /* the next request of a kept-alive connection */
    conn_ctx *ctx = *con_cls;
    if (ctx) {
        facet_str_free(&ctx->body);
        free(ctx);
        *con_cls = NULL;
    }
}

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* libmicrohttpd's URL unescaping, except that %2F stays as it is: an encoded slash is
 * part of a path segment, not a separator (/v1%2Fmodels is not /v1/models). */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s) {
    (void)cls;
    (void)c;
    char *w = s;
    for (const char *r = s; *r;) {
        int hi, lo;
        if (r[0] == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0 &&
            !(hi == 2 && lo == 15)) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

facet_status srv_http_start(srv_server *s, facet_error *err) {
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)s->cfg.port);
    if (inet_pton(AF_INET, s->cfg.host, &addr.sin_addr) != 1)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "--host '%s' is not an IPv4 address (expected e.g. 127.0.0.1)",
                         s->cfg.host);
    facet_status st = srv_conns_start(s, err);
    if (st != FACET_OK) return st;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ITC;
    s->daemon = MHD_start_daemon(
        flags, (uint16_t)s->cfg.port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&addr, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->cfg.timeout_s, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)srv_conns_hard_limit(s), MHD_OPTION_NOTIFY_CONNECTION, srv_conns_notify, s,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_END);
    if (!s->daemon)
        return facet_err(err, FACET_E_IO, "cannot listen on %s:%d (address in use?)",
                         s->cfg.host, s->cfg.port);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    if (di) s->cfg.port = di->port;
    return FACET_OK;
}

void srv_http_quiesce(srv_server *s) {
    if (s->daemon) {
        MHD_socket fd = MHD_quiesce_daemon(s->daemon);
        if (fd != MHD_INVALID_SOCKET) close(fd);
    }
}

void srv_http_stop(srv_server *s) {
    if (s->daemon) MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
    srv_conns_destroy(s);
}
