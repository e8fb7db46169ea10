/*
 * backend_cpu.c — the CPU backend (backend.h) over the kernels of src/kernels/cpu and a
 * thread pool. The kernels are resolved once, at creation (facet_cpu_kernels): a matmul
 * micro-kernel per weight format and the attention path; no call re-checks the CPU.
 *
 * Attention of a layer over a chunk. Every layer runs the one blocked kernel
 * (facet_attention) with its window, softcap and scale. Where a group's keys are read:
 * - non-ring layers (global, and sliding ones whose window covers the context): the
 *   sequence's cache from position 0, every entry's row stored before attention;
 * - a ring layer, a group of one entry (decode): the ring itself, its row stored first
 *   (it overwrites position pos - ring_cap, older than the window);
 * - a ring layer, a group of several entries (prefill): a view, a linear copy of the
 *   ring's rows before the chunk and the chunk's own rows from the scratch (positions v0
 *   .. last), since the chunk's later rows would overwrite ring rows its earlier queries
 *   still see; the engine writes the ring after attention.
 * The kernel's arithmetic depends only on a query and its keys' values, so the three
 * give the same bits for a query: chunking does not change results.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "kernels/cpu/cpu_features.h"
#include "util/error.h"

typedef struct {
    facet_backend base;
    facet_pool *pool;              /* borrowed; NULL: the calling thread alone          */
    facet_cpu_kernels k;           /* resolved at creation                              */
    int threads;
    /* attention scratch for chunks of up to `rows` entries */
    int rows, max_q;               /* entries, and queries per kernel call              */
    float *attn_scratch;           /* (threads, FACET_ATTN_SCRATCH(max_q, hd))          */
    size_t attn_scratch_floats;
    int *attn_pos;                 /* (threads, max_q) query positions of a decode call */
    /* ring layers' prefill views: per group, [nkv][rows] keys (transposed groups of 16)
     * then, in view_v, values of the cache's type, view_off[g] * nkv rows in */
    uint8_t *view_k, *view_v;
    size_t view_bytes;             /* of each                                           */
    size_t *view_off;              /* (rows) per group                                  */
} cpu_backend;

static cpu_backend *cpu(facet_backend *be) { return (cpu_backend *)be; }
static const cpu_backend *ccpu(const facet_backend *be) { return (const cpu_backend *)be; }

static void cpu_run(facet_backend *be, int n_tasks, facet_task_fn fn, void *ctx) {
    cpu_backend *b = cpu(be);
    if (b->pool) {
        facet_pool_run(b->pool, n_tasks, fn, ctx);
        return;
    }
    for (int t = 0; t < n_tasks; t++) fn(ctx, t, 0);
}

static int cpu_threads(const facet_backend *be) { return ccpu(be)->threads; }

/* ---- attention ---- */

typedef struct {
    cpu_backend *b;
    const facet_attn_chunk *c;
    int g0, g1; /* groups g0 .. g1 - 1 */
} attn_job;

static int ring_layer(const facet_attn_chunk *c) { return facet_kv_is_ring(c->kv, c->layer); }

/* A ring layer's view of group g: its first position (a multiple of FACET_ATTN_BLOCK)
 * and rows per KV head (whole key groups) up to the group's last entry. */
static int view_first(const facet_attn_chunk *c, int g) {
    int base = c->pos[c->group_row[g]], w = c->p->window;
    return (base - w + 1 > 0 ? base - w + 1 : 0) / FACET_ATTN_BLOCK * FACET_ATTN_BLOCK;
}
static size_t view_rows(const facet_attn_chunk *c, int g) {
    int last = c->pos[c->group_row[g]] + c->group_len[g] - 1;
    return (size_t)(last - view_first(c, g) + FACET_KV_GROUP) / FACET_KV_GROUP * FACET_KV_GROUP;
}
/* The largest view one group of a chunk of n entries needs, in rows of one KV head. */
static size_t view_rows_max(int window, int n) {
    return (size_t)(window + FACET_ATTN_BLOCK + FACET_KV_GROUP + n);
}

/* Build the view of (group, KV head) task = (g - g0) * nkv + kvh for the groups that
 * need one: key groups and value rows before the chunk copied from the ring (those older
 * than the ring holds are other positions' finite rows, weighted 0 by the kernel), the
 * chunk's rows stored from the scratch (already rounded to the cache's type, so stored
 * exactly). */
