/*
 * cmd_run.c — `facet run`: generate text from a checkpoint (DESIGN.md, "Command line").
 *
 *   facet run [MODEL] [-p TEXT | -f FILE | --prompt-ids 1,2,3] [-n MAX_NEW] [--threads N]
 *             [--ctx N] [--weights auto|f32] [--json [--top-logprobs N]]
 *             [--ignore-eos] [--dump-logits FILE]
 *
 * Text streams to stdout (the prompt's text, then the continuation as it is generated);
 * timings go to stderr. --json prints one JSON object instead. --dump-logits writes the
 * raw float32 logits of every position (see usage()).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/run_opts.h"
#include "util/fs.h"
#include "util/utf8.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int is_eos(const facet_model_info *info, int32_t id) {
    for (int i = 0; i < info->n_eos; i++)
        if (info->eos_token_ids[i] == id) return 1;
    return 0;
}

/* Build the prompt ids from the options. Returns 0 or an exit code. */
static int prompt_ids(const run_opts *o, facet_model *model, int32_t **ids, size_t *n) {
    facet_error err = {0};
    *ids = NULL;
    *n = 0;
    if (o->prompt_ids) return run_parse_ids(o->prompt_ids, ids, n);
    facet_tokenizer *tok = facet_model_tokenizer(model);
    if (!tok) {
        fprintf(stderr, "facet: %s has no tokenizer.json; give the prompt as --prompt-ids\n",
                o->model);
        return 1;
    }
    char *text = NULL;
    size_t len = 0;
    if (o->prompt_file) {
        if (facet_read_file(o->prompt_file, (size_t)1 << 30, &text, &len, &err) != FACET_OK)
            return cli_fail(&err);
        size_t bad = facet_utf8_validate(text, len);
        if (bad != len) {
            fprintf(stderr, "facet: %s: not valid UTF-8 at byte offset %zu\n", o->prompt_file, bad);
            free(text);
            return 1;
        }
    } else {
        const char *p = o->prompt ? o->prompt : "";
        len = strlen(p);
        size_t bad = facet_utf8_validate(p, len);
        if (bad != len) {
            fprintf(stderr, "facet: -p: prompt is not valid UTF-8 at byte offset %zu\n", bad);
            return 1;
        }
        text = strdup(p);
        if (!text) return 1;
    }
    facet_status st = facet_tokenize(tok, text, len, 1, ids, n, &err);
    free(text);
    if (st != FACET_OK) return cli_fail(&err);
    return 0;
}

typedef struct {
    json_t *generated, *top;   /* --json accumulators */
    FILE *dump;
    facet_detok_stream *stream;
} run_out;

/* Emit one generated token: stream its text, record it for --json. */
static int emit(const run_opts *o, run_out *ro, const float *logits, int vocab, int32_t id,
                json_t *text_acc) {
    facet_error err = {0};
    if (o->json) {
        json_array_append_new(ro->generated, json_integer(id));
        if (o->top_logprobs > 0) {
            int32_t ids[64];
            double lp[64];
            int k = facet_top_logprobs(logits, vocab, o->top_logprobs, ids, lp);
            json_t *step = json_array();
            for (int i = 0; i < k; i++) json_array_append_new(step, json_pack("[i,f]", ids[i], lp[i]));
            json_array_append_new(ro->top, step);
        }
    }
    if (ro->stream) {
        const char *piece;
        size_t len;
        if (facet_detok_stream_push(ro->stream, id, &piece, &len, &err) != FACET_OK)
            return cli_fail(&err);
        if (o->json) {
            const char *prev = json_string_value(text_acc);
            size_t pl = json_string_length(text_acc);
            char *joined = malloc(pl + len + 1);
            if (!joined) return 1;
            memcpy(joined, prev, pl);
            memcpy(joined + pl, piece, len);
            json_string_setn_nocheck(text_acc, joined, pl + len);
            free(joined);
        } else if (len) {
            fwrite(piece, 1, len, stdout);
            fflush(stdout);
        }
    }
    return 0;
}

