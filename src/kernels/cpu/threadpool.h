/*
 * threadpool.h — a fixed pool of worker threads for data-parallel kernels.
 *
 * Workers are created once (facet_pool_create) and reused for every call; a call
 * hands out task indices [0, n_tasks) to the caller thread and the workers and returns
 * when all are done. No allocation and no thread creation per call.
 */
#ifndef FACET_KERNELS_THREADPOOL_H
#define FACET_KERNELS_THREADPOOL_H

typedef struct facet_pool facet_pool;

/* fn(ctx, task, thread): run task `task`; `thread` in [0, n_threads) names the thread
 * running it (for per-thread scratch). */
typedef void (*facet_pool_fn)(void *ctx, int task, int thread);

/* Create a pool of n_threads (including the calling thread; n_threads - 1 workers).
 * n_threads <= 0 means the number of online CPUs. Returns NULL on allocation or thread
 * creation failure. */
facet_pool *facet_pool_create(int n_threads);

/* Stop and join the workers, free the pool. NULL is accepted. */
void facet_pool_free(facet_pool *pool);

/* Threads of the pool (workers + caller). */
int facet_pool_size(const facet_pool *pool);

/* Run fn for every task in [0, n_tasks), spread over the pool's threads; returns when
 * all tasks are finished. Tasks are claimed dynamically (atomic counter). Not
 * reentrant: one run at a time per pool. */
void facet_pool_run(facet_pool *pool, int n_tasks, facet_pool_fn fn, void *ctx);

/* As facet_pool_run (every task runs once; returns when all are finished), but the
 * tasks are cut into one contiguous share per thread, in order: each thread first takes
 * the tasks of its own share in ascending order, then helps finish the others' (from
 * the next thread's share on). For tasks that stream memory in task order (the weight
 * panels of a matmul): each thread reads one contiguous region instead of the threads
 * taking turns along one; a decode step's matmuls streamed ~8% faster so when this
 * machine's memory was in its fast state (bench/RESULTS-perf.md section 8). Tasks must
 * not depend on which thread runs them or in what order. */
void facet_pool_run_shares(facet_pool *pool, int n_tasks, facet_pool_fn fn, void *ctx);

/* A buffer of at least `bytes` bytes (64-byte aligned) owned by the pool and reused by
 * every call: grown when a larger one is asked for, freed by facet_pool_free. For the
 * thread that calls facet_pool_run (kernels prepare their inputs in it before a run);
 * valid until the next facet_pool_scratch call. NULL on allocation failure. */
#include <stddef.h>
void *facet_pool_scratch(facet_pool *pool, size_t bytes);

#endif
