/*
 * report.h — facts, verdicts and plans as text lines and JSON, for `facet conform`,
 * `facet onboard`, `facet plan` and the support matrix (one rendering, used by all).
 */
#ifndef FACET_MODEL_REPORT_H
#define FACET_MODEL_REPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "model/facts.h"
#include "model/plan.h"
#include "model/table.h"

/* One line: "llama (LlamaForCausalLM): layers=16 hidden=2048 heads=32 kv_heads=8 ...". */
void facet_facts_line(const facet_facts *f, char *buf, size_t cap);

/* The facts of note for a support-matrix row (GQA ratio, head_dim, rope, window,
 * qk-norm, biases, tie), short. */
void facet_facts_of_note(const facet_facts *f, char *buf, size_t cap);

/* New JSON objects (caller owns, json_decref). */
json_t *facet_facts_json(const facet_facts *f);
json_t *facet_verdict_json(const facet_verdict *v);
json_t *facet_plan_json(const facet_plan *p);

/* Human-readable byte count: "1.23 GiB", "512 B". */
void facet_bytes_text(uint64_t bytes, char *buf, size_t cap);

/* Print the declared capability table (every profile, every backend, every fact's
 * range, and the config-key rules) as text (`facet conform --table`). */
void facet_table_print(FILE *out);

/* The same table as Markdown (docs/SUPPORT.md). */
void facet_table_print_markdown(FILE *out);

/* The GGUF tensor types the engine runs, as a Markdown table generated from the kernels'
 * traits table (kernels/cpu/quant.h) and the repack policy (weights_policy.h): type,
 * bits per weight, the activation blocks its dot reads, what it runs as, and the kernel
 * paths built into this binary (`facet conform --gguf-types`, docs/SUPPORT.md). */
void facet_gguf_types_print_markdown(FILE *out);

#endif
