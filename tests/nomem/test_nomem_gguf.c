/*
 * Allocation failure while loading and running a quantized GGUF model (alloc_fail.h):
 * tests/data/gguf/qwen3-Q4_0.gguf (Q4_0 matrices, a Q6_K tied embedding) loaded with
 * --weights auto, its Q4_0 matrices repacked into q4 panels (the default) and kept in
 * their blocks (FACET_GGUF_BLOCKS=1), each run with its n-th allocation failing for
 * every n; then one prefill of 5 tokens on the loaded model the same way (the block
 * driver's activation scratch).
 *
 * Each failed run returns FACET_E_NOMEM with a message and frees what it made (ASan's
 * leak check, build-asan); the run without a failure gives the same logits as a run that
 * never armed a failure. One thread: the allocation order is fixed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc_fail.h"
#include "facet.h"

#define MODEL FACET_SOURCE_DIR "/tests/data/gguf/qwen3-Q4_0.gguf"
#define VOCAB 512

typedef struct {
    facet_model *m;
} load_ctx;

static int load_op(void *p) {
    load_ctx *c = p;
    facet_error err = {0};
    facet_load_options lo = {.n_threads = 1};
    c->m = (facet_model *)0x1;
    facet_status st = facet_model_load(MODEL, &lo, &c->m, &err);
    if (st != FACET_OK && st != FACET_E_NOMEM)
        fail_msg("allocation %ld: load failed with %s: %s", alloc_fail_target(),
                 facet_status_name(st), err.message);
    if (st != FACET_OK && !err.message[0]) fail_msg("allocation %ld: no message", alloc_fail_target());
    return (int)st;
}

static void load_check(void *p, long n, int st) {
    (void)n;
    load_ctx *c = p;
    if (st == FACET_OK) {
        facet_model_info info;
        facet_model_get_info(c->m, &info);
        assert_int_equal(info.vocab_size, VOCAB);
        assert_int_equal(info.weights, FACET_WEIGHTS_GGUF);
        facet_model_free(c->m);
    } else {
        assert_null(c->m);
    }
}

static void sweep_load(const char *blocks) {
    if (blocks) setenv("FACET_GGUF_BLOCKS", blocks, 1);
    else unsetenv("FACET_GGUF_BLOCKS");
    load_ctx c = {0};
    long runs = alloc_fail_sweep(load_op, load_check, &c, 0, 1);
    print_message("load (%s): %ld runs\n", blocks ? "blocks" : "repacked", runs);
    unsetenv("FACET_GGUF_BLOCKS");
}

static void test_load_repacked(void **state) {
    (void)state;
    sweep_load(NULL);
}

static void test_load_blocks(void **state) {
    (void)state;
    sweep_load("1");
}

/* ---- prefill on a model whose matrices stay in their blocks ---- */

typedef struct {
    facet_model *m;
    float logits[VOCAB], want[VOCAB];
} run_ctx;

static int prefill_op(void *p) {
    run_ctx *c = p;
    facet_error err = {0};
    facet_session *s = NULL;
    facet_session_options so = {1, 64, FACET_KV_AUTO};
    facet_status st = facet_session_create(c->m, &so, &s, &err);
    const int32_t ids[5] = {1, 403, 407, 261, 378};
    if (st == FACET_OK) st = facet_prefill(s, 0, ids, 5, c->logits, &err);
    facet_session_free(s);
    if (st != FACET_OK && st != FACET_E_NOMEM)
        fail_msg("allocation %ld: prefill failed with %s: %s", alloc_fail_target(),
                 facet_status_name(st), err.message);
    if (st != FACET_OK && !err.message[0]) fail_msg("allocation %ld: no message", alloc_fail_target());
    return (int)st;
}

static void prefill_check(void *p, long n, int st) {
    run_ctx *c = p;
    if (!n && st == FACET_OK) assert_memory_equal(c->logits, c->want, sizeof c->want);
}

static void test_prefill_blocks(void **state) {
    (void)state;
    setenv("FACET_GGUF_BLOCKS", "1", 1);
    static run_ctx c;
    facet_load_options lo = {.n_threads = 1};
    assert_int_equal(facet_model_load(MODEL, &lo, &c.m, NULL), FACET_OK);
    unsetenv("FACET_GGUF_BLOCKS");
    assert_int_equal(prefill_op(&c), FACET_OK);
    memcpy(c.want, c.logits, sizeof c.want);
    long runs = alloc_fail_sweep(prefill_op, prefill_check, &c, 0, 1);
    print_message("prefill (blocks): %ld runs\n", runs);
    facet_model_free(c.m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_repacked),
        cmocka_unit_test(test_load_blocks),
        cmocka_unit_test(test_prefill_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
