/*
 * test_vulkan_ops.c — each operation of the Vulkan backend (src/backend/vulkan) against
 * the CPU backend's kernel on random inputs (issue 24): matmul over f32, bf16 and f16
 * weights through the matrix-vector kernel (decode rows) and the tiled one (prefill
 * rows), odd shapes and a bias; matmul_each (an input row per matrix: a decode step's
 * experts) and matmul_multi of more than four weights; RMSNorm with (1 + w); RoPE with
 * partial rotary; the gated activations; bf16 rounding bit for bit; the classic
 * decoders' LayerNorm, ungated activations, RoPE on pairs and copy; attention with GQA,
 * odd head counts, a window, a softcap, sinks, ALiBi, decode and prefill groups, and a
 * ring layer's prefill whose
 * own rows come from the chunk; long contexts (split-K decode over 1000+ keys), prefill
 * chunks of many rows (the kernel's row tiles), head_dim 17, 64, 80, 128 and 256, f32
 * and bf16 caches, in place and gathered. The oracle is the CPU kernel (matmul: a float64 sum over
 * the tensor's own values): float32 sums in another order, so values agree within 2e-5
 * relative (attention 1e-4). The quantized weights (int8, q4, GGUF Q4_0, Q8_0, Q4_K, Q6_K,
 * the K types also in the CPU's 16-row panels) the same way, the values the shaders
 * dequantize read back bit for bit through unit inputs, and against the CPU backend's own
 * matmul within a bound per output from its activation rounding.
 *
 * Runs on whatever Vulkan device the loader gives (CI: Mesa's lavapipe, LP_NUM_THREADS=2
 * keeps it cheap); skipped, saying why, in a binary built without Vulkan or on a machine
 * without a driver.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "kernels/cpu/matmul_internal.h"

static facet_device *dev;
static facet_backend *vk, *cpu;

/* The device keeps a weight by its tensor's address (a model's never move): every case's
 * tensor lives until the test ends, so no address is reused for another matrix. */
static facet_wtensor weights[80];
static int n_weights;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / (1ull << 24))) * 2.0f - 1.0f;
}
static void fill(float *x, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = frand() * scale;
}

static void assert_close(const float *a, const float *b, size_t n, double rel, const char *what) {
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / (fabs((double)b[i]) + 1.0);
        if (!(d <= worst)) worst = d, at = i;
    }
    if (!(worst <= rel))
        fail_msg("%s: element %zu: vulkan %.9g vs cpu %.9g (rel %.3g > %.3g)", what, at, a[at],
                 b[at], worst, rel);
}

static int setup(void **state) {
    (void)state;
    facet_error err = {0};
    /* Keep lavapipe mapped after the Vulkan loader unloads it: LeakSanitizer then scans
     * the driver's globals, which still reach the blocks it keeps for the process's life
     * (unmapped, they showed as a 128-byte leak from an unknown module in the ASan
     * build). Nothing happens where lavapipe is absent. */
    (void)dlopen("libvulkan_lvp.so", RTLD_NOW | RTLD_NODELETE);
    if (facet_device_open("vulkan", -1, &dev, &err) != FACET_OK) {
        fprintf(stderr, "test_vulkan_ops: SKIPPED: %s\n", err.message);
        dev = NULL;
        return 0;
    }
    fprintf(stderr, "test_vulkan_ops: on %s\n", facet_device_describe(dev));
    assert_int_equal(facet_backend_vulkan_create(dev, &vk, &err), FACET_OK);
    assert_int_equal(facet_backend_cpu_create(NULL, &cpu, &err), FACET_OK);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (vk) vk->ops->free(vk);
    if (cpu) cpu->ops->free(cpu);
    facet_device_free(dev);
    for (int i = 0; i < n_weights; i++) { /* (freed only now: see weights) */
        free(weights[i].data);
        free(weights[i].scales);
    }
    return 0;
}

#define NEED_DEVICE()                                                     \
    do {                                                                  \
        if (!dev) skip();                                                 \
    } while (0)

static void status_ok(void) {
    facet_error err = {0};
    facet_status st = vk->ops->status(vk, &err);
    if (st != FACET_OK) fail_msg("vulkan backend error: %s", err.message);
}

/* ---- matmul ---- */

/* The oracle: the tensor's own values (facet_wtensor_row, exact for every float format)
 * times float32 X, summed in double. (The CPU's bf16 kernel rounds X to bf16 on
 * AVX512-BF16 machines; the shaders multiply float32 X, as the CPU's f32 and f16 do.) */
static void reference_matmul(float *Y, const float *X, const facet_wtensor *W, const float *b,
                             int M) {
    float *row = malloc((size_t)W->cols * sizeof(float));
    for (int o = 0; o < W->rows; o++) {
        facet_wtensor_row(W, o, row);
        for (int r = 0; r < M; r++) {
            double acc = b ? b[o] : 0.0;
            for (int i = 0; i < W->cols; i++) acc += (double)X[(size_t)r * W->cols + i] * row[i];
            Y[(size_t)r * W->rows + o] = (float)acc;
        }
    }
    free(row);
}


static void matmul_case(facet_wformat fmt, int N, int K, int M, int with_bias) {
    facet_error err = {0};
    facet_wtensor *Wp = &weights[n_weights++];
    *Wp = (facet_wtensor){FACET_WF_F32, N, K, malloc((size_t)N * K * sizeof(float)), NULL, 0};
    facet_wtensor W = *Wp;
    fill(W.data, (size_t)N * K, 0.5f);
    assert_int_equal(facet_wtensor_convert(Wp, fmt, &err), FACET_OK);
    W = *Wp;
    float *X = malloc((size_t)M * K * sizeof(float)), *bias = malloc((size_t)N * sizeof(float));
    float *Yv = malloc((size_t)M * N * sizeof(float)), *Yc = malloc((size_t)M * N * sizeof(float));
    fill(X, (size_t)M * K, 1.0f);
    fill(bias, (size_t)N, 1.0f);
    vk->ops->matmul(vk, Yv, X, Wp, with_bias ? bias : NULL, M);
    status_ok();
    reference_matmul(Yc, X, &W, with_bias ? bias : NULL, M);
    char what[96];
    snprintf(what, sizeof what, "matmul %s N=%d K=%d M=%d", facet_wformat_name(fmt), N, K, M);
    assert_close(Yv, Yc, (size_t)M * N, 2e-5, what);
    /* matmul_multi: the same weights twice, each output as matmul gives */
    float *Y2 = malloc((size_t)M * N * sizeof(float));
    float *const Ys[2] = {Yv, Y2};
    const facet_wtensor *const Ws[2] = {Wp, Wp};
    const float *const bs[2] = {with_bias ? bias : NULL, NULL};
    vk->ops->matmul_multi(vk, 2, Ys, X, Ws, bs, M);
    status_ok();
    assert_close(Yv, Yc, (size_t)M * N, 2e-5, what);
    reference_matmul(Yc, X, &W, NULL, M);
    assert_close(Y2, Yc, (size_t)M * N, 2e-5, what);
    free(Y2);
    free(X), free(bias), free(Yv), free(Yc);
}

