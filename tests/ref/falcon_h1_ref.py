#!/usr/bin/env python3
"""Falcon-H1 (FalconH1ForCausalLM) in float64, one token at a time, and its shrunk
checkpoints.

Semantics from transformers' models/falcon_h1 (modular_falcon_h1.py: FalconH1Attention,
FalconH1RMSNormGated, FalconH1Mixer's torch_forward cache step, FalconH1MLP,
FalconH1DecoderLayer, compute_mup_vector, FalconH1Model, FalconH1ForCausalLM;
configuration_falcon_h1.py: the keys and defaults), written here independently of
facet's C code:

  x = embed_tokens[token] * embedding_multiplier
  per layer (every layer is both):
    h = RMSNorm(x) * input_layernorm                          (eps rms_norm_eps)
    m = mamba(h * ssm_in_multiplier) * ssm_out_multiplier
        zxbcdt = in_proj(.) (+ bias: mamba_proj_bias) * mup_vector: z (DI) *
                 ssm_multipliers[0], x (DI) * [1],
                 B (G N) * [2], C (G N) * [3], dt (NH) * [4]
        xBC = SiLU(depthwise causal conv1d over the last K inputs + bias)
        dt = softplus(dt + dt_bias); A = -exp(A_log) per head
        s = s * exp(A dt) + dt * B_g x   (per head h of group g = h // (NH / G))
        y = s C_g + D x
        y = mamba_rms_norm ? FalconH1RMSNormGated(y, z) : y * SiLU(z)
            FalconH1RMSNormGated: per group of DI / G channels, RMS-normalised (eps
            rms_norm_eps) times its weight, the gate SiLU(z) applied before the norm
            (norm_before_gate false) or after it (true)
        out_proj(y) (+ bias: projectors_bias)
    a = attn(h * attention_in_multiplier) * attention_out_multiplier
        q, k, v = h W^T (+ bias with attention_bias); k = k * key_multiplier;
        RoPE (rotate_half, base rope_theta) on q and k; GQA
        softmax(q k^T / sqrt(head_dim)) v over the positions so far; o_proj
    x = x + m + a
    h = RMSNorm(x) * pre_ff_layernorm
    x = x + down(up(h) * SiLU(gate(h) * mlp_multipliers[0])) * mlp_multipliers[1]
  logits = (RMSNorm(x) * final_layernorm) W_lm^T * lm_head_multiplier

Command line: falcon_h1_ref.py write OUT_DIR [--dtype f32|bf16] [--seed S] [--bias]
writes the shrunk Falcon-H1-0.5B config (n_groups 2, every multiplier != 1; --bias: every
projection bias on, the gated norm before the gate) and its model.safetensors.
"""

import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_facts  # noqa: E402
import reference  # noqa: E402
import safetensors_io  # noqa: E402

# tiiuae/Falcon-H1-0.5B-Base's config.json as NVIDIA Megatron-Bridge's unit test
# (tests/unit_tests/models/falcon_h1) copies it, with mamba_d_ssm 1536 = 24 heads x 64
# restored (the copy drops the key, without which FalconH1Config would take
# mamba_expand x hidden = 2048 and refuse 24 x 64): 36 layers, hidden 1024, 8 query heads
# of 64 on 2 KV heads, Mamba-2 of 24 heads x 64, one group, state 128, muP multipliers
FALCON_H1_0_5B = {
    "architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1",
    "attention_bias": False, "attention_dropout": 0.0, "attention_in_multiplier": 1.0,
    "attention_out_multiplier": 0.9375, "attn_layer_indices": None,
    "embedding_multiplier": 5.656854249492381, "head_dim": 64, "hidden_act": "silu",
    "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 2048,
    "key_multiplier": 0.39062499999999994, "lm_head_multiplier": 0.0390625,
    "mamba_chunk_size": 128, "mamba_conv_bias": True, "mamba_d_conv": 4, "mamba_d_head": 64,
    "mamba_d_ssm": 1536, "mamba_d_state": 128, "mamba_expand": 2, "mamba_n_groups": 1,
    "mamba_n_heads": 24, "mamba_norm_before_gate": False, "mamba_proj_bias": False,
    "mamba_rms_norm": False, "mamba_use_mlp": True, "max_position_embeddings": 16384,
    "mlp_bias": False, "mlp_multipliers": [0.8838834764831844, 0.5859375],
    "num_attention_heads": 8, "num_hidden_layers": 36, "num_key_value_heads": 2,
    "projectors_bias": False, "rms_norm_eps": 1e-5, "rope_scaling": None,
    "rope_theta": 100000000000.0, "ssm_in_multiplier": 1.25,
    "ssm_multipliers": [0.3535533905932738, 0.25, 0.3535533905932738, 0.5, 0.3535533905932738],
    "ssm_out_multiplier": 0.23570226039551587, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "vocab_size": 32784,
}

