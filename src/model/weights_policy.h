/*
 * weights_policy.h — what `--weights auto` loads.
 */
#ifndef FACET_MODEL_WEIGHTS_POLICY_H
#define FACET_MODEL_WEIGHTS_POLICY_H

#include "facet.h"
#include "model/facts.h"

/*
 * The run-time weight format `--weights auto` chooses: the checkpoint's own precision,
 * so that no weight is rounded — bf16 for a BF16 checkpoint, f16 for an F16 one, f32
 * otherwise (F32, or mixed dtypes). Probed facts decide by the tensors' dtypes; a bare
 * config (no probe) by its torch_dtype / dtype key. int8 is never chosen automatically:
 * on random-weight shapes it flips greedy picks at margins below its quantization noise
 * (bench/RESULTS-perf.md), so it stays one flag away.
 */
facet_weight_format facet_auto_weights(const facet_facts *f);

#endif
