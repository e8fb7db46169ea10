#version 450
// matmul_tiled.comp — Y (M, N) = X (M, K) W^T (+ bias) for many rows M (prefill): a
// workgroup of 16x16 computes a 16x16 tile of Y, stepping over K in slices of 16 that
// it stages in shared memory (each X and W element read once per tile, not per output).
// float32 accumulation.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer XB { float X[]; };
layout(std430, binding = 1) readonly buffer WB { uint W[]; };
layout(std430, binding = 2) readonly buffer BB { float B[]; };
layout(std430, binding = 3) writeonly buffer YB { float Y[]; };
layout(push_constant) uniform P {
    uint N, K, M, has_bias, wstride;
    uint obase, ld; // this part's first output and Y's row length (a weight split by rows)
} p;
#include "weights.glsl"

shared float xs[16][17];
shared float ws[16][17];

void main() {
    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    uint o0 = gl_WorkGroupID.x * 16u, r0 = gl_WorkGroupID.y * 16u;
    float acc = 0.0;
    for (uint k0 = 0u; k0 < p.K; k0 += 16u) {
        uint k = k0 + tx;
        // row ty of the X tile and row ty of the W tile (output o0 + ty), column tx
        xs[ty][tx] = (r0 + ty < p.M && k < p.K) ? X[(r0 + ty) * p.K + k] : 0.0;
        ws[ty][tx] = (o0 + ty < p.N && k < p.K) ? welt((o0 + ty) * p.wstride, k) : 0.0;
        barrier();
        for (uint j = 0u; j < 16u; j++) acc += xs[ty][j] * ws[tx][j];
        barrier();
    }
    uint r = r0 + ty, o = o0 + tx;
    if (r < p.M && o < p.N)
        Y[r * p.ld + p.obase + o] = acc + (p.has_bias != 0u ? B[p.obase + o] : 0.0);
}
