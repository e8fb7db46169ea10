/*
 * The KV cache module (src/engine/kv_cache.h) under allocation failure, and its layout.
 *
 * A cache of 3 layers (layer 1 sliding, window 20: a ring of 32 positions), 2 KV heads of 8
 * dims, n_ctx 300, for each element type. Every position's keys and values are
 * hand-chosen integers below 250 (exact in bf16 and f16), so a read-back compares
 * exactly. Growth is swept over every allocation it makes: each failure must return
 * FACET_E_NOMEM and leave the sequence as it was (capacity, buffers, contents), usable
 * (the next reserve succeeds and keeps the contents) and safe to release; ASan (the
 * suite's build-asan) checks that nothing leaks or is read out of bounds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "alloc_fail.h"
#include "engine/kv_cache.h"

enum { L = 3, NKV = 2, HD = 8, WINDOW = 20, CTX = 300 };
static const uint8_t SLIDING[L] = {0, 1, 0};

/* The hand-chosen value of (layer, position, head, dim): keys, and values + 1. */
static float val(int l, int pos, int h, int d) {
    return (float)((l * 37 + pos * 3 + h * 11 + d) % 249);
}

static void store(facet_kv_cache *kv, int seq, int pos) {
    float k[NKV * HD], v[NKV * HD];
    for (int l = 0; l < L; l++) {
        for (int h = 0; h < NKV; h++)
            for (int d = 0; d < HD; d++) {
                k[h * HD + d] = val(l, pos, h, d);
                v[h * HD + d] = val(l, pos, h, d) + 1;
            }
        facet_kv_cache_store(kv, seq, l, pos, k, v);
    }
}

/* Every position below len of sequence seq reads back as stored (ring layers: the last
 * WINDOW positions). */
static void check_contents(const facet_kv_cache *kv, int seq) {
    const facet_kv_seq *c = &kv->seqs[seq];
    float k[HD], v[HD];
    for (int l = 0; l < L; l++)
        for (int pos = 0; pos < c->len; pos++) {
            if (facet_kv_is_ring(kv, l) && pos < c->len - WINDOW) continue;
            for (int h = 0; h < NKV; h++) {
                facet_kv_load_strided(facet_kv_key(kv, c, l, h, pos), kv->type, k, HD,
                                      FACET_KV_GROUP);
                facet_kv_load(facet_kv_value(kv, c, l, h, pos), kv->type, v, HD);
                for (int d = 0; d < HD; d++) {
                    if (k[d] != val(l, pos, h, d) || v[d] != val(l, pos, h, d) + 1)
                        fail_msg("layer %d pos %d head %d dim %d: got k=%g v=%g, expected %g %g",
                                 l, pos, h, d, k[d], v[d], val(l, pos, h, d),
                                 val(l, pos, h, d) + 1);
                }
            }
        }
}

/* Append positions until len reaches `to`, reserving first (not armed). */
static void fill(facet_kv_cache *kv, int seq, int to) {
    assert_int_equal(facet_kv_cache_reserve(kv, seq, to, NULL), FACET_OK);
    while (kv->seqs[seq].len < to) {
        int pos = kv->seqs[seq].len++;
        store(kv, seq, pos);
    }
}

static void init(facet_kv_cache *kv, facet_kv_type type) {
    assert_int_equal(facet_kv_cache_init(kv, L, NKV, HD, SLIDING, WINDOW, type, 2, CTX, NULL),
                     FACET_OK);
}

/* Layout: ring layers hold the window rounded up to whole key groups (20 -> 32), global
 * layers grow by doubling from 64 to
 * n_ctx rounded up to a key group (300 -> 304), and the contents survive each growth. */
