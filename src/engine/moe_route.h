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
 * NaN logit is never chosen before a number). torch.topk does not document its order
 * among equal values; its CPU kernel's partial-sort path (k * 64 <= E) keeps the
 * earlier of equal values, as here, and tests/ref/reference.py uses this same rule.
 * Weights (computed in double, stored as float): with p = softmax(logits) over all E,
 *   FACET_ROUTER_TOPK_SOFTMAX, or SOFTMAX_TOPK with norm: p_j / sum of the k chosen p
 *   (= softmax over the k chosen logits);
 *   FACET_ROUTER_SOFTMAX_TOPK without norm: p_j.
 * ids and w hold k entries each. k in [1, E].
 */
void facet_moe_route(const float *logits, int E, int k, facet_moe_router router, int norm,
                     int *ids, float *w);

#endif
