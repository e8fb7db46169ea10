/*
 * onboard_gate.c — `facet onboard PATH --gate`: facet's exact path against a reference
 * that facet did not compute (see onboard_gate.h for the order and the acceptance).
 */
#include "cli/onboard_gate.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_opts.h"
#include "facet.h"
#include "io/gguf.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/str.h"

extern char **environ;

#define GATE_REL_TOL 1e-4    /* relative error per logits row (the tests' gate)        */
#define GATE_NEAR_TIE 1e-3   /* reference top-1 minus top-2 below this: a near tie     */
#define GATE_DEFAULT_STEPS 16
#define GATE_DEFAULT_PROMPT 16

/* The reference: prompt ids, greedy ids, and optionally per-step margins and logits rows
 * (n_prompt + n_gen - 1 rows of vocab floats, or NULL). */
typedef struct gate_ref {
    int32_t *prompt;
    size_t n_prompt;
    int32_t *gen;
    size_t n_gen;
    double *margins; /* [n_gen] or NULL */
    float *logits;   /* rows or NULL     */
    size_t n_rows;
    char oracle[256];
} gate_ref;

static void ref_free(gate_ref *r) {
    free(r->prompt);
    free(r->gen);
    free(r->margins);
    free(r->logits);
}

/* A JSON array of integers into a malloc'd id array. 0 ok, 1 after printing. */
static int ids_from_json(const char *file, const char *key, const json_t *a, int32_t **out,
                         size_t *n) {
    if (!json_is_array(a) || json_array_size(a) == 0) {
        fprintf(stderr, "facet: %s: \"%s\" must be a non-empty array of token ids\n", file, key);
        return 1;
    }
    *n = json_array_size(a);
    *out = malloc(sizeof(int32_t) * *n);
    if (!*out) {
        fprintf(stderr, "facet: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < *n; i++) {
        const json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX) {
            fprintf(stderr, "facet: %s: \"%s\"[%zu] is not a token id (an integer >= 0)\n", file,
                    key, i);
            return 1;
        }
        (*out)[i] = (int32_t)json_integer_value(v);
    }
    return 0;
}

/* Reference ids from a JSON file: {"prompt_ids"|"input_ids", "generated_ids", "margins"?},
 * at the top level or under "greedy_from_bos". 0 ok, 1 after printing. */
static int ref_from_ids_file(const char *file, const char *oracle, gate_ref *r) {
    json_t *root = NULL;
    facet_error err;
    char *text = NULL;
    size_t len = 0;
    facet_status st = cli_read_input("--reference", file, 64u << 20, &text, &len, &err);
    if (st == FACET_OK) st = facet_json_parse(text, len, file, &root, &err);
    free(text);
    if (st != FACET_OK) return cli_fail(&err);
    const json_t *o = json_object_get(root, "greedy_from_bos");
    if (!json_is_object(o)) o = root;
    int rc = 1;
    /* "input_ids" (expected.json's spelling) only where it is there: a file with neither
     * is told about prompt_ids, the key the README documents */
    const char *pkey = json_object_get(o, "input_ids") && !json_object_get(o, "prompt_ids")
                           ? "input_ids" : "prompt_ids";
    if (!json_is_object(o)) {
        fprintf(stderr, "facet: %s: expected a JSON object with prompt_ids and generated_ids\n", file);
        goto done;
    }
    if (ids_from_json(file, pkey, json_object_get(o, pkey), &r->prompt, &r->n_prompt) ||
        ids_from_json(file, "generated_ids", json_object_get(o, "generated_ids"), &r->gen, &r->n_gen))
        goto done;
    const json_t *m = json_object_get(o, "margins");
    if (json_is_array(m) && json_array_size(m) == r->n_gen) {
        r->margins = malloc(sizeof(double) * r->n_gen);
        if (!r->margins) goto done;
        for (size_t i = 0; i < r->n_gen; i++) {
            const json_t *v = json_array_get(m, i);
            if (!json_is_number(v)) {
                fprintf(stderr, "facet: %s: \"margins\"[%zu] is not a number\n", file, i);
                goto done;
            }
            r->margins[i] = json_number_value(v);
        }
    }
    snprintf(r->oracle, sizeof r->oracle, "%s (%s)", oracle, file);
    rc = 0;
done:
    json_decref(root);
    return rc;
}

