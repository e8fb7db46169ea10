/* test_sampler.c — the sampling chain of facet_sampler.h.
 *
 * Oracles: the xoshiro256** / SplitMix64 reference algorithm (values computed with an
 * independent Python implementation of Blackman & Vigna's C reference; SplitMix64(0)'s
 * first output 0xe220a8397b1dcdaf is the published value), hand-computed penalty and
 * filter results, and exact probabilities for the empirical draw frequencies. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/sampler_rng.h"
#include "facet.h"
#include "facet_sampler.h"

static void test_rng_reference(void **state) {
    (void)state;
    facet_rng r;
    facet_rng_seed(&r, 0);
    assert_true(r.s[0] == 0xe220a8397b1dcdafULL);
    assert_true(r.s[1] == 0x6e789e6aa1b965f4ULL);
    assert_true(r.s[2] == 0x06c45d188009454fULL);
    assert_true(r.s[3] == 0xf88bb8a8724c81ecULL);
    const uint64_t e0[4] = {0x99ec5f36cb75f2b4ULL, 0xbf6e1f784956452aULL, 0x1a5f849d4933e6e0ULL,
                            0x6aa594f1262d2d2cULL};
    for (int i = 0; i < 4; i++) assert_true(facet_rng_next(&r) == e0[i]);
    facet_rng_seed(&r, 42);
    const uint64_t e42[4] = {0x15780b2e0c2ec716ULL, 0x6104d9866d113a7eULL,
                             0xae17533239e499a1ULL, 0xecb8ad4703b360a1ULL};
    for (int i = 0; i < 4; i++) assert_true(facet_rng_next(&r) == e42[i]);
    facet_rng_seed(&r, UINT64_MAX);
    const uint64_t em[4] = {0x8f5520d52a7ead08ULL, 0xc476a018caa1802dULL, 0x81de31c0d260469eULL,
                            0xbf658d7e065f3c2fULL};
    for (int i = 0; i < 4; i++) assert_true(facet_rng_next(&r) == em[i]);
    facet_rng_seed(&r, 7);
    for (int i = 0; i < 1000; i++) {
        double u = facet_rng_uniform(&r);
        assert_true(u >= 0.0 && u < 1.0);
    }
}

static facet_sampler *make(const facet_sampler_params *p, int n_vocab) {
    facet_sampler *s = NULL;
    facet_error err;
    assert_int_equal(facet_sampler_create(p, n_vocab, &s, &err), FACET_OK);
    return s;
}

/* Pseudo-random logits without ties (a fixed LCG; values only need to be distinct). */
static void fill_logits(float *l, int n, uint32_t seed) {
    uint32_t x = seed * 2654435761u + 1;
    for (int i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        l[i] = (float)((x >> 8) % 100000) / 10000.0f - 5.0f + (float)i * 1e-6f;
    }
}

static void test_greedy_equivalences(void **state) {
    (void)state;
    enum { V = 512 };
    float logits[V];
    for (uint32_t trial = 0; trial < 20; trial++) {
        fill_logits(logits, V, trial);
        int32_t g = facet_sample_greedy(logits, V);
        facet_sampler_params p;
        /* temperature 0 */
        facet_sampler_params_default(&p);
        p.temperature = 0;
        p.seed = trial;
        facet_sampler *s = make(&p, V);
        assert_int_equal(facet_sampler_sample(s, logits), g);
        facet_sampler_free(s);
        /* top_k = 1 at any temperature */
        const float temps[] = {0.01f, 0.7f, 1.0f, 5.0f, 1000.0f};
        for (size_t t = 0; t < sizeof temps / sizeof temps[0]; t++) {
            facet_sampler_params_default(&p);
            p.top_k = 1;
            p.temperature = temps[t];
            p.seed = trial * 31 + t;
            s = make(&p, V);
            for (int k = 0; k < 5; k++) assert_int_equal(facet_sampler_sample(s, logits), g);
            facet_sampler_free(s);
        }
        /* top_p = 0 and min_p = 1 keep the top token */
        facet_sampler_params_default(&p);
        p.top_p = 0;
        p.temperature = 3.0f;
        p.seed = trial;
        s = make(&p, V);
        for (int k = 0; k < 5; k++) assert_int_equal(facet_sampler_sample(s, logits), g);
        facet_sampler_free(s);
        facet_sampler_params_default(&p);
        p.min_p = 1;
        p.temperature = 3.0f;
        p.seed = trial;
        s = make(&p, V);
        for (int k = 0; k < 5; k++) assert_int_equal(facet_sampler_sample(s, logits), g);
        facet_sampler_free(s);
    }
}

