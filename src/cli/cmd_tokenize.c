/*
 * cmd_tokenize.c — `facet tokenize` and `facet detokenize` (DESIGN.md, "Command line").
 *
 *   facet tokenize   MODEL [TEXT | -f FILE] [--no-special] [--split-special] -> JSON ids
 *   facet detokenize MODEL [--skip-special] ID...            -> text (exactly, no newline)
 *
 * Batch forms (one tokenizer load for many inputs; used by the end-to-end tests):
 *   facet tokenize   MODEL --jsonl FILE   lines {"text": S, "add_special_tokens": B}
 *                                         -> lines {"ids": [...]}
 *   facet detokenize MODEL --jsonl FILE   lines {"ids": [...], "skip_special_tokens": B}
 *                                         -> lines {"text": S}
 *
 * MODEL is any folder holding a tokenizer.json, or a GGUF model (its tokenizer.ggml.*
 * metadata). Without TEXT or -f, tokenize reads standard input. --split-special
 * tokenizes special-token text as plain text (llama.cpp's parse_special = false). IDs may be separate arguments or comma-separated ("1,2,3", "[1,2]").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "facet_tokenizer.h"
#include "util/error.h"
#include "util/fs.h"

/* Run fn over each JSON line of `path`; fn prints one output line, or an error naming
 * `at` ("PATH:LINE"). Blank lines are skipped. */
static int batch(const facet_tokenizer *tok, const char *path, int dflt,
                 int (*fn)(const facet_tokenizer *, json_t *, int, const char *)) {
    FILE *f = !strcmp(path, "-") ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "facet: %s: %s\n", path, strerror(errno));
        return 1;
    }
    char *line = NULL;
    size_t cap = 0, no = 0;
    ssize_t got;
    int rc = 0;
    while (!rc && (got = getline(&line, &cap, f)) > 0) {
        no++;
        if (got == 1 && line[0] == '\n') continue;
        json_error_t je;
        json_t *j = json_loadb(line, (size_t)got, JSON_ALLOW_NUL, &je);
        if (!json_is_object(j)) {
            fprintf(stderr, "facet: %s:%zu: expected a JSON object per line%s%s\n", path, no, j ? "" : ": ",
                    j ? "" : je.text);
            rc = 1;
        } else {
            char at[4200];
            snprintf(at, sizeof at, "%s:%zu", strcmp(path, "-") ? path : "<stdin>", no);
            rc = fn(tok, j, dflt, at);
        }
        json_decref(j);
    }
    free(line);
    if (f != stdin) fclose(f);
    return rc;
}

static int batch_tokenize(const facet_tokenizer *tok, json_t *j, int add_special, const char *at) {
    json_t *t = json_object_get(j, "text"), *a = json_object_get(j, "add_special_tokens");
    if (!json_is_string(t)) {
        fprintf(stderr, "facet: %s: \"text\" must be a string\n", at);
        return 1;
    }
    if (json_is_boolean(a)) add_special = json_is_true(a);
    facet_error err = {0};
    int32_t *ids;
    size_t n;
    if (facet_tokenize(tok, json_string_value(t), json_string_length(t), add_special, &ids, &n, &err)) {
        return cli_fail_at(at, &err);
    }
    printf("{\"ids\":[");
    for (size_t i = 0; i < n; i++) printf(i ? ",%d" : "%d", (int)ids[i]);
    printf("]}\n");
    free(ids);
    return 0;
}

static int batch_detokenize(const facet_tokenizer *tok, json_t *j, int skip_special, const char *at) {
    json_t *a = json_object_get(j, "ids"), *s = json_object_get(j, "skip_special_tokens");
    if (!json_is_array(a)) {
        fprintf(stderr, "facet: %s: \"ids\" must be an array\n", at);
        return 1;
    }
    if (json_is_boolean(s)) skip_special = json_is_true(s);
    size_t n = json_array_size(a);
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) return 1;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 0x7fffffff) {
            char *shown = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            fprintf(stderr, "facet: %s: ids[%zu] is %.40s, expected an integer 0..2147483647\n",
                    at, i, shown ? shown : "?");
            free(shown);
            free(ids);
            return 1;
        }
        ids[i] = (int32_t)json_integer_value(v);
    }
    facet_error err = {0};
    char *text;
    size_t len;
    facet_status st = facet_detokenize(tok, ids, n, skip_special, &text, &len, &err);
    free(ids);
    if (st) {
        return cli_fail_at(at, &err);
    }
    json_t *o = json_pack("{s:s%}", "text", text, len);
    free(text);
    char *dump = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!dump) return 1;
    printf("%s\n", dump);
    free(dump);
    return 0;
}

/* The tokenizer of MODEL (a folder, or its config.json). Returns 0, or the exit code
 * after printing the error. */
