/*
 * server.h — `facet serve`: an OpenAI-compatible HTTP server over one model.
 *
 * Endpoints: GET /health, GET /v1/models, POST /v1/completions, POST
 * /v1/chat/completions (SSE streaming with "stream": true), GET /metrics (Prometheus
 * text), POST /tokenize, POST /detokenize, POST /v1/score, POST /v1/embeddings. HTTP is
 * libmicrohttpd with one thread per connection; one engine thread runs the
 * continuous-batching scheduler (sched.h).
 *
 * The server is its own library (facetserver) over libfacet. Like libfacet it prints
 * nothing and installs no signal handler: what an operator should read (the KV budget,
 * the address, notes, server-side failures) goes to the config's log callback, and the
 * caller decides when to stop (`facet serve` waits for SIGINT/SIGTERM in cmd_serve.c).
 * The caller should ignore SIGPIPE (a client that closes mid-response) and, when it
 * waits for signals with sigwait, block them before facet_server_start so that the
 * server's threads inherit the mask.
 */
#ifndef FACET_SERVER_SERVER_H
#define FACET_SERVER_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "facet.h"

typedef struct facet_server_config {
    const char *model_dir;   /* checkpoint folder                                      */
    const char *model_id;    /* served model name; NULL = the folder's base name       */
    const char *host;        /* listen address (IPv4 literal), default 127.0.0.1       */
    int port;                /* TCP port; 0 = any free port (printed on stderr)        */
    int max_batch;           /* sequence slots decoded together, default 32            */
    int n_ctx;               /* context per sequence; 0 = max_position_embeddings      */
    int threads;             /* engine worker threads; 0 = all cores                   */
    facet_kv_type kv_cache;  /* KV cache element type; default auto (facet.h)          */
    facet_weight_format weights; /* run-time weight format; default auto (facet.h)     */
    const char *backend;     /* compute backend: NULL/"cpu" or "vulkan" (facet.h)      */
    int device;              /* the backend's device index + 1; 0 = its default        */
    int kv_budget;           /* KV tokens all running requests may reserve; 0 = max_batch
                                * n_ctx lowered to what fits mem_available (budget.h)   */
    uint64_t mem_available;  /* free memory in bytes the KV budget is sized to; 0 =
                                MemAvailable of /proc/meminfo, read before the load     */
    int max_queue;           /* waiting requests before 503, default 256               */
    int chunk;               /* tokens per engine step (decode + prefill), default 256  */
    size_t max_body;         /* request body limit in bytes, default 4 MiB (413 above) */
    int timeout_s;           /* idle connection timeout, and the most seconds a client
                                may take to send one whole request (headers and body),
                                default 60                                             */
    int max_connections;     /* open connections before requests get 503 (/health
                                still answers), default 512 (http.h)                   */
    int no_prefix_cache;     /* 1: free a finished request's KV instead of keeping it
                                as a cached prefix (sched.h)                           */
    double deadline_s;       /* a request unfinished this long after arrival is ended:
                                waiting, 503 deadline_exceeded; running, it finishes
                                with what it has (finish_reason length); 0 = none      */
    int shutdown_grace_s;    /* seconds in-flight requests get in facet_server_stop,
                                default 5; then they are cancelled                     */
    const char *api_key;     /* NULL/"" = none; else every route but /health (and OPTIONS
                                preflights) needs 'Authorization: Bearer KEY', 401
                                invalid_api_key otherwise                              */
    const char *allowed_origins; /* CORS: comma-separated origins answered with
                                Access-Control-Allow-Origin, "*" = any (the default,
                                as vLLM's and llama-server's), NULL/"" = none          */
    const facet_load_options *parallel; /* one rank of a parallel job (mpirun): its share of
                                the model (layer range, tensor rank; the CLI's cli_par.h);
                                NULL = the whole model                                 */
    void (*log)(void *user, const char *line); /* one line for the operator (no newline),
                                called from any server thread; NULL = silent           */
    void *log_user;
} facet_server_config;

/* Defaults above. */
void facet_server_config_default(facet_server_config *c);

typedef struct facet_server facet_server;

/* Size the KV budget to the machine (budget.h), load the model, start the engine thread
 * and listen. Logs, once ready, one line saying the KV budget and why (a "warning:" when
 * an explicit budget exceeds the free memory), then "listening on http://HOST:PORT
 * (...)"; before them, the model's notes and why chat completions are unavailable, if
 * so. *out is stopped and freed with facet_server_stop. Errors: those of
 * facet_model_load, FACET_E_IO (cannot listen), FACET_E_INVALID_ARGUMENT (bad config),
 * FACET_E_NOT_FOUND (no tokenizer.json), FACET_E_NOMEM (out of memory, or no memory
 * left for the KV cache after the weights and no kv_budget given: before any weight
 * loads). */
facet_status facet_server_start(const facet_server_config *cfg, facet_server **out,
                                facet_error *err);

/* The TCP port the server listens on (the one chosen when cfg->port was 0). */
int facet_server_port(const facet_server *s);

/* Stop accepting connections, let in-flight requests finish within the config's
 * shutdown grace, cancel the rest, and free everything. NULL is accepted. */
void facet_server_stop(facet_server *s);

#endif
