/*
 * metrics.h — counters, gauges and histograms of `facet serve`, rendered in the
 * Prometheus text exposition format (version 0.0.4) for GET /metrics. Thread-safe.
 */
#ifndef FACET_SERVER_METRICS_H
#define FACET_SERVER_METRICS_H

#include <pthread.h>
#include <stdint.h>

#define SRV_HIST_BUCKETS 14

/* A histogram with fixed upper bounds (seconds, or entries for batch sizes). */
typedef struct srv_hist {
    const double *bounds;           /* [SRV_HIST_BUCKETS] ascending; +Inf is implicit   */
    uint64_t counts[SRV_HIST_BUCKETS + 1];
    double sum;
    uint64_t count;
} srv_hist;

typedef struct srv_metrics {
    pthread_mutex_t mu;
    uint64_t requests_total;        /* HTTP requests answered, any status, and requests
                                       whose client went away                          */
    uint64_t requests_error;        /* answered with status >= 400 (not a client gone)  */
    uint64_t requests_rejected;     /* 503: queue full (the HTTP layer counts them)     */
    uint64_t requests_cancelled;    /* client disconnected before the end, streamed or
                                       not (srv_sched_cancel counts them)              */
    uint64_t prompt_tokens;         /* tokens prefilled                                 */
    uint64_t generation_tokens;     /* tokens generated                                 */
    uint64_t steps;                 /* engine steps (facet_forward calls)               */
    int batch_running;              /* sequences in the last step                       */
    int batch_max;                  /* largest batch since start                        */
    int queue_length;
    int kv_used, kv_budget;         /* KV tokens of running requests (held + still to
                                       prefill) / budget                               */
    int kv_cached;                  /* KV tokens of cached prefixes (free sequences)    */
    int kv_peak;                    /* most KV tokens held + to prefill at once          */
    uint64_t prefix_hits;           /* admissions that started from a cached prefix     */
    uint64_t prefix_hit_tokens;     /* tokens taken from the prefix cache               */
    uint64_t prefix_query_tokens;   /* tokens admitted sequences needed in their cache  */
    uint64_t prefix_evictions;      /* cached prefixes evicted for room                 */
    uint64_t prefix_copies;         /* prefixes copied from running sequences           */
    uint64_t preemptions;           /* running requests sent back to the queue          */
    uint64_t admission_waits;       /* requests that waited for sequences or KV room    */
    uint64_t deadline_expired;      /* requests ended by --deadline                     */
    int slots_used, slots_total;
    srv_hist ttft;                  /* seconds from arrival to first token              */
    srv_hist itl;                   /* seconds between tokens of one sequence           */
    srv_hist batch;                 /* decode sequences per step                         */
    srv_hist e2e;                   /* seconds from arrival to the last token           */
} srv_metrics;

void srv_metrics_init(srv_metrics *m);
void srv_metrics_destroy(srv_metrics *m);

/* Add one observation (call with m->mu held). */
void srv_hist_observe(srv_hist *h, double v);

/* Render everything as Prometheus text; malloc'd, NUL-terminated. */
char *srv_metrics_render(srv_metrics *m);

#endif
