/*
 * quant_kpanel.c — Q4_K / Q6_K panels (quant_kpanel.h): the repack at load, a row back in
 * the file's blocks, and the portable kernel, which defines the arithmetic every path
 * reproduces bit for bit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/quant_k_internal.h"
#include "kernels/cpu/quant_kpanel.h"

enum { P = FACET_KPANEL_ROWS, Q4P = 16 * 144, Q6P = 16 * 210 };
enum { Q4_D = 0, Q4_DMIN = 32, Q4_S = 64, Q4_QS = 256 };
/* Q6_K: group g's two low-nibble chunks and its high-bit chunk are 192 bytes together */
enum { Q6_D = 0, Q6_SC = 32, Q6_QL = 288, Q6_QH = 288 + 128, Q6_G = 192 };

int facet_kpanel_fits(int t, int rows, int cols) {
    return (t == FACET_QT_Q4_K || t == FACET_QT_Q6_K) && rows > 0 && cols > 0 && rows % P == 0 &&
           cols % 256 == 0;
}

/* element e (0..255) of a block: Q4_K code 0..15, Q6_K code 0..63 (before the -32) */
static int q4k_code(const kq_q4_K *b, int e) {
    int c = e / 64, t = e % 64;
    return t < 32 ? b->qs[32 * c + t] & 0xF : b->qs[32 * c + t - 32] >> 4;
}

static void q4k_set(kq_q4_K *b, int e, int q) {
    int c = e / 64, t = e % 64;
    if (t < 32) b->qs[32 * c + t] = (uint8_t)((b->qs[32 * c + t] & 0xF0) | q);
    else b->qs[32 * c + t - 32] = (uint8_t)((b->qs[32 * c + t - 32] & 0x0F) | q << 4);
}

static void q6k_set(kq_q6_K *b, int e, int q) {
    int h = e / 128, k = (e % 128) / 32, t = e % 32;
    uint8_t *l = &b->ql[64 * h + t + 32 * (k & 1)];
    *l = (uint8_t)(k < 2 ? (*l & 0xF0) | (q & 0xF) : (*l & 0x0F) | (q & 0xF) << 4);
    uint8_t *hb = &b->qh[32 * h + t];
    *hb = (uint8_t)((*hb & ~(3 << (2 * k))) | ((q >> 4) & 3) << (2 * k));
}

/* one superblock of 16 rows (blk[l] = row l's block) into panel bytes p. Sub-block j's
 * 32 elements are the low (j even) or high (j odd) nibbles of qs[32 (j / 2) ..][0..32). */
static void pack_q4k(const kq_q4_K *const *blk, uint8_t *p) {
    for (int l = 0; l < P; l++) {
        const kq_q4_K *b = blk[l];
        memcpy(p + Q4_D + 2 * l, &b->d, 2);
        memcpy(p + Q4_DMIN + 2 * l, &b->dmin, 2);
        for (int w = 0; w < 3; w++) memcpy(p + Q4_S + 64 * w + 4 * l, b->scales + 4 * w, 4);
        for (int j = 0; j < 8; j++) { /* 4 bytes at a time */
            const uint8_t *q = b->qs + 32 * (j / 2);
            int sh = 4 * (j & 1);
            uint8_t *dst = p + Q4_QS + 4 * j * 64 + 4 * l;
            for (int i = 0; i < 4; i++) {
                uint32_t a, c;
                memcpy(&a, q + 4 * i, 4);
                memcpy(&c, q + 16 + 4 * i, 4);
                uint32_t v = ((a >> sh) & 0x0F0F0F0Fu) | ((c >> sh) & 0x0F0F0F0Fu) << 4;
                memcpy(dst + 64 * i, &v, 4);
            }
        }
    }
}

static void unpack_q4k(const uint8_t *p, int l, kq_q4_K *b) {
    memcpy(&b->d, p + Q4_D + 2 * l, 2);
    memcpy(&b->dmin, p + Q4_DMIN + 2 * l, 2);
    for (int w = 0; w < 3; w++) memcpy(b->scales + 4 * w, p + Q4_S + 64 * w + 4 * l, 4);
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 4; i++)
            for (int e = 0; e < 4; e++) {
                uint8_t v = p[Q4_QS + (4 * j + i) * 64 + 4 * l + e];
                q4k_set(b, 32 * j + 4 * i + e, v & 0xF);
                q4k_set(b, 32 * j + 16 + 4 * i + e, v >> 4);
            }
}

