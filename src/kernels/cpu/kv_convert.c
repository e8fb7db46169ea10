/*
 * kv_convert.c — KV cache rows between float32 and the cache's element type.
 *
 * Storing rounds to nearest even (bf16: float32's top 16 bits after rounding, NaN kept a
 * quiet NaN; f16: IEEE binary16, overflow to infinity, gradual underflow); loading widens
 * exactly. bf16 widens with a zero-extend and a shift (AVX-512 / AVX2 / scalar, the
 * same bits); f16 uses the F16C conversion instructions where the CPU has them (the same IEEE
 * rounding as facet_f32_to_f16) and the scalar converters otherwise.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/ukernel_gen.h"

static void bf16_store(const float *src, uint16_t *dst, int n) {
    for (int i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &src[i], 4);
        uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        dst[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : r);
    }
}

static void bf16_load(const uint16_t *src, float *dst, int n) {
    for (int i = 0; i < n; i++) {
        uint32_t u = (uint32_t)src[i] << 16;
        memcpy(&dst[i], &u, 4);
    }
}

static FACET_TGT_AVX512 void bf16_load_avx512(const uint16_t *src, float *dst, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + i)));
        _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
    }
    bf16_load(src + i, dst + i, n - i);
}

static FACET_TGT_AVX2 void bf16_load_avx2(const uint16_t *src, float *dst, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + i)));
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
    bf16_load(src + i, dst + i, n - i);
}

static FACET_TGT_AVX2 void f16_store_f16c(const float *src, uint16_t *dst, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) dst[i] = facet_f32_to_f16(src[i]);
}

static FACET_TGT_AVX2 void f16_load_f16c(const uint16_t *src, float *dst, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++) dst[i] = facet_f16_to_f32(src[i]);
}

void facet_kv_store_at(int level, const float *src, facet_kv_type type, void *dst, int n) {
    switch (type) {
    case FACET_KV_BF16: bf16_store(src, dst, n); return;
    case FACET_KV_F16:
        if (level >= FACET_CPU_AVX2) {
            f16_store_f16c(src, dst, n);
        } else {
            uint16_t *d = dst;
            for (int i = 0; i < n; i++) d[i] = facet_f32_to_f16(src[i]);
        }
        return;
    default: memcpy(dst, src, sizeof(float) * (size_t)n); return;
    }
}

void facet_kv_load_at(int level, const void *src, facet_kv_type type, float *dst, int n) {
    switch (type) {
    case FACET_KV_BF16: {
        if (level >= FACET_CPU_AVX512) bf16_load_avx512(src, dst, n);
        else if (level >= FACET_CPU_AVX2) bf16_load_avx2(src, dst, n);
        else bf16_load(src, dst, n);
        return;
    }
    case FACET_KV_F16:
        if (level >= FACET_CPU_AVX2) {
            f16_load_f16c(src, dst, n);
        } else {
            const uint16_t *s = src;
            for (int i = 0; i < n; i++) dst[i] = facet_f16_to_f32(s[i]);
        }
        return;
    default: memcpy(dst, src, sizeof(float) * (size_t)n); return;
    }
}

void facet_kv_store(const float *src, facet_kv_type type, void *dst, int n) {
    facet_kv_store_at(facet_cpu()->level, src, type, dst, n);
}

void facet_kv_load(const void *src, facet_kv_type type, float *dst, int n) {
    facet_kv_load_at(facet_cpu()->level, src, type, dst, n);
}

void facet_kv_round_at(int level, float *x, facet_kv_type type, int n) {
    if (type == FACET_KV_F32) return;
    uint16_t h[64];
    for (int i0 = 0; i0 < n; i0 += 64) {
        int k = n - i0 < 64 ? n - i0 : 64;
        facet_kv_store_at(level, x + i0, type, h, k);
        facet_kv_load_at(level, h, type, x + i0, k);
    }
}

void facet_kv_round(float *x, facet_kv_type type, int n) {
    facet_kv_round_at(facet_cpu()->level, x, type, n);
}

void facet_kv_store_strided(const float *src, facet_kv_type type, void *dst, int n, int stride) {
    switch (type) {
    case FACET_KV_BF16:
    case FACET_KV_F16: { /* rounded a group at a time as facet_kv_store, then scattered */
        uint16_t h[FACET_KV_GROUP];
        for (int i0 = 0; i0 < n; i0 += FACET_KV_GROUP) {
            int k = n - i0 < FACET_KV_GROUP ? n - i0 : FACET_KV_GROUP;
            facet_kv_store(src + i0, type, h, k);
            for (int i = 0; i < k; i++) ((uint16_t *)dst)[(size_t)(i0 + i) * stride] = h[i];
        }
        return;
    }
    default:
        for (int i = 0; i < n; i++) ((float *)dst)[(size_t)i * stride] = src[i];
        return;
    }
}

void facet_kv_load_strided(const void *src, facet_kv_type type, float *dst, int n, int stride) {
    switch (type) {
    case FACET_KV_BF16:
        for (int i = 0; i < n; i++) dst[i] = facet_bf16_to_f32(((const uint16_t *)src)[(size_t)i * stride]);
        return;
    case FACET_KV_F16:
        for (int i = 0; i < n; i++) dst[i] = facet_f16_to_f32(((const uint16_t *)src)[(size_t)i * stride]);
        return;
    default:
        for (int i = 0; i < n; i++) dst[i] = ((const float *)src)[(size_t)i * stride];
        return;
    }
}
