/*
 * cmd_plan.c — `facet plan MODEL [--ctx N] [--batch B] [--weights FMT] [--backend B]
 *               [--device N] [--json]`
 * (vulkan: the device is opened, named, its limits printed and the checkpoint judged
 * against them too, device_judge.c)
 *
 * Prints the memory and kernel plan (src/model/plan.h) and the verdict on the backend.
 * Exit: 0 when the checkpoint is supported (or pending the tensor probe), 2 when it is
 * refused (the memory plan is still printed: it follows from the facts alone), 1 on
 * unusable input or bad options.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/cli.h"
#include "io/gguf.h"
#include "model/facts_gguf.h"
#include "model/gguf_checkpoint.h"
#include "model/facts.h"
#include "model/plan.h"
#include "model/report.h"
#include "model/split.h"
#include "model/table.h"
#include "model/weights_policy.h"
#include "util/error.h"

static void plan_usage(FILE *out) {
    fprintf(out, "usage: facet plan MODEL [--ctx N] [--batch B] [--weights auto|f32|bf16|f16|int8|q4|gguf]\n"
                 "                  [--kv-cache auto|f32|bf16|f16] [--backend cpu|vulkan [--device N]] [--json]\n"
                 "                  [--pipeline-parallel P] [--tensor-parallel T]\n"
                 "MODEL: a checkpoint folder, a config.json or a GGUF file. --ctx defaults to\n"
                 "max_position_embeddings, --batch to 1, --weights to auto (the checkpoint's\n"
                 "own precision: bf16, f16 or f32; gguf for a GGUF file; what facet run\n"
                 "loads by default),\n"
                 "--kv-cache to auto (f32 with f32 weights, f16 with f16, bf16 otherwise).\n"
                 "FACET_MEM_AVAILABLE=BYTES overrides the free\n"
                 "RAM read from /proc/meminfo. --pipeline-parallel/--tensor-parallel: what each\n"
                 "of the P x T MPI ranks holds (its layers' weights and KV), whether that fits\n"
                 "one machine's free RAM, and the bytes it sends per decoded token.\n"
                 "example: facet plan models/stories260k --ctx 512 --batch 4\n");
}

static int parse_count(const char *opt, const char *s, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 1) {
        fprintf(stderr, "facet: plan: %s '%s' is not a positive integer\n", opt, s);
        return 1;
    }
    *out = v;
    return 0;
}

static facet_facts g_facts;

/* What a decoded token reads of GGUF tensor t of b run-time bytes: k of the E experts of
 * a stacked expert tensor (*_exps), one row of token_embd when an output matrix exists
 * (else it is the tied output projection, read whole), all of anything else. */
static uint64_t gguf_decode_share(const gguf_model *m, const gguf_tensor *t, uint64_t b) {
    const facet_facts *f = &g_facts;
    if (strstr(t->name, "_exps.") && t->n_dims == 3 && f->num_experts > 0 &&
        f->num_experts_per_tok > 0 && f->num_experts_per_tok <= f->num_experts)
        return b / (uint64_t)f->num_experts * (uint64_t)f->num_experts_per_tok;
    if (!strcmp(t->name, "token_embd.weight") && t->n_dims == 2 && t->ne[1] > 0 &&
        gguf_model_find(m, "output.weight"))
        return b / (uint64_t)t->ne[1];
    return b;
}

/* A GGUF file's tensors as they run in their own types (--weights gguf, what auto picks
 * for a file with block-type matrices): their bytes and formats into o, and the list
 * [{name, type, runs_as, bytes}] in name order, the per-type totals into types ({type: {tensors,
 * bytes}}). */
