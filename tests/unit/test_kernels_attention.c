/* test_kernels_attention.c — facet_attention_causal against a float64 two-pass softmax
 * attention computed here (scores, max, exp, normalize, weighted sum of values), on
 * every CPU path; each query's result must be bit-identical whether it runs alone or
 * in a group (batch invariance), including groups of queries at scattered positions. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"

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

static void run_path(int hd, int n_pos, float qmag) {
    int kvs = hd * 3; /* rows of a larger cache: the head's slice of kv_dim */
    float *K = malloc(sizeof(float) * (size_t)n_pos * kvs), *V = malloc(sizeof(float) * (size_t)n_pos * kvs);
    for (size_t i = 0; i < (size_t)n_pos * kvs; i++) {
        K[i] = urand();
        V[i] = urand();
    }
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
    float scale = 1.0f / sqrtf((float)hd);
    facet_attention_causal(Q, (size_t)hd, pos, n_q, K, V, (size_t)kvs, hd, scale, O, (size_t)hd, scratch);
    for (int i = 0; i < n_q; i++) {
        reference(Q + (size_t)i * hd, pos[i], K, V, kvs, hd, scale, ref);
        for (int j = 0; j < hd; j++) {
            double err = fabs(O[(size_t)i * hd + j] - ref[j]);
            if (err > 2e-5 * (1 + fabs(ref[j])))
                fail_msg("%s hd %d query %d (pos %d) dim %d: got %.9g, float64 %.9g",
                         facet_cpu_level_name(facet_cpu()->level), hd, i, pos[i], j,
                         O[(size_t)i * hd + j], ref[j]);
        }
        facet_attention_causal(Q + (size_t)i * hd, (size_t)hd, &pos[i], 1, K, V, (size_t)kvs, hd,
                               scale, o1, (size_t)hd, scratch);
        assert_memory_equal(o1, O + (size_t)i * hd, sizeof(float) * (size_t)hd);
    }
    free(K);
    free(V);
    free(Q);
    free(O);
    free(o1);
    free(scratch);
    free(ref);
}

static void test_attention_paths(void **state) {
    (void)state;
    static const char *paths[] = {"scalar", "avx2", "avx512"};
    for (int p = 0; p < 3; p++) {
        if ((int)facet_cpu()->detected < p) continue;
        setenv("FACET_CPU", paths[p], 1);
        facet_cpu_refresh();
        run_path(128, 300, 1.0f);
        run_path(64, 65, 8.0f); /* peaked softmax, a block boundary at 64 */
        run_path(8, 7, 1.0f);   /* the bundled model's head_dim, one partial block */
        run_path(72, 200, 3.0f);
        run_path(256, 130, 2.0f);
        run_path(64, 300, 1.0f);
    }
    unsetenv("FACET_CPU");
    facet_cpu_refresh();
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_attention_paths)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
