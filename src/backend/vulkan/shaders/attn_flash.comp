#version 450
// attn_flash.comp — softmax attention as FlashAttention computes it: out =
// softmax(softcap(scale q k^T) + mask) v, keys visited in tiles of 16 positions staged
// in shared memory with an online softmax (a running max and sum per query, the output
// accumulator rescaled when the max grows), float32 throughout, no scores buffer.
//
// One dispatch per sequence group (the group's rows are slots slot0 .. slot0 + n - 1 of
// meta: entry r, position pos, splits, partial record base). A workgroup's query tile is
// up to BQ (row, head) pairs that share one KV head:
//   rows mode  (prefill): x = tile of BQ rows of the group, y = query head;
//   heads mode (decode):  x = row of the group, y = a tile of BQ query heads of one KV
//                         head (GQA: the KV head's tiles one after another), z = split.
// Split-K (heads mode, the row's nsplit > 1, chosen by the host from the row's own key
// span so a row's bits never depend on the other rows of its group): split z visits
// tiles [z tps, (z + 1) tps), tps = ceil(tiles / nsplit), of the row's key span and
// writes (max, sum, unnormalised acc[hd]) to its partial record
// part[(base + z nh + h) (hd + 2)], combined by attn_reduce.comp; else the output.
// A query's arithmetic is the same in both modes (one split): its bits do not depend on
// the other queries of its tile.
// Key position kp is seen by a query at position pos when kp <= pos and (window == 0 or
// pos - kp < window). softcap > 0: softcap tanh(s / softcap). Sinks (flags & 1): head
// h's learned logit joins the denominator as a key of value 0 (it starts the running
// max and sum, in split 0 only). ALiBi (flags & 16): head h's slope alibi[h] times the
// key's distance kp - pos (<= 0) is added to each visible score after the softcap (the
// CPU kernel's facet_attn_params.alibi).
// Keys and values are read from the KV cache in place (kv_cache.h: keys
// [nkv][rows / 16][hd][16], values [nkv][rows][hd]; float32, or bf16 (flags & 2) two to
// a word, the even one low; position kp at row kp, or kp % ring_cap on a ring layer: a
// tile of 16 positions aligned to 16 is one contiguous key group either way), or, when
// gathered (flags & 4), from float32 buffers [key][nkv][hd] where position kp is key
// kp + kbias.
// Variant (specialization constant 0): head_dim class, HDMAX = 64 << VARIANT; the query
// tile is BQ = 16 queries (VARIANT 0) or 8; the host checks the shared memory below
// against maxComputeSharedMemorySize (vk_attention.c flash_shared_bytes).
layout(local_size_x = 64) in;
layout(constant_id = 0) const int VARIANT = 0;
const uint HDMAX = 64u << uint(VARIANT);
const uint BQ = VARIANT == 0 ? 16u : 8u;
const uint BK = 16u;
const uint ACC = BQ * HDMAX / 64u;

layout(std430, binding = 0) readonly buffer QB { float Q[]; };
layout(std430, binding = 1) readonly buffer KB { uint K[]; };
layout(std430, binding = 2) readonly buffer VB { uint V[]; };
layout(std430, binding = 3) readonly buffer MB { int meta[]; };  // per slot: r, pos, nsplit, pbase
layout(std430, binding = 4) readonly buffer SK { float sinks[]; };
layout(std430, binding = 5) writeonly buffer PB { float part[]; };
layout(std430, binding = 6) writeonly buffer OB { float O[]; };
layout(std430, binding = 7) readonly buffer AB { float alibi[]; };
layout(push_constant) uniform P {
    uint nh, nkv, hd;
    int window;
    float scale, softcap;
    uint flags;      // 1 sinks, 2 bf16, 4 gathered, 8 heads mode, 16 alibi
    uint rows;       // cache rows per KV head (in place)
    uint ring_cap;   // 0: position kp at row kp
    uint slot0, n;   // the group's slots
    int kbias;       // gathered: position kp is key kp + kbias
} p;

