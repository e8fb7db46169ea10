/*
 * ssm_scan.c — one token's step of Mamba-1's selective scan over 16 channels held in SIMD
 * lanes (kernels.h facet_ssm_scan16; mixer_mamba.c). Per state element n in order:
 *   e = exp(a_n dt)                      the decay, Cephes' expf polynomial (below)
 *   h_n = e h_n + dx B_n ;  y += h_n C_n
 * The decay: the argument clamped at -87 by its bits (a non-positive float's bits, as
 * int32, grow as it falls), v = k ln2 + r with k = trunc(v / ln2 - 0.5), e^r by the
 * polynomial, 2^k put in the exponent bits; within 8.1e-8 relative error of exp on
 * [-87, 0], e^-87 below. Every product and sum is rounded on its own (no fused
 * multiply-add) in the same order on the AVX-512 and the plain path, so both give the
 * same bits as a channel-by-channel loop.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/ukernel_gen.h"

#define C_LOG2E 1.44269504088896341f
#define C_LN2HI 0.693359375f
#define C_LN2LO -2.12194440e-4f

static FACET_TGT_AVX512 void scan16_avx512(float *h, float *y, const float *a,
                                           const float *dt, const float *dx, const float *B,
                                           const float *C, int N) {
    const __m512 dtv = _mm512_loadu_ps(dt), dxv = _mm512_loadu_ps(dx);
    const __m512i lim = _mm512_set1_epi32((int32_t)0xc2ae0000);
    __m512 acc = _mm512_setzero_ps();
    for (int k = 0; k < N; k++) {
        __m512 v = _mm512_mul_ps(_mm512_loadu_ps(a + k * 16), dtv);
        v = _mm512_castsi512_ps(_mm512_min_epi32(_mm512_castps_si512(v), lim));
        __m512i ki = _mm512_cvttps_epi32(
            _mm512_sub_ps(_mm512_mul_ps(v, _mm512_set1_ps(C_LOG2E)), _mm512_set1_ps(0.5f)));
        __m512 kf = _mm512_cvtepi32_ps(ki);
        __m512 r = _mm512_sub_ps(_mm512_sub_ps(v, _mm512_mul_ps(kf, _mm512_set1_ps(C_LN2HI))),
                                 _mm512_mul_ps(kf, _mm512_set1_ps(C_LN2LO)));
        __m512 p = _mm512_set1_ps(1.9875691500e-4f);
        p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.3981999507e-3f));
        p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(8.3334519073e-3f));
        p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(4.1665795894e-2f));
        p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.6666665459e-1f));
        p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(5.0000001201e-1f));
        p = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(p, r), r), r),
                          _mm512_set1_ps(1.0f));
        __m512 two_k = _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_add_epi32(ki, _mm512_set1_epi32(127)), 23));
        __m512 e = _mm512_mul_ps(p, two_k);
        __m512 hv = _mm512_add_ps(_mm512_mul_ps(e, _mm512_loadu_ps(h + k * 16)),
                                  _mm512_mul_ps(dxv, _mm512_set1_ps(B[k])));
        _mm512_storeu_ps(h + k * 16, hv);
        acc = _mm512_add_ps(acc, _mm512_mul_ps(hv, _mm512_set1_ps(C[k])));
    }
    _mm512_storeu_ps(y, acc);
}

void facet_ssm_scan16(float *h, float *y, const float *a, const float *dt, const float *dx,
                      const float *B, const float *C, int N) {
    if (facet_cpu()->level == FACET_CPU_AVX512) {
        scan16_avx512(h, y, a, dt, dx, B, C, N);
        return;
    }
    for (int c = 0; c < 16; c++) y[c] = 0.0f;
    for (int k = 0; k < N; k++)
        for (int c = 0; c < 16; c++) {
            float v = a[k * 16 + c] * dt[c];
            int32_t ib;
            memcpy(&ib, &v, sizeof ib);
            ib = ib > (int32_t)0xc2ae0000 ? (int32_t)0xc2ae0000 : ib;
            memcpy(&v, &ib, sizeof v);
            int32_t ki = (int32_t)(v * C_LOG2E - 0.5f);
            float kf = (float)ki;
            float r = v - kf * C_LN2HI - kf * C_LN2LO;
            float p = 1.9875691500e-4f;
            p = p * r + 1.3981999507e-3f;
            p = p * r + 8.3334519073e-3f;
            p = p * r + 4.1665795894e-2f;
            p = p * r + 1.6666665459e-1f;
            p = p * r + 5.0000001201e-1f;
            p = p * r * r + r + 1.0f;
            int32_t bits = (ki + 127) * (1 << 23);
            float two_k;
            memcpy(&two_k, &bits, sizeof two_k);
            float hv = p * two_k * h[k * 16 + c] + dx[c] * B[k];
            h[k * 16 + c] = hv;
            y[c] += hv * C[k];
        }
}
