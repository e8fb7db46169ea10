/*
 * sched.h — the continuous-batching scheduler of `facet serve`.
 *
 * One engine thread owns the facet_session. Each step it builds one facet_batch: one
 * decode entry for every running sequence, then chunks of waiting prompts (prefill) up
 * to a per-step token budget, so a long prompt delays running streams by at most one
 * chunk. Requests join and leave between steps. Admission control: a request needs n
 * free sequence slots and n * (prompt + max_tokens) tokens of the KV budget; until both
 * are free it waits in a bounded FIFO queue; when the queue is full, submission fails
 * (the HTTP layer answers 503 with Retry-After). A cancelled job (client gone) leaves
 * the batch at the next step and its slots and KV reservation return to the pool.
 *
 * Locking: one mutex (sched->mu) guards every field marked [mu] below; the engine
 * thread alone touches the per-choice sampler, detokenizer and stop matcher.
 */
#ifndef FACET_SERVER_SCHED_H
#define FACET_SERVER_SCHED_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "facet.h"
#include "facet_sampler.h"
#include "server/metrics.h"

typedef enum srv_finish {
    SRV_RUNNING = 0,
    SRV_FINISH_STOP = 1,   /* eos token or a stop string                                */
    SRV_FINISH_LENGTH = 2, /* max_tokens or the context                                  */
    SRV_FINISH_CANCEL = 3, /* client gone or server shutting down                       */
    SRV_FINISH_ERROR = 4,  /* the engine failed (job->error says why)                   */
} srv_finish;

/* One generated sequence (one of a request's n choices). */
typedef struct srv_choice {
    int slot;                   /* sequence id in the session, -1 when none            */
    int n_prefilled;            /* prompt tokens already in the KV cache                */
    int32_t last;               /* the token to feed next (decode phase)                */
    facet_sampler *sampler;     /* engine thread only                                   */
    facet_detok_stream *detok;  /* engine thread only                                   */
    facet_stop_matcher *stop;   /* engine thread only                                   */
    /* [mu] outputs */
    int32_t *ids;               /* generated ids                                        */
    double *logprob;            /* [n_ids] log-probability of each chosen id (raw)      */
    int32_t *top_ids;           /* [n_ids][top_n]                                       */
    double *top_lp;             /* [n_ids][top_n]                                       */
    int n_ids, cap_ids;
    char *raw;                  /* detokenized text of all ids (before stop strings)    */
    size_t raw_len, raw_cap;
    size_t *raw_end;            /* [n_ids] raw_len after each id (token text spans)     */
    char *text;                 /* released text (stop strings removed), NUL-terminated */
    size_t len, cap;
    srv_finish finish;
    double t_last;              /* time of the last token (inter-token latency)         */
} srv_choice;

/* One request. Created by the HTTP thread, shared with the engine thread. */
typedef struct srv_job {
    int refs;                   /* [mu] HTTP thread + engine thread                      */
    int32_t *prompt;            /* owned prompt ids                                      */
    int n_prompt;
    int max_tokens;             /* >= 1, prompt + max_tokens <= n_ctx                    */
    int top_n;                  /* top log-probabilities per token (0 = none)           */
    int want_logprobs;
    facet_sampler_params sampling;  /* seed of choice i = seed + i                       */
    facet_logit_bias *bias;     /* owned copy behind sampling.logit_bias                 */
    char **stops;               /* owned                                                 */
    int n_stops;
    int n_choices;
    srv_choice *choices;
    /* [mu] state */
    int queued, running, done;  /* done: every choice finished                           */
    int cancelled;
    int kv_need;                /* tokens reserved in the KV budget while running        */
    unsigned long version;      /* bumped on every change of the outputs                 */
    char error[512];            /* SRV_FINISH_ERROR detail                                */
    double t_submit, t_first;   /* seconds (monotonic)                                   */
    pthread_cond_t cond;        /* signalled with version bumps                          */
    struct srv_job *next;       /* queue / running list link                             */
} srv_job;

typedef struct srv_sched_config {
    int max_batch;              /* sequence slots (session n_seq_max)                    */
    int kv_budget;              /* tokens all running sequences may reserve              */
    int max_queue;              /* waiting jobs before submissions fail                  */
    int chunk;                  /* tokens per step (decode entries + prefill chunks)     */
} srv_sched_config;

typedef struct srv_sched srv_sched;

/* Create the scheduler over `session` (borrowed) and start its engine thread. */
facet_status srv_sched_create(facet_model *model, facet_session *session,
                              const srv_sched_config *cfg, srv_metrics *metrics,
                              srv_sched **out, facet_error *err);

/* Nonzero when no job is running or waiting. */
int srv_sched_idle(srv_sched *s);

/* Refuse new submissions, cancel every job (waiters wake with the jobs done), stop and
 * join the engine thread. Idempotent. Jobs stay valid until their last srv_job_release,
 * which must happen before srv_sched_free. */
void srv_sched_stop(srv_sched *s);

/* srv_sched_stop, then free the scheduler. */
void srv_sched_free(srv_sched *s);

/* Build a job (one reference, the caller's). Copies everything it needs. */
facet_status srv_job_create(srv_sched *s, const int32_t *prompt, int n_prompt, int max_tokens,
                            int n_choices, const facet_sampler_params *sampling,
                            char *const *stops, int n_stops, int want_logprobs, int top_n,
                            srv_job **out, facet_error *err);

/* Queue a job. Returns 0, or -1 when the queue is full or the server is stopping
 * (the job is untouched; release it). The scheduler takes its own reference. */
int srv_sched_submit(srv_sched *s, srv_job *job);

/* Cancel a job (client gone). Idempotent. Returns 1 when this call cancelled it (and
 * counted it in facet_requests_cancelled_total), 0 when it was already done or
 * cancelled. */
int srv_sched_cancel(srv_sched *s, srv_job *job);

/* Drop the caller's reference. */
void srv_job_release(srv_sched *s, srv_job *job);

/* Wait until job->version differs from `seen` or the job is done, at most timeout_ms.
 * Returns the current version. Call with the lock held (srv_sched_lock). */
unsigned long srv_job_wait(srv_sched *s, srv_job *job, unsigned long seen, int timeout_ms);

/* Wait until the job is done, at most timeout_ms (lock held, as srv_job_wait). */
void srv_job_wait_done(srv_sched *s, srv_job *job, int timeout_ms);

void srv_sched_lock(srv_sched *s);
void srv_sched_unlock(srv_sched *s);

/* Monotonic seconds. */
double srv_now(void);

#endif
