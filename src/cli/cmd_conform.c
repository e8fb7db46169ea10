/*
 * cmd_conform.c — `facet conform` and `facet onboard` (DESIGN.md, "Command line").
 *
 *   facet conform PATH [--backend cpu|vulkan [--device N]] [--json FILE]
 *   (vulkan: the device is opened, named, its limits printed and the checkpoint judged
 *   against them too, device_judge.c)
 *   facet conform --table [--markdown]   (the declared table; Markdown for docs)
 *   facet onboard PATH [--ledger FILE.jsonl] [--gate [--reference FILE.json |
 *                 --reference-logits FILE --prompt-ids IDS] [-n N] [--threads N]]
 *
 * onboard --gate runs the identity gate (onboard_gate.h) and records its level in the
 * ledger line ("verification"); conform --ledger FILE reads the newest such line for
 * the same checkpoint folder back into its report and JSON.
 *
 * conform exit codes: 0 supported, 3 supported pending the tensor probe (no weights:
 * a bare config.json or a folder without *.safetensors), 2 refused, 1 unusable input.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/cli.h"
#include "cli/onboard_gate.h"
#include "io/gguf.h"
#include "model/facts.h"
#include "model/facts_gguf.h"
#include "model/gguf_checkpoint.h"
#include "model/plan.h"
#include "model/report.h"
#include "model/weights_policy.h"
#include "model/table.h"

/* A GGUF model given as PATH (a .gguf file, a split part, or a folder holding one). */
static gguf_model g_gguf;
static int g_is_gguf;

/* Facts of PATH, probed when it has weights. Returns an exit code (0 ok, 1 unusable). */
static int load_facts(const char *path, facet_facts *f, const char *backend) {
    facet_error err;
    if (gguf_path_is_gguf(path)) {
        if (gguf_model_open(path, &g_gguf, &err) != FACET_OK) return cli_fail(&err);
        g_is_gguf = 1;
        if (facet_facts_from_gguf(&g_gguf, f, &err) != FACET_OK) return cli_fail(&err);
        return cli_probe_gguf_weights(&g_gguf, f, backend);
    }
    if (facet_facts_read(path, f, &err) != FACET_OK) return cli_fail(&err);
    return cli_probe_weights(path, f, backend);
}

/* A GGUF model's weights as they run in its own types (gguf_checkpoint.h): bytes, formats
 * (bit facet_wformat) and "Q4_0 x15 (540 KiB), ..." per type, read by judge(). */
static uint64_t g_gguf_bytes;
static uint32_t g_gguf_formats;
static char g_gguf_types[512];

static void gguf_types(const gguf_model *m) {
    uint64_t bytes[GGML_TYPE_COUNT] = {0};
    int count[GGML_TYPE_COUNT] = {0};
    g_gguf_bytes = 0;
    g_gguf_formats = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        int fmt;
        uint64_t b = facet_gguf_tensor_run_bytes(m->by_name[i], &fmt);
        if (!b) continue;
        g_gguf_bytes += b;
        if (fmt >= 0) g_gguf_formats |= 1u << fmt;
        bytes[m->by_name[i]->type] += b;
        count[m->by_name[i]->type]++;
    }
    size_t off = 0;
    g_gguf_types[0] = 0;
    for (int t = 0; t < GGML_TYPE_COUNT && off < sizeof g_gguf_types; t++) {
        if (!count[t]) continue;
        char b[32];
        facet_bytes_text(bytes[t], b, sizeof b);
        off += (size_t)snprintf(g_gguf_types + off, sizeof g_gguf_types - off, "%s%s x%d (%s)",
                                off ? ", " : "", gguf_type_name((uint32_t)t), count[t], b);
    }
}

