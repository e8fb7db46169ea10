/* sched.c — continuous batching over one facet_session (see sched.h). */
#include "server/sched.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/error.h"

struct srv_sched {
    pthread_mutex_t mu;
    pthread_cond_t work;        /* signalled on submit, cancel and stop                */
    facet_model *model;
    facet_session *session;
    facet_tokenizer *tok;
    srv_sched_config cfg;
    srv_metrics *m;
    int n_vocab, n_ctx, n_eos;
    int32_t eos[16];
    srv_job *queue, *queue_tail; /* [mu] FIFO of waiting jobs                          */
    int n_queue;
    srv_job *running;           /* [mu] admitted jobs                                   */
    uint8_t *slot_used;         /* [mu] [max_batch]                                     */
    int n_free, kv_used;
    int stop;
    pthread_t thread;
    /* step buffers (engine thread) */
    int cap_entries;
    int32_t *b_tok, *b_seq;
    uint8_t *b_want;
    srv_choice **b_choice;      /* entry -> choice that wants its logits (or NULL)     */
    srv_job **b_job;
    float *logits;              /* [max_batch][n_vocab]                                */
};

double srv_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void srv_sched_lock(srv_sched *s) { pthread_mutex_lock(&s->mu); }
void srv_sched_unlock(srv_sched *s) { pthread_mutex_unlock(&s->mu); }

/* ---------------------------------------------------------------- jobs ---- */

static void job_free(srv_job *j) {
    for (int i = 0; i < j->n_choices; i++) {
        srv_choice *c = &j->choices[i];
        facet_sampler_free(c->sampler);
        facet_detok_stream_free(c->detok);
        facet_stop_matcher_free(c->stop);
        free(c->ids);
        free(c->logprob);
        free(c->top_ids);
        free(c->top_lp);
        free(c->text);
        free(c->raw);
        free(c->raw_end);
    }
    free(j->choices);
    free(j->prompt);
    free(j->bias);
    for (int i = 0; i < j->n_stops; i++) free(j->stops[i]);
    free(j->stops);
    pthread_cond_destroy(&j->cond);
    free(j);
}

facet_status srv_job_create(srv_sched *s, const int32_t *prompt, int n_prompt, int max_tokens,
                            int n_choices, const facet_sampler_params *sampling,
                            char *const *stops, int n_stops, int want_logprobs, int top_n,
                            srv_job **out, facet_error *err) {
    *out = NULL;
    srv_job *j = calloc(1, sizeof *j);
    if (!j) return facet_err(err, FACET_E_NOMEM, "job");
    pthread_cond_init(&j->cond, NULL);
    j->refs = 1;
    j->n_prompt = n_prompt;
    j->max_tokens = max_tokens;
    j->want_logprobs = want_logprobs;
    j->top_n = top_n;
    j->sampling = *sampling;
    j->prompt = malloc((size_t)(n_prompt > 0 ? n_prompt : 1) * sizeof *j->prompt);
    j->choices = calloc((size_t)n_choices, sizeof *j->choices);
    j->stops = calloc((size_t)n_stops + 1, sizeof *j->stops);
    if (sampling->n_logit_bias > 0) {
        j->bias = malloc((size_t)sampling->n_logit_bias * sizeof *j->bias);
        if (j->bias)
            memcpy(j->bias, sampling->logit_bias, (size_t)sampling->n_logit_bias * sizeof *j->bias);
    }
    j->sampling.logit_bias = j->bias;
    if (!j->prompt || !j->choices || !j->stops || (sampling->n_logit_bias > 0 && !j->bias)) {
        job_free(j);
        return facet_err(err, FACET_E_NOMEM, "job buffers");
    }
    j->n_choices = n_choices;
    if (n_prompt > 0) memcpy(j->prompt, prompt, (size_t)n_prompt * sizeof *prompt);
    for (int i = 0; i < n_stops; i++) {
        j->stops[i] = strdup(stops[i]);
        if (!j->stops[i]) {
            job_free(j);
            return facet_err(err, FACET_E_NOMEM, "stop strings");
        }
        j->n_stops = i + 1;
    }
    facet_status st = FACET_OK;
    for (int i = 0; i < n_choices && st == FACET_OK; i++) {
        srv_choice *c = &j->choices[i];
        c->slot = -1;
        facet_sampler_params p = j->sampling;
        p.seed = sampling->seed + (uint64_t)i;
        st = facet_sampler_create(&p, s->n_vocab, &c->sampler, err);
        if (st == FACET_OK) st = facet_sampler_accept_prompt(c->sampler, prompt, (size_t)n_prompt, err);
        if (st == FACET_OK) st = facet_detok_stream_create(s->tok, 1, &c->detok, err);
        /* the stream starts after the prompt, so the first token's text is decoded in
         * context (a leading space stays, as in decode(prompt + out) - decode(prompt)) */
        const char *piece;
        size_t plen;
        for (int k = 0; k < n_prompt && st == FACET_OK; k++)
            st = facet_detok_stream_push(c->detok, prompt[k], &piece, &plen, err);
        /* what the prompt's text holds back is not the completion's */
        if (st == FACET_OK) st = facet_detok_stream_mark(c->detok, &piece, &plen, err);
        if (st == FACET_OK)
            st = facet_stop_matcher_create((const char *const *)j->stops, n_stops, &c->stop, err);
        c->cap = 64;
        c->text = malloc(c->cap);
        if (st == FACET_OK && !c->text) st = facet_err(err, FACET_E_NOMEM, "choice text");
        if (c->text) c->text[0] = '\0';
        c->raw_cap = 64;
        c->raw = malloc(c->raw_cap);
        if (st == FACET_OK && !c->raw) st = facet_err(err, FACET_E_NOMEM, "choice text");
        if (c->raw) c->raw[0] = '\0';
    }
    if (st != FACET_OK) {
        job_free(j);
        return st;
    }
    *out = j;
    return FACET_OK;
}

