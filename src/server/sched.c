/* sched.c — continuous batching over one facet_session (see sched.h). */
#include "facet_grammar.h"
#include "server/sched.h"

#include <errno.h>
#include <math.h>
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

/* Tokens a running sequence's prefix must share beyond a free one's to be copied. */
#define FACET_SRV_COPY_MIN 16

/* One sequence of the session: a running choice's, or a cached prefix (free). */
typedef struct slot_info {
    srv_choice *owner;          /* the running choice, NULL when free                   */
    int n;                      /* tokens its KV cache holds (its length)               */
    int hw;                     /* most tokens it held since its memory was last freed:
                                   what it counts in the budget (a cut keeps the memory) */
    FACET_VEC(int32_t) toks;    /* the first of them (all unless an append failed:
                                   `frozen`, then a prefix that still matches)          */
    int frozen;
    double last_use;            /* when it was last fed or freed (LRU eviction)          */
} slot_info;

struct srv_sched {
    pthread_mutex_t mu;
    pthread_cond_t work;        /* signalled on submit, cancel and stop                */
    facet_model *model;
    facet_session *session;
    facet_tokenizer *tok;
    srv_sched_config cfg;
    srv_metrics *m;
    /* [gv_mu] token trie, built by the first constrained job on its HTTP thread: under a
     * lock of its own, so the engine thread (which takes mu every step) decodes on
     * while a 150k vocabulary's trie is built */
    facet_grammar_vocab *gvocab;
    pthread_mutex_t gv_mu;
    int n_vocab, n_ctx, n_eos;
    int32_t eos[16];
    facet_kv_type kv_type;
    srv_job *queue, *queue_tail; /* [mu] FIFO of waiting jobs                          */
    int n_queue;
    srv_job *running;           /* [mu] admitted jobs                                   */
    slot_info *slots;           /* [mu] [n_slots]                                       */
    int n_owned;                /* [mu] slots held by running choices (<= max_batch)    */
    int kv_held;                /* [mu] tokens every slot counts (sum of slot_info.hw)  */
    int kv_cached;              /* [mu] of them, in free slots (cached prefixes)        */
    int stop;
    pthread_t thread;
    /* step buffers (engine thread) */
    int cap_entries;
    int32_t *b_tok, *b_seq;
    uint8_t *b_want;
    srv_choice **b_choice;      /* entry -> choice that wants its logits (or NULL)     */
    srv_job **b_job;
    float *logits;              /* [max_batch + SRV_PLP_ROWS][n_vocab]                 */
    int32_t *b_plp;             /* entry -> prompt index whose log-prob its logits give
                                   (0: none)                                            */
    step_row *rows;             /* [max_batch] one per row of logits                   */
    struct embed_task *embeds;  /* [mu] waiting embedding tasks (srv_sched_embed)        */
    pthread_cond_t embed_cv;    /* signalled when a task is done                         */
    facet_session *esess;       /* engine thread: the embeddings' session                */
    int n_embd;                 /* hidden_size                                           */
};

double srv_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void srv_sched_lock(srv_sched *s) { pthread_mutex_lock(&s->mu); }
void srv_sched_unlock(srv_sched *s) { pthread_mutex_unlock(&s->mu); }

static int job_fits(const srv_sched *s, const srv_job *j, int pending);
static int pending_prefill(const srv_sched *s);

/* ---------------------------------------------------------------- jobs ---- */

static void job_free(srv_job *j) {
    for (int i = 0; i < j->n_choices; i++) {
        facet_generator_free(j->choices[i].gen);
        srv_output_free(&j->choices[i].out);
    }
    free(j->choices);
    facet_grammar_free(j->grammar);
    free(j->p_lp);
    free(j->p_top_ids);
    free(j->p_top_lp);
    free(j->prompt);
    free(j->bias);
    for (int i = 0; i < j->n_stops; i++) free(j->stops[i]);
    free(j->stops);
    pthread_cond_destroy(&j->cond);
    free(j);
}

facet_status srv_job_want_prompt_logprobs(srv_job *j, int from, facet_error *err) {
    if (from < 1 || from >= j->n_prompt)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "prompt log-probabilities from token %d of %d (expected 1..%d)", from,
                         j->n_prompt, j->n_prompt - 1);
    size_t n = (size_t)j->n_prompt, nt = n * (size_t)(j->top_n > 0 ? j->top_n : 1);
    j->p_lp = calloc(n, sizeof *j->p_lp);
    j->p_top_ids = malloc(nt * sizeof *j->p_top_ids);
    j->p_top_lp = calloc(nt, sizeof *j->p_top_lp);
    if (!j->p_lp || !j->p_top_ids || !j->p_top_lp)
        return facet_err(err, FACET_E_NOMEM, "prompt log-probabilities of %zu tokens", n);
    for (size_t i = 0; i < nt; i++) j->p_top_ids[i] = -1;
    j->plp_from = from;
    return FACET_OK;
}

