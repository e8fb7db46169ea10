/*
 * Allocation failure through the engine (alloc_fail.h): the bundled stories260k model's
 * load (without the weight cache, writing it, and mapping it), session creation,
 * prefill and decode, each run with its n-th allocation failing for every n.
 *
 * Each failed run must return FACET_E_NOMEM (a load may also succeed when only the
 * weight cache could not be written or read: the weights are converted instead, as for
 * any cache problem) and leave the object usable: a session whose prefill or decode
 * failed holds the tokens it held before, and running the same step again without a
 * failure gives bit for bit the logits of a run that never failed. Leaks and bad frees
 * are ASan's (the suite's build-asan runs with detect_leaks=1).
 *
 * Every sweep is exhaustive (every n up to the first run that completes); the model runs
 * on one thread, so the allocation order is fixed.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "alloc_fail.h"
#include "facet.h"

#define MODEL_DIR FACET_SOURCE_DIR "/models/stories260k"
#define VOCAB 512

static char tmp_model[64]; /* a copy of the bundled model, for its own weight cache */

static void copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

/* Remove the files of folder `dir` (not recursive) and the folder. */
static void remove_dir(const char *dir) {
    char path[512];
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

/* Remove the copy's weight caches: beside it, and in the user cache folder the writer
 * falls back to (XDG_CACHE_HOME points into the copy). */
static void drop_cache(void) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/.facet-cache", tmp_model);
    remove_dir(dir);
    snprintf(dir, sizeof dir, "%s/xdg/facet", tmp_model);
    remove_dir(dir);
    snprintf(dir, sizeof dir, "%s/xdg", tmp_model);
    remove_dir(dir);
}

