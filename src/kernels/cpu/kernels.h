/*
 * kernels.h — CPU compute kernels the forward pass calls. The model code never
 * contains a SIMD intrinsic; it calls these. All arrays are float32, row-major.
 */
#ifndef FACET_KERNELS_CPU_H
#define FACET_KERNELS_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "facet.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/threadpool.h"

/* Storage format of a weight matrix at run time. */
typedef enum facet_wformat {
    FACET_WF_F32 = 0,  /* float32                                                      */
    FACET_WF_BF16 = 1, /* bfloat16 (the high half of a float32)                        */
    FACET_WF_F16 = 2,  /* IEEE half                                                    */
    FACET_WF_Q8 = 3,   /* int8, one float32 scale per block of 32 along the input dim  */
    FACET_WF_Q4 = 4,   /* 4-bit, w = d * (q - 8), one f16 d per block of 32 inputs      */
    /* GGUF block types (kernels/cpu/quant.h), kept as the file stores them: row r is
     * cols / block consecutive blocks, rows one after another; never converted to. The
     * value is FACET_WF_GGUF + the facet_qtype. */
    FACET_WF_GGUF_Q4_0 = 5,
    FACET_WF_GGUF_Q4_1 = 6,
    FACET_WF_GGUF_Q5_0 = 7,
    FACET_WF_GGUF_Q5_1 = 8,
    FACET_WF_GGUF_Q8_0 = 9,
    FACET_WF_GGUF_IQ4_NL = 10,
    FACET_WF_GGUF_Q2_K = 11,
    FACET_WF_GGUF_Q3_K = 12,
    FACET_WF_GGUF_Q4_K = 13,
    FACET_WF_GGUF_Q5_K = 14,
    FACET_WF_GGUF_Q6_K = 15,
    FACET_WF_GGUF_IQ4_XS = 16,
    FACET_WF_GGUF_MXFP4 = 17, /* also gpt-oss's Hugging Face MXFP4 experts, repacked */
} facet_wformat;
/* facet's own formats (F32 .. Q4: what facet_wtensor_convert packs into and --weights
 * names), not an enumerator so switches stay exhaustive. */
#define FACET_WF_COUNT 5
#define FACET_WF_GGUF FACET_WF_GGUF_Q4_0 /* the first GGUF block type                    */
#define FACET_WF_ALL 18                  /* every format, the GGUF block types included    */

/* The facet_qtype (quant.h) of a GGUF block format, or -1 for facet's own formats. */
static inline int facet_wformat_qtype(facet_wformat f) {
    return (int)f >= FACET_WF_GGUF && (int)f < FACET_WF_ALL ? (int)f - FACET_WF_GGUF : -1;
}

/* The run-time format of a public facet_weight_format (facet.h) that is not AUTO (AUTO is
 * resolved first, facet_auto_weights); FACET_WF_F32 for anything else. The one mapping
 * between the public and the internal enum. */
static inline facet_wformat facet_wformat_of(facet_weight_format w) {
    switch (w) {
    case FACET_WEIGHTS_BF16: return FACET_WF_BF16;
    case FACET_WEIGHTS_F16: return FACET_WF_F16;
    case FACET_WEIGHTS_INT8: return FACET_WF_Q8;
    case FACET_WEIGHTS_Q4: return FACET_WF_Q4;
    default: return FACET_WF_F32;
    }
}

/* The public format of a run-time one (the inverse of facet_wformat_of). */
static inline facet_weight_format facet_wformat_public(facet_wformat f) {
    switch (f) {
    case FACET_WF_BF16: return FACET_WEIGHTS_BF16;
    case FACET_WF_F16: return FACET_WEIGHTS_F16;
    case FACET_WF_Q8: return FACET_WEIGHTS_INT8;
    case FACET_WF_Q4: return FACET_WEIGHTS_Q4;
    default: return FACET_WEIGHTS_F32;
    }
}

