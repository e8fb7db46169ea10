/*
 * matmul.c — facet_matmul and facet_matmul_multi: prepare the activations in the format
 * the kernel reads (once for every matrix sharing them), split the packed weights into
 * thread-pool tasks of output panels (one run for all the matrices) and run the
 * format's micro-kernel over register tiles of (rows x panels), blocked along the input
 * dim so a task's weights stay in the L2 cache while every row tile reuses them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul_internal.h"

/* Weights of one task's K block kept under this many bytes (half of a 1 MiB L2). */
#define CHUNK_BYTES (512u << 10)
/* Tasks per thread of a single-row (decode) matmul (mm_run). */
#define DECODE_TASKS 16
/* Rows prepared serially below this; above, the preparation is spread over the pool. */
#define PREP_PARALLEL_ROWS 8

const char *facet_wformat_name(facet_wformat f) {
    switch (f) {
    case FACET_WF_F32: return "f32";
    case FACET_WF_BF16: return "bf16";
    case FACET_WF_F16: return "f16";
    case FACET_WF_Q8: return "int8";
    case FACET_WF_Q4: return "q4";
    case FACET_WF_GGUF_Q4_0: case FACET_WF_GGUF_Q4_1: case FACET_WF_GGUF_Q5_0:
    case FACET_WF_GGUF_Q5_1: case FACET_WF_GGUF_Q8_0: case FACET_WF_GGUF_IQ4_NL:
    case FACET_WF_GGUF_Q2_K: case FACET_WF_GGUF_Q3_K: case FACET_WF_GGUF_Q4_K:
    case FACET_WF_GGUF_Q5_K: case FACET_WF_GGUF_Q6_K: case FACET_WF_GGUF_IQ4_XS:
    case FACET_WF_GGUF_MXFP4:
        return facet_qtype_traits_of((facet_qtype)facet_wformat_qtype(f))->name;
    }
    return "unknown";
}

/* Per weight format, its micro-kernels closest first, each with the CPU capability it
 * needs: the one list that both the engine (facet_cpu_kernels_resolve) and `facet plan`
 * (through the backend) choose from. */
enum { NEED_NONE, NEED_AVX2, NEED_AVX512, NEED_AVX512_BF16, NEED_AVX512_VNNI };
static const struct {
    const facet_ukernel *uk;
    int need;
} candidates[FACET_WF_COUNT][3] = {
    [FACET_WF_F32] = {{&facet_uk_f32_avx512, NEED_AVX512}, {&facet_uk_f32_avx2, NEED_AVX2},
                      {&facet_uk_f32_scalar, NEED_NONE}},
    [FACET_WF_BF16] = {{&facet_uk_bf16_avx512bf16, NEED_AVX512_BF16}, {&facet_uk_bf16_avx2, NEED_AVX2},
                       {&facet_uk_bf16_scalar, NEED_NONE}},
    [FACET_WF_F16] = {{&facet_uk_f16_avx512, NEED_AVX512}, {&facet_uk_f16_avx2, NEED_AVX2},
                      {&facet_uk_f16_scalar, NEED_NONE}},
    [FACET_WF_Q8] = {{&facet_uk_q8_avx512vnni, NEED_AVX512_VNNI}, {&facet_uk_q8_avx2, NEED_AVX2},
                     {&facet_uk_q8_scalar, NEED_NONE}},
    [FACET_WF_Q4] = {{&facet_uk_q4_avx512vnni, NEED_AVX512_VNNI}, {&facet_uk_q4_avx2, NEED_AVX2},
                     {&facet_uk_q4_scalar, NEED_NONE}},
};

static int has_capability(const facet_cpu_info *c, int need) {
    switch (need) {
    case NEED_AVX2: return c->level >= FACET_CPU_AVX2;
    case NEED_AVX512: return c->level >= FACET_CPU_AVX512;
    case NEED_AVX512_BF16: return c->avx512_bf16;
    case NEED_AVX512_VNNI: return c->avx512_vnni;
    default: return 1;
    }
}

const facet_ukernel *facet_ukernel_for(facet_wformat f, const facet_cpu_info *cpu) {
    if ((int)f < 0 || f >= FACET_WF_COUNT) return &facet_uk_f32_scalar;
    for (int i = 0; i < 3; i++)
        if (has_capability(cpu, candidates[f][i].need)) return candidates[f][i].uk;
    return candidates[f][2].uk;
}

const facet_ukernel *facet_ukernel_select(facet_wformat f) { return facet_ukernel_for(f, facet_cpu()); }

