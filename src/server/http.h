/*
 * http.h — the server object shared by the HTTP handlers (http.c: routing, bodies,
 * small endpoints; http_gen.c: completions and chat; oai_response.c: response JSON).
 */
#ifndef FACET_SERVER_HTTP_H
#define FACET_SERVER_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdint.h>

#include "facet.h"
#include "facet_chat.h"
#include "server/metrics.h"
#include "server/oai_request.h"
#include "server/sched.h"
#include "server/server.h"

/* The TCP connections (http_conn.c): how many are open, and the request deadline.
 * A connection counts from accept to close. Past cfg.max_connections, requests other
 * than /health are answered 503 (too_many_connections, Retry-After); libmicrohttpd
 * accepts up to srv_conns_hard_limit connections so that those answers and /health
 * have room, and resets beyond. A connection receiving one request (headers and body)
 * for more than cfg.timeout_s seconds is shut down, however it paces its bytes (the
 * idle timeout alone restarts on every byte). */
#define SRV_CONN_SPARE_MIN 16
typedef struct srv_conn srv_conn;
typedef struct srv_conns {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    srv_conn *head;             /* [mu] open connections                                 */
    int count;                  /* [mu]                                                  */
    unsigned long cut;          /* [mu] connections shut down at the request deadline    */
    int stop, inited, started;
    pthread_t reaper;
} srv_conns;

/* The server object (facet_server of server.h). */
struct facet_server {
    facet_server_config cfg;
    char model_id[256];
    facet_model *model;
    facet_tokenizer *tok;
    facet_session *session;
    srv_sched *sched;
    srv_metrics metrics;
    struct MHD_Daemon *daemon;
    int n_ctx, n_vocab;
    long created;              /* server start, unix seconds (/v1/models)               */
    unsigned long next_id;     /* request ids (atomic increments)                       */
    oai_limits limits;
    facet_chat_template *chat; /* NULL when the folder has no usable chat template     */
    char chat_error[512];      /* why chat is unavailable (when chat is NULL)            */
    facet_toolcall_format toolcall_format; /* the template's tool-call syntax            */
    int reasoning;             /* the template shows <think>...</think> (reasoning.h)    */
    int pooling;               /* embeddings: srv_pooling, -1 = unsupported mode         */
    int pooling_config;        /* the folder has 1_Pooling/config.json                   */
    char pooling_name[16];     /* "last", "mean", "cls"                                  */
    int n_embd;                /* hidden_size                                            */
    srv_conns conns;           /* TCP connections (http_conn.c)                          */
    int live_streams;          /* SSE responses not yet freed by libmicrohttpd (atomic):
                                  shutdown waits for them so a cancelled stream still
                                  delivers its last event and [DONE]                    */
};
typedef struct facet_server srv_server;

