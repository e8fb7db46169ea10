#version 450
// attention_kv.comp — attention.comp over one sequence's keys and values read in place
// from its KV cache buffers (kv_cache.h layout: keys [nkv][rows / 16][hd][16], values
// [nkv][rows][hd], elements float32 or bf16 (two to a 32-bit word, the even one low);
// position kp at row kp, or kp % ring_cap on a ring layer). One dispatch per sequence
// group: workgroup (h, i) is query head h of the group's entry meta[4 (slot0 + i)].
// Scores, max, sum and the weighted values in three passes, float32 accumulation, the
// same arithmetic order as attention.comp.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer QB { float Q[]; };
layout(std430, binding = 1) readonly buffer KB { uint K[]; };
layout(std430, binding = 2) readonly buffer VB { uint V[]; };
layout(std430, binding = 3) readonly buffer MB { int meta[]; };  // per slot: entry, kpos0, n_keys, pos
layout(std430, binding = 4) readonly buffer SK { float sinks[]; };
layout(std430, binding = 5) buffer SB { float S[]; };
layout(std430, binding = 6) writeonly buffer OB { float O[]; };
layout(push_constant) uniform P {
    uint nh, nkv, hd, maxk;
    int window;
    float scale, softcap;
    uint has_sinks;
    uint rows, ring_cap, bf16, slot0;
} p;

shared float red[64];

float elt_k(uint e) {
    if (p.bf16 == 0u) return uintBitsToFloat(K[e]);
    return uintBitsToFloat(((K[e >> 1] >> (16u * (e & 1u))) & 0xFFFFu) << 16);
}

float elt_v(uint e) {
    if (p.bf16 == 0u) return uintBitsToFloat(V[e]);
    return uintBitsToFloat(((V[e >> 1] >> (16u * (e & 1u))) & 0xFFFFu) << 16);
}

uint row_of(int kp) { return p.ring_cap > 0u ? uint(kp) % p.ring_cap : uint(kp); }

void main() {
    uint h = gl_WorkGroupID.x, slot = p.slot0 + gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
    uint kvh = h / (p.nh / p.nkv);
    uint r = uint(meta[4u * slot]);
    int kpos0 = meta[4u * slot + 1u], nk = meta[4u * slot + 2u], pos = meta[4u * slot + 3u];
    uint qb = r * p.nh * p.hd + h * p.hd;
    uint hb = kvh * p.rows * p.hd;  // the KV head's first element
    uint sb = (r * p.nh + h) * p.maxk;
    const float NEG = -3.402823e38;
    float m = NEG;
    for (int j = int(t); j < nk; j += 64) {
        int kp = kpos0 + j;
        float s = NEG;
        if (kp <= pos && (p.window == 0 || pos - kp < p.window)) {
            uint row = row_of(kp);
            uint kb = hb + (row / 16u) * p.hd * 16u + row % 16u;
            float d = 0.0;
            for (uint i = 0u; i < p.hd; i++) d += Q[qb + i] * elt_k(kb + i * 16u);
            s = d * p.scale;
            if (p.softcap > 0.0) s = p.softcap * tanh(s / p.softcap);
        }
        S[sb + uint(j)] = s;
        m = max(m, s);
    }
    red[t] = m;
    barrier();
    for (uint k = 32u; k > 0u; k >>= 1) {
        if (t < k) red[t] = max(red[t], red[t + k]);
        barrier();
    }
    m = red[0];
    float sink = p.has_sinks != 0u ? sinks[h] : NEG;
    if (p.has_sinks != 0u) m = max(m, sink);
    barrier();
    float l = 0.0;
    for (int j = int(t); j < nk; j += 64) {
        float s = S[sb + uint(j)];
        float e = s == NEG ? 0.0 : exp(s - m);
        S[sb + uint(j)] = e;
        l += e;
    }
    red[t] = l;
    memoryBarrierBuffer();
    barrier();
    for (uint k = 32u; k > 0u; k >>= 1) {
        if (t < k) red[t] += red[t + k];
        barrier();
    }
    l = red[0];
    if (p.has_sinks != 0u) l += exp(sink - m);
    float inv = l > 0.0 ? 1.0 / l : 0.0;
    for (uint i = t; i < p.hd; i += 64u) {
        float acc = 0.0;
        for (int j = 0; j < nk; j++) {
            float e = S[sb + uint(j)];
            if (e != 0.0) acc += e * elt_v(hb + row_of(kpos0 + j) * p.hd + i);
        }
        O[qb + i] = acc * inv;
    }
}