/* Drop one reference; call with s->mu held. */
static void job_unref_locked(srv_job *j) {
    if (--j->refs == 0) job_free(j);
}

void srv_job_release(srv_sched *s, srv_job *j) {
    if (!j) return;
    if (!s) { /* never submitted: the caller holds the only reference */
        job_free(j);
        return;
    }
    pthread_mutex_lock(&s->mu);
    job_unref_locked(j);
    pthread_mutex_unlock(&s->mu);
}

int srv_sched_submit(srv_sched *s, srv_job *j) {
    pthread_mutex_lock(&s->mu);
    /* a job that the engine can admit at once never counts against the queue limit */
    int need = j->n_choices * (j->n_prompt + j->max_tokens);
    int fits_now = !s->queue && s->n_free >= j->n_choices && s->kv_used + need <= s->cfg.kv_budget;
    if (s->stop || (!fits_now && s->n_queue >= s->cfg.max_queue)) {
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    j->refs++;
    j->queued = 1;
    j->t_submit = srv_now();
    j->next = NULL;
    if (s->queue_tail) s->queue_tail->next = j;
    else s->queue = j;
    s->queue_tail = j;
    s->n_queue++;
    pthread_mutex_lock(&s->m->mu);
    s->m->queue_length = s->n_queue;
    pthread_mutex_unlock(&s->m->mu);
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

int srv_sched_cancel(srv_sched *s, srv_job *j) {
    pthread_mutex_lock(&s->mu);
    int now = !j->done && !j->cancelled;
    if (now) {
        j->cancelled = 1;
        pthread_mutex_lock(&s->m->mu);
        s->m->requests_cancelled++;
        pthread_mutex_unlock(&s->m->mu);
    }
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    return now;
}

/* The CLOCK_REALTIME instant timeout_ms from now (pthread_cond_timedwait's clock). */
static struct timespec deadline_in(int timeout_ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

unsigned long srv_job_wait(srv_sched *s, srv_job *j, unsigned long seen, int timeout_ms) {
    if (j->version != seen || j->done) return j->version;
    struct timespec ts = deadline_in(timeout_ms);
    while (j->version == seen && !j->done)
        if (pthread_cond_timedwait(&j->cond, &s->mu, &ts) == ETIMEDOUT) break;
    return j->version;
}

void srv_job_wait_done(srv_sched *s, srv_job *j, int timeout_ms) {
    struct timespec ts = deadline_in(timeout_ms);
    while (!j->done)
        if (pthread_cond_timedwait(&j->cond, &s->mu, &ts) == ETIMEDOUT) break;
}

/* ------------------------------------------------------ engine helpers ---- */

static void bump(srv_job *j) {
    j->version++;
    pthread_cond_broadcast(&j->cond);
}

static int grow_append(char **buf, size_t *len, size_t *cap, const char *p, size_t n) {
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        while (c < *len + n + 1) c *= 2;
        char *q = realloc(*buf, c);
        if (!q) return 0;
        *buf = q;
        *cap = c;
    }
    if (n) memcpy(*buf + *len, p, n);
    *len += n;
    (*buf)[*len] = '\0';
    return 1;
}

static int append_text(srv_choice *c, const char *p, size_t n) {
    return n == 0 || grow_append(&c->text, &c->len, &c->cap, p, n);
}

static int append_token(srv_choice *c, int top_n, int32_t id, double lp, const int32_t *tids,
                        const double *tlp) {
    if (c->n_ids == c->cap_ids) {
        int cap = c->cap_ids ? c->cap_ids * 2 : 32;
        int32_t *ids = realloc(c->ids, (size_t)cap * sizeof *ids);
        if (ids) c->ids = ids;
        double *l = realloc(c->logprob, (size_t)cap * sizeof *l);
        if (l) c->logprob = l;
        size_t *re = realloc(c->raw_end, (size_t)cap * sizeof *re);
        if (re) c->raw_end = re;
        if (!ids || !l || !re) return 0;
        if (top_n > 0) {
            int32_t *ti = realloc(c->top_ids, (size_t)cap * (size_t)top_n * sizeof *ti);
            if (ti) c->top_ids = ti;
            double *tl = realloc(c->top_lp, (size_t)cap * (size_t)top_n * sizeof *tl);
            if (tl) c->top_lp = tl;
            if (!ti || !tl) return 0;
        }
        c->cap_ids = cap;
    }
    c->ids[c->n_ids] = id;
    c->logprob[c->n_ids] = lp;
    c->raw_end[c->n_ids] = c->raw_len;
    if (top_n > 0) {
        memcpy(c->top_ids + (size_t)c->n_ids * top_n, tids, (size_t)top_n * sizeof *tids);
        memcpy(c->top_lp + (size_t)c->n_ids * top_n, tlp, (size_t)top_n * sizeof *tlp);
    }
    c->n_ids++;
    return 1;
}

/* Finish a choice: flush held text (unless a stop string ended it). */
static void finish_choice(srv_choice *c, srv_finish f) {
    if (c->finish != SRV_RUNNING) return;
    if (f == SRV_FINISH_LENGTH || f == SRV_FINISH_STOP) {
        const char *piece;
        size_t len;
        facet_error e;
        if (facet_detok_stream_flush(c->detok, &piece, &len, &e) == FACET_OK && len > 0) {
            if (grow_append(&c->raw, &c->raw_len, &c->raw_cap, piece, len) && c->n_ids > 0)
                c->raw_end[c->n_ids - 1] = c->raw_len;
            const char *out;
            size_t olen;
            int stopped;
            if (facet_stop_matcher_push(c->stop, piece, len, &out, &olen, &stopped, &e) ==
                FACET_OK)
                append_text(c, out, olen);
        }
        const char *out;
        size_t olen;
        facet_stop_matcher_flush(c->stop, &out, &olen);
        append_text(c, out, olen);
    }
    c->finish = f;
}

/* Release the slots and KV reservation of a job whose choices all finished; remove it
 * from the running list; drop the engine's reference. */
static void retire(srv_sched *s, srv_job *j) {
    for (int i = 0; i < j->n_choices; i++) {
        srv_choice *c = &j->choices[i];
        if (c->finish == SRV_RUNNING) c->finish = SRV_FINISH_CANCEL;
        if (c->slot >= 0) {
            /* freed, not kept: resident KV memory follows the budget's live reservations
             * rather than the longest request each slot ever served */
            facet_seq_release(s->session, c->slot, NULL);
            s->slot_used[c->slot] = 0;
            s->n_free++;
            c->slot = -1;
        }
    }
    s->kv_used -= j->kv_need;
    j->kv_need = 0;
    for (srv_job **p = &s->running; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            break;
        }
    j->running = 0;
    j->done = 1;
    pthread_mutex_lock(&s->m->mu);
    if (j->t_first > 0) srv_hist_observe(&s->m->e2e, srv_now() - j->t_submit);
    pthread_mutex_unlock(&s->m->mu);
    bump(j);
    job_unref_locked(j);
}

static int job_all_finished(const srv_job *j) {
    for (int i = 0; i < j->n_choices; i++)
        if (j->choices[i].finish == SRV_RUNNING) return 0;
    return 1;
}

/* Remove cancelled jobs from the queue; admit waiting jobs in FIFO order while slots and
 * the KV budget allow. */
static void admit(srv_sched *s) {
    srv_job **p = &s->queue, *prev = NULL;
    while (*p) {
        srv_job *j = *p;
        if (j->cancelled || s->stop) {
            *p = j->next;
            if (s->queue_tail == j) s->queue_tail = prev;
            s->n_queue--;
            j->queued = 0;
            for (int i = 0; i < j->n_choices; i++) j->choices[i].finish = SRV_FINISH_CANCEL;
            j->done = 1;
            bump(j);
            job_unref_locked(j);
            continue;
        }
        prev = j;
        p = &j->next;
    }
    while (s->queue) {
        srv_job *j = s->queue;
        int need = j->n_choices * (j->n_prompt + j->max_tokens);
        if (s->n_free < j->n_choices || s->kv_used + need > s->cfg.kv_budget) break;
        s->queue = j->next;
        if (!s->queue) s->queue_tail = NULL;
        s->n_queue--;
        j->queued = 0;
        j->running = 1;
        j->kv_need = need;
        s->kv_used += need;
        for (int i = 0, slot = 0; i < j->n_choices; i++) {
            while (s->slot_used[slot]) slot++;
            s->slot_used[slot] = 1;
            s->n_free--;
            j->choices[i].slot = slot;
            facet_seq_reset(s->session, slot, NULL);
        }
        /* append to the running list (keeps arrival order for prefill) */
        j->next = NULL;
        srv_job **t = &s->running;
        while (*t) t = &(*t)->next;
        *t = j;
    }
    pthread_mutex_lock(&s->m->mu);
    s->m->queue_length = s->n_queue;
    s->m->kv_used = s->kv_used;
    s->m->slots_used = s->cfg.max_batch - s->n_free;
    pthread_mutex_unlock(&s->m->mu);
}

/* Build one step's batch. Returns the number of entries. */
static int build_batch(srv_sched *s, int *n_decode_out) {
    int n = 0, n_decode = 0;
    for (srv_job *j = s->running; j; j = j->next)
        for (int i = 0; i < j->n_choices; i++) {
            srv_choice *c = &j->choices[i];
            if (c->finish != SRV_RUNNING || c->n_prefilled < j->n_prompt) continue;
            s->b_tok[n] = c->last;
            s->b_seq[n] = c->slot;
            s->b_want[n] = 1;
            s->b_choice[n] = c;
            s->b_job[n] = j;
            n++;
            n_decode++;
        }
    int budget = s->cfg.chunk - n_decode;
    if (budget < 16) budget = 16;
    for (srv_job *j = s->running; j && budget > 0; j = j->next)
        for (int i = 0; i < j->n_choices && budget > 0; i++) {
            srv_choice *c = &j->choices[i];
            if (c->finish != SRV_RUNNING || c->n_prefilled >= j->n_prompt) continue;
            int take = j->n_prompt - c->n_prefilled;
            if (take > budget) take = budget;
            for (int k = 0; k < take; k++) {
                int pos = c->n_prefilled + k;
                s->b_tok[n] = j->prompt[pos];
                s->b_seq[n] = c->slot;
                s->b_want[n] = pos == j->n_prompt - 1;
                s->b_choice[n] = s->b_want[n] ? c : NULL;
                s->b_job[n] = j;
                n++;
            }
            c->n_prefilled += take;
            budget -= take;
        }
    *n_decode_out = n_decode;
    return n;
}

static int is_eos(const srv_sched *s, int32_t id) {
    for (int i = 0; i < s->n_eos; i++)
        if (s->eos[i] == id) return 1;
    return 0;
}

/* Sample the next token of choice c from its logits row. */
static void advance(srv_sched *s, srv_job *j, srv_choice *c, const float *row, double now) {
    int bad = facet_logits_nonfinite(row, s->n_vocab);
    if (bad >= 0) { /* an overflowed forward pass: nothing meaningful to sample */
        snprintf(j->error, sizeof j->error,
                 "the logits are not finite (id %d: %g) after %d generated tokens: the forward "
                 "pass overflowed%s", bad, row[bad], c->n_ids,
                 facet_session_kv_type(s->session) == FACET_KV_F16
                     ? "; the f16 KV cache holds only values within +-65504" : "");
        finish_choice(c, SRV_FINISH_ERROR);
        return;
    }
    int32_t tok = facet_sampler_sample(c->sampler, row);
    facet_sampler_accept(c->sampler, tok);
    if (j->t_first == 0) {
        j->t_first = now;
        pthread_mutex_lock(&s->m->mu);
        srv_hist_observe(&s->m->ttft, now - j->t_submit);
        pthread_mutex_unlock(&s->m->mu);
    } else if (c->t_last > 0) {
        pthread_mutex_lock(&s->m->mu);
        srv_hist_observe(&s->m->itl, now - c->t_last);
        pthread_mutex_unlock(&s->m->mu);
    }
    c->t_last = now;
    int32_t tids[64];
    double tlp[64];
    double lp = 0;
    if (j->want_logprobs) {
        lp = facet_logprob_of(row, s->n_vocab, tok);
        if (j->top_n > 0) {
            int got = facet_top_logprobs(row, s->n_vocab, j->top_n, tids, tlp);
            for (int k = got; k < j->top_n; k++) {
                tids[k] = -1;
                tlp[k] = 0;
            }
        }
    }
    if (!append_token(c, j->top_n, tok, lp, tids, tlp)) {
        snprintf(j->error, sizeof j->error, "out of memory recording generated tokens");
        finish_choice(c, SRV_FINISH_ERROR);
        return;
    }
    pthread_mutex_lock(&s->m->mu);
    s->m->generation_tokens++;
    pthread_mutex_unlock(&s->m->mu);
    c->last = tok;
    /* an eos id is generated (counted, with its logprobs, as `facet run` reports it)
     * but adds no text */
    if (is_eos(s, tok)) {
        finish_choice(c, SRV_FINISH_STOP);
        return;
    }
    const char *piece;
    size_t plen;
    facet_error e;
    if (facet_detok_stream_push(c->detok, tok, &piece, &plen, &e) != FACET_OK) {
        snprintf(j->error, sizeof j->error, "detokenizer: %.480s", e.message);
        finish_choice(c, SRV_FINISH_ERROR);
        return;
    }
    if (!grow_append(&c->raw, &c->raw_len, &c->raw_cap, piece, plen)) {
        snprintf(j->error, sizeof j->error, "out of memory recording generated text");
        finish_choice(c, SRV_FINISH_ERROR);
        return;
    }
    c->raw_end[c->n_ids - 1] = c->raw_len;
    const char *out;
    size_t olen;
    int stopped = -1;
    if (facet_stop_matcher_push(c->stop, piece, plen, &out, &olen, &stopped, &e) != FACET_OK ||
        !append_text(c, out, olen)) {
        snprintf(j->error, sizeof j->error, "out of memory recording generated text");
        finish_choice(c, SRV_FINISH_ERROR);
        return;
    }
    if (stopped >= 0) finish_choice(c, SRV_FINISH_STOP);
    else if (c->n_ids >= j->max_tokens || j->n_prompt + c->n_ids >= s->n_ctx)
        finish_choice(c, SRV_FINISH_LENGTH);
}

static void *engine_main(void *arg) {
    srv_sched *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        /* cancelled running jobs leave before the step */
        for (srv_job *j = s->running, *next; j; j = next) {
            next = j->next;
            if (j->cancelled || s->stop) retire(s, j);
        }
        admit(s);
        if (s->stop && !s->running && !s->queue) break;
        if (!s->running) {
            pthread_cond_wait(&s->work, &s->mu);
            continue;
        }
        int n_decode;
        int n = build_batch(s, &n_decode);
        int n_prefill = n - n_decode;
        pthread_mutex_unlock(&s->mu);
        facet_batch b = {n, s->b_tok, s->b_seq, s->b_want};
        facet_error e;
        facet_status st = facet_forward(s->session, &b, s->logits, &e);
        double now = srv_now();
        pthread_mutex_lock(&s->mu);
        pthread_mutex_lock(&s->m->mu);
        s->m->steps++;
        s->m->prompt_tokens += (uint64_t)n_prefill;
        if (n_decode > 0) {
            s->m->batch_running = n_decode;
            if (n_decode > s->m->batch_max) s->m->batch_max = n_decode;
            srv_hist_observe(&s->m->batch, n_decode);
        }
        pthread_mutex_unlock(&s->m->mu);
        int row = 0;
        for (int i = 0; i < n; i++) {
            srv_job *j = s->b_job[i];
            if (st != FACET_OK) {
                if (!j->error[0])
                    snprintf(j->error, sizeof j->error, "engine: %.480s", e.message);
                for (int k = 0; k < j->n_choices; k++)
                    finish_choice(&j->choices[k], SRV_FINISH_ERROR);
                continue;
            }
            if (!s->b_want[i]) continue;
            srv_choice *c = s->b_choice[i];
            advance(s, j, c, s->logits + (size_t)row * (size_t)s->n_vocab, now);
            row++;
        }
        for (int i = 0; i < n; i++) bump(s->b_job[i]);
        for (srv_job *j = s->running, *next; j; j = next) {
            next = j->next;
            if (job_all_finished(j)) retire(s, j);
        }
        pthread_mutex_lock(&s->m->mu);
        if (!s->running) s->m->batch_running = 0;
        s->m->kv_used = s->kv_used;
        s->m->slots_used = s->cfg.max_batch - s->n_free;
        pthread_mutex_unlock(&s->m->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ------------------------------------------------------------ lifecycle ---- */

/* Free the scheduler's buffers and the struct itself. */
static void free_buffers(srv_sched *s) {
    free(s->slot_used);
    free(s->b_tok);
    free(s->b_seq);
    free(s->b_want);
    free(s->b_choice);
    free(s->b_job);
    free(s->logits);
    free(s);
}

facet_status srv_sched_create(facet_model *model, facet_session *session,
                              const srv_sched_config *cfg, srv_metrics *metrics,
                              srv_sched **out, facet_error *err) {
    *out = NULL;
    facet_model_info info;
    facet_model_get_info(model, &info);
    srv_sched *s = calloc(1, sizeof *s);
    if (!s) return facet_err(err, FACET_E_NOMEM, "scheduler");
    s->model = model;
    s->session = session;
    s->tok = facet_model_tokenizer(model);
    s->cfg = *cfg;
    s->m = metrics;
    s->n_vocab = info.vocab_size;
    s->n_ctx = facet_session_n_ctx(session);
    s->n_eos = info.n_eos < 16 ? info.n_eos : 16;
    memcpy(s->eos, info.eos_token_ids, (size_t)s->n_eos * sizeof *s->eos);
    s->n_free = cfg->max_batch;
    s->cap_entries = cfg->max_batch + (cfg->chunk > 16 ? cfg->chunk : 16);
    size_t ne = (size_t)s->cap_entries;
    s->slot_used = calloc((size_t)cfg->max_batch, 1);
    s->b_tok = malloc(ne * sizeof *s->b_tok);
    s->b_seq = malloc(ne * sizeof *s->b_seq);
    s->b_want = malloc(ne);
    s->b_choice = malloc(ne * sizeof *s->b_choice);
    s->b_job = malloc(ne * sizeof *s->b_job);
    s->logits = malloc((size_t)cfg->max_batch * (size_t)s->n_vocab * sizeof *s->logits);
    if (!s->slot_used || !s->b_tok || !s->b_seq || !s->b_want || !s->b_choice || !s->b_job ||
        !s->logits) {
        free_buffers(s);
        return facet_err(err, FACET_E_NOMEM, "scheduler buffers for %d sequences", cfg->max_batch);
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_mutex_lock(&metrics->mu);
    metrics->kv_budget = cfg->kv_budget;
    metrics->slots_total = cfg->max_batch;
    pthread_mutex_unlock(&metrics->mu);
    if (pthread_create(&s->thread, NULL, engine_main, s)) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->work);
        free_buffers(s);
        return facet_err(err, FACET_E_INTERNAL, "cannot start the engine thread");
    }
    *out = s;
    return FACET_OK;
}

int srv_sched_idle(srv_sched *s) {
    pthread_mutex_lock(&s->mu);
    int idle = !s->running && !s->queue;
    pthread_mutex_unlock(&s->mu);
    return idle;
}

void srv_sched_stop(srv_sched *s) {
    pthread_mutex_lock(&s->mu);
    int was = s->stop;
    s->stop = 1;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    if (!was) pthread_join(s->thread, NULL);
}

void srv_sched_free(srv_sched *s) {
    if (!s) return;
    srv_sched_stop(s);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work);
    free_buffers(s);
}
