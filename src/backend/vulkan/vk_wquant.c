/*
 * vk_wquant.c — the device layout of the quantized weight formats (the matmul shaders'
 * WFMT 3..8, read by shaders/weights.glsl): which variant a format runs as, the words of
 * one row, and a row of the host tensor written in that layout.
 *
 * Every variant is w = s[g] * c - m[g] for element k of group g = k / G of its row: a
 * float32 scale s (and min m: Q4_K, Q8M, K8) per group, small integer codes c. Row o
 * starts at word o * stride and holds, with ng = ceil(cols / G):
 *   ng float32 scales; (Q4_K, Q8M, K8) ng float32 mins; then the codes, zero past cols:
 *   VK_WQ_Q8  (G 32): c an int8, four per word, element k in byte k % 4 of word k / 4
 *                     (facet's int8 panels, GGUF Q8_0);            w = s * c
 *   VK_WQ_Q4  (G 32): q a nibble, eight per word, element k at bits 4 (k % 8) of word
 *                     k / 8 (facet's q4 panels, GGUF Q4_0);        w = s * (q - 8)
 *   VK_WQ_Q4K (G 32): q a nibble as Q4;  s = d * sc, m = dmin * mn of the sub-block
 *                     (GGUF Q4_K);                                 w = s * q - m
 *   VK_WQ_Q6K (G 16): q of 6 bits: its low 4 as Q4's nibbles (ng * 2 words), then its high
 *                     2 bits sixteen per word, element k at bits 2 (k % 16) of word k / 16
 *                     (ng words); s = d * sc (GGUF Q6_K);          w = s * (q - 32)
 *   VK_WQ_Q8M (G 32): c an int8 as Q8, with mins: GGUF Q4_1, Q5_1 (s = d, c = q, m = -min)
 *   VK_WQ_K8  (G 16): c an int8 as Q8, with mins: the other K types and IQ4_XS, from their
 *                     unpacked superblocks (quant_k_internal.h: s = d * sc, m = dmin * mn)
 * (GGUF Q5_0 and IQ4_NL are VK_WQ_Q8: c = q - 16, c = kvalues_iq4nl[q].)
 * The scales are the host's f16 fields widened (exact) or the K types' d * sc and dmin *
 * mn products, which float32 holds exactly (11 + 8 significant bits), and every s * c is
 * exact too, so the shaders' values are the host tensor's (facet_wtensor_row) bit for bit:
 * the one rounding of s * c - m is the CPU dequantizer's (quant_k.c dequant_sb,
 * quant_legacy.c's q * d + min). Bits a weight: Q8 9, Q4 5, Q4_K 6, Q6_K 8, Q8M 10, K8 12
 * (the codes padded to words, float32 scales): the other types are made runnable, not
 * compact.
 */
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/quant_k_internal.h"
#include "kernels/cpu/quant_kpanel.h"

int vk_wquant_variant(facet_wformat f) {
    switch (f) {
    case FACET_WF_Q8:
    case FACET_WF_GGUF_Q8_0: return VK_WQ_Q8;
    case FACET_WF_Q4:
    case FACET_WF_GGUF_Q4_0: return VK_WQ_Q4;
    case FACET_WF_GGUF_Q4_K: return VK_WQ_Q4K;
    case FACET_WF_GGUF_Q6_K: return VK_WQ_Q6K;
    case FACET_WF_GGUF_Q5_0:
    case FACET_WF_GGUF_IQ4_NL: return VK_WQ_Q8;
    case FACET_WF_GGUF_Q4_1:
    case FACET_WF_GGUF_Q5_1: return VK_WQ_Q8M;
    case FACET_WF_GGUF_Q2_K:
    case FACET_WF_GGUF_Q3_K:
    case FACET_WF_GGUF_Q5_K:
    case FACET_WF_GGUF_IQ4_XS: return VK_WQ_K8;
    default: return -1;
    }
}

static uint32_t group(int variant) { return variant == VK_WQ_Q6K || variant == VK_WQ_K8 ? 16u : 32u; }

uint64_t vk_wquant_stride(int variant, uint64_t cols) {
    uint64_t g = group(variant), ng = (cols + g - 1) / g;
    switch (variant) {
    case VK_WQ_Q8: return ng + ng * 8;          /* 32 int8 codes: 8 words            */
    case VK_WQ_Q4: return ng + ng * 4;          /* 32 nibbles: 4 words               */
    case VK_WQ_Q4K: return 2 * ng + ng * 4;     /* scales, mins, nibbles             */
    case VK_WQ_Q8M: return 2 * ng + ng * 8;     /* scales, mins, 32 int8             */
    case VK_WQ_K8: return 2 * ng + ng * 4;      /* scales, mins, 16 int8             */
    default: return ng + ng * 2 + ng;           /* Q6_K: 16 nibbles, 16 x 2 bits     */
    }
}

