#!/usr/bin/env python3
"""Granite 4.0-H (GraniteMoeHybridForCausalLM) in float64, one token at a time, and its
shrunk checkpoints.

Semantics from transformers' models/granitemoehybrid (modular_granitemoehybrid.py: the
decoder layer, model and head; configuration_granitemoehybrid.py: the keys and defaults)
and the modules it reuses (bamba's BambaMixer for the Mamba-2 layers, granitemoeshared's
attention, MoE and shared MLP), written here independently of facet's C code:

  x = embed_tokens[token] * embedding_multiplier
  per layer i (layer_types[i] "mamba" or "attention"):
    h = RMSNorm(x) * input_layernorm                    (eps rms_norm_eps)
    h = mamba(h)   Mamba-2 step (mamba_ref.mamba2_step: conv over x B C, per-head dt and
                   decay, B/C per group, D skip, gated RMSNorm per group of DI / G with
                   eps rms_norm_eps, time_step_limit (0, inf) as BambaMixer fixes it)
      or attn(h)   q, k, v = h W^T (+ bias with attention_bias); RoPE only when
                   position_embedding_type == "rope"; GQA; softmax(q k^T *
                   attention_multiplier) v over the positions so far; o_proj
    x = x + h * residual_multiplier
    h = RMSNorm(x) * post_attention_layernorm
    m = shared_mlp(h) (+ block_sparse_moe(h) when num_local_experts > 0)
        shared_mlp: (g, u) = chunk(h W_in^T, 2); (act(g) * u) W_out^T
        moe: logits = h W_router^T; the k largest; weights softmax over those k;
             sum_j w_j * expert_j(h), expert_j as shared_mlp with input_linear[j] [2I, H]
             and output_linear[j] [H, I]
    x = x + m * residual_multiplier
  logits = (RMSNorm(x) * norm) W_lm^T / logits_scaling   (lm_head tied to embed_tokens
                                                            when tie_word_embeddings)

Command line: hybrid_ref.py write OUT_DIR [--dtype f32|bf16] [--seed S]
[--family granite|lfm2|nemotron] writes the shrunk Granite 4.0-H-Tiny (LFM2-1.2B,
Nemotron-H) config and its model.safetensors; hybrid_ref.py write-all OUT_DIR writes the
three into OUT_DIR/granite, OUT_DIR/lfm2 and OUT_DIR/nemotron.
"""

import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_facts  # noqa: E402
import mamba_ref  # noqa: E402
import reference  # noqa: E402
import safetensors_io  # noqa: E402

# ibm-granite/granite-4.0-h-tiny's config.json (its published values; the corpus holds no
# granitemoehybrid config): 40 layers, 4 of them attention, 64 experts (6 per token) and
# a shared MLP on every layer, Mamba-2 with 48 heads of 64, one group, state 128
GRANITE_4_H_TINY = {
    "architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid",
    "attention_bias": False, "attention_dropout": 0.0, "attention_multiplier": 0.0078125,
    "bos_token_id": 100257, "embedding_multiplier": 12, "eos_token_id": 100257,
    "hidden_act": "silu", "hidden_size": 1536, "init_method": "mup",
    "initializer_range": 0.1, "intermediate_size": 512,
    "layer_types": (["mamba"] * 5 + ["attention"] + ["mamba"] * 9 + ["attention"]
                    + ["mamba"] * 9 + ["attention"] + ["mamba"] * 9 + ["attention"]
                    + ["mamba"] * 4),
    "logits_scaling": 6, "mamba_chunk_size": 256, "mamba_conv_bias": True, "mamba_d_conv": 4,
    "mamba_d_head": 64, "mamba_d_state": 128, "mamba_expand": 2, "mamba_n_groups": 1,
    "mamba_n_heads": 48, "mamba_proj_bias": False, "max_position_embeddings": 131072,
    "normalization_function": "rmsnorm", "num_attention_heads": 12, "num_experts_per_tok": 6,
    "num_hidden_layers": 40, "num_key_value_heads": 4, "num_local_experts": 64,
    "output_router_logits": False, "pad_token_id": 100256, "position_embedding_type": "nope",
    "residual_multiplier": 0.22, "rms_norm_eps": 1e-05, "rope_scaling": None,
    "rope_theta": 10000, "router_aux_loss_coef": 0.0, "shared_intermediate_size": 1024,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
    "vocab_size": 100352,
}


def facts(cfg):
    """The facts the modeling code reads (GraniteMoeHybridConfig's defaults)."""
    H = cfg["hidden_size"]
    L = cfg["num_hidden_layers"]
    nh = cfg.get("num_attention_heads", 32)
    expand = cfg.get("mamba_expand", 2)
    NH = cfg.get("mamba_n_heads", 128)
    DI = expand * H
    if DI % NH:
        raise ValueError("mamba_n_heads must divide mamba_expand * hidden_size")
    P = cfg.get("mamba_d_head", "auto")
    P = DI // NH if P == "auto" else P
    if P * NH != DI:
        raise ValueError("mamba_d_head * mamba_n_heads != mamba_expand * hidden_size")
    lt = cfg.get("layer_types") or ["mamba"] * L
    return {
        "H": H, "L": L, "V": cfg["vocab_size"], "types": list(lt),
        "nh": nh, "nkv": cfg.get("num_key_value_heads") or nh, "hd": H // nh,
        "attn_bias": cfg.get("attention_bias", False),
        "scale": cfg.get("attention_multiplier", 1.0),
        "rope": cfg.get("position_embedding_type") == "rope",
        "theta": float(cfg.get("rope_theta", 10000.0)),
        "max_pos": cfg.get("max_position_embeddings", 2048),
        "emb_mult": cfg.get("embedding_multiplier", 1.0),
        "res_mult": cfg.get("residual_multiplier", 1.0),
        "logits_scaling": cfg.get("logits_scaling", 1.0),
        "eps": cfg.get("rms_norm_eps", 1e-6), "act": cfg.get("hidden_act", "silu"),
        "E": cfg.get("num_local_experts", 8), "k": cfg.get("num_experts_per_tok", 2),
        "I": cfg.get("intermediate_size", 11008), "S": cfg.get("shared_intermediate_size", 1024),
        "tied": cfg.get("tie_word_embeddings", False),
        # the Mamba-2 mixer (mamba_ref.mamba2_step's keys)
        "DI": DI, "N": cfg.get("mamba_d_state", 256), "K": cfg.get("mamba_d_conv", 4),
        "NH": NH, "P": P, "G": cfg.get("mamba_n_groups", 1),
        "conv_bias": cfg.get("mamba_conv_bias", True), "proj_bias": cfg.get("mamba_proj_bias", False),
    }


def shrink(cfg, hidden_size=96, num_attention_heads=6, num_key_value_heads=2,
           layer_types=("mamba", "mamba", "attention", "mamba"), vocab_size=512,
           mamba_n_heads=12, mamba_d_state=16, num_local_experts=8, num_experts_per_tok=3,
           **overrides):
    """The same config class and facts at test size: the multipliers, the GQA ratio
    (12 : 4 -> 6 : 2), mamba_n_groups, mamba_d_conv, mamba_expand, the flags and the
    position embedding kept; mamba_d_head = expand * hidden / heads; the FFN widths in
    their ratio to hidden_size (multiples of 8); layer_types a mamba-led mix as the
    original's; special token ids inside the vocabulary."""
    c = dict(cfg)
    H = cfg["hidden_size"]
    di = c.get("mamba_expand", 2) * hidden_size
    c.update(hidden_size=hidden_size, num_attention_heads=num_attention_heads,
             num_key_value_heads=num_key_value_heads, layer_types=list(layer_types),
             num_hidden_layers=len(layer_types), vocab_size=vocab_size,
             mamba_n_heads=mamba_n_heads, mamba_d_head=di // mamba_n_heads,
             mamba_d_state=mamba_d_state, num_local_experts=num_local_experts,
             num_experts_per_tok=num_experts_per_tok)
    for key in ("intermediate_size", "shared_intermediate_size"):
        c[key] = max(8, int(round(hidden_size * cfg[key] / H / 8)) * 8)
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if isinstance(c.get(key), int) and c[key] >= vocab_size:
            c[key] = vocab_size - 1 - (key == "pad_token_id")
    c.update(overrides)
    return c


