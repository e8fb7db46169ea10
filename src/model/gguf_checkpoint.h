/*
 * gguf_checkpoint.h — a GGUF model seen as a Hugging Face checkpoint (issue 18), so the
 * loader (src/engine/weights.c) and its tensor table (tensors.h) read GGUF weights
 * unchanged.
 *
 * Each GGUF tensor of type F32, F16, BF16 or of a block type with kernels
 * (kernels/cpu/quant.h; kept as it is: gguf_qtype says which, the loader runs it in its
 * own type or widens it through the type's dequantizer) becomes an st_tensor with the
 * module path the Hugging Face modeling code uses (blk.N.attn_q.weight ->
 * model.layers.N.self_attn.q_proj.weight, token_embd.weight -> model.embed_tokens.weight,
 * output.weight -> lm_head.weight, ffn_norm -> post_attention_layernorm, or
 * pre_feedforward_layernorm where the family has post-norms, ...) and its shape reversed
 * (GGUF's ne[0] is the fastest axis: ne [in, out] is the matrix [out, in]). Its data
 * points into the GGUF mapping, except for llama.cpp's Q/K row permutation: files of the
 * families whose llama.cpp rope is the interleaved ("NORM") kind (llama, granite,
 * smollm3) store attn_q / attn_k with each head's rows interleaved
 * (convert_hf_to_gguf.py's permute); those two are copied back into Hugging Face order
 * (GGUF row h*d + 2i + j holds HF row h*d + j*d/2 + i; a block type's rows of blocks move
 * whole). Tensors the loader does not take
 * (rope_freqs.weight, whose scaling the facts carry) are left out.
 */
#ifndef FACET_MODEL_GGUF_CHECKPOINT_H
#define FACET_MODEL_GGUF_CHECKPOINT_H

#include "io/gguf.h"
#include "io/safetensors.h"
#include "model/facts.h"

typedef struct facet_gguf_checkpoint {
    st_checkpoint ck;           /* the view: one st_file holding every part's tensors   */
    void **owned;               /* un-permuted copies the view points at               */
    size_t n_owned;
} facet_gguf_checkpoint;

/*
 * Build the view of model `m` whose facts are `f` (facet_facts_from_gguf). The model
 * must outlive the view. Errors: FACET_E_UNSUPPORTED naming a tensor of a type other
 * than F32/F16/BF16 or a block type with kernels (the list is facet_gguf_runnable_types)
 * or a GGUF name with no Hugging Face counterpart, FACET_E_FORMAT (a
 * permuted tensor whose rows are not heads x an even head_dim), FACET_E_NOMEM.
 */
facet_status facet_gguf_checkpoint_open(const gguf_model *m, const facet_facts *f,
                                        facet_gguf_checkpoint *out, facet_error *err);

/* The same view for a check of names and shapes only (conform, plan): no tensor is
 * un-permuted, so its data must not be read. */
facet_status facet_gguf_checkpoint_open_headers(const gguf_model *m, const facet_facts *f,
                                                facet_gguf_checkpoint *out, facet_error *err);

void facet_gguf_checkpoint_close(facet_gguf_checkpoint *c);

/* Bytes GGUF tensor t takes at run time with each matrix in its own type (FACET_WEIGHTS_GGUF,
 * what auto picks for a file with block-type matrices): a block-type matrix as stored; an
 * F32 / F16 / BF16 matrix packed in f32 / f16 / bf16 (facet_wtensor_packed_bytes); a
 * vector as f32; 0 for a tensor the loader does not take (rope_freqs.weight) or a type
 * without kernels; a Q4_0 / Q8_0 matrix repacked into q4 / int8 panels
 * (facet_gguf_block_format) counts their bytes (rows padded to 16). *format: the
 * facet_wformat a matrix runs in, -1 otherwise. */
uint64_t facet_gguf_tensor_run_bytes(const gguf_tensor *t, int *format);

/* Nonzero when GGUF tensor `name` has a Hugging Face counterpart the loader takes (or is
 * one whose meaning the facts carry, rope_freqs.weight). */
int facet_gguf_tensor_known(const char *name);

#endif
