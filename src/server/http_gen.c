/* http_gen.c — POST /v1/completions and /v1/chat/completions: request -> job ->
 * whole response or SSE stream. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "facet_grammar.h"
#include "server/chat_bridge.h"
#include "server/http.h"
#include "server/oai_echo.h"
#include "server/oai_response.h"
#include "server/reasoning.h"

/* A seed for requests that give none: different per request. */
static uint64_t fresh_seed(void) {
    static _Atomic uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                 (atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15ULL);
    return x;
}

/* Prompt ids of a request. Returns 0 or -1 with *e. */
static int prompt_ids(srv_server *s, oai_request *r, int32_t **ids, size_t *n,
                      oai_error *e) {
    *ids = NULL;
    *n = 0;
    if (r->kind == OAI_CHAT) return srv_chat_prompt(s, r, ids, n, e);
    if (r->prompt_ids) {
        *ids = malloc(r->n_prompt_ids * sizeof **ids);
        if (!*ids) return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
        memcpy(*ids, r->prompt_ids, r->n_prompt_ids * sizeof **ids);
        *n = r->n_prompt_ids;
        return 0;
    }
    facet_error fe;
    if (facet_tokenize(s->tok, r->prompt_text, r->prompt_len, 1, ids, n, &fe) != FACET_OK)
        return oai_fail_status(e, fe.status, "prompt", NULL, "%s", fe.message);
    return 0;
}

/* ------------------------------------------------------------- whole ---- */

/* The assistant message of a whole chat choice: with a reasoning template, the
 * <think> part as "reasoning_content" (null when none) and the rest as the message. */
static json_t *chat_message(const srv_server *s, const oai_request *r, const char *text,
                            size_t len, const char **finish) {
    if (!s->reasoning)
        return srv_chat_build_message(s->toolcall_format, r->tools_active, r->tool_prefix,
                                      text, len, finish);
    srv_reasoning_split sp;
    srv_reasoning_split_text(text, len, r->think_open, 1, &sp);
    json_t *msg = srv_chat_build_message(s->toolcall_format, r->tools_active, r->tool_prefix,
                                         text + sp.c_beg, sp.c_end - sp.c_beg, finish);
    if (msg && json_object_set_new(msg, "reasoning_content",
                                   sp.has_reasoning ? json_stringn_nocheck(text + sp.r_beg,
                                                                          sp.r_end - sp.r_beg)
                                                    : json_null())) {
        json_decref(msg);
        return NULL;
    }
    return msg;
}

static enum MHD_Result respond_whole(srv_server *s, struct MHD_Connection *c, srv_job *j,
                                     const oai_meta *m, const oai_request *r) {
    /* wait for the job, watching for the client going away */
    int gone = 0; /* 1: cancelled here because the client went away (counted so) */
    srv_sched_lock(s->sched);
    while (!j->done) {
        srv_job_wait_done(s->sched, j, 100);
        if (j->done) break;
        srv_sched_unlock(s->sched);
        if (!gone && srv_client_gone(c)) gone = srv_sched_cancel(s->sched, j);
        srv_sched_lock(s->sched);
    }
    srv_sched_unlock(s->sched);
    /* done: the engine no longer touches the job */
    oai_error e;
    for (int i = 0; i < j->n_choices; i++) {
        if (j->choices[i].out.finish == SRV_FINISH_ERROR) {
            oai_fail(&e, 500, "server_error", NULL, NULL, "generation failed: %s", j->error);
            return srv_respond_error(s, c, &e);
        }
        if (j->choices[i].out.finish == SRV_FINISH_CANCEL) {
            /* a client gone is counted as cancelled, as a stream's is, not as failed */
            if (gone) {
                oai_fail(&e, 503, "server_error", NULL, "cancelled",
                         "the request was cancelled (client gone)");
                return srv_respond_gone(s, c, &e);
            }
            if (j->deadline_hit) {
                oai_fail(&e, 503, "server_error", NULL, "deadline_exceeded", "%s", j->error);
                return srv_respond_error(s, c, &e);
            }
            oai_fail(&e, 503, "server_error", NULL, "cancelled",
                     "the request was cancelled (server shutting down)");
            return srv_respond_error(s, c, &e);
        }
    }
    size_t nc = j->n_choices > 0 ? (size_t)j->n_choices : 1;
    json_t **messages = calloc(nc, sizeof *messages);
    const char **finish = calloc(nc, sizeof *finish);
    if (!messages || !finish) {
        free(messages);
        free(finish);
        oai_fail(&e, 500, "server_error", NULL, NULL, "out of memory");
        return srv_respond_error(s, c, &e);
    }
    for (int i = 0; i < j->n_choices; i++) {
        const srv_output *ch = &j->choices[i].out;
        finish[i] = oai_finish_name(ch->finish);
        if (m->kind == OAI_CHAT)
            messages[i] = chat_message(s, r, facet_str_cstr(&ch->text), ch->text.len,
                                       &finish[i]);
    }
    json_t *resp = oai_response(m, j, messages, finish);
    free(messages);
    free(finish);
    if (resp && r->echo) { /* the prompt ahead of the text (and its log-probs) */
        char *text = NULL;
        size_t tlen = 0;
        facet_error fe;
        int ok = r->prompt_text ? 1
                                : facet_detokenize(s->tok, r->prompt_ids, r->n_prompt_ids, 0,
                                                   &text, &tlen, &fe) == FACET_OK;
        if (!ok || oai_echo_patch(resp, m, j, r->prompt_text ? r->prompt_text : text,
                                  r->prompt_text ? r->prompt_len : tlen, r->echo_drop)) {
            json_decref(resp);
            resp = NULL;
        }
        free(text);
    }
    return srv_respond_json(s, c, 200, resp);
}

