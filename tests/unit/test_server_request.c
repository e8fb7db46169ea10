/* test_server_request.c — OpenAI request validation of `facet serve`
 * (oai_request_parse) and the Prometheus rendering of its metrics. Expected statuses,
 * params and fields follow the OpenAI API reference (Completions, Chat Completions,
 * error object) and the Prometheus text exposition format 0.0.4. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/metrics.h"
#include "server/oai_request.h"
#include "util/json.h"

static const oai_limits LIM = {"m", 512, 16, 16, 20};

static void parse_ok(const char *body, oai_kind kind, oai_request *r) {
    oai_error e;
    if (oai_request_parse(body, strlen(body), kind, &LIM, r, &e))
        fail_msg("refused %s: %d %s", body, e.http_status, e.message);
}

static void parse_bad(const char *body, oai_kind kind, int status, const char *param,
                      const char *word) {
    oai_request r;
    oai_error e;
    assert_int_equal(oai_request_parse(body, strlen(body), kind, &LIM, &r, &e), -1);
    if (e.http_status != status || strcmp(e.param, param) || !strstr(e.message, word))
        fail_msg("%s -> %d param '%s' message '%s' (expected %d '%s' '%s')", body,
                 e.http_status, e.param, e.message, status, param, word);
    assert_null(r.root);
    char *j = oai_error_json(&e);
    assert_non_null(j);
    assert_non_null(strstr(j, "\"error\""));
    free(j);
}

static void test_completion_fields(void **state) {
    (void)state;
    oai_request r;
    parse_ok("{\"model\":\"m\",\"prompt\":\"hi\",\"max_tokens\":7,\"temperature\":0.5,"
             "\"top_p\":0.9,\"n\":3,\"stream\":true,\"stream_options\":{\"include_usage\":true},"
             "\"logprobs\":2,\"stop\":[\"a\",\"bc\"],\"presence_penalty\":0.5,"
             "\"frequency_penalty\":-0.5,\"logit_bias\":{\"5\":-100,\"7\":2.5},\"seed\":42,"
             "\"top_k\":40,\"min_p\":0.1,\"repetition_penalty\":1.1,\"user\":\"u\","
             "\"best_of\":3,\"echo\":false,\"suffix\":null}",
             OAI_COMPLETION, &r);
    assert_string_equal(r.prompt_text, "hi");
    assert_int_equal(r.max_tokens, 7);
    assert_int_equal(r.n, 3);
    assert_true(r.stream && r.include_usage && r.logprobs);
    assert_int_equal(r.top_logprobs, 2);
    assert_int_equal(r.n_stops, 2);
    assert_string_equal(r.stops[1], "bc");
    assert_true(r.sampling.temperature == 0.5f && r.sampling.top_p == 0.9f);
    assert_true(r.sampling.top_k == 40 && r.sampling.min_p == 0.1f);
    assert_true(r.sampling.repetition_penalty == 1.1f);
    assert_true(r.sampling.presence_penalty == 0.5f && r.sampling.frequency_penalty == -0.5f);
    assert_int_equal(r.sampling.n_logit_bias, 2);
    assert_int_equal(r.sampling.logit_bias[1].token, 7);
    assert_true(r.sampling.logit_bias[1].bias == 2.5f);
    assert_true(r.seed_given && r.sampling.seed == 42);
    oai_request_free(&r);
    /* defaults; token-id prompt; a batch of one prompt; a single stop string */
    parse_ok("{\"model\":\"m\",\"prompt\":[1,2,511],\"stop\":\"x\",\"temperature\":null}",
             OAI_COMPLETION, &r);
    assert_int_equal(r.n_prompt_ids, 3);
    assert_int_equal(r.prompt_ids[2], 511);
    assert_int_equal(r.max_tokens, -1);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.n_stops, 1);
    assert_false(r.logprobs || r.stream || r.seed_given);
    assert_true(r.sampling.temperature == 1.0f && r.sampling.top_p == 1.0f);
    oai_request_free(&r);
    parse_ok("{\"model\":\"m\",\"prompt\":[\"one\"]}", OAI_COMPLETION, &r);
    assert_string_equal(r.prompt_text, "one");
    oai_request_free(&r);
    /* a batch of one token-id prompt, as the OpenAI client sends a list of token lists */
    parse_ok("{\"model\":\"m\",\"prompt\":[[1,403]]}", OAI_COMPLETION, &r);
    assert_int_equal(r.n_prompt_ids, 2);
    assert_int_equal(r.prompt_ids[1], 403);
    oai_request_free(&r);
}

