/*
 * cmd_run.c — `facet run`: generate text from a checkpoint (DESIGN.md, "Command line").
 * Options: run_opts.c. Text streams to stdout (the prompt's text, then the continuation
 * as it is generated); timings go to stderr. --json prints one JSON object instead.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cli_par.h"
#include "model/facts_gguf.h"
#include "cli/progress.h"
#include "cli/run_opts.h"
#include "facet_chat.h"
#include "facet_generate.h"
#include "facet_grammar.h"
#include "model/facts.h"
#include "parallel/par.h"
#include "util/fs.h"
#include "util/str.h"
#include "util/utf8.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Read a UTF-8 text file (or standard input for "-") of option opt whole; prints the
 * error and returns NULL on failure. */
static char *read_utf8(const char *opt, const char *path, size_t *len) {
    facet_error err = {0};
    char *text;
    if (cli_read_input(opt, path, (size_t)1 << 30, &text, len, &err) != FACET_OK) {
        cli_fail(&err);
        return NULL;
    }
    size_t bad = facet_utf8_validate(text, *len);
    if (bad != *len) {
        fprintf(stderr, "facet: %s: not valid UTF-8 at byte offset %zu\n", path, bad);
        free(text);
        return NULL;
    }
    return text;
}

/* Render --messages/--tools through the checkpoint's chat template. */
static char *render_chat(const run_opts *o, size_t *len) {
    facet_error err = {0};
    size_t ml, tl;
    char *messages = read_utf8("--messages", o->messages, &ml), *tools = NULL, *out = NULL;
    if (!messages) return NULL;
    if (o->tools && !(tools = read_utf8("--tools", o->tools, &tl))) {
        free(messages);
        return NULL;
    }
    facet_chat_template *tpl = NULL;
    if (facet_chat_template_load(o->model, &tpl, &err) != FACET_OK) {
        cli_fail(&err);
    } else if (facet_chat_render(tpl, messages, tools, 1, NULL, &out, len, &err) != FACET_OK) {
        cli_chat_fail(&err, tpl, o->messages, o->tools);
        out = NULL;
    }
    facet_chat_template_free(tpl);
    free(messages);
    free(tools);
    return out;
}

/* The prompt text of the options (-p, -f or the rendered --messages), tokenized. */
static int prompt_text_ids(const run_opts *o, facet_tokenizer *tok, int32_t **ids, size_t *n) {
    facet_error err = {0};
    char *text = NULL;
    size_t len = 0;
    int add_special = 1;
    if (o->messages) {
        if (!(text = render_chat(o, &len))) return 1;
        /* as transformers' apply_chat_template and serve's chat path: the rendered text
         * is tokenized without adding special tokens (a template that wants a BOS writes
         * it) */
        add_special = 0;
    } else if (o->prompt_file) {
        if (!(text = read_utf8("-f", o->prompt_file, &len))) return 1;
    } else {
        const char *p = o->prompt ? o->prompt : "";
        len = strlen(p);
        size_t bad = facet_utf8_validate(p, len);
        if (bad != len) {
            fprintf(stderr, "facet: -p: prompt is not valid UTF-8 at byte offset %zu\n", bad);
            return 1;
        }
        if (!(text = strdup(p))) return 1;
    }
    facet_status st = facet_tokenize(tok, text, len, add_special, ids, n, &err);
    free(text);
    return st == FACET_OK ? 0 : cli_fail(&err);
}

/* Build the prompt ids from the options with the folder's tokenizer (tok, NULL when it
 * has none), before any weight is converted. Returns 0 or an exit code. */
static int prompt_ids(const run_opts *o, facet_tokenizer *tok, int32_t **ids, size_t *n) {
    *ids = NULL;
    *n = 0;
    if (o->prompt_ids) return run_parse_ids(o->prompt_ids, ids, n);
    if (!tok) {
        facet_error err;
        if (facet_tokenizer_unread(o->model, &err) != FACET_OK) return cli_fail(&err);
        fprintf(stderr, "facet: %s has no tokenizer.json; give the prompt as --prompt-ids\n",
                o->model);
        return 1;
    }
    return prompt_text_ids(o, tok, ids, n);
}

