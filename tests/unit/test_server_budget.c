/* test_server_budget.c — the KV-cache token budget of `facet serve` (server/budget.h):
 * srv_kv_budget_choose on given numbers (the arithmetic written out beside each value),
 * and srv_kv_plan on a real config, whose figures come from facet_plan_make (the same
 * numbers `facet plan` prints; test_plan.c holds those to hand-computed values). */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "server/budget.h"

#define GIB (1ull << 30)

static void assert_has(const char *text, const char *word) {
    if (!strstr(text, word)) fail_msg("'%s' not in: %s", word, text);
}

/* The user's case: a Qwen3-0.6B-shaped checkpoint (bf16 weights 1192230912 bytes, a
 * bf16 KV cache of 28 layers x 8 KV heads x 128 x 2 x 2 B = 114688 B/token) served with
 * the defaults (32 x 40960 = 1310720 tokens, 140 GiB of KV) on a 24 GiB machine. */
static void test_default_is_capped_to_memory(void **state) {
    (void)state;
    srv_kv_budget b;
    srv_kv_budget_choose(0, 32, 40960, 24 * GIB, 1192230912ull, 114688.0, &b);
    assert_int_equal(b.default_tokens, 1310720);
    /* margin 25769803776 / 100 * 10 = 2576980370; room 25769803776 - 2576980370 -
     * 1192230912 = 22000592494; / 114688 = 191829 (remainder 108142) */
    assert_int_equal(b.margin, 2576980370ull);
    assert_int_equal(b.kv_room, 22000592494ull);
    assert_int_equal(b.fit_tokens, 191829);
    assert_int_equal(b.tokens, 191829);
    assert_true(b.capped);
    assert_false(b.over);
    /* what fits really fits: weights + KV + margin <= MemAvailable */
    assert_true(1192230912ull + (uint64_t)b.tokens * 114688ull + b.margin <= 24 * GIB);
    char line[1024];
    srv_kv_budget_describe(&b, NULL, line, sizeof line);
    assert_has(line, "KV budget 191829 tokens, lowered from max batch 32 x ctx 40960 = "
                     "1310720 tokens (140.00 GiB of KV cache at 112.00 KiB/token)");
    assert_has(line, "MemAvailable 24.00 GiB - 10% margin - weights 1.11 GiB leaves 20.49 GiB");
    assert_has(line, "--kv-budget overrides");
}

/* The default fits: it is kept as is. */
static void test_default_that_fits_is_kept(void **state) {
    (void)state;
    srv_kv_budget b;
    /* 32 x 512 = 16384 tokens x 1280 B = 20 MiB, far below 24 GiB */
    srv_kv_budget_choose(0, 32, 512, 24 * GIB, 1000000, 1280.0, &b);
    assert_int_equal(b.tokens, 16384);
    assert_false(b.capped);
    assert_false(b.over);
    char line[1024];
    srv_kv_budget_describe(&b, NULL, line, sizeof line);
    assert_has(line, "KV budget 16384 tokens (max batch 32 x ctx 512; 20.00 MiB of KV cache "
                     "at 1.25 KiB/token; MemAvailable 24.00 GiB");
}

/* A hybrid's recurrent state (fixed per sequence) is named apart from the weights it is
 * counted with: 1 GiB of weights + 8 sequences x 16 MiB of state = 1.125 GiB fixed;
 * 24 GiB - 2.4 GiB margin - 1.125 GiB leaves 20.475 GiB (printed 20.48). */
static void test_recurrent_state_named(void **state) {
    (void)state;
    srv_kv_budget b;
    uint64_t weights = GIB, st = 8ull * 16 * 1024 * 1024;
    srv_kv_budget_choose(0, 8, 4096, 24 * GIB, weights + st, 2048.0, &b);
    b.state_bytes = st;
    assert_int_equal(b.tokens, 32768);
    char line[1024];
    srv_kv_budget_describe(&b, NULL, line, sizeof line);
    assert_has(line, "MemAvailable 24.00 GiB - 10% margin - weights 1.00 GiB - recurrent "
                     "state 128.00 MiB (8 sequences) leaves 20.48 GiB");
}

/* An exact fit is a fit: room / per token == default. */
static void test_exact_fit_boundary(void **state) {
    (void)state;
    srv_kv_budget b;
    /* mem 10000: margin 1000, weights 1000, room 8000 = 8 x 2 tokens x 500 B */
    srv_kv_budget_choose(0, 8, 2, 10000, 1000, 500.0, &b);
    assert_int_equal(b.kv_room, 8000);
    assert_int_equal(b.fit_tokens, 16);
    assert_int_equal(b.tokens, 16);
    assert_false(b.capped);
    /* one byte less: 15 tokens */
    srv_kv_budget_choose(0, 8, 2, 10000, 1001, 500.0, &b);
    assert_int_equal(b.tokens, 15);
    assert_true(b.capped);
}

/* An explicit --kv-budget is honoured; above what fits it is flagged (the warning). */
static void test_explicit_budget_is_honoured(void **state) {
    (void)state;
    srv_kv_budget b;
    srv_kv_budget_choose(1310720, 32, 40960, 24 * GIB, 1192230912ull, 114688.0, &b);
    assert_int_equal(b.tokens, 1310720);
    assert_true(b.over);
    assert_false(b.capped);
    assert_int_equal(b.fit_tokens, 191829);
    char line[1024];
    srv_kv_budget_describe(&b, NULL, line, sizeof line);
    assert_has(line, "warning: --kv-budget 1310720 tokens needs 140.00 GiB of KV cache at "
                     "112.00 KiB/token");
    assert_has(line, "about 191829 tokens");

    srv_kv_budget_choose(64, 32, 40960, 24 * GIB, 1192230912ull, 114688.0, &b);
    assert_int_equal(b.tokens, 64);
    assert_false(b.over);
    srv_kv_budget_describe(&b, NULL, line, sizeof line);
    assert_has(line, "KV budget 64 tokens (--kv-budget; 7.00 MiB of KV cache");
}

