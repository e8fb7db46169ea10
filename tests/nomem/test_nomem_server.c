/*
 * Allocation failure in a server request (alloc_fail.h): what an HTTP thread of `facet
 * serve` does for a completion (also with echo: oai_echo_patch) and for a chat
 * completion with tools, short of the socket — parse and validate the body (oai_request_parse), build the prompt (render
 * the chat template, tokenize), copy a finished job's outputs (srv_output_sync), build
 * the whole response, a streaming chunk and an error body, and serialize them.
 *
 * A failed run must end as the server would answer it: a 500 server_error "out of
 * memory" from parsing or prompt building, or a NULL from a response builder (the
 * server then answers 500); a response that is produced must be byte for byte the one
 * of a run that never failed (no silently dropped field or array element). jansson's
 * allocations are counted while the responses are built (not while JSON is parsed —
 * the body, a tool call's arguments — or serialized: see alloc_fail.h). The completion
 * is swept exhaustively (every n up to the first run without a failure); the chat
 * requests, whose response building makes most of their allocations (jansson's, one
 * per byte of the logprobs' "bytes" arrays: ~2,200 in all answered with text, ~10,700
 * answered with a tool call), densely over the first 1,500 (parse, prompt, the copy
 * and the first tokens' logprobs) and then every 5th (text) or 13th (tool call), to
 * keep the suite's ASan run near 15 s of CPU.
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc_fail.h"
#include "facet_chat.h"
#include "facet_tokenizer.h"
#include "server/chat_bridge.h"
#include "server/http.h"
#include "server/oai_echo.h"
#include "server/oai_request.h"
#include "server/oai_response.h"
#include "server/sched.h"

#define MODEL_DIR FACET_SOURCE_DIR "/models/stories260k"
#define CHAT_DIR FACET_TEST_DATA "/chat/configs__Qwen__Qwen3-1.7B__resaved"

static srv_server srv;
static srv_output job_out; /* a finished choice, as the engine thread leaves it */

/* Fill job_out with the outputs of `text` tokenized: ids, log-probabilities, top-2
 * alternatives, the raw text ends. */
static void make_output(const char *text) {
    srv_output_free(&job_out);
    int32_t *ids;
    size_t n;
    assert_int_equal(facet_tokenize(srv.tok, text, strlen(text), 0, &ids, &n, NULL), FACET_OK);
    for (size_t i = 0; i < n; i++) {
        char *piece;
        size_t len;
        assert_int_equal(facet_detokenize(srv.tok, ids, i + 1, 0, &piece, &len, NULL), FACET_OK);
        assert_int_equal(facet_vec_push(&job_out.ids, ids[i]), 0);
        assert_int_equal(facet_vec_push(&job_out.logprob, -0.25 * (double)(i + 1)), 0);
        assert_int_equal(facet_vec_push(&job_out.top_ids, ids[i]), 0);
        assert_int_equal(facet_vec_push(&job_out.top_ids, (ids[i] + 7) % 512), 0);
        assert_int_equal(facet_vec_push(&job_out.top_lp, -0.25 * (double)(i + 1)), 0);
        assert_int_equal(facet_vec_push(&job_out.top_lp, -3.5), 0);
        assert_int_equal(facet_vec_push(&job_out.raw_end, len), 0);
        facet_str_free(&job_out.raw);
        assert_int_equal(facet_str_append(&job_out.raw, piece, len), 0);
        free(piece);
    }
    assert_int_equal(facet_str_append(&job_out.text, job_out.raw.data, job_out.raw.len), 0);
    job_out.finish = SRV_FINISH_STOP;
    free(ids);
}

typedef struct {
    oai_kind kind;
    const char *body;
    char *out;        /* the serialized responses of a complete run */
    const char *want; /* those of a run that never failed */
    oai_error e;
    int failed_at;    /* 1 parse / 2 prompt / 3 copy / 4 build: where the run stopped */
} req_ctx;

/* Serialize v (NULL: a builder ran out of memory). jansson's allocations are not
 * counted inside json_dumps (see alloc_fail.h); facet's own still are. */
static char *dump(json_t *v) {
    alloc_fail_json(0);
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(v);
    alloc_fail_json(1);
    return s;
}

/* Tool-call ids are fresh per call (unique across requests): blank their 24 hex digits
 * so that the runs compare on everything else. */
