/* test_kernels_attention.c — facet_attention_causal against a float64 two-pass softmax
 * attention computed here (scores, max, exp, normalize, weighted sum of values), on
 * every CPU path and KV cache type (a 16-bit cache against the float64 attention over
 * the values it stores; with a bf16 cache the queries are bf16 values too); each query's
 * result must be bit-identical whether it runs alone or in a group (batch invariance),
 * including groups of queries at scattered positions. facet_attention with a window, a
 * logit softcap and per-head sinks, GQA heads in one call, over a linear buffer, a
 * buffer starting past position 0 and a ring, against the same float64 attention with
 * the mask, cap and sink written out; the three layouts must agree bit for bit.
 * facet_attention_latent (MLA's absorbed form: one key per position, its first vd
 * elements the value) against the same float64 attention, alone vs in a call. The KV
 * row converters against the scalar rounding functions and hand-picked values. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu_paths.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul_internal.h"

static uint64_t rng_state = 12345;
static float urand(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(rng_state >> 40) / (double)(1ULL << 23) - 1.0);
}

static void reference(const float *q, int pos, const float *K, const float *V, int kvs, int hd,
                      double scale, double *out) {
    double *s = malloc(sizeof(double) * (size_t)(pos + 1)), mx = -INFINITY, sum = 0;
    for (int t = 0; t <= pos; t++) {
        double d = 0;
        for (int j = 0; j < hd; j++) d += (double)q[j] * K[(size_t)t * kvs + j];
        s[t] = d * scale;
        if (s[t] > mx) mx = s[t];
    }
    for (int t = 0; t <= pos; t++) sum += (s[t] = exp(s[t] - mx));
    for (int j = 0; j < hd; j++) out[j] = 0;
    for (int t = 0; t <= pos; t++)
        for (int j = 0; j < hd; j++) out[j] += s[t] / sum * V[(size_t)t * kvs + j];
    free(s);
}

static void run_path_kv(int hd, int n_pos, float qmag, facet_kv_type kvt) {
    int kvs = hd * 3; /* rows of a larger cache: the head's slice of kv_dim */
    size_t n_el = (size_t)n_pos * kvs;
    float *K = malloc(sizeof(float) * n_el), *V = malloc(sizeof(float) * n_el);
    for (size_t i = 0; i < n_el; i++) {
        K[i] = urand();
        V[i] = urand();
    }
    /* the cache as stored; the reference reads the widened stored values. Keys are
     * transposed in groups of 16 positions, [t / 16][hd][16] (lanes past n_pos: NaN,
     * which must never reach a result) */
    size_t n_kt = (size_t)(n_pos + 15) / 16 * 16 * hd;
    float *KT = malloc(sizeof(float) * n_kt);
    for (size_t i = 0; i < n_kt; i++) KT[i] = NAN;
    for (int t = 0; t < n_pos; t++)
        for (int d = 0; d < hd; d++) KT[((size_t)(t / 16) * hd + d) * 16 + t % 16] = K[(size_t)t * kvs + d];
    void *Kc = malloc(4 * n_kt), *Vc = malloc(4 * n_el);
    facet_kv_store(KT, kvt, Kc, (int)n_kt);
    facet_kv_store(V, kvt, Vc, (int)n_el);
    for (size_t i = 0; i < n_el; i++) { /* K rounded as the cache holds it */
        uint32_t one;
        facet_kv_store(&K[i], kvt, &one, 1);
        facet_kv_load(&one, kvt, &K[i], 1);
    }
    facet_kv_load(Vc, kvt, V, (int)n_el);
    free(KT);
    int n_q = 21;
    float *Q = malloc(sizeof(float) * (size_t)n_q * hd), *O = malloc(sizeof(float) * (size_t)n_q * hd);
    float *o1 = malloc(sizeof(float) * (size_t)hd);
    float *scratch = malloc(sizeof(float) * FACET_ATTN_SCRATCH(n_q, hd));
    double *ref = malloc(sizeof(double) * (size_t)hd);
    int pos[21];
    for (int i = 0; i < n_q; i++) {
        /* a prefill run of consecutive positions, then scattered ones */
        pos[i] = i < 13 ? n_pos - 13 + i : (int)((urand() + 1.0f) * 0.5f * (float)(n_pos - 1));
        if (pos[i] < 0) pos[i] = 0;
        for (int j = 0; j < hd; j++) Q[(size_t)i * hd + j] = urand() * qmag;
    }
    /* a bf16 cache attends with bf16 queries (the forward pass rounds them): the AVX512-BF16
     * path takes its scores from vdpbf16ps, the others from the same values in float32 */
    if (kvt == FACET_KV_BF16) facet_kv_round(Q, kvt, n_q * hd);
    float scale = 1.0f / sqrtf((float)hd);
    facet_attention_causal(Q, (size_t)hd, pos, n_q, Kc, Vc, kvt, (size_t)kvs, hd, scale, O,
                           (size_t)hd, scratch);
    for (int i = 0; i < n_q; i++) {
        reference(Q + (size_t)i * hd, pos[i], K, V, kvs, hd, scale, ref);
        for (int j = 0; j < hd; j++) {
            double err = fabs(O[(size_t)i * hd + j] - ref[j]);
            if (err > 2e-5 * (1 + fabs(ref[j])))
                fail_msg("%s kv %s hd %d query %d (pos %d) dim %d: got %.9g, float64 %.9g",
                         facet_cpu_level_name(facet_cpu()->level), facet_kv_type_name(kvt), hd,
                         i, pos[i], j,
                         O[(size_t)i * hd + j], ref[j]);
        }
        facet_attention_causal(Q + (size_t)i * hd, (size_t)hd, &pos[i], 1, Kc, Vc, kvt,
                               (size_t)kvs, hd, scale, o1, (size_t)hd, scratch);
        assert_memory_equal(o1, O + (size_t)i * hd, sizeof(float) * (size_t)hd);
    }
    free(K);
    free(V);
    free(Kc);
    free(Vc);
    free(Q);
    free(O);
    free(o1);
    free(scratch);
    free(ref);
}