/* Read a --dump-logits file of float32 rows of `vocab` into r->logits. 0 ok, 1 printed. */
static int read_logits(const char *file, int vocab, gate_ref *r) {
    char *data = NULL;
    size_t len = 0;
    facet_error err;
    if (cli_read_input("--reference-logits", file, (size_t)1 << 36, &data, &len, &err) != FACET_OK)
        return cli_fail(&err);
    size_t row = sizeof(float) * (size_t)vocab;
    if (len == 0 || len % row) {
        fprintf(stderr, "facet: %s: %zu bytes is not a whole number of float32 rows of vocab_size %d\n",
                file, len, vocab);
        free(data);
        return 1;
    }
    r->n_rows = len / row;
    r->logits = (float *)(void *)data; /* malloc'd by cli_read_input: aligned for float */
    /* a non-finite reference row compares as NaN (inf - inf), which no threshold fails:
     * such a file is no reference at all */
    for (size_t i = 0; i < len / sizeof(float); i++)
        if (!isfinite(r->logits[i])) {
            fprintf(stderr, "facet: %s: row %zu, token %zu is %g; reference logits must be finite\n",
                    file, i / (size_t)vocab, i % (size_t)vocab, r->logits[i]);
            return 1;
        }
    return 0;
}

/* Top-1 minus top-2 of a row. */
static double row_margin(const float *row, int vocab) {
    double a = -INFINITY, b = -INFINITY;
    for (int i = 0; i < vocab; i++) {
        double v = row[i];
        if (v > a) {
            b = a;
            a = v;
        } else if (v > b) {
            b = v;
        }
    }
    return a - b;
}

/* Greedy ids and margins of the reference from its logits rows: step i is chosen by row
 * n_prompt - 1 + i. */