static void pack_q6k(const kq_q6_K *const *blk, uint8_t *p) {
    for (int l = 0; l < P; l++) {
        const kq_q6_K *b = blk[l];
        memcpy(p + Q6_D + 2 * l, &b->d, 2);
        for (int pp = 0; pp < 8; pp++) {
            p[Q6_SC + 32 * pp + 2 * l] = (uint8_t)b->scales[2 * pp];
            p[Q6_SC + 32 * pp + 2 * l + 1] = (uint8_t)b->scales[2 * pp + 1];
        }
        uint32_t q[64]; /* the 256 codes (0..63), 4 a word, in element order */
        for (int h = 0; h < 2; h++) /* quant_k.c facet_kq_unpack_q6_K's order */
            for (int k = 0; k < 4; k++)
                for (int t = 0; t < 32; t += 4) {
                    uint32_t lo, hi;
                    memcpy(&lo, b->ql + 64 * h + t + 32 * (k & 1), 4);
                    memcpy(&hi, b->qh + 32 * h + t, 4);
                    q[(128 * h + 32 * k + t) / 4] =
                        ((k < 2 ? lo : lo >> 4) & 0x0F0F0F0Fu) | ((hi >> (2 * k)) & 0x03030303u) << 4;
                }
        for (int g = 0; g < 16; g++) {
            uint8_t *dst = p + Q6_QL + g * Q6_G + 4 * l;
            const uint32_t *v = q + 4 * g; /* the group's 4 quads */
            for (int h = 0; h < 2; h++) {
                uint32_t w = (v[h] & 0x0F0F0F0Fu) | (v[2 + h] & 0x0F0F0F0Fu) << 4;
                memcpy(dst + 64 * h, &w, 4);
            }
            uint32_t w = ((v[0] >> 4) & 0x03030303u) | ((v[1] >> 4) & 0x03030303u) << 2 |
                         ((v[2] >> 4) & 0x03030303u) << 4 | ((v[3] >> 4) & 0x03030303u) << 6;
            memcpy(dst + 128, &w, 4);
        }
    }
}

static int q6_panel_code(const uint8_t *p, int l, int e) {
    int g = e / 16, k = (e % 16) / 4, i = e % 4; /* quad k of group g */
    uint8_t lo = p[Q6_QL + g * Q6_G + (k & 1) * 64 + 4 * l + i];
    int low = k < 2 ? lo & 0xF : lo >> 4;
    return low | ((p[Q6_QH + g * Q6_G + 4 * l + i] >> (2 * k)) & 3) << 4;
}

static void unpack_q6k(const uint8_t *p, int l, kq_q6_K *b) {
    memset(b, 0, sizeof *b);
    memcpy(&b->d, p + Q6_D + 2 * l, 2);
    for (int pp = 0; pp < 8; pp++) {
        b->scales[2 * pp] = (int8_t)p[Q6_SC + 32 * pp + 2 * l];
        b->scales[2 * pp + 1] = (int8_t)p[Q6_SC + 32 * pp + 2 * l + 1];
    }
    for (int e = 0; e < 256; e++) q6k_set(b, e, q6_panel_code(p, l, e));
}

int facet_kpanel_repack(int t, void *data, int rows, int cols) {
    if (!facet_kpanel_fits(t, rows, cols)) return -1;
    size_t bb = t == FACET_QT_Q4_K ? 144 : 210, nsb = (size_t)cols / 256, rb = nsb * bb;
    uint8_t *tmp = malloc(rb * P);
    if (!tmp) return -1;
    for (int r0 = 0; r0 < rows; r0 += P) {
        uint8_t *grp = (uint8_t *)data + (size_t)r0 * rb;
        memcpy(tmp, grp, rb * P);
        for (size_t sb = 0; sb < nsb; sb++) {
            const void *blk[P];
            for (int l = 0; l < P; l++) blk[l] = tmp + (size_t)l * rb + sb * bb;
            if (t == FACET_QT_Q4_K) pack_q4k((const kq_q4_K *const *)blk, grp + sb * bb * P);
            else pack_q6k((const kq_q6_K *const *)blk, grp + sb * bb * P);
        }
    }
    free(tmp);
    return 0;
}

