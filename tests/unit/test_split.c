/* test_split.c — the pipeline x tensor split (src/model/split.h) on hand-worked facts:
 * the refusals' messages (fact, value, divisor, the values that work), the layer ranges
 * the balance picks, each rank's bytes and the bytes it sends per token.
 *
 * Facts: 4 layers, hidden 64, 4 heads / 2 KV heads of 16, FFN 128, vocab 1000, untied.
 * Parameters: embeddings + lm_head + final norm = 1000 x 64 x 2 + 64 = 128064; a layer
 * 2 x 64 x 16 x (4 + 2) + 2 x 64 + 3 x 128 x 64 = 36992. A plan of 4 bytes each (f32),
 * no KV: stage 0's embeddings 512256 bytes, a layer 147968. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "model/split.h"

static facet_facts F;

/* 1 when s ends with tail. */
static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && !strcmp(s + n - k, tail);
}
static facet_plan P;

static void setup_facts(void) {
    memset(&F, 0, sizeof F);
    F.num_hidden_layers = 4;
    F.hidden_size = 64;
    F.num_attention_heads = 4;
    F.num_key_value_heads = 2;
    F.head_dim = 16;
    F.intermediate_size = 128;
    F.vocab_size = 1000;
    F.probed = 1;
    F.has_lm_head = 1;
    memset(&P, 0, sizeof P);
    P.weights = FACET_WF_F32;
    P.weight_bytes[FACET_WF_F32] = (128064 + 4 * 36992) * 4;
    P.batch = 1;
}

static void test_pipeline_balance(void **state) {
    (void)state;
    setup_facts();
    facet_split s;
    facet_error err;
    /* P = 2: stage 0 with one layer holds 512256 + 147968 = 660224 bytes, the other three
     * 443904; with two it would hold 808192: one layer is the better balance */
    assert_int_equal(facet_split_make(&F, &P, 2, 1, &s, &err), FACET_OK);
    assert_int_equal(s.first[0], 0);
    assert_int_equal(s.first[1], 1);
    assert_int_equal(s.first[2], 4);
    assert_int_equal(s.weight_bytes[0], 660224);
    assert_int_equal(s.weight_bytes[1], 443904);
    /* a hidden state (64 x 4) to the next stage; rank 0 also its 25-byte command */
    assert_int_equal(s.sent_per_token[0], 256 + 25);
    assert_int_equal(s.sent_per_token[1], 256);
    /* P = 4: one layer each */
    assert_int_equal(facet_split_make(&F, &P, 4, 1, &s, &err), FACET_OK);
    for (int i = 0; i <= 4; i++) assert_int_equal(s.first[i], i);
    assert_int_equal(s.sent_per_token[0], 256 + 3 * 25);
}

static void test_tensor_share(void **state) {
    (void)state;
    setup_facts();
    facet_split s;
    facet_error err;
    /* T = 2: each rank half of every layer (4 x 147968 / 2) + the embeddings whole; two
     * all-reduces per layer of 2 (T-1)/T x 256 bytes = 256 each: 8 x 256, + the command */
    assert_int_equal(facet_split_make(&F, &P, 1, 2, &s, &err), FACET_OK);
    assert_int_equal(s.weight_bytes[0], 512256 + 295936);
    assert_int_equal(s.sent_per_token[0], 8 * 256 + 25);
}

static void test_refusals_name_what_works(void **state) {
    (void)state;
    setup_facts();
    facet_split s;
    facet_error err;
    assert_int_equal(facet_split_make(&F, &P, 5, 1, &s, &err), FACET_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "num_hidden_layers=4 must be >= the 5 stages"));
    assert_non_null(strstr(err.message, "P from 1 to 4 would work"));
    assert_int_equal(facet_split_check(&F, 1, 3, &err), FACET_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "num_attention_heads=4 is not divisible by 3"));
    assert_non_null(strstr(err.message, "its divisors: 1, 2, 4;"));
    assert_true(ends_with(err.message, "the FFN width: 1, 2"));
    assert_int_equal(facet_split_check(&F, 1, 4, &err), FACET_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "num_key_value_heads=2 is not divisible by 4"));
    /* a mixture-of-experts model's expert width is checked too */
    F.n_sparse_layers = 4;
    F.layer_sparse[0] = F.layer_sparse[1] = F.layer_sparse[2] = F.layer_sparse[3] = 1;
    F.moe_intermediate_size = 48;
    assert_int_equal(facet_split_check(&F, 1, 2, &err), FACET_OK);
    F.moe_intermediate_size = 50; /* 50 = 2 x 25 */
    assert_int_equal(facet_split_check(&F, 1, 2, &err), FACET_OK);
    F.moe_intermediate_size = 49;
    assert_int_equal(facet_split_check(&F, 1, 2, &err), FACET_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "moe_intermediate_size=49 is not divisible by 2"));
    assert_true(ends_with(err.message, "the FFN width: 1"));
    /* recurrent layers are not split by heads */
    setup_facts();
    F.n_ssm_layers = 4;
    assert_int_equal(facet_split_check(&F, 1, 2, &err), FACET_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "Mamba"));
    assert_int_equal(facet_split_check(&F, 2, 1, &err), FACET_OK);
    assert_int_equal(facet_split_check(&F, 0, 1, &err), FACET_E_INVALID_ARGUMENT);
    /* ALiBi's slopes belong to the whole model's heads: stages yes, head shares no */
    setup_facts();
    F.alibi = 1;
    assert_int_equal(facet_split_check(&F, 1, 2, &err), FACET_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "alibi=true"));
    assert_int_equal(facet_split_check(&F, 2, 1, &err), FACET_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_balance),
        cmocka_unit_test(test_tensor_share),
        cmocka_unit_test(test_refusals_name_what_works),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
