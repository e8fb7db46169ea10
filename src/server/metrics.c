/* metrics.c — Prometheus text rendering of srv_metrics (see metrics.h). */
#include "server/metrics.h"

#include <stdlib.h>
#include <string.h>

#include "util/str.h"

static const double time_bounds[SRV_HIST_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                     0.1,   0.25,   0.5,   1,    2.5,   5,
                                                     10,    30};
static const double batch_bounds[SRV_HIST_BUCKETS] = {1,  2,  3,  4,   6,   8,   12,
                                                      16, 24, 32, 48,  64,  128, 256};

void srv_metrics_init(srv_metrics *m) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    m->ttft.bounds = time_bounds;
    m->itl.bounds = time_bounds;
    m->e2e.bounds = time_bounds;
    m->batch.bounds = batch_bounds;
}

void srv_metrics_destroy(srv_metrics *m) { pthread_mutex_destroy(&m->mu); }

void srv_hist_observe(srv_hist *h, double v) {
    int i = 0;
    while (i < SRV_HIST_BUCKETS && v > h->bounds[i]) i++;
    h->counts[i]++;
    h->sum += v;
    h->count++;
}

static void counter(facet_str *b, const char *name, const char *help, uint64_t v) {
    facet_str_appendf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
        (unsigned long long)v);
}

static void gauge(facet_str *b, const char *name, const char *help, double v) {
    facet_str_appendf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name, help, name, name, v);
}

static void hist(facet_str *b, const char *name, const char *help, const srv_hist *h) {
    facet_str_appendf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int i = 0; i < SRV_HIST_BUCKETS; i++) {
        cum += h->counts[i];
        facet_str_appendf(b, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i], (unsigned long long)cum);
    }
    cum += h->counts[SRV_HIST_BUCKETS];
    facet_str_appendf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.17g\n%s_count %llu\n", name,
        (unsigned long long)cum, name, h->sum, name, (unsigned long long)h->count);
}

char *srv_metrics_render(srv_metrics *m) {
    facet_str b = {0};
    pthread_mutex_lock(&m->mu);
    counter(&b, "facet_requests_total", "HTTP requests answered.", m->requests_total);
    counter(&b, "facet_requests_failed_total",
            "HTTP requests answered with status >= 400 (a client gone is cancelled instead).",
            m->requests_error);
    counter(&b, "facet_requests_rejected_total", "Requests refused with 503 (queue full).",
            m->requests_rejected);
    counter(&b, "facet_requests_cancelled_total",
            "Requests whose client went away, streamed or not.",
            m->requests_cancelled);
    counter(&b, "facet_prompt_tokens_total", "Prompt tokens prefilled.", m->prompt_tokens);
    counter(&b, "facet_generation_tokens_total", "Tokens generated.", m->generation_tokens);
    counter(&b, "facet_engine_steps_total", "Engine steps (forward passes).", m->steps);
    gauge(&b, "facet_batch_size_running", "Sequences decoded in the latest step.",
          m->batch_running);
    gauge(&b, "facet_batch_size_max", "Largest number of sequences decoded in one step.",
          m->batch_max);
    gauge(&b, "facet_queue_length", "Requests waiting for admission.", m->queue_length);
    gauge(&b, "facet_kv_cache_tokens_used",
          "KV-cache tokens of running requests (held, and prompt still to prefill).",
          m->kv_used);
    gauge(&b, "facet_kv_cache_tokens_cached", "KV-cache tokens kept as cached prefixes.",
          m->kv_cached);
    gauge(&b, "facet_kv_cache_tokens_peak",
          "Most KV-cache tokens held and still to prefill at once (never above the budget).",
          m->kv_peak);
    counter(&b, "facet_prefix_cache_hits_total",
            "Admitted requests that started from a cached prefix.", m->prefix_hits);
    counter(&b, "facet_prefix_cache_hit_tokens_total",
            "Tokens taken from the prefix cache instead of prefilled.", m->prefix_hit_tokens);
    counter(&b, "facet_prefix_cache_query_tokens_total",
            "Tokens admitted sequences needed in their KV cache (hit rate denominator).",
            m->prefix_query_tokens);
    counter(&b, "facet_prefix_cache_copies_total",
            "Prefixes copied from running sequences (a request sharing a running one's).",
            m->prefix_copies);
    counter(&b, "facet_prefix_cache_evictions_total",
            "Cached prefixes evicted (least recently used first) for room.",
            m->prefix_evictions);
    counter(&b, "facet_preemptions_total",
            "Running requests returned to the queue when the KV budget ran out.",
            m->preemptions);
    counter(&b, "facet_admission_waits_total",
            "Requests that waited for a sequence slot or KV room.", m->admission_waits);
    counter(&b, "facet_requests_deadline_total", "Requests ended by --deadline.",
            m->deadline_expired);
    gauge(&b, "facet_kv_cache_tokens_budget", "KV-cache token budget.", m->kv_budget);
    gauge(&b, "facet_kv_cache_usage_ratio", "KV-cache tokens of running requests / budget.",
          m->kv_budget ? (double)m->kv_used / m->kv_budget : 0.0);
    gauge(&b, "facet_sequence_slots_used", "Sequence slots in use.", m->slots_used);
    gauge(&b, "facet_sequence_slots_total", "Sequence slots (--max-batch).", m->slots_total);
    hist(&b, "facet_time_to_first_token_seconds", "Arrival to first generated token.",
         &m->ttft);
    hist(&b, "facet_inter_token_latency_seconds", "Time between tokens of one sequence.",
         &m->itl);
    hist(&b, "facet_request_duration_seconds", "Arrival to last generated token.", &m->e2e);
    hist(&b, "facet_batch_size", "Sequences decoded per engine step.", &m->batch);
    pthread_mutex_unlock(&m->mu);
    return facet_str_take(&b); /* NULL when an append failed */
}