static void test_chat_fields(void **state) {
    (void)state;
    oai_request r;
    parse_ok("{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"s\"},"
             "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"u\"}]},"
             "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[]},"
             "{\"role\":\"tool\",\"content\":\"r\",\"tool_call_id\":\"1\"}],"
             "\"max_completion_tokens\":9,\"logprobs\":true,\"top_logprobs\":5,"
             "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
             "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}},"
             "\"response_format\":{\"type\":\"text\"},\"parallel_tool_calls\":true}",
             OAI_CHAT, &r);
    assert_int_equal(json_array_size(r.messages), 4);
    assert_int_equal(r.max_tokens, 9);
    assert_true(r.logprobs);
    assert_int_equal(r.top_logprobs, 5);
    assert_int_equal(r.tool_choice, OAI_TOOL_NAMED);
    assert_string_equal(r.tool_name, "f");
    assert_non_null(r.tools);
    oai_request_free(&r);
    parse_ok("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
             "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}",
             OAI_CHAT, &r);
    assert_int_equal(r.tool_choice, OAI_TOOL_AUTO);
    oai_request_free(&r);
    parse_ok("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", OAI_CHAT,
             &r);
    assert_int_equal(r.tool_choice, OAI_TOOL_NONE);
    assert_null(r.tools);
    oai_request_free(&r);
}

/* One model is served: a request without "model" (or with null) means it. */
static void test_model_optional(void **state) {
    (void)state;
    oai_request r;
    parse_ok("{\"prompt\":\"a\"}", OAI_COMPLETION, &r);
    assert_string_equal(r.prompt_text, "a");
    oai_request_free(&r);
    parse_ok("{\"model\":null,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
             OAI_CHAT, &r);
    oai_request_free(&r);
    parse_bad("{\"model\":\"other\",\"prompt\":\"a\"}", OAI_COMPLETION, 404, "model",
              "The model 'other' does not exist (this server serves 'm')");
}

/* The one status -> HTTP mapping: the server's own failures are 500 server_error, what
 * the request asked for is 400 invalid_request_error. */
