/*
 * alloc_fail.h — allocation-failure injection for the tests in tests/nomem (SQLite's
 * malloc-failure loop, in facet's own code).
 *
 * These test executables are linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,
 * --wrap=strdup,--wrap=strndup,--wrap=posix_memalign,--wrap=aligned_alloc, so every
 * call to those functions from facet's object files (the test's own and those pulled
 * from libfacet.a) goes through alloc_fail.c. Allocations inside other libraries
 * (pcre2, utf8proc, libc's getline and realpath, the C runtime) are not counted, nor,
 * unless a test asks (alloc_fail_json), jansson's: jansson 2.14's lexer ignores a failed
 * growth of its token buffer and drops the byte, so a failure there turns a valid
 * "LlamaForCausalLM" into "LlamaForCausalM" without any error — nothing its caller can
 * detect; and json_dumps, when an allocation of its own fails, has returned a text with
 * an object key emptied ({"":"stop"} for {"finish_reason":"stop"}). The sweeps count them
 * only while JSON values are built (the server's responses), not parsed or dumped.
 *
 * When armed with n, the n-th counted allocation from then on fails (returns NULL,
 * posix_memalign ENOMEM) and, with `persistent`, every later one as well; the others
 * go to the C library. Counting is atomic, so allocations from the thread pool's workers
 * count too (their order between threads is then not fixed; the sweeps below run the
 * engine single-threaded or allocate only on the calling thread).
 */
#ifndef FACET_TESTS_ALLOC_FAIL_H
#define FACET_TESTS_ALLOC_FAIL_H

/* Arm: the n-th allocation from now (n >= 1) fails; with persistent, all after it too. */
void alloc_fail_arm(long n, int persistent);

/* Disarm; returns how many allocations failed since the last arm (0: the operation made
 * fewer than n allocations, so the sweep is complete). */
long alloc_fail_disarm(void);

/* Count jansson's allocations (json_set_alloc_funcs) from the next arm on (1) or not
 * (0, the default). Only for code that builds JSON values: see above for parsing. */
void alloc_fail_json(int on);

/* The n of the last arm (0: disarmed), for messages. */
long alloc_fail_target(void);

/* Allocations counted since the last arm. */
long alloc_fail_count(void);

/* Sweep helper: run op(ctx) with the n-th allocation failing, for n = 1, 2, ... while an
 * allocation failed, calling check(ctx, n, status) after each failed run and once more
 * with n = 0 after the first run in which nothing failed (the operation's success).
 * Past `dense` runs, n advances by `stride` (dense = 0: every n). Returns the number of
 * runs. */
typedef int (*alloc_fail_op)(void *ctx);
typedef void (*alloc_fail_check)(void *ctx, long n, int status);
long alloc_fail_sweep(alloc_fail_op op, alloc_fail_check check, void *ctx, long dense,
                      long stride);

#endif