static void test_greedy_ties_lowest_id(void **state) {
    (void)state;
    float l[5] = {0.0f, 2.0f, 1.0f, 2.0f, -1.0f};
    facet_sampler_params p;
    facet_sampler_params_default(&p);
    p.top_k = 1;
    facet_sampler *s = make(&p, 5);
    assert_int_equal(facet_sampler_sample(s, l), 1);
    facet_sampler_free(s);
}

static void expect_invalid(facet_sampler_params *p, const char *needle1, const char *needle2) {
    facet_sampler *s = (facet_sampler *)0x1;
    facet_error err;
    assert_int_equal(facet_sampler_create(p, 16, &s, &err), FACET_E_INVALID_ARGUMENT);
    assert_null(s);
    assert_int_equal(err.status, FACET_E_INVALID_ARGUMENT);
    if (!strstr(err.message, needle1) || !strstr(err.message, needle2))
        fail_msg("message '%s' lacks '%s' / '%s'", err.message, needle1, needle2);
    facet_sampler_params_default(p);
}

static void test_invalid_values(void **state) {
    (void)state;
    facet_sampler_params p;
    facet_sampler_params_default(&p);
    p.temperature = -1;
    expect_invalid(&p, "temperature", "-1");
    p.temperature = NAN;
    expect_invalid(&p, "temperature", "nan");
    p.top_p = 1.5f;
    expect_invalid(&p, "top_p", "1.5");
    p.top_p = -0.25f;
    expect_invalid(&p, "top_p", "-0.25");
    p.min_p = 2;
    expect_invalid(&p, "min_p", "2");
    p.min_p = -0.5f;
    expect_invalid(&p, "min_p", "-0.5");
    p.top_k = -3;
    expect_invalid(&p, "top_k", "-3");
    p.repetition_penalty = 0;
    expect_invalid(&p, "repetition_penalty", "0");
    p.presence_penalty = 2.5f;
    expect_invalid(&p, "presence_penalty", "2.5");
    p.frequency_penalty = -3;
    expect_invalid(&p, "frequency_penalty", "-3");
    p.temperature = INFINITY;
    expect_invalid(&p, "temperature", "inf");
    facet_logit_bias b = {16, 1.0f};
    p.logit_bias = &b;
    p.n_logit_bias = 1;
    expect_invalid(&p, "logit_bias", "16");
    b.token = 3;
    b.bias = 101;
    p.logit_bias = &b;
    p.n_logit_bias = 1;
    expect_invalid(&p, "logit_bias[3]", "101");
    /* boundary values are valid */
    facet_sampler_params_default(&p);
    p.temperature = 0;
    p.top_p = 0;
    p.min_p = 1;
    p.presence_penalty = 2;
    p.frequency_penalty = -2;
    facet_sampler *s = make(&p, 16);
    facet_sampler_free(s);
    facet_error err;
    assert_int_equal(facet_sampler_create(&p, 0, &s, &err), FACET_E_INVALID_ARGUMENT);
}

static void test_repetition_penalty(void **state) {
    (void)state;
    facet_sampler_params p;
    facet_sampler_params_default(&p);
    p.temperature = 0;
    p.repetition_penalty = 2;
    /* positive logit divided: 3 -> 1.5 < 2.5 */
    float l[4] = {3.0f, -1.0f, 2.5f, 0.0f};
    facet_sampler *s = make(&p, 4);
    assert_int_equal(facet_sampler_sample(s, l), 0);
    int32_t prompt[1] = {0};
    assert_int_equal(facet_sampler_accept_prompt(s, prompt, 1, NULL), FACET_OK);
    assert_int_equal(facet_sampler_sample(s, l), 2);
    facet_sampler_free(s);
    /* negative logit multiplied: -1 -> -2 < -1.5 */
    float n[2] = {-1.0f, -1.5f};
    s = make(&p, 2);
    facet_sampler_accept(s, 0); /* generated tokens count too */
    assert_int_equal(facet_sampler_sample(s, n), 1);
    facet_sampler_free(s);
    /* out-of-range prompt ids are refused and nothing is recorded */
    s = make(&p, 4);
    int32_t badp[2] = {0, 9};
    facet_error err;
    assert_int_equal(facet_sampler_accept_prompt(s, badp, 2, &err), FACET_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "9"));
    assert_int_equal(facet_sampler_sample(s, l), 0);
    facet_sampler_free(s);
}