static void run_path(int hd, int n_pos, float qmag) {
    run_path_kv(hd, n_pos, qmag, FACET_KV_F32);
    run_path_kv(hd, n_pos, qmag, FACET_KV_BF16);
    run_path_kv(hd, n_pos, qmag, FACET_KV_F16);
}

static uint32_t bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}
static float from_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* Stored values: bf16 rounds to nearest even on the top 16 bits (ties to even, NaN quiet,
 * infinities kept), f16 as IEEE binary16 (facet_f32_to_f16), identically on every path. */
static void test_kv_convert(void **state) {
    (void)state;
    float x[64];
    uint16_t h[64], want[64];
    float back[64];
    FOR_EACH_CPU_PATH(p) {
        /* hand-picked bf16 roundings: 1 + 2^-8 is a tie that goes to even (1.0), 1 + 3*2^-8
         * a tie that goes up; 1 + 2^-8 + 2^-20 rounds up */
        x[0] = 1.0f + 0x1p-8f;
        x[1] = 1.0f + 3 * 0x1p-8f;
        x[2] = 1.0f + 0x1p-8f + 0x1p-20f;
        x[3] = -INFINITY;
        x[4] = from_bits(0x7f800001u); /* signalling NaN: stays a NaN */
        x[5] = 3.0e38f;                /* rounds to the largest finite bf16, not inf */
        facet_kv_store(x, FACET_KV_BF16, h, 6);
        assert_int_equal(h[0], 0x3f80);
        assert_int_equal(h[1], 0x3f82);
        assert_int_equal(h[2], 0x3f81);
        assert_int_equal(h[3], 0xff80);
        assert_true((h[4] & 0x7f80) == 0x7f80 && (h[4] & 0x7f) != 0);
        assert_int_equal(h[5], 0x7f62);
        for (int i = 0; i < 64; i++) x[i] = urand() * (float)(1 << (i % 20)) * 0x1p-10f;
        x[7] = 70000.0f; /* f16 overflow: inf */
        x[9] = 0x1p-20f; /* f16 subnormal */
        facet_kv_store(x, FACET_KV_F16, h, 64);
        for (int i = 0; i < 64; i++) want[i] = facet_f32_to_f16(x[i]);
        assert_memory_equal(h, want, sizeof h);
        facet_kv_load(h, FACET_KV_F16, back, 64);
        for (int i = 0; i < 64; i++) assert_true(bits(back[i]) == bits(facet_f16_to_f32(h[i])));
        facet_kv_store(x, FACET_KV_BF16, h, 64);
        facet_kv_load(h, FACET_KV_BF16, back, 64);
        for (int i = 0; i < 64; i++) {
            assert_int_equal(h[i], facet_f32_to_bf16(x[i]));
            assert_true(bits(back[i]) == (uint32_t)h[i] << 16);
            assert_true(fabsf(back[i] - x[i]) <= fabsf(x[i]) * 0x1p-8f);
        }
    }
    test_cpu_path_reset();
}