/* Make choice i's generator (seed + i), constrained by grammar g when not NULL. */
static facet_status choice_generator(srv_sched *s, srv_job *j, int i, facet_grammar_vocab *gv,
                                     facet_error *err) {
    srv_choice *c = &j->choices[i];
    facet_sampler_params p = j->sampling;
    p.seed = j->sampling.seed + (uint64_t)i;
    /* the generator's stream starts after the prompt, so the first token's text is
     * decoded in context (a leading space stays, as in decode(prompt + out) -
     * decode(prompt)) */
    facet_generator_options go = {
        .sampling = &p, .n_vocab = s->n_vocab, .tok = s->tok,
        .stops = (const char *const *)j->stops, .n_stops = j->n_stops, .eos_ids = s->eos,
        .n_eos = s->n_eos, .max_tokens = j->max_tokens, .n_ctx = s->n_ctx,
        .kv_type = s->kv_type, .grammar = gv ? j->grammar : NULL, .grammar_vocab = gv};
    facet_generator_free(c->gen);
    c->gen = NULL;
    return facet_generator_create(&go, j->prompt, (size_t)j->n_prompt, &c->gen, err);
}

facet_status srv_job_constrain(srv_sched *s, srv_job *j, facet_grammar *g, facet_error *err) {
    j->grammar = g;
    if (!s->tok)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "constrained decoding needs the model's tokenizer");
    facet_status st = FACET_OK;
    pthread_mutex_lock(&s->gv_mu);
    if (!s->gvocab) st = facet_grammar_vocab_create(s->tok, s->n_vocab, &s->gvocab, err);
    facet_grammar_vocab *gv = s->gvocab;
    pthread_mutex_unlock(&s->gv_mu);
    for (int i = 0; i < j->n_choices && st == FACET_OK; i++)
        st = choice_generator(s, j, i, gv, err);
    return st;
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
        st = choice_generator(s, j, i, NULL, err);
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
    int fits_now = !s->queue && job_fits(s, j, pending_prefill(s));
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

/* ------------------------------------------------------- slots and KV ---- */

/* Tokens choice c must have in its KV cache before it decodes: the prompt, then every
 * generated token but the last (which the next decode entry feeds). */
static int choice_target(const srv_job *j, const srv_choice *c) {
    int g = (int)c->out.ids.len;
    return g == 0 ? j->n_prompt : j->n_prompt + g - 1;
}

/* The token at position pos of choice c's sequence. */
static int32_t choice_token(const srv_job *j, const srv_choice *c, int pos) {
    return pos < j->n_prompt ? j->prompt[pos] : c->out.ids.data[pos - j->n_prompt];
}

/* Prompt (and, after a preemption, generated) tokens admitted jobs have still to feed. */
static int pending_prefill(const srv_sched *s) {
    int n = 0;
    for (const srv_job *j = s->running; j; j = j->next)
        for (int i = 0; i < j->n_choices; i++) {
            const srv_choice *c = &j->choices[i];
            if (c->slot >= 0 && c->out.finish == SRV_RUNNING && c->n_fed < choice_target(j, c))
                n += choice_target(j, c) - c->n_fed;
        }
    return n;
}

static void count_metric(srv_sched *s, uint64_t *counter, uint64_t by) {
    pthread_mutex_lock(&s->m->mu);
    *counter += by;
    pthread_mutex_unlock(&s->m->mu);
}

/* Forget slot k's KV and tokens (its memory is freed). */
static void slot_clear(srv_sched *s, int k) {
    slot_info *si = &s->slots[k];
    s->kv_held -= si->hw;
    if (!si->owner) s->kv_cached -= si->hw;
    si->n = si->hw = 0;
    si->toks.len = 0;
    si->frozen = 0;
    facet_seq_release(s->session, k, NULL);
}

/* Evict the least recently used cached prefix, skipping slot `keep` (-1: none).
 * Returns 1, or 0 when none is left. */
