/* sched.c — continuous batching over one facet_session (see sched.h). */
#include "server/sched.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/error.h"

/* One row of logits' results, computed by the engine thread without the lock and then
 * appended to its choice under it. */
typedef struct step_row {
    srv_choice *c;
    srv_job *j;
    facet_status st;            /* of the generator step                                */
    facet_error err;
    facet_gen_step g;           /* the generator's pointers stay valid until its next step */
    double lp;                  /* log-probability of the chosen id (logprobs asked)    */
    int32_t tids[64];           /* top alternatives (top_n of them)                     */
    double tlp[64];
} step_row;

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
    facet_kv_type kv_type;
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
    step_row *rows;             /* [max_batch] one per row of logits                   */
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
        facet_generator_free(j->choices[i].gen);
        srv_output_free(&j->choices[i].out);
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
        /* the generator's stream starts after the prompt, so the first token's text is
         * decoded in context (a leading space stays, as in decode(prompt + out) -
         * decode(prompt)) */
        facet_generator_options go = {
            .sampling = &p, .n_vocab = s->n_vocab, .tok = s->tok,
            .stops = (const char *const *)j->stops, .n_stops = n_stops, .eos_ids = s->eos,
            .n_eos = s->n_eos, .max_tokens = max_tokens, .n_ctx = s->n_ctx,
            .kv_type = s->kv_type};
        st = facet_generator_create(&go, prompt, (size_t)n_prompt, &c->gen, err);
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

void srv_output_free(srv_output *o) {
    facet_vec_free(&o->ids);
    facet_vec_free(&o->logprob);
    facet_vec_free(&o->top_ids);
    facet_vec_free(&o->top_lp);
    facet_vec_free(&o->raw_end);
    facet_str_free(&o->raw);
    facet_str_free(&o->text);
    o->finish = SRV_RUNNING;
}

/* Make vector dst (a vec.h vector) as long as src, copying src's elements past dst's
 * length: 0, or -1 out of memory (dst unchanged). */
#define VEC_TAIL(dst, src) vec_tail_(&(dst).data, &(dst).len, &(dst).cap, (src).data, (src).len, \
                                     sizeof *(dst).data)
static int vec_tail_(void *dst_data, size_t *dst_len, size_t *dst_cap, const void *src,
                     size_t src_len, size_t elt) {
    if (src_len <= *dst_len) return 0;
    if (facet_vec_grow_(dst_data, dst_cap, src_len, elt)) return -1;
    char *d;
    memcpy(&d, dst_data, sizeof d);
    memcpy(d + *dst_len * elt, (const char *)src + *dst_len * elt, (src_len - *dst_len) * elt);
    *dst_len = src_len;
    return 0;
}

int srv_output_sync(srv_output *d, const srv_output *s) {
    if (VEC_TAIL(d->ids, s->ids) || VEC_TAIL(d->logprob, s->logprob) ||
        VEC_TAIL(d->top_ids, s->top_ids) || VEC_TAIL(d->top_lp, s->top_lp) ||
        VEC_TAIL(d->raw_end, s->raw_end))
        return -1;
    if (s->raw.len > d->raw.len &&
        facet_str_append(&d->raw, s->raw.data + d->raw.len, s->raw.len - d->raw.len))
        return -1;
    if (s->text.len > d->text.len &&
        facet_str_append(&d->text, s->text.data + d->text.len, s->text.len - d->text.len))
        return -1;
    d->finish = s->finish;
    return 0;
}

/* Append one step's results to the choice's outputs (lock held). Returns 0, or -1 out
 * of memory (the outputs keep their earlier tokens). */
static int record(srv_choice *c, int top_n, const step_row *r) {
    srv_output *o = &c->out;
    size_t n = o->ids.len;
    if (facet_vec_reserve(&o->ids, n + 1) || facet_vec_reserve(&o->logprob, n + 1) ||
        facet_vec_reserve(&o->raw_end, n + 1) ||
        facet_vec_reserve(&o->top_ids, (n + 1) * (size_t)top_n) ||
        facet_vec_reserve(&o->top_lp, (n + 1) * (size_t)top_n) ||
        facet_str_append(&o->raw, r->g.raw, r->g.raw_len) ||
        facet_str_append(&o->text, r->g.text, r->g.len) || facet_str_reserve(&o->text, 0))
        return -1;
    for (int k = 0; k < top_n; k++) {
        o->top_ids.data[o->top_ids.len++] = r->tids[k];
        o->top_lp.data[o->top_lp.len++] = r->tlp[k];
    }
    o->logprob.data[n] = r->lp;
    o->raw_end.data[n] = o->raw.len;
    o->ids.data[n] = r->g.token;
    o->ids.len = o->logprob.len = o->raw_end.len = n + 1;
    return 0;
}

/* End a choice that the generator did not end: cancelled, or failed (lock held). */
static void finish_choice(srv_choice *c, srv_finish f) {
    if (c->out.finish == SRV_RUNNING) c->out.finish = f;
}

/* Release the slots and KV reservation of a job whose choices all finished; remove it
 * from the running list; drop the engine's reference. */