void facet_kpanel_row_blocks(int t, const void *data, int cols, int row, void *out) {
    size_t bb = t == FACET_QT_Q4_K ? 144 : 210, nsb = (size_t)cols / 256;
    const uint8_t *grp = (const uint8_t *)data + (size_t)(row / P) * P * nsb * bb;
    for (size_t sb = 0; sb < nsb; sb++) {
        if (t == FACET_QT_Q4_K) unpack_q4k(grp + sb * bb * P, row % P, (kq_q4_K *)out + sb);
        else unpack_q6k(grp + sb * bb * P, row % P, (kq_q6_K *)out + sb);
    }
}

/* ---- the portable kernels: the arithmetic of quant_kpanel.h, row by row ---- */

void facet_kpanel_q4_K_scalar(int n, int nt, float *s, size_t ld, const void *w, const void *x,
                              size_t xstride) {
    float acc[FACET_QDOTX_MAX][P] = {{0}};
    const uint8_t *p = w;
    for (int sb = 0; sb < n / 256; sb++, p += Q4P)
        for (int l = 0; l < P; l++) {
            kq_q4_K b;
            uint8_t sc[8], m[8];
            unpack_q4k(p, l, &b);
            facet_kq_scale_min_k4(b.scales, sc, m);
            float dw = facet_f16_to_f32(b.d), dmw = facet_f16_to_f32(b.dmin);
            for (int t = 0; t < nt; t++) {
                const facet_blk_q8_K *y = (const facet_blk_q8_K *)((const uint8_t *)x + (size_t)t * xstride) + sb;
                int32_t tot = 0, msum = 0;
                for (int j = 0; j < 8; j++) {
                    int32_t isub = 0;
                    for (int e = 32 * j; e < 32 * j + 32; e++) isub += q4k_code(&b, e) * y->qs[e];
                    tot += isub * sc[j];
                    msum += m[j] * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
                }
                acc[t][l] = fmaf(dw * y->d, (float)tot, acc[t][l]);
                acc[t][l] = fmaf(-(dmw * y->d), (float)msum, acc[t][l]);
            }
        }
    for (int t = 0; t < nt; t++) memcpy(s + (size_t)t * ld, acc[t], sizeof acc[t]);
}

void facet_kpanel_q6_K_scalar(int n, int nt, float *s, size_t ld, const void *w, const void *x,
                              size_t xstride) {
    float acc[FACET_QDOTX_MAX][P] = {{0}};
    const uint8_t *p = w;
    for (int sb = 0; sb < n / 256; sb++, p += Q6P)
        for (int l = 0; l < P; l++) {
            uint16_t dh;
            memcpy(&dh, p + Q6_D + 2 * l, 2);
            float dw = facet_f16_to_f32(dh);
            int q[256];
            for (int e = 0; e < 256; e++) q[e] = q6_panel_code(p, l, e);
            for (int t = 0; t < nt; t++) {
                const facet_blk_q8_K *y = (const facet_blk_q8_K *)((const uint8_t *)x + (size_t)t * xstride) + sb;
                int32_t tot = 0, corr = 0;
                for (int g = 0; g < 16; g++) {
                    int sc = (int8_t)p[Q6_SC + 32 * (g / 2) + 2 * l + g % 2];
                    int32_t isub = 0;
                    for (int e = 16 * g; e < 16 * g + 16; e++) isub += q[e] * y->qs[e];
                    tot += isub * sc;
                    corr += sc * y->bsums[g];
                }
                acc[t][l] = fmaf(dw * y->d, (float)(tot - 32 * corr), acc[t][l]);
            }
        }
    for (int t = 0; t < nt; t++) memcpy(s + (size_t)t * ld, acc[t], sizeof acc[t]);
}

facet_qpanel_fn facet_kpanel_scalar(int t) {
    return t == FACET_QT_Q4_K ? facet_kpanel_q4_K_scalar : t == FACET_QT_Q6_K ? facet_kpanel_q6_K_scalar : NULL;
}

facet_qpanel_fn facet_kpanel_avx512vnni(int t) {
    return t == FACET_QT_Q4_K   ? facet_kpanel_q4_K_avx512vnni
           : t == FACET_QT_Q6_K ? facet_kpanel_q6_K_avx512vnni
                                : NULL;
}
