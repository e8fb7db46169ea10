// weights.glsl — reading a weight matrix stored as the Vulkan backend uploads it
// (vk_weights.c, vk_wquant.c): row o at word o * wstride; WFMT (specialization constant
// 0, vk_internal.h vk_wvariant) 0 float32 (one word per element), 1 bfloat16 and 2 IEEE
// half (two per word, element 2k in the low half); 3..8 quantized: per group of G
// elements a float32 scale s (and for 5, 7, 8 a min m) first, then the codes c,
// w = s * c - m. Exact: bf16 is the high half of a float32, unpackHalf2x16 exact, and
// s * c exact in float32 (the one rounding of - m is the CPU dequantizer's). The
// quantized rows' group count comes from p.K (the push constants of the including shader).
layout(constant_id = 0) const int WFMT = 0;

const uint QG = WFMT == 6 || WFMT == 8 ? 16u : 32u;             // elements per scale
const uint QMIN = WFMT == 5 || WFMT == 7 || WFMT == 8 ? 1u : 0u; // mins after the scales

// element k's code: 3, 7, 8 int8 (four per word), 4 nibble - 8, 5 nibble, 6 (low nibble |
// two high bits << 4) - 32; codes start at word cb, ng groups a row
float qcode(uint cb, uint ng, uint k) {
    if (WFMT == 3 || WFMT == 7 || WFMT == 8)
        return float(bitfieldExtract(int(W[cb + (k >> 2)]), int((k & 3u) * 8u), 8));
    uint q = (W[cb + (k >> 3)] >> ((k & 7u) * 4u)) & 15u;
    if (WFMT == 4) return float(int(q) - 8);
    if (WFMT == 5) return float(q);
    q |= ((W[cb + ng * 2u + (k >> 4)] >> ((k & 15u) * 2u)) & 3u) << 4;
    return float(int(q) - 32);
}

float qelt(uint base, uint k) {
    uint ng = (p.K + QG - 1u) / QG, g = k / QG;
    float w = uintBitsToFloat(W[base + g]) * qcode(base + ng * (1u + QMIN), ng, k);
    if (QMIN != 0u) w -= uintBitsToFloat(W[base + ng + g]);
    return w;
}

// elements 2i and 2i + 1 of a row whose first word is at `base`
vec2 wpair(uint base, uint i) {
    if (WFMT == 0)
        return vec2(uintBitsToFloat(W[base + 2u * i]), uintBitsToFloat(W[base + 2u * i + 1u]));
    if (WFMT >= 3) return vec2(qelt(base, 2u * i), qelt(base, 2u * i + 1u));
    uint u = W[base + i];
    if (WFMT == 1) return vec2(uintBitsToFloat(u << 16), uintBitsToFloat(u & 0xffff0000u));
    return unpackHalf2x16(u);
}

// element i of a row whose first word is at `base`
float welt(uint base, uint i) {
    if (WFMT == 0) return uintBitsToFloat(W[base + i]);
    if (WFMT >= 3) return qelt(base, i);
    uint u = W[base + (i >> 1)];
    uint h = (i & 1u) != 0u ? (u >> 16) : (u & 0xffffu);
    if (WFMT == 1) return uintBitsToFloat(h << 16);
    return unpackHalf2x16(h).x;
}
