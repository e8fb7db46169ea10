/* sample.c — greedy choice and top log-probabilities. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "facet.h"

int32_t facet_sample_greedy(const float *logits, int n_vocab) {
    int32_t best = 0;
    for (int i = 1; i < n_vocab; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

int facet_logits_nonfinite(const float *logits, int n_vocab) {
    /* one branch-free pass over the bits (exponent all ones: NaN or +-inf; an integer OR
     * the compiler vectorizes), then the index only when something was found */
    uint32_t bad = 0;
    for (int i = 0; i < n_vocab; i++) {
        uint32_t u;
        memcpy(&u, &logits[i], 4);
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    if (!bad) return -1;
    for (int i = 0; i < n_vocab; i++)
        if (!isfinite(logits[i])) return i;
    return -1;
}

int facet_top_logprobs(const float *logits, int n_vocab, int k, int32_t *ids, double *logprobs) {
    if (k > n_vocab) k = n_vocab;
    if (k <= 0) return 0;
    double m = logits[0];
    for (int i = 1; i < n_vocab; i++)
        if (logits[i] > m) m = logits[i];
    double s = 0.0;
    for (int i = 0; i < n_vocab; i++) s += exp((double)logits[i] - m);
    double lse = m + log(s);
    /* partial selection: keep the k best in order (k is small) */
    int n = 0;
    for (int i = 0; i < n_vocab; i++) {
        double v = logits[i];
        if (n == k && v <= (double)logits[ids[n - 1]]) continue;
        int j = n < k ? n++ : k - 1;
        while (j > 0 && (double)logits[ids[j - 1]] < v) {
            ids[j] = ids[j - 1];
            j--;
        }
        ids[j] = i;
    }
    for (int i = 0; i < n; i++) logprobs[i] = (double)logits[ids[i]] - lse;
    return n;
}
