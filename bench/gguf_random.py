#!/usr/bin/python3
"""Write a full-size GGUF with random weights stored directly in Q4_0 blocks, streamed.

Issues 27 and 25 ask for the speed of the Qwen3-30B-A3B and DeepSeek-V2-Lite shapes in
a 4-bit format against llama.cpp on the same file. A 16-bit copy of the 30B model would
need 61 GB of disk before quantizing, so this writes the 4-bit blocks themselves: each
Q4_0 block is a float16 scale d and 32 random 4-bit codes q (value d * (q - 8), q = 0
(value -8) left out so values have mean 0), d set
so every matrix has weights of root-mean-square SIGMA (0.02, a usual initialization):
activations stay finite through all layers. Norm weights are 1, the MoE router F32
normal(0, SIGMA). The file is written tensor by tensor in chunks, so memory stays small.

Tokenizer: a synthetic SentencePiece ("llama") vocabulary of exactly the model's vocab
size (<unk>, <s>, </s>, the 256 byte pieces, then pieces "▁t<i>"), which llama.cpp and
facet both load; speed runs feed token ids, so the pieces carry no meaning.

  gguf_random.py qwen3moe OUT.gguf [--layers N] [--seed S]   # Qwen3-30B-A3B, ~17 GB
  gguf_random.py deepseek2 OUT.gguf [--layers N] [--seed S]  # DeepSeek-V2-Lite, ~9 GB

--layers N keeps the first N layers (the check files); every other shape stays full.
The GGUF layout (v3, little-endian, 32-byte alignment) and the key names follow the
GGUF specification and what llama.cpp's converter writes for these architectures
(see tests/data/deepseek2/SOURCE.md for the deepseek2 keys); this file is facet's own code.
"""

import argparse
import struct
import sys

import numpy as np

SIGMA = 0.02
ALIGN = 32
QK4_0 = 32
T_F32, T_Q4_0 = 0, 2
# GGUF value types
V_U32, V_I32, V_F32, V_BOOL, V_STR, V_ARR = 4, 5, 6, 7, 8, 9


def qwen3moe(layers):
    """Qwen3-30B-A3B's public config (config.json of Qwen/Qwen3-30B-A3B)."""
    h, nh, nkv, hd, ne, ff, vocab = 2048, 32, 4, 128, 128, 768, 151936
    L = layers or 48
    a = "qwen3moe"
    kv = [("general.architecture", V_STR, a), ("general.name", V_STR, "random-qwen3-30b-a3b"),
          ("general.file_type", V_U32, 2),
          (f"{a}.block_count", V_U32, L), (f"{a}.context_length", V_U32, 40960),
          (f"{a}.embedding_length", V_U32, h), (f"{a}.feed_forward_length", V_U32, 6144),
          (f"{a}.attention.head_count", V_U32, nh), (f"{a}.attention.head_count_kv", V_U32, nkv),
          (f"{a}.attention.key_length", V_U32, hd), (f"{a}.attention.value_length", V_U32, hd),
          (f"{a}.attention.layer_norm_rms_epsilon", V_F32, 1e-6),
          (f"{a}.rope.freq_base", V_F32, 1e6),
          (f"{a}.expert_count", V_U32, ne), (f"{a}.expert_used_count", V_U32, 8),
          (f"{a}.expert_feed_forward_length", V_U32, ff)]
    t = [("token_embd.weight", [h, vocab], T_Q4_0), ("output_norm.weight", [h], T_F32),
         ("output.weight", [h, vocab], T_Q4_0)]
    for i in range(L):
        b = f"blk.{i}."
        t += [(b + "attn_norm.weight", [h], T_F32),
              (b + "attn_q.weight", [h, nh * hd], T_Q4_0),
              (b + "attn_k.weight", [h, nkv * hd], T_Q4_0),
              (b + "attn_v.weight", [h, nkv * hd], T_Q4_0),
              (b + "attn_output.weight", [nh * hd, h], T_Q4_0),
              (b + "attn_q_norm.weight", [hd], T_F32), (b + "attn_k_norm.weight", [hd], T_F32),
              (b + "ffn_norm.weight", [h], T_F32),
              (b + "ffn_gate_inp.weight", [h, ne], T_F32),
              (b + "ffn_gate_exps.weight", [h, ff, ne], T_Q4_0),
              (b + "ffn_up_exps.weight", [h, ff, ne], T_Q4_0),
              (b + "ffn_down_exps.weight", [ff, h, ne], T_Q4_0)]
    return kv, t, vocab