/* The table's verdict, plus for a GGUF model its tensor types and weight format. */
static void judge(const facet_facts *f, const char *backend, facet_verdict *v) {
    facet_judge(f, backend, v);
    if (g_is_gguf) {
        facet_gguf_judge(&g_gguf, v);
        gguf_types(&g_gguf);
        /* run's default for the file (--weights auto = its own blocks, or q4 / int8 panels
         * for Q4_0 / Q8_0) where a block type has no Vulkan shader is refused on vulkan
         * (engine/model.c), as plan says */
        int bad = facet_vulkan_unread_format(g_gguf_formats);
        if (!strcmp(backend, "vulkan") && bad >= 0)
            facet_verdict_refuse(v, "weights", facet_wformat_name((facet_wformat)bad),
                                 FACET_VULKAN_WEIGHTS "; or run it with --weights f32, bf16, "
                                 "f16, int8 or q4");
    }
}

static void unload(void) {
    if (g_is_gguf) gguf_model_close(&g_gguf);
    g_is_gguf = 0;
}

static int verdict_exit(const facet_verdict *v) {
    switch (v->status) {
    case FACET_VERDICT_SUPPORTED: return 0;
    case FACET_VERDICT_PENDING_PROBE: return 3;
    case FACET_VERDICT_REFUSED: return 2;
    }
    return 1;
}

/* The plan with default options (ctx = max_position_embeddings, batch 1, auto), for
 * families in the table (`facet plan` plans any complete shape on request). */
static int default_plan(const facet_facts *f, facet_plan *p) {
    if (!f->family_known) return 0;
    facet_plan_opts o = {.ctx = 0, .batch = 1, .weights = FACET_PLAN_AUTO,
                         .gguf_weight_bytes = g_gguf_bytes, .gguf_formats = g_gguf_formats};
    facet_error err;
    return facet_plan_make(f, &o, p, &err) == FACET_OK;
}

static void print_plan_brief(FILE *out, const facet_plan *p) {
    char w[32], kv[32];
    facet_bytes_text(p->weight_bytes[p->weights], w, sizeof w);
    facet_bytes_text(p->kv_bytes_per_token_naive, kv, sizeof kv);
    fprintf(out, "plan: weights %s %s; KV cache %s/token (%s)", facet_plan_format_name(p->weights),
            w, kv, facet_kv_type_name(p->kv_type));
    if (p->n_sliding_layers)
        fprintf(out, ", %d windowed layers bounded by %lld", p->n_sliding_layers,
                (long long)p->window);
    fprintf(out, "; %s; %s; %s; %s\n", p->matmul_path, p->norm_path, p->rope_path, p->ffn_path);
    if (p->weights == FACET_PLAN_GGUF && g_gguf_types[0])
        fprintf(out, "plan: gguf tensors as they run: %s\n", g_gguf_types);
    if (p->weights_note[0]) fprintf(out, "plan: %s\n", p->weights_note);
    for (int i = 0; i < p->n_groups; i++)
        fprintf(out, "plan: layers %d-%d: %s\n", p->groups[i].first, p->groups[i].last,
                p->groups[i].attention);
}

static void print_verdict(FILE *out, const facet_verdict *v) {
    fprintf(out, "verdict: %s on %s", facet_verdict_status_name(v->status), v->backend);
    if (v->profile) fprintf(out, " (profile %s)", v->profile);
    if (v->status == FACET_VERDICT_REFUSED)
        fprintf(out, ", %d refusal%s", v->n_refusals + v->refusals_dropped,
                v->n_refusals + v->refusals_dropped == 1 ? "" : "s");
    fprintf(out, "\n");
    if (v->status == FACET_VERDICT_PENDING_PROBE) {
        fprintf(out, "pending the tensor probe (no *.safetensors given):");
        for (int i = 0; i < v->n_pending; i++) fprintf(out, "%s %s", i ? "," : "", v->pending[i]);
        fprintf(out, "\n");
    }
    if (v->ignored[0]) fprintf(out, "ignored config keys (not math-changing by name): %s\n", v->ignored);
    static char buf[FACET_MAX_REFUSALS * 420];
    facet_verdict_format(v, buf, sizeof buf);
    fputs(buf, out);
}

