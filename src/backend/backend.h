/*
 * backend.h — the compute backend interface: the operations the forward pass runs, as one
 * table of functions chosen once, when a session is created (ggml's ggml_backend_i in
 * spirit). src/engine calls only through it and never asks which CPU (or device) it runs
 * on; src/backend/backend_cpu.c implements it with the kernels of src/kernels/cpu.
 *
 * Granularity. Each operation is a step of a layer over a whole chunk of batch entries
 * (matmul over a weight, attention of a layer, the K/V stores, the norms of the chunk's
 * rows, RoPE of its rows, the residual), or over one entry's row (norms, RoPE,
 * activation, rounding) called from `run`'s parallel tasks by the kinds that work row by
 * row. The layer loop and the attention and dense kinds use the chunk operations, so a
 * backend whose memory is not the host's (Vulkan, issue 24) records a forward chunk's
 * operations over activations that stay on its device (scratch_alloc) and submits them
 * once (sync, status); it keeps the weights it was given (a facet_wtensor is the key of
 * its device copy). A backend spread over MPI ranks splits the weights' output rows
 * (matmul) and the heads (attention) among its ranks.
 *
 * Shapes use src/model/facts.h's names: H hidden_size, nh/nkv heads, hd head_dim.
 * Threads: every operation may be called from `run`'s tasks except run, reserve and free.
 */
#ifndef FACET_BACKEND_H
#define FACET_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "engine/kv_cache.h"
#include "facet.h"
#include "kernels/cpu/kernels.h"

typedef struct facet_backend facet_backend;

/* A parallel task: task in [0, n_tasks), thread in [0, threads). */
typedef void (*facet_task_fn)(void *ctx, int task, int thread);

/*
 * One layer's attention over a chunk of batch entries (rows), grouped by sequence.
 * q: (n_rows, nh*hd) after norm and RoPE (rounded to bf16 when the cache is bf16);
 * k, v: (n_rows, nkv*hd) the chunk's own keys and values, rounded to the cache's type;
 * out: (n_rows, nh*hd). Group g is one sequence's entries: group_len[g] of them,
 * order[order_at[r] ..] in position order for any of its entries r (the first is
 * group_row[g]), rows group_row[g] .. + group_len[g] - 1 when contiguous; pos[r] is entry
 * r's position, seq_ids[r] its sequence in kv. Every entry
 * of a non-ring layer, and a single-entry group of a ring layer, is already stored in the
 * cache; a ring layer's other entries are stored after the call (see forward.c).
 */
typedef struct facet_attn_chunk {
    const facet_attn_params *p;    /* window, softcap, scale, sinks, cache type        */
    facet_kv_cache *kv;
    int layer;
    int n_heads, n_kv_heads;
    int n_rows;
    const float *q, *k, *v;
    float *out;
    const int *pos;
    const int32_t *seq_ids;
    int n_groups, contiguous;
    const int *group_row, *group_len, *order_at, *order;
} facet_attn_chunk;