/* float64 attention of one query over keys first..pos with Gemma 2's cap (0: none) and
 * a sink logit (NAN: none): softmax over {s_t} and the sink, the sink's value 0. */
static void reference_full(const float *q, int first, int pos, const float *K, const float *V,
                           int hd, double scale, double cap, double sink, double *out) {
    int n = pos - first + 1;
    double *s = malloc(sizeof(double) * (size_t)n), mx = isnan(sink) ? -INFINITY : sink, sum = 0;
    for (int t = 0; t < n; t++) {
        double d = 0;
        for (int j = 0; j < hd; j++) d += (double)q[j] * K[(size_t)(first + t) * hd + j];
        s[t] = d * scale;
        if (cap > 0) s[t] = cap * tanh(s[t] / cap);
        if (s[t] > mx) mx = s[t];
    }
    if (!isnan(sink)) sum = exp(sink - mx);
    for (int t = 0; t < n; t++) sum += (s[t] = exp(s[t] - mx));
    for (int j = 0; j < hd; j++) out[j] = 0;
    for (int t = 0; t < n; t++)
        for (int j = 0; j < hd; j++) out[j] += s[t] / sum * V[(size_t)(first + t) * hd + j];
    free(s);
}

/* Keys/values of positions [p0, p1) of K/V ([t][hd] float32) stored at rows
 * row(t) = ring ? t % ring : t - p0 of a buffer of `rows` rows (keys transposed in groups
 * of 16), rounded to kvt; rows nobody stores hold `fill`. */
__attribute__((noinline)) static void store_head(const float *K, const float *V, int hd, int p0, int p1, int ring,
                       int rows, facet_kv_type kvt, float fill, void **Kc, void **Vc) {
    size_t n = (size_t)rows * hd;
    float *KT = malloc(sizeof(float) * n), *VR = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) KT[i] = VR[i] = fill;
    for (int t = p0; t < p1; t++) {
        int r = ring ? t % ring : t - p0;
        for (int d = 0; d < hd; d++) {
            KT[((size_t)(r / 16) * hd + d) * 16 + r % 16] = K[(size_t)t * hd + d];
            VR[(size_t)r * hd + d] = V[(size_t)t * hd + d];
        }
    }
    *Kc = malloc(4 * n);
    *Vc = malloc(4 * n);
    facet_kv_store(KT, kvt, *Kc, (int)n);
    facet_kv_store(VR, kvt, *Vc, (int)n);
    free(KT);
    free(VR);
}

/*
 * One KV head of `group` query heads, n_pos cached positions: queries at the last 40
 * positions (prefill) and scattered ones, one call per head; the decode shape (the
 * group's heads at the last position in one call, a sink each, sink_stride 1); and the
 * same queries over a ring of `ring` rows and over a buffer from position p0.
 */
