/*
 * quant_kpanel.h — GGUF Q4_K and Q6_K matrices repacked at load into panels of 16 rows
 * (issue 18: their prefill). A K-type matrix in the file's layout is dotted row by row
 * (quant_k*.c): every weight row decodes its superblocks and pairs them with each
 * activation row through maddubs + vpdpwssd, ~17 instructions per row, superblock and
 * input row. In a panel the 16 rows' codes of 4 consecutive inputs sit side by side (64
 * bytes), so one vpdpbusd takes 4 inputs of 16 rows for one input row, the sub-block
 * scales are applied per 16 rows with one integer multiply per sub-block, and the codes
 * are unpacked once for a tile of up to 8 input rows: ~6 instructions per row,
 * superblock and input row.
 *
 * A panel holds the same bytes as its 16 rows of blocks (nothing is rounded; the fields
 * are only reordered). Per superblock sb of the 16 rows (rows r0..r0+15, one after the
 * other in sb order, 16 * block_bytes each):
 *   Q4_K (2304 B): f16 d[16]; f16 dmin[16]; u32 s0[16], s1[16], s2[16] (bytes 0-3, 4-7,
 *          8-11 of each row's 12 packed scale/min bytes); then 32 chunks of 64 bytes,
 *          chunk 4j + i (sub-block j < 8, i < 4) byte 4l + e holding row l's code of
 *          element 32j + 4i + e in its low nibble and of 32j + 16 + 4i + e in its high one.
 *   Q6_K (3360 B): f16 d[16]; int8 scales [8][16][2] (pair p of row l: scales 2p, 2p+1);
 *          then per group g < 16 of 16 elements 3 chunks of 64 bytes (one stream: split
 *          into a low-nibble and a high-bit region, the second stream missed the
 *          prefetcher and decode from memory ran at a quarter of the speed): chunk h < 2
 *          byte 4l + e holds the low 4 bits of element 16g + 4h + e | those of
 *          16g + 8 + 4h + e << 4, chunk 2 byte 4l + e the 2 high bits of elements
 *          16g + e, 16g + 4 + e, 16g + 8 + e, 16g + 12 + e at bits 0, 2, 4, 6.
 * (Element order as quant.h / quant_k.c define the blocks.)
 *
 * Arithmetic (every path, bit for bit): per output row, input row and superblock the
 * integer sums are exact,
 *   Q4_K: tot = sum_j sc[j] * sum_{e in j} q[e] x[e],  msum = sum_j m[j] * (bsums[2j] + bsums[2j+1])
 *   Q6_K: tot = sum_g sc[g] * sum_{e in g} q[e] x[e] - 32 * sum_g sc[g] * bsums[g]   (q in 0..63)
 * and meet the scales in float in superblock order:
 *   acc = fma(d * d_x, (float)tot, acc);  Q4_K then acc = fma(-(dmin * d_x), (float)msum, acc).
 * The same integers as the row dots; only the float summation differs from theirs (one
 * sum per superblock instead of 16 lanes).
 */
#ifndef FACET_KERNELS_QUANT_KPANEL_H
#define FACET_KERNELS_QUANT_KPANEL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu/quant.h"

#define FACET_KPANEL_ROWS 16

/* Nonzero when type t has panels and a [rows][cols] matrix of it can be repacked
 * (rows a multiple of 16, cols of 256). */
int facet_kpanel_fits(int t, int rows, int cols);

/* Repack data (rows x cols of type t, the file's layout) into panels in place. Returns 0,
 * -1 when the shape does not fit or scratch memory (16 rows) cannot be had. */
int facet_kpanel_repack(int t, void *data, int rows, int cols);

/* Row `row` of a panel-packed matrix back in the file's block layout: cols / 256 blocks
 * of type t written to out (the exact bytes the file held). */
void facet_kpanel_row_blocks(int t, const void *data, int cols, int row, void *out);

/* The kernels (facet_qpanel_fn, quant.h): the portable one (also every path's
 * reference) and AVX-512 VNNI; NULL for a type without panels. */
facet_qpanel_fn facet_kpanel_scalar(int t);
facet_qpanel_fn facet_kpanel_avx512vnni(int t);

void facet_kpanel_q4_K_scalar(int n, int nt, float *s, size_t ld, const void *w, const void *x, size_t xstride);
void facet_kpanel_q6_K_scalar(int n, int nt, float *s, size_t ld, const void *w, const void *x, size_t xstride);
void facet_kpanel_q4_K_avx512vnni(int n, int nt, float *s, size_t ld, const void *w, const void *x, size_t xstride);
void facet_kpanel_q6_K_avx512vnni(int n, int nt, float *s, size_t ld, const void *w, const void *x, size_t xstride);

#endif
