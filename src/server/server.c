/* server.c — the server's lifecycle: load, listen; drain and shut down (see server.h). */
#include "server/server.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/budget.h"
#include "server/chat_bridge.h"
#include "server/http.h"
#include "util/error.h"
#include "util/utf8.h"

void facet_server_config_default(facet_server_config *c) {
    memset(c, 0, sizeof *c);
    c->host = "127.0.0.1";
    c->port = 8080;
    c->max_batch = 32;
    c->max_queue = 256;
    c->chunk = 256;
    c->max_body = 4u << 20;
    c->timeout_s = 60;
    c->max_connections = 512;
    c->shutdown_grace_s = 5;
    c->allowed_origins = "*";
}

/* The served model id: --model-id, else the folder's name. It is echoed in every
 * response, so it must be whole (a truncated id 404s the client that names it) and
 * UTF-8 (JSON cannot carry anything else: every response would be a 500). */
static facet_status model_id_of(const facet_server_config *c, char *out, size_t cap,
                                facet_error *err) {
    const char *id = c->model_id, *what = "--model-id";
    size_t n;
    if (id) {
        n = strlen(id);
    } else {
        const char *dir = c->model_dir ? c->model_dir : "";
        size_t e = strlen(dir);
        while (e > 1 && dir[e - 1] == '/') e--;
        size_t b = e;
        while (b > 0 && dir[b - 1] != '/') b--;
        id = dir + b;
        n = e - b;
        what = "the model id (the folder's name; --model-id sets another)";
    }
    if (n >= cap)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "%s is %zu bytes, expected at most %zu",
                         what, n, cap - 1);
    size_t ok = facet_utf8_validate(id, n);
    if (ok != n)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "%s is not valid UTF-8 (byte %zu)", what,
                         ok);
    memcpy(out, id, n);
    out[n] = 0;
    return FACET_OK;
}

static facet_status check_config(const facet_server_config *c, facet_error *err) {
    if (c->port < 0 || c->port > 65535)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "--port %d (expected 0..65535)", c->port);
    if (c->max_batch < 1 || c->max_batch > 1024)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "--max-batch %d (expected 1..1024)",
                         c->max_batch);
    if (c->n_ctx < 0)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "--ctx %d (expected >= 0)", c->n_ctx);
    if (c->max_queue < 0)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "--max-queue %d (expected >= 0)",
                         c->max_queue);
    if (c->chunk < 1)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "--chunk %d (expected >= 1)", c->chunk);
    if (c->max_connections < 1 || c->max_connections > 65536)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "--max-connections %d (expected "
                         "1..65536)", c->max_connections);
    if (c->timeout_s < 1)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "--timeout %d (expected >= 1)",
                         c->timeout_s);
    if (!(c->deadline_s >= 0))
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "--deadline %g (expected >= 0)",
                         c->deadline_s);
    if (c->kv_budget < 0)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "--kv-budget %d (expected >= 0)",
                         c->kv_budget);
    return FACET_OK;
}

void srv_log(const srv_server *s, const char *fmt, ...) {
    if (!s->cfg.log) return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    s->cfg.log(s->cfg.log_user, line);
}

static void teardown(srv_server *s) {
    if (s->sched) srv_sched_stop(s->sched);
    /* the scheduler has ended every job (cancelled ones carry their error event); give
     * the streams a moment to deliver those last bytes before the connections close —
     * bounded, since a client that never reads would hold its stream forever */
    double until = srv_now() + 2.0;
    while (s->daemon && __atomic_load_n(&s->live_streams, __ATOMIC_SEQ_CST) > 0 &&
           srv_now() < until)
        usleep(10000);
    srv_http_stop(s);
    srv_sched_free(s->sched);
    facet_session_free(s->session);
    facet_model_free(s->model);
    srv_chat_free(s);
    srv_metrics_destroy(&s->metrics);
    free(s);
}