static void run_window_kv(int hd, int n_pos, int window, float cap, int sinks, int group,
                          int ring, facet_kv_type kvt) {
    float *K = malloc(sizeof(float) * (size_t)n_pos * hd), *V = malloc(sizeof(float) * (size_t)n_pos * hd);
    for (size_t i = 0; i < (size_t)n_pos * hd; i++) {
        K[i] = urand();
        V[i] = urand();
    }
    facet_kv_round(K, kvt, n_pos * hd); /* the reference reads what the cache holds */
    facet_kv_round(V, kvt, n_pos * hd);
    void *Kl, *Vl, *Kr, *Vr, *Kp, *Vp;
    int lin_rows = (n_pos + 15) / 16 * 16;
    /* linear from 0: lanes past n_pos are NaN and must never reach a result */
    store_head(K, V, hd, 0, n_pos, 0, lin_rows, kvt, NAN, &Kl, &Vl);
    store_head(K, V, hd, n_pos > ring ? n_pos - ring : 0, n_pos, ring, ring, kvt, NAN, &Kr, &Vr);
    /* from p0: the block of the earliest visible key a ring query can have */
    int q_lo = n_pos - (ring - window + 1); /* earliest query whose window the ring holds */
    int p0 = (q_lo - window + 1 > 0 ? q_lo - window + 1 : 0) / FACET_ATTN_BLOCK * FACET_ATTN_BLOCK;
    store_head(K, V, hd, p0, n_pos, 0, (n_pos - p0 + 15) / 16 * 16, kvt, NAN, &Kp, &Vp);
    enum { NQ = 24 };
    int pos[NQ];
    for (int i = 0; i < NQ; i++)
        pos[i] = i < 16 ? n_pos - 16 + i : (int)((urand() + 1.0f) * 0.5f * (float)(n_pos - 1));
    float *Q = malloc(sizeof(float) * (size_t)group * NQ * hd);
    float qmag = cap > 0 ? 6.0f : 1.5f; /* scores past the cap */
    for (size_t i = 0; i < (size_t)group * NQ * hd; i++) Q[i] = urand() * qmag;
    if (kvt == FACET_KV_BF16) facet_kv_round(Q, kvt, group * NQ * hd);
    float sink[8];
    for (int h = 0; h < group; h++) sink[h] = urand() * 3.0f;
    float *O = malloc(sizeof(float) * NQ * (size_t)hd), *o1 = malloc(sizeof(float) * (size_t)hd);
    float *og = malloc(sizeof(float) * (size_t)group * hd), *or = malloc(sizeof(float) * (size_t)group * hd);
    float *scratch = malloc(sizeof(float) * FACET_ATTN_SCRATCH(NQ, hd));
    double *ref = malloc(sizeof(double) * (size_t)hd);
    facet_attn_params P = {.head_dim = hd, .scale = 1.0f / sqrtf((float)hd), .softcap = cap,
                           .window = window, .kv_type = kvt, .v_stride = (size_t)hd,
                           .path = facet_attn_path_for(facet_cpu())};
    const char *path = facet_cpu_level_name(facet_cpu()->level);
    for (int h = 0; h < group; h++) {
        const float *qh = Q + (size_t)h * NQ * hd;
        P.sinks = sinks ? &sink[h] : NULL;
        P.sink_stride = 0;
        P.kv_ring = 0;
        P.kv_pos0 = 0;
        facet_attention(&P, qh, (size_t)hd, pos, NQ, Kl, Vl, O, (size_t)hd, scratch);
        for (int i = 0; i < NQ; i++) {
            int first = pos[i] - window + 1 > 0 && window > 0 ? pos[i] - window + 1 : 0;
            reference_full(qh + (size_t)i * hd, first, pos[i], K, V, hd, P.scale, cap,
                           sinks ? sink[h] : NAN, ref);
            for (int j = 0; j < hd; j++)
                if (fabs(O[(size_t)i * hd + j] - ref[j]) > 2e-5 * (1 + fabs(ref[j])))
                    fail_msg("%s kv %s hd %d window %d cap %g sinks %d head %d query %d (pos %d) "
                             "dim %d: got %.9g, float64 %.9g", path, facet_kv_type_name(kvt), hd,
                             window, (double)cap, sinks, h, i, pos[i], j, O[(size_t)i * hd + j],
                             ref[j]);
            /* alone, and from the ring or the buffer from p0 where they hold its window */
            facet_attention(&P, qh + (size_t)i * hd, (size_t)hd, &pos[i], 1, Kl, Vl, o1,
                            (size_t)hd, scratch);
            assert_memory_equal(o1, O + (size_t)i * hd, sizeof(float) * (size_t)hd);
            if (pos[i] < q_lo) continue;
            P.kv_ring = ring;
            facet_attention(&P, qh + (size_t)i * hd, (size_t)hd, &pos[i], 1, Kr, Vr, o1,
                            (size_t)hd, scratch);
            assert_memory_equal(o1, O + (size_t)i * hd, sizeof(float) * (size_t)hd);
            P.kv_ring = 0;
            P.kv_pos0 = p0;
            facet_attention(&P, qh + (size_t)i * hd, (size_t)hd, &pos[i], 1, Kp, Vp, o1,
                            (size_t)hd, scratch);
            assert_memory_equal(o1, O + (size_t)i * hd, sizeof(float) * (size_t)hd);
            P.kv_pos0 = 0;
        }
    }
    /* decode: the group's heads at the last position in one call (q rows hd apart) */
    int dpos[8];
    float *qd = malloc(sizeof(float) * (size_t)group * hd);
    for (int h = 0; h < group; h++) {
        dpos[h] = n_pos - 1;
        memcpy(qd + (size_t)h * hd, Q + ((size_t)h * NQ + 15) * hd, sizeof(float) * (size_t)hd);
    }
    P.sinks = sinks ? sink : NULL;
    P.sink_stride = 1;
    P.kv_ring = 0;
    facet_attention(&P, qd, (size_t)hd, dpos, group, Kl, Vl, og, (size_t)hd, scratch);
    P.kv_ring = ring;
    facet_attention(&P, qd, (size_t)hd, dpos, group, Kr, Vr, or, (size_t)hd, scratch);
    assert_memory_equal(og, or, sizeof(float) * (size_t)group * hd);
    for (int h = 0; h < group; h++) { /* as that head's own call with query 15 */
        P.sinks = sinks ? &sink[h] : NULL;
        P.sink_stride = 0;
        P.kv_ring = 0;
        facet_attention(&P, qd + (size_t)h * hd, (size_t)hd, dpos, 1, Kl, Vl, o1, (size_t)hd,
                        scratch);
        assert_memory_equal(o1, og + (size_t)h * hd, sizeof(float) * (size_t)hd);
    }
    free(qd);
    free(K);
    free(V);
    free(Kl);
    free(Vl);
    free(Kr);
    free(Vr);
    free(Kp);
    free(Vp);
    free(Q);
    free(O);
    free(o1);
    free(og);
    free(or);
    free(scratch);
    free(ref);
}

