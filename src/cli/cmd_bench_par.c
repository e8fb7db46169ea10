/*
 * cmd_bench_par.c — facet bench over a parallel job (bench_par.h).
 */
#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/bench_par.h"
#include "cli/cli.h"
#include "cli/cli_par.h"
#include "model/facts_gguf.h"
#include "model/weights_policy.h"
#include "parallel/par.h"
#include "util/error.h"
#include "util/stats.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The seeded token ids cmd_bench.c uses (the speed does not depend on which). */
static uint32_t lcg(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

enum { MAX_REPS = 64 };

/* Rank 0's measurements over session s (every call is broadcast to the other ranks).
 * Returns 0 or the exit code after printing the error. */
static int measure(const bench_par_args *a, facet_session *s, int V, int max_conc, int L_max,
                   json_t *jpre, json_t *jdec) {
    facet_error err = {0};
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(L_max > max_conc ? L_max : max_conc));
    int32_t *seq = malloc(sizeof(int32_t) * (size_t)max_conc);
    float *logits = malloc(sizeof(float) * (size_t)V * (size_t)max_conc);
    int rc = 0;
    if (!ids || !seq || !logits) {
        fprintf(stderr, "facet: bench: out of memory for the prompts\n");
        rc = 1;
        goto out;
    }
    printf("\n%-10s %10s %12s %14s\n", "prompt", "TTFT ms", "tok/s", "MPI ms/prompt");
    for (int k = 0; k < a->n_shapes; k++) {
        int L = a->shapes[k];
        if (L > L_max) {
            printf("%-10d skipped: longer than max_position_embeddings\n", L);
            continue;
        }
        uint32_t rng = 1234u + (uint32_t)L;
        for (int i = 0; i < L; i++) ids[i] = (int32_t)(lcg(&rng) % (uint32_t)V);
        double ttft[MAX_REPS], comm[MAX_REPS];
        for (int r = 0; r < a->reps; r++) {
            double c0, c1;
            if (facet_seq_reset(s, 0, &err) != FACET_OK) goto fail;
            facet_par_stats(&c0, NULL);
            double t0 = now_s();
            if (facet_prefill(s, 0, ids, (size_t)L, logits, &err) != FACET_OK) goto fail;
            ttft[r] = now_s() - t0;
            facet_par_stats(&c1, NULL);
            comm[r] = c1 - c0;
        }
        double t = facet_median(ttft, a->reps), cm = facet_median(comm, a->reps);
        printf("%-10d %10.1f %12.1f %14.2f\n", L, t * 1e3, L / t, cm * 1e3);
        json_array_append_new(jpre, json_pack("{s:i, s:f, s:f, s:f, s:i}", "tokens", L,
                                              "ttft_ms", t * 1e3, "tok_s", L / t,
                                              "mpi_ms", cm * 1e3, "reps", a->reps));
    }
    printf("\n%-12s %14s %16s %14s %14s\n", "concurrency", "tok/s per seq", "aggregate tok/s",
           "MPI ms/step", "bytes/step");
    for (int k = 0; k < a->n_concs; k++) {
        int c = a->concs[k];
        uint32_t rng = 7;
        for (int q = 0; q < c; q++) {
            int32_t prompt[16];
            for (int i = 0; i < 16; i++) prompt[i] = (int32_t)(lcg(&rng) % (uint32_t)V);
            seq[q] = q;
            if (facet_seq_reset(s, q, &err) != FACET_OK ||
                facet_prefill(s, q, prompt, 16, logits + (size_t)q * V, &err) != FACET_OK)
                goto fail;
        }
        double c0, c1;
        uint64_t b0, b1;
        facet_par_stats(&c0, &b0);
        double t0 = now_s();
        for (int step = 0; step < a->steps; step++) {
            for (int q = 0; q < c; q++) ids[q] = facet_sample_greedy(logits + (size_t)q * V, V);
            if (facet_decode(s, c, seq, ids, logits, &err) != FACET_OK) goto fail;
        }
        double t = now_s() - t0;
        facet_par_stats(&c1, &b1);
        double agg = (double)c * a->steps / t, cms = (c1 - c0) / a->steps * 1e3;
        double bps = (double)(b1 - b0) / a->steps;
        printf("%-12d %14.2f %16.2f %14.3f %14.0f\n", c, agg / c, agg, cms, bps);
        json_array_append_new(jdec, json_pack("{s:i, s:f, s:f, s:f, s:f}", "concurrency", c,
                                              "tok_s_per_seq", agg / c, "aggregate_tok_s", agg,
                                              "mpi_ms_per_step", cms, "bytes_per_step", bps));
    }
    goto out;
fail:
    rc = cli_fail(&err);
out:
    free(ids);
    free(seq);
    free(logits);
    return rc;
}