/* The format of the output projection (lm_head, or the embedding matrix when it serves as
 * the lm_head) of `cols` inputs for run-time format f: for q4, GGUF Q6_K blocks (facet's
 * own quantizer, quant.h facet_quantize_row_q6_K) where cols is a multiple of 256, else
 * int8; f otherwise. A 4-bit output adds its error straight to the logits (on the GGUF
 * corpus's qwen3 (tied) model an all-q4 run was 0.29 relative logit error from f32 vs
 * 0.23 with an int8 output; llama.cpp's Q4_0 file, whose output llama-quantize keeps at
 * Q6_K: 0.25); a 6.56-bit output reads 23% fewer bytes than int8's 8.5 (on Qwen3-0.6B the
 * tied output is 40% of q4's bytes per token) for about int8's error (bench/RESULTS.md). */
static inline facet_wformat facet_wformat_output(facet_wformat f, int64_t cols) {
    if (f != FACET_WF_Q4) return f;
    return cols > 0 && cols % 256 == 0 ? FACET_WF_GGUF_Q6_K : FACET_WF_Q8;
}

/*
 * A weight matrix [rows][cols] in the PyTorch nn.Linear layout (rows = output
 * features, cols = input features). As the loader fills it, it is row-major float32
 * (format FACET_WF_F32, packed 0); facet_wtensor_convert packs it into the run-time
 * format (packed 1): panels of 16 output rows streamed once per matmul for every input
 * row (layouts in matmul_internal.h). `data` is owned by whoever made it (the model's
 * weight store) and freed with free(); packed formats keep their q8 scales inside
 * `data`, so `scales` stays NULL (kept for the loader, which frees it).
 */
typedef struct facet_wtensor {
    facet_wformat format;
    int rows, cols;
    void *data;
    float *scales;
    int packed; /* 0: row-major float32 as loaded; 1: packed by facet_wtensor_convert (a GGUF
                 * block format: the file's rows of blocks); 2: GGUF Q4_K / Q6_K blocks
                 * repacked into panels of 16 rows (facet_wtensor_kpanel)               */
} facet_wtensor;

/*
 * Convert a row-major FACET_WF_F32 tensor (packed 0) in place into format `to`, packed
 * (its float32 data is freed and replaced by memory 2 MiB-aligned and advised for
 * transparent huge pages when it spans one). Every format may be asked for, f32
 * included. Rounding: bf16 and f16 round to nearest even (bf16 values of a bf16
 * checkpoint are kept exactly); int8 follows llama.cpp's Q8_0 idea: per block of 32
 * inputs, scale = max|w| / 127 stored as f16, q = round_even(w / scale) in [-127, 127];
 * q4 stores GGUF Q4_0's values (w = d * (q - 8), q in [0, 15], f16 d per block of 32)
 * with d chosen by a small least-squares search (facet_q4_quantize_block, matmul_internal.h).
 * A tensor already packed in `to` is left as it is. Errors: FACET_E_UNSUPPORTED to
 * repack into another format, FACET_E_INVALID_ARGUMENT for an empty shape or an int8
 * block (int8, q4) without a finite f16 scale, FACET_E_NOMEM.
 */
#include "facet_status.h"
facet_status facet_wtensor_convert(facet_wtensor *w, facet_wformat to, facet_error *err);

/* Name of a format: "f32", "bf16", "f16", "int8", "q4", or a GGUF block type's own ("Q4_0"). */
const char *facet_wformat_name(facet_wformat f);

/*
 * Weight memory shared by many matrices: a bump allocator over 2 MiB-aligned chunks
 * advised for transparent huge pages, so matrices smaller than a huge page (most of a
 * small model's: Qwen3-0.6B's are 0.5-1.7 MiB in GGUF blocks) are streamed from huge
 * pages too. A decode step reads every matrix once; from 4 KiB pages the TLB misses cost
 * a single-thread Q4_K_M decode ~1.5x the CPU time per token (bench/RESULTS.md). Start
 * zeroed ({0}); pieces are zeroed, 64-byte aligned, and freed only all together
 * (facet_warena_free), never alone.
 */
typedef struct facet_warena_chunk {
    void *p;        /* from posix_memalign                                               */
    size_t bytes;
} facet_warena_chunk;
typedef struct facet_warena {
    facet_warena_chunk *chunk; /* [n_chunks] (cap allocated)                             */
    size_t n_chunks, cap;
    uint8_t *cur;   /* the free rest of the last chunk: [cur, cur + left)              */
    size_t left;
} facet_warena;
/* bytes of zeroed memory from a (NULL on out of memory) */
void *facet_warena_alloc(facet_warena *a, size_t bytes);
/* nonzero when p lies in one of a's chunks */
int facet_warena_owns(const facet_warena *a, const void *p);
void facet_warena_free(facet_warena *a);

