/* test_kernels_threadpool.c — the pool's spin-then-sleep hand-off: every task of every
 * run executes exactly once, runs never overlap, and the pool survives long idle gaps
 * (workers asleep) and back-to-back runs (workers spinning), also when the tasks are
 * handed out in per-thread shares (each share's tasks in ascending order per thread);
 * the scratch buffer grows and keeps its contents' alignment. Counts are checked exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "kernels/cpu/threadpool.h"

typedef struct {
    atomic_int hits[64];
    atomic_int in_run; /* tasks of this run still executing */
    int run;
    int *last_run;     /* [64] run index that last touched the task slot */
    atomic_int overlap;
} job;

static void task(void *ctx, int t, int thread) {
    job *j = ctx;
    (void)thread;
    atomic_fetch_add(&j->in_run, 1);
    atomic_fetch_add(&j->hits[t], 1);
    if (j->last_run[t] != j->run - 1) atomic_fetch_add(&j->overlap, 1);
    j->last_run[t] = j->run;
    atomic_fetch_sub(&j->in_run, 1);
}

static void test_every_task_once(void **state) {
    (void)state;
    for (int threads = 1; threads <= 3; threads++) {
        facet_pool *p = facet_pool_create(threads);
        assert_non_null(p);
        assert_int_equal(facet_pool_size(p), threads);
        job j;
        memset(&j, 0, sizeof j);
        int last[64];
        for (int i = 0; i < 64; i++) last[i] = -1;
        j.last_run = last;
        int runs = 8000, n = 37;
        for (int r = 0; r < runs; r++) {
            j.run = r;
            if (r % 2000 == 1999) { /* let the workers fall asleep */
                struct timespec ts = {0, 5 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
            facet_pool_run(p, n, task, &j);
            assert_int_equal(atomic_load(&j.in_run), 0); /* all done when run returns */
        }
        for (int t = 0; t < n; t++) assert_int_equal(atomic_load(&j.hits[t]), runs);
        for (int t = n; t < 64; t++) assert_int_equal(atomic_load(&j.hits[t]), 0);
        assert_int_equal(atomic_load(&j.overlap), 0);
        facet_pool_free(p);
    }
}

/* facet_pool_run_shares: every task once per run, runs never overlap (with sleeps and
 * back-to-back runs), and each thread runs the tasks of any one share in ascending order,
 * starting with its own share's first task unless another thread took it first. */
typedef struct {
    job base;
    int n, threads;
    atomic_int seq;
    int order[64], by[64];
} share_job;

static void share_task(void *ctx, int t, int thread) {
    share_job *j = ctx;
    task(&j->base, t, thread);
    j->order[t] = atomic_fetch_add(&j->seq, 1);
    j->by[t] = thread;
}

static void test_shares_every_task_once(void **state) {
    (void)state;
    for (int threads = 1; threads <= 3; threads++) {
        facet_pool *p = facet_pool_create(threads);
        assert_non_null(p);
        static share_job j;
        memset(&j, 0, sizeof j);
        int last[64];
        for (int i = 0; i < 64; i++) last[i] = -1;
        j.base.last_run = last;
        int runs = 6000, ns[] = {1, 2, 3, 7, 37, 64};
        for (int r = 0; r < runs; r++) {
            int n = ns[r % 6];
            j.base.run = r;
            if (r % 2000 == 1999) {
                struct timespec ts = {0, 5 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
            for (int t = 0; t < 64; t++) last[t] = r - 1; /* only the run's own tasks count */
            atomic_store(&j.seq, 0);
            facet_pool_run_shares(p, n, share_task, &j);
            assert_int_equal(atomic_load(&j.base.in_run), 0);
            /* within a share, one thread's tasks run in ascending order */
            for (int s = 0; s < threads; s++) {
                int lo = (int)((long)n * s / threads), hi = (int)((long)n * (s + 1) / threads);
                for (int a = lo; a < hi; a++)
                    for (int b = a + 1; b < hi; b++)
                        if (j.by[a] == j.by[b]) assert_true(j.order[a] < j.order[b]);
            }
        }
        int want[64] = {0};
        for (int r = 0; r < runs; r++)
            for (int t = 0; t < ns[r % 6]; t++) want[t]++;
        for (int t = 0; t < 64; t++) assert_int_equal(atomic_load(&j.base.hits[t]), want[t]);
        assert_int_equal(atomic_load(&j.base.overlap), 0);
        facet_pool_free(p);
    }
}

static void test_scratch_grows(void **state) {
    (void)state;
    facet_pool *p = facet_pool_create(2);
    uint8_t *a = facet_pool_scratch(p, 100);
    assert_non_null(a);
    assert_int_equal((uintptr_t)a % 64, 0);
    memset(a, 1, 100);
    assert_ptr_equal(facet_pool_scratch(p, 50), a); /* smaller: the same buffer */
    uint8_t *b = facet_pool_scratch(p, 1 << 20);
    assert_non_null(b);
    assert_int_equal((uintptr_t)b % 64, 0);
    memset(b, 2, 1 << 20);
    facet_pool_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_task_once),
        cmocka_unit_test(test_shares_every_task_once),
        cmocka_unit_test(test_scratch_grows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
