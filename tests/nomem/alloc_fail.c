/* alloc_fail.c — the counting allocator of the tests in tests/nomem (alloc_fail.h). */
#include "alloc_fail.h"

#include <errno.h>
#include <execinfo.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);

static atomic_long g_target;     /* 0: disarmed */
static atomic_long g_count;      /* allocations since the arm */
static atomic_long g_failed;     /* failures since the arm */
static atomic_int g_persistent;
static atomic_int g_json;        /* count jansson's allocations */

/* 1 if this allocation is to fail. */
static int fail_now(void) {
    long target = atomic_load(&g_target);
    if (!target) return 0;
    long n = atomic_fetch_add(&g_count, 1) + 1;
    if (n == target || (n > target && atomic_load(&g_persistent))) {
        atomic_fetch_add(&g_failed, 1);
        if (getenv("ALLOC_FAIL_TRACE")) { /* debugging a sweep: where the n-th one is */
            void *frames[16];
            fprintf(stderr, "alloc_fail: allocation %ld fails here:\n", n);
            backtrace_symbols_fd(frames, backtrace(frames, 16), 2);
        }
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }

void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size) { return fail_now() ? NULL : __real_calloc(n, size); }

void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n) { return fail_now() ? NULL : __real_realloc(p, n); }

char *__wrap_strdup(const char *s);
char *__wrap_strdup(const char *s) { return fail_now() ? NULL : __real_strdup(s); }

char *__wrap_strndup(const char *s, size_t n);
char *__wrap_strndup(const char *s, size_t n) { return fail_now() ? NULL : __real_strndup(s, n); }

int __wrap_posix_memalign(void **p, size_t align, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n) {
    return fail_now() ? ENOMEM : __real_posix_memalign(p, align, n);
}

void *__wrap_aligned_alloc(size_t align, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n) {
    return fail_now() ? NULL : __real_aligned_alloc(align, n);
}

/* jansson allocates through its own hooks: point them at the counting malloc. */
static void *json_malloc(size_t n) {
    return atomic_load(&g_json) ? __wrap_malloc(n) : __real_malloc(n);
}
static void json_free(void *p) { free(p); }

void alloc_fail_arm(long n, int persistent) {
    static int json_routed;
    if (!json_routed) {
        json_set_alloc_funcs(json_malloc, json_free);
        json_routed = 1;
    }
    atomic_store(&g_count, 0);
    atomic_store(&g_failed, 0);
    atomic_store(&g_persistent, persistent);
    atomic_store(&g_target, n);
}

long alloc_fail_disarm(void) {
    atomic_store(&g_target, 0);
    return atomic_load(&g_failed);
}

void alloc_fail_json(int on) { atomic_store(&g_json, on); }

long alloc_fail_target(void) { return atomic_load(&g_target); }

long alloc_fail_count(void) { return atomic_load(&g_count); }

long alloc_fail_sweep(alloc_fail_op op, alloc_fail_check check, void *ctx, long dense,
                      long stride) {
    long runs = 0;
    for (long n = 1;; n += (dense && runs > dense) ? stride : 1) {
        alloc_fail_arm(n, 0);
        int st = op(ctx);
        long failed = alloc_fail_disarm();
        runs++;
        if (!failed) {
            check(ctx, 0, st);
            return runs;
        }
        check(ctx, n, st);
    }
}