shared float Qs[BQ * HDMAX];
shared float KV[BK * HDMAX];  // keys [hd][16], then values [16][HDMAX]
shared float S[BQ * BK];
shared float Mx[BQ], Lx[BQ], Cx[BQ];

const float NEG = -3.402823e38;  // no key yet / masked

uint G;       // query heads per KV head
uint kvh, nq; // the tile's KV head and queries

// query i of the tile: its slot and head
uint q_slot(uint i) {
    return (p.flags & 8u) != 0u ? p.slot0 + gl_WorkGroupID.x : p.slot0 + gl_WorkGroupID.x * BQ + i;
}
uint q_head(uint i) {
    if ((p.flags & 8u) == 0u) return gl_WorkGroupID.y;
    uint nt = (G + BQ - 1u) / BQ;
    return kvh * G + (gl_WorkGroupID.y % nt) * BQ + i;
}

float word_elt(uint w, uint e) { return uintBitsToFloat(((w >> (16u * (e & 1u))) & 0xFFFFu) << 16); }
float k_at(uint e) { return (p.flags & 2u) == 0u ? uintBitsToFloat(K[e]) : word_elt(K[e >> 1], e); }
float v_at(uint e) { return (p.flags & 2u) == 0u ? uintBitsToFloat(V[e]) : word_elt(V[e >> 1], e); }
uint row_of(int kp) { return p.ring_cap > 0u ? uint(kp) % p.ring_cap : uint(kp); }

