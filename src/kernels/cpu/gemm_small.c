/*
 * gemm_small.c — C += A B on small float32 matrices in one thread (kernels.h
 * facet_gemm_f32_acc): the blocks of Mamba-2's SSD scan (mixer_mamba2.c). AVX-512: tiles
 * of 4 rows x 64 columns held in 16 registers, the columns past n masked; elsewhere a
 * plain loop. Every element is C[i][j] = fma(A[i][p], B[p][j], C[i][j]) for p = 0, 1, ..
 * k - 1 in order on both paths, so its bits do not depend on the tile it falls in, on m
 * or n, nor on the path.
 */
#include <immintrin.h>
#include <math.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/ukernel_gen.h"

/* rows [i0, i0 + MR) x columns [j0, j0 + 64) with masks mk[0..3] for the columns */
#define GEMM_TILE(MR)                                                                      \
    do {                                                                                   \
        __m512 acc[MR][4];                                                                 \
        for (int r = 0; r < (MR); r++)                                                     \
            for (int v = 0; v < 4; v++)                                                    \
                acc[r][v] = _mm512_maskz_loadu_ps(mk[v], C + (size_t)(i0 + r) * ldc + j0 + 16 * v); \
        for (int p = 0; p < k; p++) {                                                      \
            const float *b = B + (size_t)p * ldb + j0;                                     \
            __m512 b0 = _mm512_maskz_loadu_ps(mk[0], b), b1 = _mm512_maskz_loadu_ps(mk[1], b + 16); \
            __m512 b2 = _mm512_maskz_loadu_ps(mk[2], b + 32), b3 = _mm512_maskz_loadu_ps(mk[3], b + 48); \
            for (int r = 0; r < (MR); r++) {                                               \
                __m512 a = _mm512_set1_ps(A[(size_t)(i0 + r) * lda + p]);                  \
                acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);                             \
                acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);                             \
                acc[r][2] = _mm512_fmadd_ps(a, b2, acc[r][2]);                             \
                acc[r][3] = _mm512_fmadd_ps(a, b3, acc[r][3]);                             \
            }                                                                              \
        }                                                                                  \
        for (int r = 0; r < (MR); r++)                                                     \
            for (int v = 0; v < 4; v++)                                                    \
                _mm512_mask_storeu_ps(C + (size_t)(i0 + r) * ldc + j0 + 16 * v, mk[v], acc[r][v]); \
    } while (0)

static FACET_TGT_AVX512 void gemm_avx512(int m, int n, int k, const float *A, size_t lda,
                                         const float *B, size_t ldb, float *C, size_t ldc) {
    for (int j0 = 0; j0 < n; j0 += 64) {
        __mmask16 mk[4];
        for (int v = 0; v < 4; v++) {
            int left = n - j0 - 16 * v;
            mk[v] = left >= 16 ? (__mmask16)0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
        }
        int i0 = 0;
        for (; i0 + 4 <= m; i0 += 4) GEMM_TILE(4);
        switch (m - i0) {
        case 3: GEMM_TILE(3); break;
        case 2: GEMM_TILE(2); break;
        case 1: GEMM_TILE(1); break;
        default: break;
        }
    }
}

void facet_gemm_f32_acc(int m, int n, int k, const float *A, size_t lda, const float *B,
                        size_t ldb, float *C, size_t ldc) {
    if (m <= 0 || n <= 0 || k <= 0) return;
    if (facet_cpu()->level == FACET_CPU_AVX512) {
        gemm_avx512(m, n, k, A, lda, B, ldb, C, ldc);
        return;
    }
    for (int i = 0; i < m; i++) {
        float *c = C + (size_t)i * ldc;
        for (int p = 0; p < k; p++) {
            float a = A[(size_t)i * lda + p];
            const float *b = B + (size_t)p * ldb;
            for (int j = 0; j < n; j++) c[j] = fmaf(a, b[j], c[j]);
        }
    }
}