static void view_task(void *ctx, int task, int thread) {
    (void)thread;
    const attn_job *j = ctx;
    const facet_attn_chunk *c = j->c;
    const facet_kv_cache *kv = c->kv;
    int nkv = c->n_kv_heads, hd = kv->head_dim;
    int g = j->g0 + task / nkv, kvh = task % nkv;
    if (c->group_len[g] < 2) return;
    size_t kvd = (size_t)nkv * hd, elt = kv->elt, rows = view_rows(c, g);
    int v0 = view_first(c, g), r0 = c->group_row[g], base = c->pos[r0];
    const facet_kv_seq *sq = &kv->seqs[c->seq_ids[r0]];
    uint8_t *vk = j->b->view_k + (j->b->view_off[g] * kvd + (size_t)kvh * rows * hd) * elt;
    uint8_t *vv = j->b->view_v + (j->b->view_off[g] * kvd + (size_t)kvh * rows * hd) * elt;
    size_t kgroup = (size_t)hd * FACET_KV_GROUP * elt;
    for (int t = v0; t < base; t += FACET_KV_GROUP) /* whole key groups: the ring's too */
        memcpy(vk + (size_t)(t - v0) * hd * elt, facet_kv_key(kv, sq, c->layer, kvh, t), kgroup);
    for (int t = v0; t < base; t++)
        memcpy(vv + (size_t)(t - v0) * hd * elt, facet_kv_value(kv, sq, c->layer, kvh, t),
               (size_t)hd * elt);
    const int *order = c->order + c->order_at[r0];
    for (int i = 0; i < c->group_len[g]; i++) {
        size_t t = (size_t)(base + i - v0), r = (size_t)order[i];
        facet_kv_store_strided(c->k + r * kvd + (size_t)kvh * hd, kv->type,
                               vk + (t / FACET_KV_GROUP * hd * FACET_KV_GROUP + t % FACET_KV_GROUP) * elt,
                               hd, FACET_KV_GROUP);
        facet_kv_store_at(j->b->k.level, c->v + r * kvd + (size_t)kvh * hd, kv->type,
                          vv + t * hd * elt, hd);
    }
}

/* Task = (group g0 + task / nh, head task % nh). A group of one entry (decode) is run per
 * KV head instead: that head's query heads are the query set, so the cache is streamed
 * once per KV head rather than once per query head (GQA). A group whose entries are not
 * adjacent in the batch runs entry by entry (same bits). */
static void attn_task(void *ctx, int task, int thread) {
    const attn_job *j = ctx;
    const facet_attn_chunk *c = j->c;
    const facet_kv_cache *kv = c->kv;
    int nh = c->n_heads, hd = kv->head_dim, group = c->n_heads / c->n_kv_heads;
    size_t qd = (size_t)nh * hd;
    int g = j->g0 + task / nh, h = task % nh, kvh = h / group;
    int r0 = c->group_row[g], n_q = c->group_len[g];
    facet_attn_params P = *c->p;
    P.path = (facet_attn_path)j->b->k.attn;
    const uint8_t *K, *V;
    if (ring_layer(c) && n_q > 1) {
        size_t rows = view_rows(c, g), kvd = (size_t)c->n_kv_heads * hd;
        K = j->b->view_k + (j->b->view_off[g] * kvd + (size_t)kvh * rows * hd) * kv->elt;
        V = j->b->view_v + (j->b->view_off[g] * kvd + (size_t)kvh * rows * hd) * kv->elt;
        P.kv_pos0 = view_first(c, g);
        P.kv_ring = 0;
    } else { /* the head's first key group and value row */
        const facet_kv_seq *sq = &kv->seqs[c->seq_ids[r0]];
        K = facet_kv_key(kv, sq, c->layer, kvh, 0);
        V = facet_kv_value(kv, sq, c->layer, kvh, 0);
        P.kv_pos0 = 0;
        P.kv_ring = ring_layer(c) ? kv->ring_cap : 0;
    }
    float *scratch = j->b->attn_scratch + (size_t)thread * j->b->attn_scratch_floats;
    if (n_q == 1) { /* decode: the first query head of each KV head does its group */
        if (h % group) return;
        int *pos = j->b->attn_pos + (size_t)thread * j->b->max_q;
        for (int i = 0; i < group; i++) pos[i] = c->pos[r0];
        if (P.sinks) {
            P.sinks += h;
            P.sink_stride = 1;
        }
        if (P.alibi) {
            P.alibi += h;
            P.alibi_stride = 1;
        }
        facet_attention(&P, c->q + r0 * qd + (size_t)h * hd, (size_t)hd, pos, group, K, V,
                        c->out + r0 * qd + (size_t)h * hd, (size_t)hd, scratch);
        return;
    }
    if (P.sinks) {
        P.sinks += h;
        P.sink_stride = 0;
    }
    if (P.alibi) {
        P.alibi += h;
        P.alibi_stride = 0;
    }
    if (c->contiguous) {
        facet_attention(&P, c->q + r0 * qd + (size_t)h * hd, qd, c->pos + r0, n_q, K, V,
                        c->out + r0 * qd + (size_t)h * hd, qd, scratch);
        return;
    }
    const int *order = c->order + c->order_at[r0];
    for (int i = 0; i < n_q; i++) {
        size_t r = (size_t)order[i];
        facet_attention(&P, c->q + r * qd + (size_t)h * hd, qd, c->pos + r, 1, K, V,
                        c->out + r * qd + (size_t)h * hd, qd, scratch);
    }
}

