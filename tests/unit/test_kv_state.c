/*
 * test_kv_state.c — the cache module's STATE slots (kv_cache.h): a recurrent layer's
 * fixed per-sequence state is allocated zeroed with the sequence's first reserve, kept
 * (same buffer, same contents) when the sequence's attention slots grow, zeroed by a
 * reset, freed by a release, and never shared between sequences; and a state beside an
 * attention slot (Falcon-H1).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/kv_cache.h"

/* layers 0 and 2 attention (2 heads of 8), layer 1 a state of 48 floats */
static void make(facet_kv_cache *kv) {
    facet_error err = {0};
    assert_int_equal(facet_kv_cache_init(kv, 3, 2, 8, NULL, 0, FACET_KV_F32, 2, 512, &err),
                     FACET_OK);
    facet_kv_cache_set_state(kv, 1, 48 * sizeof(float));
    facet_kv_cache_set_state(kv, 1, 48 * sizeof(float)); /* twice: still one state layer */
}

static int all_zero(const float *p, int n) {
    for (int i = 0; i < n; i++)
        if (p[i] != 0.0f) return 0;
    return 1;
}

static void test_state_lifecycle(void **state) {
    (void)state;
    facet_kv_cache kv;
    facet_error err = {0};
    make(&kv);
    assert_int_equal(kv.n_state_layers, 1);
    assert_true(facet_kv_is_state(&kv, 1));
    assert_false(facet_kv_is_state(&kv, 0));
    assert_int_equal(facet_kv_cache_state_bytes(&kv), 48 * sizeof(float));

    assert_int_equal(facet_kv_cache_reserve(&kv, 0, 10, &err), FACET_OK);
    facet_kv_layer *L = kv.seqs[0].layers;
    assert_non_null(L[1].state);
    assert_null(L[1].k);
    assert_null(L[1].v);
    assert_null(L[0].state);
    assert_non_null(L[0].k);
    assert_true(all_zero(L[1].state, 48));
    float *st = L[1].state;
    for (int i = 0; i < 48; i++) st[i] = (float)i + 1;

    /* growth of the attention slots keeps the state buffer and its contents */
    assert_int_equal(facet_kv_cache_reserve(&kv, 0, 300, &err), FACET_OK);
    assert_ptr_equal(kv.seqs[0].layers[1].state, st);
    assert_int_equal(kv.seqs[0].layers[1].state[47], 48.0f);

    /* another sequence has its own state */
    assert_int_equal(facet_kv_cache_reserve(&kv, 1, 1, &err), FACET_OK);
    assert_ptr_not_equal(kv.seqs[1].layers[1].state, st);
    assert_true(all_zero(kv.seqs[1].layers[1].state, 48));

    /* a copy of all of sequence 0's tokens carries its state; of none, a zero state */
    kv.seqs[0].len = 5;
    assert_int_equal(facet_kv_cache_copy(&kv, 0, 1, 5, &err), FACET_OK);
    assert_int_equal(kv.seqs[1].len, 5);
    assert_int_equal(kv.seqs[1].layers[1].state[47], 48.0f);
    assert_ptr_not_equal(kv.seqs[1].layers[1].state, st);
    assert_int_equal(facet_kv_cache_copy(&kv, 0, 1, 0, &err), FACET_OK);
    assert_true(all_zero(kv.seqs[1].layers[1].state, 48));

    /* reset zeroes it and keeps the memory */
    kv.seqs[0].len = 5;
    facet_kv_cache_reset(&kv, 0);
    assert_int_equal(kv.seqs[0].len, 0);
    assert_ptr_equal(kv.seqs[0].layers[1].state, st);
    assert_true(all_zero(st, 48));

    /* release frees it; the next reserve allocates a zeroed one again */
    facet_kv_cache_release(&kv, 0);
    assert_null(kv.seqs[0].layers);
    assert_int_equal(facet_kv_cache_reserve(&kv, 0, 1, &err), FACET_OK);
    assert_true(all_zero(kv.seqs[0].layers[1].state, 48));
    facet_kv_cache_free(&kv);
}

/* A state beside a GLOBAL slot (facet_kv_cache_add_state: Falcon-H1's parallel mixers):
 * layer 0 holds KV rows and 32 floats of state; both are allocated with the first
 * reserve, the rows grow while the state is kept, a copy carries both, a reset zeroes the
 * state, a release frees both. */
static void test_state_beside_kv(void **state) {
    (void)state;
    facet_kv_cache kv;
    facet_error err = {0};
    assert_int_equal(facet_kv_cache_init(&kv, 2, 1, 8, NULL, 0, FACET_KV_F32, 2, 512, &err),
                     FACET_OK);
    facet_kv_cache_add_state(&kv, 0, 32 * sizeof(float));
    facet_kv_cache_add_state(&kv, 0, 32 * sizeof(float)); /* twice: still one state layer */
    assert_int_equal(kv.n_state_layers, 1);
    assert_false(facet_kv_is_state(&kv, 0)); /* still an attention slot */
    assert_int_equal(facet_kv_cache_state_bytes(&kv), 32 * sizeof(float));
    assert_int_equal(facet_kv_cache_reserve(&kv, 0, 10, &err), FACET_OK);
    facet_kv_layer *L = kv.seqs[0].layers;
    assert_non_null(L[0].state);
    assert_non_null(L[0].k);
    assert_non_null(L[0].v);
    assert_null(L[1].state);
    assert_true(all_zero(L[0].state, 32));
    float *st = L[0].state;
    for (int i = 0; i < 32; i++) st[i] = (float)i + 1;
    float k[8], v[8];
    for (int pos = 0; pos < 10; pos++) {
        for (int d = 0; d < 8; d++) k[d] = (float)(pos * 8 + d), v[d] = -(float)(pos * 8 + d);
        kv.seqs[0].len = pos + 1;
        facet_kv_cache_store(&kv, 0, 0, pos, k, v);
    }
    assert_int_equal(facet_kv_cache_reserve(&kv, 0, 300, &err), FACET_OK);
    assert_ptr_equal(kv.seqs[0].layers[0].state, st);
    assert_true(st[31] == 32.0f);
    float got[8];
    facet_kv_load(facet_kv_value(&kv, &kv.seqs[0], 0, 0, 9), kv.type, got, 8);
    assert_true(got[7] == -79.0f);
    /* a copy of all of sequence 0's tokens: its state and its rows */
    assert_int_equal(facet_kv_cache_copy(&kv, 0, 1, 10, &err), FACET_OK);
    assert_ptr_not_equal(kv.seqs[1].layers[0].state, st);
    assert_true(kv.seqs[1].layers[0].state[31] == 32.0f);
    facet_kv_load(facet_kv_value(&kv, &kv.seqs[1], 0, 0, 9), kv.type, got, 8);
    assert_true(got[7] == -79.0f);
    facet_kv_cache_reset(&kv, 0);
    assert_ptr_equal(kv.seqs[0].layers[0].state, st);
    assert_true(all_zero(st, 32));
    facet_kv_cache_release(&kv, 0);
    facet_kv_cache_release(&kv, 1);
    assert_null(kv.seqs[0].layers);
    facet_kv_cache_free(&kv);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_state_lifecycle),
                                       cmocka_unit_test(test_state_beside_kv)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
