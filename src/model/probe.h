/*
 * probe.h — weight facts from safetensors headers (DESIGN.md: "tensors are the truth").
 */
#ifndef FACET_MODEL_PROBE_H
#define FACET_MODEL_PROBE_H

#include "io/safetensors.h"
#include "model/facts.h"

/*
 * Probe the tensor names, shapes and dtypes of checkpoint `ck` (headers only; no
 * tensor data is read) into the weight facts of *f, which facet_facts_read filled:
 *   qkv_bias      every layer has self_attn.{q,k,v}_proj.bias (or qkv_proj.bias)
 *   o_bias        every layer has self_attn.o_proj.bias
 *   qk_norm       every layer has self_attn.{q,k}_norm.weight
 *   has_lm_head   an lm_head.weight exists (tie_word_embeddings is set to its negation)
 *   fused_qkv     self_attn.qkv_proj.weight (Phi-3); fused_gate_up: mlp.gate_up_proj
 *   dtype_mask    bit (1u << st_dtype) for every dtype present; weight_bytes the sum
 *                 of all tensors' byte sizes
 * Tensor names, shapes and the decoder's prefix come from the tensor table
 * (tensors.h: the prefix is the one that holds "layers.0."). Where a config key disagrees with the
 * tensors, the tensors win and a note is added to f->notes. Sets f->probed = 1.
 * Errors: FACET_E_NOT_FOUND (no decoder layer tensors, a layer missing, no
 * embed_tokens.weight), FACET_E_FORMAT (a fact present in some layers only, a q/k/v
 * bias set that is incomplete, a projection or embedding whose shape contradicts the
 * config), each naming the tensor.
 */
facet_status facet_facts_probe(facet_facts *f, const st_checkpoint *ck, facet_error *err);

/* Nonzero when `dir` is a folder holding at least one *.safetensors file (weights to
 * probe). A config-only folder (config.json, perhaps an index without its shards) is not:
 * its verdict is pending the probe. */
int facet_dir_has_weights(const char *dir);

#endif