/* A ring layer's views are built in rounds of as many groups as the view buffer holds
 * (one group at least: reserve sized it for that). */
static void cpu_attention(facet_backend *be, const facet_attn_chunk *c) {
    cpu_backend *b = cpu(be);
    int nh = c->n_heads, nkv = c->n_kv_heads;
    if (!ring_layer(c)) {
        attn_job j = {b, c, 0, c->n_groups};
        cpu_run(be, c->n_groups * nh, attn_task, &j);
        return;
    }
    size_t row_bytes = (size_t)nkv * (size_t)c->kv->head_dim * c->kv->elt;
    for (int g0 = 0; g0 < c->n_groups;) {
        size_t rows = 0;
        int g1 = g0;
        for (; g1 < c->n_groups; g1++) {
            size_t need = c->group_len[g1] > 1 ? view_rows(c, g1) : 0;
            if (g1 > g0 && (rows + need) * row_bytes > b->view_bytes) break;
            b->view_off[g1] = rows;
            rows += need;
        }
        attn_job j = {b, c, g0, g1};
        if (rows) cpu_run(be, (g1 - g0) * nkv, view_task, &j);
        cpu_run(be, (g1 - g0) * nh, attn_task, &j);
        g0 = g1;
    }
}

/* ---- scratch ---- */

static void free_scratch(cpu_backend *b) {
    free(b->attn_scratch);
    free(b->attn_pos);
    free(b->view_k);
    free(b->view_v);
    free(b->view_off);
    b->attn_scratch = NULL;
    b->attn_pos = NULL;
    b->view_k = b->view_v = NULL;
    b->view_off = NULL;
    b->view_bytes = 0;
    b->rows = 0;
}

static void cpu_free(facet_backend *be) {
    if (!be) return;
    free_scratch(cpu(be));
    free(be);
}

/* ---- kernels by name ---- */

static void cpu_matmul(facet_backend *be, float *Y, const float *X, const facet_wtensor *W,
                       const float *bias, int n_rows) {
    facet_matmul_k(&cpu(be)->k, cpu(be)->pool, Y, X, W, bias, n_rows);
}

static void cpu_matmul_multi(facet_backend *be, int n_mats, float *const *Y, const float *X,
                             const facet_wtensor *const *W, const float *const *bias,
                             int n_rows) {
    facet_matmul_multi_k(&cpu(be)->k, cpu(be)->pool, n_mats, Y, X, W, bias, n_rows);
}

static void cpu_matmul_each(facet_backend *be, int n_mats, float *const *Y, const float *const *X,
                            const facet_wtensor *const *W, const float *const *bias) {
    facet_matmul_each_k(&cpu(be)->k, cpu(be)->pool, n_mats, Y, X, W, bias);
}

static void cpu_kv_store(facet_backend *be, facet_kv_cache *kv, int seq, int layer, int pos,
                         const float *k, const float *v) {
    (void)be;
    facet_kv_cache_store(kv, seq, layer, pos, k, v);
}

