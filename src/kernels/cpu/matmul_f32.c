/* matmul_f32.c — Y = X W^T for float32 weights, split over output rows. */
#include "kernels/cpu/kernels.h"

float facet_dot_f32(const float *a, const float *b, int n) {
    /* 16 independent partial sums: lets the compiler vectorize without -ffast-math and
     * keeps the summation order fixed (same result for every batch size). */
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++) acc[l] += a[i + l] * b[i + l];
    float tail = 0.0f;
    for (; i < n; i++) tail += a[i] * b[i];
    float s = 0.0f;
    for (int l = 0; l < 16; l++) s += acc[l];
    return s + tail;
}

void facet_axpy_f32(float *y, float a, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

typedef struct {
    float *Y;
    const float *X, *W, *bias;
    int n_rows, n_in, n_out, block;
} matmul_job;

static void matmul_task(void *ctx, int task, int thread) {
    (void)thread;
    const matmul_job *j = ctx;
    int o0 = task * j->block;
    int o1 = o0 + j->block < j->n_out ? o0 + j->block : j->n_out;
    for (int o = o0; o < o1; o++) {
        const float *w = j->W + (size_t)o * j->n_in;
        float b = j->bias ? j->bias[o] : 0.0f;
        for (int r = 0; r < j->n_rows; r++)
            j->Y[(size_t)r * j->n_out + o] = facet_dot_f32(j->X + (size_t)r * j->n_in, w, j->n_in) + b;
    }
}

void facet_matmul_f32(facet_pool *pool, float *Y, const float *X, const float *W,
                      const float *bias, int n_rows, int n_in, int n_out) {
    int threads = pool ? facet_pool_size(pool) : 1;
    /* about 4 blocks per thread for balance, at least 16 rows each */
    int block = n_out / (threads * 4);
    if (block < 16) block = 16;
    matmul_job j = {Y, X, W, bias, n_rows, n_in, n_out, block};
    int n_tasks = (n_out + block - 1) / block;
    if (pool)
        facet_pool_run(pool, n_tasks, matmul_task, &j);
    else
        for (int t = 0; t < n_tasks; t++) matmul_task(&j, t, 0);
}