/* Where generated text goes: stdout as it is final, or the --json "text". */
typedef struct text_sink {
    int json;
    facet_str buf;
} text_sink;

static int sink_put(text_sink *t, const char *s, size_t n) {
    if (!n) return 0;
    if (!t->json) {
        fwrite(s, 1, n, stdout);
        fflush(stdout);
        return 0;
    }
    if (facet_str_append(&t->buf, s, n)) {
        fprintf(stderr, "facet: out of memory for the generated text (%zu bytes)\n", t->buf.len);
        return 1;
    }
    return 0;
}

typedef struct run_state {
    const run_opts *o;
    const facet_model *model;
    facet_model_info info;
    facet_session *sess;
    facet_generator *gen;
    int has_text;               /* the folder has a tokenizer: text, else ids        */
    FILE *dump;
    text_sink text;
    json_t *generated, *top;
    int32_t *ids;
    size_t n_prompt;
    float *logits;
} run_state;

static int dump_rows(run_state *rs, const float *logits, size_t rows) {
    if (!rs->dump) return 0;
    size_t V = (size_t)rs->info.vocab_size;
    if (fwrite(logits, sizeof(float) * V, rows, rs->dump) != rows) {
        fprintf(stderr, "facet: --dump-logits: write failed: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

/* Record the step's token chosen from `logits` (--json bookkeeping) and show its text.
 * An end-of-sequence token is recorded without its text, as serve does. */
static int emit(run_state *rs, const float *logits, const facet_gen_step *step) {
    const run_opts *o = rs->o;
    if (o->json) {
        json_array_append_new(rs->generated, json_integer(step->token));
        if (o->top_logprobs > 0) {
            int32_t ids[64];
            double lp[64];
            int k = facet_top_logprobs(logits, rs->info.vocab_size, o->top_logprobs, ids, lp);
            json_t *top = json_array();
            for (int i = 0; i < k; i++) json_array_append_new(top, json_pack("[i,f]", ids[i], lp[i]));
            json_array_append_new(rs->top, top);
        }
    }
    if (!rs->has_text && !step->eos && !o->json) { /* no tokenizer: the id stands for the text */
        printf(" %d", step->token);
        fflush(stdout);
    }
    return sink_put(&rs->text, step->text, step->len);
}

/* Generate after the prompt; sets *finish. Returns 0 or an exit code. */
static int generate(run_state *rs, const char **finish, int *n_gen, double *t_prefill,
                    double *t_decode) {
    facet_error err = {0};
    const run_opts *o = rs->o;
    size_t V = (size_t)rs->info.vocab_size, n = rs->n_prompt;
    size_t rows = o->dump_logits ? n : 1;
    uint8_t *want = calloc(n, 1);
    int32_t *seqs = calloc(n, sizeof(int32_t));
    rs->logits = malloc(sizeof(float) * V * rows);
    if (!want || !seqs || !rs->logits) {
        free(want);
        free(seqs);
        fprintf(stderr, "facet: out of memory for %zu rows of logits\n", rows);
        return 1;
    }
    /* prefill: logits of every position only when they are dumped */
    for (size_t i = 0; i < n; i++) want[i] = o->dump_logits || i == n - 1;
    double t0 = now_s();
    facet_batch b = {(int)n, rs->ids, seqs, want};
    facet_status st = facet_forward(rs->sess, &b, rs->logits, &err);
    *t_prefill = now_s() - t0;
    free(want);
    free(seqs);
    if (st != FACET_OK) return cli_fail(&err);
    if (dump_rows(rs, rs->logits, rows)) return 1;
    const float *last = rs->logits + (rows - 1) * V;

    double t1 = now_s();
    while (facet_generator_finish(rs->gen) == FACET_FINISH_NONE) {
        facet_gen_step step;
        if (facet_generator_step(rs->gen, last, &step, &err) != FACET_OK)
            return err.status == FACET_E_NUMERIC ? cli_fail_at("run", &err) : cli_fail(&err);
        if (emit(rs, last, &step)) return 1;
        if (step.finish != FACET_FINISH_NONE) break;
        int32_t seq0 = 0;
        if (facet_decode(rs->sess, 1, &seq0, &step.token, rs->logits, &err) != FACET_OK)
            return cli_fail(&err);
        last = rs->logits;
        if (dump_rows(rs, rs->logits, 1)) return 1;
    }
    *t_decode = now_s() - t1;
    *n_gen = facet_generator_n_generated(rs->gen);
    *finish = facet_finish_reason_name(facet_generator_finish(rs->gen));
    return 0;
}

/* Validate the prompt against the vocabulary and the context. */
static int check_prompt(const run_opts *o, int vocab_size, int max_position_embeddings,
                        const int32_t *ids, size_t n, int n_ctx) {
    /* ids given as such name where they came from (README: "an error names the file") */
    const char *src = !o->prompt_ids ? NULL
                      : o->prompt_ids[0] == '@' ? o->prompt_ids + 1
                      : !strcmp(o->prompt_ids, "-") ? "standard input" : NULL;
    char where[1100] = "";
    if (o->prompt_ids)
        snprintf(where, sizeof where, "--prompt-ids: %.1000s%s", src ? src : "", src ? ": " : "");
    if (n == 0) {
        if (o->prompt_ids) fprintf(stderr, "facet: %sno token ids\n", where);
        else fprintf(stderr, "facet: the prompt is empty (no tokens); give text, or --prompt-ids\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab_size) {
            fprintf(stderr, "facet: %sprompt token %d at index %zu is outside [0, %d)\n", where,
                    ids[i], i, vocab_size);
            return 1;
        }
    if (n >= (size_t)n_ctx) {
        fprintf(stderr,
                "facet: the prompt has %zu tokens but the context holds %d "
                "(max_position_embeddings=%d%s): at most %d leave room for one generated token\n",
                n, n_ctx, max_position_embeddings, o->ctx ? ", --ctx" : "", n_ctx - 1);
        return 1;
    }
    return 0;
}

static void print_json(run_state *rs, const char *finish, double t_load, double ttft_ms,
                       double prefill_tok_s, double decode_tok_s) {
    json_t *pids = json_array();
    for (size_t i = 0; i < rs->n_prompt; i++) json_array_append_new(pids, json_integer(rs->ids[i]));
    json_t *obj = json_pack("{s:o, s:O, s:s#, s:s, s:{s:f, s:f, s:f, s:f}}", "prompt_ids", pids,
                            "generated_ids", rs->generated, "text",
                            facet_str_cstr(&rs->text.buf), rs->text.buf.len, "finish_reason", finish,
                            "timings", "load_s", t_load, "ttft_ms", ttft_ms, "prefill_tok_s",
                            prefill_tok_s, "decode_tok_s", decode_tok_s);
    if (rs->info.device_note) { /* the device's command buffers over the whole run */
        facet_model_info now;
        facet_model_get_info(rs->model, &now);
        json_object_set_new(json_object_get(obj, "timings"), "device_submissions",
                            json_integer((json_int_t)now.device_submissions));
    }
    if (rs->o->top_logprobs > 0) json_object_set(obj, "top_logprobs", rs->top);
    json_dumpf(obj, stdout, JSON_ENSURE_ASCII | JSON_REAL_PRECISION(17));
    fputc('\n', stdout);
    json_decref(obj);
}

int cmd_run(int argc, char **argv) {
    run_opts o;
    int rc = run_parse_args(argc, argv, &o);
    if (rc >= 0) return rc;
    if (!o.model) o.model = cli_bundled_model();
    char model_buf[4096];
    if (!cli_model_folder(&o.model, model_buf, sizeof model_buf)) return 1;

    facet_error err = {0};
    run_state rs;
    memset(&rs, 0, sizeof rs);
    rs.o = &o;
    rs.text.json = o.json;
    facet_model *model = NULL;
    facet_grammar *grammar = NULL;
    facet_grammar_vocab *gvocab = NULL;
    const char *finish = "length";
    int n_gen = 0;
    double t_prefill = 0, t_decode = 0;

    /* what can be checked without the weights is checked before they are converted (a
     * large checkpoint converts for minutes): the config, --ctx, the prompt */
    facet_facts facts;
    if (facet_facts_read_model(o.model, &facts, &err) != FACET_OK) return cli_fail(&err);
    if ((rc = cli_refuse_outside_table(o.model, &facts, o.backend ? o.backend : "cpu"))) return rc;
    int max_pos = (int)facts.max_position_embeddings; /* facts bound it to int */
    int n_ctx = o.ctx ? o.ctx : max_pos;
    if (n_ctx > max_pos) {
        fprintf(stderr, "facet: --ctx %d is larger than max_position_embeddings=%d\n", n_ctx,
                max_pos);
        return 1;
    }
    /* a parallel job (mpirun): the split refused or this rank's layers chosen before
     * anything loads; the other ranks follow rank 0 from here */
    facet_load_options par_lo = {0};
    if ((rc = cli_par_join(&facts, o.pp, o.tp, n_ctx, o.weights, o.kv_cache, &par_lo))) return rc;
    if (cli_par_follower()) {
        facet_load_options lo = par_lo;
        lo.n_threads = o.threads;
        lo.weights = o.weights;
        lo.no_cache = o.no_cache;
        facet_session_options so = {1, n_ctx, o.kv_cache};
        return cli_par_follow(o.model, &lo, &so);
    }
    /* the folder's tokenizer, loaded once: it encodes the prompt here, and the model
     * takes it over for the output text */
    facet_tokenizer *tok = NULL;
    if (facet_tokenizer_present(o.model) && facet_tokenizer_load(o.model, &tok, &err) != FACET_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    if ((rc = prompt_ids(&o, tok, &rs.ids, &rs.n_prompt)) ||
        (rc = check_prompt(&o, (int)facts.vocab_size, max_pos, rs.ids, rs.n_prompt, n_ctx))) {
        facet_tokenizer_free(tok);
        goto out;
    }
    if (o.n_stops > 0 && !tok) { /* stop strings match generated text: decoded by it */
        fprintf(stderr, "facet: --stop matches generated text, and %s has no tokenizer.json "
                        "to decode it\n", o.model);
        rc = 1;
        goto out;
    }

    cli_progress bar;
    cli_progress_init(&bar);
    facet_load_options lo = {.n_threads = o.threads, .weights = o.weights, .no_cache = o.no_cache,
                             .progress = cli_progress_cb, .progress_user = &bar,
                             .tokenizer = tok /* the model's from here */,
                             .layer_first = par_lo.layer_first, .layer_end = par_lo.layer_end,
                             .tensor_parallel = par_lo.tensor_parallel,
                             .tensor_rank = par_lo.tensor_rank,
                             .backend = o.backend, .device = o.device};
    double t_load = now_s();
    if (facet_model_load(o.model, &lo, &model, &err) != FACET_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    t_load = now_s() - t_load;
    facet_model_get_info(model, &rs.info);
    rs.model = model;
    if (rs.info.device_note) fprintf(stderr, "facet: %s\n", rs.info.device_note);
    facet_session_options so = {1, n_ctx, o.kv_cache};
    if (facet_session_create(model, &so, &rs.sess, &err) != FACET_OK) {
        rc = cli_fail(&err);
        goto out;
    }

    tok = facet_model_tokenizer(model); /* the same one, now the model's */
    rs.has_text = tok != NULL;
    /* the generator primes its detokenizer with the prompt: its text is echoed when
     * streaming, not part of --json's "text" */
    facet_generator_options go = {
        .sampling = &o.sampling, .n_vocab = rs.info.vocab_size, .tok = tok, .stops = o.stops,
        .n_stops = o.n_stops, .eos_ids = rs.info.eos_token_ids,
        .n_eos = o.ignore_eos ? 0 : rs.info.n_eos, .max_tokens = o.max_new, .n_ctx = n_ctx,
        .kv_type = facet_session_kv_type(rs.sess)};
    if ((o.json_schema || o.grammar) &&
        (rc = cli_grammar_load(o.json_schema, o.grammar, tok, rs.info.vocab_size, &grammar,
                               &gvocab)))
        goto out;
    go.grammar = grammar;
    go.grammar_vocab = gvocab;
    if (facet_generator_create(&go, rs.ids, rs.n_prompt, &rs.gen, &err) != FACET_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    if (o.json) {
        rs.generated = json_array();
        rs.top = json_array();
    }
    if (o.dump_logits && !(rs.dump = fopen(o.dump_logits, "wb"))) {
        fprintf(stderr, "facet: --dump-logits %s: %s\n", o.dump_logits, strerror(errno));
        rc = 1;
        goto out;
    }
    if (tok) {
        size_t len;
        const char *prompt_text = facet_generator_prompt_text(rs.gen, &len);
        if (!o.json && len) fwrite(prompt_text, 1, len, stdout);
        if (!o.json) fflush(stdout);
    } else if (!o.json) { /* no text to show: the ids, prompt then generated, instead */
        fprintf(stderr, "facet: %s has no tokenizer.json: token ids are printed instead of text\n",
                o.model);
        for (size_t i = 0; i < rs.n_prompt; i++) printf("%s%d", i ? " " : "", rs.ids[i]);
        fflush(stdout);
    }
    if ((rc = generate(&rs, &finish, &n_gen, &t_prefill, &t_decode))) goto out;

    /* n_gen tokens were chosen: the first from the prefill, each later one after a step */
    double ttft_ms = t_prefill * 1e3;
    double prefill_tok_s = t_prefill > 0 ? rs.n_prompt / t_prefill : 0;
    double decode_tok_s = (n_gen > 1 && t_decode > 0) ? (n_gen - 1) / t_decode : 0;
    if (o.json) {
        print_json(&rs, finish, t_load, ttft_ms, prefill_tok_s, decode_tok_s);
    } else {
        fputc('\n', stdout);
        fflush(stdout); /* before the stats: one pipe or file for both (2>&1) keeps order */
        fprintf(stderr,
                "facet: load %.3f s | prefill %zu tokens, TTFT %.1f ms, %.1f tok/s | decode %d "
                "tokens, %.1f tok/s | finish: %s\n",
                t_load, rs.n_prompt, ttft_ms, prefill_tok_s, n_gen, decode_tok_s, finish);
    }
    cli_par_report("facet: "); /* rank 0's time inside MPI, its steps */
    if (rs.info.weight_cache_note) fprintf(stderr, "facet: %s\n", rs.info.weight_cache_note);
    for (int i = 0; i < rs.info.n_notes; i++) fprintf(stderr, "facet: note: %s\n", rs.info.notes[i]);
    fflush(stdout);

out:
    if (rs.dump && fclose(rs.dump) != 0 && rc == 0) {
        fprintf(stderr, "facet: --dump-logits: close failed\n");
        rc = 1;
    }
    facet_generator_free(rs.gen);
    facet_grammar_vocab_free(gvocab);
    facet_grammar_free(grammar);
    json_decref(rs.generated);
    json_decref(rs.top);
    facet_str_free(&rs.text.buf);
    free(rs.logits);
    free(rs.ids);
    facet_session_free(rs.sess);
    facet_model_free(model);
    return cli_par_end(rc);
}
