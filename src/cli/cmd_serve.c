/* cmd_serve.c — `facet serve MODEL`: the OpenAI-compatible HTTP server. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_par.h"
#include "model/facts_gguf.h"
#include "server/server.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: facet serve [MODEL] [--host 127.0.0.1] [--port 8080] [--max-batch 32]\n"
            "                   [--ctx N] [--threads N] [--weights FMT] [--kv-cache TYPE]\n"
            "                   [--kv-budget TOKENS] [--max-queue N]\n"
            "                   [--chunk N] [--max-body BYTES] [--timeout S]\n"
            "                   [--max-connections N] [--deadline S] [--no-prefix-cache]\n"
            "                   [--model-id NAME] [--shutdown-grace S]\n"
            "                   [--api-key KEY] [--allowed-origins LIST]\n"
            "                   [--pipeline-parallel P] [--tensor-parallel T]\n"
            "                   [--backend cpu|vulkan] [--device N]\n"
            "\n"
            "OpenAI-compatible HTTP server (continuous batching). MODEL is a checkpoint\n"
            "folder or a GGUF file (as facet run); without it the bundled stories260k model\n"
            "is served.\n"
            "  GET /health, GET /v1/models, POST /v1/completions, POST /v1/chat/completions,\n"
            "  GET /metrics (Prometheus), POST /tokenize, POST /detokenize, POST /v1/score,\n"
            "  POST /v1/embeddings, GET / (a chat page for the browser)\n"
            "  --host ADDR        IPv4 address to listen on (default 127.0.0.1)\n"
            "  --pipeline-parallel P, --tensor-parallel T  run as one of P x T MPI ranks\n"
            "                     (P*T processes of mpirun; as facet run): rank 0 serves\n"
            "                     HTTP, tokenizes and samples, the others run their layers\n"
            "                     (no /v1/embeddings)\n"
            "  --port N           TCP port (default 8080; 0 = any free port)\n"
            "  --max-batch N      sequences decoded together (default 32)\n"
            "  --ctx N            context per sequence (default max_position_embeddings)\n"
            "  --threads N        engine worker threads (default: all cores)\n"
            "  --weights FMT      run-time weight format: auto (default: the checkpoint's own\n"
            "                     precision), f32, bf16, f16, int8, q4, gguf (as facet run)\n"
            "  --backend B        cpu (default) or vulkan, --device N its device (as facet run)\n"
            "  --kv-cache TYPE    KV cache element type: auto (default: f32 with f32 weights,\n"
            "                     f16 with f16, bf16 otherwise), f32, bf16, f16\n"
            "  --kv-budget T      KV-cache tokens the server holds (running requests as they\n"
            "                     grow, cached prefixes); requests wait, and the newest is\n"
            "                     preempted, beyond it (default max-batch x ctx, lowered to what\n"
            "                     fits MemAvailable after the weights as facet plan counts\n"
            "                     them, less a 10%% margin; a larger T is warned about)\n"
            "  --max-queue N      waiting requests before 503 + Retry-After (default 256)\n"
            "  --chunk N          tokens per engine step, decode + prefill (default 256)\n"
            "  --max-body BYTES   request body limit, 413 above (default 4194304)\n"
            "  --timeout S        idle connection timeout in seconds, and the most a client\n"
            "                     may take to send one whole request (default 60)\n"
            "  --max-connections N  open connections before requests get 503 +\n"
            "                     Retry-After; /health still answers (default 512)\n"
            "  --deadline S       end a request S seconds after it arrived: waiting, 503\n"
            "                     deadline_exceeded; running, it returns what it has with\n"
            "                     finish_reason length (default 0: no deadline)\n"
            "  --no-prefix-cache  free each finished request's KV instead of keeping it for\n"
            "                     requests that share its prefix (kept by default, within\n"
            "                     the KV budget, least recently used evicted first)\n"
            "  --model-id NAME    served model name (default: the folder's name)\n"
            "  --shutdown-grace S seconds in-flight requests get on SIGINT/SIGTERM (default 5)\n"
            "  --api-key KEY      require 'Authorization: Bearer KEY' on every route but\n"
            "                     /health and / (401 otherwise); FACET_API_KEY sets it too\n"
            "  --allowed-origins LIST  CORS: comma-separated origins (e.g.\n"
            "                     http://localhost:3000) browsers may call from; '*' any\n"
            "                     (the default, as vLLM and llama-server), '' none\n"
            "FACET_MEM_AVAILABLE=BYTES overrides the free RAM read from /proc/meminfo.\n"
            "example: facet serve --port 8080\n");
}

/* The server's log lines, on stderr. */
static void log_line(void *user, const char *line) {
    (void)user;
    fprintf(stderr, "facet serve: %s\n", line);
}