static void test_matmul(void **state) {
    (void)state;
    NEED_DEVICE();
    const facet_wformat fmts[] = {FACET_WF_F32, FACET_WF_BF16, FACET_WF_F16};
    for (int f = 0; f < 3; f++) {
        matmul_case(fmts[f], 45, 67, 1, 1);   /* decode, odd K: matvec.comp */
        matmul_case(fmts[f], 64, 128, 3, 0);  /* matvec.comp, several rows */
        matmul_case(fmts[f], 45, 67, 37, 1);  /* prefill, ragged tiles: matmul_tiled.comp */
    }
}

/* ---- quantized weights ---- */

/* Where a GGUF block type keeps its f16 fields (quant.h, quant_k_internal.h): d, and the
 * min (Q4_1, Q5_1: m; the K types with mins: dmin), -1 when none; and the largest |code x
 * sub-block scale| (Q4_0 8, Q8_0 128, Q4_K 63 x 15, Q6_K 128 x 32, ...). */
typedef struct {
    facet_wformat fmt;
    int d, min;
    float top;
} gguf_fields;
static const gguf_fields GGUF_FIELDS[] = {
    {FACET_WF_GGUF_Q4_0, 0, -1, 8.0f},     {FACET_WF_GGUF_Q4_1, 0, 2, 15.0f},
    {FACET_WF_GGUF_Q5_0, 0, -1, 16.0f},    {FACET_WF_GGUF_Q5_1, 0, 2, 31.0f},
    {FACET_WF_GGUF_Q8_0, 0, -1, 128.0f},   {FACET_WF_GGUF_IQ4_NL, 0, -1, 127.0f},
    {FACET_WF_GGUF_Q2_K, 80, 82, 45.0f},   {FACET_WF_GGUF_Q3_K, 108, -1, 128.0f},
    {FACET_WF_GGUF_Q4_K, 0, 2, 945.0f},    {FACET_WF_GGUF_Q5_K, 0, 2, 1953.0f},
    {FACET_WF_GGUF_Q6_K, 208, -1, 4096.0f}, {FACET_WF_GGUF_IQ4_XS, 0, -1, 4064.0f},
};
static const gguf_fields *fields_of(facet_wformat fmt) {
    for (size_t i = 0; i < sizeof GGUF_FIELDS / sizeof GGUF_FIELDS[0]; i++)
        if (GGUF_FIELDS[i].fmt == fmt) return &GGUF_FIELDS[i];
    fail_msg("no block fields for %s", facet_wformat_name(fmt));
    return NULL;
}

/* A [N][K] tensor of quantized format fmt: facet's int8 / q4 converted from random
 * float32 (any K), a GGUF block type made of random blocks (K a multiple of its block):
 * every code and sub-block scale possible, the f16 d (and Q4_K's dmin) such that weights
 * stay within about +-1 (float32 sums then cancel no more than a model's do). */
static facet_wtensor *quant_tensor(facet_wformat fmt, int N, int K) {
    facet_error err = {0};
    facet_wtensor *W = &weights[n_weights++];
    if (facet_wformat_qtype(fmt) < 0) {
        *W = (facet_wtensor){FACET_WF_F32, N, K, malloc((size_t)N * K * sizeof(float)), NULL, 0};
        fill(W->data, (size_t)N * K, 0.5f);
        assert_int_equal(facet_wtensor_convert(W, fmt, &err), FACET_OK);
        return W;
    }
    size_t bytes = (size_t)facet_wtensor_packed_bytes(fmt, (uint64_t)N, (uint64_t)K);
    uint8_t *raw = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) raw[i] = (uint8_t)(frand() * 128.0f + 128.0f);
    const facet_qtype_traits *q = facet_qtype_traits_of((facet_qtype)facet_wformat_qtype(fmt));
    const gguf_fields *gf = fields_of(fmt);
    for (size_t b = 0; b < bytes / q->block_bytes; b++) {
        uint8_t *blk = raw + b * q->block_bytes;
        uint16_t d = facet_f32_to_f16((0.75f + 0.25f * frand()) / gf->top);
        uint16_t min = facet_f32_to_f16(0.5f * frand() / gf->top);
        memcpy(blk + gf->d, &d, 2);
        if (gf->min >= 0) memcpy(blk + gf->min, &min, 2);
    }
    assert_int_equal(facet_wtensor_blocks(W, fmt, N, K, raw, NULL, &err), FACET_OK);
    free(raw);
    return W;
}

/* The CPU backend multiplies these formats with its activations quantized per block of
 * B inputs (32; Q8_K's 256 for the K types): x' = q * d, d the block's amax / 127 (Q8_0:
 * rounded to f16, 2^-11 relative), so |x' - x| <= d / 2 + 127 d 2^-11 < 0.6 amax / 127
 * for each input, and |y_cpu - y| <= sum_k |w_k| 0.6 amax_b(k) / 127, plus float32
 * sums (1e-5 of sum |x w|). Q4_1 and Q5_1 (Q8_1 blocks) multiply their min m by the
 * block's sum s = f16(amax / 127 * sum q) instead of by sum x': |m| (2^-10 sum |x'|) more,
 * and their w_k = d q_k + m counts as |w_k - m| + |m|. Each output its own bound. */
static void assert_within_cpu_bound(const float *Yv, const float *Yc, const float *X,
                                    const facet_wtensor *W, int M, const char *what) {
    int B = facet_wformat_qtype(W->format) >= FACET_QT_Q2_K ? 256 : 32, K = W->cols;
    float *row = malloc((size_t)K * sizeof(float));
    double worst = 0;
    for (int o = 0; o < W->rows; o++) {
        facet_wtensor_row(W, o, row);
        for (int r = 0; r < M; r++) {
            const float *x = X + (size_t)r * K;
            double bound = 1e-6, mag = 0;
            for (int b0 = 0; b0 < K; b0 += B) {
                double amax = 0, wsum = 0, xsum = 0, m = 0;
                if (W->format == FACET_WF_GGUF_Q4_1 || W->format == FACET_WF_GGUF_Q5_1) {
                    size_t bb = (size_t)facet_wtensor_packed_bytes(W->format, 1, 32);
                    uint16_t h;
                    memcpy(&h, (const uint8_t *)W->data + ((size_t)o * (K / 32) + b0 / 32) * bb + 2, 2);
                    m = facet_f16_to_f32(h);
                }
                for (int k = b0; k < b0 + B && k < K; k++) {
                    amax = fmax(amax, fabs(x[k]));
                    wsum += fabs(row[k] - m) + fabs(m);
                    xsum += fabs(x[k]);
                    mag += fabs((double)x[k] * row[k]);
                }
                bound += wsum * 0.6 * amax / 127.0 + fabs(m) * (xsum + B * 0.6 * amax / 127.0) / 1024.0;
            }
            bound += 1e-5 * mag;
            double d = fabs((double)Yv[(size_t)r * W->rows + o] - Yc[(size_t)r * W->rows + o]);
            if (!(d <= bound))
                fail_msg("%s: output (%d, %d): vulkan %.9g vs cpu %.9g, |diff| %.3g > bound %.3g",
                         what, r, o, Yv[(size_t)r * W->rows + o], Yc[(size_t)r * W->rows + o],
                         d, bound);
            worst = fmax(worst, d / bound);
        }
    }
    free(row);
    fprintf(stderr, "test_vulkan_ops: %s: |vulkan - cpu| at most %.2f of its bound\n", what, worst);
}

