/*
 * plan.h — the execution and memory plan of a checkpoint (issue 5, `facet plan`).
 *
 * From the facts alone: weight bytes in every run-time format, the KV-cache layout and
 * its bytes, the total at a context and batch, whether that fits this machine's free
 * RAM, the largest context and batch that fit, and per-layer kernel paths chosen from
 * declared path capabilities (closest first, degrading, never an error when a fallback
 * exists).
 *
 * Weight bytes are facet's run-time bytes (what src/engine/weights.c allocates): every
 * 2-D matrix (embeddings, projections, lm_head when untied) packed in the format, rows
 * padded to a multiple of 16 and inputs to a multiple of 32 (int8: 1 byte per weight +
 * one f16 scale per 32 inputs and row); norms and biases float32.
 *
 * Units: bytes. Memory counted: weights in the chosen format + the KV cache of `batch`
 * sequences at `ctx` positions. Activation scratch (a few rows of hidden/intermediate/
 * vocab floats per sequence) is not counted.
 *
 * KV cache (facet's layout, src/engine): per sequence and layer, K and V rows of
 * num_key_value_heads * head_dim elements of the KV type per position (e bytes: 4 for
 * f32, 2 for bf16 / f16; auto follows the weights as facet_auto_kv). Per layer and
 * position k = 2 * num_key_value_heads * head_dim * e bytes. Naive bytes per token: L * k.
 * Actual bytes of one sequence at context c with G global and S windowed layers of
 * window w: k * (G * r(min(c, max_position_embeddings)) + S * r(min(c, w))), r rounding
 * up to a multiple of 16 (the cache allocates whole groups of 16 positions: keys are
 * stored transposed per group).
 */
#ifndef FACET_MODEL_PLAN_H
#define FACET_MODEL_PLAN_H

#include <stdint.h>

#include "facet.h"
#include "kernels/cpu/kernels.h"
#include "model/facts.h"

/* Weight formats are the kernels' facet_wformat (kernels.h: FACET_WF_F32, _BF16, _F16,
 * _Q8 = int8 with one f16 scale per block of 32 inputs and row; FACET_WF_COUNT of them);
 * FACET_PLAN_AUTO asks for the checkpoint's own precision. */
#define FACET_PLAN_AUTO (-1)
/* The plan's value for FACET_WEIGHTS_GGUF: each matrix in a GGUF file's own type, the bytes
 * the caller states (facet_plan_opts.gguf_weight_bytes). It indexes weight_bytes after
 * facet's own formats. */
#define FACET_PLAN_GGUF FACET_WF_COUNT

/* The plan's format for a public facet_weight_format: FACET_PLAN_AUTO for AUTO, else its
 * facet_wformat (facet_wformat_of, the one mapping). */
int facet_plan_weights(facet_weight_format w);

typedef struct facet_plan_opts {
    int64_t ctx;            /* positions per sequence; 0 = max_position_embeddings  */
    int64_t batch;          /* concurrent sequences; 0 = 1                           */
    int weights;            /* facet_wformat, or FACET_PLAN_AUTO (the checkpoint's own
                               precision, what facet run --weights auto loads)       */
    uint64_t mem_available; /* bytes; 0 = read MemAvailable from /proc/meminfo        */
    facet_kv_type kv_cache; /* KV cache element type; FACET_KV_AUTO (0) follows the
                               chosen weights (facet_auto_kv), as facet run does       */
    /* a GGUF file's weights as they run in its own types (the caller reads the file):
     * all its tensors' bytes (matrices in their types, vectors f32), and which formats
     * its matrices are in (bit facet_wformat; FACET_WF_GGUF_* and F32/F16/BF16); 0 for a
     * Hugging Face checkpoint */
    uint64_t gguf_weight_bytes;
    uint32_t gguf_formats;
    /* of gguf_weight_bytes, what one decoded token reads (an expert tensor's k / E share,
     * one row of an untied token_embd); 0: take all of gguf_weight_bytes */
    uint64_t gguf_decode_bytes;
} facet_plan_opts;