static int evict_lru(srv_sched *s, int keep) {
    int best = -1;
    for (int k = 0; k < s->cfg.n_slots; k++) {
        slot_info *si = &s->slots[k];
        if (si->owner || k == keep || si->hw == 0) continue;
        if (best < 0 || si->last_use < s->slots[best].last_use) best = k;
    }
    if (best < 0) return 0;
    slot_clear(s, best);
    count_metric(s, &s->m->prefix_evictions, 1);
    return 1;
}

/* Common prefix of slot k's tokens and choice c's first `limit` tokens. */
static int slot_match(const srv_sched *s, int k, const srv_job *j, const srv_choice *c,
                      int limit) {
    const slot_info *si = &s->slots[k];
    int n = (int)si->toks.len < limit ? (int)si->toks.len : limit, m = 0;
    while (m < n && si->toks.data[m] == choice_token(j, c, m)) m++;
    return m;
}

/* Copy the first m tokens of running slot `from` into free slot k (cleared first).
 * Returns m, or 0 when the engine cannot (k then holds nothing). */
static int copy_prefix(srv_sched *s, int from, int k, int m) {
    slot_info *si = &s->slots[k], *src = &s->slots[from];
    slot_clear(s, k);
    if (facet_seq_copy(s->session, from, k, m, NULL) != FACET_OK) {
        facet_seq_reset(s->session, k, NULL);
        return 0;
    }
    si->n = si->hw = m;
    s->kv_held += m;
    s->kv_cached += m; /* free until take_slot owns it */
    if (facet_vec_reserve(&si->toks, (size_t)m) == 0) {
        memcpy(si->toks.data, src->toks.data, (size_t)m * sizeof *si->toks.data);
        si->toks.len = (size_t)m;
    } else {
        si->frozen = 1; /* an empty list: still a true prefix */
    }
    return m;
}

/* Give choice c a free slot: the one whose cached tokens share the longest prefix with
 * c's (cut to it), else an empty one, else the least recently used (cleared). When a
 * running sequence shares a longer prefix (by more than a key group: a copy is not
 * free), that prefix is copied into the empty or least recently used slot instead.
 * Returns the tokens reused. */
static int take_slot(srv_sched *s, srv_job *j, srv_choice *c) {
    int target = choice_target(j, c);
    /* the prompt's last token is fed again when its logits are needed */
    int limit = c->out.ids.len == 0 ? target - 1 : target;
    if (j->plp_from > 0 && limit > j->plp_from - 1) limit = j->plp_from - 1; /* logits */
    int best = -1, best_m = 0, empty = -1, lru = -1, run = -1, run_m = 0;
    for (int k = 0; k < s->cfg.n_slots; k++) {
        slot_info *si = &s->slots[k];
        if (si->owner) {
            /* a running sequence: its token list is what its KV holds between steps */
            if (s->cfg.prefix_cache) {
                int m = slot_match(s, k, j, c, limit);
                if (m > run_m) run = k, run_m = m;
            }
            continue;
        }
        if (si->hw == 0) {
            if (empty < 0) empty = k;
            continue;
        }
        if (lru < 0 || si->last_use < s->slots[lru].last_use) lru = k;
        if (!s->cfg.prefix_cache) continue;
        int m = slot_match(s, k, j, c, limit);
        if (m > best_m) best = k, best_m = m;
    }
    int k = best >= 0 ? best : empty >= 0 ? empty : lru;
    if (run >= 0 && run_m > best_m + FACET_SRV_COPY_MIN) {
        k = empty >= 0 ? empty : lru;
        if (copy_prefix(s, run, k, run_m)) {
            best = k, best_m = run_m;
            count_metric(s, &s->m->prefix_copies, 1);
        }
    }
    slot_info *si = &s->slots[k];
    int keep = k == best ? best_m : 0;
    if (keep > 0 && facet_seq_truncate(s->session, k, keep, NULL) != FACET_OK) keep = 0;
    if (keep == 0) {
        slot_clear(s, k);
        facet_seq_reset(s->session, k, NULL);
    } else {
        si->n = keep; /* its memory stays: hw and the budget's count are unchanged */
        if (si->toks.len >= (size_t)keep) { /* the list is whole again */
            si->toks.len = (size_t)keep;
            si->frozen = 0;
        } else {
            si->frozen = 1; /* a copy whose list could not be kept: a shorter prefix */
        }
    }
    s->kv_cached -= si->hw; /* owned now (0 after a clear) */
    si->owner = c;
    s->n_owned++;
    c->slot = k;
    c->n_fed = keep;
    return keep;
}

