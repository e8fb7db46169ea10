/*
 * matmul_internal.h — packed weight layouts and the micro-kernel interface shared by
 * matmul.c (driver), wpack.c (packing) and the per-format kernels.
 *
 * Packed layout (every format): output rows are grouped in panels of FACET_PANEL = 16
 * rows (the last panel zero-padded), the input dim padded with zeros to Kp, a multiple of
 * 32. Panels are stored one after the other, `panel_bytes` apart; inside a panel:
 *   f32, f16:  element (lane l, k) at [k][16]         -> k * 16 + l
 *   bf16:      pairs of k interleaved [k/2][16][2]    -> (k/2 * 16 + l) * 2 + k % 2
 *   q8:        per block of 32 k: 32 x 16 bytes [k/4][16][4] holding w + 128 (unsigned),
 *              then 16 f16 scales (one per lane): FACET_Q8_PBLOCK = 544 bytes a block;
 *              w = (byte - 128) * scale.
 *   q4:        per block of 32 k: 4 chunks j of 64 bytes [j][16][4], byte (j, l, i) holding
 *              the 4-bit code q of k = 4j + i in its low nibble and of k = 16 + 4j + i in
 *              its high one, then 16 f16 scales d: FACET_Q4_PBLOCK = 288 bytes a block
 *              (4.5 bits a weight); w = d * (q - 8). A lane's 16 bytes of one block are
 *              GGUF Q4_0's qs of that row and block, byte for byte (element k in the low
 *              nibble of qs[k], k + 16 in the high one), so a Q4_0 tensor repacks without
 *              touching a nibble; the low nibbles of a chunk are the q8 layout of k quad
 *              j, the high ones of quad j + 4 (one vpdpbusd each).
 * So a weight panel is one sequential stream and a micro-kernel reads it once for all the
 * input rows of its tile: y[r][o] accumulates sequentially over k (blocks of 32 for q8),
 * the same order for every row count — a row's result never depends on its batch.
 */
#ifndef FACET_KERNELS_MATMUL_INTERNAL_H
#define FACET_KERNELS_MATMUL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu/kernels.h"

#define FACET_PANEL 16
#define FACET_KALIGN 32
#define FACET_Q8_BLOCK 32
#define FACET_Q8_PBLOCK (FACET_Q8_BLOCK * FACET_PANEL + FACET_PANEL * 2)
#define FACET_Q4_PBLOCK (FACET_Q8_BLOCK * FACET_PANEL / 2 + FACET_PANEL * 2)
#define FACET_TILE_LD 64 /* floats per row of a micro-kernel's output tile (<= 4 panels) */

/* Padded input dim and bytes of one panel for a format. */
int facet_packed_kp(int cols);
size_t facet_panel_bytes(facet_wformat f, int kp);

/* Activations prepared for a kernel (matmul.c): rows of Kp elements, zero-padded. */
typedef enum { FACET_X_F32, FACET_X_BF16, FACET_X_Q8 } facet_xkind;
typedef struct facet_xprep {
    const uint8_t *data;   /* row r at data + r * stride: float, bf16 or int8           */
    size_t stride;         /* bytes between rows                                         */
    const float *scale;    /* q8: [rows][nblk] activation scales                         */
    const int32_t *corr;   /* q8: [rows][nblk] -128 * sum of the block's int8 values
                            * (q4 kernels use corr / 16 = -8 * sum, exactly)             */
    int nblk;              /* q8: blocks per row (Kp / 32)                               */
} facet_xprep;

/*
 * A micro-kernel: for rows r0..r0+mr-1 of x and panels starting at W (np panels,
 * panel_bytes apart), over k in [k0, k1) (multiples of 32), tile[r][p*16 + l] =
 * (accumulate ? tile[r][p*16 + l] : 0) + sum_k x[r0 + r][k] * w[p*16 + l][k], tile rows
 * ld floats apart (the output rows themselves, or a FACET_TILE_LD scratch when the
 * last panel is partial). mr <= kernel's mr, np <= kernel's np.
 */
typedef void (*facet_ukernel_fn)(const facet_xprep *x, int r0, int mr, const uint8_t *W,
                                 size_t panel_bytes, int np, int k0, int k1, float *tile, int ld,
                                 int accumulate);

typedef struct facet_ukernel {
    const char *name;     /* e.g. "bf16-avx512bf16"                                     */
    facet_xkind xkind;    /* activation format it reads                                 */
    int mr, np;           /* largest tile: rows x panels                                */
    facet_ukernel_fn fn;
    int np1;              /* panels per call for a single row (0: np); decode streams     */
    int mr_many;          /* rows of the row tiles after a task's first (0: mr): the
                           * first tile streams the weights from memory and takes mr rows,
                           * the others read them from L2 in the kernel's most efficient
                           * tile for that                                               */
} facet_ukernel;

