/* run_opts.c — argument parsing of `facet run`. */
#include "cli/run_opts.h"

#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: facet run [MODEL] [-p TEXT | -f FILE|- | --prompt-ids 1,2,3|@FILE|- |\n"
            "                 --messages FILE.json [--tools FILE.json]] [-n MAX_NEW]\n"
            "                 [--threads N] [--ctx N] [--weights FMT] [--kv-cache TYPE] [--no-cache]\n"
            "                 [--backend cpu|vulkan] [--device N]\n"
            "                 [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R]\n"
            "                 [--presence-penalty P] [--frequency-penalty F] [--seed S]\n"
            "                 [--stop STR]... [--json [--top-logprobs N]] [--ignore-eos]\n"
            "                 [--dump-logits FILE] [--json-schema FILE | --grammar FILE]\n"
            "                 [--pipeline-parallel P] [--tensor-parallel T]\n"
            "\n"
            "Generation, greedy unless --temp > 0. MODEL is a Hugging Face checkpoint folder (config.json,\n"
            "*.safetensors, tokenizer.json) or a GGUF file (F32/F16/BF16 and the common block types);\n"
            "without it the bundled stories260k model runs.\n"
            "  -p TEXT            prompt text (tokenized with the tokenizer's special tokens)\n"
            "  -f FILE            prompt read from a UTF-8 file (- reads standard input)\n"
            "  --prompt-ids LIST  token ids as given, nothing added: comma- or whitespace-\n"
            "                     separated, or a JSON array; @FILE reads them from FILE,\n"
            "                     - from standard input\n"
            "  --messages FILE    a JSON array of chat messages, rendered by the checkpoint's\n"
            "                     chat template with the generation prompt; --tools FILE\n"
            "                     adds a JSON array of tool definitions\n"
            "  -n MAX_NEW         new tokens at most (default 256); generation also stops at an\n"
            "                     eos_token_id (config.json / generation_config.json) or when\n"
            "                     the context is full\n"
            "  --threads N        worker threads (default: all cores)\n"
            "  --backend B        cpu (default) or vulkan: the forward pass's operations as\n"
            "                     Vulkan compute shaders (f32/bf16/f16 weights; a binary\n"
            "                     built without Vulkan refuses it by name)\n"
            "  --device N         the Vulkan device (default: the first discrete GPU, else\n"
            "                     device 0); its name and memory are printed on stderr\n"
            "  --weights FMT      run-time weight format: auto (default: the checkpoint's own\n"
            "                     precision, bf16 / f16 / f32; a quantized GGUF file: gguf),\n"
            "                     f32, bf16, f16, int8, q4, gguf (each matrix in its GGUF type)\n"
            "  --kv-cache TYPE    KV cache element type: auto (default: f32 with f32 weights,\n"
            "                     f16 with f16, bf16 otherwise), f32, bf16, f16\n"
            "  --ctx N            context cap in tokens (default max_position_embeddings)\n"
            "  --no-cache         neither read nor write the weight cache (converted weights\n"
            "                     kept in DIR/.facet-cache or ~/.cache/facet; also\n"
            "                     FACET_NO_CACHE=1)\n"
            "  --temp T           temperature (default 0 = greedy); the sampling chain is\n"
            "                     repetition/presence/frequency penalties -> temperature ->\n"
            "                     top-k -> min-p -> top-p -> seeded draw (facet_sampler.h)\n"
            "  --top-k K, --top-p P, --min-p P, --repeat-penalty R, --presence-penalty P,\n"
            "  --frequency-penalty F, --seed S (default 0): as in the OpenAI API / transformers\n"
            "  --stop STR         stop when the text contains STR (not printed; repeatable)\n"
            "  --json             one JSON object: prompt_ids, generated_ids, text,\n"
            "                     finish_reason, timings (load_s, ttft_ms, prefill_tok_s,\n"
            "                     decode_tok_s)\n"
            "  --top-logprobs N   with --json: per generated token the N most likely ids and\n"
            "                     their natural-log probabilities, [[[id, logprob], ...], ...]\n"
            "  --ignore-eos       do not stop at eos_token_id\n"
            "  --json-schema FILE constrained decoding: the output is a JSON document valid\n"
            "                     against the JSON schema in FILE (facet_grammar.h lists\n"
            "                     the keywords; others are refused)\n"
            "  --grammar FILE     constrained decoding: the output is a sentence of the GBNF\n"
            "                     grammar in FILE (start rule `root`)\n"
            "  --dump-logits FILE write float32 little-endian logits, one row of vocab_size\n"
            "                     per position of prompt + generated[:-1]\n"
            "  --pipeline-parallel P  split the layers into P stages, one per MPI rank,\n"
            "                     balanced by memory, under mpirun with P processes (rank 0\n"
            "                     tokenizes, samples and prints; needs a build with MPI)\n"
            "  --tensor-parallel T    split heads and FFN columns over T ranks per stage\n"
            "                     (P*T processes of mpirun)\n"
            "example: facet run -p \"Once upon a time\" -n 16\n");
}

