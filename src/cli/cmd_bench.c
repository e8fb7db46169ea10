/*
 * cmd_bench.c — `facet bench MODEL`: machine ceilings, load time, prefill and decode
 * speed, each decode figure also as a fraction of the memory-bandwidth ceiling
 * (weight bytes read per token over the measured read-only bandwidth).
 *
 *   facet bench MODEL [--shapes 160,256,550] [--reps N] [--concurrency 1,4,8,16]
 *                     [-n N] [--threads N] [--weights auto|f32|bf16|f16|int8|q4|gguf]
 *                     [--kv-cache auto|f32|bf16|f16] [--no-cold] [--json FILE]
 *   mpirun -np P*T facet bench MODEL --pipeline-parallel P [--tensor-parallel T] ...
 *                     (bench_par.h: one load and one session through the job)
 *
 * Ceilings: the read-only stream over 1 GiB allocated as the weights are (2 MiB
 * aligned, huge pages requested), a triad, the float32 FMA rate and the peak rate of the
 * weight format's multiply instruction (membw.h). The machine's bandwidth changes from
 * one second to the next, so a decode measurement runs in chunks of DECODE_CHUNK steps,
 * each preceded by its own (untimed) 128 MiB read probe: "probe GB/s" is the chunks'
 * median probe and "of ceiling" the median over the chunks of the chunk's tok/s per
 * sequence against its adjacent probe. Likewise each prompt length is prefilled --reps
 * times (default 3), each after its own measurement of the peak rate: TTFT is the
 * repetitions' median (tok/s and GFLOP/s are at that TTFT), "of peak" the median of each
 * one's GFLOP/s over its adjacent peak, "peak" the median of those peaks. A failed
 * prefill ends the run with its error (no decode after it).
 *
 * Load time is measured twice: cold (converting from the safetensors files, the weight
 * cache neither read nor written) and cached (a load that maps the weight cache, written
 * first if it is missing); --no-cold skips the first.
 *
 * Prompts are seeded pseudo-random token ids (the speed of a dense model does not
 * depend on which ids it sees); decode feeds back the greedy choice and ignores EOS.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/bench_par.h"
#include "cli/cli.h"
#include "io/gguf.h"
#include "kernels/cpu/membw.h"
#include "model/weights_policy.h"
#include "util/error.h"
#include "util/stats.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "a,b,c" of integers in [1, hi] into out (at most cap): the count, or -1. */
static int parse_list(const char *s, int *out, int cap, long hi) {
    int n = 0;
    while (*s) {
        if (n == cap) return -1;
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v <= 0 || v > hi) return -1;
        out[n++] = (int)v;
        s = end;
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return n;
}