/* Exactness: inputs e_k (unit rows) give Y[r][o] = w[o][k] alone, so the shader's
 * dequantized values are compared with facet_wtensor_row's bit for bit: all K unit rows
 * through the tiled kernel, four through matvec. */
static void quant_exact(const facet_wtensor *W) {
    int N = W->rows, K = W->cols;
    float *X = calloc((size_t)K * K, sizeof(float)), *Y = malloc((size_t)K * N * sizeof(float));
    float *row = malloc((size_t)K * sizeof(float));
    for (int k = 0; k < K; k++) X[(size_t)k * K + k] = 1.0f;
    vk->ops->matmul(vk, Y, X, W, NULL, K);
    status_ok();
    float Xd[4 * 512] = {0}, Yd[4 * 64];
    int kd[4] = {0, 17, K / 2, K - 1};
    assert_true(K <= 512 && N <= 64);
    for (int r = 0; r < 4; r++) Xd[r * K + kd[r]] = 1.0f;
    vk->ops->matmul(vk, Yd, Xd, W, NULL, 4);
    status_ok();
    for (int o = 0; o < N; o++) {
        facet_wtensor_row(W, o, row);
        for (int k = 0; k < K; k++)
            if (Y[(size_t)k * N + o] != row[k])
                fail_msg("%s [%d][%d]: tiled reads %.9g, the host tensor holds %.9g",
                         facet_wformat_name(W->format), o, k, Y[(size_t)k * N + o], row[k]);
        for (int r = 0; r < 4; r++)
            if (Yd[r * N + o] != row[kd[r]])
                fail_msg("%s [%d][%d]: matvec reads %.9g, the host tensor holds %.9g",
                         facet_wformat_name(W->format), o, kd[r], Yd[r * N + o], row[kd[r]]);
    }
    free(X), free(Y), free(row);
}

static void quant_case(facet_wformat fmt, int N, int K, int M, int with_bias) {
    facet_wtensor *W = quant_tensor(fmt, N, K);
    float *X = malloc((size_t)M * K * sizeof(float)), *bias = malloc((size_t)N * sizeof(float));
    float *Yv = malloc((size_t)M * N * sizeof(float)), *Yr = malloc((size_t)M * N * sizeof(float));
    float *Yc = malloc((size_t)M * N * sizeof(float));
    fill(X, (size_t)M * K, 1.0f);
    fill(bias, (size_t)N, 1.0f);
    vk->ops->matmul(vk, Yv, X, W, with_bias ? bias : NULL, M);
    status_ok();
    char what[96];
    snprintf(what, sizeof what, "matmul %s N=%d K=%d M=%d%s", facet_wformat_name(fmt), N, K, M,
             with_bias ? " +bias" : "");
    /* the tensor's own values in double: float32 sums in another order */
    reference_matmul(Yr, X, W, with_bias ? bias : NULL, M);
    assert_close(Yv, Yr, (size_t)M * N, 2e-5, what);
    /* the CPU backend's matmul, its activations quantized (see the bound) */
    cpu->ops->matmul(cpu, Yc, X, W, with_bias ? bias : NULL, M);
    assert_within_cpu_bound(Yv, Yc, X, W, M, what);
    free(X), free(bias), free(Yv), free(Yr), free(Yc);
}

static void test_matmul_quant(void **state) {
    (void)state;
    NEED_DEVICE();
    const facet_wformat facet_own[] = {FACET_WF_Q8, FACET_WF_Q4};
    for (int f = 0; f < 2; f++) {
        quant_case(facet_own[f], 45, 67, 1, 1);  /* decode, K not a multiple of 32: matvec */
        quant_case(facet_own[f], 33, 96, 3, 0);  /* matvec, several rows, 3 blocks */
        quant_case(facet_own[f], 45, 67, 37, 1); /* prefill, ragged tiles: matmul_tiled */
        quant_exact(quant_tensor(facet_own[f], 21, 77));
    }
    const facet_wformat blocks32[] = {FACET_WF_GGUF_Q4_0, FACET_WF_GGUF_Q8_0, FACET_WF_GGUF_Q4_1,
                                      FACET_WF_GGUF_Q5_0, FACET_WF_GGUF_Q5_1, FACET_WF_GGUF_IQ4_NL};
    for (int f = 0; f < 6; f++) {
        quant_case(blocks32[f], 45, 96, 1, 1);
        quant_case(blocks32[f], 45, 160, 3, 0);
        quant_case(blocks32[f], 29, 96, 37, 1);
        quant_exact(quant_tensor(blocks32[f], 19, 128));
    }
    /* the K types (a Q4_K_M file's): superblocks of 256, rows as the file stores them
     * and (N a multiple of 16) repacked into the CPU's panels (packed 2), read back */
    const facet_wformat kblocks[] = {FACET_WF_GGUF_Q4_K, FACET_WF_GGUF_Q6_K, FACET_WF_GGUF_Q2_K,
                                     FACET_WF_GGUF_Q3_K, FACET_WF_GGUF_Q5_K, FACET_WF_GGUF_IQ4_XS};
    for (int f = 0; f < 6; f++) {
        quant_case(kblocks[f], 45, 256, 1, 1);
        quant_case(kblocks[f], 21, 512, 3, 0);
        quant_case(kblocks[f], 29, 256, 37, 1);
        quant_exact(quant_tensor(kblocks[f], 19, 256));
        if (f >= 2) continue;
        facet_wtensor *P = quant_tensor(kblocks[f], 32, 512);
        assert_int_equal(facet_wtensor_kpanel(P), 1);
        quant_exact(P);
    }
}

/* The formats the kernel names call served are the loader's list (backend.h), so no
 * format passes the load check and then finds no shader, or the reverse. */
