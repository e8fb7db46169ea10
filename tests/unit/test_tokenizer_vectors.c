/*
 * test_tokenizer_vectors.c — the tokenizer against independent oracles:
 *  - models/stories260k/tokenizer_expected.json (ids from Hugging Face tokenizers,
 *    Rust and JS, and decode), all cases;
 *  - every line of vectors.jsonl of each tokenizer under tests/data/tokenizers and,
 *    when present, the big ones under ../shared/corpus/tokenizers (ids recorded from
 *    Hugging Face tokenizers 0.23.2 + transformers rules; decoded and
 *    decoded_skip_special). Prints the count per tokenizer.
 * Each encode is also decoded one id at a time through the stream, which must give the
 * whole decode.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>

#include "facet_tokenizer.h"

static int stream_equals(const facet_tokenizer *tok, const int32_t *ids, size_t n, int skip, const char *want,
                         size_t want_len) {
    facet_detok_stream *s;
    facet_error err;
    if (facet_detok_stream_create(tok, skip, &s, &err)) return 0;
    char *acc = malloc(want_len + 1 + 4096);
    size_t cap = want_len + 4096, len = 0;
    int ok = 1;
    for (size_t i = 0; i <= n && ok; i++) {
        const char *piece;
        size_t pl;
        facet_status st = i < n ? facet_detok_stream_push(s, ids[i], &piece, &pl, &err)
                                : facet_detok_stream_flush(s, &piece, &pl, &err);
        if (st) {
            fprintf(stderr, "  stream error: %s\n", err.message);
            ok = 0;
            break;
        }
        if (len + pl > cap) {
            ok = 0;
            break;
        }
        memcpy(acc + len, piece, pl);
        len += pl;
    }
    if (ok) ok = len == want_len && !memcmp(acc, want, len);
    free(acc);
    facet_detok_stream_free(s);
    return ok;
}

static void print_ids(const char *what, const int32_t *ids, size_t n) {
    fprintf(stderr, "  %s:", what);
    for (size_t i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", (int)ids[i]);
    fprintf(stderr, "\n");
}

/* Run one vectors.jsonl; returns the number of failing lines. */
static int run_vectors(const char *dir) {
    char path[8192];
    if (snprintf(path, sizeof path, "%s/vectors.jsonl", dir) >= (int)sizeof path) return 1;
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    facet_tokenizer *tok;
    facet_error err;
    if (facet_tokenizer_load(dir, &tok, &err)) {
        fprintf(stderr, "%s: load failed: %s\n", dir, err.message);
        fclose(f);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0, total = 0, ok = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) > 0) {
        json_error_t je;
        json_t *j = json_loadb(line, (size_t)got, JSON_ALLOW_NUL, &je);
        if (!j) continue;
        total++;
        json_t *jt = json_object_get(j, "text"), *jids = json_object_get(j, "ids");
        int add = json_is_true(json_object_get(j, "add_special_tokens"));
        const char *text = json_string_value(jt);
        size_t tlen = json_string_length(jt);
        int32_t *ids;
        size_t n;
        int good = 1;
        if (facet_tokenize(tok, text, tlen, add, &ids, &n, &err)) {
            fprintf(stderr, "%s %s: encode error %s\n", dir, json_string_value(json_object_get(j, "id")), err.message);
            json_decref(j);
            continue;
        }
        size_t wn = json_array_size(jids);
        int32_t *want = calloc(wn + 1, sizeof *want);
        for (size_t i = 0; i < wn; i++) want[i] = (int32_t)json_integer_value(json_array_get(jids, i));
        if (wn != n || memcmp(want, ids, n * sizeof *ids)) {
            good = 0;
            fprintf(stderr, "%s [%s add=%d]: ids differ\n", dir, json_string_value(json_object_get(j, "id")), add);
            print_ids("want", want, wn);
            print_ids("got ", ids, n);
        }
        /* the token strings of the ids, as stored in tokenizer.json (the recorded tokens
         * of added tokens with lstrip/rstrip include the whitespace they absorbed) */
        json_t *jtoks = json_object_get(j, "tokens");
        for (size_t i = 0; i < json_array_size(jtoks) && i < wn; i++) {
            const char *want_tok = json_string_value(json_array_get(jtoks, i));
            const char *got_tok = facet_tokenizer_id_to_token(tok, want[i]);
            size_t wl = strlen(want_tok), off = 0;
            while (off < wl && strchr(" \t\r\n", want_tok[off])) off++;
            while (wl > off && strchr(" \t\r\n", want_tok[wl - 1])) wl--;
            int same = got_tok && (!strcmp(got_tok, want_tok) ||
                                   (strlen(got_tok) == wl - off && !memcmp(got_tok, want_tok + off, wl - off)));
            if (!same || facet_tokenizer_token_to_id(tok, got_tok) != want[i]) {
                good = 0;
                fprintf(stderr, "%s [%s]: token %zu: id %d is \"%s\", want \"%s\"\n", dir,
                        json_string_value(json_object_get(j, "id")), i, (int)want[i], got_tok ? got_tok : "(null)", want_tok);
                break;
            }
        }
        const char *keys[2] = {"decoded", "decoded_skip_special"};
        for (int skip = 0; skip < 2; skip++) {
            json_t *wd = json_object_get(j, keys[skip]);
            char *txt;
            size_t tl;
            if (facet_detokenize(tok, want, wn, skip, &txt, &tl, &err)) {
                fprintf(stderr, "%s [%s]: decode error %s\n", dir, json_string_value(json_object_get(j, "id")), err.message);
                good = 0;
                continue;
            }
            if (tl != json_string_length(wd) || memcmp(txt, json_string_value(wd), tl)) {
                good = 0;
                fprintf(stderr, "%s [%s add=%d]: %s differs:\n  want \"%s\"\n  got  \"%s\"\n", dir,
                        json_string_value(json_object_get(j, "id")), add, keys[skip], json_string_value(wd), txt);
            } else if (!stream_equals(tok, want, wn, skip, txt, tl)) {
                good = 0;
                fprintf(stderr, "%s [%s add=%d skip=%d]: streaming decode differs from whole decode\n", dir,
                        json_string_value(json_object_get(j, "id")), add, skip);
            }
            free(txt);
        }
        ok += good;
        free(want);
        free(ids);
        json_decref(j);
    }
    free(line);
    fclose(f);
    facet_tokenizer_free(tok);
    printf("tokenizer vectors %-40s %zu/%zu identical\n", dir, ok, total);
    return (int)(total - ok);
}

