/*
 * quant.h — the GGUF (ggml) weight block types facet runs natively (issue 18): their
 * block layouts, the activation blocks each type's dot product reads, and per type its
 * row dequantizer and dot-product kernels.
 *
 * A quantized weight matrix [rows][cols] is kept as the file stores it: row r is
 * cols / block consecutive blocks (block_bytes each), rows one after the other (GGUF's
 * ne[0] = cols is the fastest axis). Nothing is widened at load, so decode reads the
 * file's bytes per weight.
 *
 * Layouts and arithmetic follow the GGUF specification and ggml's block definitions
 * (ggml-common.h, ggml-quants.c; read, not copied). All multi-byte fields little-endian;
 * "f16" is an IEEE half stored as uint16_t.
 *
 *   Q4_0   32: f16 d; 16 B qs (element j: low nibble of qs[j] for j < 16, high nibble of
 *              qs[j-16] above)                         w = d * (q - 8)
 *   Q4_1   32: f16 d, f16 m; 16 B qs (as Q4_0)          w = d * q + m
 *   Q5_0   32: f16 d; 4 B qh (bit j = 5th bit of element j); 16 B qs   w = d * (q - 16)
 *   Q5_1   32: f16 d, f16 m; 4 B qh; 16 B qs            w = d * q + m
 *   Q8_0   32: f16 d; 32 int8 qs                        w = d * q
 *   IQ4_NL 32: f16 d; 16 B qs (as Q4_0)                 w = d * kvalues_iq4nl[q]
 *   Q2_K  256: 16 B scales (low nibble scale, high nibble min, per 16), 64 B qs (2-bit),
 *              f16 d, f16 dmin                          w = d * sc * q - dmin * m
 *   Q3_K  256: 32 B hmask, 64 B qs (2-bit low), 12 B scales (16 x 6-bit, biased by 32),
 *              f16 d                                    w = d * (sc - 32) * (q - 4*!hbit)
 *   Q4_K  256: f16 d, f16 dmin, 12 B scales (8 x 6-bit scale + 8 x 6-bit min), 128 B qs
 *                                                       w = d * sc * q - dmin * m
 *   Q5_K  256: as Q4_K plus 32 B qh (5th bit)           w = d * sc * q - dmin * m
 *   Q6_K  256: 128 B ql, 64 B qh, 16 int8 scales, f16 d w = d * sc * (q - 32)
 *   IQ4_XS 256: f16 d, u16 scales_h, 4 B scales_l, 128 B qs
 *                                                       w = d * (ls - 32) * kvalues_iq4nl[q]
 *   MXFP4  32: E8M0 e; 16 B qs (as Q4_0)                w = kvalues_mxfp4[q] * 2^(e - 128)
 *              (kvalues_mxfp4: twice the E2M1 values; quant_mxfp4.c)
 * (the element order inside each K block is ggml's; see each kernel file.)
 *
 * Activations: before a matmul each row of X is quantized once into the block kind the
 * weight type's dot reads (ggml's vec_dot_type): Q8_0 for Q4_0, Q5_0, Q8_0, IQ4_NL and MXFP4;
 * Q8_1 for Q4_1 and Q5_1; Q8_K for the K types and IQ4_XS. The dot of one weight row with
 * one activation row is then integer products per block, scaled and summed in float.
 */
#ifndef FACET_KERNELS_QUANT_H
#define FACET_KERNELS_QUANT_H

#include <stddef.h>
#include <stdint.h>

/* The block types with kernels, in this order. */
typedef enum facet_qtype {
    FACET_QT_Q4_0, FACET_QT_Q4_1, FACET_QT_Q5_0, FACET_QT_Q5_1, FACET_QT_Q8_0,
    FACET_QT_IQ4_NL,
    FACET_QT_Q2_K, FACET_QT_Q3_K, FACET_QT_Q4_K, FACET_QT_Q5_K, FACET_QT_Q6_K,
    FACET_QT_IQ4_XS,
    FACET_QT_MXFP4, /* added last: the facet_wformat values before it stay */
    FACET_QT_COUNT
} facet_qtype;