/* Send one printf-formatted line to the config's log callback (nothing when none). */
void srv_log(const srv_server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Queue a response with `status`, a body (copied) and content type (503s get
 * Retry-After); counts it in facet_requests_total, and in facet_requests_failed_total
 * when status >= 400. */
enum MHD_Result srv_respond(srv_server *s, struct MHD_Connection *c, unsigned status,
                            const char *body, size_t len, const char *content_type);

/* Queue an OpenAI error response (counted as srv_respond). */
enum MHD_Result srv_respond_error(srv_server *s, struct MHD_Connection *c, const oai_error *e);

/* Queue the error answer of a request whose client went away (its cancellation already
 * counted by srv_sched_cancel): counted in facet_requests_total only, never as failed or
 * rejected. The answer is still sent, for a client that only half-closed. */
enum MHD_Result srv_respond_gone(srv_server *s, struct MHD_Connection *c, const oai_error *e);

/* Queue a JSON response (takes the reference of `v`). */
enum MHD_Result srv_respond_json(srv_server *s, struct MHD_Connection *c, unsigned status,
                                 json_t *v);

/* POST /v1/completions and /v1/chat/completions with the full body. */
enum MHD_Result srv_handle_generate(srv_server *s, struct MHD_Connection *c, oai_kind kind,
                                    const char *body, size_t len);

/* POST /v1/score (http_score.c): {"prompt": string | [ids], "candidates": [string |
 * [ids], ...] (1..64), "model"?} -> {"id", "object": "score", "created", "model",
 * "data": [{"index", "candidate" (as sent), "logprob" (sum of the candidate's tokens'
 * log p given the prompt and the candidate's tokens before), "tokens", "token_logprobs"}],
 * "usage"}. A string prompt is tokenized with the special tokens (BOS) a completion
 * prompt gets, candidate strings without, each on its own (so a candidate's tokens are
 * the same whatever the prompt). The candidates run as one job each, submitted
 * together and batched by the scheduler. */
enum MHD_Result srv_handle_score(srv_server *s, struct MHD_Connection *c, const char *body,
                                 size_t len);

/* Embeddings (http_embed.c). srv_embed_init reads the pooling of the model folder:
 * sentence-transformers' 1_Pooling/config.json (pooling_mode_lasttoken,
 * pooling_mode_mean_tokens, pooling_mode_cls_token), else last-token pooling (decoder
 * embedding models: Qwen3-Embedding, e5-mistral, gte-Qwen). POST /v1/embeddings:
 * OpenAI's request ("input": a string, strings, token ids or token-id arrays, at most
 * 256; "encoding_format" float | base64; "dimensions" keeps the leading ones,
 * normalised again) -> {"object": "list", "data": [{"object": "embedding", "index",
 * "embedding"}], "model", "usage"}; each vector is the pooled final-norm hidden state,
 * L2-normalised. Strings are tokenized with the special tokens (the tokenizer's
 * post-processor, as sentence-transformers does). */
void srv_embed_init(srv_server *s);
enum MHD_Result srv_handle_embeddings(srv_server *s, struct MHD_Connection *c,
                                      const char *body, size_t len);

/* The chat page served at GET / (chat_page.c, generated from chat_page.html by
 * scripts/gen-chat-page): one dependency-free HTML/JS file that streams
 * /v1/chat/completions, with a stop button, a system prompt and sampling settings. It
 * needs no API key to load (it holds no data); its requests send the key typed in. */
extern const char srv_chat_page[];
extern const size_t srv_chat_page_len;

/* Nonzero when the peer of connection c has closed or reset its side. */
int srv_client_gone(struct MHD_Connection *c);

/* libmicrohttpd's connection notification: counts and tracks connections. */
void srv_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe);
/* Mark connection c as receiving a request (1: its deadline starts now) or not (0). */
void srv_conn_receiving(srv_server *s, struct MHD_Connection *c, int receiving);
/* Nonzero when more than cfg.max_connections connections are open. */
int srv_conns_over(srv_server *s);
/* The connections libmicrohttpd accepts: max_connections plus a quarter (at least
 * SRV_CONN_SPARE_MIN) for 503 answers and /health. */
int srv_conns_hard_limit(const srv_server *s);
/* Start the deadline thread / stop it / stop it and free the lock (idempotent). */
facet_status srv_conns_start(srv_server *s, facet_error *err);
void srv_conns_stop(srv_server *s);
void srv_conns_destroy(srv_server *s);

/* Access (http_access.c). srv_auth_ok: nonzero when the server has no API key or the
 * request carries 'Authorization: Bearer KEY' with it (compared in constant time); else
 * fills e with a 401 invalid_api_key error. srv_cors_headers: adds
 * Access-Control-Allow-Origin (and Vary: Origin when the origin is echoed) to r when
 * the request's Origin is in cfg.allowed_origins. srv_preflight: answers an OPTIONS
 * request 204 with Allow and, for an allowed origin, the CORS preflight headers (the
 * requested headers allowed, Max-Age 600); no API key is needed for it. */
int srv_auth_ok(const srv_server *s, struct MHD_Connection *c, oai_error *e);
void srv_cors_headers(const srv_server *s, struct MHD_Connection *c, struct MHD_Response *r);
enum MHD_Result srv_preflight(srv_server *s, struct MHD_Connection *c);

/* Start / stop the HTTP daemon. */
facet_status srv_http_start(srv_server *s, facet_error *err);
void srv_http_quiesce(srv_server *s);
void srv_http_stop(srv_server *s);

#endif