/*
 * Make *w a [rows][cols] tensor of GGUF block format f (facet_wformat_qtype(f) >= 0), packed,
 * holding a copy of src: the file's rows of blocks (rows * cols / block * block_bytes
 * bytes), in memory from arena (freed with it) or, arena NULL, allocated as
 * facet_wtensor_convert's (2 MiB-aligned, huge pages advised; freed with free()). cols
 * must be a multiple of the type's block. Errors:
 * FACET_E_UNSUPPORTED for a type without kernels, FACET_E_INVALID_ARGUMENT for a shape
 * the type cannot hold (empty, or cols not a multiple of its block), FACET_E_NOMEM.
 */
facet_status facet_wtensor_blocks(facet_wtensor *w, facet_wformat f, int rows, int cols,
                                  const void *src, facet_warena *arena, facet_error *err);

/*
 * Make *w a [rows][cols] tensor of facet's format `to` holding exactly the values of
 * src, GGUF blocks of format `from`: Q8_0 into int8 panels (the same f16 d and int8 q
 * per block of 32) or Q4_0 into q4 panels (the same d and 4-bit codes, the qs bytes as
 * they are); nothing is rounded. Memory as facet_wtensor_blocks's. Errors:
 * FACET_E_UNSUPPORTED for another pair, FACET_E_INVALID_ARGUMENT (cols not a multiple of
 * 32, empty), FACET_E_NOMEM.
 */
facet_status facet_wtensor_repack_blocks(facet_wtensor *w, facet_wformat from, facet_wformat to,
                                         int rows, int cols, const void *src, facet_warena *arena,
                                         facet_error *err);

/*
 * Repack a GGUF Q4_K or Q6_K tensor (packed 1, the file's rows of blocks) in place into
 * panels of 16 rows (kernels/cpu/quant_kpanel.h: the same bytes, reordered; packed
 * becomes 2), which the block driver runs with the panel kernels: ~2x the prefill
 * throughput of the row dots (bench/RESULTS.md, issue 18). Returns 1 when repacked, 0
 * when left as it is (another type, rows not a multiple of 16, cols not of 256, or no
 * memory for the 16-row scratch). Rows read back exactly (facet_wtensor_row).
 */
int facet_wtensor_kpanel(facet_wtensor *w);

/* Bytes of a weight tensor's data (packed: with its padding and q8 scales; a GGUF block
 * format: its rows of blocks). */
size_t facet_wtensor_bytes(const facet_wtensor *w);

/* Bytes of a [rows][cols] matrix packed in format f (panels of 16 output rows, the input
 * dim padded to 32, int8 with its f16 scales), what facet_wtensor_convert allocates (a
 * GGUF block format: rows * ceil(cols / block) * block_bytes);
 * saturates at UINT64_MAX instead of wrapping (`facet plan` of an absurd config). */
uint64_t facet_wtensor_packed_bytes(facet_wformat f, uint64_t rows, uint64_t cols);

/* Copy row `row` of W into out (cols floats), widened to float32 (embedding lookup;
 * int8 rows dequantized as q * scale, GGUF block rows by their type's dequantizer). */
void facet_wtensor_row(const facet_wtensor *w, int row, float *out);

/*
 * The CPU kernels chosen for one CPU, resolved once (facet_cpu_kernels_resolve) by whoever
 * runs many calls (the CPU backend, at session creation) and passed to each call, so no
 * call re-checks the CPU: per weight format its matmul micro-kernel (the first of the
 * format's candidates, closest first, that the CPU can run), and the attention path.
 */