static void mask_call_ids(char *s) {
    for (char *p = s; (p = strstr(p, "\"call_"));) {
        p += 6;
        for (int i = 0; i < 24 && p[i] && p[i] != '"'; i++) p[i] = 'x';
    }
}

static int request_op(void *p) {
    req_ctx *c = p;
    c->out = NULL;
    c->failed_at = 0;
    alloc_fail_json(0);
    oai_request r;
    if (oai_request_parse(c->body, strlen(c->body), c->kind, &srv.limits, &r, &c->e))
        return c->failed_at = 1, -1;
    int32_t *ids = NULL;
    size_t n = 0;
    facet_error fe;
    int rc = 0;
    if (c->kind == OAI_CHAT) {
        rc = srv_chat_prompt(&srv, &r, &ids, &n, &c->e);
    } else if (facet_tokenize(srv.tok, r.prompt_text, r.prompt_len, 1, &ids, &n, &fe)) {
        rc = oai_fail_status(&c->e, fe.status, "prompt", NULL, "%s", fe.message);
    }
    if (rc) {
        oai_request_free(&r);
        return c->failed_at = 2, -1;
    }
    /* the finished job, as respond_whole sees it */
    srv_choice choice = {.slot = -1};
    srv_job job = {.prompt = ids, .n_prompt = (int)n, .n_choices = 1, .choices = &choice};
    /* echo: the prompt's log-probabilities, as the engine thread leaves them */
    static double p_lp[256], p_top_lp[512];
    static int32_t p_top_ids[512];
    if (r.echo && n <= 256) {
        for (size_t t = 0; t < n; t++) {
            p_lp[t] = -0.5 * (double)t;
            p_top_ids[2 * t] = ids[t];
            p_top_ids[2 * t + 1] = (ids[t] + 3) % 512;
            p_top_lp[2 * t] = p_lp[t];
            p_top_lp[2 * t + 1] = -4.0;
        }
        job.plp_from = 1;
        job.p_lp = p_lp;
        job.p_top_ids = p_top_ids;
        job.p_top_lp = p_top_lp;
    }
    if (srv_output_sync(&choice.out, &job_out)) {
        srv_output_free(&choice.out);
        free(ids);
        oai_request_free(&r);
        return c->failed_at = 3, -1;
    }
    alloc_fail_json(1);
    oai_meta m = {c->kind, "id-1", 1700000000, "m", srv.tok, 1, 2, 0};
    const char *finish = oai_finish_name(choice.out.finish);
    const char *text = facet_str_cstr(&choice.out.text);
    size_t len = choice.out.text.len;
    json_t *msg = NULL, *delta = NULL;
    if (c->kind == OAI_CHAT) {
        /* these parse the call's JSON with jansson: its allocations not counted here */
        alloc_fail_json(0);
        msg = srv_chat_build_message(srv.toolcall_format, r.tools_active, r.tool_prefix, text,
                                     len, &finish);
        delta = srv_chat_build_delta(srv.toolcall_format, r.tools_active, r.tool_prefix, text,
                                     len, &finish);
        alloc_fail_json(1);
    }
    int ok = c->kind != OAI_CHAT || (msg && delta);
    char *whole = NULL, *chunk = NULL, *err_body = NULL;
    if (ok) {
        json_t *resp = oai_response(&m, &job, &msg, &finish);
        if (resp && r.echo && oai_echo_patch(resp, &m, &job, r.prompt_text, r.prompt_len, 0)) {
            json_decref(resp);
            resp = NULL;
        }
        whole = dump(resp);
        msg = NULL; /* taken */
        size_t off = 0;
        json_t *lp = oai_logprobs(&m, &choice.out, 0, (int)choice.out.ids.len, ids[n - 1], &off);
        chunk = lp ? dump(oai_chunk(&m, 0, text, len, delta, lp, finish)) : NULL;
        if (!lp) json_decref(delta);
        delta = NULL;
        oai_error e;
        oai_fail(&e, 400, "invalid_request_error", "stop", NULL, "a message with \"quotes\"");
        alloc_fail_json(0); /* it serializes too */
        err_body = oai_error_json(&e);
        alloc_fail_json(1);
    }
    json_decref(msg);
    json_decref(delta);
    alloc_fail_json(0);
    rc = 0;
    if (whole && chunk && err_body) {
        size_t total = strlen(whole) + strlen(chunk) + strlen(err_body) + 3;
        c->out = malloc(total);
        if (c->out) snprintf(c->out, total, "%s\n%s\n%s", whole, chunk, err_body);
        if (c->out) mask_call_ids(c->out);
    }
    if (!c->out) rc = -1, c->failed_at = 4;
    free(whole);
    free(chunk);
    free(err_body);
    srv_output_free(&choice.out);
    free(ids);
    oai_request_free(&r);
    return rc;
}

