#!/usr/bin/env python3
"""Write the fuzz_gguf seeds: tiny GGUF files (version 3, little-endian) built with struct.

    /usr/bin/python3 tests/fuzz/gguf_seeds.py tests/fuzz/seeds/fuzz_gguf

Valid: a 2-layer llama-shaped model (F32, F16, Q8_0 and Q4_K tensors; every scalar value
type, a string array, a nested array), a vocabulary-only file (no tensors), a file with
general.alignment 64, the first part of a split model. Refused by the reader: a tensor
misaligned to general.alignment, a name given twice, an unknown type id.
"""
import os
import struct
import sys

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?",
          U64: "Q", I64: "q", F64: "d"}
# ggml type id -> (elements per block, bytes per block)
TYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q8_0": (8, 32, 34), "Q4_K": (12, 256, 144)}


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def value(t, v):
    if t == STR:
        return s(v)
    if t == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(value(et, x) for x in items)
    return struct.pack("<" + SCALAR[t], v)


def gguf(kvs, tensors, align=32, offsets=None):
    """kvs: [(key, type, value)]; tensors: [(name, type name, ne)]; data is zero-filled."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += s(k) + struct.pack("<I", t) + value(t, v)
    off, sizes = 0, []
    for i, (name, tname, ne) in enumerate(tensors):
        tid, blk, bpb = TYPES[tname]
        n = ne[0] // blk * bpb
        for d in ne[1:]:
            n *= d
        o = offsets[i] if offsets else off
        out += s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", tid, o)
        sizes.append(n)
        off += (n + align - 1) // align * align
    out += b"\0" * (-len(out) % align)
    for n in sizes:
        out += bytes(range(256)) * (n // 256) + bytes(n % 256) + b"\0" * (-n % align)
    return out


def llama_kvs(arch="llama"):
    return [("general.architecture", STR, arch),
            (arch + ".block_count", U32, 1),
            (arch + ".context_length", U32, 64),
            (arch + ".embedding_length", U32, 256),
            (arch + ".feed_forward_length", U32, 256),
            (arch + ".attention.head_count", U32, 4),
            (arch + ".attention.head_count_kv", U32, 2),
            (arch + ".attention.layer_norm_rms_epsilon", F32, 1e-5),
            (arch + ".rope.freq_base", F32, 10000.0),
            ("tokenizer.ggml.tokens", ARR, (STR, ["<unk>", "<s>", "</s>", "a"] + ["t%d" % i for i in range(4)])),
            ("tokenizer.ggml.bos_token_id", U32, 1),
            ("tokenizer.ggml.eos_token_id", U32, 2)]


def llama_tensors(emb="F32", mat="Q8_0"):
    return [("token_embd.weight", emb, [256, 8]),
            ("blk.0.attn_norm.weight", "F32", [256]),
            ("blk.0.attn_q.weight", mat, [256, 8]),
            ("blk.0.attn_k.weight", mat, [256, 4]),
            ("blk.0.attn_v.weight", "F16", [256, 4]),
            ("output_norm.weight", "F32", [256])]


def main(dst):
    os.makedirs(dst, exist_ok=True)
    every = [("t.u8", U8, 7), ("t.i8", I8, -7), ("t.u16", U16, 700), ("t.i16", I16, -700),
             ("t.i32", I32, -70000), ("t.u64", U64, 1 << 40), ("t.i64", I64, -(1 << 40)),
             ("t.f64", F64, 0.5), ("t.bool", BOOL, True),
             ("t.nested", ARR, (ARR, [(U32, [1, 2]), (U32, []), (STR, ["x"])]))]
    seeds = {
        "llama_q8_0.gguf": gguf(llama_kvs() + every, llama_tensors()),
        "llama_q4_k.gguf": gguf(llama_kvs(), llama_tensors("F16", "Q4_K")),
        "vocab_only.gguf": gguf([("general.architecture", STR, "llama")] + llama_kvs()[9:], []),
        "align64.gguf": gguf([("general.alignment", U32, 64)] + llama_kvs(), llama_tensors(), align=64),
        "split-00001-of-00002.gguf": gguf(llama_kvs() + [("split.no", U16, 0), ("split.count", U16, 2),
                                                         ("split.tensors.count", I32, 7)],
                                          llama_tensors()),
        "misaligned.gguf": gguf(llama_kvs(), llama_tensors()[:2], offsets=[0, 16]),
        "duplicate.gguf": gguf(llama_kvs(), llama_tensors()[:2] + [("token_embd.weight", "F32", [256, 8])]),
    }
    unknown = bytearray(gguf(llama_kvs(), [("x.weight", "F32", [4])]))
    i = unknown.index(b"x.weight") + 8 + 4 + 8  # name, n_dims, ne[0] -> type
    unknown[i:i + 4] = struct.pack("<I", 5)    # Q4_3: removed from ggml
    seeds["unknown_type.gguf"] = bytes(unknown)
    for name, data in seeds.items():
        with open(os.path.join(dst, name), "wb") as f:
            f.write(data)
        print(name, len(data))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/seeds/fuzz_gguf")