static void cpu_kv_store_rows(facet_backend *be, facet_kv_cache *kv, int layer, int n,
                              const int *rows, const int32_t *seq_ids, const int *pos,
                              const float *k, const float *v) {
    (void)be;
    size_t kvd = (size_t)kv->n_kv_heads * (size_t)kv->head_dim;
    for (int e = 0; e < n; e++) {
        int r = rows ? rows[e] : e;
        facet_kv_cache_store(kv, seq_ids[r], layer, pos[r], k + (size_t)r * kvd,
                             v + (size_t)r * kvd);
    }
}

static void cpu_rmsnorm(const facet_backend *be, float *y, const float *x, const float *w, int n,
                        double eps, float offset) {
    (void)be;
    facet_rmsnorm(y, x, w, n, eps, offset);
}

static void cpu_rmsnorm_rows(const facet_backend *be, float *y, const float *x, const float *w,
                             int n, int M, double eps, float offset) {
    (void)be;
    for (int m = 0; m < M; m++)
        facet_rmsnorm(y + (size_t)m * n, x + (size_t)m * n, w, n, eps, offset);
}

static void cpu_rope(const facet_backend *be, float *x, int n_heads, int head_dim, int rot,
                     const float *cos, const float *sin) {
    (void)be;
    facet_rope_apply(x, n_heads, head_dim, rot, cos, sin);
}

static void cpu_rope_rows(const facet_backend *be, float *x, int M, int n_heads, int head_dim,
                          int rot, const float *cos, const float *sin) {
    (void)be;
    size_t row = (size_t)n_heads * (size_t)head_dim, half = (size_t)rot / 2;
    for (int m = 0; m < M; m++)
        facet_rope_apply(x + (size_t)m * row, n_heads, head_dim, rot, cos + (size_t)m * half,
                         sin + (size_t)m * half);
}

/* The residual: float32 x + h (times mult), element by element. */
static void cpu_add_scaled(const facet_backend *be, float *x, const float *h, size_t n,
                           float mult) {
    (void)be;
    if (mult == 1.0f)
        for (size_t i = 0; i < n; i++) x[i] += h[i];
    else
        for (size_t i = 0; i < n; i++) x[i] += h[i] * mult;
}

static void cpu_gated_act(const facet_backend *be, float *gate, const float *up, int n, int act) {
    facet_gated_act_at(ccpu(be)->k.level, gate, up, n, act);
}

static void cpu_gated_act_rows(const facet_backend *be, float *gate, const float *up, int n,
                               int M, int act) {
    for (int m = 0; m < M; m++)
        facet_gated_act_at(ccpu(be)->k.level, gate + (size_t)m * n, up + (size_t)m * n, n, act);
}

static void cpu_layernorm(const facet_backend *be, float *y, const float *x, const float *w,
                          const float *b, int n, double eps) {
    (void)be;
    facet_layernorm(y, x, w, b, n, eps);
}

static void cpu_act(const facet_backend *be, float *x, int n, int act) {
    (void)be;
    facet_act_row(x, n, act);
}

static void cpu_layernorm_rows(const facet_backend *be, float *y, const float *x,
                               const float *w, const float *b, int n, int M, double eps) {
    (void)be;
    for (int m = 0; m < M; m++)
        facet_layernorm(y + (size_t)m * n, x + (size_t)m * n, w, b, n, eps);
}

static void cpu_act_rows(const facet_backend *be, float *x, int n, int M, int act) {
    (void)be;
    for (int m = 0; m < M; m++) facet_act_row(x + (size_t)m * n, n, act);
}

static void cpu_rope_pairs_rows(const facet_backend *be, float *x, int M, int n_heads,
                                int head_dim, int rot, const float *cos, const float *sin) {
    (void)be;
    size_t row = (size_t)n_heads * (size_t)head_dim, half = (size_t)rot / 2;
    for (int m = 0; m < M; m++)
        facet_rope_pairs_apply(x + (size_t)m * row, n_heads, head_dim, rot,
                               cos + (size_t)m * half, sin + (size_t)m * half);
}

static void cpu_copy(const facet_backend *be, float *y, const float *x, size_t n) {
    (void)be;
    memcpy(y, x, sizeof(float) * n);
}

static void cpu_kv_round(const facet_backend *be, float *x, facet_kv_type t, int n) {
    facet_kv_round_at(ccpu(be)->k.level, x, t, n);
}