static void test_presence_frequency(void **state) {
    (void)state;
    float l[3] = {1.0f, 0.9f, 0.0f};
    facet_sampler_params p;
    facet_sampler_params_default(&p);
    p.temperature = 0;
    p.frequency_penalty = 0.1f; /* 1.0 - 2 * 0.1 = 0.8 < 0.9 */
    facet_sampler *s = make(&p, 3);
    int32_t prompt[2] = {0, 0};
    facet_sampler_accept_prompt(s, prompt, 2, NULL); /* prompt does not count */
    assert_int_equal(facet_sampler_sample(s, l), 0);
    facet_sampler_accept(s, 0);
    assert_int_equal(facet_sampler_sample(s, l), 0); /* 0.9 vs 0.9: tie, lowest id */
    facet_sampler_accept(s, 0);
    assert_int_equal(facet_sampler_sample(s, l), 1);
    facet_sampler_free(s);
    facet_sampler_params_default(&p);
    p.temperature = 0;
    p.presence_penalty = 0.05f; /* once, whatever the count: 0.95 > 0.9 */
    s = make(&p, 3);
    for (int i = 0; i < 5; i++) facet_sampler_accept(s, 0);
    assert_int_equal(facet_sampler_sample(s, l), 0);
    facet_sampler_free(s);
    p.presence_penalty = 0.2f;
    s = make(&p, 3);
    facet_sampler_accept(s, 0);
    assert_int_equal(facet_sampler_sample(s, l), 1);
    facet_sampler_free(s);
    /* negative penalties encourage repeats */
    p.presence_penalty = -1.5f; /* 0 + 1.5 > 1.0 */
    s = make(&p, 3);
    facet_sampler_accept(s, 2);
    assert_int_equal(facet_sampler_sample(s, l), 2);
    facet_sampler_free(s);
}

static void test_logit_bias(void **state) {
    (void)state;
    float l[4] = {1.0f, 3.0f, 2.0f, 0.0f};
    facet_logit_bias b[2] = {{1, -100.0f}, {3, 1.5f}};
    facet_sampler_params p;
    facet_sampler_params_default(&p);
    p.temperature = 0;
    p.logit_bias = b;
    p.n_logit_bias = 1;
    facet_sampler *s = make(&p, 4);
    assert_int_equal(facet_sampler_sample(s, l), 2);
    facet_sampler_free(s);
    p.n_logit_bias = 2; /* 0 + 1.5 < 2 */
    s = make(&p, 4);
    assert_int_equal(facet_sampler_sample(s, l), 2);
    facet_sampler_free(s);
    b[1].bias = 100.0f;
    s = make(&p, 4);
    b[1].bias = 0.0f; /* the sampler copied the biases */
    assert_int_equal(facet_sampler_sample(s, l), 3);
    facet_sampler_free(s);
}

/* Empirical frequencies of n draws against expected probabilities. */
static void check_freq(const facet_sampler_params *p, const float *l, int V, const double *expect) {
    enum { N = 200000 };
    int counts[16] = {0};
    facet_sampler *s = make(p, V);
    for (int i = 0; i < N; i++) {
        int32_t t = facet_sampler_sample(s, l);
        assert_true(t >= 0 && t < V);
        counts[t]++;
    }
    facet_sampler_free(s);
    for (int j = 0; j < V; j++) {
        double f = (double)counts[j] / N;
        if (fabs(f - expect[j]) > 0.005)
            fail_msg("token %d: frequency %.4f, expected %.4f", j, f, expect[j]);
    }
}