static void test_formats_listed(void **state) {
    (void)state;
    NEED_DEVICE();
    for (int f = 0; f < FACET_WF_ALL; f++) {
        int served = strcmp(vk->ops->matmul_kernel(vk, (facet_wformat)f), "none (not on vulkan)") != 0;
        int listed = (FACET_VULKAN_WFORMATS >> f & 1) != 0;
        if (served != listed)
            fail_msg("%s: a shader %s, the list %s", facet_wformat_name((facet_wformat)f),
                     served ? "reads it" : "does not read it", listed ? "names it" : "does not");
        if (served) assert_true(vk->ops->weight_bytes(vk, (facet_wformat)f, 3, 64) > 0);
    }
}

/* ---- row operations ---- */

static const char *const act_names[4] = {"silu", "gelu_tanh", "gelu (erf)", "relu2"};

static void test_rows(void **state) {
    (void)state;
    NEED_DEVICE();
    enum { n = 200, nh = 3, hd = 16, rot = 8 };
    float x[n], w[n], yv[n], yc[n];
    fill(x, n, 3.0f);
    fill(w, n, 1.0f);
    for (int off = 0; off < 2; off++) { /* w and Gemma's (1 + w) */
        vk->ops->rmsnorm(vk, yv, x, w, n, 1e-6, (float)off);
        cpu->ops->rmsnorm(cpu, yc, x, w, n, 1e-6, (float)off);
        status_ok();
        assert_close(yv, yc, n, 2e-5, "rmsnorm");
    }
    /* a row's heads in one call (qk-norm): each head against the CPU's rmsnorm alone, and
     * the CPU's rows bit for bit its single calls */
    for (int off = 0; off < 2; off++) {
        float yr[nh * hd], yh[nh * hd];
        vk->ops->rmsnorm_rows(vk, yr, x, w, hd, nh, 1e-6, (float)off);
        cpu->ops->rmsnorm_rows(cpu, yc, x, w, hd, nh, 1e-6, (float)off);
        for (int h = 0; h < nh; h++)
            cpu->ops->rmsnorm(cpu, yh + h * hd, x + h * hd, w, hd, 1e-6, (float)off);
        status_ok();
        assert_memory_equal(yc, yh, sizeof yh);
        assert_close(yr, yh, nh * hd, 2e-5, "rmsnorm_rows");
    }
    float q[nh * hd], qc[nh * hd], cs[rot / 2], sn[rot / 2];
    fill(q, nh * hd, 2.0f);
    memcpy(qc, q, sizeof q);
    for (int i = 0; i < rot / 2; i++) cs[i] = cosf(0.3f * (float)i + 1), sn[i] = sinf(0.3f * (float)i + 1);
    vk->ops->rope(vk, q, nh, hd, rot, cs, sn); /* partial rotary: dims >= rot pass */
    cpu->ops->rope(cpu, qc, nh, hd, rot, cs, sn);
    status_ok();
    assert_close(q, qc, nh * hd, 1e-6, "rope");
    for (int act = 0; act < 4; act++) { /* silu, gelu tanh, gelu erf, relu2 */
        float g[n], gc[n], u[n];
        fill(g, n, 6.0f);
        fill(u, n, 2.0f);
        memcpy(gc, g, sizeof g);
        vk->ops->gated_act(vk, g, u, n, act);
        cpu->ops->gated_act(cpu, gc, u, n, act);
        status_ok();
        assert_close(g, gc, n, 2e-6, act_names[act]);
    }
    float r[n], rc[n];
    fill(r, n, 100.0f);
    memcpy(rc, r, sizeof r);
    vk->ops->kv_round(vk, r, FACET_KV_BF16, n);
    cpu->ops->kv_round(cpu, rc, FACET_KV_BF16, n);
    status_ok();
    assert_memory_equal(r, rc, sizeof r); /* bit for bit */
}

/* ---- activations resident on the device ---- */

/* Operations on scratch_alloc memory stay on the device and are submitted together:
 * nothing is submitted until sync (an operand at an offset no binding can take is handled
 * as host memory: its input waits for the pending work, its output is copied into place
 * after a wait), and the results equal the CPU's sequence of
 * the same operations: rmsnorm_rows over rows of 5 floats (row 1 starts at byte 20, not
 * bindable), rope_rows, gated_act_rows, add_scaled, kv_round, then sync. */
static void test_resident_chain(void **state) {
    (void)state;
    NEED_DEVICE();
    enum { M = 6, n = 5, nh = 2, hd = 4, rot = 4, I = 7 };
    float *X = vk->ops->scratch_alloc(vk, sizeof(float) * M * n);
    float *Q = vk->ops->scratch_alloc(vk, sizeof(float) * M * nh * hd);
    float *G = vk->ops->scratch_alloc(vk, sizeof(float) * M * I);
    float *U = vk->ops->scratch_alloc(vk, sizeof(float) * M * I);
    assert_non_null(X), assert_non_null(Q), assert_non_null(G), assert_non_null(U);
    float x[M * n], w[n], q[M * nh * hd], cs[M * rot / 2], sn[M * rot / 2], g[M * I], u[M * I];
    fill(x, M * n, 3.0f), fill(w, n, 1.0f), fill(q, M * nh * hd, 2.0f);
    fill(g, M * I, 4.0f), fill(u, M * I, 2.0f);
    for (int i = 0; i < M * rot / 2; i++) cs[i] = cosf(0.7f * (float)i), sn[i] = sinf(0.7f * (float)i);
    memcpy(X, x, sizeof x), memcpy(Q, q, sizeof q), memcpy(G, g, sizeof g), memcpy(U, u, sizeof u);
    uint64_t before = facet_device_submissions(dev);
    vk->ops->rmsnorm_rows(vk, X, X, w, n, M, 1e-6, 0.0f);
    vk->ops->rmsnorm(vk, X + n, X + n, w, n, 1e-6, 1.0f); /* row 1 again, not bindable */
    vk->ops->rope_rows(vk, Q, M, nh, hd, rot, cs, sn);
    vk->ops->gated_act_rows(vk, G, U, I, M, 0);
    vk->ops->add_scaled(vk, G, U, (size_t)M * I, 0.5f);
    vk->ops->kv_round(vk, Q, FACET_KV_BF16, M * nh * hd);
    /* the unbindable row waits twice (its input, then its output copied into place), the
     * rest is one submission at sync */
    assert_int_equal(facet_device_submissions(dev) - before, 2);
    vk->ops->sync(vk);
    status_ok();
    assert_int_equal(facet_device_submissions(dev) - before, 3);
    cpu->ops->rmsnorm_rows(cpu, x, x, w, n, M, 1e-6, 0.0f);
    cpu->ops->rmsnorm(cpu, x + n, x + n, w, n, 1e-6, 1.0f);
    cpu->ops->rope_rows(cpu, q, M, nh, hd, rot, cs, sn);
    cpu->ops->gated_act_rows(cpu, g, u, I, M, 0);
    cpu->ops->add_scaled(cpu, g, u, (size_t)M * I, 0.5f);
    cpu->ops->kv_round(cpu, q, FACET_KV_BF16, M * nh * hd);
    assert_close(X, x, M * n, 2e-5, "resident rmsnorm");
    assert_close(G, g, M * I, 2e-5, "resident gated_act + add_scaled");
    /* bf16 rounding of values within 1e-6 of each other: equal but for a rare tie */
    assert_close(Q, q, M * nh * hd, 1e-2, "resident rope + kv_round");
    vk->ops->scratch_free(vk, X), vk->ops->scratch_free(vk, Q);
    vk->ops->scratch_free(vk, G), vk->ops->scratch_free(vk, U);
}

