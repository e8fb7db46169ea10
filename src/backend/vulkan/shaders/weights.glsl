// weights.glsl — reading a weight matrix stored as the Vulkan backend uploads it
// (vk_weights.c): row o at word o * wstride; WFMT (specialization constant 0)
// 0 float32 (one word per element), 1 bfloat16 and 2 IEEE half (two per word, element
// 2k in the low half). Exact: bf16 is the high half of a float32, unpackHalf2x16 exact.
layout(constant_id = 0) const int WFMT = 0;

// elements 2i and 2i + 1 of a row whose first word is at `base`
vec2 wpair(uint base, uint i) {
    if (WFMT == 0)
        return vec2(uintBitsToFloat(W[base + 2u * i]), uintBitsToFloat(W[base + 2u * i + 1u]));
    uint u = W[base + i];
    if (WFMT == 1) return vec2(uintBitsToFloat(u << 16), uintBitsToFloat(u & 0xffff0000u));
    return unpackHalf2x16(u);
}

// element i of a row whose first word is at `base`
float welt(uint base, uint i) {
    if (WFMT == 0) return uintBitsToFloat(W[base + i]);
    uint u = W[base + (i >> 1)];
    uint h = (i & 1u) != 0u ? (u >> 16) : (u & 0xffffu);
    if (WFMT == 1) return uintBitsToFloat(h << 16);
    return unpackHalf2x16(h).x;
}
