#version 450
// kv_store.comp — a sequence's K/V rows written into its cache buffers (kv_cache.h's
// layout: per KV head `rows` positions; values [row][hd]; keys transposed in groups of
// 16 rows, element i of row t at ((h rows + t / 16 * 16) hd + i * 16 + t % 16); f32 or
// bf16 elements, bf16 rounded to nearest even with NaN kept, as facet_kv_store does).
// Entry e of the dispatch copies chunk row META[2e] to cache row META[2e + 1]. One
// invocation per (entry, head, element); a bf16 element is half of a 32-bit word whose
// other half may be another invocation's, so it is written with atomicAnd / atomicOr on
// its own 16 bits.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer KS { float Ks[]; };
layout(std430, binding = 1) readonly buffer VS { float Vs[]; };
layout(std430, binding = 2) buffer KC { uint Kc[]; };
layout(std430, binding = 3) buffer VC { uint Vc[]; };
layout(std430, binding = 4) readonly buffer MB { int META[]; };
layout(push_constant) uniform P {
    uint nkv, hd, rows, bf16, n;
} p;

uint to_bf16(float f) {
    uint u = floatBitsToUint(f);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0u) return (u >> 16) | 0x40u;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

void put_k(uint e, float f) {
    if (p.bf16 == 0u) {
        Kc[e] = floatBitsToUint(f);
        return;
    }
    uint sh = (e & 1u) * 16u;
    atomicAnd(Kc[e >> 1], ~(0xffffu << sh));
    atomicOr(Kc[e >> 1], to_bf16(f) << sh);
}

void put_v(uint e, float f) {
    if (p.bf16 == 0u) {
        Vc[e] = floatBitsToUint(f);
        return;
    }
    uint sh = (e & 1u) * 16u;
    atomicAnd(Vc[e >> 1], ~(0xffffu << sh));
    atomicOr(Vc[e >> 1], to_bf16(f) << sh);
}

void main() {
    uint id = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
              gl_LocalInvocationID.x;
    uint kvd = p.nkv * p.hd;
    if (id >= p.n * kvd) return;
    uint e = id / kvd, j = id % kvd, h = j / p.hd, i = j % p.hd;
    uint src = uint(META[2u * e]) * kvd + j, t = uint(META[2u * e + 1u]);
    put_k((h * p.rows + t / 16u * 16u) * p.hd + i * 16u + t % 16u, Ks[src]);
    put_v((h * p.rows + t) * p.hd + i, Vs[src]);
}
