/*
 * matmul_qblock.c — facet_matmul for weights in a GGUF block format (quant.h): each X
 * row quantized once into the activation blocks the type's dot reads, the output rows
 * split into thread-pool tasks (one run for every matrix sharing X), each task reading
 * its weight rows once for all input rows: input rows go in tiles of QX_TILE, and for
 * each tile every weight row of the task is dotted with the tile's rows while it sits
 * in L1, the task's rows (under TASK_BYTES) staying in L2 from one tile to the next.
 * Every output is the type's dot on (its weight row, its X row): for a tile, one call of
 * the type's several-row dot where it has one (it decodes the weight row once for the
 * tile and gives each row the single-row dot's value bit for bit), else one call per row;
 * so a row's result is the same whatever n_rows is. A single X row (a decode step) skips
 * the tiles: the single-row dot straight into Y, the bias added after (the same sum).
 * Matrices of different block types whose dots read the same activation blocks (a
 * Q4_K_M layer's Q4_K q/k and Q6_K v) share one sweep: one quantization, one pool run.
 * A Q4_K / Q6_K matrix in K panels (packed 2, quant_kpanel.h) runs its panel kernel
 * instead, 16 weight rows x up to QX_TILE input rows a call, for decode and prefill alike
 * (so its rows too give the same values whatever n_rows); its tasks are whole panels.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/quant_kpanel.h"

/* Input rows per tile: their quantized blocks (8 x 4.3 KiB at 4096 columns of Q8_0
 * activations) stay in L1 next to the weight row being dotted. 8, not 4: the AVX-512 K
 * dots take 8 rows in one pass (the superblock's decoding, as costly as 2 rows' dots, is
 * shared by twice as many rows); the other dots take them 4 at a time. */
#define QX_TILE 8
_Static_assert(QX_TILE <= FACET_QDOTX_MAX, "a tile is one several-row dot");
/* A task's weight rows kept under this many bytes, so a prefill's row tiles re-read them
 * from L2 (half of a 1 MiB L2, as matmul.c). */
#define TASK_BYTES (512u << 10)
/* Rows quantized serially below this; above, the quantization is spread over the pool. */
#define PREP_PARALLEL_ROWS 8
/* Tasks per thread of a single-row (decode) sweep (qmm_run). */
#define DECODE_TASKS 16
#define QMM_MAX_MATS 8

/* Paths: 0 scalar, 1 avx2, 2 avx512, 3 avx512 with VNNI. */
static const char *const path_suffix[4] = {"scalar", "avx2", "avx512", "avx512vnni"};
static char path_names[FACET_QT_COUNT][4][32];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void make_names(void) {
    for (int t = 0; t < FACET_QT_COUNT; t++)
        for (int p = 0; p < 4; p++)
            snprintf(path_names[t][p], sizeof path_names[t][p], "%s-%s",
                     facet_qtype_traits_of((facet_qtype)t)->name, path_suffix[p]);
}

const char *facet_qkernel_name(int qtype, int path) {
    if (qtype < 0 || qtype >= FACET_QT_COUNT || path < 0 || path > 3) return "none";
    if (!facet_qtype_runs((facet_qtype)qtype)) return "none";
    pthread_once(&names_once, make_names);
    return path_names[qtype][path];
}

/* Per type, the closest path this CPU runs: AVX-512 VNNI, AVX-512, AVX2, scalar (the
 * first the type has). */
void facet_qkernels_resolve(facet_cpu_kernels *k, const facet_cpu_info *cpu) {
    for (int t = 0; t < FACET_QT_COUNT; t++) {
        const facet_qtype_traits *q = facet_qtype_traits_of((facet_qtype)t);
        k->qdot[t] = NULL;
        k->qdotx[t] = NULL;
        k->qdotr[t] = NULL;
        k->qpath[t] = 0;
        k->qpanel[t] = NULL;
        if (!facet_qtype_runs((facet_qtype)t)) continue;
        int avx512 = cpu->level >= FACET_CPU_AVX512;
        k->qpanel[t] = avx512 && cpu->avx512_vnni && facet_kpanel_avx512vnni(t) ? facet_kpanel_avx512vnni(t)
                                                                               : facet_kpanel_scalar(t);
        if (q->dot_avx512vnni && avx512 && cpu->avx512_vnni) {
            k->qdot[t] = q->dot_avx512vnni;
            k->qdotx[t] = q->dotx_avx512vnni;
            k->qdotr[t] = q->dotr_avx512vnni;
            k->qpath[t] = 3;
        } else if (q->dot_avx512 && avx512) {
            k->qdot[t] = q->dot_avx512;
            k->qpath[t] = 2;
        } else if (q->dot_avx2 && cpu->level >= FACET_CPU_AVX2) {
            k->qdot[t] = q->dot_avx2;
            k->qdotx[t] = q->dotx_avx2;
            k->qpath[t] = 1;
        } else {
            k->qdot[t] = q->dot_scalar;
        }
    }
}

