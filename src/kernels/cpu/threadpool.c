/*
 * threadpool.c — persistent pthread workers with a generation counter.
 *
 * A decode step calls the pool a few hundred times (each matmul, each attention), a few
 * tens of microseconds apart: waking a sleeping thread through a condition variable
 * costs about as much as the work. So workers and the caller first spin briefly on the
 * atomic generation / active counters (with the CPU's pause hint) and only then sleep
 * on the condition variables; the mutex still orders every sleep against every wake.
 */
#include "kernels/cpu/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct facet_pool {
    int n_threads;
    pthread_t *workers;
    pthread_mutex_t mu;
    pthread_cond_t start_cv, done_cv;
    atomic_ulong generation;  /* bumped for each run; workers wait for a change      */
    atomic_int stop;
    atomic_int active;        /* workers still inside the current run                 */
    /* the current run */
    facet_pool_fn fn;
    void *ctx;
    int n_tasks;
    atomic_int next_task;
    int shares;               /* the run hands out per-thread shares (run_shares)    */
    struct share *share;      /* [n_threads], one cache line each                     */
    void *scratch;            /* facet_pool_scratch's buffer                          */
    size_t scratch_bytes;
};

/* One thread's share of a facet_pool_run_shares run: tasks [next, end). */
struct share {
    _Alignas(64) atomic_int next;
    int end;
};

typedef struct {
    facet_pool *pool;
    int index;
} worker_arg;

static void run_tasks(facet_pool *p, int thread) {
    if (p->shares) { /* own share first, then the others' rest, from the next thread's on */
        for (int i = 0; i < p->n_threads; i++) {
            struct share *s = &p->share[(thread + i) % p->n_threads];
            for (;;) {
                int t = atomic_fetch_add_explicit(&s->next, 1, memory_order_relaxed);
                if (t >= s->end) break;
                p->fn(p->ctx, t, thread);
            }
        }
        return;
    }
    for (;;) {
        int t = atomic_fetch_add_explicit(&p->next_task, 1, memory_order_relaxed);
        if (t >= p->n_tasks) break;
        p->fn(p->ctx, t, thread);
    }
}

/* Iterations of the spin before sleeping (a pause is tens of cycles: tens of us). */
#define SPIN_ITERS 2000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker_main(void *arg) {
    worker_arg *wa = arg;
    facet_pool *p = wa->pool;
    int index = wa->index;
    free(wa);
    unsigned long seen = 0;
    for (;;) {
        for (int i = 0; i < SPIN_ITERS && atomic_load(&p->generation) == seen && !atomic_load(&p->stop); i++)
            cpu_relax();
        if (atomic_load(&p->generation) == seen && !atomic_load(&p->stop)) {
            pthread_mutex_lock(&p->mu);
            while (!atomic_load(&p->stop) && atomic_load(&p->generation) == seen)
                pthread_cond_wait(&p->start_cv, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = atomic_load(&p->generation);

        run_tasks(p, index);

        if (atomic_fetch_sub(&p->active, 1) == 1) {
            pthread_mutex_lock(&p->mu); /* the caller may be about to sleep: under the lock */
            pthread_cond_signal(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

facet_pool *facet_pool_create(int n_threads) {
    if (n_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (int)n : 1;
    }
    facet_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n_threads = n_threads;
    if (posix_memalign((void **)&p->share, 64, sizeof(struct share) * (size_t)n_threads) != 0) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    atomic_init(&p->next_task, 0);
    atomic_init(&p->generation, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->active, 0);
    if (n_threads > 1) {
        p->workers = calloc((size_t)n_threads - 1, sizeof *p->workers);
        if (!p->workers) {
            facet_pool_free(p);
            return NULL;
        }
    }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa) {
            p->n_threads = i;
            facet_pool_free(p);
            return NULL;
        }
        wa->pool = p;
        wa->index = i;
        if (pthread_create(&p->workers[i - 1], NULL, worker_main, wa) != 0) {
            free(wa);
            p->n_threads = i;
            facet_pool_free(p);
            return NULL;
        }
    }
    return p;
}

void facet_pool_free(facet_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->start_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n_threads; i++) pthread_join(p->workers[i - 1], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->start_cv);
    pthread_cond_destroy(&p->done_cv);
    free(p->workers);
    free(p->scratch);
    free(p->share);
    free(p);
}

int facet_pool_size(const facet_pool *p) { return p->n_threads; }

static void run(facet_pool *p, int n_tasks, facet_pool_fn fn, void *ctx, int shares) {
    if (n_tasks <= 0) return;
    if (p->n_threads == 1 || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++) fn(ctx, t, 0);
        return;
    }
    /* workers read fn/ctx/n_tasks/shares only after they see the new generation (seq_cst) */
    p->fn = fn;
    p->ctx = ctx;
    p->n_tasks = n_tasks;
    p->shares = shares;
    if (shares)
        for (int i = 0; i < p->n_threads; i++) {
            atomic_store_explicit(&p->share[i].next, (int)((long long)n_tasks * i / p->n_threads),
                                  memory_order_relaxed);
            p->share[i].end = (int)((long long)n_tasks * (i + 1) / p->n_threads);
        }
    atomic_store(&p->next_task, 0);
    atomic_store(&p->active, p->n_threads - 1);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->start_cv);
    pthread_mutex_unlock(&p->mu);

    run_tasks(p, 0);

    for (int i = 0; i < SPIN_ITERS && atomic_load(&p->active) > 0; i++) cpu_relax();
    if (atomic_load(&p->active) > 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->active) > 0) pthread_cond_wait(&p->done_cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}

void facet_pool_run(facet_pool *p, int n_tasks, facet_pool_fn fn, void *ctx) {
    run(p, n_tasks, fn, ctx, 0);
}

void facet_pool_run_shares(facet_pool *p, int n_tasks, facet_pool_fn fn, void *ctx) {
    run(p, n_tasks, fn, ctx, 1);
}

void *facet_pool_scratch(facet_pool *p, size_t bytes) {
    if (bytes <= p->scratch_bytes) return p->scratch;
    size_t n = bytes + bytes / 4 + 4096; /* headroom: fewer regrowths */
    void *q = NULL;
    if (posix_memalign(&q, 64, n) != 0) return NULL;
    free(p->scratch);
    p->scratch = q;
    p->scratch_bytes = n;
    return q;
}
