/*
 * test_chat_toolcall.c — tool-call parsing from generated text (facet_chat.h), on
 * samples of each format: well-formed, several calls, interleaved text, malformed JSON,
 * partial (truncated) blocks, missing names. Expected arguments are the json.dumps form
 * Python gives for json.loads of the same text (", " / ": ", floats as repr).
 * Format detection reads the template/tokenizer facts of real checkpoints
 * (tests/data/chat) and of small synthetic ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>

#include "facet_chat.h"

typedef struct want_call {
    const char *name, *arguments;
} want_call;

static void check(facet_toolcall_format f, const char *text, const char *content, size_t n, const want_call *calls) {
    facet_toolcall_result r;
    facet_error err = {0};
    assert_int_equal(facet_toolcall_parse(f, text, strlen(text), &r, &err), FACET_OK);
    if (strcmp(r.content, content) || r.n_calls != n)
        fprintf(stderr, "text [%s]\n content [%s] want [%s], %zu calls want %zu\n", text, r.content, content, r.n_calls, n);
    assert_string_equal(r.content, content);
    assert_int_equal(r.n_calls, n);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(r.calls[i].name, calls[i].name);
        assert_string_equal(r.calls[i].arguments, calls[i].arguments);
        assert_non_null(strstr(r.calls[i].id, "call_"));
    }
    facet_toolcall_result_free(&r);
}

#define H FACET_TOOLCALL_HERMES
#define L FACET_TOOLCALL_LLAMA3
#define M FACET_TOOLCALL_MISTRAL

static void test_hermes(void **state) {
    (void)state;
    const want_call paris[] = {{"get_weather", "{\"city\": \"Paris\", \"days\": 3}"}};
    check(H, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>", "", 1, paris);
    check(H, "<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\",\"days\":3}}</tool_call><|im_end|>",
          "<|im_end|>", 1, paris);
    /* interleaved text and two calls */
    const want_call two[] = {{"a", "{}"}, {"b", "{\"x\": [1, 2.5, null, true], \"u\": \"é\\n\"}"}};
    check(H,
          "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\nand\n<tool_call>\n"
          "{\"name\": \"b\", \"arguments\": {\"x\": [1, 2.50, null, true], \"u\": \"\\u00e9\\n\"}}\n</tool_call>\nDone.",
          "Let me check.\n\nand\n\nDone.", 2, two);
    /* floats re-printed as Python does */
    const want_call fl[] = {{"f", "{\"x\": 100000.0, \"y\": 1e-07, \"z\": 0.1}"}};
    check(H, "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1e5, \"y\": 0.0000001, \"z\": 0.1}}</tool_call>", "", 1, fl);
    /* arguments given as a JSON string are kept verbatim */
    const want_call str[] = {{"f", "{\"q\":1}"}};
    check(H, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"q\\\":1}\"}</tool_call>", "", 1, str);
    /* missing arguments -> {} */
    const want_call none[] = {{"ping", "{}"}};
    check(H, "<tool_call>{\"name\": \"ping\"}</tool_call>", "", 1, none);
}

static void test_hermes_malformed(void **state) {
    (void)state;
    const char *const same[] = {
        "<tool_call>{\"name\": \"x\", \"arguments\": {</tool_call>",              /* bad JSON */
        "Sure <tool_call>{\"name\": \"x\", \"arguments\": {}}",                    /* unclosed */
        "<tool_call>{\"arguments\": {}}</tool_call>",                              /* no name */
        "<tool_call>{\"name\": 3, \"arguments\": {}}</tool_call>",                 /* name not a string */
        "<tool_call>{\"name\": \"x\", \"arguments\": [1]}</tool_call>",            /* args not an object */
        "<tool_call>{\"name\": \"x\", \"arguments\": \"not json\"}</tool_call>",   /* args string not JSON */
        "<tool_call>{\"name\": \"x\"} trailing</tool_call>",                       /* junk after the JSON */
        "<tool_call></tool_call>",
        "<tool_call>",
        "</tool_call>{\"name\": \"x\"}",
        "plain text with no call",
        "",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) check(H, same[i], same[i], 0, NULL);
    /* one good block and one bad one: the bad one stays content */
    const want_call good[] = {{"ok", "{\"a\": 1}"}};
    check(H, "<tool_call>{\"name\": \"ok\", \"arguments\": {\"a\": 1}}</tool_call> <tool_call>{bad}</tool_call>",
          "<tool_call>{bad}</tool_call>", 1, good);
    /* a good block followed by a truncated one */
    check(H, "<tool_call>{\"name\": \"ok\", \"arguments\": {\"a\": 1}}</tool_call>\n<tool_call>{\"name\": \"ne",
          "<tool_call>{\"name\": \"ne", 1, good);
}