struct facet_ukernel;
typedef struct facet_cpu_kernels {
    const struct facet_ukernel *matmul[FACET_WF_COUNT];
    int attn;                      /* facet_attn_path                                   */
    int level;                     /* facet_cpu_level, for the _at row kernels below    */
    /* per GGUF block type (facet_qtype): its dot product on this CPU (quant.h
     * facet_qdot_fn; AVX-512 VNNI, AVX-512, AVX2 or scalar, the first the type has and the
     * CPU runs; NULL for a type without kernels) and which path that is (0 scalar, 1 avx2,
     * 2 avx512, 3 avx512vnni) */
    facet_qdot_fn qdot[FACET_QT_COUNT];
    int qpath[FACET_QT_COUNT];
    /* the type's several-row dot on that same path (quant.h facet_qdotx_fn), NULL where
     * it has none (qdot then runs once per input row) */
    facet_qdotx_fn qdotx[FACET_QT_COUNT];
    /* the type's several-weight-row dot on that path (quant.h facet_qdotr_fn), NULL where
     * it has none (qdot then runs once per weight row of a decode sweep) */
    facet_qdotr_fn qdotr[FACET_QT_COUNT];
    /* the type's panel kernel (quant.h facet_qpanel_fn) for tensors facet_wtensor_kpanel
     * repacked: AVX-512 VNNI where the CPU has it, else the portable one; NULL for a type
     * without panels */
    facet_qpanel_fn qpanel[FACET_QT_COUNT];
} facet_cpu_kernels;
struct facet_cpu_info;
void facet_cpu_kernels_resolve(facet_cpu_kernels *k, const struct facet_cpu_info *cpu);

/* Name of the matmul kernel k runs for format f (e.g. "bf16-avx512bf16", "int8-avx2"),
 * and of the format's best kernel on any CPU (its first candidate). */
const char *facet_matmul_kernel_name(const facet_cpu_kernels *k, facet_wformat f);
const char *facet_matmul_kernel_best(facet_wformat f);

/* facet_matmul and facet_matmul_multi with the kernels of k (below: of facet_cpu() at
 * the call). */
void facet_matmul_k(const facet_cpu_kernels *k, facet_pool *pool, float *Y, const float *X,
                    const struct facet_wtensor *W, const float *bias, int n_rows);
/*
 * Y[m] (W[m]->rows) = X[m] (W[m]->cols) W[m]^T (+ bias[m]) for m < n_mats: several
 * matrices, each with its own single input row (a decode step's chosen experts: their
 * down projections read different activations), in ONE pool run whose tasks are
 * (matrix, slice of output rows); each task runs the matrix's kernel on the calling
 * thread over a row view (whole panels of 16 for facet's packed formats, any rows for
 * GGUF blocks), so every output is the same bits as facet_matmul_k of its matrix alone
 * (one input row: no k blocking, one dot per output). Formats may differ between the
 * matrices. n_mats <= FACET_MATMUL_EACH_MAX.
 */
#define FACET_MATMUL_EACH_MAX 128
void facet_matmul_each_k(const facet_cpu_kernels *k, facet_pool *pool, int n_mats,
                         float *const *Y, const float *const *X,
                         const struct facet_wtensor *const *W, const float *const *bias);
void facet_matmul_multi_k(const facet_cpu_kernels *k, facet_pool *pool, int n_mats,
                          float *const *Y, const float *X, const struct facet_wtensor *const *W,
                          const float *const *bias, int n_rows);

/*
 * Y[r][o] = sum_i X[r][i] * W[o][i] (+ bias[o]) for any weight format: X is
 * [n_rows][W->cols] float32, Y is [n_rows][W->rows]. Packed tensors run the kernel of
 * their format for this CPU (cpu_features.h: AVX-512 BF16 / VNNI, AVX2, scalar), a
 * thread-pool task per group of output panels, each task reading its weights once for
 * all n_rows (decode: one sweep for every sequence; prefill: register tiles of rows x
 * 16-output panels, weights reused from cache across row tiles). Activations as the
 * format computes them: f32 and f16 multiply float32 X; bf16 multiplies X rounded to
 * bf16 with vdpbf16ps on CPUs with AVX512-BF16 and float32 X otherwise; int8 and q4
 * quantize X per row and block of 32 to int8 (scale max|x| / 127) and sum integer
 * products per block. Every row of Y is computed with the same operations in the same order whatever
 * n_rows is, so a sequence's result does not depend on what else is in the batch.
 * Scratch for the prepared X comes from the pool (facet_pool_scratch), or malloc when
 * pool is NULL; should that allocation fail, Y is filled with NaN.
 * GGUF block formats (quant.h) quantize each X row once into the activation blocks
 * their type's dot reads (Q8_0, Q8_1 or Q8_K), then a task per group of output rows
 * reads each weight row once for all n_rows, one dot per (row, output) pair.
 */