static void test_layout_and_growth(void **state) {
    (void)state;
    static const facet_kv_type types[] = {FACET_KV_F32, FACET_KV_BF16, FACET_KV_F16};
    for (size_t t = 0; t < 3; t++) {
        facet_kv_cache kv;
        init(&kv, types[t]);
        assert_int_equal(kv.ring_cap, 32); /* WINDOW 20 -> whole key groups */
        assert_true(facet_kv_is_ring(&kv, 1));
        assert_false(facet_kv_is_ring(&kv, 0));
        fill(&kv, 0, 5);
        assert_int_equal(kv.seqs[0].cap, 64);
        assert_int_equal(facet_kv_rows(&kv, &kv.seqs[0], 1), 32); /* 20 -> whole groups */
        /* hand-worked offsets (elements): key of head 1, position 17 on a global layer:
         * head 1's stream starts at 64 rows x 8 dims, position 17 is in key group 1
         * (8 x 16 elements further), lane 1; its value row is row 64 + 17 of 8 dims; on
         * the ring (32 rows) position 45 is row 13 */
        size_t e = kv.elt;
        assert_int_equal(facet_kv_key_offset(&kv, &kv.seqs[0], 0, 1, 17), (512 + 128 + 1) * e);
        assert_int_equal(facet_kv_value_offset(&kv, &kv.seqs[0], 0, 1, 17), (64 + 17) * 8 * e);
        assert_int_equal(facet_kv_key_offset(&kv, &kv.seqs[0], 1, 1, 45), (256 + 13) * e);
        assert_int_equal(facet_kv_value_offset(&kv, &kv.seqs[0], 1, 1, 45), (32 + 13) * 8 * e);
        check_contents(&kv, 0);
        fill(&kv, 0, 65);
        assert_int_equal(kv.seqs[0].cap, 128);
        check_contents(&kv, 0);
        fill(&kv, 0, 300);
        assert_int_equal(kv.seqs[0].cap, 304);
        check_contents(&kv, 0);
        assert_int_equal(kv.seqs[1].cap, 0); /* the other sequence never grew */
        facet_kv_cache_reset(&kv, 0);
        assert_int_equal(kv.seqs[0].len, 0);
        assert_int_equal(kv.seqs[0].cap, 304); /* reset keeps the memory */
        facet_kv_cache_release(&kv, 0);
        assert_int_equal(kv.seqs[0].cap, 0);
        assert_null(kv.seqs[0].layers);
        facet_kv_cache_release(&kv, 0); /* twice: nothing to free */
        fill(&kv, 0, 3);
        check_contents(&kv, 0);
        facet_kv_cache_free(&kv);
    }
}

/* Ring store: positions of one chunk that a later position of the same chunk overwrites
 * are skipped (pos + 32 <= len - 1), the others land at pos % 32 (the ring of 32 rows). */
static void test_ring_store_skips_overwritten(void **state) {
    (void)state;
    facet_kv_cache kv;
    init(&kv, FACET_KV_F32);
    assert_int_equal(facet_kv_cache_reserve(&kv, 0, 45, NULL), FACET_OK);
    kv.seqs[0].len = 45; /* one chunk of 45 positions, counted in len before the stores */
    for (int pos = 44; pos >= 0; pos--) store(&kv, 0, pos); /* the overwritten ones last */
    check_contents(&kv, 0); /* positions 25..44 in the ring, not 5..24 */
    facet_kv_cache_free(&kv);
}

typedef struct {
    facet_kv_cache kv;
    int from, need;             /* the sequence holds `from` positions, grows to `need` */
    facet_kv_layer *layers;     /* its table before the sweep's run */
    int cap;
} grow_ctx;

static int grow_op(void *p) {
    grow_ctx *g = p;
    g->layers = g->kv.seqs[0].layers;
    g->cap = g->kv.seqs[0].cap;
    return (int)facet_kv_cache_reserve(&g->kv, 0, g->need, NULL);
}

static void grow_check(void *p, long n, int st) {
    grow_ctx *g = p;
    facet_kv_seq *c = &g->kv.seqs[0];
    if (n == 0) { /* the run without a failure */
        assert_int_equal(st, FACET_OK);
        assert_true(c->cap >= g->need);
        check_contents(&g->kv, 0);
        return;
    }
    if (st != FACET_E_NOMEM) fail_msg("allocation %ld failed: status %d, expected NOMEM", n, st);
    /* unchanged: the same table, capacity and contents */
    assert_ptr_equal(c->layers, g->layers);
    assert_int_equal(c->cap, g->cap);
    assert_int_equal(c->len, g->from);
    check_contents(&g->kv, 0);
}