static uint32_t lcg(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

/* Steps of one decode chunk: each chunk is preceded by its own read-bandwidth probe. */
#define DECODE_CHUNK 16
#define MAX_CHUNKS 4096

/* Decode `steps` tokens on `conc` sequences that each hold a 16-token prompt, in chunks
 * of DECODE_CHUNK steps (more when steps needs more than MAX_CHUNKS of them); before each
 * chunk (untimed) a 128 MiB read probe over `pool` (NULL: none) goes into probe_gbs[c],
 * the chunk's steps per second into chunk_rate[c]. Returns seconds for the decode steps
 * only (-1 on failure) and the number of chunks in *n_chunks. */
static double time_decode(facet_model *model, int vocab, int conc, int steps, facet_kv_type kv,
                          facet_pool *pool, double *chunk_rate, double *probe_gbs, int *n_chunks,
                          facet_error *err) {
    facet_session *s = NULL;
    facet_session_options so = {conc, 16 + steps + 1, kv};
    if (facet_session_create(model, &so, &s, err) != FACET_OK) return -1;
    float *logits = malloc(sizeof(float) * (size_t)vocab * (size_t)conc);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)conc), *seq = malloc(sizeof(int32_t) * (size_t)conc);
    double t = -1;
    if (!logits || !tok || !seq) goto out;
    uint32_t rng = 7;
    for (int q = 0; q < conc; q++) {
        int32_t prompt[16];
        for (int i = 0; i < 16; i++) prompt[i] = (int32_t)(lcg(&rng) % (uint32_t)vocab);
        if (facet_prefill(s, q, prompt, 16, logits + (size_t)q * vocab, err) != FACET_OK) goto out;
        seq[q] = q;
    }
    double total = 0;
    int c = 0, chunk = DECODE_CHUNK;
    if (steps / chunk >= MAX_CHUNKS) chunk = steps / MAX_CHUNKS + 1;
    for (int k0 = 0; k0 < steps; k0 += chunk, c++) {
        probe_gbs[c] = pool ? facet_measure_read_bandwidth(pool, (size_t)128 << 20, 1) : 0;
        int k1 = k0 + chunk < steps ? k0 + chunk : steps;
        double t0 = now_s();
        for (int k = k0; k < k1; k++) {
            for (int q = 0; q < conc; q++) tok[q] = facet_sample_greedy(logits + (size_t)q * vocab, vocab);
            if (facet_decode(s, conc, seq, tok, logits, err) != FACET_OK) goto out;
        }
        double dt = now_s() - t0;
        chunk_rate[c] = (double)(k1 - k0) / dt;
        total += dt;
    }
    *n_chunks = c;
    t = total;
out:
    free(logits);
    free(tok);
    free(seq);
    facet_session_free(s);
    return t;
}

/* Most prefill repetitions per prompt length (--reps). */
#define MAX_PREFILL_REPS 64

/* Prefill a seeded random prompt of L tokens `reps` times in one session (reset between
 * them); before each (untimed) the peak rate of the weight format's instruction is
 * measured over `pool` (NULL: none, peak 0). Per repetition: seconds into ttft[i], that
 * peak (GFLOP/s) into peak[i]. Returns reps, or 0 on failure (err set). */
static int time_prefill(facet_model *model, int vocab, int L, facet_kv_type kv, int reps,
                        facet_pool *pool, facet_wformat wf, double *ttft, double *peak,
                        facet_error *err) {
    facet_session *s = NULL;
    facet_session_options so = {1, L, kv};
    if (facet_session_create(model, &so, &s, err) != FACET_OK) return 0;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)L);
    float *logits = malloc(sizeof(float) * (size_t)vocab);
    int done = 0;
    if (!ids || !logits) {
        facet_err(err, FACET_E_NOMEM, "bench: out of memory for a prompt of %d tokens", L);
    } else {
        uint32_t rng = 1234u + (uint32_t)L;
        for (int i = 0; i < L; i++) ids[i] = (int32_t)(lcg(&rng) % (uint32_t)vocab);
        for (; done < reps; done++) {
            peak[done] = pool ? facet_measure_peak_gflops_format(pool, wf) : 0;
            if (facet_seq_reset(s, 0, err) != FACET_OK) break;
            double t0 = now_s();
            if (facet_prefill(s, 0, ids, (size_t)L, logits, err) != FACET_OK) break;
            ttft[done] = now_s() - t0;
        }
    }
    if (done < reps) done = 0;
    free(ids);
    free(logits);
    facet_session_free(s);
    return done;
}