/* Start the server, serve until SIGINT or SIGTERM, then stop it (in-flight requests get
 * the shutdown grace). Returns 0 or an exit code. */
static int serve(facet_server_config *c) {
    /* SIGINT/SIGTERM are taken by sigwait below: block them before the server starts
     * its threads, so that every thread inherits the mask; a client that closes its
     * socket mid-response must not kill the process */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    signal(SIGPIPE, SIG_IGN);
    c->log = log_line;
    facet_server *srv = NULL;
    facet_error err;
    if (facet_server_start(c, &srv, &err) != FACET_OK) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return cli_fail(&err);
    }
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "facet serve: %s received, shutting down\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    facet_server_stop(srv);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    fprintf(stderr, "facet serve: stopped\n");
    cli_par_report("facet serve: ");
    return 0;
}

int cmd_serve(int argc, char **argv) {
    facet_server_config c;
    facet_server_config_default(&c);
    int pp = 1, tp = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1, body = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--host")) {
            struct in_addr probe;
            if (!v) ok = 0;
            else if (inet_pton(AF_INET, v, &probe) != 1) { /* before the model loads */
                fprintf(stderr, "facet: serve: --host expects an IPv4 address such as 127.0.0.1, got '%s'\n", v);
                return 1;
            } else c.host = v;
            i++;
        } else if (!strcmp(a, "--model-id")) {
            if (!v) ok = 0;
            else if (!*v) {
                fprintf(stderr, "facet: serve: --model-id must not be empty\n");
                return 1;
            } else c.model_id = v;
            i++;
        } else if (!strcmp(a, "--api-key")) {
            if (!v) ok = 0;
            else if (!*v) {
                fprintf(stderr, "facet: serve: --api-key must not be empty\n");
                return 1;
            } else c.api_key = v;
            i++;
        } else if (!strcmp(a, "--allowed-origins")) {
            if (!v) ok = 0;
            else c.allowed_origins = v;
            i++;
        } else if (!strcmp(a, "--port")) ok = cli_parse_int(a, v, 0, 65535, &c.port), i++;
        else if (!strcmp(a, "--max-batch")) ok = cli_parse_int(a, v, 1, 1024, &c.max_batch), i++;
        else if (!strcmp(a, "--ctx")) ok = cli_parse_int(a, v, 1, INT_MAX, &c.n_ctx), i++;
        else if (!strcmp(a, "--threads")) ok = cli_parse_int(a, v, 0, 1024, &c.threads), i++;
        else if (!strcmp(a, "--kv-cache")) ok = cli_parse_kv_type(a, v, &c.kv_cache), i++;
        else if (!strcmp(a, "--weights")) ok = cli_parse_weights(a, v, &c.weights), i++;
        else if (!strcmp(a, "--backend")) {
            if (v && strcmp(v, "cpu") && strcmp(v, "vulkan")) {
                fprintf(stderr, "facet: serve: --backend expects cpu or vulkan, got '%s'\n", v);
                return 1;
            }
            ok = v != NULL, c.backend = v, i++;
        } else if (!strcmp(a, "--device")) {
            ok = cli_parse_int(a, v, 0, 1023, &c.device), i++;
            c.device++;
        }
        else if (!strcmp(a, "--kv-budget")) ok = cli_parse_int(a, v, 1, INT_MAX, &c.kv_budget), i++;
        else if (!strcmp(a, "--max-queue")) ok = cli_parse_int(a, v, 0, 1 << 20, &c.max_queue), i++;
        else if (!strcmp(a, "--chunk")) ok = cli_parse_int(a, v, 1, 1 << 16, &c.chunk), i++;
        else if (!strcmp(a, "--timeout")) ok = cli_parse_int(a, v, 1, 86400, &c.timeout_s), i++;
        else if (!strcmp(a, "--no-prefix-cache")) c.no_prefix_cache = 1;
        else if (!strcmp(a, "--pipeline-parallel")) ok = cli_parse_int(a, v, 1, 64, &pp), i++;
        else if (!strcmp(a, "--tensor-parallel")) ok = cli_parse_int(a, v, 1, 64, &tp), i++;
        else if (!strcmp(a, "--deadline")) {
            float d = 0;
            ok = cli_parse_float(a, v, &d), i++;
            if (ok && !(d >= 0)) {
                fprintf(stderr, "facet: serve: --deadline expects seconds >= 0, got '%s'\n", v);
                return 1;
            }
            c.deadline_s = d;
        } else if (!strcmp(a, "--max-connections"))
            ok = cli_parse_int(a, v, 1, 65536, &c.max_connections), i++;
        else if (!strcmp(a, "--shutdown-grace"))
            ok = cli_parse_int(a, v, 0, 3600, &c.shutdown_grace_s), i++;
        else if (!strcmp(a, "--max-body")) {
            ok = cli_parse_int(a, v, 1024, 1 << 30, &body), i++;
            c.max_body = (size_t)body;
        } else if (a[0] == '-') {
            fprintf(stderr, "facet: serve: unknown option '%s'\n", a);
            usage(stderr);
            return 1;
        } else if (!c.model_dir) {
            c.model_dir = a;
        } else {
            fprintf(stderr, "facet: serve: unexpected argument '%s'\n", a);
            return 1;
        }
        if (!ok) {
            if (!v) fprintf(stderr, "facet: serve: %s needs a value\n", a);
            return 1;
        }
    }
    if (!cli_check_device("serve", c.backend, c.device)) return 1;
    if (!c.api_key && getenv("FACET_API_KEY") && *getenv("FACET_API_KEY"))
        c.api_key = getenv("FACET_API_KEY");
    if (!c.model_dir) c.model_dir = cli_bundled_model();
    char model_buf[4096];
    if (!cli_model_folder(&c.model_dir, model_buf, sizeof model_buf)) return 1;
    if (!cli_env_mem_available(&c.mem_available)) return 1; /* tests: a fixed machine size */
    /* what the config answers is checked before the weights load (a large checkpoint
     * converts for minutes): a family outside the table, a --ctx past its context */
    facet_facts facts;
    facet_error err = {0};
    if (facet_facts_read_model(c.model_dir, &facts, &err) != FACET_OK) return cli_fail(&err);
    int rc = cli_refuse_outside_table(c.model_dir, &facts, c.backend ? c.backend : "cpu");
    if (rc) return rc;
    if (c.n_ctx > facts.max_position_embeddings) {
        fprintf(stderr, "facet: --ctx %d is larger than max_position_embeddings=%lld\n", c.n_ctx,
                (long long)facts.max_position_embeddings);
        return 1;
    }
    if (pp * tp == 1) return serve(&c);
    /* a parallel job: rank 0 serves, the others follow its session (the same options
     * as the server's: its slots, context and KV type) */
    facet_load_options lo = {0};
    rc = cli_par_join(&facts, pp, tp, c.n_ctx, c.weights, c.kv_cache, &lo);
    if (rc) return rc;
    if (cli_par_follower()) { /* rank 0 ends the job: its signals, not these */
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        lo.n_threads = c.threads;
        lo.weights = c.weights;
        facet_session_options so = {c.no_prefix_cache ? c.max_batch : 2 * c.max_batch, c.n_ctx,
                                    c.kv_cache};
        return cli_par_follow(c.model_dir, &lo, &so);
    }
    c.parallel = &lo;
    return cli_par_end(serve(&c));
}