const char *facet_matmul_kernel_best(facet_wformat f) {
    int qt = facet_wformat_qtype(f);
    if (qt >= 0) return facet_qkernel_best(qt);
    return (int)f >= 0 && f < FACET_WF_COUNT ? candidates[f][0].uk->name : "none";
}

const char *facet_matmul_kernel_name(const facet_cpu_kernels *k, facet_wformat f) {
    int qt = facet_wformat_qtype(f);
    if (qt >= 0) return k->qdot[qt] ? facet_qkernel_name(qt, k->qpath[qt]) : "none";
    return (int)f >= 0 && f < FACET_WF_COUNT ? k->matmul[f]->name : "none";
}

void facet_cpu_kernels_resolve(facet_cpu_kernels *k, const facet_cpu_info *cpu) {
    for (int f = 0; f < FACET_WF_COUNT; f++) k->matmul[f] = facet_ukernel_for((facet_wformat)f, cpu);
    k->attn = (int)facet_attn_path_for(cpu);
    k->level = (int)cpu->level;
    facet_qkernels_resolve(k, cpu);
}

/* ---- activation preparation ---- */

typedef struct {
    const float *X;
    int cols, kp;
    facet_xkind kind;
    uint8_t *data;
    size_t stride;
    float *scale;
    int32_t *corr;
} prep_job;

static void prep_row(const prep_job *j, int r) {
    const float *x = j->X + (size_t)r * j->cols;
    uint8_t *d = j->data + (size_t)r * j->stride;
    int nblk = j->kp / FACET_Q8_BLOCK;
    switch (j->kind) {
    case FACET_X_F32:
        memcpy(d, x, sizeof(float) * (size_t)j->cols);
        memset(d + sizeof(float) * (size_t)j->cols, 0, sizeof(float) * (size_t)(j->kp - j->cols));
        return;
    case FACET_X_BF16: {
        uint16_t *h = (uint16_t *)d; /* only the AVX512-BF16 kernel reads bf16 activations */
        facet_x_to_bf16_avx512bf16(x, h, j->cols);
        for (int k = j->cols; k < j->kp; k++) h[k] = 0;
        return;
    }
    case FACET_X_Q8: {
        float *tmp = NULL, buf[FACET_Q8_BLOCK];
        int full = j->cols / FACET_Q8_BLOCK * FACET_Q8_BLOCK;
        facet_q8_quantize_row(x, full, (int8_t *)d, j->scale + (size_t)r * nblk,
                              j->corr + (size_t)r * nblk);
        if (full < j->kp) { /* last, partial block: zero-padded copy */
            tmp = buf;
            memset(buf, 0, sizeof buf);
            memcpy(buf, x + full, sizeof(float) * (size_t)(j->cols - full));
            int b = full / FACET_Q8_BLOCK;
            facet_q8_quantize_row(tmp, FACET_Q8_BLOCK, (int8_t *)d + full,
                                  j->scale + (size_t)r * nblk + b, j->corr + (size_t)r * nblk + b);
        }
        return;
    }
    }
}

static void prep_task(void *ctx, int task, int thread) {
    (void)thread;
    prep_row(ctx, task);
}

/* ---- the tiled sweep ---- */

/* Matrices one pool run can cover (facet_matmul_multi splits longer lists). */
#define MM_MAX_MATS 8

/* One weight matrix of a run: its tasks are [task0, task0 + n_tasks). */
typedef struct {
    const uint8_t *W;
    float *Y;
    const float *bias;
    int n_out, n_panels, task0;
} mm_mat;

/* A run: matrices sharing the prepared X, the format, Kp and the task grouping. */
typedef struct {
    const facet_ukernel *uk;
    facet_xprep x;
    size_t pb;         /* bytes per panel                                  */
    int n_rows, gp, kp, kc, n_mats;
    mm_mat m[MM_MAX_MATS];
} mm_job;

