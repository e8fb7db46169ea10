#version 450
// rmsnorm.comp — per row r of M: y = x / sqrt(mean(x^2) + eps) * (offset + w)
// (transformers' LlamaRMSNorm; offset 1 for Gemma's (1 + w)). One workgroup per row;
// the sum of squares in float32 by a tree reduction (the CPU kernel sums in double).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer XB { float X[]; };
layout(std430, binding = 1) readonly buffer WB { float Wt[]; };
layout(std430, binding = 2) writeonly buffer YB { float Y[]; };
layout(push_constant) uniform P {
    uint n, M;
    float eps, offset;
} p;

shared float part[64];

void main() {
    uint r = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; // 2-D past the limit
    uint t = gl_LocalInvocationID.x;
    if (r >= p.M) return;
    uint base = r * p.n;
    float s = 0.0;
    for (uint i = t; i < p.n; i += 64u) s += X[base + i] * X[base + i];
    part[t] = s;
    barrier();
    for (uint k = 32u; k > 0u; k >>= 1) {
        if (t < k) part[t] += part[t + k];
        barrier();
    }
    float inv = 1.0 / sqrt(part[0] / float(p.n) + p.eps);
    for (uint i = t; i < p.n; i += 64u) Y[base + i] = X[base + i] * inv * (p.offset + Wt[i]);
}