static void test_attention_window_softcap_sinks(void **state) {
    (void)state;
    static const facet_kv_type kvts[3] = {FACET_KV_F32, FACET_KV_BF16, FACET_KV_F16};
    FOR_EACH_CPU_PATH(p) {
        for (int k = 0; k < 3; k++) {
            /* hd, n_pos, window, cap, sinks, group, ring rows */
            run_window_kv(64, 300, 100, 0.0f, 0, 4, 112, kvts[k]);  /* Gemma 3 local   */
            run_window_kv(128, 200, 64, 50.0f, 0, 2, 64, kvts[k]);  /* Gemma 2 local   */
            run_window_kv(128, 150, 0, 50.0f, 0, 2, 160, kvts[k]);  /* Gemma 2 global  */
            run_window_kv(64, 250, 16, 0.0f, 1, 8, 16, kvts[k]);    /* a ring of 16 wraps
                                                                       4x in a block   */
            run_window_kv(64, 180, 40, 0.0f, 1, 2, 48, kvts[k]);    /* gpt-oss sinks   */
            run_window_kv(8, 90, 20, 30.0f, 1, 3, 32, kvts[k]);     /* the generic path */
            run_window_kv(80, 140, 1, 0.0f, 0, 1, 16, kvts[k]);     /* window of one   */
            run_window_kv(96, 70, 200, 0.0f, 1, 2, 208, kvts[k]);   /* window > context */
        }
    }
    test_cpu_path_reset();
}

static void test_attention_paths(void **state) {
    (void)state;
    FOR_EACH_CPU_PATH(p) {
        run_path(128, 300, 1.0f);
        run_path(64, 65, 8.0f); /* peaked softmax, a block boundary at 64 */
        run_path(8, 7, 1.0f);   /* the bundled model's head_dim, one partial block */
        run_path(72, 200, 3.0f);
        run_path(256, 130, 2.0f);
        run_path(64, 300, 1.0f);
        run_path(96, 150, 1.0f); /* head_dims 96, 80, 32, 48, 192: the AVX-512 value */
        run_path(80, 70, 2.0f);  /* kernels' other register shapes                   */
        run_path(32, 100, 1.0f);
        run_path(48, 40, 1.0f);
        run_path(192, 90, 1.0f);
    }
    test_cpu_path_reset();
}

/* facet_attention_latent: n_rows rows of n_heads queries over a latent cache of n_pos
 * positions, each key kd wide and its value its first vd elements (the latent), against
 * the float64 attention over the values the cache stores; each query alone must give
 * the same bits as in the call (rows at consecutive positions, then scattered ones). */
