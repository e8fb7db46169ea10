/* test_server_chat.c — the assistant message of a chat completion built from generated
 * text (srv_chat_build_message / _delta): plain content, and tool calls in the three
 * syntaxes facet parses, with the tool_choice opening prepended. Expected shapes follow
 * the OpenAI Chat Completions reference (message.tool_calls[i] = {id, type: "function",
 * function: {name, arguments: JSON string}}, finish_reason "tool_calls"; streamed
 * tool_calls carry an "index"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/chat_bridge.h"

static json_t *build(facet_toolcall_format fmt, int active, const char *prefix,
                     const char *text, const char **finish) {
    *finish = "stop";
    json_t *m = srv_chat_build_message(fmt, active, prefix, text, strlen(text), finish);
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "role")), "assistant");
    return m;
}

static void expect_call(json_t *m, size_t i, const char *name, const char *args_json) {
    json_t *calls = json_object_get(m, "tool_calls");
    assert_true(json_is_array(calls));
    json_t *c = json_array_get(calls, i);
    assert_string_equal(json_string_value(json_object_get(c, "type")), "function");
    assert_true(json_is_string(json_object_get(c, "id")));
    json_t *fn = json_object_get(c, "function");
    assert_string_equal(json_string_value(json_object_get(fn, "name")), name);
    /* arguments: a JSON string holding the arguments object */
    json_t *got = json_loads(json_string_value(json_object_get(fn, "arguments")), 0, NULL);
    json_t *want = json_loads(args_json, 0, NULL);
    assert_non_null(got);
    assert_true(json_equal(got, want));
    json_decref(got);
    json_decref(want);
}

static void test_plain_content(void **state) {
    (void)state;
    const char *fin;
    json_t *m = build(FACET_TOOLCALL_HERMES, 0, "", "Hello <tool_call>x", &fin);
    assert_string_equal(json_string_value(json_object_get(m, "content")), "Hello <tool_call>x");
    assert_null(json_object_get(m, "tool_calls"));
    assert_string_equal(fin, "stop");
    json_decref(m);
}

static void test_hermes(void **state) {
    (void)state;
    const char *fin;
    json_t *m = build(FACET_TOOLCALL_HERMES, 1, "",
                      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                      "\"Paris\"}}\n</tool_call>", &fin);
    expect_call(m, 0, "get_weather", "{\"city\": \"Paris\"}");
    assert_true(json_is_null(json_object_get(m, "content")));
    assert_string_equal(fin, "tool_calls");
    json_decref(m);
    /* tool_choice named: the opening was part of the prompt */
    m = build(FACET_TOOLCALL_HERMES, 1, "<tool_call>\n{\"name\": \"f\", \"arguments\": ",
              "{\"a\": 1}}\n</tool_call>", &fin);
    expect_call(m, 0, "f", "{\"a\": 1}");
    assert_string_equal(fin, "tool_calls");
    json_decref(m);
    /* no complete call: the text, opening included, is the content */
    m = build(FACET_TOOLCALL_HERMES, 1, "<tool_call>\n{\"name\": \"", "oops", &fin);
    assert_string_equal(json_string_value(json_object_get(m, "content")),
                        "<tool_call>\n{\"name\": \"oops");
    assert_string_equal(fin, "stop");
    json_decref(m);
}

static void test_llama3_and_mistral(void **state) {
    (void)state;
    const char *fin;
    json_t *m = build(FACET_TOOLCALL_LLAMA3, 1, "{\"name\": \"",
                      "lookup\", \"parameters\": {\"q\": \"cats\"}}", &fin);
    expect_call(m, 0, "lookup", "{\"q\": \"cats\"}");
    assert_string_equal(fin, "tool_calls");
    json_decref(m);
    m = build(FACET_TOOLCALL_MISTRAL, 1, "",
              "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", "
              "\"arguments\": {\"x\": [1]}}]", &fin);
    expect_call(m, 0, "a", "{}");
    expect_call(m, 1, "b", "{\"x\": [1]}");
    json_decref(m);
}

static void test_stream_delta(void **state) {
    (void)state;
    const char *fin = "stop";
    const char *t = "Sure. <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";
    json_t *d = srv_chat_build_delta(FACET_TOOLCALL_HERMES, 1, "", t, strlen(t), &fin);
    assert_non_null(d);
    assert_null(json_object_get(d, "role"));
    assert_string_equal(json_string_value(json_object_get(d, "content")), "Sure.");
    json_t *c = json_array_get(json_object_get(d, "tool_calls"), 0);
    assert_int_equal(json_integer_value(json_object_get(c, "index")), 0);
    assert_string_equal(fin, "tool_calls");
    json_decref(d);
}

/* Tool-call ids are unique: the same output twice (two requests, or two choices of
 * n=2) and two calls in one output each get their own id (they were a hash of the
 * text, so equal outputs shared one). */
static void test_call_ids_are_unique(void **state) {
    (void)state;
    const char *fin;
    const char *t = "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"a\", "
                    "\"arguments\": {}}]";
    json_t *m1 = build(FACET_TOOLCALL_MISTRAL, 1, "", t, &fin);
    json_t *m2 = build(FACET_TOOLCALL_MISTRAL, 1, "", t, &fin);
    const char *ids[4];
    for (int i = 0; i < 4; i++) {
        json_t *calls = json_object_get(i < 2 ? m1 : m2, "tool_calls");
        ids[i] = json_string_value(json_object_get(json_array_get(calls, (size_t)(i % 2)), "id"));
        assert_non_null(ids[i]);
        assert_int_equal(strncmp(ids[i], "call_", 5), 0);
        assert_int_equal(strlen(ids[i]), 5 + 24);
        for (int k = 0; k < i; k++) assert_string_not_equal(ids[i], ids[k]);
    }
    json_decref(m1);
    json_decref(m2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_content),
        cmocka_unit_test(test_hermes),
        cmocka_unit_test(test_llama3_and_mistral),
        cmocka_unit_test(test_stream_delta),
        cmocka_unit_test(test_call_ids_are_unique),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