static int load_or_fail(const char *model, int split_special, facet_tokenizer **tok) {
    facet_error err = {0};
    char model_buf[4096];
    if (!cli_text_folder(&model, model_buf, sizeof model_buf)) return 1;
    if (facet_tokenizer_load(model, tok, &err)) return cli_fail(&err);
    facet_tokenizer_set_split_special(*tok, split_special);
    return 0;
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *file = NULL, *jsonl = NULL;
    int add_special = 1, split_special = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: facet tokenize MODEL [TEXT | -f FILE] [--no-special] [--split-special]\n"
                   "       facet tokenize MODEL --jsonl FILE|- [--no-special] [--split-special]\n"
                   "Prints the token ids of TEXT (or FILE, or standard input) as a JSON array.\n"
                   "Special tokens are added as the tokenizer's post-processor says;\n"
                   "--no-special is add_special_tokens=False. --split-special tokenizes special-\n"
                   "token text in the input as plain text (split_special_tokens=True; llama.cpp's\n"
                   "parse_special=false). MODEL is a folder holding a tokenizer.json, or a GGUF\n"
                   "model (its tokenizer.ggml.* metadata). --jsonl reads lines {\"text\": S, \"add_special_tokens\": B}\n"
                   "and prints one line {\"ids\": [...]} per input line.\n"
                   "example: facet tokenize models/stories260k \"Once upon a time\"\n");
            return 0;
        }
        static const char *const value_opts[] = {"-f", "--jsonl", NULL};
        if (cli_missing_value("tokenize", argv[i], i + 1 == argc, value_opts)) return 1;
        if (!strcmp(argv[i], "--no-special")) add_special = 0;
        else if (!strcmp(argv[i], "--split-special")) split_special = 1;
        else if (!strcmp(argv[i], "-f") && i + 1 < argc) file = argv[++i];
        else if (!strcmp(argv[i], "--jsonl") && i + 1 < argc) jsonl = argv[++i];
        else if (!model) model = argv[i];
        else if (!text) text = argv[i]; /* TEXT may start with '-' */
        else {
            fprintf(stderr, "facet: tokenize: unexpected argument '%s'\n", argv[i]);
            return 1;
        }
    }
    if (!model) {
        fprintf(stderr, "facet: usage: facet tokenize MODEL [TEXT | -f FILE] [--no-special]\n");
        return 1;
    }
    facet_error err = {0};
    char *data = NULL;
    size_t len = 0;
    if (jsonl) {
        facet_tokenizer *bt;
        int rc = load_or_fail(model, split_special, &bt);
        if (rc) return rc;
        rc = batch(bt, jsonl, add_special, batch_tokenize);
        facet_tokenizer_free(bt);
        return rc;
    }
    if (file) {
        if (cli_read_input("-f", file, (size_t)1 << 31, &data, &len, &err)) return cli_fail(&err);
    } else if (text) {
        len = strlen(text);
    } else if (cli_read_input("tokenize", "-", (size_t)1 << 31, &data, &len, &err)) {
        return cli_fail(&err);
    }
    facet_tokenizer *tok;
    int rc = load_or_fail(model, split_special, &tok);
    if (rc) {
        free(data);
        return rc;
    }
    int32_t *ids;
    size_t n;
    facet_status st = facet_tokenize(tok, data ? data : text, len, add_special, &ids, &n, &err);
    free(data);
    facet_tokenizer_free(tok);
    if (st) { /* name where the input came from */
        fprintf(stderr, "facet: %s: %s\n", file ? file : text ? "TEXT" : "standard input",
                err.message[0] ? err.message : facet_status_name(err.status));
        return 1;
    }
    putchar('[');
    for (size_t i = 0; i < n; i++) printf(i ? ",%d" : "%d", (int)ids[i]);
    printf("]\n");
    free(ids);
    return 0;
}

int cmd_detokenize(int argc, char **argv) {
    const char *model = NULL, *jsonl = NULL;
    int skip_special = 0;
    cli_ids v = {0};
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: facet detokenize MODEL [--skip-special] ID...\n"
                   "       facet detokenize MODEL --jsonl FILE|- [--skip-special]\n"
                   "Prints the text of the token ids exactly (no newline added), as\n"
                   "tokenizer.decode(ids) does; --skip-special is skip_special_tokens=True.\n"
                   "IDs are separate arguments, comma-separated, or a JSON array. --jsonl reads lines\n"
                   "{\"ids\": [...], \"skip_special_tokens\": B} and prints lines {\"text\": S}.\n"
                   "example: facet detokenize models/stories260k 1 403 407 261 378\n");
            free(v.data);
            return 0;
        }
        static const char *const value_opts[] = {"--jsonl", NULL};
        if (cli_missing_value("detokenize", argv[i], i + 1 == argc, value_opts)) {
            free(v.data);
            return 1;
        }
        if (!strcmp(argv[i], "--skip-special")) skip_special = 1;
        else if (!strcmp(argv[i], "--jsonl") && i + 1 < argc) jsonl = argv[++i];
        else if (!model) model = argv[i];
        else {
            if (cli_parse_ids(&v, "detokenize", NULL, argv[i], strlen(argv[i]))) {
                free(v.data);
                return 1;
            }
        }
    }
    if (!model) {
        fprintf(stderr, "facet: usage: facet detokenize MODEL [--skip-special] ID...\n");
        free(v.data);
        return 1;
    }
    facet_error err = {0};
    facet_tokenizer *tok;
    int rc = load_or_fail(model, 0, &tok);
    if (rc) {
        free(v.data);
        return rc;
    }
    if (jsonl) {
        free(v.data);
        rc = batch(tok, jsonl, skip_special, batch_detokenize);
        facet_tokenizer_free(tok);
        return rc;
    }
    char *text;
    size_t len;
    facet_status st = facet_detokenize(tok, v.data, v.len, skip_special, &text, &len, &err);
    free(v.data);
    facet_tokenizer_free(tok);
    if (st) return cli_fail(&err);
    fwrite(text, 1, len, stdout);
    free(text);
    return 0;
}
