/* http_score.c — POST /v1/score: the log-probability of each candidate continuation of
 * one prompt, the candidates scored together (see http.h for the shapes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/http.h"

#define SCORE_MAX_CANDIDATES 64

/* Ids of a prompt or candidate: a string (tokenized, specials added for the prompt
 * only) or an array of token ids. Returns 0, or -1 with *e. */
static int ids_of(srv_server *s, json_t *v, int add_special, const char *param,
                  int32_t **ids, size_t *n, oai_error *e) {
    *ids = NULL;
    *n = 0;
    if (json_is_string(v)) {
        facet_error fe;
        if (facet_tokenize(s->tok, json_string_value(v), json_string_length(v), add_special,
                           ids, n, &fe) != FACET_OK)
            return oai_fail_status(e, fe.status, param, NULL, "%s", fe.message);
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) == 0)
        return oai_fail(e, 400, "invalid_request_error", param, NULL,
                        "'%s' must be a string or a non-empty array of token ids", param);
    size_t k = json_array_size(v);
    *ids = malloc(k * sizeof **ids);
    if (!*ids) return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    for (size_t i = 0; i < k; i++) {
        json_t *x = json_array_get(v, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0 ||
            json_integer_value(x) >= s->n_vocab) {
            free(*ids);
            *ids = NULL;
            return oai_fail(e, 400, "invalid_request_error", param, NULL,
                            "'%s[%zu]' is not a token id in [0, %d)", param, i, s->n_vocab);
        }
        (*ids)[i] = (int32_t)json_integer_value(x);
    }
    *n = k;
    return 0;
}

typedef struct score_req {
    json_t *root;
    int32_t *prompt;
    size_t n_prompt;
    size_t n_cand;
    int32_t **cand;      /* [n_cand] ids                                            */
    size_t *n_ids;       /* [n_cand]                                                */
    srv_job **jobs;      /* [n_cand]                                                */
} score_req;

static void score_free(srv_server *s, score_req *q) {
    for (size_t i = 0; q->cand && i < q->n_cand; i++) free(q->cand[i]);
    for (size_t i = 0; q->jobs && i < q->n_cand; i++)
        if (q->jobs[i]) {
            srv_sched_cancel(s->sched, q->jobs[i]); /* no-op when done */
            srv_job_release(s->sched, q->jobs[i]);
        }
    free(q->cand);
    free(q->n_ids);
    free(q->jobs);
    free(q->prompt);
    json_decref(q->root);
}

/* Parse and tokenize. Returns 0, or -1 with *e. */
static int score_parse(srv_server *s, const char *body, size_t len, score_req *q,
                       oai_error *e) {
    q->root = oai_parse_json(body, len, e);
    if (!q->root) return -1;
    if (!json_is_object(q->root))
        return oai_fail(e, 400, "invalid_request_error", NULL, NULL,
                        "the body must be a JSON object");
    const char *key;
    json_t *v;
    json_object_foreach(q->root, key, v) {
        if (strcmp(key, "model") && strcmp(key, "prompt") && strcmp(key, "candidates"))
            return oai_fail(e, 400, "invalid_request_error", key, NULL,
                            "Unrecognized request argument supplied: %.64s", key);
    }
    json_t *model = json_object_get(q->root, "model");
    if (model && !json_is_null(model) &&
        (!json_is_string(model) || strcmp(json_string_value(model), s->model_id)))
        return oai_fail(e, 404, "invalid_request_error", "model", "model_not_found",
                        "The model does not exist (this server serves '%.200s')", s->model_id);
    if (ids_of(s, json_object_get(q->root, "prompt"), 1, "prompt", &q->prompt, &q->n_prompt,
               e))
        return -1;
    if (q->n_prompt == 0)
        return oai_fail(e, 400, "invalid_request_error", "prompt", NULL,
                        "the prompt is empty (0 tokens)");
    json_t *cands = json_object_get(q->root, "candidates");
    if (!json_is_array(cands) || json_array_size(cands) == 0 ||
        json_array_size(cands) > SCORE_MAX_CANDIDATES)
        return oai_fail(e, 400, "invalid_request_error", "candidates", NULL,
                        "'candidates' must be an array of 1..%d strings or token-id arrays",
                        SCORE_MAX_CANDIDATES);
    q->n_cand = json_array_size(cands);
    q->cand = calloc(q->n_cand, sizeof *q->cand);
    q->n_ids = calloc(q->n_cand, sizeof *q->n_ids);
    q->jobs = calloc(q->n_cand, sizeof *q->jobs);
    if (!q->cand || !q->n_ids || !q->jobs)
        return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    for (size_t i = 0; i < q->n_cand; i++) {
        char param[48];
        snprintf(param, sizeof param, "candidates[%zu]", i);
        if (ids_of(s, json_array_get(cands, i), 0, param, &q->cand[i], &q->n_ids[i], e))
            return -1;
        if (q->n_ids[i] == 0)
            return oai_fail(e, 400, "invalid_request_error", "candidates", NULL,
                            "'candidates[%zu]' is empty (0 tokens)", i);
        size_t total = q->n_prompt + q->n_ids[i];
        if (total + 1 > (size_t)s->n_ctx || (long)total + 1 > (long)s->cfg.kv_budget)
            return oai_fail(e, 400, "invalid_request_error", "candidates",
                            "context_length_exceeded",
                            "prompt + candidates[%zu] is %zu tokens; this server's context "
                            "is %d and its KV budget %d",
                            i, total, s->n_ctx, s->cfg.kv_budget);
    }
    return 0;
}

