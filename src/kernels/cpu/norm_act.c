/*
 * norm_act.c — the classic decoders' row kernels (issue 28): LayerNorm and the
 * activation of an ungated MLP. Plain C; each row's arithmetic is fixed (no dependence
 * on threads or batching).
 */
#include <math.h>

#include "kernels/cpu/kernels.h"

void facet_layernorm(float *y, const float *x, const float *w, const float *b, int n,
                     double eps) {
    /* mean and variance in double (two passes: the variance of centred values, as
     * torch's LayerNorm computes it, without cancellation) */
    double sum = 0;
    for (int i = 0; i < n; i++) sum += x[i];
    double mean = sum / n, var = 0;
    for (int i = 0; i < n; i++) {
        double d = x[i] - mean;
        var += d * d;
    }
    float inv = (float)(1.0 / sqrt(var / n + eps)), mu = (float)mean;
    for (int i = 0; i < n; i++) {
        float v = (x[i] - mu) * inv;
        if (w) v *= w[i];
        if (b) v += b[i];
        y[i] = v;
    }
}

void facet_act_row(float *x, int n, int act) {
    for (int i = facet_act_row_vec(x, n, act); i < n; i++) {
        float g = x[i];
        switch (act) {
        case 1: { /* gelu_pytorch_tanh, gelu_new, gelu_fast */
            float c = 0.7978845608028654f; /* sqrt(2/pi) */
            x[i] = 0.5f * g * (1.0f + tanhf(c * (g + 0.044715f * g * g * g)));
            break;
        }
        case 2: x[i] = 0.5f * g * (1.0f + erff(g * 0.7071067811865476f)); break; /* gelu (erf) */
        case 3: x[i] = g > 0.0f ? g * g : 0.0f; break;                            /* relu2 */
        default: x[i] = g / (1.0f + expf(-g)); break;                            /* silu */
        }
    }
}
