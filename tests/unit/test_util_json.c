/* test_util_json.c — JSON with integers beyond 64 bits kept exact (util/json.h).
 * Expected texts are Python's: json.dumps(json.loads(text), separators=(",", ":")),
 * CPython 3.11, which carries such integers exactly (reals are written with jansson's 17
 * significant digits, which read back to the same double). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

/* parse exactly, write back, compare with Python's compact dump */
static void roundtrip(const char *text, const char *want) {
    json_t *v = NULL;
    facet_error err = {0};
    assert_int_equal(facet_json_parse_exact(text, strlen(text), "t", &v, &err), FACET_OK);
    char *out = facet_json_dumps_exact(v);
    assert_non_null(out);
    assert_string_equal(out, want);
    free(out);
    json_decref(v);
}

static void test_big_integers_exact(void **state) {
    (void)state;
    roundtrip("{\"max\": 18446744073709551615, \"min\": -9223372036854775809, "
              "\"edge\": [9223372036854775807, -9223372036854775808], \"f\": 0.5}",
              "{\"max\":18446744073709551615,\"min\":-9223372036854775809,"
              "\"edge\":[9223372036854775807,-9223372036854775808],\"f\":0.5}");
    /* a string that spells a marker stays a string; keys are never rewritten */
    roundtrip("{\"18446744073709551616\": \"\\u0000i123\", \"s\": \"\\u0000s\", "
              "\"n\": 123456789012345678901}",
              "{\"18446744073709551616\":\"\\u0000i123\",\"s\":\"\\u0000s\","
              "\"n\":123456789012345678901}");
    json_t *v = NULL;
    facet_error err = {0};
    const char *t = "[18446744073709551616, \"\\u0000i7\", 3]";
    assert_int_equal(facet_json_parse_exact(t, strlen(t), "t", &v, &err), FACET_OK);
    assert_string_equal(facet_json_exact_int(json_array_get(v, 0)), "18446744073709551616");
    assert_null(facet_json_exact_int(json_array_get(v, 1)));
    size_t n;
    const char *s = facet_json_exact_string(json_array_get(v, 1), &n);
    assert_int_equal(n, 3);
    assert_memory_equal(s, "\0i7", 3);
    assert_null(facet_json_exact_int(json_array_get(v, 2)));
    json_decref(v);
    /* what JSON forbids stays an error: a leading zero, a real beyond double */
    const char *bad[] = {"[012345678901234567890123]", "[1e999]", "[18446744073709551615,]", NULL};
    for (int i = 0; bad[i]; i++) {
        assert_int_equal(facet_json_parse_exact(bad[i], strlen(bad[i]), "t", &v, &err),
                         FACET_E_PARSE);
        assert_non_null(strstr(err.message, "t:1:"));
    }
    /* without JSON_ALLOW_NUL a NUL is refused as jansson refuses it */
    json_error_t je;
    const char *nul = "[\"a\\u0000\", 18446744073709551615]";
    assert_null(facet_json_loadb_exact(nul, strlen(nul), 0, &je));
    v = facet_json_loadb_exact(nul + 12, strlen(nul + 12) - 1, JSON_DECODE_ANY, &je);
    assert_non_null(v); /* the big integer alone, no NUL: accepted */
    assert_string_equal(facet_json_exact_int(v), "18446744073709551615");
    json_decref(v);
    /* an escaped backslash before "u0000" is text, not a NUL: accepted (Python's
     * json.loads gives the 6 characters \u0000) */
    const char *bs = "[\"\\\\u0000\", 18446744073709551615]";
    v = facet_json_loadb_exact(bs, strlen(bs), 0, &je);
    assert_non_null(v);
    assert_string_equal(json_string_value(json_array_get(v, 0)), "\\u0000");
    assert_string_equal(facet_json_exact_int(json_array_get(v, 1)), "18446744073709551615");
    json_decref(v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_big_integers_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