/* Submit one job per candidate: prompt + candidate, the candidate's log-probs asked,
 * one token generated (and ignored). Returns 0, or -1 with *e. */
static int score_submit(srv_server *s, score_req *q, oai_error *e) {
    facet_sampler_params sp;
    facet_sampler_params_default(&sp);
    sp.temperature = 0;
    for (size_t i = 0; i < q->n_cand; i++) {
        size_t n = q->n_prompt + q->n_ids[i];
        int32_t *ids = malloc(n * sizeof *ids);
        if (!ids) return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
        memcpy(ids, q->prompt, q->n_prompt * sizeof *ids);
        memcpy(ids + q->n_prompt, q->cand[i], q->n_ids[i] * sizeof *ids);
        facet_error fe;
        facet_status st = srv_job_create(s->sched, ids, (int)n, 1, 1, &sp, NULL, 0, 0, 0,
                                         &q->jobs[i], &fe);
        free(ids);
        if (st == FACET_OK &&
            (st = srv_job_want_prompt_logprobs(q->jobs[i], (int)q->n_prompt, &fe)) !=
                FACET_OK) {
            srv_job_release(NULL, q->jobs[i]); /* never submitted */
            q->jobs[i] = NULL;
        }
        if (st != FACET_OK) return oai_fail_status(e, st, NULL, NULL, "%s", fe.message);
        if (srv_sched_submit(s->sched, q->jobs[i])) {
            srv_job_release(NULL, q->jobs[i]);
            q->jobs[i] = NULL;
            pthread_mutex_lock(&s->metrics.mu);
            s->metrics.requests_rejected++;
            pthread_mutex_unlock(&s->metrics.mu);
            return oai_fail(e, 503, "server_error", NULL, "server_overloaded",
                            "the server is at capacity (%d requests waiting); retry later",
                            s->cfg.max_queue);
        }
    }
    return 0;
}

/* Wait for every job. Returns 0, or -1 with *e (cancelled, failed, client gone: *gone). */
static int score_wait(srv_server *s, struct MHD_Connection *c, score_req *q, int *gone,
                      oai_error *e) {
    *gone = 0;
    for (size_t i = 0; i < q->n_cand; i++) {
        srv_job *j = q->jobs[i];
        srv_sched_lock(s->sched);
        while (!j->done) {
            srv_job_wait_done(s->sched, j, 100);
            if (j->done) break;
            srv_sched_unlock(s->sched);
            if (!*gone && srv_client_gone(c)) {
                *gone = 1;
                for (size_t k = 0; k < q->n_cand; k++) srv_sched_cancel(s->sched, q->jobs[k]);
            }
            srv_sched_lock(s->sched);
        }
        srv_sched_unlock(s->sched);
        srv_finish f = j->choices[0].out.finish;
        if (f == SRV_FINISH_ERROR)
            return oai_fail(e, 500, "server_error", NULL, NULL, "scoring failed: %s", j->error);
        if (f == SRV_FINISH_CANCEL || *gone)
            return oai_fail(e, 503, "server_error", NULL, "cancelled", "%s",
                            j->error[0] ? j->error : "the request was cancelled");
    }
    return 0;
}

static json_t *score_json(srv_server *s, const score_req *q) {
    json_t *data = json_array();
    long fed = 0;
    for (size_t i = 0; data && i < q->n_cand; i++) {
        const srv_job *j = q->jobs[i];
        json_t *lps = json_array();
        double sum = 0;
        for (int t = (int)q->n_prompt; lps && t < j->n_prompt; t++) {
            sum += j->p_lp[t];
            if (json_array_append_new(lps, json_real(j->p_lp[t]))) {
                json_decref(lps);
                lps = NULL;
            }
        }
        fed += j->n_prompt;
        json_t *cand = json_deep_copy(json_array_get(json_object_get(q->root, "candidates"), i));
        if (!lps || !cand) {
            json_decref(lps);
            json_decref(cand);
            json_decref(data);
            return NULL;
        }
        if (json_array_append_new(data, json_pack("{s:i,s:o,s:f,s:i,s:o}", "index", (int)i,
                                                  "candidate", cand, "logprob", sum, "tokens",
                                                  (int)q->n_ids[i], "token_logprobs", lps))) {
            json_decref(data);
            return NULL;
        }
    }
    char id[64];
    unsigned long num = __atomic_add_fetch(&s->next_id, 1, __ATOMIC_RELAXED);
    snprintf(id, sizeof id, "score-%lx%08lx", (unsigned long)s->created, num);
    return data ? json_pack("{s:s,s:s,s:I,s:s,s:o,s:{s:I,s:i,s:I}}", "id", id, "object",
                            "score", "created", (json_int_t)time(NULL), "model", s->model_id,
                            "data", data, "usage", "prompt_tokens", (json_int_t)fed,
                            "completion_tokens", 0, "total_tokens", (json_int_t)fed)
                : NULL;
}

enum MHD_Result srv_handle_score(srv_server *s, struct MHD_Connection *c, const char *body,
                                 size_t len) {
    score_req q;
    memset(&q, 0, sizeof q);
    oai_error e;
    int gone = 0;
    enum MHD_Result r;
    if (score_parse(s, body, len, &q, &e) || score_submit(s, &q, &e) ||
        score_wait(s, c, &q, &gone, &e)) {
        r = gone ? srv_respond_gone(s, c, &e) : srv_respond_error(s, c, &e);
    } else {
        r = srv_respond_json(s, c, 200, score_json(s, &q));
    }
    score_free(s, &q);
    return r;
}
