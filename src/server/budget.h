/*
 * budget.h — the KV-cache token budget of `facet serve`, sized to the machine.
 *
 * The scheduler admits a request while its n x (prompt + max_tokens) tokens fit the
 * budget (sched.h); one that can never fit is answered 400. Without --kv-budget the
 * budget is max_batch x ctx, lowered to the tokens whose KV cache fits the memory left
 * after the weights, in `facet plan`'s memory model (src/model/plan.h: weights in the
 * run-time format + KV bytes per token at ctx, against MemAvailable read before the
 * weights load), less a margin of SRV_MEM_MARGIN_PCT percent of MemAvailable for what
 * the plan does not count (activation scratch, logits, connection threads, allocator
 * overhead). This is what vLLM's gpu_memory_utilization (0.9 by default) does for its
 * KV blocks. An explicit --kv-budget is honoured; one above what fits is flagged so the
 * server can warn.
 */
#ifndef FACET_SERVER_BUDGET_H
#define FACET_SERVER_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "facet.h"

#define SRV_MEM_MARGIN_PCT 10

typedef struct srv_kv_budget {
    /* inputs */
    int requested;              /* --kv-budget; 0 = the default                         */
    int max_batch, n_ctx;
    uint64_t mem_available;     /* bytes; 0 = unknown (the budget is not checked)        */
    uint64_t weight_bytes;      /* run-time weights, and the recurrent state below        */
    uint64_t state_bytes;       /* of weight_bytes: a recurrent model's fixed state of
                                   max_batch sequences (0: none); set by the caller after
                                   choosing, so the line names it apart from the weights  */
    double kv_bytes_per_token;  /* KV cache bytes per token at n_ctx                     */
    /* results */
    int64_t default_tokens;     /* max_batch x n_ctx                                     */
    uint64_t margin;            /* SRV_MEM_MARGIN_PCT % of mem_available                 */
    uint64_t kv_room;           /* mem_available - margin - weight_bytes (0 below zero)  */
    int64_t fit_tokens;         /* tokens whose KV cache fits kv_room                    */
    int tokens;                 /* the budget; 0 only when nothing fits and none was
                                   requested (the server refuses to start)               */
    int capped;                 /* 1: the default was lowered to fit_tokens              */
    int over;                   /* 1: the requested budget is above fit_tokens           */
} srv_kv_budget;

/* Choose the budget from the inputs above (mem_available 0: not checked, the requested
 * budget or the default is used as is). Every result fits in an int: budgets above
 * INT_MAX tokens are clamped to it. Never fails. */
void srv_kv_budget_choose(int requested, int max_batch, int n_ctx, uint64_t mem_available,
                          uint64_t weight_bytes, double kv_bytes_per_token,
                          srv_kv_budget *out);

/* One line (no newline) saying the budget and why: the default and its KV bytes, what
 * MemAvailable leaves after the margin and the weights, or why memory was not checked
 * (`unchecked`, e.g. the plan's error message; NULL when mem_available is known). For
 * `over`, the line is the warning; for tokens == 0, the reason the server cannot start. */
void srv_kv_budget_describe(const srv_kv_budget *b, const char *unchecked, char *buf,
                            size_t cap);

/*
 * The memory inputs of srv_kv_budget_choose for the checkpoint in `dir`, from its facts
 * (config.json, and the safetensors headers when weights are there) and facet_plan_make
 * (src/model/plan.h) at context n_ctx (0 = max_position_embeddings) with the weight
 * format and KV type the server loads (AUTO resolved as the loader does).
 * mem_available 0 reads MemAvailable from /proc/meminfo. Fills *ctx (the resolved
 * context), *mem, *weight_bytes, *kv_bytes_per_token and, when state_bytes is not NULL,
 * the fixed recurrent state of one sequence (facet_plan's state_bytes_per_sequence: Mamba
 * layers; 0 for attention models), which the server counts once per sequence slot beside
 * the weights (fixed memory, before the per-token KV budget). Errors: those of facet_facts_read,
 * facet_facts_probe and facet_plan_make (a checkpoint the loader will refuse with its
 * own message), FACET_E_NOMEM.
 */
facet_status srv_kv_plan(const char *dir, int n_ctx, facet_weight_format weights,
                         facet_kv_type kv_cache, uint64_t mem_available, int *ctx,
                         uint64_t *mem, uint64_t *weight_bytes, double *kv_bytes_per_token,
                         uint64_t *state_bytes, facet_error *err);

#endif
