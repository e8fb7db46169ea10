/* test_server_reasoning.c — splitting <think>...</think> from a reasoning model's
 * answer (server/reasoning.h), with hand-worked spans: the whole split (a stream's
 * end), and a stream's split at every prefix, which must never shrink and must end
 * equal to the whole split. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/reasoning.h"

/* The whole split of `text` as strings. */
static void split(const char *text, int open, char *reasoning, char *content, int *has) {
    srv_reasoning_split sp;
    srv_reasoning_split_text(text, strlen(text), open, 1, &sp);
    memcpy(reasoning, text + sp.r_beg, sp.r_end - sp.r_beg);
    reasoning[sp.r_end - sp.r_beg] = 0;
    memcpy(content, text + sp.c_beg, sp.c_end - sp.c_beg);
    content[sp.c_end - sp.c_beg] = 0;
    *has = sp.has_reasoning;
}

static void expect(const char *text, int open, const char *want_r, const char *want_c,
                   int want_has) {
    char r[256], c[256];
    int has;
    split(text, open, r, c, &has);
    assert_string_equal(r, want_r);
    assert_string_equal(c, want_c);
    assert_int_equal(has, want_has);
}

static void test_whole(void **state) {
    (void)state;
    /* Qwen3's shape: <think>\n...\n</think>\n\nanswer */
    expect("<think>\nLet me add.\n</think>\n\n4", 0, "\nLet me add.\n", "4", 1);
    expect("  <think>a</think>b", 0, "a", "b", 1);
    expect("no thinking here", 0, "", "no thinking here", 0);
    expect("<thin", 0, "", "<thin", 0);         /* a cut-off start is content */
    expect("x <think>a</think>", 0, "", "x <think>a</think>", 0); /* not at the start */
    expect("<think>cut by max_tokens", 0, "cut by max_tokens", "", 1);
    expect("<think>\n\n</think>\n\n", 0, "\n\n", "", 1);
    /* a prompt that opened the block: the output starts in reasoning */
    expect("step 1</think>\n\nanswer", 1, "step 1", "answer", 1);
    expect("all reasoning </thi", 1, "all reasoning </thi", "", 1);
    expect("a</think>b</think>c", 1, "a", "b</think>c", 1);
}

static void test_prompt_open(void **state) {
    (void)state;
    const char *p1 = "<|im_start|>assistant\n<think>\n";
    const char *p2 = "<|im_start|>assistant\n<think>\n\n</think>\n\n";
    const char *p3 = "<|im_start|>assistant\n";
    assert_true(srv_reasoning_open(p1, strlen(p1)));
    assert_false(srv_reasoning_open(p2, strlen(p2)));
    assert_false(srv_reasoning_open(p3, strlen(p3)));
    assert_true(srv_reasoning_template("{{ '<think>' }}x{{ '</think>' }}"));
    assert_false(srv_reasoning_template("{{ '<think>' }} only"));
    assert_false(srv_reasoning_template(NULL));
}

/* At every prefix of `text` the spans only grow, the sent pieces join to the whole
 * split, and a tag is never sent in part. */
static void stream(const char *text, int open) {
    size_t n = strlen(text);
    char r[256] = "", c[256] = "", wr[256], wc[256];
    size_t rl = 0, cl = 0, prev_rb = 0, prev_cb = 0;
    int has, started_r = 0, started_c = 0;
    for (size_t k = 0; k <= n; k++) {
        srv_reasoning_split sp;
        srv_reasoning_split_text(text, k, open, k == n, &sp);
        size_t nr = sp.r_end - sp.r_beg, nc = sp.c_end - sp.c_beg;
        if (started_r) assert_int_equal(sp.r_beg, prev_rb);
        if (started_c) assert_int_equal(sp.c_beg, prev_cb);
        assert_true(nr >= rl);
        assert_true(nc >= cl);
        if (nr > rl) {
            assert_memory_equal(r, text + sp.r_beg, rl);
            memcpy(r + rl, text + sp.r_beg + rl, nr - rl);
            rl = nr;
            r[rl] = 0;
        }
        if (nc > cl) {
            assert_memory_equal(c, text + sp.c_beg, cl);
            memcpy(c + cl, text + sp.c_beg + cl, nc - cl);
            cl = nc;
            c[cl] = 0;
        }
        if (rl) started_r = 1, prev_rb = sp.r_beg;
        if (cl) started_c = 1, prev_cb = sp.c_beg;
        if (k < n) assert_null(strstr(r, "</")); /* no tag sent in part mid-stream */
    }
    split(text, open, wr, wc, &has);
    assert_string_equal(r, wr);
    assert_string_equal(c, wc);
}

static void test_stream(void **state) {
    (void)state;
    stream("<think>\nLet me add.\n</think>\n\n4 and 5", 0);
    stream("  <think>a</think>b", 0);
    stream("no thinking here", 0);
    stream("<thin", 0);
    stream("<think>cut by max_tokens", 0);
    stream("step 1</think>\n\nanswer", 1);
    stream("a</think>b</think>c", 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole),
        cmocka_unit_test(test_prompt_open),
        cmocka_unit_test(test_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
