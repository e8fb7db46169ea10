/*
 * quant_k.c — the 256-element block types (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS): each
 * superblock unpacked to small integers (quant_k_internal.h), the row dequantizers, the
 * portable dot products against Q8_K activations, the Q8_K quantizer and the traits.
 * The SIMD dots are in quant_k_avx2.c and quant_k_avx512.c.
 *
 * Element order inside a superblock is ggml's (ggml-quants.c dequantize_row_*), stated
 * per type below as "element e = ..." so a reader can check it without that source.
 */
#include <math.h>
#include <string.h>

#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/quant_k_internal.h"

/* ggml's kvalues_iq4nl: the 16 values of IQ4_NL / IQ4_XS indices (quant.h). */
const int8_t facet_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                        1,    13,   25,  38,  53,  69,  89,  113};

/* Q2_K: element e = 128 h + 32 j + t (h < 2, j < 4, t < 32) is bits 2j..2j+1 of
 * qs[32 h + t]; scales[e / 16] holds its scale (low nibble) and min (high nibble). */
void facet_kq_unpack_q2_K(const void *blk, kq_sb *u) {
    const kq_q2_K *b = blk;
    u->d = facet_f16_to_f32(b->d);
    u->dmin = facet_f16_to_f32(b->dmin);
    for (int g = 0; g < 16; g++) {
        u->sc[g] = b->scales[g] & 0xF;
        u->m[g] = b->scales[g] >> 4;
    }
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++)
            for (int t = 0; t < 32; t++)
                u->q[128 * h + 32 * j + t] = (int8_t)((b->qs[32 * h + t] >> (2 * j)) & 3);
}

/* Q3_K: element e = 128 h + 32 j + t has low bits (qs[32 h + t] >> 2j) & 3 and, when bit
 * 4h + j of hmask[t] is clear, 4 subtracted. Scale e / 16 (s < 16) is 6 bits: the low 4
 * are the low nibble of scales[s] (s < 8) or the high nibble of scales[s - 8], the high
 * 2 are bits 2 (s / 4) .. 2 (s / 4) + 1 of scales[8 + s % 4]; minus 32. */
void facet_kq_unpack_q3_K(const void *blk, kq_sb *u) {
    const kq_q3_K *b = blk;
    u->d = facet_f16_to_f32(b->d);
    u->dmin = 0.0f;
    for (int s = 0; s < 16; s++) {
        int lo = s < 8 ? b->scales[s] & 0xF : b->scales[s - 8] >> 4;
        int hi = (b->scales[8 + s % 4] >> (2 * (s / 4))) & 3;
        u->sc[s] = (int16_t)((lo | hi << 4) - 32);
        u->m[s] = 0;
    }
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++)
            for (int t = 0; t < 32; t++) {
                int low = (b->qs[32 * h + t] >> (2 * j)) & 3;
                int high = (b->hmask[t] >> (4 * h + j)) & 1;
                u->q[128 * h + 32 * j + t] = (int8_t)(low - (high ? 0 : 4));
            }
}

/* Q4_K / Q5_K scales: sub-block j < 4 has scale s[j] & 63 and min s[j + 4] & 63; j >= 4
 * has scale (s[j + 4] & 15) | (s[j - 4] >> 6) << 4 and min (s[j + 4] >> 4) | (s[j] >> 6) << 4. */
void facet_kq_scale_min_k4(const uint8_t *s, uint8_t sc[8], uint8_t m[8]) {
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        m[j] = s[j + 4] & 63;
        sc[j + 4] = (uint8_t)((s[j + 8] & 15) | (s[j] >> 6) << 4);
        m[j + 4] = (uint8_t)((s[j + 8] >> 4) | (s[j + 4] >> 6) << 4);
    }
}

/* Q4_K: element e = 64 c + t (c < 4): t < 32 is the low nibble of qs[32 c + t] (sub-block
 * 2c), t >= 32 the high nibble of qs[32 c + t - 32] (sub-block 2c + 1). */