static void test_distributions(void **state) {
    (void)state;
    const double pr[4] = {0.5, 0.3, 0.15, 0.05};
    float l[4];
    for (int i = 0; i < 4; i++) l[i] = (float)log(pr[i]) + 7.0f; /* shift-invariant */
    facet_sampler_params p;
    facet_sampler_params_default(&p);
    p.seed = 1;
    check_freq(&p, l, 4, pr);
    /* top-k 2: renormalized 0.5, 0.3 */
    p.top_k = 2;
    const double k2[4] = {0.625, 0.375, 0, 0};
    check_freq(&p, l, 4, k2);
    /* top-p 0.7: mass before token 2 is 0.8 >= 0.7, so two tokens stay */
    facet_sampler_params_default(&p);
    p.seed = 2;
    p.top_p = 0.7f;
    check_freq(&p, l, 4, k2);
    /* top-p 0.85: three tokens */
    p.top_p = 0.85f;
    const double p3[4] = {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0};
    check_freq(&p, l, 4, p3);
    /* min-p 0.25: keep p >= 0.125 */
    facet_sampler_params_default(&p);
    p.seed = 3;
    p.min_p = 0.25f;
    check_freq(&p, l, 4, p3);
    /* temperature 2: p ~ sqrt(p) */
    facet_sampler_params_default(&p);
    p.seed = 4;
    p.temperature = 2.0f;
    double t2[4], z = 0;
    for (int i = 0; i < 4; i++) z += t2[i] = sqrt(pr[i]);
    for (int i = 0; i < 4; i++) t2[i] /= z;
    check_freq(&p, l, 4, t2);
}

/* Temperatures near 0 and extreme repetition penalties overflow float32 (l / T = +inf
 * for every large logit): the chain must still sample its own distribution, which tends
 * to the argmax as T -> 0 — never the lowest id among the saturated ones (issue 17). */
static void test_float_overflow_keeps_the_distribution(void **state) {
    (void)state;
    const float l[5] = {10, 20, 50, 40, -30}; /* 10 / 1.5e-38 already exceeds FLT_MAX */
    const float temps[3] = {1.5e-38f, 1e-40f, FLT_TRUE_MIN};
    facet_sampler_params p;
    for (int t = 0; t < 3; t++) {
        facet_sampler_params_default(&p);
        p.temperature = temps[t];
        p.seed = (uint64_t)t;
        facet_sampler *s = make(&p, 5);
        for (int i = 0; i < 50; i++) assert_int_equal(facet_sampler_sample(s, l), 2);
        facet_sampler_free(s);
    }
    /* equal maxima share the limit evenly: exp((l - max) / T) is 1 for both, 0 else */
    const float tie[4] = {1, 50, 20, 50};
    facet_sampler_params_default(&p);
    p.temperature = 1e-40f;
    p.seed = 5;
    const double half[4] = {0, 0.5, 0, 0.5};
    check_freq(&p, tie, 4, half);
    /* a temperature that overflows only the top logits: 1e35 / 1e-5 > FLT_MAX but the
     * gap between the two best, 1e30, is still huge at T = 1e-5: the best wins */
    const float big[3] = {1e35f, 9.99999e34f, 0};
    facet_sampler_params_default(&p);
    p.temperature = 1e-5f;
    facet_sampler *s = make(&p, 3);
    assert_int_equal(facet_sampler_sample(s, big), 0);
    facet_sampler_free(s);
    /* repetition_penalty 1e-40 on tokens 0 and 2 (positive logits divided by it overflow
     * to +inf): the greedy choice is the larger of them, 3 / r > 2 / r */
    const float rl[4] = {2, 1, 3, 0.5f};
    const int32_t seen[2] = {0, 2};
    facet_error err;
    facet_sampler_params_default(&p);
    p.temperature = 0;
    p.repetition_penalty = 1e-40f;
    s = make(&p, 4);
    assert_int_equal(facet_sampler_accept_prompt(s, seen, 2, &err), FACET_OK);
    assert_int_equal(facet_sampler_sample(s, rl), 2);
    facet_sampler_free(s);
    /* repetition_penalty FLT_MAX on all-negative seen logits: every l * r is -inf in
     * float32; the largest, -0.5 * r, is still the argmax */
    const float nl[4] = {-1, -3, -2, -0.5f};
    const int32_t all[4] = {0, 1, 2, 3};
    p.repetition_penalty = FLT_MAX;
    for (int greedy = 0; greedy < 2; greedy++) {
        p.temperature = greedy ? 0.0f : 1.0f;
        s = make(&p, 4);
        assert_int_equal(facet_sampler_accept_prompt(s, all, 4, &err), FACET_OK);
        assert_int_equal(facet_sampler_sample(s, nl), 3);
        facet_sampler_free(s);
    }
}