static void run_latent_kv(int kd, int vd, int n_pos, float qmag, facet_kv_type kvt) {
    enum { R = 9, NH = 3 };
    size_t n_el = (size_t)n_pos * kd;
    float *K = malloc(sizeof(float) * n_el);
    for (size_t i = 0; i < n_el; i++) K[i] = urand();
    /* stored transposed in groups of 16, lanes past n_pos NaN (never used) */
    size_t n_kt = (size_t)(n_pos + 15) / 16 * 16 * kd;
    float *KT = malloc(sizeof(float) * n_kt);
    for (size_t i = 0; i < n_kt; i++) KT[i] = NAN;
    for (int t = 0; t < n_pos; t++)
        for (int d = 0; d < kd; d++)
            KT[((size_t)(t / 16) * kd + d) * 16 + t % 16] = K[(size_t)t * kd + d];
    void *Kc = malloc(4 * n_kt);
    facet_kv_store(KT, kvt, Kc, (int)n_kt);
    for (size_t i = 0; i < n_el; i++) { /* K as the cache holds it */
        uint32_t one;
        facet_kv_store(&K[i], kvt, &one, 1);
        facet_kv_load(&one, kvt, &K[i], 1);
    }
    free(KT);
    size_t qrs = (size_t)NH * kd + 5, ors = (size_t)NH * vd + 3; /* rows with gaps */
    float *Q = malloc(sizeof(float) * R * qrs), *O = malloc(sizeof(float) * R * ors);
    float *o1 = malloc(sizeof(float) * (size_t)vd);
    float *scratch = malloc(sizeof(float) * FACET_LATENT_SCRATCH(R * NH, kd, vd));
    double *ref = malloc(sizeof(double) * (size_t)kd);
    int pos[R];
    for (int r = 0; r < R; r++) {
        pos[r] = r < 5 ? n_pos - 5 + r : (int)((urand() + 1.0f) * 0.5f * (float)(n_pos - 1));
        if (pos[r] < 0) pos[r] = 0;
        for (size_t j = 0; j < qrs; j++) Q[r * qrs + j] = urand() * qmag;
    }
    float scale = 1.0f / sqrtf((float)kd);
    facet_latent_params P = {.kd = kd, .vd = vd, .scale = scale, .kv_type = kvt};
    facet_attention_latent(&P, R, NH, Q, qrs, pos, Kc, O, ors, scratch);
    for (int r = 0; r < R; r++)
        for (int h = 0; h < NH; h++) {
            const float *q = Q + r * qrs + (size_t)h * kd, *o = O + r * ors + (size_t)h * vd;
            reference(q, pos[r], K, K, kd, kd, scale, ref);
            for (int j = 0; j < vd; j++)
                if (fabs(o[j] - ref[j]) > 2e-5 * (1 + fabs(ref[j])))
                    fail_msg("%s kv %s kd %d vd %d row %d head %d (pos %d) dim %d: got %.9g, "
                             "float64 %.9g", facet_cpu_level_name(facet_cpu()->level),
                             facet_kv_type_name(kvt), kd, vd, r, h, pos[r], j, o[j], ref[j]);
            facet_attention_latent(&P, 1, 1, q, 0, &pos[r], Kc, o1, 0, scratch);
            assert_memory_equal(o1, o, sizeof(float) * (size_t)vd);
        }
    free(K);
    free(Kc);
    free(Q);
    free(O);
    free(o1);
    free(scratch);
    free(ref);
}

static void test_attention_latent(void **state) {
    (void)state;
    FOR_EACH_CPU_PATH(p) {
        for (int k = 0; k < 3; k++) {
            facet_kv_type t = k == 0 ? FACET_KV_F32 : k == 1 ? FACET_KV_BF16 : FACET_KV_F16;
            run_latent_kv(576, 512, 150, 1.0f, t); /* DeepSeek's 512 + 64 */
            run_latent_kv(40, 32, 200, 4.0f, t);   /* the shrunk test checkpoints' 32 + 8 */
            run_latent_kv(72, 64, 64, 2.0f, t);    /* one whole block */
            run_latent_kv(44, 36, 70, 1.0f, t);    /* vd not a multiple of 16: portable C */
        }
    }
    test_cpu_path_reset();
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_kv_convert),
                                       cmocka_unit_test(test_attention_paths),
                                       cmocka_unit_test(test_attention_window_softcap_sinks),
                                       cmocka_unit_test(test_attention_latent)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