void facet_kq_unpack_q4_K(const void *blk, kq_sb *u) {
    const kq_q4_K *b = blk;
    uint8_t sc[8], m[8];
    u->d = facet_f16_to_f32(b->d);
    u->dmin = facet_f16_to_f32(b->dmin);
    facet_kq_scale_min_k4(b->scales, sc, m);
    for (int g = 0; g < 16; g++) {
        u->sc[g] = sc[g / 2];
        u->m[g] = m[g / 2];
    }
    for (int c = 0; c < 4; c++)
        for (int t = 0; t < 32; t++) {
            u->q[64 * c + t] = (int8_t)(b->qs[32 * c + t] & 0xF);
            u->q[64 * c + 32 + t] = (int8_t)(b->qs[32 * c + t] >> 4);
        }
}

/* Q5_K: as Q4_K, plus 16 when bit 2c (low nibble) or 2c + 1 (high nibble) of qh[t] is set. */
void facet_kq_unpack_q5_K(const void *blk, kq_sb *u) {
    const kq_q5_K *b = blk;
    uint8_t sc[8], m[8];
    u->d = facet_f16_to_f32(b->d);
    u->dmin = facet_f16_to_f32(b->dmin);
    facet_kq_scale_min_k4(b->scales, sc, m);
    for (int g = 0; g < 16; g++) {
        u->sc[g] = sc[g / 2];
        u->m[g] = m[g / 2];
    }
    for (int c = 0; c < 4; c++)
        for (int t = 0; t < 32; t++) {
            int lo = b->qs[32 * c + t] & 0xF, hi = b->qs[32 * c + t] >> 4;
            u->q[64 * c + t] = (int8_t)(lo + (((b->qh[t] >> (2 * c)) & 1) << 4));
            u->q[64 * c + 32 + t] = (int8_t)(hi + (((b->qh[t] >> (2 * c + 1)) & 1) << 4));
        }
}

/* Q6_K: element e = 128 h + 32 k + t (k < 4) takes 4 low bits from ql[64 h + t + 32 (k & 1)]
 * (low nibble for k < 2, high for k >= 2) and 2 high bits (qh[32 h + t] >> 2k) & 3;
 * minus 32; scale scales[e / 16] (int8). */
void facet_kq_unpack_q6_K(const void *blk, kq_sb *u) {
    const kq_q6_K *b = blk;
    u->d = facet_f16_to_f32(b->d);
    u->dmin = 0.0f;
    for (int g = 0; g < 16; g++) {
        u->sc[g] = b->scales[g];
        u->m[g] = 0;
    }
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
            for (int t = 0; t < 32; t++) {
                int l = b->ql[64 * h + t + 32 * (k & 1)];
                int low = k < 2 ? l & 0xF : l >> 4;
                int high = (b->qh[32 * h + t] >> (2 * k)) & 3;
                u->q[128 * h + 32 * k + t] = (int8_t)((low | high << 4) - 32);
            }
}

/* IQ4_XS: sub-block j (32 elements) has scale ((scales_l[j / 2] >> 4 (j % 2)) & 15) |
 * ((scales_h >> 2j) & 3) << 4, minus 32; its element t < 16 is kvalues[qs[16 j + t] & 15],
 * t >= 16 is kvalues[qs[16 j + t - 16] >> 4]. */
void facet_kq_unpack_iq4_xs(const void *blk, kq_sb *u) {
    const kq_iq4_xs *b = blk;
    u->d = facet_f16_to_f32(b->d);
    u->dmin = 0.0f;
    for (int j = 0; j < 8; j++) {
        int ls = ((b->scales_l[j / 2] >> (4 * (j % 2))) & 15) | ((b->scales_h >> (2 * j)) & 3) << 4;
        u->sc[2 * j] = u->sc[2 * j + 1] = (int16_t)(ls - 32);
        u->m[2 * j] = u->m[2 * j + 1] = 0;
        for (int t = 0; t < 16; t++) {
            u->q[32 * j + t] = facet_kvalues_iq4nl[b->qs[16 * j + t] & 15];
            u->q[32 * j + 16 + t] = facet_kvalues_iq4nl[b->qs[16 * j + t] >> 4];
        }
    }
}