/* The conversion the CLI and the server share. */
static void test_param_from_double(void **state) {
    (void)state;
    float f = 7;
    assert_int_equal(facet_sampler_param_from_double(0.7, &f), 1);
    assert_true(f == 0.7f);
    assert_int_equal(facet_sampler_param_from_double(1e-40, &f), 1);
    assert_true(f == 1e-40f && f > 0);
    assert_int_equal(facet_sampler_param_from_double(1e-50, &f), 1);
    assert_true(f == FLT_TRUE_MIN);
    assert_int_equal(facet_sampler_param_from_double(-1e-50, &f), 1);
    assert_true(f == -FLT_TRUE_MIN);
    assert_int_equal(facet_sampler_param_from_double(0.0, &f), 1);
    assert_true(f == 0);
    assert_int_equal(facet_sampler_param_from_double(1e30, &f), 1);
    f = 7;
    assert_int_equal(facet_sampler_param_from_double(2e30, &f), 0);
    assert_int_equal(facet_sampler_param_from_double(INFINITY, &f), 0);
    assert_int_equal(facet_sampler_param_from_double(NAN, &f), 0);
    assert_true(f == 7);
}

static void test_seeded_draws(void **state) {
    (void)state;
    /* With seed 42 and p = (0.5, 0.3, 0.15, 0.05), the reference PRNG's uniforms pick
     * these tokens (computed by the Python reference of the draw rule). */
    const double pr[4] = {0.5, 0.3, 0.15, 0.05};
    float l[4];
    for (int i = 0; i < 4; i++) l[i] = (float)log(pr[i]);
    const int32_t expect[12] = {0, 0, 1, 2, 3, 1, 1, 2, 1, 1, 1, 0};
    facet_sampler_params p;
    facet_sampler_params_default(&p);
    p.seed = 42;
    facet_sampler *s = make(&p, 4);
    for (int i = 0; i < 12; i++) assert_int_equal(facet_sampler_sample(s, l), expect[i]);
    facet_sampler_free(s);
    /* same seed -> same sequence on a large vocabulary; a different seed differs */
    enum { V = 512, T = 64 };
    float big[V];
    fill_logits(big, V, 99);
    int32_t a[T], b[T], c[T];
    facet_sampler_params_default(&p);
    p.seed = 123;
    p.temperature = 1.5f;
    p.top_p = 0.95f;
    facet_sampler *sa = make(&p, V), *sb = make(&p, V);
    p.seed = 124;
    facet_sampler *sc = make(&p, V);
    int same_c = 1;
    for (int i = 0; i < T; i++) {
        a[i] = facet_sampler_sample(sa, big);
        b[i] = facet_sampler_sample(sb, big);
        c[i] = facet_sampler_sample(sc, big);
        assert_int_equal(a[i], b[i]);
        same_c &= a[i] == c[i];
    }
    assert_false(same_c);
    facet_sampler_free(sa);
    facet_sampler_free(sb);
    facet_sampler_free(sc);
}

/* Reference chain with a full sort of the vocabulary (written from the rules of
 * facet_sampler.h, no penalties), drawing with its own copy of the PRNG. */
static const float *ref_w;
static int ref_cmp(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (ref_w[x] != ref_w[y]) return ref_w[x] > ref_w[y] ? -1 : 1;
    return (x > y) - (x < y);
}

static int32_t ref_sample(const float *logits, int V, const facet_sampler_params *p,
                          facet_rng *rng) {
    float *w = malloc((size_t)V * sizeof *w);
    int32_t *c = malloc((size_t)V * sizeof *c);
    double *pr = malloc((size_t)V * sizeof *pr);
    for (int i = 0; i < V; i++) {
        w[i] = logits[i] / p->temperature;
        c[i] = i;
    }
    ref_w = w;
    qsort(c, (size_t)V, sizeof *c, ref_cmp);
    int n = p->top_k > 0 && p->top_k < V ? p->top_k : V;
    double total = 0;
    for (int i = 0; i < n; i++) total += pr[i] = exp((double)w[c[i]] - (double)w[c[0]]);
    if (p->min_p > 0) {
        int m = 1;
        while (m < n && pr[m] >= (double)p->min_p) m++;
        n = m;
    }
    if (p->top_p < 1) {
        double t = 0, before;
        for (int i = 0; i < n; i++) t += pr[i];
        int m = 1;
        before = pr[0] / t;
        while (m < n && before < (double)p->top_p) before += pr[m++] / t;
        n = m;
    }
    total = 0;
    for (int i = 0; i < n; i++) total += pr[i];
    int32_t r = c[n - 1];
    if (n > 1) {
        double u = facet_rng_uniform(rng) * total, acc = 0;
        for (int i = 0; i < n; i++) {
            acc += pr[i];
            if (acc > u) {
                r = c[i];
                break;
            }
        }
    } else {
        r = c[0];
    }
    free(w);
    free(c);
    free(pr);
    return r;
}