static void retire(srv_sched *s, srv_job *j) {
    for (int i = 0; i < j->n_choices; i++) {
        srv_choice *c = &j->choices[i];
        if (c->out.finish == SRV_RUNNING) c->out.finish = SRV_FINISH_CANCEL;
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
        if (j->choices[i].out.finish == SRV_RUNNING) return 0;
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
            for (int i = 0; i < j->n_choices; i++) j->choices[i].out.finish = SRV_FINISH_CANCEL;
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
            if (c->out.finish != SRV_RUNNING || c->n_prefilled < j->n_prompt) continue;
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
            if (c->out.finish != SRV_RUNNING || c->n_prefilled >= j->n_prompt) continue;
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

/* Step choice c's generator with its logits row and compute the log-probabilities the
 * request asks for (engine thread, without the lock: the generator and the row are the
 * engine's alone). */
static void step_choice(srv_sched *s, step_row *r, const float *row) {
    const srv_job *j = r->j;
    r->st = facet_generator_step(r->c->gen, row, &r->g, &r->err);
    if (r->st != FACET_OK) return;
    r->lp = 0;
    if (j->want_logprobs) {
        r->lp = facet_logprob_of(row, s->n_vocab, r->g.token);
        if (j->top_n > 0) {
            int got = facet_top_logprobs(row, s->n_vocab, j->top_n, r->tids, r->tlp);
            for (int k = got; k < j->top_n; k++) {
                r->tids[k] = -1;
                r->tlp[k] = 0;
            }
        }
    }
}

/* Append a stepped row's results to its choice (lock held). */
static void publish(srv_sched *s, step_row *r, double now) {
    srv_job *j = r->j;
    srv_choice *c = r->c;
    if (r->st != FACET_OK) {
        snprintf(j->error, sizeof j->error, "%.500s", r->err.message);
        finish_choice(c, SRV_FINISH_ERROR);
        return;
    }
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
    if (record(c, j->want_logprobs ? j->top_n : 0, r)) {
        snprintf(j->error, sizeof j->error, "out of memory recording generated tokens");
        finish_choice(c, SRV_FINISH_ERROR);
        return;
    }
    pthread_mutex_lock(&s->m->mu);
    s->m->generation_tokens++;
    pthread_mutex_unlock(&s->m->mu);
    c->last = r->g.token;
    if (r->g.finish == FACET_FINISH_STOP) finish_choice(c, SRV_FINISH_STOP);
    else if (r->g.finish == FACET_FINISH_LENGTH) finish_choice(c, SRV_FINISH_LENGTH);
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
            /* idle (jobs may have left by cancellation, before any step saw it) */
            pthread_mutex_lock(&s->m->mu);
            s->m->batch_running = 0;
            s->m->kv_used = s->kv_used;
            s->m->slots_used = s->cfg.max_batch - s->n_free;
            pthread_mutex_unlock(&s->m->mu);
            pthread_cond_wait(&s->work, &s->mu);
            continue;
        }
        int n_decode;
        int n = build_batch(s, &n_decode);
        int n_prefill = n - n_decode;
        pthread_mutex_unlock(&s->mu);
        /* unlocked: the running list and the batch's jobs change only on this thread
         * (retire, admit), and each job's engine reference keeps it alive */
        facet_batch b = {n, s->b_tok, s->b_seq, s->b_want};
        facet_error e;
        facet_status st = facet_forward(s->session, &b, s->logits, &e);
        double now = srv_now();
        int n_rows = 0;
        if (st == FACET_OK)
            for (int i = 0; i < n; i++) {
                if (!s->b_want[i]) continue;
                step_row *r = &s->rows[n_rows];
                r->c = s->b_choice[i];
                r->j = s->b_job[i];
                step_choice(s, r, s->logits + (size_t)n_rows * (size_t)s->n_vocab);
                n_rows++;
            }
        pthread_mutex_lock(&s->mu);
        pthread_mutex_lock(&s->m->mu);
        s->m->steps++;
        s->m->prompt_tokens += (uint64_t)n_prefill;
        s->m->batch_running = n_decode; /* 0 in a prefill-only step */
        if (n_decode > 0) {
            if (n_decode > s->m->batch_max) s->m->batch_max = n_decode;
            srv_hist_observe(&s->m->batch, n_decode);
        }
        pthread_mutex_unlock(&s->m->mu);
        if (st != FACET_OK) {
            for (int i = 0; i < n; i++) {
                srv_job *j = s->b_job[i];
                if (!j->error[0]) snprintf(j->error, sizeof j->error, "engine: %.480s", e.message);
                for (int k = 0; k < j->n_choices; k++)
                    finish_choice(&j->choices[k], SRV_FINISH_ERROR);
            }
        }
        for (int r = 0; r < n_rows; r++) publish(s, &s->rows[r], now);
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
    free(s->rows);
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
    s->kv_type = facet_session_kv_type(session);
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
    s->rows = malloc((size_t)cfg->max_batch * sizeof *s->rows);
    if (!s->slot_used || !s->b_tok || !s->b_seq || !s->b_want || !s->b_choice || !s->b_job ||
        !s->logits || !s->rows) {
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