def deepseek2(layers):
    """DeepSeek-V2-Lite's public config (config.json of deepseek-ai/DeepSeek-V2-Lite)."""
    h, nh, kvr, nope, rope, vh = 2048, 16, 512, 128, 64, 128
    ne, ff, dense_ff, nshared, vocab = 64, 1408, 10944, 2, 102400
    L = layers or 27
    a = "deepseek2"
    kv = [("general.architecture", V_STR, a), ("general.name", V_STR, "random-deepseek-v2-lite"),
          ("general.file_type", V_U32, 2),
          (f"{a}.block_count", V_U32, L), (f"{a}.context_length", V_U32, 163840),
          (f"{a}.embedding_length", V_U32, h), (f"{a}.feed_forward_length", V_U32, dense_ff),
          (f"{a}.attention.head_count", V_U32, nh), (f"{a}.attention.head_count_kv", V_U32, 1),
          (f"{a}.rope.scaling.type", V_STR, "yarn"), (f"{a}.rope.scaling.factor", V_F32, 40.0),
          (f"{a}.rope.scaling.original_context_length", V_U32, 4096),
          (f"{a}.rope.scaling.yarn_beta_fast", V_F32, 32.0),
          (f"{a}.rope.scaling.yarn_beta_slow", V_F32, 1.0),
          (f"{a}.rope.scaling.yarn_log_multiplier", V_F32, 0.1 * 0.707),
          (f"{a}.rope.freq_base", V_F32, 10000.0),
          (f"{a}.attention.layer_norm_rms_epsilon", V_F32, 1e-6),
          (f"{a}.expert_count", V_U32, ne), (f"{a}.expert_used_count", V_U32, 6),
          (f"{a}.expert_group_count", V_U32, 1), (f"{a}.expert_group_used_count", V_U32, 1),
          (f"{a}.expert_gating_func", V_U32, 1), (f"{a}.leading_dense_block_count", V_U32, 1),
          (f"{a}.vocab_size", V_U32, vocab),
          # written although llama.cpp infers "lite" at 27 layers: the --layers files need it
          (f"{a}.attention.q_lora_rank", V_U32, 0),
          (f"{a}.attention.kv_lora_rank", V_U32, kvr),
          (f"{a}.attention.key_length", V_U32, kvr + rope),
          (f"{a}.attention.value_length", V_U32, kvr),
          (f"{a}.attention.key_length_mla", V_U32, nope + rope),
          (f"{a}.attention.value_length_mla", V_U32, vh),
          (f"{a}.expert_feed_forward_length", V_U32, ff),
          (f"{a}.expert_shared_count", V_U32, nshared),
          (f"{a}.expert_weights_scale", V_F32, 1.0),
          (f"{a}.rope.dimension_count", V_U32, rope)]
    t = [("token_embd.weight", [h, vocab], T_Q4_0), ("output_norm.weight", [h], T_F32),
         ("output.weight", [h, vocab], T_Q4_0)]
    for i in range(L):
        b = f"blk.{i}."
        t += [(b + "attn_norm.weight", [h], T_F32),
              (b + "attn_q.weight", [h, nh * (nope + rope)], T_Q4_0),
              (b + "attn_kv_a_mqa.weight", [h, kvr + rope], T_Q4_0),
              (b + "attn_kv_a_norm.weight", [kvr], T_F32),
              (b + "attn_k_b.weight", [nope, kvr, nh], T_Q4_0),
              (b + "attn_v_b.weight", [kvr, vh, nh], T_Q4_0),
              (b + "attn_output.weight", [nh * vh, h], T_Q4_0),
              (b + "ffn_norm.weight", [h], T_F32)]
        if i == 0:
            t += [(b + "ffn_gate.weight", [h, dense_ff], T_Q4_0),
                  (b + "ffn_up.weight", [h, dense_ff], T_Q4_0),
                  (b + "ffn_down.weight", [dense_ff, h], T_Q4_0)]
        else:
            t += [(b + "ffn_gate_inp.weight", [h, ne], T_F32),
                  (b + "ffn_gate_exps.weight", [h, ff, ne], T_Q4_0),
                  (b + "ffn_up_exps.weight", [h, ff, ne], T_Q4_0),
                  (b + "ffn_down_exps.weight", [ff, h, ne], T_Q4_0),
                  (b + "ffn_gate_shexp.weight", [h, ff * nshared], T_Q4_0),
                  (b + "ffn_up_shexp.weight", [h, ff * nshared], T_Q4_0),
                  (b + "ffn_down_shexp.weight", [ff * nshared, h], T_Q4_0)]
    return kv, t, vocab


def spm_vocab(n):
    """A synthetic SentencePiece vocabulary of n pieces: tokens, scores, types."""
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    types = [2, 3, 3] + [6] * 256
    toks += [f"\u2581t{i}" for i in range(n - len(toks))]
    types += [1] * (n - len(types))
    scores = [0.0] * 259 + [-float(i) for i in range(n - 259)]
    return [("tokenizer.ggml.model", V_STR, "llama"),
            ("tokenizer.ggml.tokens", V_ARR, (V_STR, toks)),
            ("tokenizer.ggml.scores", V_ARR, (V_F32, scores)),
            ("tokenizer.ggml.token_type", V_ARR, (V_I32, types)),
            ("tokenizer.ggml.unknown_token_id", V_U32, 0),
            ("tokenizer.ggml.bos_token_id", V_U32, 1),
            ("tokenizer.ggml.eos_token_id", V_U32, 2)]