/* The kernel for a packed format on a CPU: the first of the format's candidates (closest
 * first) whose capability it has; facet_ukernel_select asks facet_cpu(). */
const facet_ukernel *facet_ukernel_for(facet_wformat f, const struct facet_cpu_info *cpu);
const facet_ukernel *facet_ukernel_select(facet_wformat f);

/* Kernels per format and path (NULL-free: every format has a scalar kernel). */
extern const facet_ukernel facet_uk_f32_scalar, facet_uk_f32_avx2, facet_uk_f32_avx512;
extern const facet_ukernel facet_uk_f16_scalar, facet_uk_f16_avx2, facet_uk_f16_avx512;
extern const facet_ukernel facet_uk_bf16_scalar, facet_uk_bf16_avx2, facet_uk_bf16_avx512bf16;
extern const facet_ukernel facet_uk_q8_scalar, facet_uk_q8_avx2, facet_uk_q8_avx512vnni;
extern const facet_ukernel facet_uk_q4_scalar, facet_uk_q4_avx2, facet_uk_q4_avx512vnni;

/* GGUF block formats (matmul_qblock.c). facet_qkernels_resolve fills k->qdot/qdotx/qpath for
 * a CPU; facet_qkernel_name names type qtype's path (0 scalar, 1 avx2, 2 avx512, 3 avx512
 * with VNNI: "Q4_0-avx2";
 * "none" for a type without kernels), facet_qkernel_best its best path on any CPU.
 * facet_qmatmul: Y[m] = X W[m]^T (+ bias[m]) for n_mats matrices of GGUF block formats
 * whose dots read one activation block kind (facet_qmatmul_fuses: Q4_K and Q6_K both read
 * Q8_K) and of one cols (kernels.h facet_matmul_multi's contract; NaN-filled Y when the
 * activation scratch cannot be had or a type has no kernels). facet_qmatmul_fuses(a, b):
 * formats a and b (GGUF block formats) read the same activation blocks. */
void facet_qkernels_resolve(facet_cpu_kernels *k, const struct facet_cpu_info *cpu);
const char *facet_qkernel_name(int qtype, int path);
const char *facet_qkernel_best(int qtype);
void facet_qmatmul(const facet_cpu_kernels *k, facet_pool *pool, int n_mats, float *const *Y,
                   const float *X, const facet_wtensor *const *W, const float *const *bias,
                   int n_rows);
int facet_qmatmul_fuses(facet_wformat a, facet_wformat b);

/* Scalar conversions (round to nearest even; NaN kept a NaN). */
uint16_t facet_f32_to_bf16(float x);
float facet_bf16_to_f32(uint16_t h);
uint16_t facet_f32_to_f16(float x);
float facet_f16_to_f32(uint16_t h);

/* x[0..n) -> bf16 with vcvtneps2bf16 (round to nearest even; like the instruction,
 * float32 subnormals become zero). For the AVX512-BF16 kernel's activations. */
void facet_x_to_bf16_avx512bf16(const float *x, uint16_t *out, int n);

/* Quantize one row of n (multiple of 32) floats to int8 blocks of 32: q[i] =
 * round_even(x[i] / scale[b]) with scale[b] = max|x| / 127 over the block (0 -> all 0),
 * corr[b] = -128 * sum of the block's q. */
void facet_q8_quantize_row(const float *x, int n, int8_t *q, float *scale, int32_t *corr);

/*
 * The q4 quantizer of one block: w[0..n) (n <= 32; zeros past n), every value finite.
 * With m the value of largest |w| (the first on ties), for each c of -9, -8.5, -8, -7.5,
 * -7, 7, 7.5, 8 in that order: d = f16(m / c), codes q_i = 8 + clamp(round_even(w_i *
 * (1 / d)), -8, 7), then the least-squares d' = f16(sum w_i (q_i - 8) / sum (q_i - 8)^2)
 * of those codes (skipped when that sum is 0 or d' is not finite) with its own codes; of
 * these candidates the first with the smallest sum (w_i - d (q_i - 8))^2 wins (sums in
 * double, element i into partial sum i % 8, reduced pairwise: the same bits on every
 * path). m = 0, or a d that rounds to 0 in f16: d = 0 and every code 8. The search lowers
 * the RMS error of N(0, 1) weights ~6% below Q4_0's single scale m / -8
 * (bench/RESULTS.md). Writes the 32 codes (0..15) to q and the f16 bits of d to *d.
 * Returns 0, or -1 when the block has a NaN or infinity or f16 cannot hold m / 7
 * (|m| > 7 * 65504).
 */
int facet_q4_quantize_block(const float *w, int n, uint8_t q[32], uint16_t *d);

#endif