static void request_check(void *p, long n, int rc) {
    req_ctx *c = p;
    if (rc == 0) {
        if (c->want && strcmp(c->out, c->want)) {
            size_t at = 0;
            while (c->out[at] == c->want[at]) at++;
            size_t from = at > 60 ? at - 60 : 0;
            fail_msg("allocation %ld failed, and the response differs at byte %zu:\n%.120s\n"
                     "expected\n%.120s", n, at, c->out + from, c->want + from);
        }
        if (c->want) free(c->out);
        return;
    }
    if (!n) fail_msg("request failed without an allocation failure: %s", c->e.message);
    if (c->failed_at <= 2 &&
        (c->e.http_status != 500 || strcmp(c->e.type, "server_error") ||
         !strstr(c->e.message, "memory")))
        fail_msg("allocation %ld failed (step %d): %d %s: %s, expected 500 out of memory", n,
                 c->failed_at, c->e.http_status, c->e.type, c->e.message);
}

static void sweep(oai_kind kind, const char *body, const char *what, long dense, long stride) {
    req_ctx c = {.kind = kind, .body = body};
    assert_int_equal(request_op(&c), 0); /* the reference */
    c.want = c.out;
    long runs = alloc_fail_sweep(request_op, request_check, &c, dense, stride);
    print_message("%s: %ld runs\n", what, runs);
    free((char *)c.want);
}

static int setup(void **state) {
    (void)state;
    if (facet_tokenizer_load(MODEL_DIR, &srv.tok, NULL)) return -1;
    if (facet_chat_template_load(CHAT_DIR, &srv.chat, NULL)) return -1;
    srv.toolcall_format = facet_toolcall_format_detect(srv.chat);
    srv.limits = (oai_limits){"m", 512, 16, 16, 20};
    snprintf(srv.model_id, sizeof srv.model_id, "m");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    srv_output_free(&job_out);
    facet_chat_template_free(srv.chat);
    facet_tokenizer_free(srv.tok);
    return 0;
}

static void test_completion(void **state) {
    (void)state;
    make_output(" there was a little girl named Lily.");
    sweep(OAI_COMPLETION,
          "{\"model\":\"m\",\"prompt\":\"Once upon a time,\",\"max_tokens\":7,"
          "\"temperature\":0.5,\"stop\":[\"a\",\"bc\"],\"logit_bias\":{\"5\":-100,\"7\":2.5},"
          "\"logprobs\":2,\"seed\":42,\"top_k\":40}",
          "completion", 0, 1);
}

/* echo (oai_echo.h): the prompt's tokens and log-probabilities ahead of the text's */
static void test_completion_echo(void **state) {
    (void)state;
    make_output(" there was a cat.");
    sweep(OAI_COMPLETION,
          "{\"model\":\"m\",\"prompt\":\"Once upon a time,\",\"max_tokens\":5,"
          "\"echo\":true,\"logprobs\":2,\"temperature\":0}",
          "completion, echo", 1500, 3);
}

static void test_chat_with_tools(void **state) {
    (void)state;
    static const char *body =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
        "{\"role\":\"user\",\"content\":\"Weather in Paris?\"}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
        "\"description\":\"Weather of a city\",\"parameters\":{\"type\":\"object\","
        "\"properties\":{\"city\":{\"type\":\"string\"},\"n\":{\"type\":\"integer\","
        "\"maximum\":123456789012345678901234567890}},\"required\":[\"city\"]}}}],"
        "\"logprobs\":true,\"top_logprobs\":2,\"stop\":\"\\n\\n\",\"max_tokens\":64}";
    /* the model answers with a call (Qwen3's Hermes syntax), then with plain text */
    make_output("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>");
    sweep(OAI_CHAT, body, "chat, tool call", 1500, 13);
    make_output("It is sunny.");
    sweep(OAI_CHAT, body, "chat, text", 1500, 5);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_completion),
        cmocka_unit_test(test_completion_echo),
        cmocka_unit_test(test_chat_with_tools),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