typedef struct facet_backend_ops {
    const char *name;              /* "cpu"                                            */
    void (*free)(facet_backend *be);

    /* parallel for: fn(ctx, task, thread) for every task, returning when all are done */
    void (*run)(facet_backend *be, int n_tasks, facet_task_fn fn, void *ctx);
    int (*threads)(const facet_backend *be);
    /* make the backend's own scratch hold a chunk of n_rows entries of a model with
     * n_heads query heads over cache kv (attention of up to max(n_rows, n_heads) queries
     * per call, ring layers' views); called before anything of a batch is applied.
     * Errors: FACET_E_NOMEM (the backend unchanged, usable). */
    facet_status (*reserve)(facet_backend *be, const facet_kv_cache *kv, int n_heads,
                            int n_rows, facet_error *err);

    /* Y (n_rows, W->rows) = X (n_rows, W->cols) W^T (+ bias); _multi: several weights
     * of one input (q/k/v, gate/up), each Y[m] bit for bit what matmul gives */
    void (*matmul)(facet_backend *be, float *Y, const float *X, const facet_wtensor *W,
                   const float *bias, int n_rows);
    void (*matmul_multi)(facet_backend *be, int n_mats, float *const *Y, const float *X,
                         const facet_wtensor *const *W, const float *const *bias, int n_rows);
    /* Y[m] = X[m] W[m]^T (+ bias[m]) for n_mats matrices of ONE input row each (a decode
     * step's chosen experts), all in one parallel run; each Y[m] bit for bit what
     * matmul gives (n_mats <= 128) */
    void (*matmul_each)(facet_backend *be, int n_mats, float *const *Y, const float *const *X,
                        const facet_wtensor *const *W, const float *const *bias);
    /* a layer's attention over a chunk (facet_attn_chunk) */
    void (*attention)(facet_backend *be, const facet_attn_chunk *c);
    /* store entry position pos of sequence seq in the cache (k, v: nkv*hd floats) */
    void (*kv_store)(facet_backend *be, facet_kv_cache *kv, int seq, int layer, int pos,
                     const float *k, const float *v);
    /* store n entries of a chunk: entry e is chunk row rows[e] (rows NULL: e), of sequence
     * seq_ids[row] at position pos[row], its K/V rows k, v + row * nkv*hd; bit for bit n
     * kv_store calls (a device backend dispatches each run of one sequence's entries) */
    void (*kv_store_rows)(facet_backend *be, facet_kv_cache *kv, int layer, int n,
                          const int *rows, const int32_t *seq_ids, const int *pos,
                          const float *k, const float *v);

    /* rows: y = RMSNorm(x) (offset + w), y may alias x; RoPE of n_heads heads of x;
     * gate = act(gate) * up; x rounded to what a cache of type t holds */
    void (*rmsnorm)(const facet_backend *be, float *y, const float *x, const float *w, int n,
                    double eps, float offset);
    /* M contiguous vectors of n floats (one row's heads: a per-head qk-norm), each
     * normed as rmsnorm does with the same w; bit for bit M rmsnorm calls */
    void (*rmsnorm_rows)(const facet_backend *be, float *y, const float *x, const float *w,
                         int n, int M, double eps, float offset);
    void (*rope)(const facet_backend *be, float *x, int n_heads, int head_dim, int rot,
                 const float *cos, const float *sin);
    /* RoPE of M contiguous rows of n_heads heads, row r with cos, sin + r * rot/2; bit for
     * bit M rope calls */
    void (*rope_rows)(const facet_backend *be, float *x, int M, int n_heads, int head_dim,
                      int rot, const float *cos, const float *sin);
    /* x[i] += h[i] * mult for i < n (the residual; mult 1: x[i] + h[i] exactly) */
    void (*add_scaled)(const facet_backend *be, float *x, const float *h, size_t n, float mult);
    void (*gated_act)(const facet_backend *be, float *gate, const float *up, int n, int act);
    /* M contiguous rows of n: bit for bit M gated_act calls (a vector kernel's tail is
     * where each row's is) */
    void (*gated_act_rows)(const facet_backend *be, float *gate, const float *up, int n, int M,
                           int act);
    /* rows of the classic decoders: y = LayerNorm(x) w (+ b) (w, b may be NULL; y may
     * alias x); x = act(x), an ungated MLP's activation */
    void (*layernorm)(const facet_backend *be, float *y, const float *x, const float *w,
                      const float *b, int n, double eps);
    void (*act)(const facet_backend *be, float *x, int n, int act);
    /* M contiguous rows of n: bit for bit M layernorm / act calls (a chunk's rows) */
    void (*layernorm_rows)(const facet_backend *be, float *y, const float *x, const float *w,
                           const float *b, int n, int M, double eps);
    void (*act_rows)(const facet_backend *be, float *x, int n, int M, int act);
    /* RoPE on pairs (2i, 2i+1) of the first rot dims (GPT-J's rotate_every_two; kernels.h
     * facet_rope_pairs_apply) of M rows of n_heads heads, row r with cos, sin + r * rot/2 */
    void (*rope_pairs_rows)(const facet_backend *be, float *x, int M, int n_heads,
                            int head_dim, int rot, const float *cos, const float *sin);
    /* y = x, n floats (the parallel residual's normed input; y and x do not overlap) */
    void (*copy)(const facet_backend *be, float *y, const float *x, size_t n);
    void (*kv_round)(const facet_backend *be, float *x, facet_kv_type t, int n);

    /* what runs, for `facet plan` and the bench: the matmul kernel of a weight format
     * and that format's best kernel anywhere; the attention kernel for a cache type and
     * head_dim; bytes of a [rows][cols] weight in a format as the backend stores it */
    const char *(*matmul_kernel)(const facet_backend *be, facet_wformat f);
    const char *(*matmul_kernel_best)(const facet_backend *be, facet_wformat f);
    const char *(*attention_kernel)(const facet_backend *be, facet_kv_type t, int head_dim);
    uint64_t (*weight_bytes)(const facet_backend *be, facet_wformat f, uint64_t rows,
                             uint64_t cols);
    /* Activations (the session's batch scratch): NULL ops malloc / free. A device backend
     * gives memory its operations use in place, so results stay on the device from one
     * operation to the next and nothing waits until the host reads them (Vulkan). */
    void *(*scratch_alloc)(facet_backend *be, size_t bytes);
    void (*scratch_free)(facet_backend *be, void *p);
    /* Wait for the operations recorded so far (NULL: operations complete before they
     * return, cpu). The host reads or writes scratch_alloc memory only after it: the
     * engine calls it before its own arithmetic on activations (forward.c, the kinds);
     * an operation whose output is host memory (logits, a test's arrays) completes before
     * it returns on every backend. Errors are kept for status. */
    void (*sync)(facet_backend *be);
    /* FACET_OK, or the first error of an operation since the last call (a device lost or
     * out of memory: the operations return nothing, so a backend that can fail keeps its
     * first error here and the forward pass returns it); NULL: never fails (cpu) */
    facet_status (*status)(facet_backend *be, facet_error *err);
} facet_backend_ops;

