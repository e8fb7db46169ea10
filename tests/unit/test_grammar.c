/* test_grammar.c — the grammar engine of facet_grammar.h: GBNF parse errors (line,
 * column, what was expected), the matcher on strings worked out by hand, the JSON-schema
 * compiler (accepted and rejected documents, refused keywords), and the sampler mask. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "facet_grammar.h"
#include "facet_sampler.h"

static facet_grammar *parse_ok(const char *text) {
    facet_grammar *g = NULL;
    facet_error err = {0};
    facet_status st = facet_grammar_parse(text, strlen(text), &g, &err);
    if (st != FACET_OK) fail_msg("%s", err.message);
    return g;
}

/* 1 when the grammar accepts `s` whole (a complete sentence), 0 otherwise. */
static int accepts(const facet_grammar *g, const char *s) {
    facet_grammar_matcher *m = NULL;
    facet_error err;
    assert_int_equal(facet_grammar_matcher_create(g, &m, &err), FACET_OK);
    int ok = facet_grammar_matcher_accept(m, s, strlen(s)) == 1 && facet_grammar_matcher_complete(m);
    facet_grammar_matcher_free(m);
    return ok;
}

static void expect_error(const char *text, facet_status want, const char *needle) {
    facet_grammar *g = NULL;
    facet_error err = {0};
    assert_int_equal(facet_grammar_parse(text, strlen(text), &g, &err), want);
    assert_null(g);
    if (!strstr(err.message, needle)) fail_msg("message '%s' lacks '%s'", err.message, needle);
}

static void test_parse_errors(void **state) {
    (void)state;
    expect_error("root ::= \"abc", FACET_E_PARSE, "grammar:1:14: expected '\"' closing the literal");
    expect_error("root ::= x\nx ::= [a-", FACET_E_PARSE, "grammar:2:10:");
    expect_error("root ::= ( \"a\" ", FACET_E_PARSE, "')' closing the group");
    expect_error("root ::= \"a\"{3,1}", FACET_E_PARSE, "{m,n} with n >= m");
    expect_error("root ::= \"a\"{20000}", FACET_E_LIMIT, "over 10000");
    expect_error("root ::= foo", FACET_E_FORMAT, "grammar:1:10: rule 'foo' is used but not defined");
    expect_error("a ::= \"x\"", FACET_E_FORMAT, "no rule named 'root'");
    expect_error("root ::= root \"a\" | \"b\"", FACET_E_FORMAT, "'root' is left-recursive");
    expect_error("root ::= \"\\q\"", FACET_E_PARSE, "expected an escape");
    expect_error("root ::= [z-a]", FACET_E_PARSE, "range");
    expect_error("root ::= \"a\"\nroot ::= \"b\"", FACET_E_FORMAT, "defined twice");
    expect_error("", FACET_E_PARSE, "expected a rule");
    expect_error("root = \"a\"", FACET_E_PARSE, "expected '::='");
}

static void test_matcher(void **state) {
    (void)state;
    facet_grammar *g = parse_ok(
        "root ::= \"{\" pair (\",\" pair)* \"}\"   # comment\n"
        "pair ::= [a-z]+ \":\" ( \"true\" | num )\n"
        "num ::= \"-\"? [0-9]{1,3}\n");
    assert_true(accepts(g, "{a:true}"));
    assert_true(accepts(g, "{ab:-12,c:999}"));
    assert_false(accepts(g, "{ab:1234}"));  /* {1,3} */
    assert_false(accepts(g, "{A:1}"));      /* [a-z] */
    assert_false(accepts(g, "{a:1"));       /* incomplete */
    assert_false(accepts(g, "{a:1}}"));     /* trailing */
    assert_false(accepts(g, "{:1}"));       /* + needs one */
    /* a prefix is accepted but not complete; a rejected byte leaves the matcher as it was */
    facet_grammar_matcher *m = NULL;
    facet_error err;
    assert_int_equal(facet_grammar_matcher_create(g, &m, &err), FACET_OK);
    assert_int_equal(facet_grammar_matcher_accept(m, "{a:", 3), 1);
    assert_int_equal(facet_grammar_matcher_accept(m, "x", 1), 0);
    assert_int_equal(facet_grammar_matcher_accept(m, "tr", 2), 1);
    assert_false(facet_grammar_matcher_complete(m));
    assert_int_equal(facet_grammar_matcher_accept(m, "ue}", 3), 1);
    assert_true(facet_grammar_matcher_finished(m));
    facet_grammar_matcher_free(m);
    facet_grammar_free(g);

    /* negated classes, escapes, UTF-8 code points, '.' */
    g = parse_ok("root ::= [^\"\\n]* \"\\u00e9\" . [\\x41-\\x43]");
    assert_true(accepts(g, "h\xc3\xa9llo \xc3\xa9\xe2\x82\xac" "B"));
    assert_false(accepts(g, "a\"\xc3\xa9xA"));
    assert_false(accepts(g, "\xc3\xa9xD"));
    facet_grammar_free(g);
    /* alternatives with empty branches and nested groups */
    g = parse_ok("root ::= (\"a\" | ) (\"b\" (\"c\" | \"d\")+)?");
    assert_true(accepts(g, ""));
    assert_true(accepts(g, "a"));
    assert_true(accepts(g, "bcdc"));
    assert_false(accepts(g, "ab"));
    facet_grammar_free(g);
}

