/*
 * quant_k_internal.h — what the K block types' kernel files (quant_k.c scalar,
 * quant_k_avx2.c, quant_k_avx512.c) share: the raw block structs and one superblock
 * unpacked to small integers.
 *
 * Every K type (and IQ4_XS) decodes element i of a 256 superblock to
 *     w[i] = (d * sc[g]) * q[i] - dmin * m[g],   g = i / 16
 * with q an int8, sc and m small integers per 16 elements (a 32-element sub-block
 * repeats its scale in both halves), and dmin = 0, m = 0 for the types without a min.
 * The dot with a Q8_K activation block (d_x, qs, bsums) is then, exactly in integers,
 *     d_x * (d * sum_g sc[g] * sum_{i in g} q[i] qs[i]  -  dmin * sum_g m[g] * bsums[g]).
 */
#ifndef FACET_KERNELS_QUANT_K_INTERNAL_H
#define FACET_KERNELS_QUANT_K_INTERNAL_H

#include <stdint.h>

#include "kernels/cpu/quant.h"

/* The file's blocks, field by field (ggml-common.h's order; quant.h gives the meaning). */
typedef struct kq_q2_K {
    uint8_t scales[16]; /* per 16: low nibble scale, high nibble min          */
    uint8_t qs[64];     /* 2-bit quants, 4 per byte                            */
    uint16_t d, dmin;   /* f16                                                 */
} kq_q2_K;
typedef struct kq_q3_K {
    uint8_t hmask[32];  /* bit j of hmask[t]: 3rd bit of element 32 j + t      */
    uint8_t qs[64];     /* low 2 bits                                          */
    uint8_t scales[12]; /* 16 x 6 bits, biased by 32                           */
    uint16_t d;
} kq_q3_K;
typedef struct kq_q4_K {
    uint16_t d, dmin;
    uint8_t scales[12]; /* 8 x 6-bit scale, 8 x 6-bit min, packed              */
    uint8_t qs[128];
} kq_q4_K;
typedef struct kq_q5_K {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qh[32];     /* bit j of qh[t]: 5th bit of element 32 j + t         */
    uint8_t qs[128];
} kq_q5_K;
typedef struct kq_q6_K {
    uint8_t ql[128];    /* low 4 bits                                          */
    uint8_t qh[64];     /* high 2 bits                                         */
    int8_t scales[16];
    uint16_t d;
} kq_q6_K;
typedef struct kq_iq4_xs {
    uint16_t d;
    uint16_t scales_h;  /* 2 high bits of each of the 8 sub-block scales        */
    uint8_t scales_l[4];/* 4 low bits, two per byte                             */
    uint8_t qs[128];    /* 4-bit indices into facet_kvalues_iq4nl              */
} kq_iq4_xs;

_Static_assert(sizeof(kq_q2_K) == 84, "block_q2_K is 84 bytes");
_Static_assert(sizeof(kq_q3_K) == 110, "block_q3_K is 110 bytes");
_Static_assert(sizeof(kq_q4_K) == 144, "block_q4_K is 144 bytes");
_Static_assert(sizeof(kq_q5_K) == 176, "block_q5_K is 176 bytes");
_Static_assert(sizeof(kq_q6_K) == 210, "block_q6_K is 210 bytes");
_Static_assert(sizeof(kq_iq4_xs) == 136, "block_iq4_xs is 136 bytes");

/* One superblock unpacked (see the top of this file). */
typedef struct kq_sb {
    float d, dmin;
    int16_t sc[16], m[16];
    int8_t q[256];
} kq_sb;

/* Unpack one block of the type at blk into *u (quant_k.c). */
typedef void (*kq_unpack_fn)(const void *blk, kq_sb *u);
void facet_kq_unpack_q2_K(const void *blk, kq_sb *u);
void facet_kq_unpack_q3_K(const void *blk, kq_sb *u);
void facet_kq_unpack_q4_K(const void *blk, kq_sb *u);
void facet_kq_unpack_q5_K(const void *blk, kq_sb *u);
void facet_kq_unpack_q6_K(const void *blk, kq_sb *u);
void facet_kq_unpack_iq4_xs(const void *blk, kq_sb *u);

/* Q4_K / Q5_K: the 8 six-bit scales and 8 six-bit mins of the 12 packed bytes. */
void facet_kq_scale_min_k4(const uint8_t *s12, uint8_t sc[8], uint8_t m[8]);

/* The SIMD dots (quant_k_avx2.c; quant_k_avx512.c: AVX-512 with VNNI, quant.h's
 * dot_avx512vnni), facet_qdot_fn signature. The K types have no AVX-512 path without
 * VNNI (dot_avx512 NULL): such CPUs run the AVX2 dots. */
void facet_kq_dot_q2_K_avx2(int n, float *s, const void *w, const void *x);
void facet_kq_dot_q3_K_avx2(int n, float *s, const void *w, const void *x);
void facet_kq_dot_q4_K_avx2(int n, float *s, const void *w, const void *x);
void facet_kq_dot_q5_K_avx2(int n, float *s, const void *w, const void *x);
void facet_kq_dot_q6_K_avx2(int n, float *s, const void *w, const void *x);
void facet_kq_dot_iq4_xs_avx2(int n, float *s, const void *w, const void *x);
void facet_kq_dot_q2_K_avx512vnni(int n, float *s, const void *w, const void *x);
void facet_kq_dot_q3_K_avx512vnni(int n, float *s, const void *w, const void *x);
void facet_kq_dot_q4_K_avx512vnni(int n, float *s, const void *w, const void *x);
void facet_kq_dot_q5_K_avx512vnni(int n, float *s, const void *w, const void *x);
void facet_kq_dot_q6_K_avx512vnni(int n, float *s, const void *w, const void *x);
void facet_kq_dot_iq4_xs_avx512vnni(int n, float *s, const void *w, const void *x);
/* several activation rows (facet_qdotx_fn) */
void facet_kq_dotx_q4_K_avx512vnni(int n, int nr, float *s, const void *w, const void *x, size_t xstride);
void facet_kq_dotx_q5_K_avx512vnni(int n, int nr, float *s, const void *w, const void *x, size_t xstride);
void facet_kq_dotx_q6_K_avx512vnni(int n, int nr, float *s, const void *w, const void *x, size_t xstride);
void facet_kq_dotr_q4_K_avx512vnni(int n, int rows, float *s, const void *w, size_t wstride, const void *x);
void facet_kq_dotr_q5_K_avx512vnni(int n, int rows, float *s, const void *w, size_t wstride, const void *x);
void facet_kq_dotr_q6_K_avx512vnni(int n, int rows, float *s, const void *w, size_t wstride, const void *x);
void facet_kq_dotx_q4_K_avx2(int n, int nr, float *s, const void *w, const void *x, size_t xstride);
void facet_kq_dotx_q5_K_avx2(int n, int nr, float *s, const void *w, const void *x, size_t xstride);
void facet_kq_dotx_q6_K_avx2(int n, int nr, float *s, const void *w, const void *x, size_t xstride);

#endif