/* ----------------------------------------------------------- streaming ---- */

/* What a stream has copied of one choice and sent of it. */
typedef struct stream_choice {
    srv_output out;             /* the choice's outputs as of the last copy             */
    int ids_sent;
    size_t text_sent, text_offset; /* text_sent: of the content (reasoning.h)          */
    size_t reasoning_sent;
    int fin_sent, role_sent;
} stream_choice;

typedef struct stream_ctx {
    srv_server *s;
    srv_job *job;
    struct MHD_Connection *conn;
    oai_meta meta;
    char id[64];
    char model[256];
    int include_usage;
    stream_choice *ch;          /* [job->n_choices]                                     */
    int done;                   /* the job was done at the last copy                    */
    char error[512];            /* the job's error at the last copy                      */
    unsigned long seen;
    facet_str buf;              /* SSE bytes produced, sent from `off`                   */
    size_t off;
    int finished;
    int hold;        /* chat with tools: text that may become a call is held             */
    facet_toolcall_format fmt;
    char prefix[512];/* the assistant turn's opening (tool_choice required / named)      */
    int reasoning, think_open; /* split <think> into reasoning_content (reasoning.h)   */
} stream_ctx;

static void sse_append(stream_ctx *x, json_t *v) {
    char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    if (!s) {
        x->buf.failed = FACET_STR_NOMEM;
        return;
    }
    facet_str_appendf(&x->buf, "data: %s\n\n", s);
    free(s);
}

/* Copy the job's new outputs (scheduler lock held: only copies, no JSON). Returns 0,
 * or -1 out of memory. */
static int stream_copy(stream_ctx *x) {
    srv_job *j = x->job;
    for (int i = 0; i < j->n_choices; i++)
        if (!x->ch[i].fin_sent && srv_output_sync(&x->ch[i].out, &j->choices[i].out)) return -1;
    x->done = j->done;
    snprintf(x->error, sizeof x->error, "%s", j->error);
    return 0;
}