int cmd_bench(int argc, char **argv) {
    const char *model_dir = NULL, *json_path = NULL;
    int shapes[16] = {160, 256, 550}, n_shapes = 3;
    int concs[16] = {1, 4, 8, 16}, n_concs = 4;
    int steps = 128, threads = 0, reps = 3, no_cold = 0;
    facet_kv_type kv = FACET_KV_AUTO;
    facet_weight_format weights = FACET_WEIGHTS_AUTO;
    const char *backend = NULL;
    int device = 0, pp = 1, tp = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: facet bench MODEL [--shapes 160,256,550] [--reps N] [--concurrency 1,4,8,16]\n"
                   "                   [-n N] [--threads N] [--weights auto|f32|bf16|f16|int8|q4|gguf]\n"
                   "                   [--kv-cache auto|f32|bf16|f16] [--backend cpu|vulkan] [--device N]\n"
                   "                   [--no-cold] [--json FILE] [--pipeline-parallel P] [--tensor-parallel T]\n"
                   "--no-cold: skip the converting load (cold load reported as -1 s): for a shape\n"
                   "           whose conversion takes minutes, once its weight cache exists\n"
                   "under mpirun -np P*T with --pipeline-parallel/--tensor-parallel: one load, one\n"
                   "session, the prefill and decode rows measured through the job, rank 0 reporting\n"
                   "example: facet bench models/stories260k --shapes 16 --reps 1 --concurrency 1 "
                   "-n 16\n");
            return 0;
        } else if (!strcmp(a, "--shapes") && v) {
            if ((n_shapes = parse_list(v, shapes, 16, 1 << 20)) <= 0) {
                fprintf(stderr, "facet: bench: --shapes expects up to 16 prompt lengths in "
                                "[1, 1048576], got '%s'\n", v);
                return 1;
            }
            i++;
        } else if (!strcmp(a, "--concurrency") && v) {
            if ((n_concs = parse_list(v, concs, 16, 1024)) <= 0) {
                fprintf(stderr, "facet: bench: --concurrency expects up to 16 values in "
                                "[1, 1024], got '%s'\n", v);
                return 1;
            }
            i++;
        } else if (!strcmp(a, "--reps") && v) {
            if (!cli_parse_int(a, v, 1, MAX_PREFILL_REPS, &reps)) return 1;
            i++;
        } else if (!strcmp(a, "-n") && v) {
            if (!cli_parse_int(a, v, 1, 1 << 20, &steps)) return 1;
            i++;
        } else if (!strcmp(a, "--threads") && v) {
            if (!cli_parse_int(a, v, 1, 1024, &threads)) return 1;
            i++;
        } else if (!strcmp(a, "--weights") && v) {
            if (!cli_parse_weights(a, v, &weights)) return 1;
            i++;
        } else if (!strcmp(a, "--backend") && v) {
            if (strcmp(v, "cpu") && strcmp(v, "vulkan")) {
                fprintf(stderr, "facet: bench: --backend expects cpu or vulkan, got '%s'\n", v);
                return 1;
            }
            backend = v;
            i++;
        } else if (!strcmp(a, "--device") && v) {
            if (!cli_parse_int(a, v, 0, 1023, &device)) return 1;
            device++;
            i++;
        } else if (!strcmp(a, "--kv-cache") && v) {
            if (!cli_parse_kv_type(a, v, &kv)) return 1;
            i++;
        } else if (!strcmp(a, "--no-cold")) {
            no_cold = 1;
        } else if (!strcmp(a, "--json") && v) {
            json_path = v;
            i++;
        } else if (!strcmp(a, "--pipeline-parallel") && v) {
            if (!cli_parse_int(a, v, 1, 64, &pp)) return 1;
            i++;
        } else if (!strcmp(a, "--tensor-parallel") && v) {
            if (!cli_parse_int(a, v, 1, 64, &tp)) return 1;
            i++;
        } else if (a[0] != '-' && !model_dir) {
            model_dir = a;
        } else {
            goto bad;
        }
        continue;
    bad:
        {
            static const char *const value_opts[] = {"--shapes", "--reps", "--concurrency", "-n", "--threads",
                                                     "--weights", "--kv-cache", "--json", "--backend",
                                                     "--device", "--pipeline-parallel",
                                                     "--tensor-parallel", NULL};
            if (!cli_missing_value("bench", a, !v, value_opts))
                fprintf(stderr, "facet: bench: bad argument '%s' (facet bench --help)\n", a);
        }
        return 1;
    }
    if (!model_dir) {
        fprintf(stderr, "facet: bench: MODEL is required\n");
        return 1;
    }
    if (!cli_check_device("bench", backend, device)) return 1;
    char model_buf[4096];
    if (!cli_model_folder(&model_dir, model_buf, sizeof model_buf)) return 1;
    if (json_path) { /* a path that cannot be written fails now, not after the benchmark */
        FILE *jf = fopen(json_path, "a");
        if (!jf) {
            fprintf(stderr, "facet: bench: --json %s: %s\n", json_path, strerror(errno));
            return 1;
        }
        fclose(jf);
    }

    if (pp * tp > 1) { /* a parallel job follows one session: bench_par.h */
        bench_par_args pa = {model_dir, pp, tp, shapes, n_shapes, concs, n_concs, steps, reps,
                             threads, weights, kv, backend, json_path};
        return bench_parallel(&pa);
    }

    facet_error err = {0};
    /* cold: convert from the checkpoint, cache untouched */
    facet_load_options lo = {.n_threads = threads, .weights = weights, .no_cache = 1,
                             .backend = backend, .device = device};
    double t_cold = -1;
    facet_model *model = NULL;
    if (!no_cold) {
        t_cold = now_s();
        if (facet_model_load(model_dir, &lo, &model, &err) != FACET_OK) return cli_fail(&err);
        t_cold = now_s() - t_cold;
        facet_model_free(model);
        model = NULL;
    }
    /* cached: make sure the cache exists, then time a load that maps it */
    lo.no_cache = 0;
    if (facet_model_load(model_dir, &lo, &model, &err) != FACET_OK) return cli_fail(&err);
    facet_model_free(model);
    model = NULL;
    double t_cached = now_s();
    if (facet_model_load(model_dir, &lo, &model, &err) != FACET_OK) return cli_fail(&err);
    t_cached = now_s() - t_cached;
    facet_model_info info;
    facet_model_get_info(model, &info);
    if (info.device_note) fprintf(stderr, "facet: %s\n", info.device_note);
    if (17 + (long)steps > info.max_position_embeddings) {
        fprintf(stderr, "facet: bench: -n %d: the decode runs hold 16 prompt tokens + %d steps, "
                        "more than max_position_embeddings=%d\n", steps, steps,
                info.max_position_embeddings);
        facet_model_free(model);
        return 1;
    }
    int cache_hit = info.weight_cache == FACET_WCACHE_HIT;
    const char *weights_name = facet_weight_format_name(info.weights);

    facet_pool *pool = facet_pool_create(info.n_threads);
    double bw = pool ? facet_measure_read_bandwidth(pool, (size_t)1 << 30, 5) : 0;
    double triad = pool ? facet_measure_triad_bandwidth(pool, (size_t)256 << 20, 3) : 0;
    double gflops = pool ? facet_measure_peak_gflops(pool) : 0;
    /* the instruction whose peak is measured: GGUF block types multiply 8-bit activation
     * blocks, as int8 does */
    facet_wformat peak_fmt = info.weights == FACET_WEIGHTS_GGUF ? FACET_WF_Q8 : facet_wformat_of(info.weights);
    double gflops_fmt = pool ? facet_measure_peak_gflops_format(pool, peak_fmt) : 0;

    double gb = (double)info.decode_bytes / 1e9; /* what a decoded token reads */
    const char *kv_name = facet_kv_type_name(kv == FACET_KV_AUTO ? facet_auto_kv(info.weights) : kv);
    if (info.decode_bytes != info.weight_bytes)
        printf("model %s | weights %s %.3f GB, %.3f GB read per decoded token | KV cache %s | "
               "threads %d\n", model_dir, weights_name, (double)info.weight_bytes / 1e9, gb,
               kv_name, info.n_threads);
    else
        printf("model %s | weights %s %.3f GB | KV cache %s | threads %d\n", model_dir,
               weights_name, gb, kv_name, info.n_threads);
    if (info.weights == FACET_WEIGHTS_F32)
        printf("read bandwidth %.1f GB/s (triad %.1f GB/s) | peak f32 FMA %.1f GFLOP/s | "
               "decode ceiling %.1f tok/s\n", bw, triad, gflops_fmt, bw / gb);
    else
        printf("read bandwidth %.1f GB/s (triad %.1f GB/s) | peak f32 FMA %.1f GFLOP/s, %s %.1f "
               "GFLOP/s | decode ceiling %.1f tok/s\n",
               bw, triad, gflops, weights_name, gflops_fmt, bw / gb);
    char how[1200] = "cache NOT used: see facet run for why";
    if (info.weight_cache == FACET_WCACHE_OFF) /* run prints nothing then: say why here */
        snprintf(how, sizeof how, "cache NOT used: %s",
                 info.weight_cache_note && info.weight_cache_note[0] ? info.weight_cache_note
                 : gguf_path_is_gguf(model_dir) ? "GGUF models have no weight cache yet"
                                                : "the weight cache is off (FACET_NO_CACHE)");
    if (cache_hit)
        snprintf(how, sizeof how, "weight cache mapped, %.0f%% of the weights on 2 MiB pages",
                 info.weight_bytes ? fmin(100.0, 100.0 * (double)info.weight_cache_huge_bytes /
                                                     (double)info.weight_bytes) : 0.0);
    if (no_cold)
        printf("load: cold not measured (--no-cold), cached %.3f s (%s)\n", t_cached, how);
    else
        printf("load: cold %.3f s, cached %.3f s (%s), %.0fx\n", t_cold, t_cached, how,
               t_cached > 0 ? t_cold / t_cached : 0);

    int V = info.vocab_size;
    /* warm-up: the mapped cache is faulted in by the first pass over the weights (a
     * one-token prefill); timed and reported apart, so that no measurement below pays it */
    double t_warm = now_s();
    {
        facet_session *s = NULL;
        facet_session_options so = {1, 8, kv};
        float *logits = malloc(sizeof(float) * (size_t)V);
        int32_t one = 1 % V;
        int ok = logits && facet_session_create(model, &so, &s, &err) == FACET_OK &&
                 facet_prefill(s, 0, &one, 1, logits, &err) == FACET_OK;
        free(logits);
        facet_session_free(s);
        if (!ok) {
            facet_model_free(model);
            facet_pool_free(pool);
            return cli_fail(&err);
        }
    }
    t_warm = now_s() - t_warm;
    printf("first token after the cached load (weights faulted in): %.3f s\n", t_warm);
    json_t *jpre = json_array(), *jdec = json_array();
    printf("\n%-10s %10s %12s %12s %12s %12s\n", "prompt", "TTFT ms", "tok/s", "GFLOP/s", "of peak",
           "peak");
    for (int k = 0; k < n_shapes; k++) {
        int L = shapes[k];
        if (L > info.max_position_embeddings) {
            printf("%-10d skipped: longer than max_position_embeddings=%d\n", L,
                   info.max_position_embeddings);
            continue;
        }
        double ttft[MAX_PREFILL_REPS], peak[MAX_PREFILL_REPS], ofp[MAX_PREFILL_REPS];
        int n = time_prefill(model, V, L, kv, reps, pool, facet_wformat_of(info.weights), ttft, peak,
                            &err);
        if (n <= 0) goto report; /* err says why; no decode after a failed prefill */
        /* GFLOP/s: 2 flops per weight of the layers' matrices per token (lm_head and
         * attention not counted); "of peak" the median of each prefill's GFLOP/s over the
         * peak measured right before it */
        json_t *runs = json_array(); /* before the medians, which sort their arrays in place */
        for (int i = 0; i < n; i++)
            json_array_append_new(runs, json_pack("{s:f, s:f}", "ttft_ms", ttft[i] * 1e3, "peak_gflops", peak[i]));
        for (int i = 0; i < n; i++)
            ofp[i] = peak[i] > 0 ? 100.0 * 2.0 * (double)info.layer_matrix_params * L / ttft[i] / 1e9 / peak[i] : 0.0;
        double t = facet_median(ttft, n), pk = facet_median(peak, n), of = facet_median(ofp, n);
        double gf = 2.0 * (double)info.layer_matrix_params * L / t / 1e9;
        printf("%-10d %10.1f %12.1f %12.1f %11.0f%% %12.1f\n", L, t * 1e3, L / t, gf, of, pk);
        json_array_append_new(jpre, json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:i, s:o}", "tokens", L,
                                              "ttft_ms", t * 1e3, "tok_s", L / t, "gflops", gf,
                                              "peak_gflops", pk, "of_peak", of / 100.0, "reps", n,
                                              "runs", runs));
    }
    printf("\n%-12s %14s %16s %12s %12s\n", "concurrency", "tok/s per seq", "aggregate tok/s",
           "probe GB/s", "of ceiling");
    static double rate[MAX_CHUNKS], probe_gbs[MAX_CHUNKS], ratio[MAX_CHUNKS];
    for (int k = 0; k < n_concs; k++) {
        int c = concs[k], n_chunks = 0;
        /* the ceiling of each chunk of DECODE_CHUNK steps: a probe taken just before it
         * (the bandwidth can change within seconds); the figures are the chunks' medians */
        double t = time_decode(model, V, c, steps, kv, pool, rate, probe_gbs, &n_chunks, &err);
        if (t <= 0) break;
        double agg = (double)c * steps / t;
        int np = 0; /* the chunks whose probe worked */
        for (int i = 0; i < n_chunks; i++)
            if (probe_gbs[i] > 0) {
                ratio[np] = rate[i] / (probe_gbs[i] / gb);
                probe_gbs[np++] = probe_gbs[i];
            }
        double bw_now = np ? facet_median(probe_gbs, np) : bw;
        double of = np ? 100.0 * facet_median(ratio, np) : bw > 0 ? 100.0 * (agg / c) / (bw / gb) : 0.0;
        printf("%-12d %14.2f %16.2f %12.1f %11.0f%%\n", c, agg / c, agg, bw_now, of);
        json_array_append_new(jdec, json_pack("{s:i, s:f, s:f, s:f, s:f}", "concurrency", c,
                                              "tok_s_per_seq", agg / c, "aggregate_tok_s", agg,
                                              "bandwidth_gb_s", bw_now, "of_ceiling", of / 100.0));
    }
report:
    facet_pool_free(pool);
    int rc = 0;
    if (err.status != FACET_OK) rc = cli_fail(&err);
    if (json_path) {
        json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:{s:f, s:f, s:f}, s:o, s:o}",
                              "model", model_dir, "weights", weights_name, "kv_cache", kv_name,
                              "threads", info.n_threads, "bandwidth_gb_s", bw, "triad_gb_s", triad,
                              "peak_gflops", gflops_fmt, "peak_gflops_f32", gflops,
                              "weight_bytes", (json_int_t)info.weight_bytes,
                              "decode_bytes", (json_int_t)info.decode_bytes,
                              "layer_matrix_params", (json_int_t)info.layer_matrix_params,
                              "load_s", "cold", t_cold, "cached", t_cached, "first_token_s", t_warm, "prefill", jpre,
                              "decode", jdec);
        errno = 0;
        if (json_dump_file(j, json_path, JSON_INDENT(2)) != 0) {
            fprintf(stderr, "facet: bench: cannot write %s: %s\n", json_path,
                    errno ? strerror(errno) : "write failed");
            rc = 1;
        }
        json_decref(j);
    } else {
        json_decref(jpre);
        json_decref(jdec);
    }
    facet_model_free(model);
    return rc;
}
