#version 450
// rope.comp — RoPE in the rotate_half layout (transformers' apply_rotary_pos_emb) over
// n_heads heads of head_dim per row, rot rotary dims (half = rot / 2):
//   x'[i] = x[i] cos[i] - x[i + half] sin[i],  x'[i + half] = x[i + half] cos[i] + x[i] sin[i]
// or, variant 1 (specialization constant 0), on pairs (2i, 2i+1) (GPT-J's
// rotate_every_two): x'[2i] = x[2i] cos[i] - x[2i+1] sin[i], x'[2i+1] = x[2i+1] cos[i] +
// x[2i] sin[i]. One invocation per (row, head, i < half); cos/sin hold half values per row.
layout(local_size_x = 64) in;
layout(constant_id = 0) const int VARIANT = 0;
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
    uint i0 = VARIANT == 1 ? 2u * i : i, i1 = VARIANT == 1 ? 2u * i + 1u : i + p.half_rot;
    float a = X[b + i0], z = X[b + i1];
    X[b + i0] = a * c - z * s;
    X[b + i1] = z * c + a * s;
}