void facet_matmul(facet_pool *pool, float *Y, const float *X, const facet_wtensor *W,
                  const float *bias, int n_rows);

/*
 * Y[m] = X W[m]^T (+ bias[m]) for m < n_mats: several weight matrices with one input,
 * as the q/k/v projections or the gate/up projections of a layer. X is
 * [n_rows][W[m]->cols] float32 (the same cols for all), Y[m] is [n_rows][W[m]->rows],
 * bias[m] is NULL or W[m]->rows floats, and bias itself may be NULL (no bias anywhere).
 * Each Y[m] is bit for bit what facet_matmul(pool, Y[m], X, W[m], bias[m], n_rows)
 * gives, on every CPU path, for every n_rows. When all W[m] are packed in one format
 * with one cols, X is prepared (bf16 rounding, int8 quantization) once and a single
 * thread-pool run covers the output panels of every matrix (a task never spans two
 * matrices), saving the per-call preparation and barrier at decode; so do GGUF block
 * formats whose dots read the same activation blocks (Q4_K with Q6_K: a Q4_K_M layer's
 * q/k/v); otherwise (other mixed formats or cols, or an unpacked float32 W) it calls
 * facet_matmul for each matrix.
 * Y buffers must not overlap X or each other. Scratch as facet_matmul (pool, or malloc
 * when pool is NULL; on allocation failure every Y[m] is filled with NaN).
 */
void facet_matmul_multi(facet_pool *pool, int n_mats, float *const *Y, const float *X,
                        const facet_wtensor *const *W, const float *const *bias, int n_rows);

/*
 * Y[r][o] = sum_i X[r][i] * W[o][i] (+ bias[o] when bias != NULL), for r < n_rows,
 * o < n_out: X is [n_rows][n_in], W is [n_out][n_in] (the PyTorch nn.Linear weight
 * layout), Y is [n_rows][n_out]. Work is split over the pool by blocks of output rows;
 * each weight row is read once per call for all input rows, so a batch of rows (prefill,
 * or several sequences decoding) shares one sweep over W.
 */
void facet_matmul_f32(facet_pool *pool, float *Y, const float *X, const float *W,
                      const float *bias, int n_rows, int n_in, int n_out);

/*
 * RMSNorm as transformers' LlamaRMSNorm: y = x / sqrt(mean(x^2) + eps) * (offset + w),
 * the mean accumulated in double. offset is 0 (Llama) or 1 (Gemma's 1 + w). y may
 * alias x. n elements.
 */
void facet_rmsnorm(float *y, const float *x, const float *w, int n, double eps, float offset);

/*
 * RoPE in the rotate_half layout (transformers' apply_rotary_pos_emb): for a head vector
 * x of head_dim with rotary dims rot (even, <= head_dim) and half = rot/2,
 *   x'[i]        = x[i] * cos[i] - x[i + half] * sin[i]
 *   x'[i + half] = x[i + half] * cos[i] + x[i] * sin[i],   i < half;
 * dims >= rot pass through. cos/sin hold `half` values for the position. Applied to
 * n_heads consecutive heads of x.
 */
void facet_rope_apply(float *x, int n_heads, int head_dim, int rot, const float *cos,
                      const float *sin);

/*
 * RoPE on pairs (GPT-J's rotate_every_two; Cohere, ChatGLM): with half = rot/2,
 *   x'[2i]     = x[2i] * cos[i] - x[2i + 1] * sin[i]
 *   x'[2i + 1] = x[2i + 1] * cos[i] + x[2i] * sin[i],   i < half;
 * dims >= rot pass through; cos/sin as facet_rope_apply's, over n_heads heads of x.
 */
void facet_rope_pairs_apply(float *x, int n_heads, int head_dim, int rot, const float *cos,
                            const float *sin);

/*
 * KV cache rows: facet_kv_store rounds n float32 values to `type` (f32: copied; bf16 and
 * f16: round to nearest even, see facet_kv_type in facet.h) into dst (n elements of the
 * type); facet_kv_load widens n elements of `type` at src to float32 exactly. The result
 * does not depend on the CPU path. Element size: facet_kv_type_bytes.
 */
