/*
 * test_kv_state.c — the cache module's STATE slots (kv_cache.h): a recurrent layer's
 * fixed per-sequence state is allocated zeroed with the sequence's first reserve, kept
 * (same buffer, same contents) when the sequence's attention slots grow, zeroed by a
 * reset, freed by a release, and never shared between sequences.
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

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_state_lifecycle)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