/* Sweep every allocation of a first reserve (from nothing) and of a growth (64 -> 128
 * positions, 3 layers: a table and two buffers per global layer), then check the cache
 * is usable after each failure: a later growth succeeds with the contents kept, and
 * release frees everything. */
static void test_growth_fails_cleanly(void **state) {
    (void)state;
    static const int from[] = {0, 50};
    for (size_t i = 0; i < 2; i++) {
        grow_ctx g = {.from = from[i], .need = 100};
        init(&g.kv, FACET_KV_BF16);
        if (g.from) fill(&g.kv, 0, g.from);
        long runs = 0;
        for (long n = 1;; n++) { /* a sweep that also checks usability after each failure */
            alloc_fail_arm(n, 0);
            int st = grow_op(&g);
            long failed = alloc_fail_disarm();
            grow_check(&g, failed ? n : 0, st);
            runs++;
            if (!failed) break;
            /* usable: grows now, keeps the contents, takes new positions; then back to
             * the state the sweep starts from */
            fill(&g.kv, 0, g.need);
            check_contents(&g.kv, 0);
            facet_kv_cache_release(&g.kv, 0);
            if (g.from) fill(&g.kv, 0, g.from);
        }
        /* first reserve: table + 2 buffers per layer (the ring too); growth: table + 2
         * buffers per global layer */
        assert_int_equal(runs, g.from ? 1 + 2 * 2 + 1 : 1 + 2 * 3 + 1);
        fill(&g.kv, 0, 120);
        check_contents(&g.kv, 0);
        facet_kv_cache_free(&g.kv);
    }
}

/* A failure with every later allocation failing too (persistent), then release of the
 * sequence at once: nothing half-built is left to free (the old code freed a NULL
 * values table's rows). */
static void test_release_after_failure(void **state) {
    (void)state;
    for (long n = 1; n <= 5; n++) { /* a growth of 2 global layers: 5 allocations */
        facet_kv_cache kv;
        init(&kv, FACET_KV_F32);
        fill(&kv, 0, 64);
        alloc_fail_arm(n, 1);
        facet_status st = facet_kv_cache_reserve(&kv, 0, 65, NULL);
        alloc_fail_disarm();
        assert_int_equal(st, FACET_E_NOMEM);
        facet_kv_cache_release(&kv, 0);
        facet_kv_cache_free(&kv);
    }
}

typedef struct {
    facet_kv_cache kv;
} init_ctx;

static int init_op(void *p) {
    init_ctx *c = p;
    return (int)facet_kv_cache_init(&c->kv, L, NKV, HD, SLIDING, WINDOW, FACET_KV_F16, 4, CTX,
                                    NULL);
}

static void init_check(void *p, long n, int st) {
    init_ctx *c = p;
    if (n) {
        assert_int_equal(st, FACET_E_NOMEM);
        assert_null(c->kv.seqs);
        assert_null(c->kv.kind);
    } else {
        assert_int_equal(st, FACET_OK);
    }
    facet_kv_cache_free(&c->kv);
}

static void test_init_fails_cleanly(void **state) {
    (void)state;
    init_ctx c;
    /* the kind, sequence and state-size tables, then the success */
    assert_int_equal(alloc_fail_sweep(init_op, init_check, &c, 0, 1), 4);
}

/* A cache whose layer 1 is a STATE slot (a recurrent mixer's state, 40 floats): a first
 * reserve allocates the table, layer 0's and 2's keys and values and the state; each
 * failure leaves the sequence without memory, the next reserve gives a zero state;
 * growth keeps the state (same buffer, same contents) and its failures leave it so. */