/* w = (d * sc) * q - dmin * m, in that float order (ggml's dequantize_row_*). */
static void dequant_sb(const kq_sb *u, float *out) {
    for (int g = 0; g < 16; g++) {
        float dl = u->d * (float)u->sc[g], ml = u->dmin * (float)u->m[g];
        for (int i = 0; i < 16; i++) out[16 * g + i] = dl * (float)u->q[16 * g + i] - ml;
    }
}

static void dequant_row(kq_unpack_fn unpack, size_t bytes, const void *w, float *out, int64_t n) {
    const uint8_t *p = w;
    kq_sb u;
    for (int64_t b = 0; b < n / 256; b++) {
        unpack(p + (size_t)b * bytes, &u);
        dequant_sb(&u, out + 256 * b);
    }
}

/* The portable dot: exact integer sums per superblock, one float step per superblock. */
static void dot_row(kq_unpack_fn unpack, size_t bytes, int n, float *s, const void *w,
                    const void *x) {
    const uint8_t *p = w;
    const facet_blk_q8_K *y = x;
    kq_sb u;
    float sum = 0.0f;
    for (int b = 0; b < n / 256; b++) {
        unpack(p + (size_t)b * bytes, &u);
        int32_t isum = 0, msum = 0;
        for (int g = 0; g < 16; g++) {
            int32_t gs = 0;
            for (int i = 0; i < 16; i++) gs += (int32_t)u.q[16 * g + i] * y[b].qs[16 * g + i];
            isum += gs * u.sc[g];
            msum += (int32_t)u.m[g] * y[b].bsums[g];
        }
        sum += y[b].d * (u.d * (float)isum - u.dmin * (float)msum);
    }
    *s = sum;
}

#define KQ_TYPE(lower, NAME, id, bytes_, dotx2, dotx, dotr)                                       \
    _Static_assert(sizeof(kq_##lower) == (bytes_), #NAME " block size");                      \
    static void dequant_##lower(const void *w, float *out, int64_t n) {                       \
        dequant_row(facet_kq_unpack_##lower, bytes_, w, out, n);                              \
    }                                                                                         \
    static void dot_##lower(int n, float *s, const void *w, const void *x) {                  \
        dot_row(facet_kq_unpack_##lower, bytes_, n, s, w, x);                                 \
    }                                                                                         \
    const facet_qtype_traits facet_qt_##lower = {                                             \
        .name = NAME, .ggml_type = id, .block = 256, .block_bytes = bytes_,                   \
        .xkind = FACET_QX_Q8_K, .dequant_row = dequant_##lower, .dot_scalar = dot_##lower,    \
        .dot_avx2 = facet_kq_dot_##lower##_avx2, .dotx_avx2 = dotx2,                          \
        .dot_avx512vnni = facet_kq_dot_##lower##_avx512vnni, .dotx_avx512vnni = dotx,         \
        .dotr_avx512vnni = dotr,                                                              \
    };

/* ggml type ids (GGUF tensor info): Q2_K 10, Q3_K 11, Q4_K 12, Q5_K 13, Q6_K 14, IQ4_XS 23. */
KQ_TYPE(q2_K, "Q2_K", 10, 84, NULL, NULL, NULL)
KQ_TYPE(q3_K, "Q3_K", 11, 110, NULL, NULL, NULL)
KQ_TYPE(q4_K, "Q4_K", 12, 144, facet_kq_dotx_q4_K_avx2, facet_kq_dotx_q4_K_avx512vnni,
        facet_kq_dotr_q4_K_avx512vnni)
KQ_TYPE(q5_K, "Q5_K", 13, 176, facet_kq_dotx_q5_K_avx2, facet_kq_dotx_q5_K_avx512vnni,
        facet_kq_dotr_q5_K_avx512vnni)
KQ_TYPE(q6_K, "Q6_K", 14, 210, facet_kq_dotx_q6_K_avx2, facet_kq_dotx_q6_K_avx512vnni,
        facet_kq_dotr_q6_K_avx512vnni)
KQ_TYPE(iq4_xs, "IQ4_XS", 23, 136, NULL, NULL, NULL)

/* ggml's quantize_row_q8_K_ref: m = the element of largest magnitude (the first one on a
 * tie), iscale = -127 / m, qs = min(127, round-half-even(iscale * x)), d = 1 / iscale,
 * bsums the sums of 16; an all-zero block gives d = 0 and zeros. */
void facet_quantize_row_q8_K(const float *x, void *out, int64_t n) {
    facet_blk_q8_K *y = out;
    for (int64_t b = 0; b < n / 256; b++, x += 256) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 256; j++) {
            float a = fabsf(x[j]);
            if (a > amax) {
                amax = a;
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        float iscale = -127.0f / max;
        for (int j = 0; j < 256; j++) {
            float v = nearbyintf(iscale * x[j]);
            y[b].qs[j] = (int8_t)(v > 127.0f ? 127 : (int)v);
        }
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int i = 0; i < 16; i++) sum += y[b].qs[16 * g + i];
            y[b].bsums[g] = (int16_t)sum;
        }
        y[b].d = 1.0f / iscale;
    }
}