def tensor_specs(cfg):
    f = facts(cfg)
    H, DI, N, K, NH, G = f["H"], f["DI"], f["N"], f["K"], f["NH"], f["G"]
    CD = DI + 2 * G * N
    q, kv = f["nh"] * f["hd"], f["nkv"] * f["hd"]
    E, I, S = f["E"], f["I"], f["S"]
    specs = [("model.embed_tokens.weight", (f["V"], H))]
    for i, t in enumerate(f["types"]):
        p = "model.layers.%d." % i
        specs.append((p + "input_layernorm.weight", (H,)))
        if t == "mamba":
            m = p + "mamba."
            specs += [(m + "in_proj.weight", (DI + CD + NH, H)), (m + "conv1d.weight", (CD, 1, K))]
            if f["conv_bias"]:
                specs.append((m + "conv1d.bias", (CD,)))
            specs += [(m + "dt_bias", (NH,)), (m + "A_log", (NH,)), (m + "D", (NH,)),
                      (m + "norm.weight", (DI,)), (m + "out_proj.weight", (H, DI))]
        else:
            a = p + "self_attn."
            for name, rows in (("q", q), ("k", kv), ("v", kv)):
                specs.append((a + "%s_proj.weight" % name, (rows, H)))
                if f["attn_bias"]:
                    specs.append((a + "%s_proj.bias" % name, (rows,)))
            specs.append((a + "o_proj.weight", (H, q)))
            if f["attn_bias"]:
                specs.append((a + "o_proj.bias", (H,)))
        specs.append((p + "post_attention_layernorm.weight", (H,)))
        if E > 0:
            specs += [(p + "block_sparse_moe.router.layer.weight", (E, H)),
                      (p + "block_sparse_moe.input_linear.weight", (E, 2 * I, H)),
                      (p + "block_sparse_moe.output_linear.weight", (E, H, I))]
        specs += [(p + "shared_mlp.input_linear.weight", (2 * S, H)),
                  (p + "shared_mlp.output_linear.weight", (H, S))]
    specs.append(("model.norm.weight", (H,)))
    if not f["tied"]:
        specs.append(("lm_head.weight", (f["V"], H)))
    return specs


def init(name, shape, cfg, seed):
    """Seeded weights of scales that keep a random Granite 4.0-H lively: logits of std ~2
    after logits_scaling, blocks that outweigh the embedding in the residual stream
    despite residual_multiplier, attention about as sharp as 1/sqrt(head_dim) would make
    it despite attention_multiplier, and the Mamba-2 parameters of mamba_ref.init."""
    f = facts(cfg)
    H = f["H"]
    rng = np.random.default_rng([seed, sum(map(ord, name)) * 7919 + len(name)])
    n = rng.standard_normal(shape)
    head = 2.0 * f["logits_scaling"] / math.sqrt(H)
    emb_in = f["emb_mult"] * head
    out_gain = (max(3.0, 4.0 * emb_in) / 3.0) / f["res_mult"]
    qk_gain = min(16.0, max(1.0, math.sqrt(f["hd"] ** -0.5 / f["scale"])))
    if ".mamba." in name and not name.endswith("out_proj.weight"):
        return mamba_ref.init(name.replace(".mamba.", ".mixer."), shape,
                              {"model_type": "mamba2", "hidden_size": H, "num_hidden_layers": 1,
                               "vocab_size": f["V"]}, seed)
    if name.endswith("layernorm.weight") or name == "model.norm.weight":
        return 1.0 + 0.1 * n
    if name == "model.embed_tokens.weight" or name == "lm_head.weight":
        return n * head
    if name.endswith(".bias"):
        return 0.1 * n
    fan = shape[-1]
    std = 2.0 / math.sqrt(fan)
    if name.endswith(("o_proj.weight", "out_proj.weight", "output_linear.weight")):
        std *= out_gain
    if name.endswith(("q_proj.weight", "k_proj.weight")):
        std *= qk_gain
    return n * std


def write(cfg, out_dir, dtype="f32", seed=0):
    st = {"f32": "F32", "bf16": "BF16"}[dtype]
    cfg = dict(cfg)
    cfg["torch_dtype"] = {"f32": "float32", "bf16": "bfloat16"}[dtype]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as fp:
        json.dump(cfg, fp, indent=2)
    specs = tensor_specs(cfg)
    shapes = dict(specs)
    safetensors_io.write_file(os.path.join(out_dir, "model.safetensors"),
                              [(n, st, s) for n, s in specs],
                              lambda n: init(n, shapes[n], cfg, seed))
    return out_dir


def _act(name, x):
    if name not in ("silu", "swish"):
        raise NotImplementedError("hidden_act %r" % name)
    return x / (1.0 + np.exp(-x))


