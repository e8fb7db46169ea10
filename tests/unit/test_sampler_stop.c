/* test_sampler_stop.c — stop strings across token boundaries with hold-back
 * (facet_stop_matcher of facet_sampler.h). Expected outputs are worked out by hand from
 * OpenAI's rule: the returned text ends right before the first stop sequence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "facet_sampler.h"

/* Push pieces; concatenate everything released (flushing at the end); return the
 * matched stop index through *stopped. The result is a static buffer. */
static const char *run(const char *const *stops, int n_stops, const char *const *pieces,
                       int n_pieces, int *stopped, char released_per_push[][64]) {
    static char acc[1024];
    acc[0] = '\0';
    facet_stop_matcher *m = NULL;
    facet_error err;
    assert_int_equal(facet_stop_matcher_create(stops, n_stops, &m, &err), FACET_OK);
    *stopped = -1;
    for (int i = 0; i < n_pieces; i++) {
        const char *out;
        size_t len;
        int st;
        assert_int_equal(
            facet_stop_matcher_push(m, pieces[i], strlen(pieces[i]), &out, &len, &st, &err),
            FACET_OK);
        assert_int_equal(strlen(out), len);
        if (released_per_push) snprintf(released_per_push[i], 64, "%s", out);
        strncat(acc, out, sizeof acc - strlen(acc) - 1);
        *stopped = st;
    }
    const char *out;
    size_t len;
    facet_stop_matcher_flush(m, &out, &len);
    assert_int_equal(strlen(out), len);
    strncat(acc, out, sizeof acc - strlen(acc) - 1);
    facet_stop_matcher_free(m);
    return acc;
}

static void test_across_boundaries(void **state) {
    (void)state;
    const char *stops[] = {"o W"};
    const char *pieces[] = {"Hel", "lo", " Wo", "rld"};
    char rel[4][64];
    int st;
    assert_string_equal(run(stops, 1, pieces, 4, &st, rel), "Hell");
    assert_int_equal(st, 0);
    assert_string_equal(rel[0], "Hel");
    assert_string_equal(rel[1], "l"); /* "o" held: it may start "o W" */
    assert_string_equal(rel[2], "");  /* match: "Hell" was already out, nothing more */
    assert_string_equal(rel[3], "");  /* after a match nothing is released */
}

static void test_hold_released_at_end(void **state) {
    (void)state;
    const char *stops[] = {"THE END", "\n\n"};
    const char *pieces[] = {"once ", "upon THE", " EN", "\n"};
    char rel[4][64];
    int st;
    assert_string_equal(run(stops, 2, pieces, 4, &st, rel), "once upon THE EN\n");
    assert_int_equal(st, -1);
    assert_string_equal(rel[1], "upon ");
    assert_string_equal(rel[2], "");
    assert_string_equal(rel[3], "THE EN"); /* "\n" held: it may start "\n\n" */
}

static void test_earliest_and_first_listed(void **state) {
    (void)state;
    int st;
    const char *stops[] = {"cd", "bc", "b"};
    const char *pieces[] = {"abcd"};
    assert_string_equal(run(stops, 3, pieces, 1, &st, NULL), "a");
    assert_int_equal(st, 1); /* "bc" and "b" both start at 1; "bc" is listed first */
    const char *stops2[] = {"xyz"};
    const char *pieces2[] = {"xy", "xy", "xyz!"};
    assert_string_equal(run(stops2, 1, pieces2, 3, &st, NULL), "xyxy");
    assert_int_equal(st, 0);
}

static void test_stop_in_one_piece_and_utf8(void **state) {
    (void)state;
    int st;
    const char *stops[] = {"é!"};
    const char *pieces[] = {"caf", "\xc3\xa9", "! more"};
    char rel[3][64];
    assert_string_equal(run(stops, 1, pieces, 3, &st, rel), "caf");
    assert_int_equal(st, 0);
    assert_string_equal(rel[1], "");
}

static void test_no_stops_pass_through(void **state) {
    (void)state;
    int st;
    const char *pieces[] = {"a", "bc", ""};
    char rel[3][64];
    assert_string_equal(run(NULL, 0, pieces, 3, &st, rel), "abc");
    assert_string_equal(rel[1], "bc");
    assert_int_equal(st, -1);
}

static void test_invalid_stops(void **state) {
    (void)state;
    facet_stop_matcher *m = NULL;
    facet_error err;
    const char *empty[] = {"ok", ""};
    assert_int_equal(facet_stop_matcher_create(empty, 2, &m, &err), FACET_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "stop[1]"));
    assert_null(m);
    const char *bad[] = {"\xff"};
    assert_int_equal(facet_stop_matcher_create(bad, 1, &m, &err), FACET_E_UTF8);
    assert_null(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_across_boundaries),  cmocka_unit_test(test_hold_released_at_end),
        cmocka_unit_test(test_earliest_and_first_listed),
        cmocka_unit_test(test_stop_in_one_piece_and_utf8),
        cmocka_unit_test(test_no_stops_pass_through), cmocka_unit_test(test_invalid_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
