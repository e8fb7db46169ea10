#version 450
// layernorm.comp — per row r of M: y = (x - mean) / sqrt(var + eps) * w + b, the biased
// variance of the centred values (two passes, as torch's LayerNorm and the CPU kernel
// norm_act.c compute it); flags & 1: w given (else 1), flags & 2: b given (else 0; OLMo's
// non-parametric LayerNorm has neither). One workgroup per row; the sums in float32 by
// a tree reduction (the CPU kernel sums in double).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer XB { float X[]; };
layout(std430, binding = 1) readonly buffer WB { float Wt[]; };
layout(std430, binding = 2) readonly buffer BB { float Bs[]; };
layout(std430, binding = 3) writeonly buffer YB { float Y[]; };
layout(push_constant) uniform P {
    uint n, M;
    float eps;
    uint flags;
} p;

shared float part[64];

float reduce(uint t, float s) {
    part[t] = s;
    barrier();
    for (uint k = 32u; k > 0u; k >>= 1) {
        if (t < k) part[t] += part[t + k];
        barrier();
    }
    float r = part[0];
    barrier(); // part is written again by the next reduction
    return r;
}

void main() {
    uint r = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; // 2-D past the limit
    uint t = gl_LocalInvocationID.x;
    if (r >= p.M) return;
    uint base = r * p.n;
    float s = 0.0;
    for (uint i = t; i < p.n; i += 64u) s += X[base + i];
    float mean = reduce(t, s) / float(p.n);
    float v = 0.0;
    for (uint i = t; i < p.n; i += 64u) {
        float d = X[base + i] - mean;
        v += d * d;
    }
    float inv = 1.0 / sqrt(reduce(t, v) / float(p.n) + p.eps);
    for (uint i = t; i < p.n; i += 64u) {
        float y = (X[base + i] - mean) * inv;
        if ((p.flags & 1u) != 0u) y *= Wt[i];
        if ((p.flags & 2u) != 0u) y += Bs[i];
        Y[base + i] = y;
    }
}