/* The classic decoders' rows (issue 28 on vulkan): LayerNorm over M rows with weight and
 * bias, weight alone, neither (OLMo); the ungated activations over rows whose length is
 * no multiple of 16 (the CPU's vector/libm split); RoPE on pairs (2i, 2i+1) with partial
 * rotary against the formula written out here; the copy bit for bit. The CPU's _rows
 * operations are bit for bit their single-row ones. */
static void test_classic_rows(void **state) {
    (void)state;
    NEED_DEVICE();
    enum { n = 203, M = 3 };
    float x[n * M], w[n], b[n], yv[n * M], yc[n * M], yr[n * M];
    fill(x, n * M, 3.0f);
    for (int i = 0; i < n * M; i++) x[i] += (float)(i / n); /* a mean per row */
    fill(w, n, 1.0f);
    fill(b, n, 0.5f);
    for (int k = 0; k < 3; k++) {
        const float *wk = k < 2 ? w : NULL, *bk = k < 1 ? b : NULL;
        vk->ops->layernorm_rows(vk, yv, x, wk, bk, n, M, 1e-5);
        cpu->ops->layernorm_rows(cpu, yc, x, wk, bk, n, M, 1e-5);
        for (int m = 0; m < M; m++)
            cpu->ops->layernorm(cpu, yr + m * n, x + m * n, wk, bk, n, 1e-5);
        status_ok();
        assert_memory_equal(yc, yr, sizeof yc);
        assert_close(yv, yc, n * M, 2e-5, k == 0 ? "layernorm w, b" : k == 1 ? "layernorm w" : "layernorm");
    }
    memcpy(yv, x, sizeof x); /* in place, one row (the final norm of a wanted entry) */
    vk->ops->layernorm(vk, yv, yv, w, b, n, 1e-5);
    cpu->ops->layernorm(cpu, yc, x, w, b, n, 1e-5);
    status_ok();
    assert_close(yv, yc, n, 2e-5, "layernorm in place");
    for (int act = 0; act < 4; act++) {
        float a[n * M], ac[n * M], ar[n * M];
        fill(a, n * M, 6.0f);
        memcpy(ac, a, sizeof a);
        memcpy(ar, a, sizeof a);
        vk->ops->act_rows(vk, a, n, M, act);
        cpu->ops->act_rows(cpu, ac, n, M, act);
        for (int m = 0; m < M; m++) cpu->ops->act(cpu, ar + m * n, n, act);
        status_ok();
        assert_memory_equal(ac, ar, sizeof ac);
        assert_close(a, ac, n * M, 2e-6, act_names[act]);
    }
    enum { R = 2, nh = 3, hd = 16, rot = 8 };
    float q[R * nh * hd], qc[R * nh * hd], want[R * nh * hd], cs[R * rot / 2], sn[R * rot / 2];
    fill(q, R * nh * hd, 2.0f);
    memcpy(qc, q, sizeof q);
    memcpy(want, q, sizeof q);
    for (int i = 0; i < R * rot / 2; i++) cs[i] = cosf(0.3f * (float)i + 1), sn[i] = sinf(0.3f * (float)i + 1);
    for (int r = 0; r < R; r++) /* rotate_every_two: pairs (2i, 2i+1), dims >= rot pass */
        for (int h = 0; h < nh; h++)
            for (int i = 0; i < rot / 2; i++) {
                float *v = want + (r * nh + h) * hd, c = cs[r * rot / 2 + i], s = sn[r * rot / 2 + i];
                double a = v[2 * i], z = v[2 * i + 1];
                v[2 * i] = (float)(a * c - z * s);
                v[2 * i + 1] = (float)(z * c + a * s);
            }
    vk->ops->rope_pairs_rows(vk, q, R, nh, hd, rot, cs, sn);
    cpu->ops->rope_pairs_rows(cpu, qc, R, nh, hd, rot, cs, sn);
    status_ok();
    assert_close(qc, want, R * nh * hd, 1e-6, "rope_pairs_rows (cpu)");
    assert_close(q, want, R * nh * hd, 1e-6, "rope_pairs_rows");
    vk->ops->copy(vk, yv, x, n * M);
    status_ok();
    assert_memory_equal(yv, x, sizeof x);
}

/* ---- attention ---- */

typedef struct {
    int nh, nkv, hd, window, ring;
    float softcap;
    int sinks;
    facet_kv_type type;
    int past;  /* positions already in the cache before the chunk */
    int n;     /* chunk entries of sequence 0; sequence 1 gets one (a decode group) */
    int alibi; /* ALiBi slopes 2^(-8 (h + 1) / nh) (BLOOM's for a power-of-two nh) */
} attn_case;

/* on_device: the cache's buffers in the device's memory (facet_device_kv_memory, as a
 * vulkan session's), read in place by attn_flash.comp; else the host's, gathered and
 * uploaded (and always so for a ring layer's several-entry group). */