facet_status facet_server_start(const facet_server_config *cfg, facet_server **out,
                                facet_error *err) {
    *out = NULL;
    facet_status st = check_config(cfg, err);
    if (st != FACET_OK) return st;
    char model_id[sizeof ((srv_server *)0)->model_id];
    st = model_id_of(cfg, model_id, sizeof model_id, err);
    if (st != FACET_OK) return st;
    /* size the KV budget before the weights load: MemAvailable then is what weights + KV
     * must fit (facet plan's model), and a machine too small fails before converting.
     * A plan that cannot be made (a checkpoint the loader refuses) leaves the budget
     * unchecked; the load below reports the checkpoint's problem. */
    facet_error plan_err;
    int plan_ctx = 0;
    uint64_t mem = 0, weight_bytes = 0;
    double kv_per_token = 0;
    uint64_t state = 0;
    int planned = srv_kv_plan(cfg->model_dir, cfg->n_ctx, cfg->weights, cfg->kv_cache,
                              cfg->mem_available, &plan_ctx, &mem, &weight_bytes,
                              &kv_per_token, &state, &plan_err) == FACET_OK;
    srv_kv_budget budget;
    char budget_line[1024];
    if (planned) {
        /* a recurrent model's state is fixed per sequence: every slot's, beside the
         * weights (facet plan's total at batch = max_batch) */
        uint64_t fixed = weight_bytes + state * (uint64_t)(cfg->max_batch > 0 ? cfg->max_batch : 1);
        srv_kv_budget_choose(cfg->kv_budget, cfg->max_batch, plan_ctx, mem, fixed,
                             kv_per_token, &budget);
        budget.state_bytes = fixed - weight_bytes;
        if (budget.tokens == 0) {
            srv_kv_budget_describe(&budget, NULL, budget_line, sizeof budget_line);
            return facet_err(err, FACET_E_NOMEM, "%s", budget_line);
        }
    }
    srv_server *s = calloc(1, sizeof *s);
    if (!s) return facet_err(err, FACET_E_NOMEM, "server");
    s->cfg = *cfg;
    srv_metrics_init(&s->metrics);
    memcpy(s->model_id, model_id, sizeof model_id);
    facet_load_options lo = {.n_threads = cfg->threads, .weights = cfg->weights,
                             .backend = cfg->backend, .device = cfg->device};
    if (cfg->parallel) { /* this rank's layers and tensor share */
        lo.layer_first = cfg->parallel->layer_first;
        lo.layer_end = cfg->parallel->layer_end;
        lo.tensor_parallel = cfg->parallel->tensor_parallel;
        lo.tensor_rank = cfg->parallel->tensor_rank;
    }
    st = facet_model_load(cfg->model_dir, &lo, &s->model, err);
    if (st != FACET_OK) goto fail;
    s->tok = facet_model_tokenizer(s->model);
    if (!s->tok) { /* a tokenizer file facet does not read is named; else none at all */
        st = facet_tokenizer_unread(cfg->model_dir, err);
        if (st == FACET_OK)
            st = facet_err(err, FACET_E_NOT_FOUND, "%s: no tokenizer.json (the server needs one)",
                           cfg->model_dir);
        goto fail;
    }
    srv_chat_init(s);
    if (!s->chat) srv_log(s, "chat completions unavailable: %s", s->chat_error);
    facet_model_info info;
    facet_model_get_info(s->model, &info);
    for (int i = 0; i < info.n_notes; i++) srv_log(s, "note: %s", info.notes[i]);
    if (info.device_note) srv_log(s, "%s", info.device_note);
    /* with the prefix cache, as many free sequences as running ones keep finished
     * requests' KV (tables only: KV memory grows with use, within the budget) */
    int n_slots = cfg->no_prefix_cache ? cfg->max_batch : 2 * cfg->max_batch;
    facet_session_options so = {n_slots, cfg->n_ctx, cfg->kv_cache};
    st = facet_session_create(s->model, &so, &s->session, err);
    if (st != FACET_OK) goto fail;
    s->n_ctx = facet_session_n_ctx(s->session);
    s->n_vocab = info.vocab_size;
    s->n_embd = info.hidden_size;
    srv_embed_init(s);
    if (!planned || plan_ctx != s->n_ctx) /* memory not checked */
        srv_kv_budget_choose(cfg->kv_budget, cfg->max_batch, s->n_ctx, 0, 0, 0, &budget);
    s->cfg.kv_budget = budget.tokens;
    s->created = (long)time(NULL);
    s->limits = (oai_limits){s->model_id, s->n_vocab, 16, 16, 20};
    srv_sched_config sc = {s->cfg.max_batch, s->cfg.kv_budget, s->cfg.max_queue, s->cfg.chunk,
                           n_slots, !s->cfg.no_prefix_cache, s->cfg.deadline_s};
    st = srv_sched_create(s->model, s->session, &sc, &s->metrics, &s->sched, err);
    if (st != FACET_OK) goto fail;
    st = srv_http_start(s, err);
    if (st != FACET_OK) goto fail;
    srv_kv_budget_describe(&budget,
                           !planned                ? plan_err.message
                           : !(kv_per_token > 0)   ? "no KV cache: the model's layers keep a "
                                                     "fixed state per sequence"
                                                   : "the plan's context differs from the "
                                                     "session's",
                           budget_line, sizeof budget_line);
    srv_log(s, "%s", budget_line);
    srv_log(s,
            "listening on http://%s:%d (model '%s', ctx %d, max batch %d, KV budget %d "
            "tokens)",
            s->cfg.host, s->cfg.port, s->model_id, s->n_ctx, s->cfg.max_batch,
            s->cfg.kv_budget);
    *out = s;
    return FACET_OK;
fail:
    teardown(s);
    return st;
}

int facet_server_port(const facet_server *s) { return s->cfg.port; }

void facet_server_stop(facet_server *s) {
    if (!s) return;
    /* stop accepting; let in-flight requests finish within the grace period */
    srv_http_quiesce(s);
    double deadline = srv_now() + s->cfg.shutdown_grace_s;
    while (!srv_sched_idle(s->sched) && srv_now() < deadline) usleep(20000);
    teardown(s);
}
