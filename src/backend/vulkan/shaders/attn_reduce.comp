#version 450
// attn_reduce.comp — split-K attention's combine step (attn_flash.comp heads mode): for
// query head h (x) of slot s (y) with nsplit > 1 partial records (m_z, l_z, acc_z[hd]) at
// part[(pbase + z nh + h) (hd + 2)], out = sum_z w_z acc_z / sum_z w_z l_z with
// w_z = exp(m_z - max m) (0 for a split that saw no key). Slots of one split return.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer MB { int meta[]; };  // per slot: r, pos, nsplit, pbase
layout(std430, binding = 1) readonly buffer PB { float part[]; };
layout(std430, binding = 2) writeonly buffer OB { float O[]; };
layout(push_constant) uniform P { uint nh, hd; } p;

const float NEG = -3.402823e38;

void main() {
    uint h = gl_WorkGroupID.x, s = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
    uint ns = uint(meta[4u * s + 2u]);
    if (ns <= 1u) return;
    uint r = uint(meta[4u * s]), base = uint(meta[4u * s + 3u]), rs = p.hd + 2u;
    float m = NEG;
    for (uint z = 0u; z < ns; z++) m = max(m, part[(base + z * p.nh + h) * rs]);
    float l = 0.0;
    for (uint z = 0u; z < ns; z++) {
        uint b = (base + z * p.nh + h) * rs;
        float mz = part[b];
        l += mz == NEG ? 0.0 : exp(mz - m) * part[b + 1u];
    }
    float inv = l > 0.0 ? 1.0 / l : 0.0;
    for (uint d = t; d < p.hd; d += 64u) {
        float a = 0.0;
        for (uint z = 0u; z < ns; z++) {
            uint b = (base + z * p.nh + h) * rs;
            float mz = part[b];
            if (mz != NEG) a += exp(mz - m) * part[b + 2u + d];
        }
        O[r * p.nh * p.hd + h * p.hd + d] = a * inv;
    }
}