static int ref_ids_from_logits(gate_ref *r, int vocab, int n) {
    if (r->n_rows < r->n_prompt) {
        fprintf(stderr, "facet: the reference logits have %zu rows, fewer than the %zu prompt tokens\n",
                r->n_rows, r->n_prompt);
        return 1;
    }
    size_t avail = r->n_rows - r->n_prompt + 1;
    r->n_gen = n > 0 && (size_t)n < avail ? (size_t)n : avail;
    r->gen = malloc(sizeof(int32_t) * r->n_gen);
    r->margins = malloc(sizeof(double) * r->n_gen);
    if (!r->gen || !r->margins) {
        fprintf(stderr, "facet: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < r->n_gen; i++) {
        const float *row = r->logits + (r->n_prompt - 1 + i) * (size_t)vocab;
        r->gen[i] = facet_sample_greedy(row, vocab);
        r->margins[i] = row_margin(row, vocab);
    }
    return 0;
}

/* tests/ref/reference.py of the source tree facet was built from, or NULL. */
static const char *reference_script(char *buf, size_t cap) {
    const char *bundled = cli_bundled_model(); /* SOURCE/models/stories260k */
    snprintf(buf, cap, "%s/../../tests/ref/reference.py", bundled);
    return facet_is_file(buf) && facet_is_file("/usr/bin/python3") ? buf : NULL;
}

/* Run the float64 reference on the prompt for n steps; fills ids, margins and logits. */
static int ref_from_float64(const char *script, const char *dir, int vocab, int n, gate_ref *r) {
    char tmpl[] = "/tmp/facet-gate-XXXXXX";
    if (!mkdtemp(tmpl)) {
        fprintf(stderr, "facet: cannot create a temporary folder: %s\n", strerror(errno));
        return 1;
    }
    char out_json[64], logits[64];
    snprintf(out_json, sizeof out_json, "%s/ref.json", tmpl);
    snprintf(logits, sizeof logits, "%s/ref.f32", tmpl);
    facet_str ids = {0}, steps = {0};
    for (size_t i = 0; i < r->n_prompt; i++) facet_str_appendf(&ids, "%s%d", i ? "," : "", r->prompt[i]);
    facet_str_appendf(&steps, "%d", n);
    int rc = 1;
    if (ids.failed || steps.failed) {
        fprintf(stderr, "facet: out of memory\n");
        goto done;
    }
    char *argv[] = {"/usr/bin/python3", (char *)script, (char *)dir, "--prompt-ids", ids.data,
                    "-n", steps.data, "--dump-logits", logits, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_json, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int sp = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    int status = 0;
    if (sp != 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
        fprintf(stderr, "facet: the float64 reference (%s) failed on %s\n", script, dir);
        goto done;
    }
    /* the reference echoes the prompt: read it back with the ids */
    free(r->prompt);
    r->prompt = NULL;
    if (ref_from_ids_file(out_json, "float64 reference", r)) goto done;
    if (read_logits(logits, vocab, r)) goto done;
    snprintf(r->oracle, sizeof r->oracle, "float64 reference (tests/ref/reference.py)");
    rc = 0;
done:
    unlink(out_json);
    unlink(logits);
    rmdir(tmpl);
    facet_str_free(&ids);
    facet_str_free(&steps);
    return rc;
}

/* Default prompt: the BOS id (when the config names one) then pseudo-random ids in
 * [3, vocab) from a fixed LCG, so every run of the gate asks the same question. */
static int default_prompt(const facet_model_info *info, gate_ref *r) {
    r->n_prompt = GATE_DEFAULT_PROMPT;
    r->prompt = malloc(sizeof(int32_t) * r->n_prompt);
    if (!r->prompt) return 1;
    uint64_t s = 0x9E3779B97F4A7C15ull;
    int lo = info->vocab_size > 8 ? 3 : 0;
    for (size_t i = 0; i < r->n_prompt; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        r->prompt[i] = lo + (int32_t)((s >> 33) % (uint64_t)(info->vocab_size - lo));
    }
    if (info->bos_token_id >= 0 && info->bos_token_id < info->vocab_size) r->prompt[0] = info->bos_token_id;
    return 0;
}

static double rel_error(const float *got, const float *want, int vocab) {
    double d = 0, w = 0;
    for (int i = 0; i < vocab; i++) {
        double e = (double)got[i] - (double)want[i];
        d += e * e;
        w += (double)want[i] * want[i];
    }
    double r = w > 0 ? sqrt(d / w) : sqrt(d);
    return isnan(r) ? INFINITY : r; /* NaN logits must fail the gate, not pass every '>' */
}

int onboard_gate(const char *dir, const gate_options *o, json_t **evidence) {
    *evidence = NULL;
    facet_error err;
    facet_load_options lo = {.n_threads = o->n_threads, .weights = FACET_WEIGHTS_F32, .no_cache = 1};
    facet_model *m = NULL;
    facet_session *s = NULL;
    gate_ref r;
    memset(&r, 0, sizeof r);
    float *logits = NULL;
    int32_t *seq = NULL;
    int rc = 1;
    if (facet_model_load(dir, &lo, &m, &err) != FACET_OK) return cli_fail(&err);
    facet_model_info info;
    facet_model_get_info(m, &info);
    int V = info.vocab_size;

    /* the reference */
    char local[4096], script_buf[4096];
    snprintf(local, sizeof local, "%s/expected.json", dir);
    const char *script = NULL;
    if (o->prompt_ids && !o->reference_logits && (o->reference || facet_is_file(local))) {
        /* the ids file holds its own prompt: running it while the given ids go unused
         * would report a gate on a prompt the user did not ask for */
        fprintf(stderr, "facet: onboard: --prompt-ids goes with --reference-logits; %s holds "
                        "its own prompt\n", o->reference ? o->reference : local);
        goto done;
    }
    if (o->reference) {
        if (ref_from_ids_file(o->reference, "reference ids", &r)) goto done;
    } else if (o->reference_logits) {
        if (!o->prompt_ids) {
            fprintf(stderr, "facet: onboard: --reference-logits needs --prompt-ids (the prompt the rows belong to)\n");
            goto done;
        }
        if (run_parse_ids(o->prompt_ids, &r.prompt, &r.n_prompt) || !r.n_prompt) {
            fprintf(stderr, "facet: onboard: --prompt-ids expects token ids like 1,2,3\n");
            goto done;
        }
        if (read_logits(o->reference_logits, V, &r) || ref_ids_from_logits(&r, V, o->n)) goto done;
        snprintf(r.oracle, sizeof r.oracle, "reference logits (%s)", o->reference_logits);
    } else if (facet_is_file(local)) {
        if (ref_from_ids_file(local, "published ids", &r)) goto done;
    } else if (gguf_path_is_gguf(dir)) { /* tests/ref reads Hugging Face folders only */
        fprintf(stderr, "facet: onboard --gate: the float64 reference reads checkpoint folders, "
                        "not GGUF files: give --reference FILE.json or --reference-logits FILE "
                        "--prompt-ids IDS for %s\n", dir);
        goto done;
    } else if ((script = reference_script(script_buf, sizeof script_buf))) {
        if (o->prompt_ids) {
            if (run_parse_ids(o->prompt_ids, &r.prompt, &r.n_prompt) || !r.n_prompt) {
                fprintf(stderr, "facet: onboard: --prompt-ids expects token ids like 1,2,3\n");
                goto done;
            }
        } else if (default_prompt(&info, &r)) {
            fprintf(stderr, "facet: out of memory\n");
            goto done;
        }
        if (ref_from_float64(script, dir, V, o->n > 0 ? o->n : GATE_DEFAULT_STEPS, &r)) goto done;
    } else {
        fprintf(stderr, "facet: onboard --gate: no reference for %s: give --reference FILE.json "
                        "(prompt_ids, generated_ids) or --reference-logits FILE --prompt-ids IDS "
                        "(tests/ref/reference.py of a source tree is used when present)\n", dir);
        goto done;
    }
    size_t steps = r.n_gen;
    if (o->n > 0 && (size_t)o->n < steps) steps = (size_t)o->n;
    for (size_t i = 0; i < r.n_prompt; i++)
        if (r.prompt[i] >= V) {
            fprintf(stderr, "facet: onboard: reference prompt id %d at %zu is outside the vocabulary (%d)\n",
                    r.prompt[i], i, V);
            goto done;
        }
    for (size_t i = 0; i < r.n_gen; i++) /* an id facet cannot choose: a broken reference */
        if (r.gen[i] >= V) {
            fprintf(stderr, "facet: onboard: reference generated id %d at %zu is outside the vocabulary (%d)\n",
                    r.gen[i], i, V);
            goto done;
        }

    /* facet: the prompt's logits (every position), then greedy steps */
    size_t total = r.n_prompt + steps;
    facet_session_options so = {.n_seq_max = 1, .n_ctx = (int)total, .kv_type = FACET_KV_F32};
    if (total > (size_t)info.max_position_embeddings) {
        fprintf(stderr, "facet: onboard: the reference needs %zu positions, more than max_position_embeddings %d\n",
                total, info.max_position_embeddings);
        goto done;
    }
    if (facet_session_create(m, &so, &s, &err) != FACET_OK) {
        rc = cli_fail(&err);
        goto done;
    }
    logits = malloc(sizeof(float) * (size_t)V * r.n_prompt);
    seq = calloc(r.n_prompt, sizeof(int32_t));
    if (!logits || !seq) {
        fprintf(stderr, "facet: out of memory\n");
        goto done;
    }
    facet_batch b = {.n_tokens = (int)r.n_prompt, .tokens = r.prompt, .seq_ids = seq};
    if (facet_forward(s, &b, logits, &err) != FACET_OK) {
        rc = cli_fail(&err);
        goto done;
    }
    double max_err = -1;
    long bad_row = -1;
    double bad_err = 0;
    if (r.logits)
        for (size_t i = 0; i < r.n_prompt && i < r.n_rows; i++) {
            double e = rel_error(logits + i * (size_t)V, r.logits + i * (size_t)V, V);
            if (e > max_err) max_err = e;
            if (e > GATE_REL_TOL && bad_row < 0) {
                bad_row = (long)i;
                bad_err = e;
            }
        }
    long first_diff = -1, near_tie = -1;
    int32_t got_id = -1;
    const float *row = logits + (r.n_prompt - 1) * (size_t)V;
    float *next = logits; /* reuse the first row's space for decode steps */
    size_t compared = 0;
    for (size_t i = 0; i < steps && bad_row < 0; i++) {
        if (r.margins && r.margins[i] < GATE_NEAR_TIE) {
            near_tie = (long)i;
            break;
        }
        got_id = facet_sample_greedy(row, V);
        compared++;
        if (got_id != r.gen[i]) {
            first_diff = (long)i;
            break;
        }
        if (i + 1 == steps) break;
        int32_t zero = 0;
        if (facet_decode(s, 1, &zero, &got_id, next, &err) != FACET_OK) {
            rc = cli_fail(&err);
            goto done;
        }
        row = next;
        size_t ref_row = r.n_prompt + i;
        if (r.logits && ref_row < r.n_rows) {
            double e = rel_error(row, r.logits + ref_row * (size_t)V, V);
            if (e > max_err) max_err = e;
            if (e > GATE_REL_TOL) {
                bad_row = (long)ref_row;
                bad_err = e;
            }
        }
    }
    int passed = bad_row < 0 && first_diff < 0;
    json_t *ev = json_object();
    json_object_set_new(ev, "level", json_string(passed ? "validated" : "failed"));
    json_object_set_new(ev, "oracle", json_string(r.oracle));
    json_object_set_new(ev, "backend", json_string("cpu"));
    json_object_set_new(ev, "weights", json_string("f32"));
    json_object_set_new(ev, "kv_cache", json_string("f32"));
    json_object_set_new(ev, "prompt_tokens", json_integer((json_int_t)r.n_prompt));
    json_object_set_new(ev, "steps_compared", json_integer((json_int_t)compared));
    json_object_set_new(ev, "max_relative_error", max_err >= 0 ? json_real(max_err) : json_null());
    json_object_set_new(ev, "stopped_at_near_tie", near_tie >= 0 ? json_integer(near_tie) : json_null());
    json_object_set_new(ev, "first_difference", first_diff >= 0 ? json_integer(first_diff) : json_null());
    *evidence = ev;
    if (bad_row >= 0) {
        fprintf(stderr, "facet: onboard --gate: logits row %ld (%s): relative error %.3g exceeds %g against %s\n",
                bad_row, (size_t)bad_row < r.n_prompt ? "prompt" : "generated", bad_err, GATE_REL_TOL,
                r.oracle);
        rc = 4;
    } else if (first_diff >= 0) {
        fprintf(stderr, "facet: onboard --gate: step %ld: facet chose token %d, %s chose %d\n",
                first_diff, got_id, r.oracle, r.gen[first_diff]);
        rc = 4;
    } else {
        fprintf(stderr, "gate: validated against %s: %zu prompt token%s, %zu greedy step%s identical%s\n",
                r.oracle, r.n_prompt, r.n_prompt == 1 ? "" : "s", compared, compared == 1 ? "" : "s",
                near_tie >= 0 ? " (stopped at a near tie)" : "");
        rc = 0;
    }
done:
    free(logits);
    free(seq);
    ref_free(&r);
    facet_session_free(s);
    facet_model_free(m);
    return rc;
}