static void attention_case(const attn_case *t, int on_device) {
    facet_error err = {0};
    facet_kv_cache kv;
    int n_ctx = (t->past + t->n + 16 + 63) / 64 * 64;
    uint8_t sliding[1] = {(uint8_t)(t->window > 0)};
    /* a ring layer when the window is shorter than the context */
    int64_t window = t->ring ? t->window : (t->window ? n_ctx : 0);
    assert_int_equal(facet_kv_cache_init(&kv, 1, t->nkv, t->hd, sliding, window, t->type, 2,
                                         n_ctx, &err), FACET_OK);
    if (on_device) facet_device_kv_memory(dev, &kv);
    int nh = t->nh, nkv = t->nkv, hd = t->hd, n = t->n + 1;
    size_t qd = (size_t)nh * hd, kvd = (size_t)nkv * hd;
    float *q = malloc(n * qd * 4), *k = malloc(n * kvd * 4), *v = malloc(n * kvd * 4);
    float *ov = calloc(n * qd, 4), *oc = calloc(n * qd, 4), sinks[64];
    float *pk = malloc(kvd * 4), *pv = malloc(kvd * 4);
    int *pos = malloc(n * sizeof(int)), *order = malloc(n * sizeof(int));
    int *order_at = malloc(n * sizeof(int)), group_row[2] = {0, t->n}, group_len[2] = {t->n, 1};
    int32_t *seq_ids = malloc(n * sizeof(int32_t));
    fill(sinks, 64, 2.0f);
    float slopes[64];
    for (int h = 0; h < nh && h < 64; h++) slopes[h] = powf(2.0f, -8.0f * (float)(h + 1) / (float)nh);
    /* the past of both sequences, stored in order */
    for (int s = 0; s < 2; s++) {
        int len = t->past + (s == 0 ? t->n : 1);
        assert_int_equal(facet_kv_cache_reserve(&kv, s, len, &err), FACET_OK);
        kv.seqs[s].len = len;
        for (int p = 0; p < t->past; p++) {
            fill(pk, kvd, 1.0f), fill(pv, kvd, 1.0f);
            facet_kv_cache_store(&kv, s, 0, p, pk, pv);
        }
    }
    fill(q, n * qd, 1.0f), fill(k, n * kvd, 1.0f), fill(v, n * kvd, 1.0f);
    if (t->type == FACET_KV_BF16) {
        cpu->ops->kv_round(cpu, q, t->type, (int)(n * qd));
        cpu->ops->kv_round(cpu, k, t->type, (int)(n * kvd));
        cpu->ops->kv_round(cpu, v, t->type, (int)(n * kvd));
    }
    for (int r = 0; r < n; r++) {
        int s = r < t->n ? 0 : 1;
        seq_ids[r] = s;
        pos[r] = t->past + (s == 0 ? r : 0);
        order[r] = r;
        order_at[r] = s == 0 ? 0 : t->n;
    }
    /* stored before attention, but a ring layer's several-entry group after */
    for (int r = 0; r < n; r++)
        if (!t->ring || seq_ids[r] == 1)
            facet_kv_cache_store(&kv, seq_ids[r], 0, pos[r], k + r * kvd, v + r * kvd);
    facet_attn_params P = {.head_dim = hd, .scale = 1.0f / sqrtf((float)hd), .softcap = t->softcap,
                           .window = t->window, .sinks = t->sinks ? sinks : NULL,
                           .alibi = t->alibi ? slopes : NULL, .kv_type = t->type,
                           .v_stride = (size_t)hd};
    facet_attn_chunk c = {.p = &P, .kv = &kv, .layer = 0, .n_heads = nh, .n_kv_heads = nkv,
                          .n_rows = n, .q = q, .k = k, .v = v, .pos = pos, .seq_ids = seq_ids,
                          .n_groups = 2, .contiguous = 1, .group_row = group_row,
                          .group_len = group_len, .order_at = order_at, .order = order};
    /* a CPU backend of its own: its scratch is sized for one cache (a session's) */
    facet_backend *cb;
    assert_int_equal(facet_backend_cpu_create(NULL, &cb, &err), FACET_OK);
    assert_int_equal(cb->ops->reserve(cb, &kv, nh, n, &err), FACET_OK);
    c.out = oc;
    cb->ops->attention(cb, &c);
    cb->ops->free(cb);
    c.out = ov;
    vk->ops->attention(vk, &c);
    status_ok();
    char what[160];
    snprintf(what, sizeof what, "attention nh=%d nkv=%d hd=%d window=%d ring=%d softcap=%g "
             "sinks=%d alibi=%d %s past=%d n=%d%s", nh, nkv, hd, t->window, t->ring, t->softcap,
             t->sinks, t->alibi, facet_kv_type_name(t->type), t->past, t->n,
             on_device ? " (cache on the device)" : "");
    assert_close(ov, oc, n * qd, 1e-4, what);
    facet_kv_cache_free(&kv);
    free(q), free(k), free(v), free(ov), free(oc), free(pk), free(pv);
    free(pos), free(order), free(order_at), free(seq_ids);
}

static void run_cases(const attn_case *cases, size_t n_cases) {
    for (int on_device = 0; on_device < 2; on_device++)
        for (size_t i = 0; i < n_cases; i++) attention_case(&cases[i], on_device);
}

static void test_attention(void **state) {
    (void)state;
    NEED_DEVICE();
    const attn_case cases[] = {
        {4, 4, 16, 0, 0, 0, 0, FACET_KV_F32, 0, 5, 0},    /* prefill from empty + a decode */
        {6, 2, 32, 0, 0, 0, 0, FACET_KV_F32, 21, 7, 0},   /* GQA 3:1 after a past */
        {3, 1, 8, 0, 0, 0, 0, FACET_KV_F32, 9, 1, 0},     /* odd heads, MQA, decode groups */
        {5, 5, 16, 0, 0, 20.0f, 0, FACET_KV_F32, 12, 4, 0}, /* odd heads, attention softcap */
        {4, 2, 16, 6, 0, 0, 0, FACET_KV_F32, 17, 5, 0},   /* window, non-ring layer */
        {4, 2, 16, 16, 1, 0, 0, FACET_KV_F32, 30, 6, 0},  /* window on a ring layer: prefill view */
        {8, 2, 64, 0, 0, 0, 1, FACET_KV_F32, 10, 3, 0},   /* sinks (gpt-oss) */
        {6, 3, 32, 0, 0, 50.0f, 0, FACET_KV_BF16, 14, 4, 0}, /* bf16 cache */
        {4, 2, 16, 16, 1, 0, 0, FACET_KV_BF16, 37, 1, 0}, /* ring decode past a wrap, bf16 */
        {8, 8, 16, 0, 0, 0, 0, FACET_KV_F32, 0, 9, 1},   /* ALiBi (BLOOM): prefill + decode */
        {6, 6, 32, 0, 0, 0, 0, FACET_KV_BF16, 13, 5, 1}, /* ALiBi, 6 heads, bf16 cache */
        {4, 1, 16, 0, 0, 0, 0, FACET_KV_F32, 7, 3, 1},   /* ALiBi with multi-query heads */
    };
    run_cases(cases, sizeof cases / sizeof cases[0]);
}

/* The tiled prefill (rows mode: tiles of 16 entries at head_dim <= 64, 8 above) over
 * many rows, and split-K decode (heads mode: more than 256 keys split into chunks of 128
 * or more, combined by attn_reduce.comp), at head_dim 64, 128, 256 and odd ones. */