void facet_kv_store(const float *src, facet_kv_type type, void *dst, int n);
void facet_kv_load(const void *src, facet_kv_type type, float *dst, int n);

/* x[0..n) replaced by what a cache of `type` holds for it (store, then load; f32: as
 * is): for rows attention reads from the batch scratch instead of the cache. */
void facet_kv_round(float *x, facet_kv_type type, int n);

/* The three above at a CPU level resolved by the caller (facet_cpu_kernels.level), the
 * plain ones at facet_cpu()'s; the same bits on every level. */
void facet_kv_store_at(int level, const float *src, facet_kv_type type, void *dst, int n);
void facet_kv_load_at(int level, const void *src, facet_kv_type type, float *dst, int n);
void facet_kv_round_at(int level, float *x, facet_kv_type type, int n);

/*
 * facet_kv_store_strided / facet_kv_load_strided: the same for n elements `stride`
 * elements apart in the cache (one key of the transposed key layout below).
 */
void facet_kv_store_strided(const float *src, facet_kv_type type, void *dst, int n, int stride);
void facet_kv_load_strided(const void *src, facet_kv_type type, float *dst, int n, int stride);

/* Keys per block of facet_attention_causal (fixed: it sets the summation order). */
#define FACET_ATTN_BLOCK 64

/* Keys are cached transposed in groups of this many positions: [group][head_dim][16]. */
#define FACET_KV_GROUP 16

/* The attention kernel's code path, resolved once from the CPU (facet_attn_path_for)
 * and kept by whoever calls the kernel (the backend), not re-checked per call. */
typedef enum facet_attn_path {
    FACET_ATTN_GENERIC = 0,     /* portable C; a 16-bit block widened to float32 first  */
    FACET_ATTN_AVX512 = 1,      /* AVX-512 tiles reading the cache as it is            */
    FACET_ATTN_AVX512_BF16 = 2, /* and a bf16 cache's scores with vdpbf16ps            */
} facet_attn_path;

struct facet_cpu_info;
/* The path for a CPU (cpu_features.h) and its name ("generic", "avx512",
 * "avx512-bf16"). */
facet_attn_path facet_attn_path_for(const struct facet_cpu_info *cpu);
const char *facet_attn_path_name(facet_attn_path p);
/* The attention kernel facet_attention runs on path p for a cache of type t and head_dim
 * hd: "blocked-avx512bf16" (vdpbf16ps scores), "blocked-avx512" (the AVX-512 tiles), or
 * "blocked-generic" (portable C; a 16-bit cache's block widened first). */
const char *facet_attention_kernel_name(facet_attn_path p, facet_kv_type t, int hd);

/*
 * One attention operation's constants, the same for every query of a call:
 *   out[i] = sum_{first(i) <= t <= pos[i]} softmax_t(softcap(scale * q[i] . K[t])) V[t]
 * with first(i) = max(0, pos[i] - window + 1) (window 0: 0), softcap(x) =
 * softcap * tanh(x / softcap) (softcap 0: x), and, when sinks is non-NULL, one more
 * logit sinks[i * sink_stride] in the softmax's denominator whose value is 0 (gpt-oss's
 * per-head attention sinks; sink_stride 0 when every query of a call is one head), and,
 * when alibi is non-NULL, alibi[i * alibi_stride] * (t - pos[i]) added to each score
 * after the softcap (ALiBi: the head's slope times the key's distance, <= 0; the form
 * relative to the query adds the same per-query constant as BLOOM's slope * t, which the
 * softmax cancels, and keeps the bias small in float32).
 * Keys and values of kv_type; values' rows v_stride elements apart. The head's buffers
 * are linear (kv_ring 0: position t at row t - kv_pos0, kv_pos0 a multiple of
 * FACET_ATTN_BLOCK and <= first(i) rounded down to one) or a ring (kv_ring > 0, a
 * multiple of FACET_KV_GROUP and >= window: position t at row t % kv_ring, every visible
 * position present).
 */