static int write_json(const char *file, json_t *o) {
    int rc = 0;
    if (!strcmp(file, "-")) {
        rc = json_dumpf(o, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
    } else {
        errno = 0;
        rc = json_dump_file(o, file, JSON_INDENT(2));
    }
    if (rc) fprintf(stderr, "facet: cannot write %s: %s\n", file, errno ? strerror(errno) : "write failed");
    return rc ? 1 : 0;
}

/* The absolute path of checkpoint folder PATH (a config.json path means its folder),
 * the key that ties a ledger line to a checkpoint; NULL when it does not resolve. */
static char *checkpoint_key(const char *path) {
    char *abs = realpath(path, NULL);
    if (!abs) return NULL;
    size_t n = strlen(abs);
    if (n > 12 && !strcmp(abs + n - 12, "/config.json")) abs[n - 12] = '\0';
    return abs;
}

/* Field `k` of a ledger verification: a string without control characters (it is
 * printed on one report line), else NULL. */
static const char *ledger_field(const json_t *v, const char *k) {
    const char *s = json_string_value(json_object_get(v, k));
    for (const char *c = s; c && *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) return NULL;
    return s;
}

/* A verification object as onboard writes it: level "validated" or "failed", and the
 * oracle, backend and weights as one-line strings. */
static int ledger_well_formed(const json_t *v) {
    const char *level = ledger_field(v, "level");
    return level && (!strcmp(level, "validated") || !strcmp(level, "failed")) &&
           ledger_field(v, "oracle") && ledger_field(v, "backend") && ledger_field(v, "weights");
}

/* The "verification" object of the newest line of ledger `file` whose "checkpoint" is
 * PATH's folder, or NULL (none, or no ledger). A missing ledger file is not an error; a
 * line that is not JSON, or whose verification is not as onboard writes it, is skipped
 * (the ledger is append-only and may be cut short). */
static json_t *ledger_verification(const char *file, const char *path) {
    char *key = checkpoint_key(path);
    FILE *fp = key ? fopen(file, "r") : NULL;
    json_t *found = NULL;
    char *line = NULL;
    size_t cap = 0;
    while (fp && getline(&line, &cap, fp) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        const char *ck = json_string_value(json_object_get(o, "checkpoint"));
        json_t *v = json_object_get(o, "verification");
        if (ck && !strcmp(ck, key) && json_is_object(v) && ledger_well_formed(v)) {
            json_decref(found);
            found = json_incref(v);
        }
        json_decref(o);
    }
    free(line);
    if (fp) fclose(fp);
    free(key);
    return found;
}

static void conform_usage(FILE *out) {
    fprintf(out, "usage: facet conform PATH [--backend cpu|vulkan [--device N]] [--json FILE|-] [--ledger FILE.jsonl]\n"
                 "       facet conform --table [--markdown]\n"
                 "       facet conform --gguf-types   (the GGUF tensor types that run, Markdown)\n"
                 "PATH: a checkpoint folder, a config.json, a .gguf file (any part of a split\n"
                 "one) or a folder holding one GGUF model. Exit: 0 supported, 3 supported\n"
                 "pending the tensor probe (no weights), 2 refused, 1 unusable input.\n"
                 "--ledger: report the verification level `facet onboard --gate` recorded there.\n"
                 "example: facet conform models/stories260k\n");
}

static facet_facts g_facts; /* large: keep off the stack */

/* The device conform judged against (--backend vulkan): its name and limits. */
static json_t *device_json(const facet_device_limits *l) {
    unsigned f = l->features;
    return json_pack("{s:s, s:i, s:i, s:I, s:I, s:b, s:I, s:I, s:[III], s:I, s:I, s:b, s:b, "
                     "s:b, s:b}", "name", l->name, "index", l->index, "count", l->count,
                     "memory_bytes", (json_int_t)l->memory_bytes, "buffer_heap_bytes",
                     (json_int_t)l->buffer_heap_bytes, "buffer_device_local",
                     l->buffer_device_local, "max_shared_bytes", (json_int_t)l->max_shared_bytes,
                     "max_invocations", (json_int_t)l->max_invocations, "max_group_size",
                     (json_int_t)l->max_group_size[0], (json_int_t)l->max_group_size[1],
                     (json_int_t)l->max_group_size[2], "subgroup_size",
                     (json_int_t)l->subgroup_size, "max_storage_range",
                     (json_int_t)l->max_storage_range, "float16", (f & FACET_DEV_FLOAT16) != 0,
                     "int8", (f & FACET_DEV_INT8) != 0, "storage16",
                     (f & FACET_DEV_STORAGE16) != 0, "storage8", (f & FACET_DEV_STORAGE8) != 0);
}

int cmd_conform(int argc, char **argv) {
    const char *path = NULL, *backend = "cpu", *json_file = NULL, *ledger = NULL;
    int table = 0, markdown = 0, gguf_types = 0, device = 0;
    for (int i = 0; i < argc; i++) {
        static const char *const value_opts[] = {"--backend", "--json", "--ledger", "--device",
                                                 NULL};
        if (cli_missing_value("conform", argv[i], i + 1 == argc, value_opts)) return 1;
        if (!strcmp(argv[i], "--table")) table = 1;
        else if (!strcmp(argv[i], "--gguf-types")) gguf_types = 1;
        else if (!strcmp(argv[i], "--markdown")) markdown = 1;
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_file = argv[++i];
        else if (!strcmp(argv[i], "--ledger") && i + 1 < argc) ledger = argv[++i];
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (!cli_parse_int("--device", argv[++i], 0, 1023, &device)) return 1;
            device++;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            conform_usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "facet: conform: unknown option '%s'\n", argv[i]);
            conform_usage(stderr);
            return 1;
        } else if (!path) path = argv[i];
        else {
            fprintf(stderr, "facet: conform: unexpected argument '%s'\n", argv[i]);
            return 1;
        }
    }
    if (gguf_types) {
        facet_gguf_types_print_markdown(stdout);
        return 0;
    }
    if (table) {
        if (markdown) facet_table_print_markdown(stdout);
        else facet_table_print(stdout);
        return 0;
    }
    if (!path) {
        conform_usage(stderr);
        return 1;
    }
    if (!cli_check_device("conform", backend, device)) return 1;
    facet_facts *f = &g_facts;
    int rc = load_facts(path, f, backend);
    if (rc) {
        unload();
        return rc;
    }

    static facet_verdict v;
    judge(f, backend, &v);
    unload();
    static facet_plan plan;
    int have_plan = default_plan(f, &plan);

    /* --json -: stdout carries the JSON alone (the report goes to stderr) */
    FILE *report = json_file && !strcmp(json_file, "-") ? stderr : stdout;
    static char line[4096];
    facet_facts_line(f, line, sizeof line);
    fprintf(report, "facts: %s\n", line);
    for (int i = 0; i < f->n_notes; i++) fprintf(report, "note: %s\n", f->notes[i].text);
    if (have_plan) print_plan_brief(report, &plan);
    else fprintf(report, "plan: none\n");
    static facet_device_limits dev;
    memset(&dev, 0, sizeof dev);
    if (!strcmp(backend, "vulkan") && f->family_known &&
        cli_judge_device(report, "conform", device, f, facet_auto_weights(f), &v, &dev))
        return 2;
    print_verdict(report, &v);
    rc = verdict_exit(&v);
    json_t *verification = ledger ? ledger_verification(ledger, path) : NULL;
    if (verification)
        fprintf(report, "verification: %s against %s (%s, %s weights, ledger %s)\n",
                ledger_field(verification, "level"), ledger_field(verification, "oracle"),
                ledger_field(verification, "backend"), ledger_field(verification, "weights"),
                ledger);
    else if (ledger)
        fprintf(report, "verification: none recorded for this checkpoint in ledger %s\n", ledger);

    if (json_file) {
        json_t *o = json_object();
        json_object_set_new(o, "path", json_string(path));
        json_object_set_new(o, "exit_code", json_integer(rc));
        json_object_set_new(o, "facts", facet_facts_json(f));
        json_object_set_new(o, "verdict", facet_verdict_json(&v));
        json_object_set_new(o, "plan", have_plan ? facet_plan_json(&plan) : json_null());
        json_object_set_new(o, "device", dev.name[0] ? device_json(&dev) : json_null());
        json_object_set(o, "verification", verification ? verification : json_null());
        int wrc = write_json(json_file, o);
        json_decref(o);
        if (wrc) {
            json_decref(verification);
            return 1;
        }
    }
    json_decref(verification);
    return rc;
}