/* Activation block kinds. */
typedef enum facet_qxkind { FACET_QX_Q8_0, FACET_QX_Q8_1, FACET_QX_Q8_K } facet_qxkind;

/* 32 activations as llama.cpp's x86 quantize_row_q8_0 (the CPU backend's, whose blocks
 * the corpus logits come from): amax = max|x|, d = f16(amax / 127), qs =
 * round-half-even(x * (127 / amax)) in float arithmetic (all-zero block: d = 0, qs = 0);
 * 34 bytes. (ggml's portable reference rounds x * (1 / d) half away from zero instead; the
 * two differ in rare last-bit cases.) */
typedef struct facet_blk_q8_0 {
    uint16_t d;
    int8_t qs[32];
} facet_blk_q8_0;

/* As q8_0 plus s = f16((amax / 127) * sum(qs)), for the types with a min (Q4_1, Q5_1);
 * 36 bytes. */
typedef struct facet_blk_q8_1 {
    uint16_t d, s;
    int8_t qs[32];
} facet_blk_q8_1;

/* 256 activations as ggml's quantize_row_q8_K: with m the element of largest magnitude
 * (the first on a tie), iscale = -127 / m, qs = min(127, round-half-even(iscale * x)),
 * d = 1 / iscale (float arithmetic), bsums[i] = sum of qs[16 i .. 16 i + 15]; an all-zero
 * block is d = 0 and zeros; 292 bytes. */
typedef struct facet_blk_q8_K {
    float d;
    int8_t qs[256];
    int16_t bsums[16];
} facet_blk_q8_K;

/* The dot product of one weight row (n elements, n a multiple of the type's block, in
 * the type's blocks) with one activation row (n elements in the type's activation
 * blocks): *s = sum_i w[i] * x[i] as the blocks' integer arithmetic gives it. */
typedef void (*facet_qdot_fn)(int n, float *s, const void *w, const void *x);

/* The same for nr (1..FACET_QDOTX_MAX) activation rows at x, x + xstride, ... (bytes):
 * s[r] = the dot of w with row r, equal to what the type's dot of the same path gives
 * for that row. Decodes each weight block once for all nr rows (prefill); a path whose
 * registers hold fewer rows (4: AVX2, the 32-element types) does them in passes. */
#define FACET_QDOTX_MAX 8
typedef void (*facet_qdotx_fn)(int n, int nr, float *s, const void *w, const void *x,
                               size_t xstride);

/* Several consecutive weight rows (wstride bytes apart) against one activation row x:
 * s[r] is, bit for bit, the same path's single-row dot of row r (a decode step's sweep
 * without a call, constant setup and reduction tail per row). rows >= 1. */
typedef void (*facet_qdotr_fn)(int n, int rows, float *s, const void *w, size_t wstride,
                               const void *x);

/* A panel of 16 weight rows (quant_kpanel.h: Q4_K and Q6_K repacked at load) against nt
 * (1..FACET_QDOTX_MAX) activation rows at x, x + xstride, ... (bytes): s[t * ld + l] =
 * the dot of panel row l (n elements) with activation row t. A row's value does not
 * depend on nt or on the rows beside it. */
typedef void (*facet_qpanel_fn)(int n, int nt, float *s, size_t ld, const void *w, const void *x,
                                size_t xstride);

/* What a block type is and the kernels it runs with. dot_avx2 / dot_avx512 are NULL
 * where the type has no such path (the next lower one runs); every path of a type gives
 * the same sums up to float summation order. */