void main() {
    uint t = gl_LocalInvocationID.x;
    G = p.nh / p.nkv;
    if ((p.flags & 8u) != 0u) {
        uint nt = (G + BQ - 1u) / BQ, ti = gl_WorkGroupID.y % nt;
        kvh = gl_WorkGroupID.y / nt;
        nq = min(BQ, G - ti * BQ);
    } else {
        kvh = gl_WorkGroupID.y / G;
        nq = min(BQ, p.n - gl_WorkGroupID.x * BQ);
    }
    uint hd = p.hd, qd = p.nh * hd, kvd = p.nkv * hd, z = gl_WorkGroupID.z;
    // the tile's key span: first visible position of its earliest query .. its latest
    int minpos = 0x7fffffff, maxpos = 0;
    for (uint i = 0u; i < nq; i++) {
        int ps = meta[4u * q_slot(i) + 1u];
        minpos = min(minpos, ps);
        maxpos = max(maxpos, ps);
    }
    int first = p.window > 0 ? max(0, minpos - p.window + 1) : 0, last = maxpos;
    int t0 = first & ~15;
    uint ntiles = uint(last - t0) / BK + 1u;
    uint ns = (p.flags & 8u) != 0u ? uint(meta[4u * q_slot(0u) + 2u]) : 1u;
    if (z >= ns) return;  // a row with fewer splits than its group's most (uniform)
    uint tps = (ntiles + ns - 1u) / ns, tb = z * tps, te = min(tb + tps, ntiles);

    for (uint e = t; e < BQ * HDMAX; e += 64u) {
        uint i = e / HDMAX, d = e % HDMAX;
        Qs[e] = i < nq && d < hd ? Q[uint(meta[4u * q_slot(i)]) * qd + q_head(i) * hd + d] : 0.0;
    }
    if (t < BQ) {
        bool sink = t < nq && (p.flags & 1u) != 0u && z == 0u;
        Mx[t] = sink ? sinks[q_head(t)] : NEG;
        Lx[t] = sink ? 1.0 : 0.0;
        Cx[t] = 1.0;
    }
    float acc[ACC];
    for (uint k = 0u; k < ACC; k++) acc[k] = 0.0;
    uint hb = kvh * p.rows * hd;  // in place: the KV head's first element
    barrier();

    for (uint ti = tb; ti < te; ti++) {
        int kb = t0 + int(ti * BK);
        // keys of the tile, as [hd][16]; positions outside the span read as 0
        uint gb = hb + (row_of(kb) / BK) * hd * BK;
        for (uint e = t; e < BK * hd; e += 64u) {
            uint d = e / BK, j = e % BK;
            int kp = kb + int(j);
            float x = 0.0;
            if (kp >= first && kp <= last)
                x = (p.flags & 4u) != 0u ? uintBitsToFloat(K[uint(kp + p.kbias) * kvd + kvh * hd + d])
                                         : k_at(gb + e);
            KV[e] = x;
        }
        barrier();
        // scores of the tile: query i, key j
        for (uint e = t; e < BQ * BK; e += 64u) {
            uint i = e / BK, j = e % BK;
            int kp = kb + int(j);
            float s = NEG;
            if (i < nq) {
                int ps = meta[4u * q_slot(i) + 1u];
                if (kp <= ps && (p.window <= 0 || ps - kp < p.window)) {
                    float dot = 0.0;
                    for (uint d = 0u; d < hd; d++) dot += Qs[i * HDMAX + d] * KV[d * BK + j];
                    s = dot * p.scale;
                    if (p.softcap > 0.0) s = p.softcap * tanh(s / p.softcap);
                    if ((p.flags & 16u) != 0u) s += alibi[q_head(i)] * float(kp - ps);
                }
            }
            S[e] = s;
        }
        barrier();
        // the online softmax's step per query; meanwhile the values replace the keys
        if (t < nq) {
            float mo = Mx[t], mt = NEG;
            for (uint j = 0u; j < BK; j++) mt = max(mt, S[t * BK + j]);
            float mn = max(mo, mt), c = 1.0, l = 0.0;
            if (mn != NEG) {
                c = mo == NEG ? 0.0 : exp(mo - mn);
                for (uint j = 0u; j < BK; j++) {
                    float s = S[t * BK + j];
                    float pj = s == NEG ? 0.0 : exp(s - mn);
                    S[t * BK + j] = pj;
                    l += pj;
                }
            } else {
                for (uint j = 0u; j < BK; j++) S[t * BK + j] = 0.0;
            }
            Mx[t] = mn;
            Lx[t] = Lx[t] * c + l;
            Cx[t] = c;
        }
        for (uint e = t; e < BK * hd; e += 64u) {
            uint j = e / hd, d = e % hd;
            int kp = kb + int(j);
            float x = 0.0;
            if (kp >= first && kp <= last)
                x = (p.flags & 4u) != 0u ? uintBitsToFloat(V[uint(kp + p.kbias) * kvd + kvh * hd + d])
                                         : v_at(hb + row_of(kp) * hd + d);
            KV[j * HDMAX + d] = x;
        }
        barrier();
        for (uint k = 0u; k < ACC; k++) {
            uint e = t + 64u * k, i = e / HDMAX, d = e % HDMAX;
            if (i < nq && d < hd) {
                float a = acc[k] * Cx[i];
                for (uint j = 0u; j < BK; j++) a += S[i * BK + j] * KV[j * HDMAX + d];
                acc[k] = a;
            }
        }
        barrier();
    }

    bool split = ns > 1u;
    for (uint k = 0u; k < ACC; k++) {
        uint e = t + 64u * k, i = e / HDMAX, d = e % HDMAX;
        if (i >= nq || d >= hd) continue;
        uint slot = q_slot(i), h = q_head(i);
        if (split) {
            uint rec = uint(meta[4u * slot + 3u]) + z * p.nh + h;
            part[rec * (hd + 2u) + 2u + d] = acc[k];
        } else {
            float l = Lx[i];
            O[uint(meta[4u * slot]) * qd + h * hd + d] = l > 0.0 ? acc[k] / l : 0.0;
        }
    }
    if (split && t < nq) {
        uint rec = uint(meta[4u * q_slot(t) + 3u]) + z * p.nh + q_head(t);
        part[rec * (hd + 2u)] = Mx[t];
        part[rec * (hd + 2u) + 1u] = Lx[t];
    }
}