typedef struct facet_attn_params {
    int head_dim;
    float scale;
    float softcap;
    int window;
    const float *sinks;
    size_t sink_stride;
    const float *alibi;
    size_t alibi_stride;
    facet_kv_type kv_type;
    size_t v_stride;
    int kv_ring;
    int kv_pos0;
    facet_attn_path path;
} facet_attn_params;

/*
 * Softmax attention of one head (or of the query heads of one KV head at one position)
 * for n_q queries of one sequence, as facet_attn_params says. q: query i at
 * q + i * q_stride (head_dim floats), pos[i] its absolute position; K: the head's keys
 * transposed in groups of FACET_KV_GROUP rows, element d of row r at
 * (r / 16 * hd + d) * 16 + r % 16 (every group holding a visible position present in
 * full; lanes past the last visible one are read but never used); V: the value of row r
 * at element r * v_stride. Rows before a query's window inside its first block are read
 * and weighted 0, so they must hold finite values. out: row i at out + i * out_stride
 * (must not alias q). Keys go in blocks of FACET_ATTN_BLOCK at multiples of it in
 * absolute position with an online softmax (running max, rescaled sum and output), each
 * block's keys and values read once for all n_q queries: scores in tiles of up to 6
 * queries x 64 keys (one FMA chain over d per score), values four queries at a time.
 * A query's result is bit-identical whatever the other queries of the call, and
 * whether its keys come from a ring or a linear buffer (batch and chunk invariance).
 * scratch: at least FACET_ATTN_SCRATCH(n_q, hd) floats; nothing is allocated.
 */
#define FACET_ATTN_SCRATCH(n_q, hd)                                                       \
    ((size_t)(n_q) * (FACET_ATTN_BLOCK + (size_t)(hd) + 4) + ((size_t)(n_q) * (hd) + 1) / 2 + \
     2 * (size_t)FACET_ATTN_BLOCK * (size_t)(hd))
void facet_attention(const facet_attn_params *p, const float *q, size_t q_stride, const int *pos,
                     int n_q, const void *K, const void *V, float *out, size_t out_stride,
                     float *scratch);

/* facet_attention without window, softcap or sinks over a linear buffer from position 0
 * (K and V as there with kv_pos0 0), on the path of facet_cpu() (the one-kernel bench
 * and tests). */
void facet_attention_causal(const float *q, size_t q_stride, const int *pos, int n_q,
                            const void *K, const void *V, facet_kv_type kv_type,
                            size_t v_stride, int hd, float scale, float *out, size_t out_stride,
                            float *scratch);

/*
 * Latent attention (multi-head latent attention's absorbed form, DeepSeek-V2/V3; see
 * src/engine/mixer_mla.c): every query attends to ONE key per position, kd elements
 * wide, whose first vd elements are also its value (the cached latent c, then the rope
 * key):
 *   out[i] = sum_{0 <= t <= pos(i)} softmax_t(scale * q[i] . K[t]) K[t][0 .. vd)
 * Queries come as n_rows rows of n_heads each, all of one sequence: query (r, h) is kd
 * floats at q + r * q_row_stride + h * kd, at position pos[r]; its output, vd floats, at
 * out + r * out_row_stride + h * vd (out must not overlap q). K: the sequence's latent
 * cache of one layer from position 0, keys transposed in groups of FACET_KV_GROUP
 * ([t / 16][kd][16], kv_type; a linear buffer, kv_cache.h's latent slot; lanes past
 * the last visible position read, never used). Keys go in blocks of FACET_ATTN_BLOCK
 * at multiples of it with an online softmax, each block read once for all the call's
 * queries: scores as facet_attention's tiles of up to 6 queries x 64 keys (one FMA chain
 * over kd per score), the block's values widened once to float32 rows, then
 * accumulated four queries at a time (fma(p[t], v[t], acc) in t order). A query's
 * result is bit-identical whatever the other queries of the call (decode one token at
 * a time, batched or chunked prefill agree to the bit). Path: facet_cpu()'s attention
 * path (facet_attn_path_for) when vd % 16 == 0, else portable C.
 * scratch: FACET_LATENT_SCRATCH(n_rows * n_heads, kd, vd) floats; nothing is allocated.
 */
