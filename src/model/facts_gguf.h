/*
 * facts_gguf.h — the fact manifest of a GGUF model (issue 18), from its metadata and
 * tensor infos, into the same facet_facts that config.json fills (facts.h).
 *
 * general.architecture names the family (llama, qwen2, qwen3, gemma, gemma2, gemma3,
 * phi3, olmo2, smollm3, granite: the table's profiles llama.cpp also writes); its
 * `<arch>.*` keys are read with typed checks naming the GGUF key and mapped onto the
 * config.json names (block_count -> num_hidden_layers, embedding_length -> hidden_size,
 * attention.key_length -> head_dim, rope.freq_base -> rope_theta, ...), then judged by
 * the same reader and table as a Hugging Face folder. An `<arch>.*` key not mapped (or a
 * key of another namespace than general., tokenizer., split., quantize.) is kept under
 * its GGUF name for the table, which refuses it when its name may change the math
 * (llama.expert_count=8: mixture-of-experts). llama.cpp's conventions: Gemma norm
 * weights hold the + 1 (so norm_weight_offset is 0); Gemma 2/3's attention scale is
 * 1/sqrt(key_length) (1/sqrt(hidden/heads) for the 27B shapes, as llama.cpp); Llama 3
 * rope scaling is the rope_freqs.weight tensor (rope_type llama3 with the parameters
 * that reproduce every divisor, or refused); the output matrix is tied when
 * output.weight is absent.
 *
 * Weight facts come from the tensor infos (no data read but rope_freqs.weight's 32
 * floats): per-layer biases (blk.N.attn_q.bias, attn_output.bias), q/k norms, fused
 * attn_qkv, a fused ffn_up ([gate; up], Phi-3), the lm_head (output.weight), the bytes
 * of all tensors; f->probed is set.
 */
#ifndef FACET_MODEL_FACTS_GGUF_H
#define FACET_MODEL_FACTS_GGUF_H

#include "io/gguf.h"
#include "model/facts.h"
#include "model/table.h"

/*
 * Facts of GGUF model `m` into *f. Errors, each naming the file and the key or tensor:
 * FACET_E_NOT_FOUND (general.architecture or a required <arch> key missing:
 * block_count, context_length, embedding_length, feed_forward_length,
 * attention.head_count, attention.layer_norm_rms_epsilon; token_embd.weight missing),
 * FACET_E_FORMAT (a key of the wrong type or out of range; a tensor whose shape
 * contradicts the facts; a per-layer tensor present in some layers only).
 * Architectures outside the table are read leniently and refused by the verdict.
 */
facet_status facet_facts_from_gguf(const gguf_model *m, facet_facts *f, facet_error *err);

/* Facts of a model path: a GGUF file (or a folder holding one, gguf_path_is_gguf) read
 * with facet_facts_from_gguf, anything else with facet_facts_read. Errors: theirs, and
 * gguf_model_open's. */
facet_status facet_facts_read_model(const char *path, facet_facts *f, facet_error *err);

/* Nonzero when general.architecture `arch` is one whose files carry llama.cpp's Q/K
 * row permutation (a column of the architecture table in facts_gguf.c); 0 for an
 * architecture outside it. */
int facet_gguf_arch_permutes_qk(const char *arch);

/* The GGUF block types the engine runs (today: F32, F16, BF16, Q8_0, as a comma list).
 * Q8_0 blocks (an f16 scale per 32 int8 weights) are facet's own int8 format: they load
 * exactly as float32 and, with --weights int8 (auto for files whose matrices are all
 * Q8_0), re-pack into the same scales and int8 values. */
const char *facet_gguf_runnable_types(void);

/* Nonzero when every matrix (2-D or more) of `m` is Q8_0. */
int facet_gguf_matrices_q8_0(const gguf_model *m);

/*
 * Add GGUF refusals to verdict *v (after facet_judge): general.architecture outside the
 * table; every tensor type the engine does not run (all but F32, F16, BF16, Q8_0), one
 * refusal per type naming its first tensor ("tensor blk.0.ffn_down.weight has type Q4_K; supported: F32, F16,
 * BF16, Q8_0"), before any weight is read.
 * Sets v->status to REFUSED when any was added.
 */
void facet_gguf_judge(const gguf_model *m, facet_verdict *v);

#endif
