/* test_util_stats.c — facet_median against medians worked out by hand (odd and even
 * counts, unsorted input, repeated values, negatives). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/stats.h"

static void test_median(void **state) {
    (void)state;
    double one[] = {7.5};
    assert_true(facet_median(one, 1) == 7.5);
    double odd[] = {3.0, -1.0, 2.0, 10.0, 2.5};
    assert_true(facet_median(odd, 5) == 2.5);
    /* sorted in place */
    assert_true(odd[0] == -1.0 && odd[1] == 2.0 && odd[2] == 2.5 && odd[3] == 3.0 && odd[4] == 10.0);
    double even[] = {4.0, 1.0, 3.0, 2.0};
    assert_true(facet_median(even, 4) == 2.5);
    double two[] = {9.0, 1.0};
    assert_true(facet_median(two, 2) == 5.0);
    double ties[] = {2.0, 2.0, 1.0, 2.0, 8.0, 8.0};
    assert_true(facet_median(ties, 6) == 2.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_median)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
