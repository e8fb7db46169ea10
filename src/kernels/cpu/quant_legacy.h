/*
 * quant_legacy.h — the 32-element GGUF block types' layouts (quant.h gives their
 * arithmetic), shared by their scalar/AVX2 kernels (quant_legacy.c) and their AVX-512
 * VNNI kernels (quant_legacy_avx512.c). Every block starts with its f16 scale d, so the
 * structs have no padding (their sizes are asserted).
 */
#ifndef FACET_KERNELS_QUANT_LEGACY_H
#define FACET_KERNELS_QUANT_LEGACY_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu/quant.h"

typedef struct { uint16_t d; uint8_t qs[16]; } facet_blk_q4_0;                 /* 18 B */
typedef struct { uint16_t d, m; uint8_t qs[16]; } facet_blk_q4_1;              /* 20 B */
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } facet_blk_q5_0;  /* 22 B */
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } facet_blk_q5_1; /* 24 B */
typedef struct { uint16_t d; int8_t qs[32]; } facet_blk_q8_0w;                 /* 34 B */
typedef struct { uint16_t d; uint8_t qs[16]; } facet_blk_iq4_nl;               /* 18 B */
/* MXFP4 (quant_mxfp4.c): E8M0 exponent e, then 16 B of E2M1 codes (as Q4_0's nibbles). */
typedef struct { uint8_t e; uint8_t qs[16]; } facet_blk_mxfp4;                 /* 17 B */

/* 2^(e - 128), half an E8M0 scale (exact for every e; quant_mxfp4.c). */
float facet_e8m0_half(uint8_t e);

/* The AVX-512 VNNI dots (quant_legacy_avx512.c): n elements, as facet_qdot_fn. */
void facet_dot_q4_0_avx512(int n, float *s, const void *w, const void *x);
void facet_dot_q4_1_avx512(int n, float *s, const void *w, const void *x);
void facet_dot_q5_0_avx512(int n, float *s, const void *w, const void *x);
void facet_dot_q5_1_avx512(int n, float *s, const void *w, const void *x);
void facet_dot_q8_0_avx512(int n, float *s, const void *w, const void *x);
void facet_dot_iq4_nl_avx512(int n, float *s, const void *w, const void *x);
/* Their several-row forms (quant.h facet_qdotx_fn): each row's sum the same bits as the
 * single-row dot gives it. */
void facet_dotx_q4_0_avx512(int n, int nr, float *s, const void *w, const void *x, size_t xs);
void facet_dotx_q4_1_avx512(int n, int nr, float *s, const void *w, const void *x, size_t xs);
void facet_dotx_q5_0_avx512(int n, int nr, float *s, const void *w, const void *x, size_t xs);
void facet_dotx_q5_1_avx512(int n, int nr, float *s, const void *w, const void *x, size_t xs);
void facet_dotx_q8_0_avx512(int n, int nr, float *s, const void *w, const void *x, size_t xs);
void facet_dotx_iq4_nl_avx512(int n, int nr, float *s, const void *w, const void *x, size_t xs);

#endif