int bench_parallel(const bench_par_args *a) {
    facet_error err = {0};
    facet_facts facts;
    if (facet_facts_read_model(a->model, &facts, &err) != FACET_OK) return cli_fail(&err);
    int rc0 = cli_refuse_outside_table(a->model, &facts, a->backend ? a->backend : "cpu");
    if (rc0) return rc0;
    int max_conc = 1, L_max = 1;
    for (int k = 0; k < a->n_concs; k++)
        if (a->concs[k] > max_conc) max_conc = a->concs[k];
    for (int k = 0; k < a->n_shapes; k++) /* longer ones are skipped, as alone */
        if (a->shapes[k] > L_max && a->shapes[k] <= facts.max_position_embeddings)
            L_max = a->shapes[k];
    int n_ctx = L_max > 17 + a->steps ? L_max : 17 + a->steps;
    if (n_ctx > facts.max_position_embeddings) {
        fprintf(stderr, "facet: bench: -n %d: the decode runs hold 16 prompt tokens + %d "
                        "steps, more than max_position_embeddings=%lld\n", a->steps, a->steps,
                (long long)facts.max_position_embeddings);
        return 1;
    }
    if (a->reps > MAX_REPS) {
        fprintf(stderr, "facet: bench: --reps %d: at most %d\n", a->reps, MAX_REPS);
        return 1;
    }
    facet_load_options lo = {0};
    int rc = cli_par_join(&facts, a->pp, a->tp, n_ctx, a->weights, a->kv, &lo);
    if (rc) return rc;
    lo.n_threads = a->threads;
    lo.weights = a->weights;
    lo.no_cache = 1;
    lo.backend = a->backend;
    facet_session_options so = {max_conc, n_ctx, a->kv};
    if (cli_par_follower()) return cli_par_follow(a->model, &lo, &so);

    facet_model *model = NULL;
    facet_session *s = NULL;
    double t_load = now_s();
    if (facet_model_load(a->model, &lo, &model, &err) != FACET_OK ||
        facet_session_create(model, &so, &s, &err) != FACET_OK) {
        rc = cli_fail(&err);
        facet_session_free(s);
        facet_model_free(model);
        return cli_par_end(rc);
    }
    t_load = now_s() - t_load;
    facet_model_info info;
    facet_model_get_info(model, &info);
    int V = info.vocab_size;
    const char *kv_name = facet_kv_type_name(a->kv == FACET_KV_AUTO ? facet_auto_kv(info.weights)
                                                                    : a->kv);
    printf("model %s | weights %s | KV cache %s | threads %d per rank | %d stages x %d tensor "
           "ranks over MPI\n", a->model, facet_weight_format_name(info.weights), kv_name,
           info.n_threads, a->pp, a->tp);
    printf("load (every rank its share, from the checkpoint; ready together): %.3f s\n", t_load);
    printf("machine ceilings: not measured under mpirun (facet bench without the flags "
           "measures one machine's)\n");
    json_t *jpre = json_array(), *jdec = json_array();
    /* warm-up: one token through every stage, untimed */
    float *wl = malloc(sizeof(float) * (size_t)V);
    int32_t one = 1 % V;
    if (!wl || facet_prefill(s, 0, &one, 1, wl, &err) != FACET_OK) {
        rc = wl ? cli_fail(&err) : 1;
        if (!wl) fprintf(stderr, "facet: bench: out of memory\n");
    }
    free(wl);
    if (!rc) rc = measure(a, s, V, max_conc, L_max, jpre, jdec);
    fflush(stdout);
    cli_par_report("facet: bench: ");
    if (!rc && a->json_path) {
        json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:f, s:o, s:o}", "model", a->model,
                              "weights", facet_weight_format_name(info.weights), "kv_cache",
                              kv_name, "threads", info.n_threads, "pipeline_parallel", a->pp,
                              "tensor_parallel", a->tp, "load_s", t_load, "prefill", jpre,
                              "decode", jdec);
        errno = 0;
        if (json_dump_file(j, a->json_path, JSON_INDENT(2)) != 0) {
            fprintf(stderr, "facet: bench: cannot write %s: %s\n", a->json_path,
                    errno ? strerror(errno) : "write failed");
            rc = 1;
        }
        json_decref(j);
    } else {
        json_decref(jpre);
        json_decref(jdec);
    }
    facet_session_free(s);
    facet_model_free(model);
    return cli_par_end(rc);
}