static int setup(void **state) {
    (void)state;
    strcpy(tmp_model, "/tmp/facet-nomem-XXXXXX");
    if (!mkdtemp(tmp_model)) return -1;
    char xdg[128];
    snprintf(xdg, sizeof xdg, "%s/xdg", tmp_model);
    setenv("XDG_CACHE_HOME", xdg, 1);
    static const char *files[] = {"config.json", "generation_config.json", "model.safetensors",
                                  "tokenizer.json", "tokenizer_config.json",
                                  "special_tokens_map.json"};
    char from[512], to[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(from, sizeof from, "%s/%s", MODEL_DIR, files[i]);
        snprintf(to, sizeof to, "%s/%s", tmp_model, files[i]);
        copy_file(from, to);
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    drop_cache();
    remove_dir(tmp_model);
    return 0;
}

/* ---- model load ---- */

typedef struct {
    int no_cache, drop; /* drop: remove the cache before each run (the write path) */
    facet_model *m;
} load_ctx;

static int load_op(void *p) {
    load_ctx *c = p;
    if (c->drop) drop_cache();
    facet_error err = {0};
    facet_load_options lo = {.n_threads = 1, .no_cache = c->no_cache};
    c->m = (facet_model *)0x1;
    facet_status st = facet_model_load(tmp_model, &lo, &c->m, &err);
    if (st != FACET_OK && st != FACET_E_NOMEM)
        fail_msg("allocation %ld: load failed with %s: %s", alloc_fail_target(),
                 facet_status_name(st), err.message);
    if (st != FACET_OK && !err.message[0]) fail_msg("allocation %ld: no message", alloc_fail_target());
    return (int)st;
}

static void load_check(void *p, long n, int st) {
    load_ctx *c = p;
    if (st == FACET_OK) {
        assert_non_null(c->m);
        facet_model_info info;
        facet_model_get_info(c->m, &info);
        assert_int_equal(info.vocab_size, VOCAB);
        /* a run that failed nothing used the cache as asked */
        if (!n && info.weight_cache_note) print_message("%s\n", info.weight_cache_note);
        if (!n)
            assert_int_equal(info.weight_cache, c->no_cache ? FACET_WCACHE_OFF
                                                 : c->drop   ? FACET_WCACHE_WRITTEN
                                                             : FACET_WCACHE_HIT);
        facet_model_free(c->m);
    } else {
        assert_null(c->m);
    }
}

static void sweep_load(int no_cache, int drop) {
    load_ctx c = {.no_cache = no_cache, .drop = drop};
    if (!no_cache && !drop) { /* the hit path: a valid cache to map */
        load_ctx w = {.drop = 1};
        assert_int_equal(load_op(&w), FACET_OK);
        load_check(&w, 0, FACET_OK);
    }
    long runs = alloc_fail_sweep(load_op, load_check, &c, 0, 1);
    print_message("load (%s): %ld runs\n", no_cache ? "no cache" : drop ? "cache written" : "cache mapped",
                  runs);
}

static void test_load_no_cache(void **state) {
    (void)state;
    sweep_load(1, 0);
}

static void test_load_cache_write(void **state) {
    (void)state;
    sweep_load(0, 1);
}

static void test_load_cache_hit(void **state) {
    (void)state;
    sweep_load(0, 0);
}

/* ---- session, prefill, decode on one loaded model ---- */

static facet_model *model;

static int setup_model(void **state) {
    (void)state;
    facet_load_options lo = {.n_threads = 1, .no_cache = 1};
    return facet_model_load(MODEL_DIR, &lo, &model, NULL) == FACET_OK ? 0 : -1;
}

static int teardown_model(void **state) {
    (void)state;
    facet_model_free(model);
    return 0;
}

static int session_op(void *p) {
    facet_session **s = p;
    facet_session_options so = {.n_seq_max = 3, .n_ctx = 200};
    *s = (facet_session *)0x1;
    return (int)facet_session_create(model, &so, s, NULL);
}

static void session_check(void *p, long n, int st) {
    (void)n;
    facet_session **s = p;
    if (st == FACET_OK) {
        assert_non_null(*s);
        facet_session_free(*s);
    } else {
        assert_int_equal(st, FACET_E_NOMEM);
        assert_null(*s);
    }
}

static void test_session_create(void **state) {
    (void)state;
    facet_session *s;
    long runs = alloc_fail_sweep(session_op, session_check, &s, 0, 1);
    print_message("session: %ld runs\n", runs);
}

/* A prompt of 100 ids (past the first KV capacity of 64, so the prefill grows the
 * cache) and the decode steps that follow. */
enum { N_PROMPT = 100, N_STEPS = 40, N_SEQ = 2 };
static int32_t prompt[N_PROMPT];

static void make_prompt(void) {
    prompt[0] = 1;
    for (int i = 1; i < N_PROMPT; i++) prompt[i] = (int32_t)((i * 37 + 11) % VOCAB);
}

typedef struct {
    facet_session *s;
    int seq;
    size_t n;                 /* prompt ids to prefill                                */
    float logits[N_SEQ * VOCAB];
    float want[N_SEQ * VOCAB]; /* the logits of the run that never failed             */
    int len0[N_SEQ];          /* sequence lengths before the step                     */
    int32_t hist[N_SEQ][256]; /* each sequence's ids so far (to rebuild it)           */
    int32_t tokens[N_SEQ];
} step_ctx;

static int prefill_op(void *p) {
    step_ctx *c = p;
    return (int)facet_prefill(c->s, c->seq, prompt, c->n, c->logits, NULL);
}

static int decode_op(void *p) {
    step_ctx *c = p;
    static const int32_t seqs[N_SEQ] = {0, 1};
    return (int)facet_decode(c->s, N_SEQ, seqs, c->tokens, c->logits, NULL);
}

static facet_session *new_session(void) {
    facet_session *s;
    facet_session_options so = {.n_seq_max = N_SEQ, .n_ctx = 200};
    assert_int_equal(facet_session_create(model, &so, &s, NULL), FACET_OK);
    return s;
}

/* After a failed step: NOMEM, the sequences as they were, and the step run again
 * without a failure gives the logits of the run that never failed. */
static void step_check(step_ctx *c, long n, int st, int (*op)(void *), size_t n_logits) {
    if (n == 0) {
        assert_int_equal(st, FACET_OK);
        assert_memory_equal(c->logits, c->want, n_logits * sizeof(float));
        return;
    }
    if (st != FACET_E_NOMEM) fail_msg("allocation %ld failed: status %d, expected NOMEM", n, st);
    for (int q = 0; q < N_SEQ; q++) assert_int_equal(facet_seq_length(c->s, q), c->len0[q]);
    assert_int_equal(op(c), FACET_OK);
    assert_memory_equal(c->logits, c->want, n_logits * sizeof(float));
    /* back to the state before the step, in a fresh session (so that the next run
     * allocates what this one's retry did: cache and batch scratch) */
    facet_session_free(c->s);
    c->s = new_session();
    for (int q = 0; q < N_SEQ; q++) {
        if (c->len0[q])
            assert_int_equal(facet_prefill(c->s, q, c->hist[q], (size_t)c->len0[q], NULL, NULL),
                             FACET_OK);
    }
}

static void prefill_check(void *p, long n, int st) { step_check(p, n, st, prefill_op, VOCAB); }
static void decode_check(void *p, long n, int st) {
    step_check(p, n, st, decode_op, N_SEQ * VOCAB);
}

/* Prefill from nothing (cache and scratch allocated), and onto a sequence that holds 30
 * tokens while the other holds 64 (the scratch exists, the cache grows). */
static void test_prefill(void **state) {
    (void)state;
    make_prompt();
    for (int k = 0; k < 2; k++) {
        step_ctx *c = calloc(1, sizeof *c);
        c->s = new_session();
        c->n = N_PROMPT;
        memcpy(c->hist[0], prompt, sizeof prompt);
        memcpy(c->hist[1], prompt, sizeof prompt);
        if (k == 1) {
            assert_int_equal(facet_prefill(c->s, 1, prompt, 64, NULL, NULL), FACET_OK);
            assert_int_equal(facet_prefill(c->s, 0, prompt, 30, NULL, NULL), FACET_OK);
            c->len0[0] = 30;
            c->len0[1] = 64;
            c->n = N_PROMPT - 30;
        }
        /* the logits of a run that never fails: a fresh session in the same state */
        facet_session *ref = new_session();
        for (int q = 0; q < N_SEQ; q++)
            if (c->len0[q]) facet_prefill(ref, q, prompt, (size_t)c->len0[q], NULL, NULL);
        assert_int_equal(facet_prefill(ref, 0, prompt, c->n, c->want, NULL), FACET_OK);
        facet_session_free(ref);
        long runs = alloc_fail_sweep(prefill_op, prefill_check, c, 0, 1);
        print_message("prefill %d: %ld runs\n", k, runs);
        assert_true(runs > 1);
        facet_session_free(c->s);
        free(c);
    }
}

/* Batched decode of both sequences, swept at every step of a generation that crosses
 * the cache's growth from 64 to 128 positions. */
static void test_decode(void **state) {
    (void)state;
    make_prompt();
    step_ctx *c = calloc(1, sizeof *c);
    c->s = new_session();
    facet_session *ref = new_session();
    memcpy(c->hist[1], prompt, 39 * sizeof *prompt);
    long total = 0;
    for (int step = 0; step < N_STEPS; step++) {
        for (int q = 0; q < N_SEQ; q++) {
            c->len0[q] = facet_seq_length(c->s, q);
            c->tokens[q] = prompt[(40 + step + q * 7) % N_PROMPT];
        }
        /* prompt lengths 1 and 40: sequence 1 crosses 64 positions at step 24 */
        if (step == 0) {
            assert_int_equal(facet_prefill(c->s, 1, prompt, 39, NULL, NULL), FACET_OK);
            assert_int_equal(facet_prefill(ref, 1, prompt, 39, NULL, NULL), FACET_OK);
            c->len0[1] = 39;
        }
        static const int32_t seqs[N_SEQ] = {0, 1};
        assert_int_equal(facet_decode(ref, N_SEQ, seqs, c->tokens, c->want, NULL), FACET_OK);
        /* the rebuild after a failure prefills the prompt: keep the decoded ids in it */
        total += alloc_fail_sweep(decode_op, decode_check, c, 0, 1);
        for (int q = 0; q < N_SEQ; q++) c->hist[q][c->len0[q]] = c->tokens[q];
    }
    print_message("decode: %ld runs over %d steps\n", total, N_STEPS);
    facet_session_free(ref);
    facet_session_free(c->s);
    free(c);
}

int main(void) {
    const struct CMUnitTest load[] = {
        cmocka_unit_test(test_load_no_cache),
        cmocka_unit_test(test_load_cache_write),
        cmocka_unit_test(test_load_cache_hit),
    };
    const struct CMUnitTest engine[] = {
        cmocka_unit_test(test_session_create),
        cmocka_unit_test(test_prefill),
        cmocka_unit_test(test_decode),
    };
    int rc = cmocka_run_group_tests(load, setup, teardown);
    return rc | cmocka_run_group_tests(engine, setup_model, teardown_model);
}