static void test_attention_long(void **state) {
    (void)state;
    NEED_DEVICE();
    const attn_case cases[] = {
        {8, 2, 64, 0, 0, 0, 0, FACET_KV_F32, 1100, 1, 0},      /* long decode: split-K, GQA 4:1 */
        {8, 2, 64, 0, 0, 0, 0, FACET_KV_F32, 40, 45, 0},       /* prefill: 3 row tiles, ragged */
        {4, 1, 128, 0, 0, 0, 0, FACET_KV_BF16, 1030, 3, 0},    /* split-K over 3 decode rows, bf16 */
        {6, 2, 128, 0, 0, 30.0f, 1, FACET_KV_F32, 300, 21, 0}, /* prefill, softcap and sinks */
        {12, 1, 128, 0, 0, 30.0f, 1, FACET_KV_F32, 700, 1, 0}, /* split decode, 12 heads: 2 tiles */
        {4, 2, 256, 0, 0, 0, 1, FACET_KV_BF16, 600, 1, 0},     /* head_dim 256: split decode */
        {4, 2, 256, 0, 0, 0, 0, FACET_KV_F32, 20, 19, 0},      /* head_dim 256: prefill */
        {5, 5, 80, 0, 0, 0, 0, FACET_KV_F32, 520, 1, 0},       /* odd heads, head_dim 80 */
        {3, 3, 17, 0, 0, 0, 1, FACET_KV_F32, 290, 18, 0},      /* odd head_dim, sinks */
        {4, 2, 64, 100, 0, 0, 0, FACET_KV_F32, 1000, 1, 0},    /* window on a long decode */
        {4, 2, 64, 64, 1, 0, 0, FACET_KV_BF16, 500, 1, 0},     /* ring decode, many wraps */
        {4, 2, 64, 64, 1, 20.0f, 0, FACET_KV_F32, 300, 24, 0}, /* ring prefill view, softcap */
        {4, 2, 64, 100, 0, 0, 1, FACET_KV_BF16, 400, 33, 0},   /* window prefill, sinks, bf16 */
        {8, 8, 64, 0, 0, 0, 0, FACET_KV_F32, 1100, 1, 1},   /* ALiBi: split-K decode */
        {8, 8, 64, 0, 0, 0, 0, FACET_KV_F32, 40, 45, 1},    /* ALiBi: prefill row tiles */
    };
    run_cases(cases, sizeof cases / sizeof cases[0]);
}

/* Rows p0 .. p0 + m - 1 of sequence 0 of kv as one group: out (m, nh * hd). */
static void attend_rows(facet_kv_cache *kv, int nh, const float *q, int p0, int m, float *out) {
    int hd = kv->head_dim, pos[8], order[8], order_at[8], grow[1] = {0}, glen[1] = {m};
    int32_t seq[8];
    for (int i = 0; i < m; i++) pos[i] = p0 + i, order[i] = i, order_at[i] = 0, seq[i] = 0;
    facet_attn_params P = {.head_dim = hd, .scale = 1.0f / sqrtf((float)hd),
                           .kv_type = kv->type, .v_stride = (size_t)hd};
    facet_attn_chunk c = {.p = &P, .kv = kv, .n_heads = nh, .n_kv_heads = kv->n_kv_heads,
                          .n_rows = m, .q = q, .k = NULL, .v = NULL, .out = out, .pos = pos,
                          .seq_ids = seq, .n_groups = 1, .contiguous = 1, .group_row = grow,
                          .group_len = glen, .order_at = order_at, .order = order};
    vk->ops->attention(vk, &c);
    status_ok();
}

/* A query's result does not depend on the other queries of its call, bit for bit: a
 * prefill chunk's rows (row tiles) equal the same rows attended one at a time (decode,
 * one split) over a short context; over a long one, a group of 3 decode rows (split-K,
 * each row's splits its own) equals each row alone. The cache on the device. */
static void test_attention_invariance(void **state) {
    (void)state;
    NEED_DEVICE();
    facet_error err = {0};
    enum { nh = 4, nkv = 2, hd = 64, qd = nh * hd, kvd = nkv * hd };
    /* 4098: rows at 4095 .. 4097 span 256 and 257 key tiles, 32 splits of 8 tiles and
     * 29 of 9: a group-wide split would change the first row's bits */
    const int lens[2] = {150, 4098}, rows[2] = {7, 3};
    for (int t = 0; t < 2; t++) {
        facet_kv_cache kv;
        int L = lens[t], m = rows[t];
        assert_int_equal(facet_kv_cache_init(&kv, 1, nkv, hd, NULL, 0, FACET_KV_F32, 1, L, &err),
                         FACET_OK);
        facet_device_kv_memory(dev, &kv);
        assert_int_equal(facet_kv_cache_reserve(&kv, 0, L, &err), FACET_OK);
        kv.seqs[0].len = L;
        float kr[kvd], vr[kvd], q[8 * qd], all[8 * qd], one[qd];
        for (int p = 0; p < L; p++) {
            fill(kr, kvd, 1.0f), fill(vr, kvd, 1.0f);
            facet_kv_cache_store(&kv, 0, 0, p, kr, vr);
        }
        fill(q, (size_t)m * qd, 1.0f);
        attend_rows(&kv, nh, q, L - m, m, all);
        for (int i = 0; i < m; i++) {
            attend_rows(&kv, nh, q + i * qd, L - m + i, 1, one);
            if (memcmp(one, all + i * qd, sizeof one))
                fail_msg("attention: row %d of %d at context %d differs alone", i, m, L);
        }
        facet_kv_cache_free(&kv);
    }
}

/* A head_dim past what attn_flash.comp holds is an error the status names. */
static void test_attention_refused(void **state) {
    (void)state;
    NEED_DEVICE();
    facet_error err = {0};
    facet_kv_cache kv;
    int hd = 288, pos[1] = {0}, order[1] = {0}, order_at[1] = {0}, grow[1] = {0}, glen[1] = {1};
    int32_t seq[1] = {0};
    assert_int_equal(facet_kv_cache_init(&kv, 1, 1, hd, NULL, 0, FACET_KV_F32, 1, 16, &err),
                     FACET_OK);
    assert_int_equal(facet_kv_cache_reserve(&kv, 0, 1, &err), FACET_OK);
    float *q = calloc(hd, 4), *o = calloc(hd, 4);
    facet_attn_params P = {.head_dim = hd, .scale = 1.0f, .kv_type = FACET_KV_F32,
                           .v_stride = (size_t)hd};
    facet_attn_chunk c = {.p = &P, .kv = &kv, .n_heads = 1, .n_kv_heads = 1, .n_rows = 1,
                          .q = q, .k = q, .v = q, .out = o, .pos = pos, .seq_ids = seq,
                          .n_groups = 1, .contiguous = 1, .group_row = grow, .group_len = glen,
                          .order_at = order_at, .order = order};
    vk->ops->attention(vk, &c);
    assert_int_equal(vk->ops->status(vk, &err), FACET_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "head_dim 288"));
    status_ok(); /* the error was reported once */
    facet_kv_cache_free(&kv);
    free(q), free(o);
}

/* ---- matmul_each (a decode step's experts) ---- */