/* Q6_K from floats (facet's own quantizer, for --weights q4's output projection):
 * per group of 16 a float scale s chosen among 9 candidates -m / (32 + c / 4), c = -4..4
 * (m the element of largest magnitude, so m lands on or next to -32), each with q =
 * clamp(round(x / s), -32, 31) and its least-squares refit sum(x q) / sum(q q), the
 * smallest squared error winning; then d = max|s| / 127 (f16), sc = round(s / d) as
 * int8 and q recomputed with the stored scale d * sc. Element order as unpack_q6_K. */
static void q6_K_block(const float *x, kq_q6_K *b) {
    float s[16];
    for (int g = 0; g < 16; g++) {
        const float *v = x + 16 * g;
        float m = 0.0f, am = 0.0f;
        for (int i = 0; i < 16; i++)
            if (fabsf(v[i]) > am) am = fabsf(v[i]), m = v[i];
        s[g] = 0.0f;
        if (am == 0.0f) continue;
        float best = INFINITY;
        for (int c = -4; c <= 4; c++) {
            float is = -(32.0f + 0.25f * (float)c) / m, sxq = 0.0f, sqq = 0.0f;
            int8_t q[16];
            for (int i = 0; i < 16; i++) {
                float r = nearbyintf(is * v[i]);
                q[i] = (int8_t)(r < -32.0f ? -32 : r > 31.0f ? 31 : r);
                sxq += v[i] * q[i];
                sqq += (float)(q[i] * q[i]);
            }
            if (sqq == 0.0f) continue;
            float sc = sxq / sqq, e = 0.0f;
            for (int i = 0; i < 16; i++) e += (v[i] - sc * q[i]) * (v[i] - sc * q[i]);
            if (e < best) best = e, s[g] = sc;
        }
    }
    float ms = 0.0f;
    for (int g = 0; g < 16; g++) ms = fabsf(s[g]) > ms ? fabsf(s[g]) : ms;
    memset(b, 0, sizeof *b);
    b->d = facet_f32_to_f16(ms / 127.0f);
    float d = facet_f16_to_f32(b->d);
    int8_t q[256];
    for (int g = 0; g < 16; g++) {
        float r = d > 0.0f ? nearbyintf(s[g] / d) : 0.0f;
        b->scales[g] = (int8_t)(r < -128.0f ? -128 : r > 127.0f ? 127 : r);
        float ds = d * (float)b->scales[g];
        for (int i = 0; i < 16; i++) {
            float v = ds != 0.0f ? nearbyintf(x[16 * g + i] / ds) : 0.0f;
            q[16 * g + i] = (int8_t)(v < -32.0f ? -32 : v > 31.0f ? 31 : v);
        }
    }
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
            for (int t = 0; t < 32; t++) {
                int u = q[128 * h + 32 * k + t] + 32; /* 0..63 */
                uint8_t *l = &b->ql[64 * h + t + 32 * (k & 1)];
                *l |= (uint8_t)(k < 2 ? (u & 0xF) : (u & 0xF) << 4);
                b->qh[32 * h + t] |= (uint8_t)((u >> 4) << (2 * k));
            }
}

void facet_quantize_row_q6_K(const float *x, void *out, int64_t n) {
    for (int64_t b = 0; b < n / 256; b++) q6_K_block(x + 256 * b, (kq_q6_K *)out + b);
}