static int dump_rows(run_out *ro, const float *logits, int rows, int vocab) {
    if (!ro->dump) return 0;
    if (fwrite(logits, sizeof(float) * (size_t)vocab, (size_t)rows, ro->dump) != (size_t)rows) {
        fprintf(stderr, "facet: --dump-logits: write failed: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

int cmd_run(int argc, char **argv) {
    run_opts o;
    int rc = run_parse_args(argc, argv, &o);
    if (rc >= 0) return rc;
    if (!o.model) o.model = cli_bundled_model();

    facet_error err = {0};
    facet_model *model = NULL;
    facet_load_options lo = {o.threads, o.weights};
    double t_load = now_s();
    if (facet_model_load(o.model, &lo, &model, &err) != FACET_OK) return cli_fail(&err);
    t_load = now_s() - t_load;
    facet_model_info info;
    facet_model_get_info(model, &info);

    int32_t *ids = NULL;
    size_t n_prompt = 0;
    rc = prompt_ids(&o, model, &ids, &n_prompt);
    if (rc) goto out_model;
    if (n_prompt == 0) {
        fprintf(stderr, "facet: the prompt is empty (no tokens); give text, or --prompt-ids\n");
        rc = 1;
        goto out_model;
    }
    for (size_t i = 0; i < n_prompt; i++)
        if (ids[i] < 0 || ids[i] >= info.vocab_size) {
            fprintf(stderr, "facet: prompt token %d at index %zu is outside [0, %d)\n", ids[i], i,
                    info.vocab_size);
            rc = 1;
            goto out_model;
        }
    int n_ctx = o.ctx ? o.ctx : info.max_position_embeddings;
    if (n_ctx > info.max_position_embeddings) {
        fprintf(stderr, "facet: --ctx %d is larger than max_position_embeddings=%d\n", n_ctx,
                info.max_position_embeddings);
        rc = 1;
        goto out_model;
    }
    if (n_prompt > (size_t)n_ctx) {
        fprintf(stderr, "facet: the prompt has %zu tokens but the context holds %d (max_position_embeddings=%d%s)\n",
                n_prompt, n_ctx, info.max_position_embeddings, o.ctx ? ", --ctx" : "");
        rc = 1;
        goto out_model;
    }

    facet_session *sess = NULL;
    facet_session_options so = {1, n_ctx};
    if (facet_session_create(model, &so, &sess, &err) != FACET_OK) {
        rc = cli_fail(&err);
        goto out_model;
    }

    run_out ro = {0};
    json_t *text_acc = json_string("");
    if (o.json) {
        ro.generated = json_array();
        ro.top = json_array();
    }
    if (o.dump_logits && !(ro.dump = fopen(o.dump_logits, "wb"))) {
        fprintf(stderr, "facet: --dump-logits %s: %s\n", o.dump_logits, strerror(errno));
        rc = 1;
        goto out_session;
    }
    facet_tokenizer *tok = facet_model_tokenizer(model);
    if (tok) {
        if (facet_detok_stream_create(tok, 1, &ro.stream, &err) != FACET_OK) {
            rc = cli_fail(&err);
            goto out_session;
        }
        /* the prompt's text: echoed when streaming, skipped in --json's "text" */
        for (size_t i = 0; i < n_prompt; i++) {
            const char *piece;
            size_t len;
            if (facet_detok_stream_push(ro.stream, ids[i], &piece, &len, &err) != FACET_OK) {
                rc = cli_fail(&err);
                goto out_session;
            }
            if (!o.json && len) fwrite(piece, 1, len, stdout);
        }
        if (!o.json) fflush(stdout);
    }

    int V = info.vocab_size;
    size_t rows = o.dump_logits ? n_prompt : 1;
    float *logits = malloc(sizeof(float) * (size_t)V * rows);
    uint8_t *want = calloc(n_prompt, 1);
    int32_t *seqs = calloc(n_prompt, sizeof(int32_t));
    if (!logits || !want || !seqs) {
        fprintf(stderr, "facet: out of memory for logits\n");
        rc = 1;
        goto out_buffers;
    }
    /* prefill: logits of every position only when they are dumped */
    for (size_t i = 0; i < n_prompt; i++) want[i] = o.dump_logits || i == n_prompt - 1;
    double t0 = now_s();
    facet_batch b = {(int)n_prompt, ids, seqs, want};
    if (facet_forward(sess, &b, logits, &err) != FACET_OK) {
        rc = cli_fail(&err);
        goto out_buffers;
    }
    double t_prefill = now_s() - t0;
    if ((rc = dump_rows(&ro, logits, (int)rows, V))) goto out_buffers;
    const float *last = logits + (rows - 1) * (size_t)V;

    const char *finish = "length";
    int n_gen = 0;
    double t_dec0 = now_s();
    for (;;) {
        if (n_gen >= o.max_new) break;
        int32_t next = facet_sample_greedy(last, V);
        if ((rc = emit(&o, &ro, last, V, next, text_acc))) goto out_buffers;
        n_gen++;
        if (!o.ignore_eos && is_eos(&info, next)) {
            finish = "stop";
            break;
        }
        if (n_gen >= o.max_new) break;
        if (facet_seq_length(sess, 0) >= n_ctx) break; /* context full: "length" */
        int32_t seq0 = 0;
        if (facet_decode(sess, 1, &seq0, &next, logits, &err) != FACET_OK) {
            rc = cli_fail(&err);
            goto out_buffers;
        }
        last = logits;
        if ((rc = dump_rows(&ro, logits, 1, V))) goto out_buffers;
    }
    double t_decode = now_s() - t_dec0;
    if (ro.stream) {
        const char *piece;
        size_t len;
        if (facet_detok_stream_flush(ro.stream, &piece, &len, &err) == FACET_OK && len) {
            if (o.json) {
                size_t pl = json_string_length(text_acc);
                char *joined = malloc(pl + len + 1);
                if (joined) {
                    memcpy(joined, json_string_value(text_acc), pl);
                    memcpy(joined + pl, piece, len);
                    json_string_setn_nocheck(text_acc, joined, pl + len);
                    free(joined);
                }
            } else {
                fwrite(piece, 1, len, stdout);
            }
        }
    }
    /* n_gen tokens were chosen; the first came from the prefill, the rest each cost a step */
    double ttft_ms = t_prefill * 1e3;
    double prefill_tok_s = t_prefill > 0 ? n_prompt / t_prefill : 0;
    double decode_tok_s = (n_gen > 1 && t_decode > 0) ? (n_gen - 1) / t_decode : 0;
    if (o.json) {
        json_t *pids = json_array();
        for (size_t i = 0; i < n_prompt; i++) json_array_append_new(pids, json_integer(ids[i]));
        json_t *obj = json_pack("{s:o, s:O, s:O, s:s, s:{s:f, s:f, s:f, s:f}}", "prompt_ids", pids,
                                "generated_ids", ro.generated, "text", text_acc, "finish_reason",
                                finish, "timings", "load_s", t_load, "ttft_ms", ttft_ms,
                                "prefill_tok_s", prefill_tok_s, "decode_tok_s", decode_tok_s);
        if (o.top_logprobs > 0) json_object_set(obj, "top_logprobs", ro.top);
        json_dumpf(obj, stdout, JSON_ENSURE_ASCII | JSON_REAL_PRECISION(17));
        fputc('\n', stdout);
        json_decref(obj);
    } else {
        fputc('\n', stdout);
        fprintf(stderr,
                "facet: load %.3f s | prefill %zu tokens, TTFT %.1f ms, %.1f tok/s | decode %d "
                "tokens, %.1f tok/s | finish: %s\n",
                t_load, n_prompt, ttft_ms, prefill_tok_s, n_gen, decode_tok_s, finish);
    }
    fflush(stdout);

out_buffers:
    free(logits);
    free(want);
    free(seqs);
out_session:
    if (ro.dump && fclose(ro.dump) != 0 && rc == 0) {
        fprintf(stderr, "facet: --dump-logits: close failed\n");
        rc = 1;
    }
    facet_detok_stream_free(ro.stream);
    json_decref(ro.generated);
    json_decref(ro.top);
    json_decref(text_acc);
    facet_session_free(sess);
out_model:
    free(ids);
    facet_model_free(model);
    return rc;
}
