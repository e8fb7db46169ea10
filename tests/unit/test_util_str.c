/* test_util_str.c — facet_str and FACET_VEC: appends, formatting past the small buffer,
 * the sticky limit, take/free, and vector growth keeping every element. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/str.h"
#include "util/vec.h"

static void test_str_append(void **state) {
    (void)state;
    facet_str s = {0};
    assert_string_equal(facet_str_cstr(&s), "");
    assert_int_equal(facet_str_appendz(&s, "ab"), 0);
    assert_int_equal(facet_str_putc(&s, 'c'), 0);
    assert_int_equal(facet_str_append(&s, "\0d", 2), 0);
    assert_int_equal(s.len, 5);
    assert_memory_equal(s.data, "abc\0d", 6); /* NUL-terminated after the embedded NUL */
    assert_int_equal(facet_str_appendf(&s, "%d-%s", 42, "x"), 0);
    assert_int_equal(s.len, 9);
    assert_memory_equal(s.data + 5, "42-x", 5);
    /* longer than the 256-byte formatting buffer */
    char big[1000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(facet_str_appendf(&s, "[%s]", big), 0);
    assert_int_equal(s.len, 9 + 1001);
    assert_int_equal(s.data[9], '[');
    assert_int_equal(s.data[9 + 1000], ']');
    assert_int_equal(s.data[s.len], '\0');
    facet_str_truncate(&s, 3);
    assert_string_equal(s.data, "abc");
    char *p = facet_str_take(&s);
    assert_string_equal(p, "abc");
    free(p);
    assert_null(s.data);
    assert_int_equal(s.len, 0);
    p = facet_str_take(&s); /* empty: an allocated "" */
    assert_non_null(p);
    assert_string_equal(p, "");
    free(p);
}

static void test_str_limit(void **state) {
    (void)state;
    facet_str s = {.limit = 4};
    assert_int_equal(facet_str_appendz(&s, "abc"), 0);
    assert_int_equal(facet_str_appendz(&s, "de"), -1); /* would reach 5 */
    assert_int_equal(s.failed, FACET_STR_OVER);
    assert_string_equal(s.data, "abc"); /* nothing of the failed append */
    assert_int_equal(facet_str_putc(&s, 'd'), -1); /* sticky */
    assert_null(facet_str_take(&s));
    assert_int_equal(s.limit, 4);
    assert_int_equal(s.failed, FACET_STR_OK);
    assert_int_equal(facet_str_append(&s, "x", SIZE_MAX), -1); /* overflow checked */
    facet_str_free(&s);
}

typedef FACET_VEC(int32_t) ids_vec;

static void test_vec(void **state) {
    (void)state;
    ids_vec v = {0};
    for (int32_t i = 0; i < 1000; i++) assert_int_equal(facet_vec_push(&v, i * 3), 0);
    assert_int_equal(v.len, 1000);
    assert_true(v.cap >= 1000);
    for (int32_t i = 0; i < 1000; i++) assert_int_equal(v.data[i], i * 3);
    assert_int_equal(facet_vec_reserve(&v, 5000), 0);
    assert_true(v.cap >= 5000);
    assert_int_equal(v.data[999], 2997);
    assert_int_equal(facet_vec_reserve(&v, SIZE_MAX / 2), -1); /* bytes overflow */
    assert_int_equal(v.len, 1000);
    facet_vec_free(&v);
    assert_null(v.data);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_str_append),
                                       cmocka_unit_test(test_str_limit),
                                       cmocka_unit_test(test_vec)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