typedef struct facet_latent_params {
    int kd, vd;                    /* key width (kv_lora_rank + rope), value width     */
    float scale;                   /* softmax scale                                    */
    facet_kv_type kv_type;
} facet_latent_params;
#define FACET_LATENT_SCRATCH(n_q, kd, vd)           \
    ((size_t)(n_q) * (FACET_ATTN_BLOCK + 3) +       \
     (size_t)FACET_ATTN_BLOCK * ((size_t)(kd) + (size_t)(vd)))
void facet_attention_latent(const facet_latent_params *p, int n_rows, int n_heads,
                            const float *q, size_t q_row_stride, const int *pos, const void *K,
                            float *out, size_t out_row_stride, float *scratch);

/* In-place softmax of x[0..n) (max-subtracted, exp in float, sum in double). */
void facet_softmax(float *x, int n);

/* gate[i] = act(gate[i]) * up[i] for i < n; act: 0 silu, 1 gelu tanh, 2 gelu erf, 3 relu2
 * (values of facet_act). SiLU and gelu tanh (as g sigmoid(2u), the same function) on the
 * AVX-512 path use a vector e^x within 2 ulp of expf for whole groups of 16 (the rest,
 * and every other path, libm's expf / tanhf); the split depends only on n, so a row's
 * result does not depend on its batch. */
void facet_gated_act(float *gate, const float *up, int n, int act);
/* facet_gated_act at a CPU level resolved by the caller (facet_cpu_kernels.level). */
void facet_gated_act_at(int level, float *gate, const float *up, int n, int act);

/* Dot product of two float32 vectors of length n: fused multiply-adds into SIMD lanes
 * at the CPU's level (cpu_features.h), lanes summed in a fixed order; the same inputs
 * always give the same bits on one path. */
float facet_dot_f32(const float *a, const float *b, int n);

/* y[i] = fma(a, x[i], y[i]) for i < n (one rounding per element, every path). */
void facet_axpy_f32(float *y, float a, const float *x, int n);

/* C (m, n) += A (m, k) B (k, n), row-major with leading dimensions lda, ldb, ldc (floats),
 * in the calling thread (gemm_small.c; the blocks of Mamba-2's SSD scan): each element
 * C[i][j] = fma(A[i][p], B[p][j], C[i][j]) for p = 0 .. k - 1 in order on every path, so
 * its bits do not depend on m, n or the tiling. Nothing for m, n or k <= 0. */
void facet_gemm_f32_acc(int m, int n, int k, const float *A, size_t lda, const float *B,
                        size_t ldb, float *C, size_t ldc);

/* One token of Mamba-1's selective scan over 16 channels in lanes (ssm_scan.c): for state
 * element n = 0 .. N-1 in order, e = exp(a[n][c] dt[c]) (a <= 0, dt >= 0; Cephes' expf
 * polynomial, within 8.1e-8 of exp, e^-87 below -87), h[n][c] = e h[n][c] + dx[c] B[n],
 * y[c] = sum_n h[n][c] C[n]. h, a: (N, 16); dt, dx, y: 16; B, C: N. Each value rounded on
 * its own (no fused multiply-add), the same bits on every path. */
void facet_ssm_scan16(float *h, float *y, const float *a, const float *dt, const float *dx,
                      const float *B, const float *C, int N);

/* LayerNorm over one row of n (norm_act.c): y = (x - mean) / sqrt(var + eps) * w + b,
 * mean and (biased) variance in double; w or b NULL: 1 / 0. y may alias x. */
void facet_layernorm(float *y, const float *x, const float *w, const float *b, int n, double eps);

/* x = act(x) over n elements, act a facet_act (silu, gelu tanh form, gelu erf form): the
 * activation of an ungated MLP (norm_act.c). SiLU and the gelu tanh form use
 * facet_act_row_vec for whole groups of 16 (as facet_gated_act does), libm for the rest;
 * the split depends only on n. */
void facet_act_row(float *x, int n, int act);
/* The AVX-512 part of facet_act_row: act 0 (silu) or 1 (gelu tanh form) over the first
 * n / 16 * 16 elements with the vector e^x of facet_gated_act (within 2 ulp of expf;
 * the tanh form as g sigmoid(2u)); returns the elements done (0 on other CPUs or acts). */
int facet_act_row_vec(float *x, int n, int act);

#endif