/* ---------------------------------------------------------------------------------
 * onboard: the support-matrix row and one ledger line
 * ------------------------------------------------------------------------------ */
static void onboard_usage(FILE *out) {
    fprintf(out, "usage: facet onboard PATH [--ledger FILE.jsonl]\n"
                 "                     [--gate [--reference FILE.json | --reference-logits FILE --prompt-ids IDS]\n"
                 "                             [-n N] [--threads N]]\n"
                 "Prints the support-matrix row of a checkpoint (facts of note, verdict and\n"
                 "plan per backend) and, with --ledger, appends it as one JSON line to FILE.\n"
                 "--gate runs the identity gate: greedy in the exact path (f32 weights, f32 KV)\n"
                 "against reference ids (prompt_ids, generated_ids), reference logits rows,\n"
                 "the folder's expected.json, or the float64 reference (tests/ref) when present;\n"
                 "the ledger line records the level. Exit 4 when the reference disagrees.\n"
                 "example: facet onboard models/stories260k\n");
}

static const char *short_verdict(const facet_verdict *v, char *buf, size_t cap) {
    if (v->status != FACET_VERDICT_REFUSED) {
        snprintf(buf, cap, "%s", facet_verdict_status_name(v->status));
        return buf;
    }
    snprintf(buf, cap, "refused:");
    for (int i = 0; i < v->n_refusals; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, cap - len, "%s %s=%s", i ? "," : "", v->refusals[i].fact,
                 v->refusals[i].value);
    }
    return buf;
}

