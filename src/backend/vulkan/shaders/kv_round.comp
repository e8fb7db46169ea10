#version 450
// kv_round.comp — x rounded to bfloat16 (to nearest, ties to even; NaN kept), as a bf16
// KV cache stores it, kept as float32.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer XB { uint X[]; };
layout(push_constant) uniform P {
    uint n;
} p;

void main() {
    uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
             gl_LocalInvocationID.x; // a 2-D grid past maxComputeWorkGroupCount[0]
    if (i >= p.n) return;
    uint u = X[i];
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0u) {
        X[i] = u | 0x00400000u;
        return;
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    X[i] = u & 0xffff0000u;
}