static void test_state_slot_fails_cleanly(void **state) {
    (void)state;
    facet_kv_cache kv;
    assert_int_equal(facet_kv_cache_init(&kv, L, NKV, HD, NULL, 0, FACET_KV_F32, 2, CTX, NULL),
                     FACET_OK);
    facet_kv_cache_set_state(&kv, 1, 40 * sizeof(float));
    long runs = 0;
    for (long n = 1;; n++, runs++) {
        alloc_fail_arm(n, 0);
        facet_status st = facet_kv_cache_reserve(&kv, 0, 10, NULL);
        long failed = alloc_fail_disarm();
        if (!failed) {
            assert_int_equal(st, FACET_OK);
            break;
        }
        assert_int_equal(st, FACET_E_NOMEM);
        assert_null(kv.seqs[0].layers);
        assert_int_equal(kv.seqs[0].cap, 0);
    }
    assert_int_equal(runs, 1 + 2 + 1 + 2); /* table, layer 0 k/v, the state, layer 2 k/v */
    float *st = kv.seqs[0].layers[1].state;
    for (int i = 0; i < 40; i++) {
        assert_true(st[i] == 0.0f);
        st[i] = (float)i;
    }
    for (long n = 1;; n++) { /* growth 64 -> 128: the state is kept through failures */
        alloc_fail_arm(n, 0);
        facet_status s2 = facet_kv_cache_reserve(&kv, 0, 100, NULL);
        long failed = alloc_fail_disarm();
        assert_ptr_equal(kv.seqs[0].layers[1].state, st);
        assert_true(st[39] == 39.0f);
        if (!failed) {
            assert_int_equal(s2, FACET_OK);
            break;
        }
        assert_int_equal(s2, FACET_E_NOMEM);
    }
    facet_kv_cache_free(&kv);
}

/* A state beside a GLOBAL slot (Falcon-H1's parallel mixers: layer 0 keeps KV rows and
 * 40 floats of state): a first reserve allocates the table, layer 0's state, keys and
 * values, then layers 1's and 2's; each failure leaves the sequence without memory (no
 * state leaked: ASan), and the reserve after it gives a zero state; growth keeps the
 * state (same buffer, same contents) through every failure and copies layer 0's rows. */
static void test_state_beside_kv_fails_cleanly(void **state) {
    (void)state;
    facet_kv_cache kv;
    assert_int_equal(facet_kv_cache_init(&kv, L, NKV, HD, NULL, 0, FACET_KV_F32, 2, CTX, NULL),
                     FACET_OK);
    facet_kv_cache_add_state(&kv, 0, 40 * sizeof(float));
    assert_int_equal(kv.n_state_layers, 1);
    assert_false(facet_kv_is_state(&kv, 0));
    long runs = 0;
    for (long n = 1;; n++, runs++) {
        alloc_fail_arm(n, 0);
        facet_status st = facet_kv_cache_reserve(&kv, 0, 10, NULL);
        long failed = alloc_fail_disarm();
        if (!failed) {
            assert_int_equal(st, FACET_OK);
            break;
        }
        assert_int_equal(st, FACET_E_NOMEM);
        assert_null(kv.seqs[0].layers);
        assert_int_equal(kv.seqs[0].cap, 0);
    }
    assert_int_equal(runs, 1 + 3 + 2 + 2); /* table, layer 0 state k v, layers 1, 2 k v */
    float *st = kv.seqs[0].layers[0].state;
    for (int i = 0; i < 40; i++) {
        assert_true(st[i] == 0.0f);
        st[i] = (float)i;
    }
    fill(&kv, 0, 10);
    for (long n = 1;; n++) { /* growth 64 -> 128: the state is kept through failures */
        alloc_fail_arm(n, 0);
        facet_status s2 = facet_kv_cache_reserve(&kv, 0, 100, NULL);
        long failed = alloc_fail_disarm();
        assert_ptr_equal(kv.seqs[0].layers[0].state, st);
        assert_true(st[39] == 39.0f);
        if (!failed) {
            assert_int_equal(s2, FACET_OK);
            break;
        }
        assert_int_equal(s2, FACET_E_NOMEM);
    }
    check_contents(&kv, 0);
    facet_kv_cache_release(&kv, 0);
    facet_kv_cache_free(&kv);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_and_growth),
        cmocka_unit_test(test_ring_store_skips_overwritten),
        cmocka_unit_test(test_growth_fails_cleanly),
        cmocka_unit_test(test_release_after_failure),
        cmocka_unit_test(test_init_fails_cleanly),
        cmocka_unit_test(test_state_slot_fails_cleanly),
        cmocka_unit_test(test_state_beside_kv_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
