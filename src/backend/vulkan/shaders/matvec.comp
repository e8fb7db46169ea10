#version 450
// matvec.comp — Y (M, N) = X (M, K) W^T (+ bias), W (N, K), for few rows M (decode):
// one workgroup of 64 per output element (o, r); each invocation sums pairs of inputs
// 64 apart, then a tree reduction in shared memory. float32 accumulation.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer XB { float X[]; };
layout(std430, binding = 1) readonly buffer WB { uint W[]; };
layout(std430, binding = 2) readonly buffer BB { float B[]; };
layout(std430, binding = 3) writeonly buffer YB { float Y[]; };
layout(push_constant) uniform P {
    uint N, K, M, has_bias, wstride;
    uint obase, ld; // this part's first output and Y's row length (a weight split by rows)
} p;
#include "weights.glsl"

shared float part[64];

void main() {
    uint o = gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.z;
    uint r = gl_WorkGroupID.y;
    if (o >= p.N) return; // uniform per workgroup
    uint t = gl_LocalInvocationID.x;
    uint base = o * p.wstride;
    uint xrow = r * p.K;
    float acc = 0.0;
    uint pairs = p.K / 2u;
    for (uint i = t; i < pairs; i += 64u) {
        vec2 w = wpair(base, i);
        acc += X[xrow + 2u * i] * w.x + X[xrow + 2u * i + 1u] * w.y;
    }
    if ((p.K & 1u) != 0u && t == 0u) acc += X[xrow + p.K - 1u] * welt(base, p.K - 1u);
    part[t] = acc;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (t < s) part[t] += part[t + s];
        barrier();
    }
    if (t == 0u)
        Y[r * p.ld + p.obase + o] = part[0] + (p.has_bias != 0u ? B[p.obase + o] : 0.0);
}