/* Consecutive layers that run the same kinds and kernels. */
typedef struct facet_plan_group {
    int first, last;        /* layer range, inclusive                                */
    int sliding;            /* 1: windowed attention                                 */
    int no_rope;            /* 1: attention without rotary positions in a model whose
                               other layers rotate (SmolLM3's NoPE, Cohere 2's full
                               layers)                                              */
    char attention[160];    /* "causal GQA 32q/8kv hd=64" / "... window 4096 (ring)"
                               (Falcon-H1: "... + Mamba-2 d_inner=... groups=...")      */
    /* what the engine runs, from its own resolution (layer.h kinds, the CPU backend's
     * kernels): "mixer attention (blocked-avx512bf16), ffn dense (bf16-avx512bf16)" */
    char kernels[192];
} facet_plan_group;

typedef struct facet_plan {
    /* parameters and weights */
    uint64_t n_params;                          /* all parameters                    */
    uint64_t n_matrix_params;                   /* of them in 2-D matrices           */
    uint64_t n_active_params;                   /* what a decoded token multiplies:
                                                   all but the experts it does not
                                                   choose (each MoE layer: the router, k
                                                   experts, the shared expert)         */
    uint64_t decode_bytes_per_token;            /* their bytes in the chosen format   */
    uint64_t weight_bytes[FACET_WF_COUNT + 1]; /* matrices in the format, vectors f32;
                                                 * [FACET_PLAN_GGUF]: the GGUF file's own */
    int requested;                              /* facet_wformat asked for (or AUTO)  */
    int weights;                                /* facet_wformat chosen               */
    char weights_note[200];                     /* a matmul path below the format's best */

    /* KV cache */
    facet_kv_type kv_type;                      /* resolved element type (never AUTO)  */
    uint64_t kv_bytes_per_layer_position;       /* k                                  */
    uint64_t kv_bytes_per_token_naive;          /* L * k                              */
    int n_global_layers, n_sliding_layers;
    int64_t window;                             /* 0 when no layer is windowed        */
    char kv_layout[256];

    /* at (ctx, batch) */
    int64_t ctx, batch;
    uint64_t kv_bytes_per_sequence;             /* actual, at ctx (attention layers)  */
    uint64_t state_bytes_per_sequence;          /* recurrent (Mamba) layers' fixed state
                                                   of one sequence, whatever ctx:
                                                   n_ssm_layers x DI x (K - 1 + N) x 4 */
    double kv_bytes_per_token_actual;           /* kv_bytes_per_sequence / ctx        */
    uint64_t total_bytes;                       /* weights + batch * (kv + state) per
                                                   sequence                            */
    uint64_t mem_available;
    int fits;
    int64_t max_ctx_at_batch;                   /* 0 when even one position does not fit */
    int64_t max_batch_at_ctx;

    /* kernel paths */
    char matmul_path[96];
    char norm_path[96];
    char rope_path[96];
    char ffn_path[96];
    int n_groups;
    facet_plan_group groups[64];
} facet_plan;

/* Name of a format: "f32", "bf16", "f16", "int8", "gguf" (FACET_PLAN_GGUF). */
const char *facet_plan_format_name(int fmt);

/* Parse "auto|f32|bf16|f16|int8|gguf" into *fmt. Returns 0 on success, -1 otherwise. */
int facet_plan_format_parse(const char *s, int *fmt);

/* The matmul kernel this CPU runs for a format, as the CPU backend resolves it now (the
 * first of the format's kernels, closest first, that facet_cpu() can run), e.g.
 * "bf16-avx512bf16", "int8-avx2", "f32-scalar"; "none" for a bad format or when the
 * backend cannot be made (out of memory). */
const char *facet_plan_matmul_path(int fmt);

/* Bytes of one sequence's KV cache at context c with elements of elt bytes (the
 * formula above; attention layers only: G excludes recurrent layers). */
uint64_t facet_plan_kv_bytes(const facet_facts *f, int64_t c, uint64_t elt);

/* Bytes of one sequence's recurrent state (every Mamba layer's conv window and SSM state,
 * float32: what the session's STATE slots allocate on its first token). */
uint64_t facet_plan_state_bytes(const facet_facts *f);

/*
 * Compute the plan of facts `f` under `opts`. Errors: FACET_E_INVALID_ARGUMENT (a shape
 * fact missing (a family read leniently), ctx or batch negative, ctx above max_position_embeddings), FACET_E_IO (MemAvailable
 * unreadable when opts->mem_available is 0).
 */
facet_status facet_plan_make(const facet_facts *f, const facet_plan_opts *opts, facet_plan *out,
                             facet_error *err);

#endif