static const char *cpu_matmul_kernel(const facet_backend *be, facet_wformat f) {
    return facet_matmul_kernel_name(&ccpu(be)->k, f);
}

static const char *cpu_matmul_kernel_best(const facet_backend *be, facet_wformat f) {
    (void)be;
    return facet_matmul_kernel_best(f);
}

static const char *cpu_attention_kernel(const facet_backend *be, facet_kv_type t, int head_dim) {
    return facet_attention_kernel_name((facet_attn_path)ccpu(be)->k.attn, t, head_dim);
}

static uint64_t cpu_weight_bytes(const facet_backend *be, facet_wformat f, uint64_t rows,
                                 uint64_t cols) {
    (void)be;
    return facet_wtensor_packed_bytes(f, rows, cols);
}

/* All-or-nothing: the new buffers are allocated, then swapped in. */
static facet_status cpu_reserve(facet_backend *be, const facet_kv_cache *kv, int n_heads,
                                int n_rows, facet_error *err) {
    cpu_backend *b = cpu(be);
    if (n_rows <= b->rows) return FACET_OK;
    int max_q = n_rows > n_heads ? n_rows : n_heads, hd = kv->head_dim;
    size_t floats = FACET_ATTN_SCRATCH(max_q, hd), T = (size_t)b->threads;
    size_t vrows = kv->ring_cap ? view_rows_max(kv->ring_cap, n_rows) : 0;
    size_t vbytes = vrows * (size_t)kv->n_kv_heads * (size_t)hd * kv->elt;
    float *scratch = malloc(T * floats * sizeof(float));
    int *pos = malloc(T * (size_t)max_q * sizeof(int));
    size_t *off = malloc((size_t)n_rows * sizeof(size_t));
    uint8_t *vk = vbytes ? malloc(vbytes) : NULL, *vv = vbytes ? malloc(vbytes) : NULL;
    if (!scratch || !pos || !off || (vbytes && (!vk || !vv))) {
        free(scratch);
        free(pos);
        free(off);
        free(vk);
        free(vv);
        return facet_err(err, FACET_E_NOMEM, "attention scratch for %d rows", n_rows);
    }
    free_scratch(b);
    b->attn_scratch = scratch;
    b->attn_scratch_floats = floats;
    b->attn_pos = pos;
    b->view_off = off;
    b->view_k = vk;
    b->view_v = vv;
    b->view_bytes = vbytes;
    b->max_q = max_q;
    b->rows = n_rows;
    return FACET_OK;
}

static const facet_backend_ops cpu_ops = {
    .name = "cpu",
    .free = cpu_free,
    .run = cpu_run,
    .threads = cpu_threads,
    .reserve = cpu_reserve,
    .matmul = cpu_matmul,
    .matmul_multi = cpu_matmul_multi,
    .matmul_each = cpu_matmul_each,
    .attention = cpu_attention,
    .kv_store = cpu_kv_store,
    .kv_store_rows = cpu_kv_store_rows,
    .rmsnorm = cpu_rmsnorm,
    .rmsnorm_rows = cpu_rmsnorm_rows,
    .rope = cpu_rope,
    .rope_rows = cpu_rope_rows,
    .add_scaled = cpu_add_scaled,
    .gated_act = cpu_gated_act,
    .gated_act_rows = cpu_gated_act_rows,
    .layernorm = cpu_layernorm,
    .act = cpu_act,
    .layernorm_rows = cpu_layernorm_rows,
    .act_rows = cpu_act_rows,
    .rope_pairs_rows = cpu_rope_pairs_rows,
    .copy = cpu_copy,
    .kv_round = cpu_kv_round,
    .matmul_kernel = cpu_matmul_kernel,
    .matmul_kernel_best = cpu_matmul_kernel_best,
    .attention_kernel = cpu_attention_kernel,
    .weight_bytes = cpu_weight_bytes,
};

facet_status facet_backend_cpu_create(facet_pool *pool, facet_backend **out, facet_error *err) {
    *out = NULL;
    cpu_backend *b = calloc(1, sizeof *b);
    if (!b) return facet_err(err, FACET_E_NOMEM, "CPU backend");
    b->base.ops = &cpu_ops;
    b->pool = pool;
    b->threads = pool ? facet_pool_size(pool) : 1;
    facet_cpu_kernels_resolve(&b->k, facet_cpu());
    *out = &b->base;
    return FACET_OK;
}
