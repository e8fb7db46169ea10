/*
 * weights_policy.h — what `--weights auto` loads, and the KV cache type that follows it.
 */
#ifndef FACET_MODEL_WEIGHTS_POLICY_H
#define FACET_MODEL_WEIGHTS_POLICY_H

#include "facet.h"
#include "model/facts.h"

/*
 * The run-time weight format `--weights auto` chooses: the checkpoint's own precision,
 * so that no weight is rounded — bf16 for a BF16 checkpoint, f16 for an F16 one, f32
 * otherwise (F32, or mixed dtypes). Probed facts decide by the tensors' dtypes; a bare
 * config (no probe) by its torch_dtype / dtype key. int8 is chosen automatically only for
 * a GGUF file whose matrices are all Q8_0 (facts.matrices_q8_0: its blocks are facet's
 * int8 format, so nothing is rounded); elsewhere it flips greedy picks at margins below
 * its quantization noise on random-weight shapes (bench/RESULTS-perf.md), so it stays
 * one flag away.
 */
facet_weight_format facet_auto_weights(const facet_facts *f);

/*
 * The KV cache type FACET_KV_AUTO resolves to for run-time weights `w` (never
 * FACET_WEIGHTS_AUTO: resolve the weights first): f32 for f32 weights (the float32
 * reference path, identity gates), f16 for f16, bf16 for bf16 and int8 (bf16 keeps
 * float32's exponent range, so no key or value overflows).
 */
facet_kv_type facet_auto_kv(facet_weight_format w);

/* Bytes of one KV cache element: 4 for f32, 2 for bf16 / f16 (AUTO: 2). */
size_t facet_kv_type_bytes(facet_kv_type t);

#endif