static void mm_task(void *ctx, int task, int thread) {
    (void)thread;
    const mm_job *j = ctx;
    const facet_ukernel *uk = j->uk;
    int mi = 0; /* a task never spans two matrices */
    while (mi + 1 < j->n_mats && task >= j->m[mi + 1].task0) mi++;
    const mm_mat *m = &j->m[mi];
    int p0 = (task - m->task0) * j->gp, p1 = p0 + j->gp < m->n_panels ? p0 + j->gp : m->n_panels;
    _Alignas(64) float tile[8 * FACET_TILE_LD];
    for (int k0 = 0; k0 < j->kp; k0 += j->kc) {
        int k1 = k0 + j->kc < j->kp ? k0 + j->kc : j->kp;
        int acc = k0 > 0, last = k1 == j->kp;
        /* tile rows: the first tile, which streams the weights from memory, as many as the
         * kernel takes (mr); the others, reading them from L2, mr_many */
        int tr = uk->mr_many ? uk->mr_many : uk->mr;
        for (int r0 = 0, mr; r0 < j->n_rows; r0 += mr) {
            int want = r0 == 0 ? uk->mr : tr;
            mr = j->n_rows - r0 < want ? j->n_rows - r0 : want;
            int npm = mr == 1 && uk->np1 ? uk->np1 : uk->np;
            for (int p = p0; p < p1; p += npm) {
                int np = p1 - p < npm ? p1 - p : npm;
                int o0 = p * FACET_PANEL, o1 = (p + np) * FACET_PANEL;
                float *y0 = m->Y + (size_t)r0 * m->n_out + o0;
                if (o1 <= m->n_out) { /* whole panels: the kernel works in the output rows */
                    uk->fn(&j->x, r0, mr, m->W + (size_t)p * j->pb, j->pb, np, k0, k1, y0,
                           m->n_out, acc);
                    if (last && m->bias)
                        for (int r = 0; r < mr; r++)
                            for (int o = o0; o < o1; o++) y0[(size_t)r * m->n_out + o - o0] += m->bias[o];
                    continue;
                }
                o1 = m->n_out; /* a partial last panel: through the tile */
                if (acc)
                    for (int r = 0; r < mr; r++)
                        memcpy(tile + r * FACET_TILE_LD, m->Y + (size_t)(r0 + r) * m->n_out + o0,
                               sizeof(float) * (size_t)(o1 - o0));
                uk->fn(&j->x, r0, mr, m->W + (size_t)p * j->pb, j->pb, np, k0, k1, tile,
                       FACET_TILE_LD, acc);
                for (int r = 0; r < mr; r++) {
                    float *y = y0 + (size_t)r * m->n_out;
                    const float *t = tile + r * FACET_TILE_LD;
                    if (last && m->bias)
                        for (int o = 0; o < o1 - o0; o++) y[o] = t[o] + m->bias[o0 + o];
                    else
                        memcpy(y, t, sizeof(float) * (size_t)(o1 - o0));
                }
            }
        }
    }
}

/*
 * Y[m] = X W[m]^T (+ bias[m]) for m < n_mats (1..MM_MAX_MATS), every W[m] packed, of one
 * format and one cols: X prepared once, then one pool run over the output panels of all
 * the matrices. Each output gets the same operations in the same order as from
 * facet_matmul of its matrix alone: the kernels keep one k-ordered chain per output, so
 * which panels share a task does not matter, and the k blocking depends only on Kp, the
 * panel bytes and the kernel (a task exceeds CHUNK_BYTES only when one kernel call's
 * panels do), not on the other matrices.
 */