/* Eight matrices of four formats (f32, bf16, and facet's int8 and q4 blocks: a
 * quantized model's experts) and two shapes, each on its own input row: host arrays
 * (more outputs than one submission copies out at once), then the same rows in the
 * backend's scratch (bound in place, read after sync); and matmul_multi of eight weights
 * of one row (the expert path's gate and up projections). Oracle: the float64 sum over
 * the tensors' own values (every format) and the CPU backend's matmul_each (f32: the
 * same float32 products; its bf16 and block kernels may round the activations). */
#define EACH 8
static facet_wtensor each_w[EACH];

static void test_matmul_each(void **state) {
    (void)state;
    NEED_DEVICE();
    facet_error err = {0};
    const facet_wformat fmts[4] = {FACET_WF_F32, FACET_WF_BF16, FACET_WF_Q8, FACET_WF_Q4};
    const int K = 67, N[2] = {45, 96};
    float *X[EACH], *Yv[EACH], *Yc[EACH], *Yr[EACH], *bias[EACH];
    const facet_wtensor *W[EACH];
    const float *Xc[EACH], *bc[EACH];
    for (int m = 0; m < EACH; m++) {
        int n = N[m % 2];
        each_w[m] = (facet_wtensor){FACET_WF_F32, n, K, malloc((size_t)n * K * sizeof(float)),
                                    NULL, 0};
        fill(each_w[m].data, (size_t)n * K, 0.5f);
        assert_int_equal(facet_wtensor_convert(&each_w[m], fmts[m / 2], &err), FACET_OK);
        W[m] = &each_w[m];
        X[m] = malloc((size_t)K * sizeof(float)), Xc[m] = X[m];
        fill(X[m], (size_t)K, 1.0f);
        bias[m] = m % 3 ? malloc((size_t)n * sizeof(float)) : NULL, bc[m] = bias[m];
        if (bias[m]) fill(bias[m], (size_t)n, 1.0f);
        Yv[m] = malloc((size_t)n * sizeof(float));
        Yc[m] = malloc((size_t)n * sizeof(float));
        Yr[m] = malloc((size_t)n * sizeof(float));
        reference_matmul(Yr[m], X[m], W[m], bias[m], 1);
    }
    vk->ops->matmul_each(vk, EACH, Yv, Xc, W, bc);
    status_ok();
    cpu->ops->matmul_each(cpu, EACH, Yc, Xc, W, bc);
    char what[64];
    for (int m = 0; m < EACH; m++) {
        snprintf(what, sizeof what, "matmul_each %d (%s)", m, facet_wformat_name(fmts[m / 2]));
        assert_close(Yv[m], Yr[m], (size_t)W[m]->rows, 2e-5, what);
        if (fmts[m / 2] == FACET_WF_F32) assert_close(Yv[m], Yc[m], (size_t)W[m]->rows, 2e-5, what);
    }

    /* resident: inputs and outputs in the backend's scratch, at row offsets */
    size_t xs = 128, ys = 128; /* floats a row (offsets the device binds) */
    float *dx = vk->ops->scratch_alloc(vk, EACH * xs * sizeof(float));
    float *dy = vk->ops->scratch_alloc(vk, EACH * ys * sizeof(float));
    assert_non_null(dx), assert_non_null(dy);
    float *Yd[EACH];
    const float *Xd[EACH];
    for (int m = 0; m < EACH; m++) {
        memcpy(dx + m * xs, X[m], (size_t)K * sizeof(float));
        Xd[m] = dx + m * xs, Yd[m] = dy + m * ys;
    }
    vk->ops->matmul_each(vk, EACH, Yd, Xd, W, bc);
    vk->ops->sync(vk);
    status_ok();
    for (int m = 0; m < EACH; m++) {
        snprintf(what, sizeof what, "matmul_each resident %d", m);
        assert_close(Yd[m], Yv[m], (size_t)W[m]->rows, 0, what); /* the same dispatch */
    }
    vk->ops->scratch_free(vk, dx), vk->ops->scratch_free(vk, dy);

    /* matmul_multi of eight weights of one input (the shapes of the even ones) */
    const facet_wtensor *W6[EACH];
    const float *b6[EACH];
    for (int m = 0; m < EACH; m++) W6[m] = W[m - m % 2], b6[m] = bc[m - m % 2];
    vk->ops->matmul_multi(vk, EACH, Yv, X[0], W6, b6, 1);
    status_ok();
    for (int m = 0; m < EACH; m++) {
        reference_matmul(Yr[m], X[0], W6[m], b6[m], 1);
        snprintf(what, sizeof what, "matmul_multi of %d, %d", EACH, m);
        assert_close(Yv[m], Yr[m], (size_t)W6[m]->rows, 2e-5, what);
    }
    for (int m = 0; m < EACH; m++) {
        free(X[m]), free(bias[m]), free(Yv[m]), free(Yc[m]), free(Yr[m]);
        free(each_w[m].data), free(each_w[m].scales);
    }
}

/* matmul_multi of 128 weights none of which the device has yet (the expert path's 2k
 * gate/up projections at k = 64): the uploads grow the device's table of weights
 * (first capacity 64) during the call, and every output is still its own weight's. */
#define MANY 128
static facet_wtensor many_w[MANY];

static void test_matmul_multi_many(void **state) {
    (void)state;
    NEED_DEVICE();
    facet_error err = {0};
    enum { N = 8, K = 32 };
    float X[K], *Y[MANY], Yr[N];
    const facet_wtensor *W[MANY];
    const float *bias[MANY] = {0};
    fill(X, K, 1.0f);
    for (int m = 0; m < MANY; m++) {
        many_w[m] = (facet_wtensor){FACET_WF_F32, N, K, malloc((size_t)N * K * sizeof(float)),
                                    NULL, 0};
        fill(many_w[m].data, (size_t)N * K, 0.5f);
        assert_int_equal(facet_wtensor_convert(&many_w[m], m % 2 ? FACET_WF_Q8 : FACET_WF_F32, &err),
                         FACET_OK);
        W[m] = &many_w[m];
        Y[m] = malloc(N * sizeof(float));
    }
    vk->ops->matmul_multi(vk, MANY, Y, X, W, bias, 1);
    status_ok();
    char what[48];
    for (int m = 0; m < MANY; m++) {
        reference_matmul(Yr, X, W[m], NULL, 1);
        snprintf(what, sizeof what, "matmul_multi of %d, %d", MANY, m);
        assert_close(Y[m], Yr, N, 2e-5, what);
        free(Y[m]), free(many_w[m].data), free(many_w[m].scales);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_matmul_quant),
        cmocka_unit_test(test_formats_listed),
        cmocka_unit_test(test_matmul_each),
        cmocka_unit_test(test_matmul_multi_many),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_resident_chain),
        cmocka_unit_test(test_classic_rows),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_attention_long),
        cmocka_unit_test(test_attention_invariance),
        cmocka_unit_test(test_attention_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