def gstr(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


SCALAR = {V_U32: "<I", V_I32: "<i", V_F32: "<f", V_BOOL: "<?"}


def gval(vt, v):
    if vt == V_STR:
        return gstr(v)
    if vt == V_ARR:
        et, items = v
        head = struct.pack("<IQ", et, len(items))
        if et == V_STR:
            return head + b"".join(gstr(s) for s in items)
        return head + np.asarray(items, dtype=SCALAR[et]).tobytes()
    return struct.pack(SCALAR[vt], v)


def nbytes(shape, ty):
    n = int(np.prod(shape))
    if ty == T_F32:
        return 4 * n
    assert shape[0] % QK4_0 == 0, shape
    return n // QK4_0 * 18


# A random byte's two codes with 0 (value -8) replaced by 8 (value 0): the values
# d * (q - 8) then have mean 0 (uniform codes would have mean -d / 2, a component common
# to every output row that after a few layers makes the hidden state near constant, every
# token route to the same experts and every step emit the same id).
SYMMETRIC = np.array([b | (8 if (b & 0x0F) == 0 else 0) | (0x80 if (b & 0xF0) == 0 else 0)
                      for b in range(256)], dtype=np.uint8)


def sigma(name):
    """Weight rms of a matrix: SIGMA, but the token embedding at 1 and the attention output
    at SIGMA / 5. With every matrix at SIGMA the attention output (near the mean of the
    values over the context, rms ~1 per layer) swamps the embedding (0.02): the hidden
    state is then nearly the same vector at every position, every token routes to the
    same experts (a prefill reading 8 of 128) and every step emits the same id."""
    return 1.0 if name == "token_embd.weight" else SIGMA / 5 if "attn_output" in name else SIGMA


def write_q4_0(f, n_blocks, rng, rms, chunk=1 << 22):
    """n_blocks random Q4_0 blocks: values -7..7 (0 twice as likely), one scale for the
    tensor (their mean square is 2 x (1 + 4 + ... + 49) / 16 = 17.5)."""
    d = np.array([rms / np.sqrt(17.5)], dtype="<f2").view(np.uint8)
    buf = np.empty((chunk, 18), dtype=np.uint8)
    buf[:, 0:2] = d
    left = n_blocks
    while left:
        m = min(chunk, left)
        q = rng.bit_generator.random_raw(m * 2).view(np.uint8)  # all 64 bits random
        buf[:m, 2:] = SYMMETRIC[q].reshape(m, 16)
        f.write(buf[:m].data)
        left -= m


def write_f32(f, name, shape, rng):
    if name.endswith("ffn_gate_inp.weight"):
        a = rng.normal(0.0, SIGMA, size=int(np.prod(shape))).astype("<f4")
    else:
        a = np.ones(int(np.prod(shape)), dtype="<f4")
    f.write(a.tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("arch", choices=["qwen3moe", "deepseek2"])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=0, help="keep the first N layers")
    ap.add_argument("--seed", type=int, default=27)
    args = ap.parse_args()
    kv, tensors, vocab = (qwen3moe if args.arch == "qwen3moe" else deepseek2)(args.layers)
    kv += [("general.alignment", V_U32, ALIGN)] + spm_vocab(vocab)
    rng = np.random.Generator(np.random.SFC64(args.seed))

    head = [b"GGUF", struct.pack("<IQQ", 3, len(tensors), len(kv))]
    for k, vt, v in kv:
        head += [gstr(k), struct.pack("<I", vt), gval(vt, v)]
    off, total = 0, 0
    for name, shape, ty in tensors:
        head += [gstr(name), struct.pack("<I", len(shape)),
                 struct.pack(f"<{len(shape)}Q", *shape), struct.pack("<IQ", ty, off)]
        off += (nbytes(shape, ty) + ALIGN - 1) // ALIGN * ALIGN
    total = off
    head = b"".join(head)
    pad = (-len(head)) % ALIGN
    print(f"{args.out}: {args.arch}, {len(tensors)} tensors, "
          f"{(len(head) + pad + total) / 1e9:.2f} GB", file=sys.stderr)
    with open(args.out, "wb") as f:
        f.write(head + b"\0" * pad)
        for name, shape, ty in tensors:
            n = nbytes(shape, ty)
            if ty == T_F32:
                write_f32(f, name, shape, rng)
            else:
                write_q4_0(f, n // 18, rng, sigma(name))
            f.write(b"\0" * ((-n) % ALIGN))


if __name__ == "__main__":
    main()