/* Free choice c's slot: kept as a cached prefix, or cleared (no prefix cache, or its KV
 * may be incomplete after an engine error). */
static void drop_slot(srv_sched *s, srv_choice *c, int keep) {
    if (c->slot < 0) return;
    slot_info *si = &s->slots[c->slot];
    si->owner = NULL;
    si->last_use = srv_now();
    s->kv_cached += si->hw;
    s->n_owned--;
    if (!keep || !s->cfg.prefix_cache) slot_clear(s, c->slot);
    c->slot = -1;
}

/* Release the slots of a job whose choices all finished (kept as cached prefixes);
 * remove it from the running list; drop the engine's reference. */
static void retire(srv_sched *s, srv_job *j) {
    int failed = 0;
    for (int i = 0; i < j->n_choices; i++) failed |= j->choices[i].out.finish == SRV_FINISH_ERROR;
    for (int i = 0; i < j->n_choices; i++) {
        srv_choice *c = &j->choices[i];
        if (c->out.finish == SRV_RUNNING) c->out.finish = SRV_FINISH_CANCEL;
        drop_slot(s, c, !failed);
    }
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

/* Return running job j to the head of the queue (its KV freed, its outputs kept):
 * readmitted, it feeds its prompt and generated tokens again. */
static void preempt(srv_sched *s, srv_job *j) {
    for (int i = 0; i < j->n_choices; i++) {
        srv_choice *c = &j->choices[i];
        if (c->slot < 0) continue;
        drop_slot(s, c, 0);
        c->n_fed = 0;
    }
    for (srv_job **p = &s->running; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            break;
        }
    j->running = 0;
    j->queued = 1;
    j->preempted++;
    j->next = s->queue;
    s->queue = j;
    if (!s->queue_tail) s->queue_tail = j;
    s->n_queue++;
    count_metric(s, &s->m->preemptions, 1);
}

static int job_all_finished(const srv_job *j) {
    for (int i = 0; i < j->n_choices; i++)
        if (j->choices[i].out.finish == SRV_RUNNING) return 0;
    return 1;
}

static int job_unfinished(const srv_job *j) {
    int n = 0;
    for (int i = 0; i < j->n_choices; i++) n += j->choices[i].out.finish == SRV_RUNNING;
    return n;
}

/* Whether job j's unfinished choices can start now: sequences under max_batch, and
 * their tokens to feed (less what the prefix cache may supply, counted as nothing here)
 * plus their first generated token within the budget once every cached prefix is
 * evicted. The running sequences' growth is not reserved: make_room preempts when it
 * comes (by then others may have finished). */
static int job_fits(const srv_sched *s, const srv_job *j, int pending) {
    int n = job_unfinished(j);
    if (s->n_owned + n > s->cfg.max_batch) return 0;
    long need = 0;
    for (int i = 0; i < j->n_choices; i++)
        if (j->choices[i].out.finish == SRV_RUNNING) need += choice_target(j, &j->choices[i]);
    long used = (long)s->kv_held - s->kv_cached + pending;
    return used + need + n <= s->cfg.kv_budget;
}

static void update_metrics(srv_sched *s);

/* Remove cancelled jobs from the queue; admit waiting jobs in FIFO order while
 * sequences and the KV budget allow (job_fits), evicting cached prefixes as needed. */
static void admit(srv_sched *s) {
    srv_job **p = &s->queue, *prev = NULL;
    while (*p) {
        srv_job *j = *p;
        if (j->cancelled || s->stop) {
            *p = j->next;
            if (s->queue_tail == j) s->queue_tail = prev;
            s->n_queue--;
            j->queued = 0;
            for (int i = 0; i < j->n_choices; i++) finish_choice(&j->choices[i], SRV_FINISH_CANCEL);
            j->done = 1;
            bump(j);
            job_unref_locked(j);
            continue;
        }
        prev = j;
        p = &j->next;
    }
    int pending = pending_prefill(s);
    while (s->queue) {
        srv_job *j = s->queue;
        if (!job_fits(s, j, pending)) {
            if (!j->waited) {
                j->waited = 1;
                count_metric(s, &s->m->admission_waits, 1);
            }
            break;
        }
        s->queue = j->next;
        if (!s->queue) s->queue_tail = NULL;
        s->n_queue--;
        j->queued = 0;
        j->running = 1;
        uint64_t reused = 0, asked = 0;
        for (int i = 0; i < j->n_choices; i++) {
            srv_choice *c = &j->choices[i];
            if (c->out.finish != SRV_RUNNING) continue;
            int m = take_slot(s, j, c);
            if (i == 0 && !j->preempted) j->n_cached = m < j->n_prompt ? m : j->n_prompt;
            reused += (uint64_t)m;
            asked += (uint64_t)choice_target(j, c);
            pending += choice_target(j, c) - m;
        }
        /* room for what is left to feed: evict cached prefixes (LRU) */
        while (s->kv_held + pending > s->cfg.kv_budget && evict_lru(s, -1)) {
        }
        pthread_mutex_lock(&s->m->mu);
        s->m->prefix_query_tokens += asked;
        s->m->prefix_hit_tokens += reused;
        if (reused) s->m->prefix_hits++;
        pthread_mutex_unlock(&s->m->mu);
        /* append to the running list (keeps arrival order for prefill) */
        j->next = NULL;
        srv_job **t = &s->running;
        while (*t) t = &(*t)->next;
        *t = j;
    }
    update_metrics(s);
}

/* Make room in the budget for this step: `grow` tokens of decode entries on top of what
 * is held and pending. Evicts cached prefixes, then preempts the newest running jobs
 * (never the last one: the HTTP layer sized every job to the budget alone). */
static void make_room(srv_sched *s) {
    for (;;) {
        int grow = 0;
        for (srv_job *j = s->running; j; j = j->next)
            for (int i = 0; i < j->n_choices; i++) {
                srv_choice *c = &j->choices[i];
                grow += c->slot >= 0 && c->out.finish == SRV_RUNNING &&
                        c->n_fed >= choice_target(j, c);
            }
        if (s->kv_held + pending_prefill(s) + grow <= s->cfg.kv_budget) return;
        if (evict_lru(s, -1)) continue;
        srv_job *newest = NULL;
        int n_jobs = 0;
        for (srv_job *j = s->running; j; j = j->next, n_jobs++)
            if (!newest || j->t_submit >= newest->t_submit) newest = j;
        if (n_jobs <= 1) return;
        preempt(s, newest);
    }
}

/* Append an entry feeding `tok` to choice c's slot. */
static void add_entry(srv_sched *s, int n, srv_job *j, srv_choice *c, int32_t tok, int want) {
    slot_info *si = &s->slots[c->slot];
    s->b_tok[n] = tok;
    s->b_seq[n] = c->slot;
    s->b_want[n] = (uint8_t)want;
    s->b_choice[n] = want ? c : NULL;
    s->b_plp[n] = 0;
    s->b_job[n] = j;
    /* the token list follows the KV cache; after a failed growth it stays the prefix
     * it was (still a true match), frozen */
    if (!si->frozen) {
        if (facet_vec_reserve(&si->toks, si->toks.len + 1) == 0)
            si->toks.data[si->toks.len++] = tok;
        else
            si->frozen = 1;
    }
    if (++si->n > si->hw) {
        si->hw = si->n;
        s->kv_held++;
    }
    si->last_use = srv_now();
    c->n_fed++;
}

/* Build one step's batch. Returns the number of entries. */
static int build_batch(srv_sched *s, int *n_decode_out) {
    int n = 0, n_decode = 0;
    for (srv_job *j = s->running; j; j = j->next)
        for (int i = 0; i < j->n_choices; i++) {
            srv_choice *c = &j->choices[i];
            if (c->slot < 0 || c->out.finish != SRV_RUNNING || c->n_fed < choice_target(j, c))
                continue;
            add_entry(s, n++, j, c, c->last, 1);
            n_decode++;
        }
    int budget = s->cfg.chunk - n_decode, plp_rows = SRV_PLP_ROWS;
    if (budget < 16) budget = 16;
    for (srv_job *j = s->running; j && budget > 0; j = j->next)
        for (int i = 0; i < j->n_choices && budget > 0; i++) {
            srv_choice *c = &j->choices[i];
            int target = choice_target(j, c);
            if (c->slot < 0 || c->out.finish != SRV_RUNNING || c->n_fed >= target) continue;
            int take = target - c->n_fed;
            if (take > budget) take = budget;
            int logits_at = c->out.ids.len == 0 ? j->n_prompt - 1 : -1;
            /* prompt log-probabilities: the logits of positions [plp_from-1, n_prompt-1),
             * at most plp_rows of them this step */
            int plp_lo = i == 0 && j->plp_from > 0 ? j->plp_from - 1 : INT32_MAX;
            for (int k = 0; k < take; k++) {
                int pos = c->n_fed;
                int plp = pos >= plp_lo && pos < j->n_prompt - 1;
                if (plp && plp_rows == 0) {
                    take = k;
                    break;
                }
                add_entry(s, n, j, c, choice_token(j, c, pos), pos == logits_at || plp);
                s->b_plp[n++] = plp ? pos + 1 : 0;
                plp_rows -= plp;
            }
            budget -= take;
        }
    *n_decode_out = n_decode;
    return n;
}

/* Record the log-probability of prompt token t (and its alternatives) from the logits
 * of position t-1 (engine thread, without the lock: only it writes these, and readers
 * wait for the job to be done). */
static void prompt_logprob(srv_sched *s, srv_job *j, int t, const float *row) {
    j->p_lp[t] = facet_logprob_of(row, s->n_vocab, j->prompt[t]);
    if (j->top_n > 0) {
        int32_t *ids = j->p_top_ids + (size_t)t * (size_t)j->top_n;
        double *lps = j->p_top_lp + (size_t)t * (size_t)j->top_n;
        int got = facet_top_logprobs(row, s->n_vocab, j->top_n, ids, lps);
        for (int k = got; k < j->top_n; k++) ids[k] = -1, lps[k] = 0;
    }
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

/* Publish the KV and slot gauges (lock held). */
static void update_metrics(srv_sched *s) {
    int pending = pending_prefill(s);
    pthread_mutex_lock(&s->m->mu);
    s->m->queue_length = s->n_queue;
    s->m->kv_used = s->kv_held - s->kv_cached + pending;
    s->m->kv_cached = s->kv_cached;
    s->m->slots_used = s->n_owned;
    pthread_mutex_unlock(&s->m->mu);
}

/* Record the KV tokens held and to prefill as the step starts (after make_room). */
static void update_peak(srv_sched *s) {
    int now = s->kv_held + pending_prefill(s);
    pthread_mutex_lock(&s->m->mu);
    if (now > s->m->kv_peak) s->m->kv_peak = now;
    s->m->slots_used = s->n_owned;
    pthread_mutex_unlock(&s->m->mu);
}

/* End the jobs older than the deadline (lock held): waiting ones are cancelled (their
 * answer says why), running ones finish with what they have (finish_reason length). */
static void apply_deadline(srv_sched *s) {
    double now = srv_now();
    for (srv_job *j = s->queue; j; j = j->next)
        if (!j->cancelled && now - j->t_submit > s->cfg.deadline_s) {
            j->cancelled = j->deadline_hit = 1;
            snprintf(j->error, sizeof j->error,
                     "the request did not start within the server's deadline of %g s "
                     "(--deadline)", s->cfg.deadline_s);
            count_metric(s, &s->m->deadline_expired, 1);
        }
    for (srv_job *j = s->running; j; j = j->next)
        if (!j->deadline_hit && now - j->t_submit > s->cfg.deadline_s) {
            j->deadline_hit = 1;
            for (int i = 0; i < j->n_choices; i++)
                finish_choice(&j->choices[i], SRV_FINISH_LENGTH);
            bump(j);
            count_metric(s, &s->m->deadline_expired, 1);
        }
}

/* ----------------------------------------------------------- embeddings ---- */

typedef struct embed_task {
    const int32_t *const *ids;
    const int *n;
    int n_inputs;
    srv_pooling pooling;
    float *out;
    int done;
    facet_status st;
    facet_error err;
    struct embed_task *next;
} embed_task;

/* Tokens one forward call of the embeddings feeds at most (bounds the rows of hidden
 * states held at once). */
#define SRV_EMBED_TOKENS 1024

/* Embed inputs [g0, g0 + gn) of t as sequences 0..gn-1 of the embeddings' session, fed
 * together SRV_EMBED_TOKENS tokens at a time; pooled in double, then L2-normalised. */
static facet_status embed_group(srv_sched *s, embed_task *t, int g0, int gn,
                                facet_error *err) {
    int H = s->n_embd, cap = SRV_EMBED_TOKENS;
    int32_t *tok = malloc((size_t)cap * sizeof *tok), *seq = malloc((size_t)cap * sizeof *seq);
    uint8_t *want = malloc((size_t)cap);
    float *hid = malloc((size_t)cap * (size_t)H * sizeof *hid);
    double *acc = calloc((size_t)gn * (size_t)H, sizeof *acc);
    int fed[SRV_EMBED_SEQS] = {0};
    facet_status st = FACET_OK;
    if (!tok || !seq || !want || !hid || !acc) {
        st = facet_err(err, FACET_E_NOMEM, "embeddings of %d inputs", gn);
        goto done;
    }
    for (int q = 0; q < gn && st == FACET_OK; q++) st = facet_seq_reset(s->esess, q, err);
    for (;;) {
        int k = 0;
        for (int q = 0; q < gn && k < cap; q++) {
            int n = t->n[g0 + q];
            for (; fed[q] < n && k < cap; fed[q]++, k++) {
                int p = fed[q];
                tok[k] = t->ids[g0 + q][p];
                seq[k] = q;
                want[k] = t->pooling == SRV_POOL_MEAN ||
                          (t->pooling == SRV_POOL_LAST && p == n - 1) ||
                          (t->pooling == SRV_POOL_CLS && p == 0);
            }
        }
        if (k == 0 || st != FACET_OK) break;
        facet_batch b = {k, tok, seq, want};
        st = facet_forward_hidden(s->esess, &b, hid, err);
        const float *row = hid;
        for (int i = 0; i < k && st == FACET_OK; i++) {
            if (!want[i]) continue;
            double *a = acc + (size_t)seq[i] * (size_t)H;
            for (int h = 0; h < H; h++) a[h] += row[h];
            row += H;
        }
    }
    for (int q = 0; q < gn; q++) facet_seq_release(s->esess, q, NULL); /* memory back */
    if (st != FACET_OK) goto done;
    for (int q = 0; q < gn; q++) {
        double *a = acc + (size_t)q * (size_t)H, norm = 0;
        int m = t->pooling == SRV_POOL_MEAN ? t->n[g0 + q] : 1;
        for (int h = 0; h < H; h++) norm += (a[h] / m) * (a[h] / m);
        norm = sqrt(norm);
        float *out = t->out + (size_t)(g0 + q) * (size_t)H;
        for (int h = 0; h < H; h++) out[h] = (float)(norm > 0 ? a[h] / m / norm : 0);
    }
done:
    free(tok);
    free(seq);
    free(want);
    free(hid);
    free(acc);
    return st;
}

/* Run the waiting embedding tasks (lock held on entry and exit; released while they
 * run). */
static void run_embeds(srv_sched *s) {
    embed_task *list = s->embeds;
    s->embeds = NULL;
    pthread_mutex_unlock(&s->mu);
    for (embed_task *t = list; t; t = t->next) {
        t->st = FACET_OK;
        if (!s->esess) {
            facet_session_options so = {SRV_EMBED_SEQS, s->n_ctx, s->kv_type};
            t->st = facet_session_create(s->model, &so, &s->esess, &t->err);
        }
        for (int g0 = 0; g0 < t->n_inputs && t->st == FACET_OK; g0 += SRV_EMBED_SEQS)
            t->st = embed_group(s, t, g0,
                                t->n_inputs - g0 < SRV_EMBED_SEQS ? t->n_inputs - g0
                                                                  : SRV_EMBED_SEQS,
                                &t->err);
    }
    pthread_mutex_lock(&s->mu);
    for (embed_task *t = list; t; t = t->next) t->done = 1;
    pthread_cond_broadcast(&s->embed_cv);
}

facet_status srv_sched_embed(srv_sched *s, const int32_t *const *ids, const int *n,
                             int n_inputs, srv_pooling pooling, float *out, facet_error *err) {
    embed_task t = {ids, n, n_inputs, pooling, out, 0, FACET_OK, {0}, NULL};
    pthread_mutex_lock(&s->mu);
    if (s->stop) {
        pthread_mutex_unlock(&s->mu);
        return facet_err(err, FACET_E_INTERNAL, "the server is stopping");
    }
    embed_task **tail = &s->embeds;
    while (*tail) tail = &(*tail)->next;
    *tail = &t;
    pthread_cond_signal(&s->work);
    while (!t.done) pthread_cond_wait(&s->embed_cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    if (t.st != FACET_OK && err) *err = t.err;
    return t.st;
}

static void *engine_main(void *arg) {
    srv_sched *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (s->cfg.deadline_s > 0) apply_deadline(s);
        /* cancelled (and deadline-ended) running jobs leave before the step */
        for (srv_job *j = s->running, *next; j; j = next) {
            next = j->next;
            if (j->cancelled || s->stop || job_all_finished(j)) retire(s, j);
        }
        admit(s);
        if (s->embeds) { /* between steps, on their own session */
            run_embeds(s);
            continue;
        }
        if (s->stop && !s->running && !s->queue) break;
        if (!s->running) {
            /* idle (jobs may have left by cancellation, before any step saw it) */
            pthread_mutex_lock(&s->m->mu);
            s->m->batch_running = 0;
            pthread_mutex_unlock(&s->m->mu);
            update_metrics(s);
            pthread_cond_wait(&s->work, &s->mu);
            continue;
        }
        make_room(s);
        update_peak(s);
        int n_decode;
        int n = build_batch(s, &n_decode);
        if (n == 0) { /* nothing to feed (cannot last: every running choice has a slot) */
            struct timespec ts = deadline_in(10);
            pthread_cond_timedwait(&s->work, &s->mu, &ts);
            continue;
        }
        int n_prefill = n - n_decode;
        pthread_mutex_unlock(&s->mu);
        /* unlocked: the running list and the batch's jobs change only on this thread
         * (retire, admit), and each job's engine reference keeps it alive */
        facet_batch b = {n, s->b_tok, s->b_seq, s->b_want};
        facet_error e;
        facet_status st = facet_forward(s->session, &b, s->logits, &e);
        double now = srv_now();
        int n_rows = 0, n_logits = 0;
        if (st == FACET_OK)
            for (int i = 0; i < n; i++) {
                if (!s->b_want[i]) continue;
                const float *row = s->logits + (size_t)n_logits++ * (size_t)s->n_vocab;
                if (s->b_plp[i] > 0) {
                    prompt_logprob(s, s->b_job[i], s->b_plp[i], row);
                    continue; /* a prompt position: no generator step */
                }
                step_row *r = &s->rows[n_rows];
                r->c = s->b_choice[i];
                r->j = s->b_job[i];
                step_choice(s, r, row);
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
        pthread_mutex_unlock(&s->m->mu);
        update_metrics(s);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ------------------------------------------------------------ lifecycle ---- */

/* Free the scheduler's buffers and the struct itself. */
static void free_buffers(srv_sched *s) {
    if (s->slots)
        for (int k = 0; k < s->cfg.n_slots; k++) facet_vec_free(&s->slots[k].toks);
    free(s->slots);
    free(s->b_tok);
    free(s->b_seq);
    free(s->b_want);
    free(s->b_plp);
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
    if (s->cfg.n_slots < cfg->max_batch) s->cfg.n_slots = cfg->max_batch;
    s->cap_entries = cfg->max_batch + (cfg->chunk > 16 ? cfg->chunk : 16);
    size_t ne = (size_t)s->cap_entries;
    s->slots = calloc((size_t)s->cfg.n_slots, sizeof *s->slots);
    s->b_tok = malloc(ne * sizeof *s->b_tok);
    s->b_seq = malloc(ne * sizeof *s->b_seq);
    s->b_want = malloc(ne);
    s->b_plp = malloc(ne * sizeof *s->b_plp);
    s->b_choice = malloc(ne * sizeof *s->b_choice);
    s->b_job = malloc(ne * sizeof *s->b_job);
    s->logits = malloc((size_t)(cfg->max_batch + SRV_PLP_ROWS) * (size_t)s->n_vocab *
                       sizeof *s->logits);
    s->rows = malloc((size_t)cfg->max_batch * sizeof *s->rows);
    if (!s->slots || !s->b_tok || !s->b_seq || !s->b_want || !s->b_plp || !s->b_choice ||
        !s->b_job ||
        !s->logits || !s->rows) {
        free_buffers(s);
        return facet_err(err, FACET_E_NOMEM, "scheduler buffers for %d sequences", cfg->max_batch);
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->gv_mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->embed_cv, NULL);
    s->n_embd = info.hidden_size;
    pthread_mutex_lock(&metrics->mu);
    metrics->kv_budget = cfg->kv_budget;
    metrics->slots_total = cfg->max_batch;
    pthread_mutex_unlock(&metrics->mu);
    if (pthread_create(&s->thread, NULL, engine_main, s)) {
        pthread_mutex_destroy(&s->mu);
        pthread_mutex_destroy(&s->gv_mu);
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
    pthread_mutex_destroy(&s->gv_mu);
    pthread_cond_destroy(&s->work);
    facet_grammar_vocab_free(s->gvocab);
    pthread_cond_destroy(&s->embed_cv);
    facet_session_free(s->esess);
    free_buffers(s);
}