static json_t *gguf_tensors(const gguf_model *m, facet_plan_opts *o, json_t *types,
                            uint32_t *layer_formats) {
    json_t *a = json_array();
    for (size_t i = 0; i < m->n_tensors; i++) {
        const gguf_tensor *t = m->by_name[i];
        int fmt;
        uint64_t b = facet_gguf_tensor_run_bytes(t, &fmt);
        if (!b) continue;
        o->gguf_weight_bytes += b;
        o->gguf_decode_bytes += gguf_decode_share(m, t, b);
        if (fmt >= 0) o->gguf_formats |= 1u << fmt;
        if (fmt >= 0 && !strncmp(t->name, "blk.", 4)) *layer_formats |= 1u << fmt;
        const char *tn = gguf_type_name(t->type);
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:I}", "name", t->name, "type", tn,
                                           "runs_as", fmt >= 0 ? facet_wformat_name((facet_wformat)fmt) : "f32",
                                           "bytes", (json_int_t)b));
        json_t *e = json_object_get(types, tn);
        if (!e) json_object_set_new(types, tn, e = json_pack("{s:i, s:I}", "tensors", 0, "bytes", (json_int_t)0));
        json_object_set_new(e, "tensors", json_integer(json_integer_value(json_object_get(e, "tensors")) + 1));
        json_object_set_new(e, "bytes", json_integer(json_integer_value(json_object_get(e, "bytes")) + (json_int_t)b));
    }
    return a;
}

/* Rank r of split sp: its stage's layers, weights, KV and traffic. */
static uint64_t rank_total(const facet_split *sp, int s) { return sp->weight_bytes[s] + sp->kv_bytes[s]; }

static json_t *split_json(const facet_split *sp, const facet_plan *p) {
    json_t *ranks = json_array();
    for (int r = 0; r < sp->pp * sp->tp; r++) {
        int s = r / sp->tp;
        json_array_append_new(
            ranks, json_pack("{s:i, s:i, s:i, s:[i,i], s:I, s:I, s:I, s:b, s:I}", "rank", r,
                             "stage", s, "tp_rank", r % sp->tp, "layers", sp->first[s],
                             sp->first[s + 1] - 1, "weight_bytes", (json_int_t)sp->weight_bytes[s],
                             "kv_bytes", (json_int_t)sp->kv_bytes[s], "total_bytes",
                             (json_int_t)rank_total(sp, s), "fits",
                             rank_total(sp, s) <= p->mem_available,
                             "sent_bytes_per_token", (json_int_t)sp->sent_per_token[s]));
    }
    return json_pack("{s:i, s:i, s:i, s:o}", "pipeline_parallel", sp->pp, "tensor_parallel",
                     sp->tp, "ranks_total", sp->pp * sp->tp, "ranks", ranks);
}

static void print_split(const facet_split *sp, const facet_plan *p) {
    char a[32], b[32], c[32];
    printf("parallel: %d pipeline stage%s x %d tensor rank%s = %d MPI ranks (mpirun -np %d); "
           "each rank on a machine with the free RAM above:\n", sp->pp, sp->pp > 1 ? "s" : "",
           sp->tp, sp->tp > 1 ? "s" : "", sp->pp * sp->tp, sp->pp * sp->tp);
    for (int s = 0; s < sp->pp; s++) {
        facet_bytes_text(sp->weight_bytes[s], a, sizeof a);
        facet_bytes_text(sp->kv_bytes[s], b, sizeof b);
        facet_bytes_text(rank_total(sp, s), c, sizeof c);
        printf("  stage %d (rank%s %d", s, sp->tp > 1 ? "s" : "", s * sp->tp);
        if (sp->tp > 1) printf("-%d", s * sp->tp + sp->tp - 1);
        printf("%s), layers %d-%d: weights %s + KV %s = %s per rank -> %s; sends %llu "
               "bytes per decoded token per rank\n", s == 0 ? ", with embeddings and lm_head" : "",
               sp->first[s], sp->first[s + 1] - 1, a, b, c,
               rank_total(sp, s) <= p->mem_available ? "fits" : "does NOT fit",
               (unsigned long long)sp->sent_per_token[s]);
    }
    printf("  traffic: hidden_size x 4 bytes from each stage to the next (the last back to "
           "rank 0)%s; rank 0's command per step: 25 bytes to each other rank\n",
           sp->tp > 1 ? ", and two all-reduces of hidden_size x 4 bytes per layer among a "
                        "stage's tensor ranks (2 (T-1)/T of it sent per rank)" : "");
    /* measured, not modelled: resident memory minus weights minus the KV held was
     * 6.6-8.3 MiB per process on a 241 MB checkpoint (bench/RESULTS.md, issue 21) */
    printf("  not counted: each process's fixed runtime part, ~8 MiB measured (libc, Open "
           "MPI's buffers, batch scratch, stacks)\n");
}