static void mm_run(const facet_ukernel *uk, facet_pool *pool, int n_mats, float *const *Y,
                   const float *X, const facet_wtensor *const *W, const float *const *bias,
                   int n_rows) {
    int cols = W[0]->cols, kp = facet_packed_kp(cols), nblk = kp / FACET_Q8_BLOCK;

    /* activations in the kernel's format */
    prep_job pj = {X, cols, kp, uk->xkind, NULL, 0, NULL, NULL};
    size_t need = 0;
    switch (uk->xkind) {
    case FACET_X_F32: pj.stride = (size_t)kp * 4; need = cols == kp ? 0 : pj.stride * n_rows; break;
    case FACET_X_BF16: pj.stride = (size_t)kp * 2; need = pj.stride * n_rows; break;
    case FACET_X_Q8:
        pj.stride = ((size_t)kp + 63) / 64 * 64;
        need = pj.stride * n_rows + (size_t)n_rows * nblk * (sizeof(float) + sizeof(int32_t)) + 64;
        break;
    }
    void *owned = NULL, *scratch = NULL;
    if (need) {
        scratch = pool ? facet_pool_scratch(pool, need) : (owned = malloc(need));
        if (!scratch) {
            for (int m = 0; m < n_mats; m++)
                for (size_t i = 0; i < (size_t)n_rows * W[m]->rows; i++) Y[m][i] = NAN;
            return;
        }
        pj.data = scratch;
        if (uk->xkind == FACET_X_Q8) {
            pj.scale = (float *)(pj.data + pj.stride * n_rows);
            pj.corr = (int32_t *)(pj.scale + (size_t)n_rows * nblk);
        }
        if (pool && n_rows >= PREP_PARALLEL_ROWS)
            facet_pool_run(pool, n_rows, prep_task, &pj);
        else
            for (int r = 0; r < n_rows; r++) prep_row(&pj, r);
    } else {
        pj.data = (uint8_t *)(uintptr_t)X;
    }

    mm_job j;
    j.uk = uk;
    j.x = (facet_xprep){pj.data, pj.stride, pj.scale, pj.corr, nblk};
    j.pb = facet_panel_bytes(W[0]->format, kp);
    j.n_rows = n_rows;
    j.kp = kp;
    j.n_mats = n_mats;
    int total_panels = 0;
    for (int m = 0; m < n_mats; m++) {
        j.m[m] = (mm_mat){W[m]->data, Y[m], bias ? bias[m] : NULL, W[m]->rows,
                          (W[m]->rows + FACET_PANEL - 1) / FACET_PANEL, 0};
        total_panels += j.m[m].n_panels;
    }
    int threads = pool ? facet_pool_size(pool) : 1;
    /* about 4 tasks per thread over all the panels (DECODE_TASKS for a single row: the
     * thread done first waits for the other's last task, ~1/16 of a decode sweep with 4),
     * in whole kernel calls, each task's weights within CHUNK_BYTES unless one call's
     * panels exceed it (then k blocks; never for one row, so a decode's grouping changes
     * no output) */
    int npl = uk->np1 > uk->np ? uk->np1 : uk->np; /* panels of one kernel call */
    int per = n_rows == 1 ? DECODE_TASKS : 4;
    int gp = (total_panels + threads * per - 1) / (threads * per);
    gp = (gp + npl - 1) / npl * npl;
    int cap = (int)(CHUNK_BYTES / j.pb) / npl * npl; /* whole kernel calls within CHUNK */
    if (gp > cap) gp = cap;
    if (gp < npl) gp = npl;
    j.gp = gp;
    j.kc = kp;
    if (n_rows > uk->mr && (size_t)gp * j.pb > CHUNK_BYTES) {
        size_t kc = (size_t)kp * CHUNK_BYTES / ((size_t)gp * j.pb) / FACET_KALIGN * FACET_KALIGN;
        j.kc = kc < FACET_KALIGN ? FACET_KALIGN : (int)kc;
    }
    int n_tasks = 0;
    for (int m = 0; m < n_mats; m++) { /* task lists concatenated, matrix by matrix */
        j.m[m].task0 = n_tasks;
        n_tasks += (j.m[m].n_panels + gp - 1) / gp;
    }
    if (pool) /* each thread streams its own contiguous share of the panels first */
        facet_pool_run_shares(pool, n_tasks, mm_task, &j);
    else
        for (int t = 0; t < n_tasks; t++) mm_task(&j, t, 0);
    free(owned);
}

void facet_matmul_k(const facet_cpu_kernels *k, facet_pool *pool, float *Y, const float *X,
                    const facet_wtensor *W, const float *bias, int n_rows) {
    if (n_rows <= 0) return;
    if (!W->packed) {
        facet_matmul_f32(pool, Y, X, (const float *)W->data, bias, n_rows, W->cols, W->rows);
        return;
    }
    if (facet_wformat_qtype(W->format) >= 0) {
        facet_qmatmul(k, pool, 1, &Y, X, &W, &bias, n_rows);
        return;
    }
    mm_run(k->matmul[W->format], pool, 1, &Y, X, &W, &bias, n_rows);
}

void facet_matmul_multi_k(const facet_cpu_kernels *k, facet_pool *pool, int n_mats,
                          float *const *Y, const float *X, const facet_wtensor *const *W,
                          const float *const *bias, int n_rows) {
    if (n_rows <= 0 || n_mats <= 0) return;
    int fused = 1, qblock = facet_wformat_qtype(W[0]->format) >= 0;
    for (int m = 0; m < n_mats; m++) /* block types fuse when they read the same activations */
        if (!W[m]->packed || W[m]->cols != W[0]->cols ||
            (W[m]->format != W[0]->format &&
             !(qblock && facet_wformat_qtype(W[m]->format) >= 0 &&
               facet_qmatmul_fuses(W[m]->format, W[0]->format))))
            fused = 0;
    if (!fused) {
        for (int m = 0; m < n_mats; m++)
            facet_matmul_k(k, pool, Y[m], X, W[m], bias ? bias[m] : NULL, n_rows);
        return;
    }
    if (facet_wformat_qtype(W[0]->format) >= 0) {
        facet_qmatmul(k, pool, n_mats, Y, X, W, bias, n_rows);
        return;
    }
    for (int m0 = 0; m0 < n_mats; m0 += MM_MAX_MATS) {
        int n = n_mats - m0 < MM_MAX_MATS ? n_mats - m0 : MM_MAX_MATS;
        mm_run(k->matmul[W[0]->format], pool, n, Y + m0, X, W + m0, bias ? bias + m0 : NULL,
               n_rows);
    }
}