const char *facet_qkernel_best(int qtype) {
    const facet_qtype_traits *q = facet_qtype_traits_of((facet_qtype)qtype);
    if (!q) return "none";
    return facet_qkernel_name(qtype, q->dot_avx512vnni ? 3 : q->dot_avx512 ? 2 : q->dot_avx2 ? 1 : 0);
}

/* ---- activation quantization ---- */

typedef struct {
    const float *X;
    int cols;
    facet_qxkind kind;
    uint8_t *out;
    size_t stride;
} qprep;

static void qprep_task(void *ctx, int r, int thread) {
    (void)thread;
    const qprep *p = ctx;
    facet_quantize_row_qx(p->kind, p->X + (size_t)r * p->cols, p->out + (size_t)r * p->stride,
                          p->cols);
}

/* ---- the sweep ---- */

/* One matrix of a sweep: its own block type (every type of a sweep reads the same
 * activation blocks: Q4_K and Q6_K matrices of a Q4_K_M layer share one Q8_K row). */
typedef struct {
    const uint8_t *W;
    float *Y;
    const float *bias;
    facet_qdot_fn dot;
    facet_qdotx_fn dotx; /* NULL: dot per row */
    facet_qdotr_fn dotr; /* a decode sweep's rows in one call; NULL: dot per row */
    facet_qpanel_fn panel; /* set for a matrix in K panels (packed 2): 16 rows a call */
    size_t wrow;         /* bytes of one weight row */
    int n_out, task0;
} qmm_mat;

typedef struct {
    const uint8_t *X;
    size_t xstride;
    int n_rows, cols, gr, n_mats;
    qmm_mat m[QMM_MAX_MATS];
} qmm_job;

static void qmm_task(void *ctx, int task, int thread) {
    (void)thread;
    const qmm_job *j = ctx;
    int mi = 0;
    while (mi + 1 < j->n_mats && task >= j->m[mi + 1].task0) mi++;
    const qmm_mat *m = &j->m[mi];
    int o0 = (task - m->task0) * j->gr, o1 = o0 + j->gr < m->n_out ? o0 + j->gr : m->n_out;
    if (m->panel) { /* gr and n_out are multiples of 16: whole panels */
        float v[QX_TILE * FACET_KPANEL_ROWS];
        for (int r0 = 0; r0 < j->n_rows; r0 += QX_TILE) {
            int r1 = r0 + QX_TILE < j->n_rows ? r0 + QX_TILE : j->n_rows;
            for (int o = o0; o < o1; o += FACET_KPANEL_ROWS) {
                m->panel(j->cols, r1 - r0, v, FACET_KPANEL_ROWS, m->W + (size_t)o * m->wrow,
                         j->X + (size_t)r0 * j->xstride, j->xstride);
                for (int r = r0; r < r1; r++) {
                    float *y = m->Y + (size_t)r * m->n_out + o;
                    const float *vr = v + (r - r0) * FACET_KPANEL_ROWS;
                    if (m->bias)
                        for (int l = 0; l < FACET_KPANEL_ROWS; l++) y[l] = vr[l] + m->bias[o + l];
                    else
                        memcpy(y, vr, sizeof(float) * FACET_KPANEL_ROWS);
                }
            }
        }
        return;
    }
    if (j->n_rows == 1) { /* a decode step: the single-row dot straight into Y, no tiles */
        const uint8_t *w = m->W + (size_t)o0 * m->wrow;
        if (m->dotr)
            m->dotr(j->cols, o1 - o0, m->Y + o0, w, m->wrow, j->X);
        else
            for (int o = o0; o < o1; o++, w += m->wrow) m->dot(j->cols, m->Y + o, w, j->X);
        if (m->bias)
            for (int o = o0; o < o1; o++) m->Y[o] += m->bias[o];
        return;
    }
    for (int r0 = 0; r0 < j->n_rows; r0 += QX_TILE) {
        int r1 = r0 + QX_TILE < j->n_rows ? r0 + QX_TILE : j->n_rows;
        for (int o = o0; o < o1; o++) {
            const uint8_t *w = m->W + (size_t)o * m->wrow;
            float b = m->bias ? m->bias[o] : 0.0f;
            if (m->dotx) {
                float v[QX_TILE];
                m->dotx(j->cols, r1 - r0, v, w, j->X + (size_t)r0 * j->xstride, j->xstride);
                for (int r = r0; r < r1; r++)
                    m->Y[(size_t)r * m->n_out + o] = m->bias ? v[r - r0] + b : v[r - r0];
                continue;
            }
            for (int r = r0; r < r1; r++) {
                float v;
                m->dot(j->cols, &v, w, j->X + (size_t)r * j->xstride);
                m->Y[(size_t)r * m->n_out + o] = m->bias ? v + b : v;
            }
        }
    }
}

