/*
 * sched.h — the continuous-batching scheduler of `facet serve`.
 *
 * One engine thread owns the facet_session. Each step it builds one facet_batch: one
 * decode entry for every running sequence, then chunks of waiting prompts (prefill) up
 * to a per-step token budget, so a long prompt delays running streams by at most one
 * chunk. Requests join and leave between steps. A cancelled job (client gone) leaves
 * the batch at the next step.
 *
 * KV admitted by use. The budget counts the KV tokens the session holds: those of
 * running sequences (which grow by one per generated token), the prompt tokens admitted
 * jobs have still to prefill, and the cached prefixes below. A waiting job is admitted
 * (FIFO) when max_batch leaves room for its n sequences and the budget for its prompt
 * (less what the prefix cache supplies) plus one step's growth of every running
 * sequence, after evicting cached prefixes least recently used first; it is not held
 * to prompt + max_tokens. When a step's growth would pass the budget, cached prefixes
 * are evicted first, then the newest running job is preempted (vLLM's recompute
 * policy): its KV is freed and it returns to the head of the queue with the tokens it
 * generated; readmitted, it prefills prompt + those tokens again and continues, its
 * output unchanged. The HTTP layer refuses a job whose n x (prompt + max_tokens) alone
 * exceeds the budget, so the oldest job can always run to its end. When the queue is
 * full, submission fails (503 with Retry-After).
 *
 * Prefix cache (cfg.prefix_cache). The session has 2 x max_batch sequences; at most
 * max_batch run, the others keep the KV of finished (or cancelled) sequences with the
 * tokens it holds. A new sequence takes the free sequence whose tokens share the
 * longest prefix with its own (at most all but the prompt's last token, whose logits
 * it needs), cuts it to that prefix (facet_seq_truncate) and prefills only the rest.
 * When a running sequence shares a longer prefix (by more than FACET_SRV_COPY_MIN
 * tokens), that prefix is copied into a free sequence instead (facet_seq_copy): requests
 * that arrive together with one system prompt prefill it once.
 * The match compares token ids, so a reused prefix is the same tokens at the same
 * positions and the KV rows are those a fresh prefill computes (the engine's forward
 * pass does not depend on how a sequence was chunked): outputs never change.
 * Cached prefixes count in the budget and are evicted least recently used first. A
 * sequence counts by the most tokens it held since its memory was last freed (a cut
 * keeps the memory); resident bytes may pass the count by the cache's growth rounding
 * (capacity doubles from 64 positions, kv_cache.h).
 *
 * Locking: one mutex (sched->mu) guards every field marked [mu] below, and is held only
 * for scheduling and for copying results: the engine thread runs the forward pass and
 * each choice's generator step (sampling, detokenizing, stop strings, log-probabilities)
 * without it, then takes it to append the step's results to the choices' outputs. The
 * HTTP threads copy a job's outputs under it (srv_output_sync) and build their JSON
 * after releasing it.
 */
#ifndef FACET_SERVER_SCHED_H
#define FACET_SERVER_SCHED_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "facet.h"
#include "facet_generate.h"
#include "server/metrics.h"
#include "util/str.h"
#include "util/vec.h"

typedef enum srv_finish {
    SRV_RUNNING = 0,
    SRV_FINISH_STOP = 1,   /* eos token or a stop string                                */
    SRV_FINISH_LENGTH = 2, /* max_tokens or the context                                  */
    SRV_FINISH_CANCEL = 3, /* client gone or server shutting down                       */
    SRV_FINISH_ERROR = 4,  /* the engine failed (job->error says why)                   */
} srv_finish;

/* What one choice has produced so far: appended by the engine thread, read by the HTTP
 * threads (under sched->mu, or after the job is done). Token i's text is
 * raw.data[raw_end[i-1] .. raw_end[i]) (from 0 for i = 0). */
typedef struct srv_output {
    FACET_VEC(int32_t) ids;     /* generated ids                                          */
    FACET_VEC(double) logprob;  /* [ids.len] log-probability of each chosen id (raw)      */
    FACET_VEC(int32_t) top_ids; /* [ids.len][top_n] (-1: fewer alternatives)              */
    FACET_VEC(double) top_lp;   /* [ids.len][top_n]                                       */
    FACET_VEC(size_t) raw_end;  /* [ids.len] raw.len after each id                       */
    facet_str raw;              /* detokenized text of all ids (before stop strings)      */
    facet_str text;             /* released text (stop strings removed)                   */
    srv_finish finish;
} srv_output;