/* The weights alone leave nothing: no default budget (the server refuses to start),
 * an explicit one is still honoured (with the warning). */
static void test_nothing_fits(void **state) {
    (void)state;
    srv_kv_budget b;
    /* 1 GiB - 10% < 1.11 GiB of weights */
    srv_kv_budget_choose(0, 32, 40960, GIB, 1192230912ull, 114688.0, &b);
    assert_int_equal(b.kv_room, 0);
    assert_int_equal(b.fit_tokens, 0);
    assert_int_equal(b.tokens, 0);
    char line[1024];
    srv_kv_budget_describe(&b, NULL, line, sizeof line);
    assert_has(line, "no memory left for the KV cache: MemAvailable 1.00 GiB - 10% margin - "
                     "weights 1.11 GiB leaves 0 B");
    assert_has(line, "--kv-budget");
    srv_kv_budget_choose(100, 32, 40960, GIB, 1192230912ull, 114688.0, &b);
    assert_int_equal(b.tokens, 100);
    assert_true(b.over);
}

/* Memory unknown: the default (or the request) as is, saying why it was not checked;
 * a default above INT_MAX tokens is clamped, never wrapped. */
static void test_unchecked_and_overflow(void **state) {
    (void)state;
    srv_kv_budget b;
    srv_kv_budget_choose(0, 32, 40960, 0, 0, 0, &b);
    assert_int_equal(b.tokens, 1310720);
    assert_false(b.capped);
    char line[1024];
    srv_kv_budget_describe(&b, "config.json: bad", line, sizeof line);
    assert_has(line, "KV budget 1310720 tokens = max batch 32 x ctx 40960 (memory not "
                     "checked: config.json: bad)");
    srv_kv_budget_choose(0, 1024, INT_MAX, 0, 0, 0, &b);
    assert_int_equal(b.default_tokens, 1024ll * INT_MAX);
    assert_int_equal(b.tokens, INT_MAX);
    /* checked, huge room: still clamped */
    srv_kv_budget_choose(0, 1024, INT_MAX, UINT64_MAX, 0, 2.0, &b);
    assert_int_equal(b.tokens, INT_MAX);
    assert_false(b.capped);
}

/* srv_kv_plan on the Qwen3-0.6B config: facet plan's figures, the server's defaults. */
static void test_plan_figures(void **state) {
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/ref/configs/Qwen__Qwen3-0.6B__dims", FACET_TEST_DATA);
    int ctx = 0;
    uint64_t mem = 0, w = 0;
    double per = 0;
    facet_error err;
    uint64_t state_bytes = 1;
    facet_status st = srv_kv_plan(dir, 0, FACET_WEIGHTS_AUTO, FACET_KV_AUTO, 24 * GIB, &ctx,
                                  &mem, &w, &per, &state_bytes, &err);
    if (st) fail_msg("%s", err.message);
    assert_int_equal(ctx, 40960);           /* max_position_embeddings */
    assert_int_equal(mem, 24 * GIB);
    /* bf16 (torch_dtype): embed 151936 x 1024 x 2 = 311164928; per layer matrices
     * (2048+1024+1024) x 1024 + 1024 x 2048 + 3 x 3072 x 1024 = 15728640 x 2 B and
     * vectors (2 x 1024 norms + 2 x 128 qk-norms) x 4 B = 31466496, x 28 = 881061888;
     * final norm 4096 */
    assert_int_equal(w, 1192230912ull);
    assert_true(per == 114688.0);           /* 28 x 8 x 128 x 2 x 2 B (bf16 cache) */
    assert_int_equal(state_bytes, 0);       /* no recurrent layer */
    /* int8 weights and an f32 cache at ctx 4096 */
    st = srv_kv_plan(dir, 4096, FACET_WEIGHTS_INT8, FACET_KV_F32, 24 * GIB, &ctx, &mem, &w,
                     &per, NULL, &err);
    if (st) fail_msg("%s", err.message);
    assert_int_equal(ctx, 4096);
    assert_true(per == 229376.0);
    /* a context above max_position_embeddings: facet_plan_make's error */
    assert_int_not_equal(srv_kv_plan(dir, 50000, FACET_WEIGHTS_AUTO, FACET_KV_AUTO, 24 * GIB,
                                     &ctx, &mem, &w, &per, NULL, &err), FACET_OK);
    assert_has(err.message, "max_position_embeddings");
    /* Mamba: no KV per token; its fixed state per sequence, by hand 64 layers x 5120 x
     * (4 - 1 + 16) x 4 B (the server counts it once per sequence slot) */
    snprintf(dir, sizeof dir, "%s/configs/state-spaces__mamba-2.8b-hf", FACET_TEST_DATA);
    st = srv_kv_plan(dir, 4096, FACET_WEIGHTS_AUTO, FACET_KV_AUTO, 24 * GIB, &ctx, &mem, &w,
                     &per, &state_bytes, &err);
    if (st) fail_msg("%s", err.message);
    assert_true(per == 0.0);
    assert_int_equal(state_bytes, 64ull * 5120 * 19 * 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_is_capped_to_memory),
        cmocka_unit_test(test_default_that_fits_is_kept),
        cmocka_unit_test(test_exact_fit_boundary),
        cmocka_unit_test(test_recurrent_state_named),
        cmocka_unit_test(test_explicit_budget_is_honoured),
        cmocka_unit_test(test_nothing_fits),
        cmocka_unit_test(test_unchecked_and_overflow),
        cmocka_unit_test(test_plan_figures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
