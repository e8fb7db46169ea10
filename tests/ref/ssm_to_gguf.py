#!/usr/bin/env python3
"""Write an F32 (--bf16: BF16 matrices) GGUF file of a Mamba, Mamba-2, LFM2, Granite 4.0-H,
Nemotron-H, Falcon-H1 or Jamba checkpoint (facet's own writer, struct only), laid out as
llama.cpp reads its `mamba`, `mamba2`, `lfm2`, `granitehybrid`, `nemotron_h`, `falcon-h1`
and `jamba` architectures, so llama.cpp and facet run the same weights.

    /usr/bin/python3 tests/ref/ssm_to_gguf.py HF_DIR OUT.gguf --vocab-from VOCAB.gguf [--bf16]

HF_DIR: a folder written by tests/ref/mamba_ref.py or hybrid_ref.py (config.json and
model.safetensors). VOCAB.gguf: a GGUF file whose tokenizer.* keys are copied verbatim
(the tests use the corpus's llama-F32.gguf, the 512-piece stories260K vocabulary; its
token count must equal the checkpoint's vocab_size).

What llama.cpp's layout asks for (read from its loaders, src/models/mamba*.cpp and
lfm2.cpp, and the names of gguf-py's tensor table), done here by hand:
- Mamba / Mamba-2: no attention keys (feed_forward_length and attention.head_count are
  written as 0, as llama.cpp's converter does), ssm.{conv_kernel, inner_size, state_size,
  time_step_rank, group_count}; ssm.time_step_rank is Mamba-2's head count;
  A_log stored as A = -exp(A_log) (`blk.N.ssm_a`, no .weight suffix; Mamba-2: [1, heads]);
  D as `blk.N.ssm_d` (Mamba-2: [1, heads]); the depthwise conv1d weight squeezed to
  [channels, kernel]; Mamba-2's gated-norm weight as [groups, inner / groups]; dt_bias
  (Mamba-2) and dt_proj.bias (Mamba) both `blk.N.ssm_dt.bias`.
- LFM2: attention.head_count_kv an int32 array, 0 on the short-convolution layers;
  feed_forward_length the width after Lfm2MLP's adjustment; shortconv.l_cache; the conv
  layers' tensors under `blk.N.shortconv.*` (conv weight squeezed to [channels, L_cache]);
  the final norm (embedding_norm) as `token_embd_norm.weight`; rotary NEOX, so q/k rows
  stay as they are.
- granitehybrid / nemotron_h / falcon-h1 / jamba: see granite_hybrid(), nemotron_h(),
  falcon_h1() and jamba() below.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

U32, I32, F32, BOOL, STR, ARR = 4, 5, 6, 7, 8, 9
_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def _s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def _kv(key, t, v):
    out = _s(key) + struct.pack("<I", t)
    if t == STR:
        return out + _s(v)
    if t == BOOL:
        return out + struct.pack("<?", v)
    if t == ARR:
        et, items = v
        fmt = {U32: "I", I32: "i", F32: "f"}[et]
        return out + struct.pack("<IQ", et, len(items)) + b"".join(struct.pack("<" + fmt, x) for x in items)
    return out + struct.pack("<" + {U32: "I", I32: "i", F32: "f", BOOL: "?"}[t], v)


def _skip(buf, pos, t):
    """The position after a value of type t at buf[pos:]."""
    if t in _SCALAR:
        return pos + _SCALAR[t]
    if t == STR:
        (n,) = struct.unpack_from("<Q", buf, pos)
        return pos + 8 + n
    if t == ARR:
        et, n = struct.unpack_from("<IQ", buf, pos)
        pos += 12
        if et in _SCALAR:
            return pos + n * _SCALAR[et]
        for _ in range(n):
            pos = _skip(buf, pos, et)
        return pos
    raise ValueError("unknown GGUF value type %d" % t)


def tokenizer_kvs(path):
    """The raw bytes of every tokenizer.* pair of GGUF file `path`, their count, and the
    token count."""
    buf = open(path, "rb").read()
    magic, version, _n_t, n_kv = struct.unpack_from("<4sIQQ", buf, 0)
    assert magic == b"GGUF" and version == 3, path
    pos, out, n, n_tokens = 24, b"", 0, None
    for _ in range(n_kv):
        start = pos
        (klen,) = struct.unpack_from("<Q", buf, pos)
        key = buf[pos + 8:pos + 8 + klen].decode()
        pos += 8 + klen
        (t,) = struct.unpack_from("<I", buf, pos)
        end = _skip(buf, pos + 4, t)
        if key.startswith("tokenizer."):
            out += buf[start:end]
            n += 1
            if key == "tokenizer.ggml.tokens":
                n_tokens = struct.unpack_from("<IQ", buf, pos + 4)[1]
        pos = end
    return out, n, n_tokens


def _bf16_bits(a):
    """float32 array -> uint16 bfloat16 patterns, round to nearest even (exact for values
    that came from a BF16 checkpoint)."""
    u = np.ascontiguousarray(a, dtype="<f4").view(np.uint32)
    return ((u + (((u >> 16) & 1) + np.uint32(0x7FFF))) >> 16).astype("<u2")


def write_gguf(path, arch, kvs, tensors, vocab_from, bf16=False):
    """kvs: [(key, type, value)] (general.architecture added); tensors: [(name, array)]
    written F32, numpy shape reversed into ne as GGUF does. bf16: the weight matrices
    (2-D `.weight` tensors but the conv kernels, which llama.cpp's conv reads as F32, and
    Mamba-2's reshaped norm) written as GGUF type 30 (BF16, file type 32), the rest F32."""
    tok, n_tok, _ = tokenizer_kvs(vocab_from)
    kvs = [("general.architecture", STR, arch), ("general.file_type", U32, 32 if bf16 else 0)] + kvs
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs) + n_tok)
    head += b"".join(_kv(k, t, v) for k, t, v in kvs) + tok
    align, off, datas = 32, 0, []
    for name, a in tensors:
        half = (bf16 and a.ndim == 2 and name.endswith(".weight") and "norm" not in name
                and not name.endswith(("conv.weight", "conv1d.weight")))
        a = _bf16_bits(a) if half else np.ascontiguousarray(a, dtype="<f4")
        ne = list(reversed(a.shape))
        head += _s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        head += struct.pack("<IQ", 30 if half else 0, off)
        b = a.tobytes()
        datas.append(b + b"\0" * (-len(b) % align))
        off += len(datas[-1])
    head += b"\0" * (-len(head) % align)
    with open(path, "wb") as fp:
        fp.write(head)
        for d in datas:
            fp.write(d)