static void test_llama3(void **state) {
    (void)state;
    const want_call w[] = {{"get_weather", "{\"city\": \"Paris\"}"}};
    check(L, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "", 1, w);
    check(L, "  {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>", "", 1, w);
    check(L, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eom_id|>", "", 1, w);
    check(L, "Checking now. <|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
          "Checking now.", 1, w);
    const want_call two[] = {{"a", "{\"x\": 1}"}, {"b", "{}"}};
    check(L, "{\"name\": \"a\", \"parameters\": {\"x\": 1}}; {\"name\": \"b\", \"parameters\": {}}", "", 2, two);
    check(L, "[{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": \"b\"}]", "", 2, two);
    const char *const same[] = {
        "Here it is: {\"name\": \"a\", \"parameters\": {}}",           /* JSON inside prose is prose */
        "{\"name\": \"a\", \"parameters\": {",                          /* partial */
        "<|python_tag|>brave_search.call(query=\"paris\")",             /* built-in python-style call */
        "{\"answer\": 42}",                                             /* JSON that is not a call */
        "{\"name\": \"a\", \"parameters\": {}} and then text",
        "<|python_tag|>",
        "[]",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) check(L, same[i], same[i], 0, NULL);
}

static void test_mistral(void **state) {
    (void)state;
    const want_call two[] = {{"f", "{\"a\": \"b\"}"}, {"g", "{}"}};
    check(M, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": \"b\"}}, {\"name\": \"g\", \"arguments\": {}}]</s>",
          "</s>", 2, two);
    check(M, "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"a\": \"b\"}, \"id\": \"abc123def\"}, {\"name\": \"g\"}]", "", 2,
          two);
    const want_call one[] = {{"f", "{\"a\": 1}"}};
    check(M, "[TOOL_CALLS]f[ARGS]{\"a\": 1}", "", 1, one);
    check(M, "Let me look. [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}}]", "Let me look.", 1, one);
    const char *const same[] = {
        "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": ",   /* partial */
        "[TOOL_CALLS]",
        "[TOOL_CALLS] not json",
        "[TOOL_CALLS][{\"arguments\": {}}]",                /* no name */
        "[TOOL_CALLS][{\"name\": \"f\"}, 7]",               /* one entry not a call: none taken */
        "[TOOL_CALLS]f[ARGS]{oops",
        "no calls [TOOL_CALL]",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) check(M, same[i], same[i], 0, NULL);
}

static void test_harmony(void **state) {
    (void)state;
    facet_toolcall_format G = FACET_TOOLCALL_HARMONY;
    facet_toolcall_result r;
    /* official order: channel, then recipient; <|call|> may be cut as a stop token */
    const char *t1 = "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
                     "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>";
    assert_int_equal(facet_toolcall_parse(G, t1, strlen(t1), &r, NULL), FACET_OK);
    assert_int_equal(r.n_calls, 1);
    assert_string_equal(r.calls[0].name, "get_weather");
    assert_string_equal(r.calls[0].arguments, "{\"city\": \"Paris\"}");
    assert_string_equal(r.content, "");
    assert_string_equal(r.reasoning, "Need weather.");
    facet_toolcall_result_free(&r);
    /* recipient in the role part (the corpus template's order), no terminator */
    const char *t2 = "<|start|>assistant to=functions.calc<|channel|>commentary json<|message|>{\"x\": 1}";
    assert_int_equal(facet_toolcall_parse(G, t2, strlen(t2), &r, NULL), FACET_OK);
    assert_int_equal(r.n_calls, 1);
    assert_string_equal(r.calls[0].name, "calc");
    facet_toolcall_result_free(&r);
    /* a final answer: content is the final channel only */
    const char *t3 = "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>It is 21C.<|return|>";
    assert_int_equal(facet_toolcall_parse(G, t3, strlen(t3), &r, NULL), FACET_OK);
    assert_int_equal(r.n_calls, 0);
    assert_string_equal(r.content, "It is 21C.");
    assert_string_equal(r.reasoning, "think");
    facet_toolcall_result_free(&r);
    /* malformed / partial call bodies stay content verbatim */
    const char *t4 = "<|channel|>commentary to=functions.calc json<|message|>{\"x\": ";
    assert_int_equal(facet_toolcall_parse(G, t4, strlen(t4), &r, NULL), FACET_OK);
    assert_int_equal(r.n_calls, 0);
    assert_string_equal(r.content, t4);
    facet_toolcall_result_free(&r);
    /* plain text without harmony markup */
    assert_int_equal(facet_toolcall_parse(G, "just text", 9, &r, NULL), FACET_OK);
    assert_string_equal(r.content, "just text");
    assert_string_equal(r.reasoning, "");
    facet_toolcall_result_free(&r);
}

static void test_none_and_json(void **state) {
    (void)state;
    check(FACET_TOOLCALL_NONE, "<tool_call>{\"name\": \"x\"}</tool_call>", "<tool_call>{\"name\": \"x\"}</tool_call>", 0, NULL);
    facet_toolcall_result r;
    const char *t = "<tool_call>{\"name\": \"f\", \"arguments\": {\"q\": \"a\\\"b\"}}</tool_call>";
    assert_int_equal(facet_toolcall_parse(H, t, strlen(t), &r, NULL), FACET_OK);
    char *js = facet_toolcall_result_json(&r);
    char want[256];
    snprintf(want, sizeof want,
             "[{\"id\":\"%s\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"q\\\": \\\"a\\\\\\\"b\\\"}\"}}]",
             r.calls[0].id);
    assert_string_equal(js, want);
    free(js);
    /* ids are stable for the same text and differ between calls */
    facet_toolcall_result r2;
    assert_int_equal(facet_toolcall_parse(H, t, strlen(t), &r2, NULL), FACET_OK);
    assert_string_equal(r.calls[0].id, r2.calls[0].id);
    facet_toolcall_result_free(&r);
    facet_toolcall_result_free(&r2);
    assert_string_equal(facet_toolcall_format_name(H), "hermes");
    assert_string_equal(facet_toolcall_format_name(L), "llama3");
    assert_string_equal(facet_toolcall_format_name(M), "mistral");
    assert_string_equal(facet_toolcall_format_name(FACET_TOOLCALL_HARMONY), "harmony");
}

static facet_toolcall_format detect_dir(const char *dir) {
    facet_chat_template *t;
    facet_error err;
    if (facet_chat_template_load(dir, &t, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return (facet_toolcall_format)-1;
    }
    facet_toolcall_format f = facet_toolcall_format_detect(t);
    facet_chat_template_free(t);
    return f;
}

static facet_toolcall_format detect_src(const char *src) {
    facet_chat_template *t;
    assert_int_equal(facet_chat_template_from_string(src, NULL, &t, NULL), FACET_OK);
    facet_toolcall_format f = facet_toolcall_format_detect(t);
    facet_chat_template_free(t);
    return f;
}

static void test_special_tokens(void **state) {
    (void)state;
    facet_chat_template *t;
    facet_error err;
    assert_int_equal(facet_chat_template_load(FACET_TEST_DATA "/chat/configs__meta-llama__Llama-3.2-3B-Instruct", &t, &err),
                     FACET_OK);
    assert_string_equal(facet_chat_template_token(t, "bos_token"), "<|begin_of_text|>");
    assert_string_equal(facet_chat_template_token(t, "eos_token"), "<|eot_id|>");
    assert_null(facet_chat_template_token(t, "mask_token"));
    assert_null(facet_chat_template_token(t, "additional_special_tokens"));
    facet_chat_template_free(t);
}

/* One loaded template rendered from several threads at once (the server does this):
 * every render must equal the single-threaded one. Literal strings of the shared AST
 * are copied, never reference-counted, so this is race-free (checked with TSan). */
typedef struct render_job {
    const facet_chat_template *t;
    const char *want;
    int bad;
} render_job;

static void *render_many(void *arg) {
    render_job *j = arg;
    for (int i = 0; i < 200; i++) {
        char *out = NULL;
        if (facet_chat_render(j->t, "[{\"role\": \"user\", \"content\": \"hi\"}]", NULL, 1, NULL, &out, NULL, NULL) ||
            strcmp(out, j->want))
            j->bad++;
        free(out);
    }
    return NULL;
}

static void test_concurrent_render(void **state) {
    (void)state;
    facet_chat_template *t;
    facet_error err;
    assert_int_equal(facet_chat_template_load(FACET_TEST_DATA "/chat/tokenizers__qwen2.5", &t, &err), FACET_OK);
    char *want = NULL;
    assert_int_equal(facet_chat_render(t, "[{\"role\": \"user\", \"content\": \"hi\"}]", NULL, 1, NULL, &want, NULL, &err),
                     FACET_OK);
    pthread_t th[4];
    render_job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (render_job){t, want, 0};
        assert_int_equal(pthread_create(&th[i], NULL, render_many, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(jobs[i].bad, 0);
    }
    free(want);
    facet_chat_template_free(t);
}

static void test_detect(void **state) {
    (void)state;
    /* real templates (facts: which tool-call syntax the template renders) */
    assert_int_equal(detect_dir(FACET_TEST_DATA "/chat/tokenizers__qwen2.5"), H);
    assert_int_equal(detect_dir(FACET_TEST_DATA "/chat/tokenizers__qwen3"), H);
    assert_int_equal(detect_dir(FACET_TEST_DATA "/chat/configs__meta-llama__Llama-3.2-3B-Instruct"), L);
    assert_int_equal(detect_dir(FACET_TEST_DATA "/chat/tokenizers__tinyllama-1.1b-chat-v1.0"), FACET_TOOLCALL_NONE);
    assert_int_equal(detect_dir(FACET_TEST_DATA "/chat/configs__google__gemma-2b-it"), FACET_TOOLCALL_NONE);
    assert_int_equal(detect_dir(FACET_TEST_DATA "/chat/tokenizers__gpt-oss"), FACET_TOOLCALL_HARMONY);
    /* synthetic: the marker in the template, or only among the tokenizer's added tokens */
    assert_int_equal(detect_src("{{ '[TOOL_CALLS]' }}"), M);
    assert_int_equal(detect_src("{{ '<|python_tag|>' }}"), L);
    assert_int_equal(detect_src("{{ messages }}"), FACET_TOOLCALL_NONE);
    char dir[] = "/tmp/facet_tc_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"added_tokens_decoder\": {\"5\": {\"content\": \"[TOOL_CALLS]\", \"special\": true}},"
          " \"chat_template\": \"{{ bos_token }}\", \"bos_token\": \"<s>\"}", f);
    fclose(f);
    assert_int_equal(detect_dir(dir), M);
    remove(path);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hermes), cmocka_unit_test(test_hermes_malformed), cmocka_unit_test(test_llama3),
        cmocka_unit_test(test_mistral), cmocka_unit_test(test_harmony), cmocka_unit_test(test_none_and_json),  cmocka_unit_test(test_detect),
        cmocka_unit_test(test_special_tokens), cmocka_unit_test(test_concurrent_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
