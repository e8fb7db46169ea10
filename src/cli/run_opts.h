/*
 * run_opts.h — options of `facet run` (DESIGN.md, "Command line").
 */
#ifndef FACET_CLI_RUN_OPTS_H
#define FACET_CLI_RUN_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "facet.h"
#include "facet_sampler.h"

typedef struct run_opts {
    const char *model;        /* checkpoint folder; NULL = the bundled model         */
    const char *prompt;       /* -p TEXT                                             */
    const char *prompt_file;  /* -f FILE                                             */
    const char *prompt_ids;   /* --prompt-ids 1,2,3 | @FILE | -                      */
    const char *messages;     /* --messages FILE.json: rendered by the chat template */
    const char *tools;        /* --tools FILE.json (with --messages)                 */
    int max_new;              /* -n, default 256                                     */
    int threads;              /* --threads, 0 = all cores                            */
    const char *backend;      /* --backend cpu|vulkan, NULL = cpu                     */
    int device;               /* --device N as N + 1; 0 = the backend's default      */
    int ctx;                  /* --ctx, 0 = max_position_embeddings                  */
    facet_weight_format weights;
    facet_kv_type kv_cache;   /* --kv-cache, default auto                            */
    int no_cache;             /* --no-cache: neither read nor write the weight cache */
    int json;                 /* --json                                              */
    int top_logprobs;         /* --top-logprobs N (with --json), 0..64               */
    int ignore_eos;           /* --ignore-eos: generate exactly -n tokens            */
    const char *dump_logits;  /* --dump-logits FILE                                  */
    facet_sampler_params sampling; /* --temp, --top-k, ... (default: greedy)          */
    int n_stops;              /* --stop STR (repeatable, up to 16)                   */
    const char *stops[16];
    const char *json_schema;  /* --json-schema FILE: output constrained to the schema */
    const char *grammar;      /* --grammar FILE: output constrained to the GBNF       */
    int pp, tp;               /* --pipeline-parallel P, --tensor-parallel T (default 1):
                                 run as one of P x T MPI ranks (cli_par.h)           */
} run_opts;

/* Parse argv into *o. Returns -1 to continue, or an exit code (0 after --help, 1 after
 * a usage error, which it prints). */
int run_parse_args(int argc, char **argv, run_opts *o);

/* The ids of --prompt-ids's argument ("1,2,3", "@FILE" or "-": cli_read_ids) as a
 * malloc'd array. Returns 0, or 1 after printing an error. */
int run_parse_ids(const char *text, int32_t **ids, size_t *n);

#endif