class Reference:
    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as fp:
            self.cfg = json.load(fp)
        self.f = facts(self.cfg)
        if self.f["proj_bias"]:
            raise ValueError("reference: mamba_proj_bias false only")
        path = os.path.join(folder, "model.safetensors")
        header, _, start = safetensors_io.read_header(path)
        self.w = {k: safetensors_io.read_tensor(path, v, start) for k, v in header.items()}
        self.vocab_size = self.f["V"]
        f = self.f
        if f["rope"]:
            spec = hf_facts.RopeSpec(theta=f["theta"], scaling={"rope_type": "default"},
                                     rotary_dim=f["hd"], max_position_embeddings=f["max_pos"],
                                     original_max_position_embeddings=None)
            self.inv_freq, self.rope_factor = reference.rope_inv_freq(spec)

    def new_state(self):
        """Per layer: the Mamba-2 state, or the attention layer's keys and values."""
        f = self.f
        CD = f["DI"] + 2 * f["G"] * f["N"]
        return [{"conv": np.zeros((CD, f["K"])), "ssm": np.zeros((f["NH"], f["P"], f["N"]))}
                if t == "mamba" else {"k": [], "v": []} for t in f["types"]]

    def _norm(self, x, w):
        return x / np.sqrt(np.mean(x * x) + self.f["eps"]) * w

    def _lin(self, x, name):
        y = self.w[name + ".weight"] @ x
        b = self.w.get(name + ".bias")
        return y if b is None else y + b

    def _attention(self, i, h, st, pos):
        f = self.f
        a = "model.layers.%d.self_attn." % i
        nh, nkv, hd = f["nh"], f["nkv"], f["hd"]
        q = self._lin(h, a + "q_proj").reshape(nh, hd)
        k = self._lin(h, a + "k_proj").reshape(nkv, hd)
        v = self._lin(h, a + "v_proj").reshape(nkv, hd)
        if f["rope"]:
            q = reference.apply_rope(q[None], [pos], self.inv_freq, self.rope_factor)[0]
            k = reference.apply_rope(k[None], [pos], self.inv_freq, self.rope_factor)[0]
        st["k"].append(k)
        st["v"].append(v)
        K, V = np.array(st["k"]), np.array(st["v"])  # [S, nkv, hd]
        rep = nh // nkv
        out = np.empty((nh, hd))
        for hh in range(nh):
            s = K[:, hh // rep, :] @ q[hh] * f["scale"]
            p = np.exp(s - s.max())
            out[hh] = (p / p.sum()) @ V[:, hh // rep, :]
        return self._lin(out.reshape(nh * hd), a + "o_proj")

    def _ffn(self, i, h):
        f = self.f
        p = "model.layers.%d." % i
        S = f["S"]
        gu = self.w[p + "shared_mlp.input_linear.weight"] @ h
        out = self.w[p + "shared_mlp.output_linear.weight"] @ (_act(f["act"], gu[:S]) * gu[S:])
        if f["E"] > 0:
            logits = self.w[p + "block_sparse_moe.router.layer.weight"] @ h
            top = np.argsort(-logits, kind="stable")[: f["k"]]
            g = np.exp(logits[top] - logits[top].max())
            g /= g.sum()
            I = f["I"]
            for j, e in enumerate(top):
                gu = self.w[p + "block_sparse_moe.input_linear.weight"][e] @ h
                y = self.w[p + "block_sparse_moe.output_linear.weight"][e] @ (
                    _act(f["act"], gu[:I]) * gu[I:])
                out = out + g[j] * y
        return out

    def step(self, token, state, pos):
        """One token through every layer; returns its logits (float64)."""
        f, w = self.f, self.w
        x = w["model.embed_tokens.weight"][token] * f["emb_mult"]
        for i, t in enumerate(f["types"]):
            p = "model.layers.%d." % i
            h = self._norm(x, w[p + "input_layernorm.weight"])
            if t == "mamba":
                h = mamba_ref.mamba2_step(w, p + "mamba.", f, h, state[i])
            else:
                h = self._attention(i, h, state[i], pos)
            x = x + h * f["res_mult"]
            h = self._norm(x, w[p + "post_attention_layernorm.weight"])
            x = x + self._ffn(i, h) * f["res_mult"]
        x = self._norm(x, w["model.norm.weight"])
        head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
        return head @ x / f["logits_scaling"]

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


# ---------------------------------------------------------------------------- Bamba
# BambaForCausalLM (transformers models/bamba: modular_bamba.py, configuration_bamba.py):
#   x = embed_tokens[token]
#   per layer i ("attention" iff i in attn_layer_indices, else "mamba"):
#     h = RMSNorm(x) * input_layernorm                   (eps rms_norm_eps)
#     h = mamba(h)  BambaMixer: the Mamba-2 step above (mamba_ref.mamba2_step)
#       or attn(h)  Llama's attention without biases; head_dim = hidden / heads; RoPE
#                   (rotate_half) on the first head_dim * 0.5 dims only (the config class
#                   fixes partial_rotary_factor 0.5); GQA softmax(q k^T / sqrt(head_dim)) v
#     x = x + h;  x = x + down(silu(gate(RMSNorm(x) * pre_ff_layernorm)) * up(...))
#   logits = (RMSNorm(x) * final_layernorm) W_lm^T

# ibm-ai-platform/Bamba-9B: 32 layers, hidden 4096, 32 heads, mamba_d_state 128 and
# attn_layer_indices [9, 18, 27] as its config.json publishes them, vocabulary 128256
# (Llama 3's tokenizer); the other keys are BambaConfig's defaults (its docstring's
# reference checkpoint): 8 KV heads, intermediate 14336, 128 Mamba heads of 64, one group,
# conv 4, expand 2. The corpus holds no bamba config.
BAMBA_9B = {
    "architectures": ["BambaForCausalLM"], "model_type": "bamba",
    "attention_dropout": 0.0, "attn_layer_indices": [9, 18, 27], "bos_token_id": 128000,
    "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "mamba_chunk_size": 256,
    "mamba_conv_bias": True, "mamba_d_conv": 4, "mamba_d_head": 64, "mamba_d_state": 128,
    "mamba_expand": 2, "mamba_n_groups": 1, "mamba_n_heads": 128, "mamba_proj_bias": False,
    "max_position_embeddings": 262144, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "num_logits_to_keep": 1, "pad_token_id": 0,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": 128256,
    "z_loss_coefficient": 0.0,
}


def bamba_facts(cfg):
    """Bamba's facts in Reference's shape (facts() above names Granite's keys)."""
    c = dict(cfg)
    L = c["num_hidden_layers"]
    idx = c.get("attn_layer_indices") or []
    c["layer_types"] = ["attention" if i in idx else "mamba" for i in range(L)]
    c.setdefault("max_position_embeddings", 262144)
    c.setdefault("rms_norm_eps", 1e-5)
    f = facts(c)
    nh = f["nh"]
    f.update(hd=c.get("head_dim", f["H"] // nh), attn_bias=False, rope=True, E=0,
             emb_mult=1.0, res_mult=1.0, logits_scaling=1.0,
             I=c.get("intermediate_size", 14336))
    f["scale"] = f["hd"] ** -0.5
    f["rotary_dim"] = int(f["hd"] * 0.5)
    return f


def bamba_shrink(cfg, hidden_size=64, num_attention_heads=4, num_key_value_heads=1,
                 num_hidden_layers=4, attn_layer_indices=(2,), vocab_size=512,
                 mamba_n_heads=8, mamba_d_state=16, **overrides):
    """Bamba-9B's class and flags at test size: GQA 32 : 8 -> 4 : 1, head_dim 16 (rotary
    over 8), the FFN width in its ratio to hidden_size, mamba_d_head = expand * hidden /
    heads, one attention layer among Mamba-2 ones; special ids inside the vocabulary."""
    c = dict(cfg)
    H = cfg["hidden_size"]
    di = c.get("mamba_expand", 2) * hidden_size
    c.update(hidden_size=hidden_size, num_attention_heads=num_attention_heads,
             num_key_value_heads=num_key_value_heads, num_hidden_layers=num_hidden_layers,
             attn_layer_indices=list(attn_layer_indices), vocab_size=vocab_size,
             mamba_n_heads=mamba_n_heads, mamba_d_head=di // mamba_n_heads,
             mamba_d_state=mamba_d_state,
             intermediate_size=max(8, int(round(hidden_size * cfg["intermediate_size"] / H / 8)) * 8))
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if isinstance(c.get(key), int) and c[key] >= vocab_size:
            c[key] = vocab_size - 1 - (key == "pad_token_id")
    c.update(overrides)
    return c


def bamba_tensor_specs(cfg):
    f = bamba_facts(cfg)
    H, I = f["H"], f["I"]
    specs = []
    for n, s in tensor_specs(dict(cfg, layer_types=f["types"], num_local_experts=0,
                                  head_dim=f["hd"], attention_bias=False,
                                  intermediate_size=I, shared_intermediate_size=I)):
        if ".shared_mlp." in n:
            continue
        n = n.replace("post_attention_layernorm", "pre_ff_layernorm")
        n = n.replace("model.norm.weight", "model.final_layernorm.weight")
        specs.append((n, s))
        if n.endswith("pre_ff_layernorm.weight"):
            p = n[: -len("pre_ff_layernorm.weight")] + "feed_forward."
            specs += [(p + "gate_proj.weight", (I, H)), (p + "up_proj.weight", (I, H)),
                      (p + "down_proj.weight", (H, I))]
    return specs


def bamba_init(name, shape, cfg, seed):
    """mamba_ref.init's Mamba-2 parameters; weights of std 2 / sqrt(fan_in), norms near 1
    (no multipliers to compensate for)."""
    rng = np.random.default_rng([seed, sum(map(ord, name)) * 7919 + len(name)])
    n = rng.standard_normal(shape)
    H = cfg["hidden_size"]
    if ".mamba." in name and not name.endswith("out_proj.weight"):
        return mamba_ref.init(name.replace(".mamba.", ".mixer."), shape,
                              {"model_type": "mamba2", "hidden_size": H, "num_hidden_layers": 1,
                               "vocab_size": cfg["vocab_size"]}, seed)
    if name.endswith("layernorm.weight"):
        return 1.0 + 0.1 * n
    if name in ("model.embed_tokens.weight", "lm_head.weight"):
        return n * 2.0 / math.sqrt(H)
    return n * 2.0 / math.sqrt(shape[-1])


def bamba_write(cfg, out_dir, dtype="f32", seed=0):
    st = {"f32": "F32", "bf16": "BF16"}[dtype]
    cfg = dict(cfg, torch_dtype={"f32": "float32", "bf16": "bfloat16"}[dtype])
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as fp:
        json.dump(cfg, fp, indent=2)
    specs = bamba_tensor_specs(cfg)
    shapes = dict(specs)
    safetensors_io.write_file(os.path.join(out_dir, "model.safetensors"),
                              [(n, st, s) for n, s in specs],
                              lambda n: bamba_init(n, shapes[n], cfg, seed))
    return out_dir


class BambaReference(Reference):
    """Reference's loop with Bamba's facts, rotary over half of each head, its norm names
    and SwiGLU feed_forward."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as fp:
            cfg = json.load(fp)
        if cfg.get("mamba_proj_bias"):
            raise ValueError("reference: mamba_proj_bias false only")
        self.cfg, self.f = cfg, bamba_facts(cfg)
        path = os.path.join(folder, "model.safetensors")
        header, _, start = safetensors_io.read_header(path)
        w = {k: safetensors_io.read_tensor(path, v, start) for k, v in header.items()}
        # Reference's names: the FFN norm and the final norm
        self.w = {k.replace("pre_ff_layernorm", "post_attention_layernorm")
                  .replace("model.final_layernorm", "model.norm"): v for k, v in w.items()}
        self.vocab_size = self.f["V"]
        f = self.f
        spec = hf_facts.RopeSpec(theta=f["theta"], scaling={"rope_type": "default"},
                                 rotary_dim=f["rotary_dim"], max_position_embeddings=f["max_pos"],
                                 original_max_position_embeddings=None)
        self.inv_freq, self.rope_factor = reference.rope_inv_freq(spec)

    def _ffn(self, i, h):
        p = "model.layers.%d.feed_forward." % i
        g = self.w[p + "gate_proj.weight"] @ h
        u = self.w[p + "up_proj.weight"] @ h
        return self.w[p + "down_proj.weight"] @ (_act(self.f["act"], g) * u)


# ---------------------------------------------------------------------------- Jamba
# JambaForCausalLM (transformers models/jamba: modular_jamba.py, configuration_jamba.py):
#   x = embed_tokens[token]
#   per layer i ("attention" iff i % attn_layer_period == attn_layer_offset, else "mamba"):
#     h = RMSNorm(x) * input_layernorm                    (eps rms_norm_eps everywhere)
#     "mamba": JambaMambaMixer (Mamba-1): (u, z) = chunk(h W_in^T, 2); u = silu(causal
#              depthwise conv1d(u) + b); (dt, B, C) = split(u W_x^T, [R, N, N]);
#              dt, B, C = RMSNorm of each * dt_layernorm / b_layernorm / c_layernorm;
#              dt = softplus(dt W_dt^T + b_dt); s = exp(A dt) s + dt B u (A = -exp(A_log));
#              y = (s C + D u) * silu(z); out_proj
#     "attention": q, k, v without biases or positions; GQA softmax(q k^T / sqrt(hd)) v
#     x = x + h;  h = RMSNorm(x) * pre_ff_layernorm
#     FFN: on i % expert_layer_period == expert_layer_offset (num_experts > 1) an MoE:
#          p = softmax(h W_router^T) over every expert, the top k kept as they are (no
#          renormalisation), sum_j p_j * expert_j(h); elsewhere one SwiGLU MLP
#     x = x + FFN
#   logits = (RMSNorm(x) * final_layernorm) W_lm^T

# ai21labs/Jamba-v0.1's config.json (its published values; the corpus holds no jamba
# config): 32 layers, attention on 4 (period 8, offset 4), 16 experts (top 2) on every
# other layer (period 2, offset 1), Mamba d_state 16, dt_rank 256
JAMBA_V0_1 = {
    "architectures": ["JambaForCausalLM"], "model_type": "jamba",
    "attention_dropout": 0.0, "attn_layer_offset": 4, "attn_layer_period": 8,
    "bos_token_id": 1, "eos_token_id": 2, "expert_layer_offset": 1, "expert_layer_period": 2,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "mamba_conv_bias": True, "mamba_d_conv": 4,
    "mamba_d_state": 16, "mamba_dt_rank": 256, "mamba_expand": 2, "mamba_proj_bias": False,
    "max_position_embeddings": 262144, "num_attention_heads": 32, "num_experts": 16,
    "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "num_logits_to_keep": 1, "output_router_logits": False, "pad_token_id": 0,
    "rms_norm_eps": 1e-06, "router_aux_loss_coef": 0.001, "sliding_window": None,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
    "use_mamba_kernels": True, "vocab_size": 65536,
}


def jamba_facts(cfg):
    H = cfg["hidden_size"]
    L = cfg["num_hidden_layers"]
    nh = cfg.get("num_attention_heads", 32)
    ap, ao = cfg.get("attn_layer_period", 8), cfg.get("attn_layer_offset", 4)
    ep, eo = cfg.get("expert_layer_period", 2), cfg.get("expert_layer_offset", 1)
    E = cfg.get("num_experts", 16)
    R = cfg.get("mamba_dt_rank", "auto")
    return {
        "H": H, "L": L, "V": cfg["vocab_size"], "nh": nh,
        "nkv": cfg.get("num_key_value_heads") or nh, "hd": H // nh,
        "types": ["attention" if i % ap == ao else "mamba" for i in range(L)],
        "moe": [E > 1 and i % ep == eo for i in range(L)],
        "E": E, "k": cfg.get("num_experts_per_tok", 2), "I": cfg.get("intermediate_size", 14336),
        "eps": cfg.get("rms_norm_eps", 1e-6), "act": cfg.get("hidden_act", "silu"),
        "tied": cfg.get("tie_word_embeddings", False),
        "DI": cfg.get("mamba_expand", 2) * H, "N": cfg.get("mamba_d_state", 16),
        "K": cfg.get("mamba_d_conv", 4), "R": math.ceil(H / 16) if R == "auto" else R,
        "conv_bias": cfg.get("mamba_conv_bias", True),
        "proj_bias": cfg.get("mamba_proj_bias", False),
    }


def jamba_shrink(cfg, hidden_size=64, num_attention_heads=4, num_key_value_heads=1,
                 num_hidden_layers=4, attn_layer_period=4, attn_layer_offset=2,
                 num_experts=4, vocab_size=512, **overrides):
    """Jamba-v0.1's class at test size: GQA 32 : 8 -> 4 : 1, attention on one layer of
    four, experts on every other layer as the original, dt_rank "auto" (hidden / 16), the
    FFN width in its ratio to hidden_size; special ids inside the vocabulary."""
    c = dict(cfg)
    H = cfg["hidden_size"]
    c.update(hidden_size=hidden_size, num_attention_heads=num_attention_heads,
             num_key_value_heads=num_key_value_heads, num_hidden_layers=num_hidden_layers,
             attn_layer_period=attn_layer_period, attn_layer_offset=attn_layer_offset,
             num_experts=num_experts, vocab_size=vocab_size, mamba_dt_rank="auto",
             intermediate_size=max(8, int(round(hidden_size * cfg["intermediate_size"] / H / 8)) * 8))
    c.update(overrides)
    return c


def jamba_tensor_specs(cfg):
    f = jamba_facts(cfg)
    H, DI, N, K, R, I, E = f["H"], f["DI"], f["N"], f["K"], f["R"], f["I"], f["E"]
    q, kv = f["nh"] * f["hd"], f["nkv"] * f["hd"]
    specs = [("model.embed_tokens.weight", (f["V"], H))]
    for i, t in enumerate(f["types"]):
        p = "model.layers.%d." % i
        specs.append((p + "input_layernorm.weight", (H,)))
        if t == "mamba":
            m = p + "mamba."
            specs += [(m + "in_proj.weight", (2 * DI, H)), (m + "conv1d.weight", (DI, 1, K))]
            if f["conv_bias"]:
                specs.append((m + "conv1d.bias", (DI,)))
            specs += [(m + "x_proj.weight", (R + 2 * N, DI)), (m + "dt_proj.weight", (DI, R)),
                      (m + "dt_proj.bias", (DI,)), (m + "A_log", (DI, N)), (m + "D", (DI,)),
                      (m + "out_proj.weight", (H, DI)), (m + "dt_layernorm.weight", (R,)),
                      (m + "b_layernorm.weight", (N,)), (m + "c_layernorm.weight", (N,))]
        else:
            a = p + "self_attn."
            specs += [(a + "q_proj.weight", (q, H)), (a + "k_proj.weight", (kv, H)),
                      (a + "v_proj.weight", (kv, H)), (a + "o_proj.weight", (H, q))]
        specs.append((p + "pre_ff_layernorm.weight", (H,)))
        ff = p + "feed_forward."
        if f["moe"][i]:
            specs.append((ff + "router.weight", (E, H)))
            for e in range(E):
                x = ff + "experts.%d." % e
                specs += [(x + "gate_proj.weight", (I, H)), (x + "up_proj.weight", (I, H)),
                          (x + "down_proj.weight", (H, I))]
        else:
            specs += [(ff + "gate_proj.weight", (I, H)), (ff + "up_proj.weight", (I, H)),
                      (ff + "down_proj.weight", (H, I))]
    specs.append(("model.final_layernorm.weight", (H,)))
    if not f["tied"]:
        specs.append(("lm_head.weight", (f["V"], H)))
    return specs


def jamba_init(name, shape, cfg, seed):
    """mamba_ref.init's Mamba-1 scales (A_log = log(1..N), dt through dt_proj's bias); the
    dt/B/C norms near 1; other weights of std 2 / sqrt(fan_in)."""
    rng = np.random.default_rng([seed, sum(map(ord, name)) * 7919 + len(name)])
    n = rng.standard_normal(shape)
    H = cfg["hidden_size"]
    if ".mamba." in name and not name.endswith(("out_proj.weight", "layernorm.weight")):
        return mamba_ref.init(name.replace(".mamba.", ".mixer."), shape,
                              {"model_type": "mamba", "hidden_size": H, "num_hidden_layers": 1,
                               "vocab_size": cfg["vocab_size"],
                               "time_step_rank": jamba_facts(cfg)["R"]}, seed)
    if name.endswith("layernorm.weight"):
        return 1.0 + 0.1 * n
    if name in ("model.embed_tokens.weight", "lm_head.weight"):
        return n * 2.0 / math.sqrt(H)
    if name.endswith("router.weight"):
        return n * 4.0 / math.sqrt(H)
    return n * 2.0 / math.sqrt(shape[-1])


def jamba_write(cfg, out_dir, dtype="f32", seed=0):
    st = {"f32": "F32", "bf16": "BF16"}[dtype]
    cfg = dict(cfg, torch_dtype={"f32": "float32", "bf16": "bfloat16"}[dtype])
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as fp:
        json.dump(cfg, fp, indent=2)
    specs = jamba_tensor_specs(cfg)
    shapes = dict(specs)
    safetensors_io.write_file(os.path.join(out_dir, "model.safetensors"),
                              [(n, st, s) for n, s in specs],
                              lambda n: jamba_init(n, shapes[n], cfg, seed))
    return out_dir


class JambaReference(Reference):
    """Jamba in float64, one token at a time (Reference's attention without positions,
    generate())."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as fp:
            self.cfg = json.load(fp)
        self.f = jamba_facts(self.cfg)
        f = self.f
        if f["proj_bias"]:
            raise ValueError("reference: mamba_proj_bias false only")
        # Reference._attention's keys: no rope, 1/sqrt(head_dim), no biases
        f.update(rope=False, scale=f["hd"] ** -0.5, attn_bias=False)
        path = os.path.join(folder, "model.safetensors")
        header, _, start = safetensors_io.read_header(path)
        self.w = {k: safetensors_io.read_tensor(path, v, start) for k, v in header.items()}
        self.vocab_size = f["V"]

    def new_state(self):
        f = self.f
        return [{"conv": np.zeros((f["DI"], f["K"])), "ssm": np.zeros((f["DI"], f["N"]))}
                if t == "mamba" else {"k": [], "v": []} for t in f["types"]]

    def _mamba(self, i, h, st):
        f, w = self.f, self.w
        p = "model.layers.%d.mamba." % i
        DI, N, R = f["DI"], f["N"], f["R"]
        xz = w[p + "in_proj.weight"] @ h
        u, z = xz[:DI], xz[DI:]
        st["conv"] = np.roll(st["conv"], -1, axis=1)
        st["conv"][:, -1] = u
        u = np.sum(st["conv"] * w[p + "conv1d.weight"][:, 0, :], axis=1)
        if f["conv_bias"]:
            u = u + w[p + "conv1d.bias"]
        u = _act(f["act"], u)
        dbc = w[p + "x_proj.weight"] @ u
        dt = self._norm(dbc[:R], w[p + "dt_layernorm.weight"])
        B = self._norm(dbc[R:R + N], w[p + "b_layernorm.weight"])
        C = self._norm(dbc[R + N:], w[p + "c_layernorm.weight"])
        dt = w[p + "dt_proj.weight"] @ dt + w[p + "dt_proj.bias"]
        dt = np.where(dt > 20, dt, np.log1p(np.exp(np.minimum(dt, 20))))
        A = -np.exp(w[p + "A_log"])
        st["ssm"] = np.exp(A * dt[:, None]) * st["ssm"] + (dt[:, None] * B[None, :]) * u[:, None]
        y = (st["ssm"] @ C + w[p + "D"] * u) * _act(f["act"], z)
        return w[p + "out_proj.weight"] @ y

    def _mlp(self, p, h):
        g = self.w[p + "gate_proj.weight"] @ h
        u = self.w[p + "up_proj.weight"] @ h
        return self.w[p + "down_proj.weight"] @ (_act(self.f["act"], g) * u)

    def _ffn(self, i, h):
        f = self.f
        p = "model.layers.%d.feed_forward." % i
        if not f["moe"][i]:
            return self._mlp(p, h)
        logits = self.w[p + "router.weight"] @ h
        pr = np.exp(logits - logits.max())
        pr /= pr.sum()
        top = np.argsort(-pr, kind="stable")[: f["k"]]
        return sum(pr[e] * self._mlp(p + "experts.%d." % e, h) for e in top)

    def step(self, token, state, pos):
        f, w = self.f, self.w
        x = w["model.embed_tokens.weight"][token].copy()
        for i, t in enumerate(f["types"]):
            p = "model.layers.%d." % i
            h = self._norm(x, w[p + "input_layernorm.weight"])
            x = x + (self._mamba(i, h, state[i]) if t == "mamba"
                     else self._attention(i, h, state[i], pos))
            x = x + self._ffn(i, self._norm(x, w[p + "pre_ff_layernorm.weight"]))
        x = self._norm(x, w["model.final_layernorm.weight"])
        return w.get("lm_head.weight", w["model.embed_tokens.weight"]) @ x


# ---------------------------------------------------------------------------- LFM2
# Lfm2ForCausalLM (transformers models/lfm2: modular_lfm2.py, configuration_lfm2.py):
#   x = embed_tokens[token]
#   per layer i (layer_types[i], or "full_attention" iff i in full_attn_idxs):
#     h = RMSNorm(x) * operator_norm                     (eps norm_eps)
#     "conv":  (B, C, u) = chunk(h W_in^T, 3); u = B * u; c = sum_k w[:, k] u_{t-K+1+k}
#              (causal depthwise conv of conv_L_cache taps, zeros before the start);
#              h = (C * c) W_out^T
#     "full_attention": q, k, v = h W^T; q, k = RMSNorm per head (q_layernorm,
#              k_layernorm); RoPE (rope_theta, rotate_half); GQA softmax(q k^T /
#              sqrt(head_dim)) v; out_proj
#     x = x + h;  x = x + w2(silu(w1 RMSNorm(x) * ffn_norm) * w3 (...))
#   logits = (RMSNorm(x) * embedding_norm) W_embed^T (tied)
# FFN width: block_ff_dim (else intermediate_size), when block_auto_adjust_ff_dim:
# int(2 ff / 3), times block_ffn_dim_multiplier, rounded up to block_multiple_of.

# LiquidAI/LFM2-1.2B's config.json (its published values; the corpus holds no lfm2
# config): 16 layers, 6 of them attention, hidden 2048, 32 heads of 64, 8 KV heads
LFM2_1_2B = {
    "architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2",
    "block_auto_adjust_ff_dim": True, "block_dim": 2048, "block_ff_dim": 12288,
    "block_ffn_dim_multiplier": 1.0, "block_mlp_init_scale": 1.0, "block_multiple_of": 256,
    "block_norm_eps": 1e-05, "block_out_init_scale": 1.0, "block_use_swiglu": True,
    "block_use_xavier_init": True, "bos_token_id": 1, "conv_L_cache": 3, "conv_bias": False,
    "conv_dim": 2048, "conv_dim_out": 2048, "conv_use_xavier_init": True, "eos_token_id": 7,
    "full_attn_idxs": [2, 5, 8, 10, 12, 14], "hidden_size": 2048, "initializer_range": 0.02,
    "max_position_embeddings": 128000, "norm_eps": 1e-05, "num_attention_heads": 32,
    "num_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "pad_token_id": 0,
    "rope_theta": 1000000.0, "torch_dtype": "bfloat16", "use_cache": True,
    "use_pos_enc": True, "vocab_size": 65536,
}


def lfm2_facts(cfg):
    H, L = cfg["hidden_size"], cfg["num_hidden_layers"]
    nh = cfg.get("num_attention_heads", 32)
    ff = cfg.get("block_ff_dim", cfg.get("intermediate_size", 12288))
    if cfg.get("block_auto_adjust_ff_dim", True):
        ff = int(2 * ff / 3)
        if cfg.get("block_ffn_dim_multiplier", 1.0) is not None:
            ff = int(cfg.get("block_ffn_dim_multiplier", 1.0) * ff)
        m = cfg.get("block_multiple_of", 256)
        ff = m * ((ff + m - 1) // m)
    if cfg.get("layer_types") is not None:
        types = list(cfg["layer_types"])
    else:
        idx = cfg.get("full_attn_idxs")
        idx = list(range(L)) if idx is None else idx
        types = ["full_attention" if i in idx else "conv" for i in range(L)]
    return {"H": H, "L": L, "V": cfg["vocab_size"], "types": types, "nh": nh,
            "nkv": cfg.get("num_key_value_heads", 8), "hd": H // nh, "I": ff,
            "K": cfg.get("conv_L_cache", 3), "eps": cfg.get("norm_eps", 1e-5),
            "theta": float(cfg.get("rope_theta", 1000000.0)),
            "max_pos": cfg.get("max_position_embeddings", 128000),
            "tied": cfg.get("tie_word_embeddings", cfg.get("tie_embedding", True))}


def lfm2_shrink(cfg, hidden_size=64, num_attention_heads=4, num_key_value_heads=1,
                layer_types=None, vocab_size=512, **overrides):
    """LFM2 at test size: the GQA ratio (32 : 8 -> 4 : 1), conv_L_cache, the FFN sizing
    rule (block_ff_dim in its ratio to hidden, block_multiple_of 16 so the adjustment
    still rounds) and the key spellings kept; 4 layers conv, conv, attention, conv (the
    original's first three, then a conv) unless layer_types is given (then written as
    layer_types instead of full_attn_idxs)."""
    c = dict(cfg)
    H = cfg["hidden_size"]
    c.update(hidden_size=hidden_size, num_attention_heads=num_attention_heads,
             num_key_value_heads=num_key_value_heads, vocab_size=vocab_size,
             block_ff_dim=int(cfg["block_ff_dim"] * hidden_size / H), block_multiple_of=16)
    for key in ("block_dim", "conv_dim", "conv_dim_out"):
        if key in c:
            c[key] = hidden_size
    if "num_heads" in c:
        c["num_heads"] = num_attention_heads
    if layer_types is None:
        c["full_attn_idxs"] = [2]
        c["num_hidden_layers"] = 4
    else:
        c.pop("full_attn_idxs", None)
        c["layer_types"] = list(layer_types)
        c["num_hidden_layers"] = len(layer_types)
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if isinstance(c.get(key), int) and c[key] >= vocab_size:
            c[key] = vocab_size - 1
    c.update(overrides)
    return c


def lfm2_tensor_specs(cfg):
    f = lfm2_facts(cfg)
    H, K, I = f["H"], f["K"], f["I"]
    q, kv = f["nh"] * f["hd"], f["nkv"] * f["hd"]
    specs = [("model.embed_tokens.weight", (f["V"], H))]
    for i, t in enumerate(f["types"]):
        p = "model.layers.%d." % i
        specs.append((p + "operator_norm.weight", (H,)))
        if t == "conv":
            specs += [(p + "conv.in_proj.weight", (3 * H, H)), (p + "conv.conv.weight", (H, 1, K)),
                      (p + "conv.out_proj.weight", (H, H))]
        else:
            a = p + "self_attn."
            specs += [(a + "q_proj.weight", (q, H)), (a + "k_proj.weight", (kv, H)),
                      (a + "v_proj.weight", (kv, H)), (a + "out_proj.weight", (H, q)),
                      (a + "q_layernorm.weight", (f["hd"],)), (a + "k_layernorm.weight", (f["hd"],))]
        specs += [(p + "ffn_norm.weight", (H,)), (p + "feed_forward.w1.weight", (I, H)),
                  (p + "feed_forward.w3.weight", (I, H)), (p + "feed_forward.w2.weight", (H, I))]
    specs.append(("model.embedding_norm.weight", (H,)))
    if not f["tied"]:
        specs.append(("lm_head.weight", (f["V"], H)))
    return specs


def lfm2_init(name, shape, cfg, seed):
    """Seeded weights that keep a random LFM2 lively (logits of std ~2, blocks that
    outweigh the embedding, a conv whose taps all matter)."""
    f = lfm2_facts(cfg)
    rng = np.random.default_rng([seed, sum(map(ord, name)) * 7919 + len(name)])
    n = rng.standard_normal(shape)
    if name.endswith("norm.weight"):
        return 1.0 + 0.1 * n
    if name in ("model.embed_tokens.weight", "lm_head.weight"):
        return n * (2.0 / math.sqrt(f["H"]))
    if name.endswith("conv.conv.weight"):
        return n * 0.5
    std = 2.0 / math.sqrt(shape[-1])
    if name.endswith(("out_proj.weight", "w2.weight")):
        std *= 2.0
    return n * std


def lfm2_write(cfg, out_dir, dtype="f32", seed=0):
    st = {"f32": "F32", "bf16": "BF16"}[dtype]
    cfg = dict(cfg)
    cfg["torch_dtype"] = {"f32": "float32", "bf16": "bfloat16"}[dtype]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as fp:
        json.dump(cfg, fp, indent=2)
    specs = lfm2_tensor_specs(cfg)
    shapes = dict(specs)
    safetensors_io.write_file(os.path.join(out_dir, "model.safetensors"),
                              [(n, st, s) for n, s in specs],
                              lambda n: lfm2_init(n, shapes[n], cfg, seed))
    return out_dir


class Lfm2Reference(Reference):
    """LFM2 one token at a time (generate() as Reference's)."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as fp:
            self.cfg = json.load(fp)
        self.f = lfm2_facts(self.cfg)
        if self.cfg.get("conv_bias"):
            raise ValueError("reference: conv_bias false only")
        path = os.path.join(folder, "model.safetensors")
        header, _, start = safetensors_io.read_header(path)
        self.w = {k: safetensors_io.read_tensor(path, v, start) for k, v in header.items()}
        self.vocab_size = self.f["V"]
        spec = hf_facts.RopeSpec(theta=self.f["theta"], scaling={"rope_type": "default"},
                                 rotary_dim=self.f["hd"], max_position_embeddings=self.f["max_pos"],
                                 original_max_position_embeddings=None)
        self.inv_freq, self.rope_factor = reference.rope_inv_freq(spec)

    def new_state(self):
        f = self.f
        return [{"conv": np.zeros((f["H"], f["K"]))} if t == "conv" else {"k": [], "v": []}
                for t in f["types"]]

    def _conv(self, i, h, st):
        p = "model.layers.%d.conv." % i
        H = self.f["H"]
        bcx = self.w[p + "in_proj.weight"] @ h
        B, C, u = bcx[:H], bcx[H:2 * H], bcx[2 * H:]
        st["conv"] = np.roll(st["conv"], -1, axis=1)
        st["conv"][:, -1] = B * u
        c = np.sum(st["conv"] * self.w[p + "conv.weight"][:, 0, :], axis=1)
        return self.w[p + "out_proj.weight"] @ (C * c)

    def _attn(self, i, h, st, pos):
        f, w = self.f, self.w
        a = "model.layers.%d.self_attn." % i
        nh, nkv, hd = f["nh"], f["nkv"], f["hd"]
        q = (w[a + "q_proj.weight"] @ h).reshape(nh, hd)
        k = (w[a + "k_proj.weight"] @ h).reshape(nkv, hd)
        v = (w[a + "v_proj.weight"] @ h).reshape(nkv, hd)
        q = np.array([self._norm(r, w[a + "q_layernorm.weight"]) for r in q])
        k = np.array([self._norm(r, w[a + "k_layernorm.weight"]) for r in k])
        q = reference.apply_rope(q[None], [pos], self.inv_freq, self.rope_factor)[0]
        k = reference.apply_rope(k[None], [pos], self.inv_freq, self.rope_factor)[0]
        st["k"].append(k)
        st["v"].append(v)
        K, V = np.array(st["k"]), np.array(st["v"])
        rep = nh // nkv
        out = np.empty((nh, hd))
        for hh in range(nh):
            s = K[:, hh // rep, :] @ q[hh] / math.sqrt(hd)
            p = np.exp(s - s.max())
            out[hh] = (p / p.sum()) @ V[:, hh // rep, :]
        return w[a + "out_proj.weight"] @ out.reshape(nh * hd)

    def step(self, token, state, pos):
        f, w = self.f, self.w
        x = w["model.embed_tokens.weight"][token].copy()
        for i, t in enumerate(f["types"]):
            p = "model.layers.%d." % i
            h = self._norm(x, w[p + "operator_norm.weight"])
            x = x + (self._conv(i, h, state[i]) if t == "conv" else self._attn(i, h, state[i], pos))
            h = self._norm(x, w[p + "ffn_norm.weight"])
            g = w[p + "feed_forward.w1.weight"] @ h
            x = x + w[p + "feed_forward.w2.weight"] @ (_act("silu", g) * (w[p + "feed_forward.w3.weight"] @ h))
        x = self._norm(x, w["model.embedding_norm.weight"])
        head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
        return head @ x


# ---------------------------------------------------------------------------- Nemotron-H
# NemotronHForCausalLM (transformers models/nemotron_h): x = embeddings[token]; per layer
# i, one block by hybrid_override_pattern[i]: x = x + block(RMSNorm(x) * norm) with
#   "M": the Mamba-2 mixer (mamba_ref.mamba2_step), mamba_num_heads x mamba_head_dim
#        wide, B/C in n_groups groups, the gated RMSNorm per group of DI / n_groups
#   "*": attention, no rotary embedding, GQA, softmax(q k^T / sqrt(head_dim)) v, o_proj
#   "-": down(relu(up h)^2)
#   "E": NemotronHMoE: logits = h W_gate^T (NemotronHTopkRouter, float32 there, float64
#        here); s = sigmoid(logits); choice = s + e_score_correction_bias; the choice
#        of experts outside the topk_group best of n_group groups (ranked by the sum of
#        their two largest choices) set to -inf; ids = the num_experts_per_tok largest
#        choices (ties to the lower index); w = s[ids], / (sum + 1e-20) if
#        norm_topk_prob, * routed_scaling_factor; out = sum_j w_j down_j(relu(up_j h)^2)
#        (NemotronHExperts: no gate) + the shared expert down_s(relu(up_s h)^2)
#        (NemotronHMLP of moe_shared_expert_intermediate_size)
# logits = (RMSNorm(x) * norm_f) W_lm^T (untied by default). eps layer_norm_epsilon.

# NemotronHConfig's defaults (the Nemotron-H-8B shape): 52 layers, 24 Mamba-2, 4
# attention, 24 MLP; the corpus holds no nemotron_h config
NEMOTRON_H_8B = {
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
    "vocab_size": 131072, "hidden_size": 4096, "intermediate_size": 21504,
    "num_hidden_layers": 52,
    "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "max_position_embeddings": 4096, "attention_bias": False, "mlp_bias": False,
    "mlp_hidden_act": "relu2", "use_mamba_kernels": True, "ssm_state_size": 128,
    "mamba_num_heads": 128, "mamba_head_dim": 64, "mamba_hidden_act": "silu", "n_groups": 8,
    "conv_kernel": 4, "expand": 2, "time_step_min": 0.001, "time_step_max": 0.1,
    "time_step_floor": 0.0001, "use_conv_bias": True,
    "chunk_size": 128, "mamba_proj_bias": False, "use_bias": False, "layer_norm_epsilon": 1e-05,
    "residual_in_fp32": False, "rescale_prenorm_residual": True, "tie_word_embeddings": False,
    "initializer_range": 0.02, "num_logits_to_keep": 1, "pad_token_id": 0, "bos_token_id": 1,
    "eos_token_id": 2, "sliding_window": None, "hidden_dropout": 0.0, "attention_dropout": 0.0,
    "use_cache": True, "torch_dtype": "bfloat16",
}


# nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 (model_type nemotron_h with "E" layers).
# Checked against public pages (radixark miles docs, apxml, the GPTQ model card): 52
# layers, 23 Mamba-2 / 23 MoE / 6 attention (the pattern below counts so), hidden 2688,
# 32 query / 2 KV heads, relu2, 128 routed experts, top-6, one shared expert of 3712,
# sigmoid routing with routed_scaling_factor 2.5. From memory, not verified here: the
# pattern string's order, moe_intermediate_size 1856, intermediate_size 1856, the Mamba
# sizes (64 heads x 64, 8 groups, state 128), head_dim 128, vocab 131072,
# max_position_embeddings 262144, n_group / topk_group 1, norm_topk_prob true.
NEMOTRON_3_NANO = dict(
    NEMOTRON_H_8B, hidden_size=2688, intermediate_size=1856, num_hidden_layers=52,
    hybrid_override_pattern="MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
    num_attention_heads=32, num_key_value_heads=2, head_dim=128,
    max_position_embeddings=262144, mamba_num_heads=64, mamba_head_dim=64, n_groups=8,
    ssm_state_size=128, n_routed_experts=128, num_experts_per_tok=6,
    moe_intermediate_size=1856, moe_shared_expert_intermediate_size=3712, n_shared_experts=1,
    n_group=1, topk_group=1, routed_scaling_factor=2.5, norm_topk_prob=True,
    moe_latent_size=None)


def nemotron_facts(cfg):
    pat = cfg["hybrid_override_pattern"]
    H = cfg["hidden_size"]
    NH, P = cfg.get("mamba_num_heads", 128), cfg.get("mamba_head_dim", 64)
    return {"H": H, "L": len(pat), "V": cfg["vocab_size"], "pat": pat,
            "nh": cfg.get("num_attention_heads", 32), "nkv": cfg.get("num_key_value_heads", 8),
            "hd": cfg.get("head_dim", 128), "I": cfg.get("intermediate_size", 21504),
            "eps": cfg.get("layer_norm_epsilon", 1e-5), "attn_bias": cfg.get("attention_bias", False),
            "mlp_bias": cfg.get("mlp_bias", False), "tied": cfg.get("tie_word_embeddings", False),
            "DI": NH * P, "N": cfg.get("ssm_state_size", 128), "K": cfg.get("conv_kernel", 4),
            "NH": NH, "P": P, "G": cfg.get("n_groups", 8), "conv_bias": cfg.get("use_conv_bias", True),
            # NemotronHConfig's MoE defaults
            "E": cfg.get("n_routed_experts", 8), "k": cfg.get("num_experts_per_tok", 2),
            "EI": cfg.get("moe_intermediate_size", 7688),
            "SI": cfg.get("moe_shared_expert_intermediate_size", 7688)
                  or cfg.get("intermediate_size", 21504),
            "n_group": cfg.get("n_group", 1), "topk_group": cfg.get("topk_group", 1),
            "scale": cfg.get("routed_scaling_factor", 1.0),
            "norm_topk": cfg.get("norm_topk_prob", True)}


def nemotron_shrink(cfg, hidden_size=64, pattern="M*-M-", num_attention_heads=4,
                    num_key_value_heads=1, head_dim=16, mamba_num_heads=8, mamba_head_dim=16,
                    ssm_state_size=16, n_groups=2, vocab_size=512, **overrides):
    """Nemotron-H at test size: the GQA ratio (32 : 8 -> 4 : 1), an explicit head_dim,
    n_groups > 1 (the per-group gated norm), the intermediate/hidden ratio (multiple of
    8), the flags; a 5-layer pattern with each block kind."""
    c = dict(cfg)
    H = cfg["hidden_size"]
    c.update(hidden_size=hidden_size, hybrid_override_pattern=pattern,
             num_hidden_layers=len(pattern), num_attention_heads=num_attention_heads,
             num_key_value_heads=num_key_value_heads, head_dim=head_dim,
             mamba_num_heads=mamba_num_heads, mamba_head_dim=mamba_head_dim,
             ssm_state_size=ssm_state_size, n_groups=n_groups, vocab_size=vocab_size,
             intermediate_size=max(8, int(round(hidden_size * cfg["intermediate_size"] / H / 8)) * 8))
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if isinstance(c.get(key), int) and c[key] >= vocab_size:
            c[key] = vocab_size - 1
    if "n_routed_experts" in cfg:  # the MoE sizes by the same ratio to hidden_size
        for key in ("moe_intermediate_size", "moe_shared_expert_intermediate_size"):
            c[key] = max(8, int(round(hidden_size * cfg[key] / H / 8)) * 8)
    c.update(overrides)
    return c


def nemotron_tensor_specs(cfg, experts3d=False):
    """(name, shape) of each tensor; experts3d: the experts as transformers 5's
    NemotronHExperts parameters, mixer.experts.up_proj [E, EI, H] / down_proj [E, H, EI]."""
    f = nemotron_facts(cfg)
    H, DI, N, K, NH, G, I = f["H"], f["DI"], f["N"], f["K"], f["NH"], f["G"], f["I"]
    CD = DI + 2 * G * N
    q, kv = f["nh"] * f["hd"], f["nkv"] * f["hd"]
    specs = [("backbone.embeddings.weight", (f["V"], H))]
    for i, t in enumerate(f["pat"]):
        p = "backbone.layers.%d." % i
        m = p + "mixer."
        specs.append((p + "norm.weight", (H,)))
        if t == "M":
            specs += [(m + "in_proj.weight", (DI + CD + NH, H)), (m + "conv1d.weight", (CD, 1, K))]
            if f["conv_bias"]:
                specs.append((m + "conv1d.bias", (CD,)))
            specs += [(m + "dt_bias", (NH,)), (m + "A_log", (NH,)), (m + "D", (NH,)),
                      (m + "norm.weight", (DI,)), (m + "out_proj.weight", (H, DI))]
        elif t == "*":
            for name, rows in (("q", q), ("k", kv), ("v", kv)):
                specs.append((m + "%s_proj.weight" % name, (rows, H)))
                if f["attn_bias"]:
                    specs.append((m + "%s_proj.bias" % name, (rows,)))
            specs.append((m + "o_proj.weight", (H, q)))
            if f["attn_bias"]:
                specs.append((m + "o_proj.bias", (H,)))
        elif t == "E":  # the released checkpoints' per-expert tensors
            specs += [(m + "gate.weight", (f["E"], H)), (m + "gate.e_score_correction_bias", (f["E"],))]
            if experts3d:
                specs += [(m + "experts.up_proj", (f["E"], f["EI"], H)),
                          (m + "experts.down_proj", (f["E"], H, f["EI"]))]
            for e in range(f["E"] if not experts3d else 0):
                specs += [(m + "experts.%d.up_proj.weight" % e, (f["EI"], H)),
                          (m + "experts.%d.down_proj.weight" % e, (H, f["EI"]))]
            specs += [(m + "shared_experts.up_proj.weight", (f["SI"], H)),
                      (m + "shared_experts.down_proj.weight", (H, f["SI"]))]
        else:
            specs.append((m + "up_proj.weight", (I, H)))
            if f["mlp_bias"]:
                specs.append((m + "up_proj.bias", (I,)))
            specs.append((m + "down_proj.weight", (H, I)))
            if f["mlp_bias"]:
                specs.append((m + "down_proj.bias", (H,)))
    specs.append(("backbone.norm_f.weight", (H,)))
    if not f["tied"]:
        specs.append(("lm_head.weight", (f["V"], H)))
    return specs


def nemotron_init(name, shape, cfg, seed):
    f = nemotron_facts(cfg)
    H = f["H"]
    if name.endswith(("experts.up_proj", "experts.down_proj")):  # 3-D: the per-expert values
        head, kind = name.rsplit(".", 1)
        return np.stack([nemotron_init("%s.%d.%s.weight" % (head, e, kind), shape[1:], cfg, seed)
                         for e in range(shape[0])])
    rng = np.random.default_rng([seed, sum(map(ord, name)) * 7919 + len(name)])
    n = rng.standard_normal(shape)
    if name.endswith("gate.e_score_correction_bias"):  # moves the choice, not the weights
        return 0.1 * n
    if name.endswith("mixer.gate.weight"):  # sigmoid scores spread over (0, 1)
        return n * (2.0 / math.sqrt(H))
    if ".mixer." in name and not name.endswith(("out_proj.weight", "_proj.weight", "_proj.bias")):
        return mamba_ref.init(name, shape, {"model_type": "mamba2", "hidden_size": H,
                                            "num_hidden_layers": 1, "vocab_size": f["V"]}, seed)
    if name.endswith("norm.weight") or name.endswith("norm_f.weight"):
        return 1.0 + 0.1 * n
    if name in ("backbone.embeddings.weight", "lm_head.weight"):
        return n * (2.0 / math.sqrt(H))
    if name.endswith(".bias"):
        return 0.1 * n
    std = 2.0 / math.sqrt(shape[-1])
    if name.endswith(("out_proj.weight", "o_proj.weight", "down_proj.weight")):
        std *= 2.0
    if name.endswith("in_proj.weight"):
        std = 1.0 / math.sqrt(shape[-1])
    return n * std


def nemotron_write(cfg, out_dir, dtype="f32", seed=0, experts3d=False):
    st = {"f32": "F32", "bf16": "BF16"}[dtype]
    cfg = dict(cfg)
    cfg["torch_dtype"] = {"f32": "float32", "bf16": "bfloat16"}[dtype]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as fp:
        json.dump(cfg, fp, indent=2)
    specs = nemotron_tensor_specs(cfg, experts3d)
    shapes = dict(specs)
    safetensors_io.write_file(os.path.join(out_dir, "model.safetensors"),
                              [(n, st, s) for n, s in specs],
                              lambda n: nemotron_init(n, shapes[n], cfg, seed))
    return out_dir


class NemotronHReference(Reference):
    """Nemotron-H one token at a time (generate() as Reference's)."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as fp:
            self.cfg = json.load(fp)
        self.f = nemotron_facts(self.cfg)
        path = os.path.join(folder, "model.safetensors")
        header, _, start = safetensors_io.read_header(path)
        self.w = {k: safetensors_io.read_tensor(path, v, start) for k, v in header.items()}
        for k in [k for k in self.w if k.endswith(("experts.up_proj", "experts.down_proj"))]:
            head, kind = k.rsplit(".", 1)  # 3-D experts: expert e is slice e
            for e, m in enumerate(self.w.pop(k)):
                self.w["%s.%d.%s.weight" % (head, e, kind)] = m
        self.vocab_size = self.f["V"]

    def new_state(self):
        f = self.f
        CD = f["DI"] + 2 * f["G"] * f["N"]
        return [{"conv": np.zeros((CD, f["K"])), "ssm": np.zeros((f["NH"], f["P"], f["N"]))}
                if t == "M" else {"k": [], "v": []} for t in f["pat"]]

    def _attn(self, i, h, st):
        f = self.f
        m = "backbone.layers.%d.mixer." % i
        nh, nkv, hd = f["nh"], f["nkv"], f["hd"]
        q = self._lin(h, m + "q_proj").reshape(nh, hd)
        st["k"].append(self._lin(h, m + "k_proj").reshape(nkv, hd))
        st["v"].append(self._lin(h, m + "v_proj").reshape(nkv, hd))
        K, V = np.array(st["k"]), np.array(st["v"])
        rep = nh // nkv
        out = np.empty((nh, hd))
        for hh in range(nh):
            s = K[:, hh // rep, :] @ q[hh] / math.sqrt(hd)
            p = np.exp(s - s.max())
            out[hh] = (p / p.sum()) @ V[:, hh // rep, :]
        return self._lin(out.reshape(nh * hd), m + "o_proj")

    def _moe(self, i, h):
        f, w = self.f, self.w
        m = "backbone.layers.%d.mixer." % i
        E, k, ng = f["E"], f["k"], f["n_group"]
        s = 1.0 / (1.0 + np.exp(-(w[m + "gate.weight"] @ h)))
        choice = s + w[m + "gate.e_score_correction_bias"]
        groups = choice.reshape(ng, E // ng)
        gscore = np.sort(groups, axis=1)[:, -2:].sum(axis=1)
        keep = np.argsort(-gscore, kind="stable")[:f["topk_group"]]
        mask = np.zeros(ng, dtype=bool)
        mask[keep] = True
        choice = np.where(np.repeat(mask, E // ng), choice, -np.inf)
        ids = np.argsort(-choice, kind="stable")[:k]
        wt = s[ids]
        if f["norm_topk"]:
            wt = wt / (wt.sum() + 1e-20)
        wt = wt * f["scale"]
        out = np.zeros_like(h)
        for j, e in enumerate(ids):
            u = self._lin(h, m + "experts.%d.up_proj" % e)
            out += wt[j] * self._lin(np.maximum(u, 0.0) ** 2, m + "experts.%d.down_proj" % e)
        u = self._lin(h, m + "shared_experts.up_proj")
        return out + self._lin(np.maximum(u, 0.0) ** 2, m + "shared_experts.down_proj")

    def step(self, token, state, pos):
        f, w = self.f, self.w
        x = w["backbone.embeddings.weight"][token].copy()
        for i, t in enumerate(f["pat"]):
            p = "backbone.layers.%d." % i
            h = self._norm(x, w[p + "norm.weight"])
            if t == "M":
                h = mamba_ref.mamba2_step(w, p + "mixer.", f, h, state[i])
            elif t == "*":
                h = self._attn(i, h, state[i])
            elif t == "E":
                h = self._moe(i, h)
            else:
                u = self._lin(h, p + "mixer.up_proj")
                h = self._lin(np.maximum(u, 0.0) ** 2, p + "mixer.down_proj")
            x = x + h
        x = self._norm(x, w["backbone.norm_f.weight"])
        head = w.get("lm_head.weight", w["backbone.embeddings.weight"])
        return head @ x


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cmd", choices=["write", "write-all"],
                    help="write-all: OUT_DIR/granite, OUT_DIR/lfm2 and OUT_DIR/nemotron")
    ap.add_argument("out")
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--family", default="granite",
                    choices=["granite", "bamba", "jamba", "lfm2", "nemotron"])
    a = ap.parse_args(argv)
    if a.cmd == "write-all":
        write(shrink(GRANITE_4_H_TINY), os.path.join(a.out, "granite"), a.dtype, a.seed)
        lfm2_write(lfm2_shrink(LFM2_1_2B), os.path.join(a.out, "lfm2"), a.dtype, a.seed)
        nemotron_write(nemotron_shrink(NEMOTRON_H_8B), os.path.join(a.out, "nemotron"), a.dtype,
                       a.seed)
    elif a.family == "jamba":
        jamba_write(jamba_shrink(JAMBA_V0_1), a.out, a.dtype, a.seed)
    elif a.family == "bamba":
        bamba_write(bamba_shrink(BAMBA_9B), a.out, a.dtype, a.seed)
    elif a.family == "lfm2":
        lfm2_write(lfm2_shrink(LFM2_1_2B), a.out, a.dtype, a.seed)
    elif a.family == "nemotron":
        nemotron_write(nemotron_shrink(NEMOTRON_H_8B), a.out, a.dtype, a.seed)
    else:
        write(shrink(GRANITE_4_H_TINY), a.out, a.dtype, a.seed)


if __name__ == "__main__":
    main()