/* Turn the copied state into SSE events (without the scheduler lock). */
static void stream_produce(stream_ctx *x) {
    srv_job *j = x->job; /* only its immutable request fields are read here */
    const oai_meta *m = &x->meta;
    for (int i = 0; i < j->n_choices; i++) {
        stream_choice *sc = &x->ch[i];
        const srv_output *c = &sc->out;
        if (sc->fin_sent) continue;
        if (m->kind == OAI_CHAT && !sc->role_sent) {
            sse_append(x, oai_chunk(m, i, NULL, 0,
                                    json_pack("{s:s,s:s}", "role", "assistant", "content", ""),
                                    NULL, NULL));
            sc->role_sent = 1;
        }
        if (c->finish == SRV_FINISH_ERROR || c->finish == SRV_FINISH_CANCEL) {
            oai_error e;
            if (c->finish == SRV_FINISH_ERROR)
                oai_fail(&e, 500, "server_error", NULL, NULL, "generation failed: %s", x->error);
            else if (x->error[0]) /* the deadline passed before it started */
                oai_fail(&e, 503, "server_error", NULL, "deadline_exceeded", "%s", x->error);
            else
                oai_fail(&e, 503, "server_error", NULL, "cancelled",
                         "the request was cancelled (server shutting down)");
            char *body = oai_error_json(&e);
            if (body) {
                facet_str_appendf(&x->buf, "data: %s\n\n", body);
                free(body);
            }
            sc->fin_sent = 1;
            continue;
        }
        int n_ids = (int)c->ids.len;
        const char *text = facet_str_cstr(&c->text);
        size_t tlen = c->text.len;
        if (x->reasoning) { /* reasoning deltas first; then the content is the text */
            srv_reasoning_split sp;
            srv_reasoning_split_text(text, tlen, x->think_open, c->finish != SRV_RUNNING, &sp);
            if (sp.r_end > sp.r_beg + sc->reasoning_sent) {
                size_t from = sp.r_beg + sc->reasoning_sent, nr = sp.r_end - from;
                json_t *lp = oai_logprobs(m, c, sc->ids_sent, n_ids, j->prompt[j->n_prompt - 1],
                                          &sc->text_offset);
                json_t *delta = json_pack("{s:s%}", "reasoning_content", text + from, nr);
                if ((m->logprobs && !lp) || !delta) {
                    json_decref(lp);
                    json_decref(delta);
                    x->buf.failed = FACET_STR_NOMEM;
                } else {
                    sse_append(x, oai_chunk(m, i, NULL, 0, delta, lp, NULL));
                }
                sc->reasoning_sent += nr;
                sc->ids_sent = n_ids;
            }
            text += sp.c_beg;
            tlen = sp.c_end - sp.c_beg;
        }
        /* chat with tools: text that may still become a tool call waits (chat_bridge.h) */
        int hold = x->hold;
        size_t sendable = hold ? srv_chat_stream_safe(x->fmt, x->prefix, text, tlen) : tlen;
        size_t new_text = sendable > sc->text_sent ? sendable - sc->text_sent : 0;
        if (new_text > 0) {
            json_t *lp = oai_logprobs(m, c, sc->ids_sent, n_ids, j->prompt[j->n_prompt - 1],
                                      &sc->text_offset);
            const char *t = text + sc->text_sent;
            json_t *delta = m->kind == OAI_CHAT
                                ? json_pack("{s:s%}", "content", t, new_text)
                                : NULL;
            if ((m->logprobs && !lp) || (m->kind == OAI_CHAT && !delta)) { /* out of memory */
                json_decref(lp);
                json_decref(delta);
                x->buf.failed = FACET_STR_NOMEM;
            } else {
                sse_append(x, oai_chunk(m, i, t, new_text, delta, lp, NULL));
            }
            sc->text_sent = sendable;
            sc->ids_sent = n_ids;
        }
        if (c->finish != SRV_RUNNING) {
            const char *fin = oai_finish_name(c->finish);
            json_t *delta = NULL;
            if (m->kind == OAI_CHAT && hold)
                delta = srv_chat_final_delta(x->fmt, x->prefix, text, tlen, sc->text_sent, &fin);
            json_t *lp = sc->ids_sent < n_ids
                             ? oai_logprobs(m, c, sc->ids_sent, n_ids,
                                            j->prompt[j->n_prompt - 1], &sc->text_offset)
                             : NULL;
            if ((m->kind == OAI_CHAT && hold && !delta) ||
                (m->logprobs && sc->ids_sent < n_ids && !lp)) { /* out of memory */
                json_decref(lp);
                json_decref(delta);
                x->buf.failed = FACET_STR_NOMEM;
            } else {
                sse_append(x, oai_chunk(m, i, "", 0, delta, lp, fin));
            }
            sc->ids_sent = n_ids;
            sc->fin_sent = 1;
        }
    }
    if (x->done) {
        if (x->include_usage) {
            int completion = 0;
            for (int i = 0; i < j->n_choices; i++) completion += (int)x->ch[i].out.ids.len;
            sse_append(x, json_pack("{s:s,s:s,s:I,s:s,s:[],s:o}", "id", m->id, "object",
                                    m->kind == OAI_CHAT ? "chat.completion.chunk"
                                                        : "text_completion",
                                    "created", (json_int_t)m->created, "model", m->model,
                                    "choices", "usage", oai_usage(j->n_prompt, completion, j->n_cached)));
        }
        facet_str_appendz(&x->buf, "data: [DONE]\n\n");
        x->finished = 1;
    }
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream_ctx *x = cls;
    while (x->off == x->buf.len) {
        if (x->buf.failed) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (x->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        x->off = 0;
        facet_str_truncate(&x->buf, 0);
        srv_sched_lock(x->s->sched);
        x->seen = srv_job_wait(x->s->sched, x->job, x->seen, 100);
        int copied = stream_copy(x) == 0;
        srv_sched_unlock(x->s->sched);
        if (!copied) return MHD_CONTENT_READER_END_WITH_ERROR;
        stream_produce(x);
        if (x->buf.len == 0 && srv_client_gone(x->conn)) {
            srv_sched_cancel(x->s->sched, x->job);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    size_t n = x->buf.len - x->off;
    if (n > max) n = max;
    memcpy(buf, x->buf.data + x->off, n);
    x->off += n;
    return (ssize_t)n;
}

static void stream_free(void *cls) {
    stream_ctx *x = cls;
    __atomic_sub_fetch(&x->s->live_streams, 1, __ATOMIC_SEQ_CST);
    srv_sched_cancel(x->s->sched, x->job); /* no-op when done */
    for (int i = 0; i < x->job->n_choices; i++) srv_output_free(&x->ch[i].out);
    srv_job_release(x->s->sched, x->job);
    free(x->ch);
    facet_str_free(&x->buf);
    free(x);
}

static enum MHD_Result respond_stream(srv_server *s, struct MHD_Connection *c, srv_job *j,
                                      const oai_meta *m, const oai_request *r) {
    stream_ctx *x = calloc(1, sizeof *x);
    size_t n = j->n_choices > 0 ? (size_t)j->n_choices : 1;
    if (x) x->ch = calloc(n, sizeof *x->ch);
    if (!x || !x->ch) {
        free(x);
        srv_sched_cancel(s->sched, j);
        srv_job_release(s->sched, j);
        oai_error e;
        oai_fail(&e, 500, "server_error", NULL, NULL, "out of memory");
        return srv_respond_error(s, c, &e);
    }
    x->s = s;
    x->job = j;
    x->conn = c;
    x->meta = *m;
    snprintf(x->id, sizeof x->id, "%s", m->id);
    snprintf(x->model, sizeof x->model, "%s", m->model);
    x->meta.id = x->id;
    x->meta.model = x->model;
    x->include_usage = r->include_usage;
    x->hold = r->kind == OAI_CHAT && r->tools_active;
    x->fmt = s->toolcall_format;
    snprintf(x->prefix, sizeof x->prefix, "%s", r->tool_prefix);
    x->reasoning = r->kind == OAI_CHAT && s->reasoning;
    x->think_open = r->think_open;
    __atomic_add_fetch(&s->live_streams, 1, __ATOMIC_SEQ_CST); /* stream_free takes it back */
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, x, stream_free);
    if (!resp) {
        stream_free(x);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    srv_cors_headers(s, c, resp);
    enum MHD_Result ok = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    pthread_mutex_lock(&s->metrics.mu);
    s->metrics.requests_total++;
    pthread_mutex_unlock(&s->metrics.mu);
    return ok;
}

/* --------------------------------------------------------------- entry ---- */

enum MHD_Result srv_handle_generate(srv_server *s, struct MHD_Connection *c, oai_kind kind,
                                    const char *body, size_t len) {
    oai_request r;
    oai_error e;
    if (oai_request_parse(body, len, kind, &s->limits, &r, &e))
        return srv_respond_error(s, c, &e);
    int32_t *ids = NULL;
    size_t n = 0;
    enum MHD_Result res;
    srv_job *job = NULL;
    /* a job's choices run together: more than the slots would wait forever */
    if (r.n > s->cfg.max_batch) {
        oai_fail(&e, 400, "invalid_request_error", "n", NULL,
                 "'n'=%d is more than the %d sequences this server runs at once "
                 "(--max-batch %d)", r.n, s->cfg.max_batch, s->cfg.max_batch);
        goto fail;
    }
    if (prompt_ids(s, &r, &ids, &n, &e)) goto fail;
    if (n == 0) {
        oai_fail(&e, 400, "invalid_request_error", kind == OAI_CHAT ? "messages" : "prompt", NULL,
                 "the prompt is empty (0 tokens)");
        goto fail;
    }
    if (n >= (size_t)s->n_ctx) {
        oai_fail(&e, 400, "invalid_request_error", kind == OAI_CHAT ? "messages" : "prompt",
                 "context_length_exceeded",
                 "This model's maximum context length is %d tokens; the prompt has %zu tokens "
                 "(at most %d leave room for one generated token)",
                 s->n_ctx, n, s->n_ctx - 1);
        goto fail;
    }
    int room = s->n_ctx - (int)n;
    int max_tokens = r.max_tokens;
    if (max_tokens < 0) {
        /* not given: what the context and the KV budget allow (completions: OpenAI's
         * 16 at most); a limit the client never sent is never its error */
        max_tokens = kind == OAI_COMPLETION ? (room < 16 ? room : 16) : room;
        long per_choice = (long)s->cfg.kv_budget / r.n - (long)n;
        if (per_choice >= 1 && per_choice < max_tokens) max_tokens = (int)per_choice;
    }
    if (max_tokens == 0) { /* echo alone: the job runs one token, left out (oai_echo.h) */
        max_tokens = 1;
        r.echo_drop = 1;
    }
    if (max_tokens > room) {
        oai_fail(&e, 400, "invalid_request_error",
                 kind == OAI_CHAT ? "max_completion_tokens" : "max_tokens",
                 "context_length_exceeded",
                 "This model's maximum context length is %d tokens; the request asks for %zu "
                 "prompt tokens + %d completion tokens",
                 s->n_ctx, n, max_tokens);
        goto fail;
    }
    long need = (long)r.n * ((long)n + max_tokens);
    if (need > s->cfg.kv_budget) {
        /* the parameter to lower: n when several choices are asked, else the length */
        const char *param = r.n > 1                ? "n"
                            : r.max_tokens < 0     ? (kind == OAI_CHAT ? "messages" : "prompt")
                            : kind == OAI_CHAT     ? "max_completion_tokens"
                                                   : "max_tokens";
        oai_fail(&e, 400, "invalid_request_error", param, "kv_budget_exceeded",
                 "the request needs %ld KV-cache tokens (n=%d x (%zu prompt + %d completion)); "
                 "the server's budget is %d",
                 need, r.n, n, max_tokens, s->cfg.kv_budget);
        goto fail;
    }
    if (!r.seed_given) r.sampling.seed = fresh_seed();
    facet_error fe;
    if (srv_job_create(s->sched, ids, (int)n, max_tokens, r.n, &r.sampling, r.stops, r.n_stops,
                       r.logprobs, r.top_logprobs, &job, &fe) != FACET_OK) {
        oai_fail_status(&e, fe.status, NULL, NULL, "%s", fe.message);
        goto fail;
    }
    if (r.grammar) { /* the job owns the grammar from here */
        facet_grammar *g = r.grammar;
        r.grammar = NULL;
        if (srv_job_constrain(s->sched, job, g, &fe) != FACET_OK) {
            srv_job_release(NULL, job);
            oai_fail_status(&e, fe.status, NULL, NULL, "%s", fe.message);
            goto fail;
        }
    }
    if (r.echo && r.logprobs && n >= 2 &&
        srv_job_want_prompt_logprobs(job, 1, &fe) != FACET_OK) {
        srv_job_release(NULL, job);
        oai_fail_status(&e, fe.status, NULL, NULL, "%s", fe.message);
        goto fail;
    }
    if (srv_sched_submit(s->sched, job)) {
        srv_job_release(NULL, job);
        job = NULL;
        pthread_mutex_lock(&s->metrics.mu);
        s->metrics.requests_rejected++; /* and, answered 503 below, failed */
        pthread_mutex_unlock(&s->metrics.mu);
        oai_fail(&e, 503, "server_error", NULL, "server_overloaded",
                 "the server is at capacity (%d requests waiting); retry later",
                 s->cfg.max_queue);
        goto fail;
    }
    char id[64];
    unsigned long num = __atomic_add_fetch(&s->next_id, 1, __ATOMIC_RELAXED);
    snprintf(id, sizeof id, "%s-%lx%08lx", kind == OAI_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long)s->created, num);
    oai_meta m = {kind, id, (long)time(NULL), s->model_id, s->tok, r.logprobs, r.top_logprobs,
                  r.stream && r.include_usage};
    if (r.stream) {
        res = respond_stream(s, c, job, &m, &r); /* the stream owns the job now */
    } else {
        res = respond_whole(s, c, job, &m, &r);
        srv_job_release(s->sched, job);
    }
    free(ids);
    oai_request_free(&r);
    return res;
fail:
    free(ids);
    oai_request_free(&r);
    return srv_respond_error(s, c, &e);
}