static void test_stories_expected(void **state) {
    (void)state;
    const char *dir = FACET_SOURCE_DIR "/models/stories260k";
    json_error_t je;
    json_t *root = json_load_file(FACET_SOURCE_DIR "/models/stories260k/tokenizer_expected.json", 0, &je);
    assert_non_null(root);
    facet_tokenizer *tok;
    facet_error err;
    assert_int_equal(facet_tokenizer_load(dir, &tok, &err), FACET_OK);
    json_t *cases = json_object_get(root, "cases");
    size_t ok = 0;
    for (size_t c = 0; c < json_array_size(cases); c++) {
        json_t *k = json_array_get(cases, c);
        json_t *jt = json_object_get(k, "text"), *jids = json_object_get(k, "ids");
        int32_t *ids;
        size_t n;
        assert_int_equal(facet_tokenize(tok, json_string_value(jt), json_string_length(jt), 1, &ids, &n, &err), FACET_OK);
        int good = n == json_array_size(jids);
        for (size_t i = 0; good && i < n; i++) good = ids[i] == json_integer_value(json_array_get(jids, i));
        if (!good) {
            fprintf(stderr, "stories260k: ids differ for \"%s\"\n", json_string_value(jt));
            print_ids("got", ids, n);
        }
        char *txt;
        size_t tl;
        assert_int_equal(facet_detokenize(tok, ids, n, 1, &txt, &tl, &err), FACET_OK);
        json_t *wd = json_object_get(k, "decode");
        if (tl != json_string_length(wd) || memcmp(txt, json_string_value(wd), tl)) {
            good = 0;
            fprintf(stderr, "stories260k: decode differs: want \"%s\" got \"%s\"\n", json_string_value(wd), txt);
        }
        if (good && !stream_equals(tok, ids, n, 1, txt, tl)) {
            good = 0;
            fprintf(stderr, "stories260k: streaming decode differs for \"%s\"\n", json_string_value(jt));
        }
        ok += good;
        free(txt);
        free(ids);
    }
    printf("stories260k tokenizer_expected.json: %zu/%zu identical\n", ok, json_array_size(cases));
    assert_int_equal(ok, json_array_size(cases));
    facet_tokenizer_free(tok);
    json_decref(root);
}

static int run_tree(const char *root, int *dirs) {
    DIR *d = opendir(root);
    if (!d) return 0;
    struct dirent *e;
    char names[64][256];
    int n = 0, fails = 0;
    while ((e = readdir(d)) && n < 64) {
        if (e->d_name[0] == '.') continue;
        snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    for (int i = 0; i < n; i++) {
        char dir[8192], vec[8300];
        if (snprintf(dir, sizeof dir, "%s/%s", root, names[i]) >= (int)sizeof dir) continue;
        if (snprintf(vec, sizeof vec, "%s/vectors.jsonl", dir) >= (int)sizeof vec) continue;
        struct stat st;
        if (stat(vec, &st)) continue;
        (*dirs)++;
        fails += run_vectors(dir);
    }
    return fails;
}

static void test_vectors_bundled(void **state) {
    (void)state;
    int dirs = 0;
    int fails = run_tree(FACET_TEST_DATA "/tokenizers", &dirs);
    assert_true(dirs > 0);
    assert_int_equal(fails, 0);
}

static void test_vectors_shared(void **state) {
    (void)state;
    const char *shared = getenv("FACET_SHARED");
    char root[4096];
    snprintf(root, sizeof root, "%s/corpus/tokenizers", shared ? shared : FACET_SOURCE_DIR "/../shared");
    struct stat st;
    if (stat(root, &st)) {
        printf("SKIPPED: %s is absent: the large tokenizers (qwen3, llama3.1, gemma3, ...) were NOT tested\n", root);
        skip();
    }
    int dirs = 0;
    int fails = run_tree(root, &dirs);
    assert_true(dirs > 0);
    assert_int_equal(fails, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stories_expected),
        cmocka_unit_test(test_vectors_bundled),
        cmocka_unit_test(test_vectors_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