typedef struct facet_qtype_traits {
    const char *name;         /* GGUF's spelling: "Q4_K"                                 */
    uint32_t ggml_type;       /* the id in GGUF tensor infos (io/gguf.h gguf_type)       */
    int block;                /* elements per block: 32 or 256                           */
    size_t block_bytes;       /* bytes per block                                         */
    facet_qxkind xkind;       /* the activation blocks its dot reads                     */
    /* w: n elements (multiple of block) of the type -> out: n floats, exactly the
     * format's value of each weight (float arithmetic as ggml's dequantize_row_*). */
    void (*dequant_row)(const void *w, float *out, int64_t n);
    facet_qdot_fn dot_scalar, dot_avx2, dot_avx512;
    /* AVX-512 with VNNI (vpdpbusd / vpdpwssd): runs in place of dot_avx512 where
     * facet_cpu()->avx512_vnni; NULL where the type has none (dot_avx512 runs). */
    facet_qdot_fn dot_avx512vnni;
    /* Several activation rows at once (facet_qdotx_fn), on the path of the same name;
     * NULL where the type has none (its single-row dot runs once per row). */
    facet_qdotx_fn dotx_avx2, dotx_avx512vnni;
    /* Several weight rows at once (facet_qdotr_fn) on the VNNI path; NULL where the type
     * has none (its single-row dot runs once per row). */
    facet_qdotr_fn dotr_avx512vnni;
} facet_qtype_traits;

/* Traits of type t (t < FACET_QT_COUNT), and the facet_qtype of a ggml type id (-1 for
 * a type without kernels). */
const facet_qtype_traits *facet_qtype_traits_of(facet_qtype t);
int facet_qtype_of_ggml(uint32_t ggml_type);

/* Nonzero when type t has its kernels (a dequantizer and at least the scalar dot): only
 * those run, and facet_qtype_of_ggml answers -1 for the others. */
int facet_qtype_runs(facet_qtype t);

/* "F32, F16, BF16, Q4_0, ...": the GGUF tensor types the engine runs, the block types in
 * facet_qtype order as the table has kernels for them (refusal messages). Static text. */
const char *facet_qtype_runnable_list(void);

/* Bytes of one activation block of a kind, and elements per block (32 or 256). */
size_t facet_qx_block_bytes(facet_qxkind k);
int facet_qx_block(facet_qxkind k);

/* Quantize n floats (a multiple of the kind's block) into activation blocks at out. */
void facet_quantize_row_q8_0(const float *x, void *out, int64_t n);
void facet_quantize_row_q8_1(const float *x, void *out, int64_t n);
void facet_quantize_row_q8_K(const float *x, void *out, int64_t n);
/* The quantizer of kind k (one of the three above). */
void facet_quantize_row_qx(facet_qxkind k, const float *x, void *out, int64_t n);

/* n floats (a multiple of 256) as Q6_K weight blocks at out: facet's own quantizer
 * (quant_k.c) for --weights q4's output projection. */
void facet_quantize_row_q6_K(const float *x, void *out, int64_t n);

/* The traits of each type (quant_legacy.c: the 32-element types; quant_k.c: the 256-
 * element ones). */
extern const facet_qtype_traits facet_qt_q4_0, facet_qt_q4_1, facet_qt_q5_0, facet_qt_q5_1,
    facet_qt_q8_0, facet_qt_iq4_nl;
extern const facet_qtype_traits facet_qt_q2_K, facet_qt_q3_K, facet_qt_q4_K, facet_qt_q5_K,
    facet_qt_q6_K, facet_qt_iq4_xs;
extern const facet_qtype_traits facet_qt_mxfp4; /* quant_mxfp4.c */

/* The 16 values IQ4_NL and IQ4_XS map a 4-bit index to (ggml's kvalues_iq4nl). */
extern const int8_t facet_kvalues_iq4nl[16];
/* The 16 values MXFP4 maps a 4-bit E2M1 code to: twice the code's value (ggml's
 * kvalues_mxfp4): 0, 1, 2, 3, 4, 6, 8, 12, then the same negated. */
extern const int8_t facet_kvalues_mxfp4[16];

#endif