struct facet_backend {
    const facet_backend_ops *ops;
};

/*
 * The CPU backend over `pool` (borrowed; NULL: the calling thread alone), its kernels
 * resolved from facet_cpu() now, once (kernels.h facet_cpu_kernels). Free with
 * be->ops->free. Errors: FACET_E_NOMEM.
 */
facet_status facet_backend_cpu_create(facet_pool *pool, facet_backend **out, facet_error *err);

/*
 * A compute device that a model's sessions share: for the Vulkan backend (issue 24,
 * src/backend/vulkan) its instance, device, pipelines and the weights uploaded to it
 * (each facet_wtensor uploaded on first use and kept resident, keyed by its address).
 * Opaque; owned by the model (facet_model_load opens it, facet_model_free frees it).
 */
typedef struct facet_device facet_device;

/* Open device `index` (-1: the default, a discrete GPU first) of `backend` ("vulkan").
 * Errors: FACET_E_UNSUPPORTED (a backend without devices, a binary built without Vulkan
 * naming it, no driver, no such device), FACET_E_NOMEM. */
facet_status facet_device_open(const char *backend, int index, facet_device **out,
                               facet_error *err);
void facet_device_free(facet_device *d);
/* One line for the user: "vulkan device N: NAME, X.X GiB" (owned by d). */
const char *facet_device_describe(const facet_device *d);
/* Command buffers submitted to d so far (facet_model_info.device_submissions). */
uint64_t facet_device_submissions(const facet_device *d);
/*
 * What a device offers that the kernels depend on, read once when it is opened
 * (vk_device.c: VkPhysicalDeviceLimits, VkPhysicalDeviceSubgroupProperties and the
 * 16-bit / 8-bit storage and arithmetic features). The capability table's vulkan column
 * judges a checkpoint against them (model/device_verdict.h) before any weight is read;
 * a unit test fills one by hand. Units: bytes, invocations.
 */