static void test_status_mapping(void **state) {
    (void)state;
    const struct { facet_status st; int http; const char *type; } rows[] = {
        {FACET_E_NOMEM, 500, "server_error"},
        {FACET_E_INTERNAL, 500, "server_error"},
        {FACET_E_NUMERIC, 500, "server_error"},
        {FACET_E_IO, 500, "server_error"},
        {FACET_E_INVALID_ARGUMENT, 400, "invalid_request_error"},
        {FACET_E_UTF8, 400, "invalid_request_error"},
        {FACET_E_TEMPLATE, 400, "invalid_request_error"},
        {FACET_E_LIMIT, 400, "invalid_request_error"},
        {FACET_E_CONTEXT, 400, "invalid_request_error"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *type = NULL;
        assert_int_equal(oai_http_status(rows[i].st, &type), rows[i].http);
        assert_string_equal(type, rows[i].type);
    }
    oai_error e;
    assert_int_equal(oai_fail_status(&e, FACET_E_NOMEM, "messages", NULL, "x=%d", 3), -1);
    assert_int_equal(e.http_status, 500);
    assert_string_equal(e.type, "server_error");
    assert_string_equal(e.param, "messages");
    assert_string_equal(e.message, "x=3");
}

static void test_errors(void **state) {
    (void)state;
    const oai_kind C = OAI_COMPLETION, H = OAI_CHAT;
    parse_bad("{\"model\":\"m\",", C, 400, "", "JSON");
    parse_bad("[]", C, 400, "", "object");
    parse_bad("{\"model\":3,\"prompt\":\"a\"}", C, 400, "model", "string");
    parse_bad("{\"model\":\"x\",\"prompt\":\"a\"}", C, 404, "model", "'x'");
    parse_bad("{\"model\":\"m\"}", C, 400, "prompt", "required");
    parse_bad("{\"model\":\"m\",\"prompt\":[]}", C, 400, "prompt", "empty");
    parse_bad("{\"model\":\"m\",\"prompt\":[1,512]}", C, 400, "prompt", "512");
    parse_bad("{\"model\":\"m\",\"prompt\":[\"a\",\"b\"]}", C, 400, "prompt", "2 prompts");
    parse_bad("{\"model\":\"m\",\"prompt\":[[1,2],[3]]}", C, 400, "prompt", "2 prompts");
    parse_bad("{\"model\":\"m\",\"prompt\":[[\"a\"]]}", C, 400, "prompt",
              "'prompt[0]' must be an integer token id, got string");
    parse_bad("{\"model\":\"m\",\"prompt\":[[]]}", C, 400, "prompt", "empty");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\\u0000b\"}", C, 400, "",
              "a string in the body holds \\u0000 (NUL), which facet does not accept (line 1, column");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"max_tokens\":0}", C, 400, "max_tokens", "0");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"max_tokens\":1.5}", C, 400, "max_tokens",
              "integer");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"n\":17}", C, 400, "n", "17");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"temperature\":\"hot\"}", C, 400,
              "temperature", "number");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"temperature\":-0.5}", C, 400, "temperature",
              "-0.5");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"top_p\":2}", C, 400, "top_p", "2");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"min_p\":-1}", C, 400, "min_p", "-1");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"top_k\":-1}", C, 400, "top_k", "-1");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"presence_penalty\":3}", C, 400,
              "presence_penalty", "3");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"repetition_penalty\":0}", C, 400,
              "repetition_penalty", "0");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"stream\":1}", C, 400, "stream", "boolean");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"stop\":[1]}", C, 400, "stop", "string");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"stop\":\"\"}", C, 400, "stop", "empty");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"stop\":[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\","
              "\"7\",\"8\",\"9\",\"10\",\"11\",\"12\",\"13\",\"14\",\"15\",\"16\",\"17\"]}",
              C, 400, "stop", "17");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"logit_bias\":{\"x\":1}}", C, 400,
              "logit_bias", "'x'");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"logit_bias\":{\"3\":101}}", C, 400,
              "logit_bias", "101");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"logprobs\":21}", C, 400, "logprobs", "21");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"echo\":true,\"stream\":true}", C, 400, "echo", "echo");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"best_of\":2}", C, 400, "best_of", "best_of");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"suffix\":\"z\"}", C, 400, "suffix", "suffix");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"functions\":[]}", C, 400, "functions",
              "Unrecognized request argument supplied: functions");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"prompt\":\"b\"}", C, 400, "", "duplicate");
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"seed\":1.5}", C, 400, "seed", "integer");
    parse_bad("{\"model\":\"m\",\"messages\":[]}", H, 400, "messages", "at least one");
    parse_bad("{\"model\":\"m\"}", H, 400, "messages", "required");
    parse_bad("{\"model\":\"m\",\"messages\":{}}", H, 400, "messages", "array");
    parse_bad("{\"model\":\"m\",\"messages\":[1]}", H, 400, "messages", "object");
    parse_bad("{\"model\":\"m\",\"messages\":[{\"content\":\"x\"}]}", H, 400, "messages", "role");
    parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":5}]}", H, 400,
              "messages", "content");
    parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
              "\"image_url\"}]}]}", H, 400, "messages", "text part");
    parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
              "\"max_completion_tokens\":0}", H, 400, "max_completion_tokens", "0");
    parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
              "\"top_logprobs\":3}", H, 400, "top_logprobs", "logprobs");
    parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
              "\"tool_choice\":\"required\"}", H, 400, "tool_choice", "tools");
    parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
              "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
              "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}}",
              H, 400, "tool_choice", "'g'");
    parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
              "\"tools\":[{\"type\":\"code\"}]}", H, 400, "tools", "tools[0]");
    parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
              "\"response_format\":{\"type\":\"xml\"}}", H, 400, "response_format",
              "must be text, json_object");
    parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
              "\"prompt\":\"a\"}", H, 400, "prompt", "Unrecognized");
}

/* response_format and grammar are constraints on /v1/completions too (both are in its
 * field list): compiled at validation, a bad one a 400 naming the parameter, never
 * accepted and ignored. */