/* What facet run refuses on vulkan beyond the table's facts (engine/model.c, session.c):
 * a weight format no shader reads (backend.h FACET_VULKAN_WFORMATS: the format's, its
 * output projection's, or a GGUF file's own blocks) and an f16 KV cache (asked for:
 * auto's f16 became bf16 above). Added to *v so plan's verdict and exit status are
 * run's. */
static void vulkan_refusals(const facet_plan *p, const facet_facts *f, uint32_t gguf_formats,
                            facet_verdict *v) {
    facet_weight_format w = p->weights == FACET_PLAN_GGUF
                                ? FACET_WEIGHTS_GGUF
                                : facet_wformat_public((facet_wformat)p->weights);
    int bad = facet_vulkan_unread_format(facet_load_wformats(w, f, gguf_formats));
    if (bad >= 0)
        facet_verdict_refuse(v, "weights", facet_wformat_name((facet_wformat)bad),
                             FACET_VULKAN_WEIGHTS);
    if (p->kv_type == FACET_KV_F16) facet_verdict_refuse(v, "kv_cache", "f16", "f32, bf16");
}

int cmd_plan(int argc, char **argv) {
    const char *path = NULL, *backend = "cpu";
    facet_plan_opts o = {.ctx = 0, .batch = 1, .weights = FACET_PLAN_AUTO};
    int json = 0, device = 0;
    int64_t pp = 1, tp = 1;
    static const char *const value_opts[] = {"--ctx", "--batch", "--weights", "--kv-cache", "--backend",
                                             "--pipeline-parallel", "--tensor-parallel", "--device",
                                             NULL};
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--ctx") && i + 1 < argc) {
            if (parse_count("--ctx", argv[++i], &o.ctx)) return 1;
        } else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
            if (parse_count("--batch", argv[++i], &o.batch)) return 1;
        } else if (!strcmp(argv[i], "--weights") && i + 1 < argc) {
            if (facet_plan_format_parse(argv[++i], &o.weights)) {
                fprintf(stderr, "facet: plan: --weights '%s' is not one of auto, f32, bf16, "
                                "f16, int8, q4, gguf\n", argv[i]);
                return 1;
            }
        } else if (!strcmp(argv[i], "--pipeline-parallel") && i + 1 < argc) {
            if (parse_count("--pipeline-parallel", argv[++i], &pp)) return 1;
        } else if (!strcmp(argv[i], "--tensor-parallel") && i + 1 < argc) {
            if (parse_count("--tensor-parallel", argv[++i], &tp)) return 1;
        } else if (!strcmp(argv[i], "--kv-cache") && i + 1 < argc) {
            if (!cli_parse_kv_type("--kv-cache", argv[++i], &o.kv_cache)) return 1;
        } else if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            backend = argv[++i]; /* an unknown one is refused by the table, naming it */
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (!cli_parse_int("--device", argv[++i], 0, 1023, &device)) return 1;
            device++;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            plan_usage(stdout);
            return 0;
        } else if (cli_missing_value("plan", argv[i], i + 1 == argc, value_opts)) {
            return 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "facet: plan: unknown option '%s'\n", argv[i]);
            plan_usage(stderr);
            return 1;
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, "facet: plan: unexpected argument '%s'\n", argv[i]);
            return 1;
        }
    }
    if (!path) {
        plan_usage(stderr);
        return 1;
    }
    if (!cli_check_device("plan", backend, device)) return 1;
    if (!cli_env_mem_available(&o.mem_available)) return 1; /* tests: a fixed machine size */

    facet_facts *f = &g_facts;
    facet_error err;
    static facet_verdict v;
    int rc;
    json_t *gg_list = NULL, *gg_types = NULL; /* a GGUF file's tensors, made after its checks */
    uint32_t gg_layer_formats = 0; /* formats of its layers' matrices (tensor parallel cuts them) */
    if (gguf_path_is_gguf(path)) { /* facts and tensor types from the GGUF file */
        gguf_model gm;
        if (gguf_model_open(path, &gm, &err) != FACET_OK) return cli_fail(&err);
        facet_status st = facet_facts_from_gguf(&gm, f, &err);
        if (st == FACET_OK) {
            facet_judge(f, backend, &v);
            facet_gguf_judge(&gm, &v);
        }
        if (st != FACET_OK) {
            gguf_model_close(&gm);
            return cli_fail(&err);
        }
        rc = cli_probe_gguf_weights(&gm, f, backend);
        if (!rc) {
            gg_types = json_object();
            gg_list = gguf_tensors(&gm, &o, gg_types, &gg_layer_formats);
        }
        gguf_model_close(&gm);
        if (rc) return rc;
    } else {
        if (o.weights == FACET_PLAN_GGUF) {
            fprintf(stderr, "facet: %s: --weights gguf keeps a GGUF file's own block types, and "
                            "this checkpoint is not a GGUF file (expected auto, f32, bf16, f16, "
                            "int8 or q4)\n", path);
            return 1;
        }
        if (facet_facts_read(path, f, &err) != FACET_OK) return cli_fail(&err);
        rc = cli_probe_weights(path, f, backend);
        if (rc) return rc;
        facet_judge(f, backend, &v);
    }
    int vulkan = !strcmp(backend, "vulkan");
    static facet_plan p;
    facet_status pst = facet_plan_make(f, &o, &p, &err);
    /* Vulkan: an auto cache that would be f16 is bf16 there (session.c), same bytes */
    if (pst == FACET_OK && vulkan && o.kv_cache == FACET_KV_AUTO && p.kv_type == FACET_KV_F16) {
        o.kv_cache = FACET_KV_BF16;
        pst = facet_plan_make(f, &o, &p, &err);
    }
    if (pst != FACET_OK) {
        json_decref(gg_list);
        json_decref(gg_types);
        if (f->family_known) return cli_fail(&err);
        /* outside the table with shape facts missing: the refusals are the answer */
        static char buf[FACET_MAX_REFUSALS * 420];
        facet_verdict_format(&v, buf, sizeof buf);
        fprintf(stderr, "facet: no plan: %s\n", err.message);
        fputs(buf, stderr);
        return 2;
    }
    if (vulkan) vulkan_refusals(&p, f, o.gguf_formats, &v);
    if (vulkan) { /* the device's limits (--json: on stderr) */
        facet_weight_format w = p.weights == FACET_PLAN_GGUF
                                    ? FACET_WEIGHTS_GGUF
                                    : facet_wformat_public((facet_wformat)p.weights);
        if (cli_judge_device(json ? stderr : stdout, "plan", device, f, w, &v, NULL)) {
            json_decref(gg_list);
            json_decref(gg_types);
            return 2;
        }
    }
    rc = v.status == FACET_VERDICT_REFUSED ? 2 : 0;
    /* a split over MPI ranks: refused by the facts, or what each rank holds and sends */
    static facet_split sp;
    int par = pp * tp > 1;
    if (par && (pp > 64 || tp > 64)) {
        fprintf(stderr, "facet: plan: --pipeline-parallel and --tensor-parallel are at most 64\n");
        return 1;
    }
    if (par && facet_split_make(f, &p, (int)pp, (int)tp, &sp, &err) != FACET_OK) {
        json_decref(gg_list);
        json_decref(gg_types);
        return cli_fail(&err);
    }
    /* what a parallel run refuses beyond the facts (engine/model.c, weights_tp.c) */
    if (par && (vulkan || (tp > 1 && p.weights == FACET_PLAN_GGUF &&
                           (gg_layer_formats >> FACET_WF_COUNT)))) {
        json_decref(gg_list);
        json_decref(gg_types);
        if (vulkan)
            facet_err(&err, FACET_E_UNSUPPORTED, "REFUSED: backend=vulkan in a parallel job is "
                      "not supported (supported: one process, the whole model)");
        else
            for (int b = FACET_WF_COUNT; b < 32; b++)
                if (gg_layer_formats >> b & 1) {
                    facet_err(&err, FACET_E_UNSUPPORTED, "--tensor-parallel cannot cut a %s "
                              "matrix (GGUF block type): load with --weights f32, bf16, f16, "
                              "int8 or q4", facet_wformat_name((facet_wformat)b));
                    break;
                }
        return cli_fail(&err);
    }

    if (json) {
        json_t *out = facet_plan_json(&p);
        if (par) json_object_set_new(out, "parallel", split_json(&sp, &p));
        json_object_set_new(out, "verdict", facet_verdict_json(&v));
        if (gg_list) { /* a GGUF file: every tensor as it runs in its own type */
            json_object_set_new(json_object_get(out, "weight_bytes"), "gguf",
                                json_integer((json_int_t)p.weight_bytes[FACET_PLAN_GGUF]));
            json_object_set_new(out, "gguf_tensors", gg_list);
            json_object_set_new(out, "gguf_types", gg_types);
        } else {
            json_decref(gg_types);
        }
        json_dumpf(out, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(out);
        return rc;
    }
    char a[32], b[32], c[32], d[32];
    printf("weights at run time (matrices packed in the format, norms and biases f32; int8 = "
           "one f16 scale per 32 inputs; q4 = 4 bits + one f16 scale per 32, its output "
           "projection Q6_K (int8 where its inputs are not a multiple of 256)):\n");
    for (int i = 0; i < FACET_WF_COUNT; i++) {
        facet_bytes_text(p.weight_bytes[i], a, sizeof a);
        printf("  %-5s %15llu bytes (%s)%s\n", facet_plan_format_name(i),
               (unsigned long long)p.weight_bytes[i], a, i == p.weights ? "   <- chosen" : "");
    }
    if (gg_list) {
        facet_bytes_text(p.weight_bytes[FACET_PLAN_GGUF], a, sizeof a);
        printf("  %-5s %15llu bytes (%s)%s  each matrix in the file's own type (Q4_0 and Q8_0\n"
               "        repacked exactly as q4 and int8 panels):\n", "gguf",
               (unsigned long long)p.weight_bytes[FACET_PLAN_GGUF], a,
               p.weights == FACET_PLAN_GGUF ? "   <- chosen" : "");
        const char *tn;
        json_t *e;
        json_object_foreach(gg_types, tn, e) {
            facet_bytes_text((uint64_t)json_integer_value(json_object_get(e, "bytes")), a, sizeof a);
            long long nt = (long long)json_integer_value(json_object_get(e, "tensors"));
            printf("        %-6s %4lld tensor%s %12lld bytes (%s)\n", tn, nt, nt == 1 ? " " : "s",
                   (long long)json_integer_value(json_object_get(e, "bytes")), a);
        }
        printf("        (every tensor's type and bytes: facet plan --json, gguf_tensors)\n");
        json_decref(gg_list);
        json_decref(gg_types);
    } else {
        json_decref(gg_types);
    }
    if (p.weights_note[0]) printf("  note: %s\n", p.weights_note);
    facet_bytes_text(p.decode_bytes_per_token, a, sizeof a);
    printf("parameters: %llu total, %llu read per decoded token%s; %s read per decoded token "
           "(%s)\n", (unsigned long long)p.n_params, (unsigned long long)p.n_active_params,
           f->n_sparse_layers ? " (all but the experts a token does not choose)" : "",
           a, facet_plan_format_name(p.weights));
    printf("KV cache: %s\n", p.kv_layout);
    printf("  per token, naive (layers x %s x %d B): %llu bytes\n",
           f->kv_lora_rank > 0 ? "(kv_lora_rank + qk_rope_head_dim)" : "kv_heads x head_dim x 2",
           p.kv_type == FACET_KV_F32 ? 4 : 2, (unsigned long long)p.kv_bytes_per_token_naive);
    if (f->kv_lora_rank > 0) { /* what caching expanded keys and values would take */
        uint64_t per = (uint64_t)f->num_attention_heads *
                       (uint64_t)(f->qk_nope_head_dim + f->qk_rope_head_dim + f->v_head_dim) *
                       (p.kv_type == FACET_KV_F32 ? 4u : 2u) * (uint64_t)f->num_hidden_layers;
        printf("  per token, expanded per-head keys and values (layers x heads x (qk_nope + "
               "qk_rope + v_head_dim) x %d B): %llu bytes, %.1fx the latent cache\n",
               p.kv_type == FACET_KV_F32 ? 4 : 2, (unsigned long long)per,
               p.kv_bytes_per_token_naive ? (double)per / (double)p.kv_bytes_per_token_naive : 0.0);
    }
    printf("  per token, actual at ctx %lld: %.1f bytes (%d global, %d windowed layers)\n",
           (long long)p.ctx, p.kv_bytes_per_token_actual, p.n_global_layers, p.n_sliding_layers);
    facet_bytes_text(p.kv_bytes_per_sequence, a, sizeof a);
    facet_bytes_text(p.total_bytes, b, sizeof b);
    facet_bytes_text(p.mem_available, c, sizeof c);
    facet_bytes_text(p.weight_bytes[p.weights], d, sizeof d);
    if (p.state_bytes_per_sequence) {
        char e[32];
        facet_bytes_text(p.state_bytes_per_sequence, e, sizeof e);
        printf("recurrent state: %llu bytes per sequence (%s; fixed, whatever ctx)\n",
               (unsigned long long)p.state_bytes_per_sequence, e);
        printf("memory at ctx %lld, batch %lld: weights %s + (KV %s + state %s) x %lld = %llu "
               "bytes (%s)\n", (long long)p.ctx, (long long)p.batch, d, a, e,
               (long long)p.batch, (unsigned long long)p.total_bytes, b);
    } else {
        printf("memory at ctx %lld, batch %lld: weights %s + KV %lld x %s = %llu bytes (%s)\n",
               (long long)p.ctx, (long long)p.batch, d, (long long)p.batch, a,
               (unsigned long long)p.total_bytes, b);
    }
    printf("free RAM (MemAvailable): %s -> %s\n", c, p.fits ? "fits" : "does NOT fit");
    printf("largest ctx at batch %lld: %lld; largest batch at ctx %lld: %lld\n",
           (long long)p.batch, (long long)p.max_ctx_at_batch, (long long)p.ctx,
           (long long)p.max_batch_at_ctx);
    if (!strcmp(backend, "cpu"))
        printf("kernels (cpu): %s; %s; %s; %s\n", p.matmul_path, p.norm_path, p.rope_path,
               p.ffn_path);
    else if (!strcmp(backend, "vulkan") && facet_vulkan_built()) /* backend_vulkan.c */
        printf("kernels (vulkan): matvec.comp (decode) / matmul_tiled.comp (prefill) "
               "(weights: %s), attn_flash.comp (tiled; split-K decode), rmsnorm/rope/gated_act "
               "shaders\n", FACET_VULKAN_WEIGHTS);
    else /* the plan's kernel paths are the CPU's */
        printf("kernels (%s): none in this binary\n", backend);
    for (int i = 0; i < p.n_groups; i++) /* + what a CPU session runs there */
        printf("  layers %d-%d: %s%s%s\n", p.groups[i].first, p.groups[i].last,
               p.groups[i].attention, strcmp(backend, "cpu") ? "" : "; ",
               strcmp(backend, "cpu") ? "" : p.groups[i].kernels);
    if (par) print_split(&sp, &p);
    printf("verdict: %s on %s\n", facet_verdict_status_name(v.status), v.backend);
    static char buf[FACET_MAX_REFUSALS * 420];
    facet_verdict_format(&v, buf, sizeof buf);
    fputs(buf, stdout);
    return rc;
}