/* Append to dst what src has beyond dst (dst a copy of an earlier state of src: outputs
 * only grow) and copy the finish. Returns 0, or -1 out of memory (then dst may hold
 * some arrays longer than others; free it). */
int srv_output_sync(srv_output *dst, const srv_output *src);

/* Free an output's buffers and reset it to empty. */
void srv_output_free(srv_output *o);

/* One generated sequence (one of a request's n choices). */
typedef struct srv_choice {
    int slot;                   /* sequence id in the session, -1 when none            */
    int n_fed;                  /* tokens in the slot's KV cache: prompt, then generated */
    int32_t last;               /* the token to feed next (decode phase)                */
    facet_generator *gen;       /* engine thread only (after submission)                */
    double t_last;              /* engine thread: time of the last token (latency)      */
    srv_output out;             /* [mu]                                                 */
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
    struct facet_grammar *grammar; /* owned (srv_job_constrain); NULL = unconstrained   */
    /* prompt log-probabilities (srv_job_want_prompt_logprobs): p_lp[t] = log p(prompt[t] |
     * prompt[<t]) for t in [plp_from, n_prompt), top_n alternatives each in p_top_ids /
     * p_top_lp ([n_prompt][top_n], -1: fewer); written by the engine thread while it
     * prefills choice 0, readable once the job is done */
    int plp_from;               /* 0: none asked                                         */
    double *p_lp;
    int32_t *p_top_ids;
    double *p_top_lp;
    /* [mu] state */
    int queued, running, done;  /* done: every choice finished                           */
    int cancelled;
    int deadline_hit;           /* cancelled by the config's deadline                    */
    int preempted;              /* times preempted back to the queue                     */
    int waited;                 /* found at the queue's head without room (counted once) */
    int n_cached;               /* prompt tokens choice 0 took from the prefix cache     */
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
    int n_slots;                /* the session's sequences (n_seq_max): max_batch, or
                                   2 x max_batch with the prefix cache                   */
    int prefix_cache;           /* keep finished sequences' KV for reuse                 */
    double deadline_s;          /* a job still unfinished this long after submission is
                                   ended (0 = none): waiting, cancelled (deadline_hit);
                                   running, finished as by length                       */
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

/* Constrain every choice of a job not yet submitted to grammar g (taking ownership of
 * g, also on error): each choice's generator is made again with g and the scheduler's
 * vocabulary trie (built once, on the first constrained job, under the scheduler's
 * lock). Errors: FACET_E_INVALID_ARGUMENT (the model has no tokenizer), FACET_E_NOMEM,
 * the tokenizer's. */
struct facet_grammar;
facet_status srv_job_constrain(srv_sched *s, srv_job *job, struct facet_grammar *g,
                               facet_error *err);

/* Ask for the log-probabilities of prompt tokens [from, n_prompt) (1 <= from < n_prompt),
 * with the job's top_n alternatives each, before submitting the job. The prompt
 * positions from from-1 on are then prefilled by this job (a cached prefix supplies at
 * most from-1 tokens) with logits for each, at most SRV_PLP_ROWS rows per step. Errors:
 * FACET_E_NOMEM. */
#define SRV_PLP_ROWS 32
facet_status srv_job_want_prompt_logprobs(srv_job *job, int from, facet_error *err);

/* Embeddings. Pooling of a sequence's final-norm hidden states (sentence-transformers'
 * pooling modes). */
typedef enum srv_pooling {
    SRV_POOL_LAST = 0, /* the last token's (decoder embedding models: Qwen3-Embedding)  */
    SRV_POOL_MEAN = 1, /* the mean over the tokens                                       */
    SRV_POOL_CLS = 2,  /* the first token's                                              */
} srv_pooling;

/* Embed n_inputs token sequences (ids[i] of n[i] tokens, each 1..n_ctx) and write each
 * pooled, L2-normalised vector (hidden_size floats) to out[i * hidden_size]. Blocks the
 * caller until done: the engine thread runs the inputs between generation steps, up to
 * SRV_EMBED_SEQS of them together in forward calls of at most 1024 tokens, on a session
 * of its own (created on first use; its KV memory, freed after each group, is not
 * counted in the KV budget). Errors:
 * those of facet_forward, FACET_E_NOMEM, FACET_E_INTERNAL (the server is stopping). */
#define SRV_EMBED_SEQS 8
facet_status srv_sched_embed(srv_sched *s, const int32_t *const *ids, const int *n,
                             int n_inputs, srv_pooling pooling, float *out, facet_error *err);

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