def read_checkpoint(src):
    path = os.path.join(src, "model.safetensors")
    hdr, _meta, start = safetensors_io.read_header(path)
    names = [k for k in hdr if k != "__metadata__"]
    return {k: safetensors_io.read_tensor(path, hdr[k], start, out_dtype=np.float32) for k in names}


def mamba(cfg, w):
    v2 = cfg["model_type"] == "mamba2"
    arch = "mamba2" if v2 else "mamba"
    H, L = cfg["hidden_size"], cfg["num_hidden_layers"]
    DI = cfg.get("expand", 2) * H
    if v2:
        G, NH = cfg.get("n_groups", 1), cfg.get("num_heads")
        rank = NH
    else:
        r = cfg.get("time_step_rank", "auto")
        rank = math.ceil(H / 16) if r == "auto" else r
    kvs = [(arch + ".context_length", U32, 2 ** 20), (arch + ".embedding_length", U32, H),
           (arch + ".feed_forward_length", U32, 0), (arch + ".attention.head_count", U32, 0),
           (arch + ".block_count", U32, L),
           (arch + ".ssm.conv_kernel", U32, cfg.get("conv_kernel", 4)),
           (arch + ".ssm.inner_size", U32, DI),
           (arch + ".ssm.state_size", U32, cfg.get("state_size", 128 if v2 else 16)),
           (arch + ".ssm.time_step_rank", U32, rank)]
    if v2:
        kvs.append((arch + ".ssm.group_count", U32, G))
    kvs.append((arch + ".attention.layer_norm_rms_epsilon", F32, cfg.get("layer_norm_epsilon", 1e-5)))
    if not v2:
        kvs.append((arch + ".ssm.dt_b_c_rms", BOOL, False))
    t = [("token_embd.weight", w["backbone.embeddings.weight"]),
         ("output_norm.weight", w["backbone.norm_f.weight"])]
    if "lm_head.weight" in w and not np.array_equal(w["lm_head.weight"], w["backbone.embeddings.weight"]):
        t.append(("output.weight", w["lm_head.weight"]))
    for i in range(L):
        p, b = "backbone.layers.%d." % i, "blk.%d." % i
        m = p + "mixer."
        t += [(b + "attn_norm.weight", w[p + "norm.weight"]), (b + "ssm_in.weight", w[m + "in_proj.weight"]),
              (b + "ssm_conv1d.weight", w[m + "conv1d.weight"][:, 0, :])]
        if m + "conv1d.bias" in w:
            t.append((b + "ssm_conv1d.bias", w[m + "conv1d.bias"]))
        A = -np.exp(w[m + "A_log"].astype(np.float64)).astype(np.float32)
        if v2:
            t += [(b + "ssm_dt.bias", w[m + "dt_bias"]), (b + "ssm_a", A.reshape(-1, 1)),
                  (b + "ssm_d", w[m + "D"].reshape(-1, 1)),
                  (b + "ssm_norm.weight", w[m + "norm.weight"].reshape(G, DI // G))]
        else:
            t += [(b + "ssm_x.weight", w[m + "x_proj.weight"]), (b + "ssm_dt.weight", w[m + "dt_proj.weight"]),
                  (b + "ssm_dt.bias", w[m + "dt_proj.bias"]), (b + "ssm_a", A), (b + "ssm_d", w[m + "D"])]
        t.append((b + "ssm_out.weight", w[m + "out_proj.weight"]))
    return arch, kvs, t


def lfm2(cfg, w):
    import hybrid_ref
    f = hybrid_ref.lfm2_facts(cfg)
    a, L = "lfm2", f["L"]
    kvs = [(a + ".block_count", U32, L), (a + ".context_length", U32, f["max_pos"]),
           (a + ".embedding_length", U32, f["H"]), (a + ".attention.head_count", U32, f["nh"]),
           (a + ".attention.head_count_kv", ARR, (I32, [0 if x == "conv" else f["nkv"] for x in f["types"]])),
           (a + ".rope.freq_base", F32, f["theta"]),
           (a + ".attention.layer_norm_rms_epsilon", F32, f["eps"]),
           (a + ".vocab_size", U32, f["V"]), (a + ".shortconv.l_cache", U32, f["K"]),
           (a + ".feed_forward_length", U32, f["I"])]
    t = [("token_embd.weight", w["model.embed_tokens.weight"]),
         ("token_embd_norm.weight", w["model.embedding_norm.weight"])]
    if "lm_head.weight" in w and not f["tied"]:
        t.append(("output.weight", w["lm_head.weight"]))
    for i, kind in enumerate(f["types"]):
        p, b = "model.layers.%d." % i, "blk.%d." % i
        t.append((b + "attn_norm.weight", w[p + "operator_norm.weight"]))
        if kind == "conv":
            t += [(b + "shortconv.in_proj.weight", w[p + "conv.in_proj.weight"]),
                  (b + "shortconv.conv.weight", w[p + "conv.conv.weight"][:, 0, :]),
                  (b + "shortconv.out_proj.weight", w[p + "conv.out_proj.weight"])]
        else:
            s = p + "self_attn."
            t += [(b + "attn_q.weight", w[s + "q_proj.weight"]), (b + "attn_k.weight", w[s + "k_proj.weight"]),
                  (b + "attn_v.weight", w[s + "v_proj.weight"]), (b + "attn_output.weight", w[s + "out_proj.weight"]),
                  (b + "attn_q_norm.weight", w[s + "q_layernorm.weight"]),
                  (b + "attn_k_norm.weight", w[s + "k_layernorm.weight"])]
        t += [(b + "ffn_norm.weight", w[p + "ffn_norm.weight"]),
              (b + "ffn_gate.weight", w[p + "feed_forward.w1.weight"]),
              (b + "ffn_up.weight", w[p + "feed_forward.w3.weight"]),
              (b + "ffn_down.weight", w[p + "feed_forward.w2.weight"])]
    return a, kvs, t


def _permute(w, heads):
    """convert_hf_to_gguf.py's LlamaModel.permute: each head's rows from rotate-half
    pairs (first half, second half) to interleaved ones."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def granite_hybrid(cfg, w):
    """GraniteMoeHybrid (Granite 4.0-H) as llama.cpp's granitehybrid: GraniteHybridModel
    writes GraniteMoeModel's keys (the granite multipliers as *_scale, the experts, the
    shared MLP's width), head_count_kv as an array with 0 on the Mamba-2 layers, ssm.*
    as Mamba2Model does, rope.scaling.finetuned false for a hybrid without rope (and
    context_length 2^20); q/k rows permuted as LlamaModel does (undo_permute); the
    experts' input_linear split into gate / up exps, the shared MLP's into gate / up
    shexp; the Mamba-2 tensors as `mamba2`."""
    import hybrid_ref
    f = hybrid_ref.facts(cfg)
    a, L, H = "granitehybrid", f["L"], f["H"]
    if f["E"] <= 0:
        raise SystemExit("granitehybrid without experts is not written here")
    attn = [i for i, t in enumerate(f["types"]) if t == "attention"]
    rope = bool(f["rope"])
    kvs = [(a + ".block_count", U32, L),
           (a + ".context_length", U32, f["max_pos"] if rope or not attn else 2 ** 20),
           (a + ".embedding_length", U32, H), (a + ".feed_forward_length", U32, f["I"]),
           (a + ".attention.head_count", U32, f["nh"]),
           (a + ".attention.head_count_kv", ARR, (I32, [f["nkv"] if i in attn else 0 for i in range(L)])),
           (a + ".rope.freq_base", F32, f["theta"]),
           (a + ".attention.layer_norm_rms_epsilon", F32, f["eps"]),
           (a + ".expert_count", U32, f["E"]), (a + ".expert_used_count", U32, f["k"]),
           (a + ".vocab_size", U32, f["V"]), (a + ".rope.dimension_count", U32, f["hd"]),
           (a + ".attention.scale", F32, f["scale"]), (a + ".embedding_scale", F32, f["emb_mult"]),
           (a + ".residual_scale", F32, f["res_mult"]), (a + ".logit_scale", F32, f["logits_scaling"]),
           (a + ".expert_shared_feed_forward_length", U32, f["S"]),
           (a + ".ssm.conv_kernel", U32, f["K"]), (a + ".ssm.state_size", U32, f["N"]),
           (a + ".ssm.group_count", U32, f["G"]), (a + ".ssm.inner_size", U32, f["DI"]),
           (a + ".ssm.time_step_rank", U32, f["NH"]),
           (a + ".rope.scaling.finetuned", BOOL, rope)]
    t = [("token_embd.weight", w["model.embed_tokens.weight"]),
         ("output_norm.weight", w["model.norm.weight"])]
    if not f["tied"]:
        t.append(("output.weight", w["lm_head.weight"]))
    I, S, G, DI = f["I"], f["S"], f["G"], f["DI"]
    for i, kind in enumerate(f["types"]):
        p, b = "model.layers.%d." % i, "blk.%d." % i
        t.append((b + "attn_norm.weight", w[p + "input_layernorm.weight"]))
        if kind == "mamba":
            m = p + "mamba."
            t += [(b + "ssm_in.weight", w[m + "in_proj.weight"]),
                  (b + "ssm_conv1d.weight", w[m + "conv1d.weight"][:, 0, :])]
            if m + "conv1d.bias" in w:
                t.append((b + "ssm_conv1d.bias", w[m + "conv1d.bias"]))
            A = -np.exp(w[m + "A_log"].astype(np.float64)).astype(np.float32)
            t += [(b + "ssm_dt.bias", w[m + "dt_bias"]), (b + "ssm_a", A.reshape(-1, 1)),
                  (b + "ssm_d", w[m + "D"].reshape(-1, 1)),
                  (b + "ssm_norm.weight", w[m + "norm.weight"].reshape(G, DI // G)),
                  (b + "ssm_out.weight", w[m + "out_proj.weight"])]
        else:
            s = p + "self_attn."
            t += [(b + "attn_q.weight", _permute(w[s + "q_proj.weight"], f["nh"])),
                  (b + "attn_k.weight", _permute(w[s + "k_proj.weight"], f["nkv"])),
                  (b + "attn_v.weight", w[s + "v_proj.weight"]),
                  (b + "attn_output.weight", w[s + "o_proj.weight"])]
        e, sh = w[p + "block_sparse_moe.input_linear.weight"], w[p + "shared_mlp.input_linear.weight"]
        t += [(b + "ffn_norm.weight", w[p + "post_attention_layernorm.weight"]),
              (b + "ffn_gate_inp.weight", w[p + "block_sparse_moe.router.layer.weight"]),
              (b + "ffn_gate_exps.weight", e[:, :I, :]), (b + "ffn_up_exps.weight", e[:, I:, :]),
              (b + "ffn_down_exps.weight", w[p + "block_sparse_moe.output_linear.weight"]),
              (b + "ffn_gate_shexp.weight", sh[:S]), (b + "ffn_up_shexp.weight", sh[S:]),
              (b + "ffn_down_shexp.weight", w[p + "shared_mlp.output_linear.weight"])]
    return a, kvs, t


def nemotron_h(cfg, w):
    """Nemotron-H (dense: M, *, - layers) as llama.cpp's nemotron_h: NemotronHModel is a
    GraniteHybridModel, so head_count_kv is an array (0 off the attention layers) and
    feed_forward_length one too (intermediate_size on the MLP layers, 0 elsewhere);
    key_length / value_length head_dim; ssm.inner_size mamba_num_heads x mamba_head_dim,
    ssm.time_step_rank mamba_num_heads; rope.scaling.finetuned false (no rope) and
    context_length 2^20; layer_norm_epsilon as both attention.layer_norm_rms_epsilon (the
    blocks' RMSNorms) and attention.layer_norm_epsilon (which llama.cpp requires, for its
    multi-token-prediction head's final norm: TextModel writes it from
    layer_norm_epsilon; the rms key, which its loader also requires, comes from a
    config's rms_norm_eps); q/k rows permuted (undo_permute); every layer's norm attn_norm;
    the MLP's up / down as ffn_up / ffn_down; the Mamba-2 tensors as `mamba2`."""
    import hybrid_ref
    f = hybrid_ref.nemotron_facts(cfg)
    a, L, H, pat = "nemotron_h", f["L"], f["H"], f["pat"]
    if "E" in pat:
        raise SystemExit("nemotron_h_moe is not written here")
    kvs = [(a + ".block_count", U32, L), (a + ".context_length", U32, 2 ** 20),
           (a + ".embedding_length", U32, H),
           (a + ".feed_forward_length", ARR, (I32, [f["I"] if t == "-" else 0 for t in pat])),
           (a + ".attention.head_count", U32, f["nh"]),
           (a + ".attention.head_count_kv", ARR, (I32, [f["nkv"] if t == "*" else 0 for t in pat])),
           (a + ".rope.freq_base", F32, float(cfg.get("rope_theta", 10000.0))),
           (a + ".attention.layer_norm_rms_epsilon", F32, f["eps"]),
           (a + ".attention.layer_norm_epsilon", F32, f["eps"]),
           (a + ".vocab_size", U32, f["V"]), (a + ".rope.dimension_count", U32, f["hd"]),
           (a + ".ssm.conv_kernel", U32, f["K"]), (a + ".ssm.state_size", U32, f["N"]),
           (a + ".ssm.group_count", U32, f["G"]), (a + ".ssm.inner_size", U32, f["DI"]),
           (a + ".ssm.time_step_rank", U32, f["NH"]),
           (a + ".rope.scaling.finetuned", BOOL, False),
           (a + ".attention.key_length", U32, f["hd"]), (a + ".attention.value_length", U32, f["hd"])]
    t = [("token_embd.weight", w["backbone.embeddings.weight"]),
         ("output_norm.weight", w["backbone.norm_f.weight"])]
    if not f["tied"]:
        t.append(("output.weight", w["lm_head.weight"]))
    G, DI = f["G"], f["DI"]
    for i, kind in enumerate(pat):
        p, b = "backbone.layers.%d." % i, "blk.%d." % i
        m = p + "mixer."
        t.append((b + "attn_norm.weight", w[p + "norm.weight"]))
        if kind == "M":
            t += [(b + "ssm_in.weight", w[m + "in_proj.weight"]),
                  (b + "ssm_conv1d.weight", w[m + "conv1d.weight"][:, 0, :])]
            if m + "conv1d.bias" in w:
                t.append((b + "ssm_conv1d.bias", w[m + "conv1d.bias"]))
            A = -np.exp(w[m + "A_log"].astype(np.float64)).astype(np.float32)
            t += [(b + "ssm_dt.bias", w[m + "dt_bias"]), (b + "ssm_a", A.reshape(-1, 1)),
                  (b + "ssm_d", w[m + "D"].reshape(-1, 1)),
                  (b + "ssm_norm.weight", w[m + "norm.weight"].reshape(G, DI // G)),
                  (b + "ssm_out.weight", w[m + "out_proj.weight"])]
        elif kind == "*":
            t += [(b + "attn_q.weight", _permute(w[m + "q_proj.weight"], f["nh"])),
                  (b + "attn_k.weight", _permute(w[m + "k_proj.weight"], f["nkv"])),
                  (b + "attn_v.weight", w[m + "v_proj.weight"]),
                  (b + "attn_output.weight", w[m + "o_proj.weight"])]
        else:
            t += [(b + "ffn_up.weight", w[m + "up_proj.weight"]),
                  (b + "ffn_down.weight", w[m + "down_proj.weight"])]
    return a, kvs, t


def falcon_h1(cfg, w):
    """Falcon-H1 as llama.cpp's falcon-h1: FalconH1Model (a Mamba2Model) folds the muP
    multipliers into the weights, in float32 as torch multiplies the F32 tensors (k_proj
    by key_multiplier then attention_in_multiplier; in_proj by ssm_in_multiplier, then
    its z / x / B / C / dt rows by ssm_multipliers; q_proj, v_proj by
    attention_in_multiplier; o_proj, out_proj, gate_proj, down_proj, lm_head,
    embed_tokens by theirs) and writes none of them; keys: Mamba2Model's ssm.* (inner_size
    mamba_d_ssm, time_step_rank mamba_d_ssm / mamba_d_head), context_length
    max_position_embeddings, feed_forward_length, head_count, head_count_kv (one
    integer), key_length / value_length head_dim, rope.freq_base, vocab_size;
    pre_ff_layernorm as `blk.N.ffn_norm` with no .weight (gguf-py maps the full name to
    FFN_PRE_NORM); final_layernorm as output_norm; no q/k permutation (NEOX rope)."""
    import falcon_h1_ref
    f = falcon_h1_ref.facts(cfg)
    a, L, H = "falcon-h1", f["L"], f["H"]
    DI, G, N = f["DI"], f["G"], f["N"]
    kvs = [(a + ".context_length", U32, f["max_pos"]), (a + ".embedding_length", U32, H),
           (a + ".feed_forward_length", U32, f["I"]), (a + ".attention.head_count", U32, f["nh"]),
           (a + ".block_count", U32, L), (a + ".ssm.conv_kernel", U32, f["K"]),
           (a + ".ssm.inner_size", U32, DI), (a + ".ssm.state_size", U32, N),
           (a + ".ssm.time_step_rank", U32, DI // f["P"]), (a + ".ssm.group_count", U32, G),
           (a + ".attention.layer_norm_rms_epsilon", F32, f["eps"]),
           (a + ".vocab_size", U32, f["V"]), (a + ".attention.head_count_kv", U32, f["nkv"]),
           (a + ".attention.key_length", U32, f["hd"]), (a + ".attention.value_length", U32, f["hd"]),
           (a + ".rope.freq_base", F32, f["theta"])]
    f32 = np.float32

    def mul(x, *ms):
        x = x.astype(f32)
        for m_ in ms:
            x = (x * f32(m_)).astype(f32)
        return x

    t = [("token_embd.weight", mul(w["model.embed_tokens.weight"], f["emb_mult"])),
         ("output_norm.weight", w["model.final_layernorm.weight"])]
    if not f["tied"]:
        t.append(("output.weight", mul(w["lm_head.weight"], f["lm_mult"])))
    sm = f["ssm_mult"]
    GN = G * N
    for i in range(L):
        p, b = "model.layers.%d." % i, "blk.%d." % i
        m, s = p + "mamba.", p + "self_attn."
        ip = mul(w[m + "in_proj.weight"], f["ssm_in"])
        for k, (lo, hi) in enumerate([(0, DI), (DI, 2 * DI), (2 * DI, 2 * DI + GN),
                                      (2 * DI + GN, 2 * DI + 2 * GN), (2 * DI + 2 * GN, ip.shape[0])]):
            ip[lo:hi] = (ip[lo:hi] * f32(sm[k])).astype(f32)
        t += [(b + "attn_norm.weight", w[p + "input_layernorm.weight"]),
              (b + "ssm_in.weight", ip),
              (b + "ssm_conv1d.weight", w[m + "conv1d.weight"][:, 0, :])]
        if m + "conv1d.bias" in w:
            t.append((b + "ssm_conv1d.bias", w[m + "conv1d.bias"]))
        A = -np.exp(w[m + "A_log"].astype(np.float64)).astype(np.float32)
        t += [(b + "ssm_dt.bias", w[m + "dt_bias"]), (b + "ssm_a", A.reshape(-1, 1)),
              (b + "ssm_d", w[m + "D"].reshape(-1, 1))]
        if m + "norm.weight" in w:
            t.append((b + "ssm_norm.weight", w[m + "norm.weight"].reshape(G, DI // G)))
        t += [(b + "ssm_out.weight", mul(w[m + "out_proj.weight"], f["ssm_out"])),
              (b + "attn_q.weight", mul(w[s + "q_proj.weight"], f["attn_in"])),
              (b + "attn_k.weight", mul(w[s + "k_proj.weight"], f["key_mult"], f["attn_in"])),
              (b + "attn_v.weight", mul(w[s + "v_proj.weight"], f["attn_in"])),
              (b + "attn_output.weight", mul(w[s + "o_proj.weight"], f["attn_out"])),
              (b + "ffn_norm", w[p + "pre_ff_layernorm.weight"]),
              (b + "ffn_gate.weight", mul(w[p + "feed_forward.gate_proj.weight"], f["mlp_mult"][0])),
              (b + "ffn_up.weight", w[p + "feed_forward.up_proj.weight"]),
              (b + "ffn_down.weight", mul(w[p + "feed_forward.down_proj.weight"], f["mlp_mult"][1]))]
    return a, kvs, t


def jamba(cfg, w):
    """Jamba as llama.cpp's jamba (JambaModel): head_count_kv an array (0 on the Mamba
    layers, by attn_layer_period / offset), ssm.{conv_kernel, inner_size (mamba_expand x
    hidden), state_size, time_step_rank (mamba_dt_rank)}, expert_count /
    expert_used_count; no expert period (the MoE layers are those with ffn_gate_inp);
    the Mamba-1 tensors as `mamba` plus ssm_{dt,b,c}_norm (dt/b/c_layernorm); the experts
    stacked into ffn_{gate,up,down}_exps, the router as ffn_gate_inp; no q/k permutation
    (no rope)."""
    import hybrid_ref
    f = hybrid_ref.jamba_facts(cfg)
    a, L, H = "jamba", f["L"], f["H"]
    kvs = [(a + ".block_count", U32, L), (a + ".context_length", U32, cfg.get("max_position_embeddings", 262144)),
           (a + ".embedding_length", U32, H), (a + ".feed_forward_length", U32, f["I"]),
           (a + ".attention.head_count", U32, f["nh"]),
           (a + ".attention.head_count_kv", ARR, (I32, [f["nkv"] if t == "attention" else 0 for t in f["types"]])),
           (a + ".ssm.conv_kernel", U32, f["K"]), (a + ".ssm.inner_size", U32, f["DI"]),
           (a + ".ssm.state_size", U32, f["N"]), (a + ".ssm.time_step_rank", U32, f["R"]),
           (a + ".attention.layer_norm_rms_epsilon", F32, f["eps"]),
           (a + ".expert_count", U32, f["E"]), (a + ".expert_used_count", U32, f["k"])]
    t = [("token_embd.weight", w["model.embed_tokens.weight"]),
         ("output_norm.weight", w["model.final_layernorm.weight"])]
    if not f["tied"]:
        t.append(("output.weight", w["lm_head.weight"]))
    for i, kind in enumerate(f["types"]):
        p, b = "model.layers.%d." % i, "blk.%d." % i
        t.append((b + "attn_norm.weight", w[p + "input_layernorm.weight"]))
        if kind == "mamba":
            m = p + "mamba."
            t += [(b + "ssm_in.weight", w[m + "in_proj.weight"]),
                  (b + "ssm_conv1d.weight", w[m + "conv1d.weight"][:, 0, :]),
                  (b + "ssm_conv1d.bias", w[m + "conv1d.bias"]),
                  (b + "ssm_x.weight", w[m + "x_proj.weight"]),
                  (b + "ssm_dt.weight", w[m + "dt_proj.weight"]),
                  (b + "ssm_dt.bias", w[m + "dt_proj.bias"]),
                  (b + "ssm_a", -np.exp(w[m + "A_log"].astype(np.float64)).astype(np.float32)),
                  (b + "ssm_d", w[m + "D"]), (b + "ssm_out.weight", w[m + "out_proj.weight"]),
                  (b + "ssm_dt_norm.weight", w[m + "dt_layernorm.weight"]),
                  (b + "ssm_b_norm.weight", w[m + "b_layernorm.weight"]),
                  (b + "ssm_c_norm.weight", w[m + "c_layernorm.weight"])]
        else:
            s = p + "self_attn."
            t += [(b + "attn_q.weight", w[s + "q_proj.weight"]), (b + "attn_k.weight", w[s + "k_proj.weight"]),
                  (b + "attn_v.weight", w[s + "v_proj.weight"]), (b + "attn_output.weight", w[s + "o_proj.weight"])]
        t.append((b + "ffn_norm.weight", w[p + "pre_ff_layernorm.weight"]))
        ff = p + "feed_forward."
        if f["moe"][i]:
            t.append((b + "ffn_gate_inp.weight", w[ff + "router.weight"]))
            for kind_, name in (("down_proj", "ffn_down_exps"), ("gate_proj", "ffn_gate_exps"),
                                ("up_proj", "ffn_up_exps")):
                t.append((b + name + ".weight",
                          np.stack([w[ff + "experts.%d.%s.weight" % (e, kind_)] for e in range(f["E"])])))
        else:
            t += [(b + "ffn_gate.weight", w[ff + "gate_proj.weight"]), (b + "ffn_up.weight", w[ff + "up_proj.weight"]),
                  (b + "ffn_down.weight", w[ff + "down_proj.weight"])]
    return a, kvs, t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hf_dir")
    ap.add_argument("out")
    ap.add_argument("--vocab-from", required=True)
    ap.add_argument("--bf16", action="store_true",
                    help="weight matrices as BF16 (exact for a BF16 checkpoint), the rest F32")
    a = ap.parse_args(argv)
    cfg = json.load(open(os.path.join(a.hf_dir, "config.json")))
    w = read_checkpoint(a.hf_dir)
    conv = {"mamba": mamba, "mamba2": mamba, "lfm2": lfm2,
            "granitemoehybrid": granite_hybrid, "nemotron_h": nemotron_h,
            "falcon_h1": falcon_h1, "jamba": jamba}[cfg["model_type"]]
    arch, kvs, tensors = conv(cfg, w)
    n_tok = tokenizer_kvs(a.vocab_from)[2]
    if n_tok != cfg["vocab_size"]:
        sys.exit("%s has %s tokens, the checkpoint's vocab_size is %d" % (a.vocab_from, n_tok, cfg["vocab_size"]))
    write_gguf(a.out, arch, kvs, tensors, a.vocab_from, a.bf16)
    print("wrote %s (%s, %d tensors)" % (a.out, arch, len(tensors)))


if __name__ == "__main__":
    main()
