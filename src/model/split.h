/*
 * split.h — a model split over P pipeline stages x T tensor ranks (issue 21): the
 * checks that refuse a split before anything loads, and the layer ranges balanced by
 * memory, shared by `facet plan` (what each rank holds and sends) and `facet run`
 * (what each rank loads).
 *
 * Stages. Stage s runs layers [first[s], first[s + 1]); stage 0 also holds the
 * embeddings, the final norm and lm_head (rank 0 owns the tokenizer, the sampler and the
 * logits). The layer ranges minimize the largest stage's memory: its layers' weights
 * plus their KV cache (or recurrent state) at the plan's ctx and batch, stage 0 with the
 * embeddings and lm_head on top. Each stage has at least one layer.
 *
 * Traffic per generated token (a decode step, float32 activations): stage s sends its
 * hidden state (hidden_size x 4 bytes) to stage s + 1, the last stage back to rank 0;
 * rank 0 broadcasts the step's command (token, sequence, logits flag: 9 bytes + a 16-byte
 * header) to the others; a tensor rank sends 2 (T - 1) / T x hidden_size x 4 bytes per
 * all-reduce, two per layer (after attention and after the FFN).
 */
#ifndef FACET_MODEL_SPLIT_H
#define FACET_MODEL_SPLIT_H

#include <stdint.h>

#include "facet.h"
#include "model/facts.h"
#include "model/plan.h"

#define FACET_SPLIT_MAX 64         /* stages at most                                  */

typedef struct facet_split {
    int pp, tp;
    int first[FACET_SPLIT_MAX + 1];        /* stage s: layers [first[s], first[s+1])   */
    /* per rank of stage s (a stage's T ranks hold 1/T of its layers each) */
    uint64_t weight_bytes[FACET_SPLIT_MAX];
    uint64_t kv_bytes[FACET_SPLIT_MAX];    /* KV cache + recurrent state at ctx, batch */
    uint64_t sent_per_token[FACET_SPLIT_MAX]; /* bytes one rank of the stage sends per
                                              decoded token                           */
} facet_split;

/*
 * Refuse a split the model's facts cannot take, naming the fact, its value and the
 * divisor, and the values that would work: num_hidden_layers >= pp (pp <= 64);
 * num_attention_heads, num_key_value_heads and the FFN width (intermediate_size; on a
 * mixture-of-experts model moe_intermediate_size) divisible by tp. Errors:
 * FACET_E_INVALID_ARGUMENT (pp or tp < 1), FACET_E_UNSUPPORTED (the facts refuse it).
 */
facet_status facet_split_check(const facet_facts *f, int pp, int tp, facet_error *err);

/* The split of facts f over pp x tp ranks under plan p (its chosen format's weight
 * bytes, KV type, ctx and batch); facet_split_check first. */
facet_status facet_split_make(const facet_facts *f, const facet_plan *p, int pp, int tp,
                              facet_split *out, facet_error *err);

#endif