static void test_matches_full_sort_reference(void **state) {
    (void)state;
    enum { V = 4096 };
    float *l = malloc(V * sizeof *l);
    const float temps[] = {0.3f, 0.8f, 1.0f, 2.5f};
    const int topk[] = {0, 5, 40, 100, 1000};
    const float topp[] = {1.0f, 0.5f, 0.9f, 0.99f};
    const float minp[] = {0.0f, 0.01f, 0.2f};
    int cases = 0;
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < 5; k++)
            for (int q = 0; q < 4; q++)
                for (int m = 0; m < 3; m++) {
                    fill_logits(l, V, (uint32_t)(t * 100 + k * 10 + q + m * 1000));
                    /* a peaked distribution too: scale every other case */
                    if (cases % 2)
                        for (int i = 0; i < V; i++) l[i] *= 3.0f;
                    facet_sampler_params p;
                    facet_sampler_params_default(&p);
                    p.temperature = temps[t];
                    p.top_k = topk[k];
                    p.top_p = topp[q];
                    p.min_p = minp[m];
                    p.seed = (uint64_t)cases;
                    facet_sampler *s = make(&p, V);
                    facet_rng rng;
                    facet_rng_seed(&rng, p.seed);
                    for (int d = 0; d < 8; d++) {
                        int32_t got = facet_sampler_sample(s, l);
                        int32_t want = ref_sample(l, V, &p, &rng);
                        if (got != want)
                            fail_msg("case %d (T=%g k=%d p=%g min_p=%g) draw %d: %d != %d",
                                     cases, (double)p.temperature, p.top_k, (double)p.top_p,
                                     (double)p.min_p, d, (int)got, (int)want);
                    }
                    facet_sampler_free(s);
                    cases++;
                }
    free(l);
}

static void test_logprob_of(void **state) {
    (void)state;
    float l[3] = {1.0f, 2.0f, 3.0f};
    double lse = log(exp(1.0) + exp(2.0) + exp(3.0));
    assert_true(fabs(facet_logprob_of(l, 3, 0) - (1.0 - lse)) < 1e-12);
    assert_true(fabs(facet_logprob_of(l, 3, 2) - (3.0 - lse)) < 1e-12);
}

/* facet_logits_nonfinite: the first NaN / +-inf index, -1 when all are finite (the
 * largest finite float, subnormals and -0 are finite). */
static void test_logits_nonfinite(void **state) {
    (void)state;
    enum { N = 1000 };
    float x[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 17) - 8.0f;
    x[3] = FLT_MAX;
    x[4] = -FLT_MAX;
    x[5] = 1e-45f;
    x[6] = -0.0f;
    assert_int_equal(facet_logits_nonfinite(x, N), -1);
    const float bad[] = {NAN, INFINITY, -INFINITY};
    const int at[] = {0, 511, N - 1};
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < 3; k++) {
            float keep = x[at[k]];
            x[at[k]] = bad[b];
            assert_int_equal(facet_logits_nonfinite(x, N), at[k]);
            x[N / 2 + 100] = bad[b]; /* a later one does not change the answer */
            assert_int_equal(facet_logits_nonfinite(x, N), at[k] < N / 2 + 100 ? at[k] : N / 2 + 100);
            x[N / 2 + 100] = (float)((N / 2 + 100) % 17) - 8.0f;
            x[at[k]] = keep;
        }
    assert_int_equal(facet_logits_nonfinite(x, N), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logits_nonfinite),
        cmocka_unit_test(test_rng_reference),       cmocka_unit_test(test_greedy_equivalences),
        cmocka_unit_test(test_greedy_ties_lowest_id), cmocka_unit_test(test_invalid_values),
        cmocka_unit_test(test_repetition_penalty),  cmocka_unit_test(test_presence_frequency),
        cmocka_unit_test(test_logit_bias),          cmocka_unit_test(test_distributions),
        cmocka_unit_test(test_seeded_draws),        cmocka_unit_test(test_logprob_of),
        cmocka_unit_test(test_matches_full_sort_reference),
        cmocka_unit_test(test_float_overflow_keeps_the_distribution),
        cmocka_unit_test(test_param_from_double),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
