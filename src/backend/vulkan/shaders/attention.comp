#version 450
// attention.comp — one query head of one batch entry per workgroup (x: head h, y: entry
// r): out = softmax(softcap(q k^T scale) + mask) v over the keys its group uploaded
// (GQA: KV head h / (nh / nkv)). Key j of entry r is at position kpos0 + j; it is seen
// when kpos <= pos and (window == 0 or pos - kpos < window). softcap > 0: cap
// tanh(s / cap). has_sinks: head h's learned logit joins the softmax's denominator
// (gpt-oss). Three passes over the keys: scores into S, max and sum by tree reductions,
// then each invocation sums its output dims over the keys. float32 throughout.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer QB { float Q[]; };
layout(std430, binding = 1) readonly buffer KB { float K[]; };
layout(std430, binding = 2) readonly buffer VB { float V[]; };
layout(std430, binding = 3) readonly buffer MB { int meta[]; };  // per entry: key0, kpos0, n_keys, pos
layout(std430, binding = 4) readonly buffer SK { float sinks[]; };
layout(std430, binding = 5) buffer SB { float S[]; };
layout(std430, binding = 6) writeonly buffer OB { float O[]; };
layout(push_constant) uniform P {
    uint nh, nkv, hd, maxk;
    int window;
    float scale, softcap;
    uint has_sinks;
} p;

shared float red[64];

void main() {
    uint h = gl_WorkGroupID.x, r = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
    uint kvh = h / (p.nh / p.nkv);
    int key0 = meta[4u * r], kpos0 = meta[4u * r + 1u], nk = meta[4u * r + 2u], pos = meta[4u * r + 3u];
    uint qb = r * p.nh * p.hd + h * p.hd;
    uint kvd = p.nkv * p.hd;
    uint sb = (r * p.nh + h) * p.maxk;
    const float NEG = -3.402823e38;
    float m = NEG;
    for (int j = int(t); j < nk; j += 64) {
        int kp = kpos0 + j;
        float s = NEG;
        if (kp <= pos && (p.window == 0 || pos - kp < p.window)) {
            uint kb = uint(key0 + j) * kvd + kvh * p.hd;
            float d = 0.0;
            for (uint i = 0u; i < p.hd; i++) d += Q[qb + i] * K[kb + i];
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
            if (e != 0.0) acc += e * V[uint(key0 + j) * kvd + kvh * p.hd + i];
        }
        O[qb + i] = acc * inv;
    }
}