enum {
    FACET_DEV_FLOAT16 = 1,   /* shaderFloat16: 16-bit float arithmetic in shaders       */
    FACET_DEV_INT8 = 2,      /* shaderInt8: 8-bit integer arithmetic                    */
    FACET_DEV_STORAGE16 = 4, /* storageBuffer16BitAccess: 16-bit loads/stores           */
    FACET_DEV_STORAGE8 = 8,  /* storageBuffer8BitAccess: 8-bit loads/stores             */
};
typedef struct facet_device_limits {
    char name[256];             /* VkPhysicalDeviceProperties.deviceName                */
    int index;                  /* its place in vkEnumeratePhysicalDevices' order       */
    int count;                  /* devices the loader lists on this machine             */
    uint64_t memory_bytes;      /* the largest DEVICE_LOCAL heap                        */
    uint64_t buffer_heap_bytes; /* the heap of the one memory type every buffer takes   */
    int buffer_device_local;    /* 1: that type is DEVICE_LOCAL; 0: system memory       */
    uint32_t max_shared_bytes;  /* maxComputeSharedMemorySize                           */
    uint32_t max_invocations;   /* maxComputeWorkGroupInvocations                       */
    uint32_t max_group_size[3]; /* maxComputeWorkGroupSize                              */
    uint32_t subgroup_size;     /* VkPhysicalDeviceSubgroupProperties.subgroupSize      */
    uint64_t max_storage_range; /* maxStorageBufferRange: the most one binding reaches  */
    unsigned features;          /* FACET_DEV_* bits                                     */
} facet_device_limits;
/* d's limits (owned by d); NULL in a binary built without Vulkan. */
const facet_device_limits *facet_device_limits_of(const facet_device *d);
/* One line of them: "limits: shared memory 32768 B (maxComputeSharedMemorySize),
 * workgroup 1024 invocations (1024 x 1024 x 1024), subgroup 8, storage range 134217728 B
 * (maxStorageBufferRange), float16 yes, int8 yes, 16-bit storage yes, 8-bit storage yes;
 * buffers in device-local host-visible memory, heap 2.0 GiB" into buf (cap bytes). */
void facet_device_limits_line(const facet_device_limits *l, char *buf, size_t cap);
/* Put kv's key and value buffers in d's memory (kv_cache.h buf_alloc): mapped buffers
 * the host's cache code writes and the Vulkan attention reads in place. Call after
 * facet_kv_cache_init, before the first reserve; d outlives kv's buffers. */
void facet_device_kv_memory(facet_device *d, facet_kv_cache *kv);
/* 1 when this binary has the Vulkan backend. */
int facet_vulkan_built(void);

/* The weight formats the Vulkan backend's matmul shaders read (bit facet_wformat), as
 * FACET_VULKAN_WEIGHTS names them: the one list by which the loader (engine/model.c),
 * `facet plan`, `facet conform` and the backend itself (vk_weights.c) refuse the rest. */
#define FACET_VULKAN_WFORMATS                                                              \
    (1u << FACET_WF_F32 | 1u << FACET_WF_BF16 | 1u << FACET_WF_F16 | 1u << FACET_WF_Q8 |  \
     1u << FACET_WF_Q4 | 1u << FACET_WF_GGUF_Q4_0 | 1u << FACET_WF_GGUF_Q4_1 |              \
     1u << FACET_WF_GGUF_Q5_0 | 1u << FACET_WF_GGUF_Q5_1 | 1u << FACET_WF_GGUF_Q8_0 |         \
     1u << FACET_WF_GGUF_IQ4_NL | 1u << FACET_WF_GGUF_Q2_K | 1u << FACET_WF_GGUF_Q3_K |       \
     1u << FACET_WF_GGUF_Q4_K | 1u << FACET_WF_GGUF_Q5_K | 1u << FACET_WF_GGUF_Q6_K |         \
     1u << FACET_WF_GGUF_IQ4_XS)
#define FACET_VULKAN_WEIGHTS                                                                 \
    "f32, bf16, f16, int8, q4, GGUF Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K, " \
    "Q5_K, Q6_K and IQ4_XS blocks"

/* The first of `formats` (bit facet_wformat) no Vulkan shader reads, or -1. */
static inline int facet_vulkan_unread_format(uint32_t formats) {
    uint32_t bad = formats & ~(uint32_t)FACET_VULKAN_WFORMATS;
    for (int f = 0; f < FACET_WF_ALL; f++)
        if (bad >> f & 1) return f;
    return -1;
}

/* The Vulkan backend over device d (borrowed; outlives the backend): every operation is
 * recorded into command buffers and run on the device, one submission per backend call
 * (backend_vulkan.c). Errors: FACET_E_NOMEM. */
facet_status facet_backend_vulkan_create(facet_device *d, facet_backend **out, facet_error *err);

#endif