static void qmm_run(const facet_cpu_kernels *k, facet_pool *pool, int n_mats, float *const *Y,
                    const float *X, const facet_wtensor *const *W, const float *const *bias,
                    int n_rows) {
    int qt = facet_wformat_qtype(W[0]->format), cols = W[0]->cols;
    const facet_qtype_traits *q = facet_qtype_traits_of((facet_qtype)qt);
    int xb = q ? facet_qx_block(q->xkind) : 0;
    size_t stride = q ? (size_t)(cols / (xb ? xb : 1)) * facet_qx_block_bytes(q->xkind) : 0;
    size_t need = stride * (size_t)n_rows;
    int ok = q && cols % xb == 0;
    qmm_job j;
    size_t wrow_max = 0;
    int total = 0, any_panel = 0;
    for (int m = 0; m < n_mats && ok; m++) { /* facet_qmatmul's contract: one xkind, one cols */
        int qm = facet_wformat_qtype(W[m]->format);
        const facet_qtype_traits *tm = facet_qtype_traits_of((facet_qtype)qm);
        int panel = W[m]->packed == 2;
        if (!tm || !k->qdot[qm] || tm->xkind != q->xkind || W[m]->cols != cols || cols % tm->block ||
            (panel && (!k->qpanel[qm] || W[m]->rows % FACET_KPANEL_ROWS))) {
            ok = 0;
            break;
        }
        size_t wrow = (size_t)(cols / tm->block) * tm->block_bytes;
        j.m[m] = (qmm_mat){W[m]->data, Y[m], bias ? bias[m] : NULL, k->qdot[qm], k->qdotx[qm],
                           k->qdotr[qm], panel ? k->qpanel[qm] : NULL, wrow, W[m]->rows, 0};
        any_panel |= panel;
        if (wrow > wrow_max) wrow_max = wrow;
        total += W[m]->rows;
    }
    void *owned = NULL, *scratch = NULL;
    if (ok) scratch = pool ? facet_pool_scratch(pool, need) : (owned = malloc(need ? need : 1));
    if (!scratch) { /* no kernels, a shape the type cannot hold, or out of memory */
        for (int m = 0; m < n_mats; m++)
            for (size_t i = 0; i < (size_t)n_rows * W[m]->rows; i++) Y[m][i] = NAN;
        return;
    }
    qprep p = {X, cols, q->xkind, scratch, stride};
    if (pool && n_rows >= PREP_PARALLEL_ROWS)
        facet_pool_run(pool, n_rows, qprep_task, &p);
    else
        for (int r = 0; r < n_rows; r++) qprep_task(&p, r, 0);

    j.X = scratch;
    j.xstride = stride;
    j.n_rows = n_rows;
    j.cols = cols;
    j.n_mats = n_mats;
    /* tasks of groups of 4 rows, each within TASK_BYTES: about 4 per thread for a prefill,
     * DECODE_TASKS per thread for a single row (a decode step's sweep is tens of
     * microseconds, and the thread that finishes first waits for the other's last task:
     * with 4 tasks a thread that wait averaged ~1/16 of the sweep). Which rows share a task
     * changes no output (each row's dot is the same). */
    int threads = pool ? facet_pool_size(pool) : 1;
    int per = n_rows == 1 ? DECODE_TASKS : 4;
    int gr = (total + threads * per - 1) / (threads * per);
    gr = (gr + 3) / 4 * 4;
    int cap = (int)(TASK_BYTES / wrow_max) / 4 * 4;
    if (cap < 4) cap = 4;
    if (gr > cap) gr = cap;
    if (gr < 4) gr = 4;
    if (any_panel) /* whole panels of 16 rows per task (the blocks' rows too: any size works) */
        gr = (gr + FACET_KPANEL_ROWS - 1) / FACET_KPANEL_ROWS * FACET_KPANEL_ROWS;
    j.gr = gr;
    int n_tasks = 0;
    for (int m = 0; m < n_mats; m++) {
        j.m[m].task0 = n_tasks;
        n_tasks += (j.m[m].n_out + gr - 1) / gr;
    }
    if (pool)
        facet_pool_run_shares(pool, n_tasks, qmm_task, &j);
    else
        for (int t = 0; t < n_tasks; t++) qmm_task(&j, t, 0);
    free(owned);
}

int facet_qmatmul_fuses(facet_wformat a, facet_wformat b) {
    const facet_qtype_traits *qa = facet_qtype_traits_of((facet_qtype)facet_wformat_qtype(a));
    const facet_qtype_traits *qb = facet_qtype_traits_of((facet_qtype)facet_wformat_qtype(b));
    return qa && qb && qa->xkind == qb->xkind;
}

void facet_qmatmul(const facet_cpu_kernels *k, facet_pool *pool, int n_mats, float *const *Y,
                   const float *X, const facet_wtensor *const *W, const float *const *bias,
                   int n_rows) {
    for (int m0 = 0; m0 < n_mats; m0 += QMM_MAX_MATS) {
        int n = n_mats - m0 < QMM_MAX_MATS ? n_mats - m0 : QMM_MAX_MATS;
        qmm_run(k, pool, n, Y + m0, X, W + m0, bias ? bias + m0 : NULL, n_rows);
    }
}
