/* elementwise.c — norms, rotary embedding, softmax and activations. */
#include <math.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/vexp.h"

void facet_rmsnorm(float *y, const float *x, const float *w, int n, double eps, float offset) {
    /* the sum of squares in double over 8 interleaved lanes (x[i] goes to lane i % 8),
     * folded in a fixed order: eight independent add chains instead of one (it was ~3%
     * of an int8 prefill), the same bits whether or not the compiler vectorizes it
     * (each square is exact in double) */
    double lane[8] = {0};
    int i8 = n / 8 * 8;
    for (int i = 0; i < i8; i += 8)
        for (int l = 0; l < 8; l++) lane[l] += (double)x[i + l] * x[i + l];
    for (int i = i8; i < n; i++) lane[i - i8] += (double)x[i] * x[i];
    double ss = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    float inv = (float)(1.0 / sqrt(ss / n + eps));
    for (int i = 0; i < n; i++) y[i] = x[i] * inv * (offset + w[i]);
}

void facet_rope_apply(float *x, int n_heads, int head_dim, int rot, const float *cos,
                      const float *sin) {
    int half = rot / 2;
    for (int h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim;
        for (int i = 0; i < half; i++) {
            float a = v[i], b = v[i + half];
            v[i] = a * cos[i] - b * sin[i];
            v[i + half] = b * cos[i] + a * sin[i];
        }
    }
}

void facet_rope_pairs_apply(float *x, int n_heads, int head_dim, int rot, const float *cos,
                            const float *sin) {
    for (int h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim;
        for (int i = 0; i < rot / 2; i++) {
            float a = v[2 * i], b = v[2 * i + 1];
            v[2 * i] = a * cos[i] - b * sin[i];
            v[2 * i + 1] = b * cos[i] + a * sin[i];
        }
    }
}

void facet_softmax(float *x, int n) {
    float m = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > m) m = x[i];
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - m);
        s += x[i];
    }
    float inv = (float)(1.0 / s);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

/* SiLU-gated product in 16 AVX-512 lanes: sigmoid(g) = 1 / (1 + e^-g) for g >= 0 and
 * e^g / (1 + e^g) otherwise, so only e^x of x <= 0 is needed (vexp.h, within 2 ulp of
 * expf); up NULL: the activation alone (an ungated MLP); returns the elements done (a
 * multiple of 16). */
static FACET_TGT_AVX512 int silu_avx512(float *gate, const float *up, int n) {
    int i = 0;
    const __m512 one = _mm512_set1_ps(1.0f);
    for (; i + 16 <= n; i += 16) {
        __m512 g = _mm512_loadu_ps(gate + i);
        __m512 e = exp_neg_avx512(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(g)));
        __mmask16 pos = _mm512_cmp_ps_mask(g, _mm512_setzero_ps(), _CMP_GE_OQ);
        __m512 sig = _mm512_div_ps(_mm512_mask_blend_ps(pos, e, one), _mm512_add_ps(one, e));
        __m512 a = _mm512_mul_ps(g, sig);
        _mm512_storeu_ps(gate + i, up ? _mm512_mul_ps(a, _mm512_loadu_ps(up + i)) : a);
    }
    return i;
}

/* gelu_pytorch_tanh-gated product in 16 AVX-512 lanes: 0.5 g (1 + tanh(u)) with
 * u = sqrt(2/pi) (g + 0.044715 g^3) is g sigmoid(2u), the sigmoid as in silu_avx512;
 * returns the elements done (a multiple of 16). (The scalar form's 1 + tanh(u) cancels
 * for negative g; this one does not.) */
static FACET_TGT_AVX512 int gelu_tanh_avx512(float *gate, const float *up, int n) {
    int i = 0;
    const __m512 one = _mm512_set1_ps(1.0f), c2 = _mm512_set1_ps(2.0f * 0.7978845608028654f);
    const __m512 k = _mm512_set1_ps(0.044715f);
    for (; i + 16 <= n; i += 16) {
        __m512 g = _mm512_loadu_ps(gate + i);
        __m512 z = _mm512_mul_ps(c2, _mm512_fmadd_ps(_mm512_mul_ps(k, g), _mm512_mul_ps(g, g), g));
        __m512 e = exp_neg_avx512(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(z)));
        __mmask16 pos = _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_GE_OQ);
        __m512 sig = _mm512_div_ps(_mm512_mask_blend_ps(pos, e, one), _mm512_add_ps(one, e));
        __m512 a = _mm512_mul_ps(g, sig);
        _mm512_storeu_ps(gate + i, up ? _mm512_mul_ps(a, _mm512_loadu_ps(up + i)) : a);
    }
    return i;
}

int facet_act_row_vec(float *x, int n, int act) {
    int level = facet_cpu()->level;
    if (act == 0 && level == FACET_CPU_AVX512) return silu_avx512(x, NULL, n);
    if (act == 1 && level == FACET_CPU_AVX512) return gelu_tanh_avx512(x, NULL, n);
    return 0;
}

void facet_gated_act(float *gate, const float *up, int n, int act) {
    facet_gated_act_at(facet_cpu()->level, gate, up, n, act);
}

void facet_gated_act_at(int level, float *gate, const float *up, int n, int act) {
    int i = 0;
    if (act == 0 && level == FACET_CPU_AVX512) i = silu_avx512(gate, up, n);
    if (act == 1 && level == FACET_CPU_AVX512) i = gelu_tanh_avx512(gate, up, n);
    for (; i < n; i++) {
        float g = gate[i], a;
        switch (act) {
        case 1: { /* gelu_pytorch_tanh */
            float c = 0.7978845608028654f; /* sqrt(2/pi) */
            a = 0.5f * g * (1.0f + tanhf(c * (g + 0.044715f * g * g * g)));
            break;
        }
        case 2: a = 0.5f * g * (1.0f + erff(g * 0.7071067811865476f)); break;
        case 3: a = g > 0.0f ? g * g : 0.0f; break; /* relu2 */
        default: a = g / (1.0f + expf(-g)); break;
        }
        gate[i] = a * up[i];
    }
}