/* One row as groups: s[ng], m[ng] and the codes c[ng * G] (as stored: Q8 the int8's
 * bits, Q4 / Q4_K the nibble, Q6_K the 6-bit q), zeros past cols. */
typedef struct qrow {
    float *s, *m;
    uint8_t *c;
} qrow;

/* facet's q8 / q4 panels (matmul_internal.h): lane l of panel o / 16. */
static void panel_row(const facet_wtensor *W, int o, qrow *r) {
    int kp = facet_packed_kp(W->cols), l = o % FACET_PANEL, nb = kp / FACET_Q8_BLOCK;
    int q8 = W->format == FACET_WF_Q8;
    const uint8_t *panel = (const uint8_t *)W->data +
                           (size_t)(o / FACET_PANEL) * facet_panel_bytes(W->format, kp);
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = panel + (size_t)b * (q8 ? FACET_Q8_PBLOCK : FACET_Q4_PBLOCK);
        uint16_t h;
        memcpy(&h, blk + (q8 ? FACET_Q8_BLOCK * FACET_PANEL : FACET_Q8_BLOCK * FACET_PANEL / 2) +
                        l * 2, 2);
        r->s[b] = facet_f16_to_f32(h);
        for (int i = 0; i < FACET_Q8_BLOCK; i++) {
            uint8_t *c = &r->c[b * FACET_Q8_BLOCK + i];
            if (q8) {
                *c = (uint8_t)(blk[(size_t)(i / 4) * FACET_PANEL * 4 + l * 4 + i % 4] - 128);
            } else {
                uint8_t byte = blk[((i % 16) / 4) * 64 + l * 4 + i % 4];
                *c = i < 16 ? byte & 15 : byte >> 4;
            }
        }
    }
}

/* Row o of a GGUF block matrix in the file's layout: packed 1 as stored, packed 2 (K
 * panels) read back block by block. blk: room for one block. */
static const uint8_t *gguf_block(const facet_wtensor *W, int o, int b, uint8_t *blk) {
    const facet_qtype_traits *q = facet_qtype_traits_of((facet_qtype)facet_wformat_qtype(W->format));
    size_t nb = (size_t)W->cols / (size_t)q->block;
    if (W->packed != 2) return (const uint8_t *)W->data + ((size_t)o * nb + (size_t)b) * q->block_bytes;
    const uint8_t *grp = (const uint8_t *)W->data +
                         (size_t)(o / FACET_KPANEL_ROWS) * FACET_KPANEL_ROWS * nb * q->block_bytes;
    facet_kpanel_row_blocks((int)facet_wformat_qtype(W->format),
                            grp + (size_t)b * FACET_KPANEL_ROWS * q->block_bytes, q->block,
                            o % FACET_KPANEL_ROWS, blk);
    return blk;
}

static float f16_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return facet_f16_to_f32(h);
}

/* The blocks of 32 (quant.h): f16 d, (Q4_1, Q5_1) f16 min, (Q5_*) 4 bytes of fifth bits
 * (bit j of their little-endian word: element j's), then 32 int8 (Q8_0) or 16 bytes of
 * nibbles (element j < 16 the low nibble of byte j, j >= 16 the high one of j - 16). */
static void legacy_row(const facet_wtensor *W, int o, qrow *r) {
    facet_wformat f = W->format;
    int min = f == FACET_WF_GGUF_Q4_1 || f == FACET_WF_GGUF_Q5_1;
    int five = f == FACET_WF_GGUF_Q5_0 || f == FACET_WF_GGUF_Q5_1;
    uint8_t tmp[64];
    for (int b = 0; b < W->cols / 32; b++) {
        const uint8_t *blk = gguf_block(W, o, b, tmp), *qs = blk + 2 + 2 * min + 4 * five;
        uint32_t qh = 0;
        if (five) memcpy(&qh, blk + 2 + 2 * min, 4);
        r->s[b] = f16_at(blk);
        if (min) r->m[b] = -f16_at(blk + 2); /* w = d q + min = s c - m */
        for (int i = 0; i < 32; i++) {
            int q = f == FACET_WF_GGUF_Q8_0 ? (int8_t)qs[i] : i < 16 ? qs[i] & 15 : qs[i - 16] >> 4;
            if (five) q |= (int)((qh >> i) & 1) << 4;
            if (f == FACET_WF_GGUF_Q5_0) q -= 16;
            if (f == FACET_WF_GGUF_IQ4_NL) q = facet_kvalues_iq4nl[q];
            r->c[b * 32 + i] = (uint8_t)q; /* Q4_0: the nibble; the int8 variants: c's bits */
        }
    }
}