static facet_grammar *schema(const char *json) {
    char *gbnf = NULL;
    facet_error err = {0};
    if (facet_json_schema_to_gbnf(json, strlen(json), &gbnf, &err) != FACET_OK)
        fail_msg("%s", err.message);
    facet_grammar *g = parse_ok(gbnf);
    free(gbnf);
    return g;
}

static void test_json_schema(void **state) {
    (void)state;
    facet_grammar *g = schema(
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":5},"
        "\"age\":{\"type\":\"integer\"},\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\"]},"
        "\"maxItems\":2},\"ok\":{\"type\":[\"boolean\",\"null\"]}},\"required\":[\"name\",\"ok\"]}");
    assert_true(accepts(g, "{\"name\":\"bob\",\"ok\":true}"));
    assert_true(accepts(g, "{\"name\": \"b\\\"b\", \"age\": -3, \"tags\": [\"a\", \"b\"], \"ok\": null}"));
    assert_true(accepts(g, "{\"name\":\"\",\"tags\":[],\"ok\":false}"));
    assert_false(accepts(g, "{\"ok\":true}"));                          /* name required */
    assert_false(accepts(g, "{\"name\":\"toolong\",\"ok\":true}"));     /* maxLength */
    assert_false(accepts(g, "{\"name\":\"b\",\"tags\":[\"a\",\"a\",\"a\"],\"ok\":true}"));
    assert_false(accepts(g, "{\"name\":\"b\",\"tags\":[\"c\"],\"ok\":true}")); /* enum */
    assert_false(accepts(g, "{\"name\":\"b\",\"age\":01,\"ok\":true}"));
    assert_false(accepts(g, "{\"name\":\"b\",\"ok\":true,\"x\":1}"));   /* no extras */
    facet_grammar_free(g);
    /* $defs with recursion, anyOf, const, numbers */
    g = schema("{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"number\"},"
               "\"next\":{\"anyOf\":[{\"$ref\":\"#/$defs/node\"},{\"const\":null}]}},"
               "\"required\":[\"v\",\"next\"]}},\"$ref\":\"#/$defs/node\"}");
    assert_true(accepts(g, "{\"v\":1.5e3,\"next\":{\"v\":-0.25,\"next\":null}}"));
    assert_false(accepts(g, "{\"v\":1.,\"next\":null}"));
    facet_grammar_free(g);
    g = parse_ok(facet_grammar_json_object_gbnf());
    assert_true(accepts(g, "{\"a\": [1, {\"b\": null}], \"c\": \"\\u00e9\"}"));
    assert_false(accepts(g, "[1]"));
    assert_false(accepts(g, "{\"a\":\"\\ud800\"}")); /* a lone surrogate escape */
    facet_grammar_free(g);
    /* refusals name the keyword and where it is */
    const char *bad = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"pattern\":\"x\"}}}";
    char *gbnf = NULL;
    facet_error err = {0};
    assert_int_equal(facet_json_schema_to_gbnf(bad, strlen(bad), &gbnf, &err), FACET_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "keyword 'pattern' at /properties/a"));
    bad = "{\"$ref\":\"#/$defs/missing\"}";
    assert_int_equal(facet_json_schema_to_gbnf(bad, strlen(bad), &gbnf, &err), FACET_E_FORMAT);
    bad = "{\"type\":";
    assert_int_equal(facet_json_schema_to_gbnf(bad, strlen(bad), &gbnf, &err), FACET_E_PARSE);
    assert_null(gbnf);
}

/* The sampler obeys a mask at temperature 0 and 1. */
static void test_sampler_mask(void **state) {
    (void)state;
    float logits[6] = {5, 4, 3, 2, 1, 0};
    uint8_t allowed[6] = {0, 0, 1, 0, 1, 0};
    for (int t = 0; t < 2; t++) {
        facet_sampler_params p;
        facet_sampler_params_default(&p);
        p.temperature = (float)t;
        facet_sampler *s = NULL;
        facet_error err;
        assert_int_equal(facet_sampler_create(&p, 6, &s, &err), FACET_OK);
        for (int i = 0; i < 50; i++) {
            facet_sampler_set_mask(s, allowed);
            int32_t id = facet_sampler_sample(s, logits);
            assert_true(id == 2 || id == 4);
            if (t == 0) assert_int_equal(id, 2);
        }
        assert_int_equal(facet_sampler_sample(s, logits) == 0 || t == 1, 1); /* mask was one call */
        facet_sampler_free(s);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_matcher),
        cmocka_unit_test(test_json_schema),
        cmocka_unit_test(test_sampler_mask),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
