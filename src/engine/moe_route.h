/*
 * moe_route.h — a mixture-of-experts router's choice for one token (ffn_moe.c), kept
 * apart so the unit tests can check it on hand-worked logits.
 */
#ifndef FACET_ENGINE_MOE_ROUTE_H
#define FACET_ENGINE_MOE_ROUTE_H

#include "model/facts.h"

/*
 * The k experts of one token and their weights, from its router logits (E floats).
 * Chosen: the k largest logits (softmax is monotonic, so the same k as the largest
 * probabilities), in decreasing order; equal logits go to the lower expert index (a
 * NaN logit is never chosen before a number). torch.topk does not document which of
 * equal values it returns first, so this rule is facet's choice, stated and tested
 * (test_engine_moe, hand-worked ties): the lower index, what a stable descending sort
 * gives; tests/ref/reference.py uses the same rule (np.argsort(-x, kind="stable")).
 * Exact ties need equal logits, i.e. equal router rows or inputs: random weights never
 * produce them.
 * Weights (computed in double, stored as float): with p = softmax(logits) over all E,
 *   FACET_ROUTER_TOPK_SOFTMAX, or SOFTMAX_TOPK with norm: p_j / sum of the k chosen p
 *   (= softmax over the k chosen logits);
 *   FACET_ROUTER_SOFTMAX_TOPK without norm: p_j.
 * ids and w hold k entries each. k in [1, E].
 */
void facet_moe_route(const float *logits, int E, int k, facet_moe_router router, int norm,
                     int *ids, float *w);

/* DeepSeek's routing (FACET_ROUTER_GROUPED) for one token, from its router logits (E
 * floats), computed in double:
 *   score_e  = sigmoid(logit_e) (sigmoid) or softmax over all E (else)
 *   choice_e = score_e + bias_e (bias NULL: + 0; DeepseekV3's e_score_correction_bias)
 *   groups: E / n_group consecutive experts each, ranked by the sum of their two largest
 *   choices (bias given: noaux_tc) or their largest (group_limited_greedy); the
 *   topk_group best kept, every other expert's choice set to 0.0 (as transformers'
 *   masked_fill; n_group 1 keeps all: greedy)
 *   ids = the k largest choices (ties to the lower expert index, facet_moe_route's rule)
 *   w_j = score_ids[j], / (sum of the k + 1e-20) when norm, then * scaling.
 * E % n_group == 0, 1 <= topk_group <= n_group, k <= topk_group * E / n_group (the
 * verdict checks). ids and w hold k entries. */
void facet_moe_route_grouped(const float *logits, const float *bias, int E, int k, int sigmoid,
                             int n_group, int topk_group, int norm, double scaling, int *ids,
                             float *w);

#endif