/* facet_matmul_each_k: one task = output rows [r0, r1) of matrix m. */
typedef struct {
    const facet_cpu_kernels *k;
    float *const *Y;
    const float *const *X;
    const facet_wtensor *const *W;
    const float *const *bias;
    int task0[FACET_MATMUL_EACH_MAX + 1]; /* matrix m's tasks: task0[m] .. task0[m+1]-1 */
    int rows_per[FACET_MATMUL_EACH_MAX];  /* output rows per task of matrix m          */
    int n_mats;
} each_job;

static void each_task(void *ctx, int task, int thread) {
    (void)thread;
    const each_job *j = ctx;
    int m = 0;
    while (m + 1 < j->n_mats && task >= j->task0[m + 1]) m++;
    const facet_wtensor *W = j->W[m];
    int r0 = (task - j->task0[m]) * j->rows_per[m];
    int r1 = r0 + j->rows_per[m] < W->rows ? r0 + j->rows_per[m] : W->rows;
    facet_wtensor v = *W; /* rows [r0, r1): a view into W's data */
    int qt = facet_wformat_qtype(W->format);
    size_t off;
    if (!W->packed)
        off = (size_t)r0 * (size_t)W->cols * sizeof(float);
    else if (qt >= 0) {
        const facet_qtype_traits *q = facet_qtype_traits_of((facet_qtype)qt);
        off = (size_t)r0 * (size_t)(W->cols / q->block) * q->block_bytes;
    } else /* r0 is a multiple of FACET_PANEL */
        off = (size_t)(r0 / FACET_PANEL) * facet_panel_bytes(W->format, facet_packed_kp(W->cols));
    v.data = (uint8_t *)W->data + off;
    v.rows = r1 - r0;
    facet_matmul_k(j->k, NULL, j->Y[m] + r0, j->X[m], &v, j->bias && j->bias[m] ? j->bias[m] + r0 : NULL, 1);
}

void facet_matmul_each_k(const facet_cpu_kernels *k, facet_pool *pool, int n_mats,
                         float *const *Y, const float *const *X, const facet_wtensor *const *W,
                         const float *const *bias) {
    if (n_mats <= 0) return;
    each_job *j = malloc(sizeof *j);
    if (!j || n_mats > FACET_MATMUL_EACH_MAX || !pool) { /* one matrix at a time */
        free(j);
        for (int m = 0; m < n_mats; m++)
            facet_matmul_k(k, pool, Y[m], X[m], W[m], bias ? bias[m] : NULL, 1);
        return;
    }
    *j = (each_job){.k = k, .Y = Y, .X = X, .W = W, .bias = bias, .n_mats = n_mats};
    /* about 4 tasks per thread over all the matrices' rows, whole panels of 16 */
    int threads = facet_pool_size(pool);
    int64_t total = 0;
    for (int m = 0; m < n_mats; m++) total += W[m]->rows;
    int64_t want = (total + threads * 4 - 1) / (threads * 4);
    int n = 0;
    for (int m = 0; m < n_mats; m++) {
        int rp = (int)((want + FACET_PANEL - 1) / FACET_PANEL * FACET_PANEL);
        if (rp > W[m]->rows) rp = W[m]->rows;
        if (rp < 1) rp = 1;
        j->rows_per[m] = rp;
        j->task0[m] = n;
        n += (W[m]->rows + rp - 1) / rp;
    }
    j->task0[n_mats] = n;
    facet_pool_run(pool, n, each_task, j);
    free(j);
}

/* The kernels of facet_cpu() at the time of the call (tests and benches that switch
 * paths with FACET_CPU between calls). */
void facet_matmul(facet_pool *pool, float *Y, const float *X, const facet_wtensor *W,
                  const float *bias, int n_rows) {
    facet_cpu_kernels k;
    facet_cpu_kernels_resolve(&k, facet_cpu());
    facet_matmul_k(&k, pool, Y, X, W, bias, n_rows);
}

void facet_matmul_multi(facet_pool *pool, int n_mats, float *const *Y, const float *X,
                        const facet_wtensor *const *W, const float *const *bias, int n_rows) {
    facet_cpu_kernels k;
    facet_cpu_kernels_resolve(&k, facet_cpu());
    facet_matmul_multi_k(&k, pool, n_mats, Y, X, W, bias, n_rows);
}
