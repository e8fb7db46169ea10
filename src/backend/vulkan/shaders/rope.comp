#version 450
// rope.comp — RoPE in the rotate_half layout (transformers' apply_rotary_pos_emb) over
// n_heads heads of head_dim per row, rot rotary dims (half = rot / 2):
//   x'[i] = x[i] cos[i] - x[i + half] sin[i],  x'[i + half] = x[i + half] cos[i] + x[i] sin[i]
// One invocation per (row, head, i < half); cos/sin hold half values per row.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer XB { float X[]; };
layout(std430, binding = 1) readonly buffer CB { float C[]; };
layout(std430, binding = 2) readonly buffer SB { float S[]; };
layout(push_constant) uniform P {
    uint n_heads, head_dim, half_rot, M;
} p;

void main() {
    uint id = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
             gl_LocalInvocationID.x; // a 2-D grid past maxComputeWorkGroupCount[0]
    uint per_row = p.n_heads * p.half_rot;
    if (id >= per_row * p.M) return;
    uint r = id / per_row, h = (id % per_row) / p.half_rot, i = id % p.half_rot;
    uint b = r * p.n_heads * p.head_dim + h * p.head_dim;
    float c = C[r * p.half_rot + i], s = S[r * p.half_rot + i];
    float a = X[b + i], z = X[b + i + p.half_rot];
    X[b + i] = a * c - z * s;
    X[b + i + p.half_rot] = z * c + a * s;
}
