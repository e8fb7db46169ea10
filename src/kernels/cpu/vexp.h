/*
 * vexp.h — e^x in 16 AVX-512 lanes for x <= 0 (softmax, sigmoid), shared by the
 * attention kernel and the activations.
 */
#ifndef FACET_KERNELS_VEXP_H
#define FACET_KERNELS_VEXP_H

#include <immintrin.h>

#include "kernels/cpu/ukernel_gen.h"

/*
 * e^x for x <= 0 in 16 lanes: x = n ln2 + r with |r| <= ln2/2 (ln2 split in a high part
 * exact in float and a low part, Cody & Waite), e^r by its Taylor series to degree 7
 * (truncation < 3e-9 relative), times 2^n with vscalefps, which also takes n < -126
 * gracefully down to 0. Within 2 ulp of expf; -inf gives 0.
 */
static inline FACET_TGT_AVX512 __m512 exp_neg_avx512(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f)); /* e^-104 is below the smallest float */
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

#endif