static void test_completion_constraints(void **state) {
    (void)state;
    oai_request r;
    parse_ok("{\"prompt\":\"x\",\"response_format\":{\"type\":\"json_object\"}}",
             OAI_COMPLETION, &r);
    assert_non_null(r.grammar);
    oai_request_free(&r);
    parse_ok("{\"prompt\":\"x\",\"grammar\":\"root ::= \\\"yes\\\" | \\\"no\\\"\"}",
             OAI_COMPLETION, &r);
    assert_non_null(r.grammar);
    oai_request_free(&r);
    parse_ok("{\"prompt\":\"x\",\"response_format\":{\"type\":\"text\"}}", OAI_COMPLETION,
             &r);
    assert_null(r.grammar);
    oai_request_free(&r);
    parse_bad("{\"prompt\":\"x\",\"response_format\":{\"type\":\"json_schema\"}}",
              OAI_COMPLETION, 400, "response_format", "json_schema.schema");
    parse_bad("{\"prompt\":\"x\",\"grammar\":\"root ::= foo\"}", OAI_COMPLETION, 400,
              "grammar", "foo");
}

/* JSON integers beyond 64 bits (issue 17): exact inside tools and messages, written back
 * exactly for the chat template; refused by name anywhere else. */
static void test_big_integers(void **state) {
    (void)state;
    oai_request r;
    parse_ok("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
             "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":"
             "{\"maximum\":18446744073709551615,\"minimum\":-18446744073709551616}}}]}",
             OAI_CHAT, &r);
    char *t = facet_json_dumps_exact(r.tools);
    assert_string_equal(t, "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":"
                           "{\"maximum\":18446744073709551615,\"minimum\":-18446744073709551616}}}]");
    free(t);
    oai_request_free(&r);
    parse_bad("{\"model\":\"m\",\"prompt\":\"a\",\"max_tokens\":99999999999999999999999}",
              OAI_COMPLETION, 400, "max_tokens", "JSON integer 99999999999999999999999");
    parse_bad("{\"model\":\"m\",\"prompt\":[1,18446744073709551615]}", OAI_COMPLETION, 400,
              "prompt", "beyond 64 bits");
    /* inside messages and tools a big integer is kept, but it is no text: a field that
     * must be a string refuses it and names the type the body spelled */
    parse_bad("{\"messages\":[{\"role\":\"user\",\"content\":18446744073709551616}]}",
              OAI_CHAT, 400, "messages", "must be a string or an array, got integer");
    parse_bad("{\"messages\":[{\"role\":18446744073709551616,\"content\":\"x\"}]}", OAI_CHAT,
              400, "messages", "'messages[0].role' must be a string");
    parse_bad("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
              "\"text\":-99999999999999999999}]}]}",
              OAI_CHAT, 400, "messages", "is not a text part");
    parse_bad("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":"
              "\"function\",\"function\":{\"name\":18446744073709551616}}]}",
              OAI_CHAT, 400, "tools", "'tools[0]' must be");
}

static void test_metrics_text(void **state) {
    (void)state;
    srv_metrics m;
    srv_metrics_init(&m);
    m.requests_total = 3;
    m.batch_max = 5;
    srv_hist_observe(&m.ttft, 0.003);
    srv_hist_observe(&m.ttft, 0.2);
    srv_hist_observe(&m.ttft, 100);
    char *t = srv_metrics_render(&m);
    assert_non_null(t);
    assert_non_null(strstr(t, "# TYPE facet_requests_total counter\nfacet_requests_total 3\n"));
    assert_non_null(strstr(t, "facet_batch_size_max 5\n"));
    /* cumulative buckets: 0.003 falls in le=0.005, 0.2 in le=0.25, 100 only in +Inf */
    assert_non_null(strstr(t, "facet_time_to_first_token_seconds_bucket{le=\"0.0025\"} 0\n"));
    assert_non_null(strstr(t, "facet_time_to_first_token_seconds_bucket{le=\"0.005\"} 1\n"));
    assert_non_null(strstr(t, "facet_time_to_first_token_seconds_bucket{le=\"0.25\"} 2\n"));
    assert_non_null(strstr(t, "facet_time_to_first_token_seconds_bucket{le=\"30\"} 2\n"));
    assert_non_null(strstr(t, "facet_time_to_first_token_seconds_bucket{le=\"+Inf\"} 3\n"));
    assert_non_null(strstr(t, "facet_time_to_first_token_seconds_count 3\n"));
    assert_non_null(strstr(t, "facet_time_to_first_token_seconds_sum 100.203"));
    free(t);
    srv_metrics_destroy(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_completion_fields),
        cmocka_unit_test(test_chat_fields),
        cmocka_unit_test(test_model_optional),
        cmocka_unit_test(test_status_mapping),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_big_integers),
        cmocka_unit_test(test_completion_constraints),
        cmocka_unit_test(test_metrics_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