# tiiuae/Falcon-H1-1.5B's shape as a hybrid-cache sizing test in the code corpus copies
# its config.json (24 layers, hidden 2048, 8 heads of 128 on 2 KV heads, intermediate
# 4608, vocabulary 65537, Mamba-2 of 48 heads x 64 = 3072, one group, state 256, conv 4)
FALCON_H1_1_5B = {
    "architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1",
    "num_hidden_layers": 24, "hidden_size": 2048, "intermediate_size": 4608,
    "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 65537,
    "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_n_groups": 1, "mamba_n_heads": 48,
    "mamba_d_head": 64, "mamba_d_ssm": 3072,
}

# tiiuae/Falcon-H1-7B-Instruct's shape as a model-sizing test in the code corpus copies
# its config.json (44 layers, hidden 3072, 12 heads of 128 on 2 KV heads, intermediate
# 12288, vocabulary 130048, Mamba-2 of 24 heads x 128 = 3072, one group, state 256)
FALCON_H1_7B = {
    "architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1",
    "hidden_size": 3072, "num_hidden_layers": 44, "num_attention_heads": 12,
    "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 12288,
    "vocab_size": 130048, "tie_word_embeddings": False, "mamba_d_state": 256,
    "mamba_n_groups": 1, "mamba_n_heads": 24, "mamba_d_head": 128, "mamba_d_ssm": 3072,
    "mamba_expand": 2, "mamba_d_conv": 4, "mamba_chunk_size": 128,
    "max_position_embeddings": 262144,
}