/* The sampling options that take a number, and the facet_sampler_params field each sets
 * (validated together by facet_sampler_params_validate after parsing). */
typedef struct sampling_opt {
    const char *name;
    size_t offset;
} sampling_opt;

static const sampling_opt sampling_floats[] = {
    {"--temp", offsetof(facet_sampler_params, temperature)},
    {"--temperature", offsetof(facet_sampler_params, temperature)},
    {"--top-p", offsetof(facet_sampler_params, top_p)},
    {"--min-p", offsetof(facet_sampler_params, min_p)},
    {"--repeat-penalty", offsetof(facet_sampler_params, repetition_penalty)},
    {"--presence-penalty", offsetof(facet_sampler_params, presence_penalty)},
    {"--frequency-penalty", offsetof(facet_sampler_params, frequency_penalty)},
};

static const sampling_opt *sampling_float(const char *a) {
    for (size_t i = 0; i < sizeof sampling_floats / sizeof sampling_floats[0]; i++)
        if (!strcmp(a, sampling_floats[i].name)) return &sampling_floats[i];
    return NULL;
}

int run_parse_args(int argc, char **argv, run_opts *o) {
    memset(o, 0, sizeof *o);
    o->max_new = 256;
    o->pp = o->tp = 1;
    facet_sampler_params_default(&o->sampling);
    o->sampling.temperature = 0.0f; /* greedy unless asked */
    const sampling_opt *field;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE                                                        \
    if (!v) {                                                             \
        fprintf(stderr, "facet: run: %s needs a value\n", a);             \
        return 1;                                                         \
    }                                                                     \
    i++
/* an option that names one input may be given once: the second would silently win */
#define ONCE(field)                                                       \
    if (o->field) {                                                       \
        fprintf(stderr, "facet: run: %s given twice\n", a);                \
        return 1;                                                         \
    }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
            NEED_VALUE;
            ONCE(prompt);
            o->prompt = v;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            NEED_VALUE;
            ONCE(prompt_file);
            o->prompt_file = v;
        } else if (!strcmp(a, "--prompt-ids")) {
            NEED_VALUE;
            ONCE(prompt_ids);
            o->prompt_ids = v;
        } else if (!strcmp(a, "--messages")) {
            NEED_VALUE;
            ONCE(messages);
            o->messages = v;
        } else if (!strcmp(a, "--tools")) {
            NEED_VALUE;
            ONCE(tools);
            o->tools = v;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--max-new")) {
            NEED_VALUE;
            if (!cli_parse_int(a, v, 0, INT_MAX, &o->max_new)) return 1;
        } else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) {
            NEED_VALUE;
            if (!cli_parse_int(a, v, 1, 1024, &o->threads)) return 1;
        } else if (!strcmp(a, "--backend")) {
            NEED_VALUE;
            if (strcmp(v, "cpu") && strcmp(v, "vulkan")) {
                fprintf(stderr, "facet: run: --backend expects cpu or vulkan, got '%s'\n", v);
                return 1;
            }
            o->backend = v;
        } else if (!strcmp(a, "--device")) {
            NEED_VALUE;
            if (!cli_parse_int(a, v, 0, 1023, &o->device)) return 1;
            o->device++;
        } else if (!strcmp(a, "--ctx")) {
            NEED_VALUE;
            if (!cli_parse_int(a, v, 1, INT_MAX, &o->ctx)) return 1;
        } else if (!strcmp(a, "--weights")) {
            NEED_VALUE;
            if (!cli_parse_weights(a, v, &o->weights)) return 1;
        } else if (!strcmp(a, "--kv-cache")) {
            NEED_VALUE;
            if (!cli_parse_kv_type(a, v, &o->kv_cache)) return 1;
        } else if (!strcmp(a, "--no-cache")) {
            o->no_cache = 1;
        } else if (!strcmp(a, "--pipeline-parallel")) {
            NEED_VALUE;
            if (!cli_parse_int(a, v, 1, 64, &o->pp)) return 1;
        } else if (!strcmp(a, "--tensor-parallel")) {
            NEED_VALUE;
            if (!cli_parse_int(a, v, 1, 64, &o->tp)) return 1;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--top-logprobs")) {
            NEED_VALUE;
            if (!cli_parse_int(a, v, 0, 64, &o->top_logprobs)) return 1;
        } else if (!strcmp(a, "--ignore-eos")) {
            o->ignore_eos = 1;
        } else if ((field = sampling_float(a))) {
            NEED_VALUE;
            if (!cli_parse_float(a, v, (float *)((char *)&o->sampling + field->offset))) return 1;
        } else if (!strcmp(a, "--top-k")) {
            NEED_VALUE;
            if (!cli_parse_int(a, v, 0, INT_MAX, &o->sampling.top_k)) return 1;
        } else if (!strcmp(a, "--seed")) {
            NEED_VALUE;
            char *end;
            errno = 0;
            unsigned long long seed = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-') {
                fprintf(stderr, "facet: --seed expects a non-negative integer, got '%s'\n", v);
                return 1;
            }
            o->sampling.seed = (uint64_t)seed;
        } else if (!strcmp(a, "--stop")) {
            NEED_VALUE;
            if (o->n_stops == 16) {
                fprintf(stderr, "facet: run: at most 16 --stop strings\n");
                return 1;
            }
            o->stops[o->n_stops++] = v;
        } else if (!strcmp(a, "--json-schema")) {
            NEED_VALUE;
            o->json_schema = v;
        } else if (!strcmp(a, "--grammar")) {
            NEED_VALUE;
            o->grammar = v;
        } else if (!strcmp(a, "--dump-logits")) {
            NEED_VALUE;
            o->dump_logits = v;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "facet: run: unknown option '%s' (facet run --help)\n", a);
            return 1;
        } else if (!o->model) {
            o->model = a;
        } else {
            fprintf(stderr, "facet: run: unexpected argument '%s' (one MODEL at most)\n", a);
            return 1;
        }
#undef NEED_VALUE
#undef ONCE
    }
    int sources = !!o->prompt + !!o->prompt_file + !!o->prompt_ids + !!o->messages;
    if (sources > 1) {
        fprintf(stderr, "facet: run: give the prompt once: -p, -f, --prompt-ids or --messages\n");
        return 1;
    }
    if (o->tools && !o->messages) {
        fprintf(stderr, "facet: run: --tools needs --messages\n");
        return 1;
    }
    facet_error err = {0};
    if (facet_sampler_params_validate(&o->sampling, INT32_MAX, &err) != FACET_OK) {
        fprintf(stderr, "facet: run: %s\n", err.message);
        return 1;
    }
    if (o->top_logprobs && !o->json) {
        fprintf(stderr, "facet: run: --top-logprobs needs --json\n");
        return 1;
    }
    if (!cli_check_device("run", o->backend, o->device)) return 1;
    return -1;
}

int run_parse_ids(const char *text, int32_t **ids, size_t *n) {
    cli_ids v = {0};
    if (cli_read_ids(&v, "--prompt-ids", text)) {
        free(v.data);
        return 1;
    }
    *ids = v.data;
    *n = v.len;
    return 0;
}