int cmd_onboard(int argc, char **argv) {
    const char *path = NULL, *ledger = NULL;
    int gate = 0;
    gate_options go = {0};
    for (int i = 0; i < argc; i++) {
        static const char *const value_opts[] = {"--ledger", "--reference", "--reference-logits",
                                                 "--prompt-ids", "-n", "--threads", NULL};
        if (cli_missing_value("onboard", argv[i], i + 1 == argc, value_opts)) return 1;
        if (!strcmp(argv[i], "--ledger") && i + 1 < argc) ledger = argv[++i];
        else if (!strcmp(argv[i], "--gate")) gate = 1;
        else if (!strcmp(argv[i], "--reference") && i + 1 < argc) go.reference = argv[++i];
        else if (!strcmp(argv[i], "--reference-logits") && i + 1 < argc) go.reference_logits = argv[++i];
        else if (!strcmp(argv[i], "--prompt-ids") && i + 1 < argc) go.prompt_ids = argv[++i];
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            if (!cli_parse_int("-n", argv[++i], 1, 1 << 20, &go.n)) return 1;
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            if (!cli_parse_int("--threads", argv[++i], 1, 1024, &go.n_threads)) return 1;
        }
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            onboard_usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "facet: onboard: unknown option '%s'\n", argv[i]);
            onboard_usage(stderr);
            return 1;
        } else if (!path) path = argv[i];
        else {
            fprintf(stderr, "facet: onboard: unexpected argument '%s'\n", argv[i]);
            return 1;
        }
    }
    if (!path) {
        onboard_usage(stderr);
        return 1;
    }
    if (!gate && (go.reference || go.reference_logits || go.prompt_ids || go.n)) {
        fprintf(stderr, "facet: onboard: --reference, --reference-logits, --prompt-ids and -n need --gate\n");
        return 1;
    }
    if (go.reference && go.reference_logits) {
        fprintf(stderr, "facet: onboard: give --reference or --reference-logits, not both\n");
        return 1;
    }
    facet_facts *f = &g_facts;
    int rc = load_facts(path, f, "cpu");
    if (rc) {
        unload();
        return rc;
    }

    static facet_verdict cpu, vulkan;
    judge(f, "cpu", &cpu);
    judge(f, "vulkan", &vulkan);
    unload();
    static facet_plan plan;
    int have_plan = default_plan(f, &plan);

    /* the row: name | model_type | facts of note | cpu | vulkan | plan */
    char name[512], note[512], vc[1024], vg[1024], w[32], kv[32];
    snprintf(name, sizeof name, "%s", path);
    size_t n = strlen(name);
    while (n > 1 && name[n - 1] == '/') name[--n] = '\0';
    if (n > 12 && !strcmp(name + n - 12, "/config.json")) name[n - 12] = '\0';
    const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    facet_facts_of_note(f, note, sizeof note);
    short_verdict(&cpu, vc, sizeof vc);
    short_verdict(&vulkan, vg, sizeof vg);
    printf("| %s | %s | %s | %s | %s |", base, f->model_type, note, vc, vg);
    if (have_plan) {
        facet_bytes_text(plan.weight_bytes[plan.weights], w, sizeof w);
        facet_bytes_text(plan.kv_bytes_per_token_naive, kv, sizeof kv);
        printf(" %s %s, KV %s/token %s |\n", facet_plan_format_name(plan.weights), w, kv,
               facet_kv_type_name(plan.kv_type));
    } else {
        printf(" — |\n");
    }

    json_t *evidence = NULL;
    int gate_rc = 0;
    if (gate) {
        char folder[4096];
        const char *dir = path;
        if (!cli_model_folder(&dir, folder, sizeof folder)) return 1;
        gate_rc = onboard_gate(dir, &go, &evidence);
        if (!evidence) return gate_rc; /* could not run: printed */
    }
    if (ledger) {
        json_t *o = json_object();
        char *key = checkpoint_key(path);
        json_object_set_new(o, "name", json_string(base));
        json_object_set_new(o, "checkpoint", key ? json_string(key) : json_null());
        free(key);
        if (evidence) json_object_set(o, "verification", evidence);
        json_object_set_new(o, "path", json_string(path));
        json_object_set_new(o, "model_type", json_string(f->model_type));
        json_object_set_new(o, "architecture", json_string(f->architecture));
        json_object_set_new(o, "facts_of_note", json_string(note));
        json_object_set_new(o, "probed", json_boolean(f->probed));
        json_t *vs = json_object();
        json_object_set_new(vs, "cpu", facet_verdict_json(&cpu));
        json_object_set_new(vs, "vulkan", facet_verdict_json(&vulkan));
        json_object_set_new(o, "verdicts", vs);
        json_object_set_new(o, "plan", have_plan ? facet_plan_json(&plan) : json_null());
        json_object_set_new(o, "facts", facet_facts_json(f));
        char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(o);
        /* a ledger cut short (its last line without its newline) gets the newline first:
         * appended to that fragment, this line was no JSON either and conform --ledger
         * never found it; a failed write or close (a full disk) is an error */
        FILE *fp = fopen(ledger, "a");
        int cut = 0;
        FILE *rd = fp ? fopen(ledger, "r") : NULL; /* a pipe or terminal: nothing to read */
        if (rd && fseek(rd, -1, SEEK_END) == 0) {
            int c = fgetc(rd);
            cut = c != EOF && c != '\n';
        }
        if (rd) fclose(rd);
        int ok = fp && s && fprintf(fp, "%s%s\n", cut ? "\n" : "", s) >= 0;
        if (fp && fclose(fp) != 0) ok = 0;
        free(s);
        if (!ok) {
            fprintf(stderr, "facet: onboard: cannot append to %s\n", ledger);
            json_decref(evidence);
            return 1;
        }
    }
    json_decref(evidence);
    return gate_rc;
}
