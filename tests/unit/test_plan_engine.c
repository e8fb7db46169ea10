/* test_plan_engine.c — the plan's weight bytes equal what the engine allocates: the
 * bundled stories260k checkpoint loaded in every run-time format (facet_model_load,
 * no weight cache), its facet_model_info.weight_bytes against facet_plan_make. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "facet.h"
#include "io/safetensors.h"
#include "model/facts.h"
#include "model/plan.h"
#include "model/probe.h"

static void test_weight_bytes_match_engine(void **state) {
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/models/stories260k", FACET_SOURCE_DIR);
    static facet_facts f;
    facet_error err;
    assert_int_equal(facet_facts_read(dir, &f, &err), FACET_OK);
    st_checkpoint ck;
    assert_int_equal(st_checkpoint_open(dir, &ck, &err), FACET_OK);
    assert_int_equal(facet_facts_probe(&f, &ck, &err), FACET_OK);
    st_checkpoint_close(&ck);

    static const struct {
        facet_weight_format engine;
        int plan;
    } formats[] = {{FACET_WEIGHTS_F32, FACET_WF_F32}, {FACET_WEIGHTS_BF16, FACET_WF_BF16},
                   {FACET_WEIGHTS_F16, FACET_WF_F16}, {FACET_WEIGHTS_INT8, FACET_WF_Q8},
                   {FACET_WEIGHTS_AUTO, FACET_PLAN_AUTO}};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        facet_load_options o = {.n_threads = 1, .weights = formats[i].engine, .no_cache = 1};
        facet_model *m = NULL;
        facet_status st = facet_model_load(dir, &o, &m, &err);
        if (st != FACET_OK) fprintf(stderr, "load: %s\n", err.message);
        assert_int_equal(st, FACET_OK);
        facet_model_info info;
        facet_model_get_info(m, &info);
        facet_model_free(m);

        static facet_plan p;
        facet_plan_opts po = {.ctx = 0, .batch = 1, .weights = formats[i].plan,
                              .mem_available = 1ull << 30};
        assert_int_equal(facet_plan_make(&f, &po, &p, &err), FACET_OK);
        if (info.weight_bytes != p.weight_bytes[p.weights])
            fprintf(stderr, "%s: engine %llu plan %llu\n", facet_plan_format_name(p.weights),
                    (unsigned long long)info.weight_bytes,
                    (unsigned long long)p.weight_bytes[p.weights]);
        assert_int_equal(info.weight_bytes, p.weight_bytes[p.weights]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_weight_bytes_match_engine)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