/* The superblocks of 256 through their unpacked form (quant_k_internal.h). */
static void ktype_row(const facet_wtensor *W, int o, qrow *r) {
    facet_wformat f = W->format;
    kq_unpack_fn unpack = f == FACET_WF_GGUF_Q2_K   ? facet_kq_unpack_q2_K
                          : f == FACET_WF_GGUF_Q3_K ? facet_kq_unpack_q3_K
                          : f == FACET_WF_GGUF_Q4_K ? facet_kq_unpack_q4_K
                          : f == FACET_WF_GGUF_Q5_K ? facet_kq_unpack_q5_K
                          : f == FACET_WF_GGUF_Q6_K ? facet_kq_unpack_q6_K
                                                    : facet_kq_unpack_iq4_xs;
    int k4 = f == FACET_WF_GGUF_Q4_K, k6 = f == FACET_WF_GGUF_Q6_K;
    uint8_t tmp[256];
    for (int b = 0; b < W->cols / 256; b++) {
        kq_sb u;
        unpack(gguf_block(W, o, b, tmp), &u);
        for (int g = 0; g < 16; g++) { /* Q4_K: sub-block j's scale is groups 2j and 2j + 1's */
            if (k4 && g % 2) continue;
            int at = b * (k4 ? 8 : 16) + (k4 ? g / 2 : g);
            r->s[at] = u.d * (float)u.sc[g];
            if (!k6) r->m[at] = u.dmin * (float)u.m[g];
        }
        for (int i = 0; i < 256; i++) r->c[b * 256 + i] = (uint8_t)(u.q[i] + (k6 ? 32 : 0));
    }
}

static void gguf_row(const facet_wtensor *W, int o, qrow *r) {
    if (facet_qtype_traits_of((facet_qtype)facet_wformat_qtype(W->format))->block == 256)
        ktype_row(W, o, r);
    else
        legacy_row(W, o, r);
}

void vk_wquant_row(const facet_wtensor *W, int variant, int o, uint32_t *out, float *scratch) {
    uint32_t G = group(variant), ng = ((uint32_t)W->cols + G - 1) / G;
    qrow r = {scratch, scratch + ng, (uint8_t *)(scratch + 2 * ng)};
    memset(r.c, 0, (size_t)ng * G);
    if (facet_wformat_qtype(W->format) >= 0) gguf_row(W, o, &r);
    else panel_row(W, o, &r);
    memcpy(out, r.s, ng * sizeof(float));
    uint32_t *codes = out + ng;
    if (variant == VK_WQ_Q4K || variant == VK_WQ_Q8M || variant == VK_WQ_K8) {
        memcpy(codes, r.m, ng * sizeof(float));
        codes += ng;
    }
    size_t n = (size_t)ng * G;
    if (variant == VK_WQ_Q8 || variant == VK_WQ_Q8M || variant == VK_WQ_K8) {
        memset(codes, 0, n);
        for (size_t k = 0; k < n; k++) codes[k / 4] |= (uint32_t)r.c[k] << (8 * (k % 4));
        return;
    }
    memset(codes, 0, n / 2); /* nibbles: the codes (Q6_K: their low 4 bits) */
    for (size_t k = 0; k < n; k++) codes[k / 8] |= (uint32_t)(r.c[k] & 15) << (4 * (k % 8));
    if (variant != VK_WQ_Q6K) return;
    uint32_t *hi = codes + n / 8;
    memset(hi, 0, n / 4);
    for (size_t k = 0; k < n; k++) hi[k / 16] |= (uint32_t)(r.c[k] >> 4) << (2 * (k % 16));
}

size_t vk_wquant_scratch_floats(int variant, int cols) {
    uint32_t G = group(variant), ng = ((uint32_t)cols + G - 1) / G;
    return 2 * (size_t)ng + ((size_t)ng * G + 3) / 4; /* s, m, the byte codes */
}