def facts(cfg):
    """The facts FalconH1Config's defaults and __post_init__ give."""
    H = cfg["hidden_size"]
    nh = cfg.get("num_attention_heads", 32)
    NH = cfg.get("mamba_n_heads", 128)
    DI = cfg.get("mamba_d_ssm", 1024)
    if DI is None:
        DI = cfg.get("mamba_expand", 2) * H
    P = cfg.get("mamba_d_head", "auto")
    P = DI // NH if P == "auto" else P
    if P * NH != DI:
        raise ValueError("mamba_d_head * mamba_n_heads != mamba_d_ssm")
    lim = cfg.get("time_step_limit")
    if lim is not None and (lim[0] != 0.0 or not math.isinf(lim[1])):
        raise ValueError("reference: time_step_limit (0, inf) only")
    return {
        "H": H, "L": cfg.get("num_hidden_layers", 32), "V": cfg.get("vocab_size", 128000),
        "nh": nh, "nkv": cfg.get("num_key_value_heads") or nh,
        "hd": cfg.get("head_dim", H // nh), "I": cfg.get("intermediate_size", 14336),
        "attn_bias": cfg.get("attention_bias", False), "mlp_bias": cfg.get("mlp_bias", False),
        "theta": float(cfg.get("rope_theta", 10000.0)),
        "max_pos": cfg.get("max_position_embeddings", 8192),
        "eps": cfg.get("rms_norm_eps", 1e-5), "act": cfg.get("hidden_act", "silu"),
        "tied": cfg.get("tie_word_embeddings", False),
        "DI": DI, "N": cfg.get("mamba_d_state", 256), "K": cfg.get("mamba_d_conv", 4),
        "NH": NH, "P": P, "G": cfg.get("mamba_n_groups", 1),
        "conv_bias": cfg.get("mamba_conv_bias", True),
        "in_bias": cfg.get("mamba_proj_bias", False),
        "out_bias": cfg.get("projectors_bias", False),
        "rms_norm": cfg.get("mamba_rms_norm", False),
        "before_gate": cfg.get("mamba_norm_before_gate", True),
        "emb_mult": cfg.get("embedding_multiplier", 1.0),
        "lm_mult": cfg.get("lm_head_multiplier", 1.0),
        "key_mult": cfg.get("key_multiplier", 1.0),
        "attn_in": cfg.get("attention_in_multiplier", 1.0),
        "attn_out": cfg.get("attention_out_multiplier", 1.0),
        "ssm_in": cfg.get("ssm_in_multiplier", 1.0),
        "ssm_out": cfg.get("ssm_out_multiplier", 1.0),
        "ssm_mult": list(cfg.get("ssm_multipliers") or [1.0] * 5),
        "mlp_mult": list(cfg.get("mlp_multipliers") or [1.0, 1.0]),
    }


def shrink(cfg, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
           num_hidden_layers=3, vocab_size=512, mamba_n_heads=8, mamba_d_head=12,
           mamba_d_state=16, mamba_n_groups=2, **overrides):
    """The 0.5B's class at test size: GQA 8 : 2 -> 4 : 2, head_dim 16, the FFN width in its
    ratio to hidden_size, the Mamba-2 mixer 8 heads x 12 = 96 wide (mamba_d_ssm != expand
    x hidden) in 2 groups; its multipliers and flags kept, plus mamba_rms_norm on (so the
    grouped gated norm runs) and every multiplier away from 1 (attention_in_multiplier is
    1.0 in the release); rope_theta 10000 (the release's 1e11 turns nothing at 600
    positions)."""
    c = dict(cfg)
    H = cfg["hidden_size"]
    c.update(hidden_size=hidden_size, num_attention_heads=num_attention_heads,
             num_key_value_heads=num_key_value_heads, head_dim=head_dim,
             num_hidden_layers=num_hidden_layers, vocab_size=vocab_size,
             mamba_n_heads=mamba_n_heads, mamba_d_head=mamba_d_head,
             mamba_d_ssm=mamba_n_heads * mamba_d_head, mamba_d_state=mamba_d_state,
             mamba_n_groups=mamba_n_groups, rope_theta=10000.0,
             intermediate_size=max(8, int(round(hidden_size * cfg["intermediate_size"] / H / 8)) * 8),
             mamba_rms_norm=True, attention_in_multiplier=1.15,
             mlp_multipliers=[0.8838834764831844, 0.5859375 * 2])
    c.update(overrides)
    return c


def tensor_specs(cfg):
    f = facts(cfg)
    H, DI, N, K, NH, G, I = f["H"], f["DI"], f["N"], f["K"], f["NH"], f["G"], f["I"]
    CD = DI + 2 * G * N
    q, kv = f["nh"] * f["hd"], f["nkv"] * f["hd"]
    specs = [("model.embed_tokens.weight", (f["V"], H))]
    for i in range(f["L"]):
        p = "model.layers.%d." % i
        specs.append((p + "input_layernorm.weight", (H,)))
        m = p + "mamba."
        specs.append((m + "in_proj.weight", (DI + CD + NH, H)))
        if f["in_bias"]:
            specs.append((m + "in_proj.bias", (DI + CD + NH,)))
        specs.append((m + "conv1d.weight", (CD, 1, K)))
        if f["conv_bias"]:
            specs.append((m + "conv1d.bias", (CD,)))
        specs += [(m + "dt_bias", (NH,)), (m + "A_log", (NH,)), (m + "D", (NH,))]
        if f["rms_norm"]:
            specs.append((m + "norm.weight", (DI,)))
        specs.append((m + "out_proj.weight", (H, DI)))
        if f["out_bias"]:
            specs.append((m + "out_proj.bias", (H,)))
        a = p + "self_attn."
        for name, rows in (("q", q), ("k", kv), ("v", kv)):
            specs.append((a + "%s_proj.weight" % name, (rows, H)))
            if f["attn_bias"]:
                specs.append((a + "%s_proj.bias" % name, (rows,)))
        specs.append((a + "o_proj.weight", (H, q)))
        if f["attn_bias"]:
            specs.append((a + "o_proj.bias", (H,)))
        specs.append((p + "pre_ff_layernorm.weight", (H,)))
        ff = p + "feed_forward."
        for name, shape in (("gate", (I, H)), ("up", (I, H)), ("down", (H, I))):
            specs.append((ff + "%s_proj.weight" % name, shape))
            if f["mlp_bias"]:
                specs.append((ff + "%s_proj.bias" % name, (shape[0],)))
    specs.append(("model.final_layernorm.weight", (H,)))
    if not f["tied"]:
        specs.append(("lm_head.weight", (f["V"], H)))
    return specs


def init(name, shape, cfg, seed):
    """Seeded weights that keep a shrunk Falcon-H1 lively despite its multipliers: each
    branch's output projection scaled up by the inverse of its multiplier, logits of std
    ~2 after lm_head_multiplier, Mamba-2 decays and steps of the released ranges."""
    f = facts(cfg)
    H = f["H"]
    rng = np.random.default_rng([seed, sum(map(ord, name)) * 7919 + len(name)])
    n = rng.standard_normal(shape)
    if name.endswith("A_log"):
        return np.log(rng.uniform(1.0, 16.0, shape))
    if name.endswith("dt_bias"):  # softplus^-1 of dt in [1e-3, 1e-1], as the init draws it
        dt = np.exp(rng.uniform(math.log(1e-3), math.log(1e-1), shape))
        return dt + np.log(-np.expm1(-dt))
    if name.endswith(".D"):
        return 1.0 + 0.1 * n
    if name.endswith("layernorm.weight") or name.endswith("norm.weight"):
        return 1.0 + 0.1 * n
    if name == "model.embed_tokens.weight":
        return n * 2.0 / math.sqrt(H) / f["emb_mult"]
    if name == "lm_head.weight":
        return n * 2.0 / math.sqrt(H) / f["lm_mult"]
    if name.endswith(".bias"):
        return 0.1 * n
    std = 2.0 / math.sqrt(shape[-1])
    if name.endswith("conv1d.weight"):
        return n * 0.5
    if name.endswith("mamba.out_proj.weight"):
        std /= f["ssm_out"]
    if name.endswith("mamba.in_proj.weight"):
        std /= f["ssm_in"]
    if name.endswith("o_proj.weight"):
        std /= f["attn_out"]
    if name.endswith("down_proj.weight"):
        std /= f["mlp_mult"][1]
    if name.endswith(("q_proj.weight", "k_proj.weight")):
        std *= 2.0
    return n * std


def write(cfg, out_dir, dtype="f32", seed=0):
    st = {"f32": "F32", "bf16": "BF16"}[dtype]
    cfg = dict(cfg, torch_dtype={"f32": "float32", "bf16": "bfloat16"}[dtype])
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as fp:
        json.dump(cfg, fp, indent=2)
    specs = tensor_specs(cfg)
    shapes = dict(specs)
    safetensors_io.write_file(os.path.join(out_dir, "model.safetensors"),
                              [(n, st, s) for n, s in specs],
                              lambda n: init(n, shapes[n], cfg, seed))
    return out_dir


def _silu(x):
    return x / (1.0 + np.exp(-x))


def _softplus(x):
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


class Reference:
    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as fp:
            self.cfg = json.load(fp)
        self.f = f = facts(self.cfg)
        if f["act"] not in ("silu", "swish"):
            raise ValueError("reference: hidden_act silu only")
        path = os.path.join(folder, "model.safetensors")
        header, _, start = safetensors_io.read_header(path)
        self.w = {k: safetensors_io.read_tensor(path, v, start) for k, v in header.items()}
        self.vocab_size = f["V"]
        spec = hf_facts.RopeSpec(theta=f["theta"], scaling={"rope_type": "default"},
                                 rotary_dim=f["hd"], max_position_embeddings=f["max_pos"],
                                 original_max_position_embeddings=None)
        self.inv_freq, self.rope_factor = reference.rope_inv_freq(spec)
        DI, G, N, NH = f["DI"], f["G"], f["N"], f["NH"]
        m = f["ssm_mult"]
        # compute_mup_vector: the in_proj output's five segments
        self.mup = np.concatenate([np.full(DI, m[0]), np.full(DI, m[1]), np.full(G * N, m[2]),
                                   np.full(G * N, m[3]), np.full(NH, m[4])])

    def new_state(self):
        """Per layer: the Mamba-2 conv window and SSM state, and the attention's K and V."""
        f = self.f
        CD = f["DI"] + 2 * f["G"] * f["N"]
        return [{"conv": np.zeros((CD, f["K"])), "ssm": np.zeros((f["NH"], f["P"], f["N"])),
                 "k": [], "v": []} for _ in range(f["L"])]

    def _norm(self, x, w):
        return x / np.sqrt(np.mean(x * x) + self.f["eps"]) * w

    def _lin(self, x, name):
        y = self.w[name + ".weight"] @ x
        b = self.w.get(name + ".bias")
        return y if b is None else y + b

    def _mamba(self, i, h, st):
        """FalconH1Mixer's cache step (torch_forward, one token)."""
        f, w = self.f, self.w
        p = "model.layers.%d.mamba." % i
        DI, N, NH, P, G = f["DI"], f["N"], f["NH"], f["P"], f["G"]
        CD = DI + 2 * G * N
        zxbcdt = self._lin(h * f["ssm_in"], p + "in_proj") * self.mup
        z, xbc, dt = zxbcdt[:DI], zxbcdt[DI:DI + CD], zxbcdt[DI + CD:]
        st["conv"] = np.roll(st["conv"], -1, axis=1)
        st["conv"][:, -1] = xbc
        xbc = np.sum(st["conv"] * w[p + "conv1d.weight"][:, 0, :], axis=1)
        if f["conv_bias"]:
            xbc = xbc + w[p + "conv1d.bias"]
        xbc = _silu(xbc)
        x, B, C = xbc[:DI], xbc[DI:DI + G * N], xbc[DI + G * N:]
        dt = _softplus(dt + w[p + "dt_bias"])
        A = -np.exp(w[p + "A_log"])
        rep = NH // G
        Bh = np.repeat(B.reshape(G, N), rep, axis=0)
        Ch = np.repeat(C.reshape(G, N), rep, axis=0)
        xh = x.reshape(NH, P)
        st["ssm"] = st["ssm"] * np.exp(dt * A)[:, None, None] + \
            (dt[:, None, None] * Bh[:, None, :]) * xh[:, :, None]
        y = (np.einsum("hpn,hn->hp", st["ssm"], Ch) + w[p + "D"][:, None] * xh).reshape(DI)
        gate = _silu(z)
        if f["rms_norm"]:  # FalconH1RMSNormGated over n_groups groups
            if not f["before_gate"]:
                y = y * gate
            yg = y.reshape(G, DI // G)
            yg = yg / np.sqrt(np.mean(yg * yg, axis=1, keepdims=True) + f["eps"])
            y = (w[p + "norm.weight"].reshape(G, DI // G) * yg).reshape(DI)
            if f["before_gate"]:
                y = y * gate
        else:
            y = y * gate
        return self._lin(y, p + "out_proj")

    def _attention(self, i, h, st, pos):
        f = self.f
        a = "model.layers.%d.self_attn." % i
        nh, nkv, hd = f["nh"], f["nkv"], f["hd"]
        q = self._lin(h, a + "q_proj").reshape(nh, hd)
        k = self._lin(h, a + "k_proj").reshape(nkv, hd) * f["key_mult"]
        v = self._lin(h, a + "v_proj").reshape(nkv, hd)
        q = reference.apply_rope(q[None], [pos], self.inv_freq, self.rope_factor)[0]
        k = reference.apply_rope(k[None], [pos], self.inv_freq, self.rope_factor)[0]
        st["k"].append(k)
        st["v"].append(v)
        K, V = np.array(st["k"]), np.array(st["v"])
        rep = nh // nkv
        out = np.empty((nh, hd))
        for hh in range(nh):
            s = K[:, hh // rep, :] @ q[hh] / math.sqrt(hd)
            e = np.exp(s - s.max())
            out[hh] = (e / e.sum()) @ V[:, hh // rep, :]
        return self._lin(out.reshape(nh * hd), a + "o_proj")

    def _mlp(self, i, h):
        f = self.f
        p = "model.layers.%d.feed_forward." % i
        g = self._lin(h, p + "gate_proj") * f["mlp_mult"][0]
        u = self._lin(h, p + "up_proj")
        return self._lin(u * _silu(g), p + "down_proj") * f["mlp_mult"][1]

    def step(self, token, state, pos):
        """One token through every layer; returns its logits (float64)."""
        f, w = self.f, self.w
        x = w["model.embed_tokens.weight"][token] * f["emb_mult"]
        for i in range(f["L"]):
            p = "model.layers.%d." % i
            h = self._norm(x, w[p + "input_layernorm.weight"])
            m = self._mamba(i, h, state[i]) * f["ssm_out"]
            a = self._attention(i, h * f["attn_in"], state[i], pos) * f["attn_out"]
            x = x + (m + a)
            h = self._norm(x, w[p + "pre_ff_layernorm.weight"])
            x = x + self._mlp(i, h)
        x = self._norm(x, w["model.final_layernorm.weight"])
        head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
        return (head @ x) * f["lm_mult"]

    def generate(self, prompt_ids, n):
        """Greedy: {"logits": rows for prompt + generated[:-1], "generated_ids",
        "margins"} (compare.greedy_agreement's shape)."""
        state = self.new_state()
        rows = [self.step(t, state, i) for i, t in enumerate(prompt_ids)]
        gen, margins = [], []
        for k in range(n):
            last = rows[-1]
            top = np.sort(last)[-2:]
            gen.append(int(np.argmax(last)))
            margins.append(float(top[1] - top[0]))
            if k + 1 < n:
                rows.append(self.step(gen[-1], state, len(rows)))
        return {"logits": np.array(rows), "generated_ids": gen, "margins": margins}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("out")
    w.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    w.add_argument("--seed", type=int, default=0)
    w.add_argument("--bias", action="store_true",
                   help="every projection bias on (attention, MLP, in_proj, out_proj) and the "
                        "gated norm before the gate")
    a = ap.parse_args(argv)
    over = {}
    if a.bias:
        over = {"attention_bias": True, "mlp_bias": True, "mamba_proj_bias": True,
                "projectors_bias": True, "mamba_norm_before_gate": True}
    write(shrink(FALCON_H1_0_5B, **over), a.out, a.dtype, a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
