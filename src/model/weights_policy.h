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
 * config (no probe) by its torch_dtype / dtype key. A GGUF file with block-type
 * matrices gets FACET_WEIGHTS_GGUF (each matrix in its own type, see
 * facet_gguf_block_format). int8 is never chosen for other checkpoints: it flips greedy
 * picks at margins below its quantization noise on random-weight shapes
 * (bench/RESULTS-perf.md), so it stays one flag away.
 */
facet_weight_format facet_auto_weights(const facet_facts *f);

/*
 * The KV cache type FACET_KV_AUTO resolves to for run-time weights `w` (never
 * FACET_WEIGHTS_AUTO: resolve the weights first): f32 for f32 weights (the float32
 * reference path, identity gates), f16 for f16, bf16 for bf16 and int8 (bf16 keeps
 * float32's exponent range, so no key or value overflows).
 */
facet_kv_type facet_auto_kv(facet_weight_format w);

/*
 * The run-time format of a GGUF block-type matrix of format f (kernels.h FACET_WF_GGUF_*)
 * under FACET_WEIGHTS_GGUF: Q4_0 runs as facet's q4 panels and Q8_0 as its int8 panels,
 * repacked exactly (the same f16 d and codes per block of 32;
 * facet_wtensor_repack_blocks), because those decode 1.3-1.7x and prefill ~3x faster
 * than the same blocks row by row (measured on a Qwen3-0.6B-shaped file, bench/RESULTS.md
 * issue 18); every other type runs in its blocks. The environment variable
 * FACET_GGUF_BLOCKS=1 keeps Q4_0 and Q8_0 in their blocks too (the block kernels' tests).
 */
#include "kernels/cpu/kernels.h"
facet_wformat facet_gguf_block_format(facet_wformat f);

/* Nonzero when a GGUF Q4_K / Q6_K matrix kept in its type is repacked into panels of 16
 * rows (kernels.h facet_wtensor_kpanel: the same bytes; the panel kernels prefill ~2x
 * faster than the row dots): on a CPU with AVX-512 VNNI (as facet_cpu() sees it, so
 * FACET_CPU=avx2 keeps the blocks), unless FACET_GGUF_BLOCKS=1. */
int facet_gguf_kpanels(void);

/* The run-time formats (bit facet_wformat) a load in public format w (not AUTO) makes of
 * facts f's matrices: w's and its output projection's (facet_wformat_output, hidden_size
 * inputs); for FACET_WEIGHTS_GGUF, gguf_formats (the file's matrices as they run,
 * gguf_checkpoint.h facet_gguf_tensor_run_bytes). What a backend's refusal checks. */
uint32_t facet_load_wformats(facet_weight_format w, const facet_facts *f, uint32_t gguf_formats);

/* Bytes of one KV cache element: 4 for f32, 2 for bf16 / f16 (AUTO: 2). */
size_t facet_kv_type_bytes(facet_kv_type t);

#endif
