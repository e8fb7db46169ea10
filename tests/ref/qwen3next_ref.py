#!/usr/bin/env python3
"""Qwen3-Next (Qwen3NextForCausalLM) in float64, one token at a time, and its shrunk
checkpoints.

Semantics from transformers' models/qwen3_next (modular_qwen3_next.py: the gated delta
net, the gated attention, the decoder layer and model; configuration_qwen3_next.py: the
keys and defaults) and the modules it reuses (Gemma 3's RMSNorm, Qwen2-MoE's sparse block
and router, Qwen3-MoE's MLP), written here independently of facet's C code:

  x = embed_tokens[token]
  per layer i (layer_types[i], else "full_attention" iff (i + 1) % full_attention_interval
  == 0, default 4):
    h = RMSNorm(x) * (1 + input_layernorm)              (Gemma 3's zero-centred norm,
                                                         eps rms_norm_eps)
    "linear_attention": Qwen3NextGatedDeltaNet
        qkvz = in_proj_qkvz h; ba = in_proj_ba h, read per key head kh as
               [q (dk), k (dk), v (r dv), z (r dv)] and [b (r), a (r)], r = nv / nk
               (fix_query_key_value_ordering); value head j of key head kh is kh r + j
        (q, k, v) = SiLU(causal depthwise conv1d(q | k | v)) over the last K inputs
        q, k: x / sqrt(sum x^2 + 1e-6) per key head (l2norm); q *= dk^-1/2; both repeated
              to the value heads (repeat_interleave r)
        beta = sigmoid(b); g = -exp(A_log) * softplus(a + dt_bias)
        per value head: S = S exp(g); d = (v - S^T k) beta; S = S + k d^T; o = S^T q
              (torch_recurrent_gated_delta_rule, S [dk, dv])
        y = RMSNorm(o) * norm.weight * SiLU(z) per value head (Qwen3NextRMSNormGated: the
              weight as stored, no 1 + w); out_proj
    "full_attention": Qwen3NextAttention
        (q, gate) = q_proj h viewed [heads, 2 head_dim], chunked; k, v; q and k RMSNorm
        per head with (1 + w); RoPE (rotate_half) on the first head_dim *
        partial_rotary_factor dims; GQA softmax(q k^T / sqrt(head_dim)) v; times
        sigmoid(gate); o_proj
    x = x + h
    h = RMSNorm(x) * (1 + post_attention_layernorm)
    m = Qwen2MoeSparseMoeBlock on sparse layers (i not in mlp_only_layers, num_experts > 0,
        (i + 1) % decoder_sparse_step == 0): p = softmax(gate h); the k largest,
        renormalised when norm_topk_prob; sum_j p_j down_j(silu(gate_j h) * up_j h) +
        sigmoid(shared_expert_gate h) * shared_expert(h); else the dense MLP of
        intermediate_size
    x = x + m
  logits = (RMSNorm(x) * (1 + norm)) W_lm^T

Command line: qwen3next_ref.py write OUT_DIR [--dtype f32|bf16] [--seed S] writes the
shrunk Qwen3-Next-80B-A3B config and its model.safetensors.
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

# Qwen/Qwen3-Next-80B-A3B-Instruct's config.json as published on the Hugging Face hub
# (https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct/blob/main/config.json; the
# corpus holds no qwen3_next config): 48 layers, every 4th full attention (16 query heads
# on 2 KV heads of 256, a quarter of each rotated), the other 36 gated delta-rule layers
# (16 key heads and 32 value heads of 128, conv 4), 512 experts (10 a token) of 512 and a
# shared expert of 512 on every layer
QWEN3_NEXT_80B_A3B = {
    "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next",
    "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 151643,
    "decoder_sparse_step": 1, "eos_token_id": 151645, "full_attention_interval": 4,
    "head_dim": 256, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 5120, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128,
    "max_position_embeddings": 262144, "mlp_only_layers": [], "moe_intermediate_size": 512,
    "norm_topk_prob": True, "num_attention_heads": 16, "num_experts": 512,
    "num_experts_per_tok": 10, "num_hidden_layers": 48, "num_key_value_heads": 2,
    "output_router_logits": False, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06,
    "rope_scaling": None, "rope_theta": 10000000, "router_aux_loss_coef": 0.001,
    "shared_expert_intermediate_size": 512, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "transformers_version": "4.57.0.dev0", "use_cache": True,
    "use_sliding_window": False, "vocab_size": 151936,
}


def facts(cfg):
    """The facts the modeling code reads (Qwen3NextConfig's defaults)."""
    L = cfg.get("num_hidden_layers", 48)
    if cfg.get("layer_types") is not None:
        types = list(cfg["layer_types"])
    else:
        k = cfg.get("full_attention_interval", 4)
        types = ["linear_attention" if (i + 1) % k else "full_attention" for i in range(L)]
    E = cfg.get("num_experts", 512)
    step = cfg.get("decoder_sparse_step", 1)
    dense = set(cfg.get("mlp_only_layers") or [])
    sparse = [i not in dense and E > 0 and (i + 1) % step == 0 for i in range(L)]
    hd = cfg.get("head_dim", 256)
    return {"H": cfg.get("hidden_size", 2048), "L": L, "V": cfg.get("vocab_size", 151936),
            "types": types, "sparse": sparse, "nh": cfg.get("num_attention_heads", 16),
            "nkv": cfg.get("num_key_value_heads", 2), "hd": hd,
            "rot": int(hd * cfg.get("partial_rotary_factor", 0.25)),
            "I": cfg.get("intermediate_size", 5632), "E": E,
            "k": cfg.get("num_experts_per_tok", 10), "EI": cfg.get("moe_intermediate_size", 512),
            "SI": cfg.get("shared_expert_intermediate_size", 512),
            "norm_topk": cfg.get("norm_topk_prob", True),
            "nk": cfg.get("linear_num_key_heads", 16), "nv": cfg.get("linear_num_value_heads", 32),
            "dk": cfg.get("linear_key_head_dim", 128), "dv": cfg.get("linear_value_head_dim", 128),
            "K": cfg.get("linear_conv_kernel_dim", 4), "eps": cfg.get("rms_norm_eps", 1e-6),
            "theta": float(cfg.get("rope_theta", 10000.0)),
            "max_pos": cfg.get("max_position_embeddings", 32768),
            "bias": cfg.get("attention_bias", False),
            "tied": cfg.get("tie_word_embeddings", False)}


def shrink(cfg, hidden_size=64, num_attention_heads=4, num_key_value_heads=1, head_dim=32,
           linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
           linear_value_head_dim=16, num_experts=8, num_experts_per_tok=2,
           moe_intermediate_size=32, shared_expert_intermediate_size=32,
           intermediate_size=96, num_hidden_layers=4, vocab_size=512, **overrides):
    """Qwen3-Next at test size: 4 layers (linear, linear, linear, full by
    full_attention_interval 4), the key : value head ratio of the delta rule (16 : 32 ->
    2 : 4), partial_rotary_factor 0.25, conv 4, 8 experts (2 a token) and the shared
    expert on every layer."""
    c = dict(cfg)
    c.update(hidden_size=hidden_size, num_attention_heads=num_attention_heads,
             num_key_value_heads=num_key_value_heads, head_dim=head_dim,
             linear_num_key_heads=linear_num_key_heads,
             linear_num_value_heads=linear_num_value_heads,
             linear_key_head_dim=linear_key_head_dim, linear_value_head_dim=linear_value_head_dim,
             num_experts=num_experts, num_experts_per_tok=num_experts_per_tok,
             moe_intermediate_size=moe_intermediate_size,
             shared_expert_intermediate_size=shared_expert_intermediate_size,
             intermediate_size=intermediate_size, num_hidden_layers=num_hidden_layers,
             vocab_size=vocab_size, max_position_embeddings=4096)
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if isinstance(c.get(key), int) and c[key] >= vocab_size:
            c[key] = vocab_size - 1
    c.update(overrides)
    return c


def tensor_specs(cfg):
    f = facts(cfg)
    H, nh, nkv, hd = f["H"], f["nh"], f["nkv"], f["hd"]
    nk, nv, dk, dv, K = f["nk"], f["nv"], f["dk"], f["dv"], f["K"]
    CD = 2 * nk * dk + nv * dv
    specs = [("model.embed_tokens.weight", (f["V"], H))]
    for i, t in enumerate(f["types"]):
        p = "model.layers.%d." % i
        specs.append((p + "input_layernorm.weight", (H,)))
        if t == "linear_attention":
            a = p + "linear_attn."
            specs += [(a + "in_proj_qkvz.weight", (CD + nv * dv, H)),
                      (a + "in_proj_ba.weight", (2 * nv, H)), (a + "conv1d.weight", (CD, 1, K)),
                      (a + "dt_bias", (nv,)), (a + "A_log", (nv,)), (a + "norm.weight", (dv,)),
                      (a + "out_proj.weight", (H, nv * dv))]
        else:
            a = p + "self_attn."
            for name, rows in (("q", 2 * nh * hd), ("k", nkv * hd), ("v", nkv * hd)):
                specs.append((a + "%s_proj.weight" % name, (rows, H)))
                if f["bias"]:
                    specs.append((a + "%s_proj.bias" % name, (rows,)))
            specs += [(a + "o_proj.weight", (H, nh * hd)), (a + "q_norm.weight", (hd,)),
                      (a + "k_norm.weight", (hd,))]
        specs.append((p + "post_attention_layernorm.weight", (H,)))
        m = p + "mlp."
        if f["sparse"][i]:
            EI, SI = f["EI"], f["SI"]
            specs.append((m + "gate.weight", (f["E"], H)))
            for e in range(f["E"]):
                x = m + "experts.%d." % e
                specs += [(x + "gate_proj.weight", (EI, H)), (x + "up_proj.weight", (EI, H)),
                          (x + "down_proj.weight", (H, EI))]
            specs += [(m + "shared_expert.gate_proj.weight", (SI, H)),
                      (m + "shared_expert.up_proj.weight", (SI, H)),
                      (m + "shared_expert.down_proj.weight", (H, SI)),
                      (m + "shared_expert_gate.weight", (1, H))]
        else:
            I = f["I"]
            specs += [(m + "gate_proj.weight", (I, H)), (m + "up_proj.weight", (I, H)),
                      (m + "down_proj.weight", (H, I))]
    specs.append(("model.norm.weight", (H,)))
    if not f["tied"]:
        specs.append(("lm_head.weight", (f["V"], H)))
    return specs


def init(name, shape, cfg, seed):
    """Seeded weights that keep a random Qwen3-Next lively: logits of std ~2, blocks that
    outweigh the embedding, zero-centred norms near 0 (a scale near 1), decays exp(g)
    spread over (0, 1) so the delta-rule state remembers several tokens, a conv whose taps
    all matter."""
    f = facts(cfg)
    rng = np.random.default_rng([seed, sum(map(ord, name)) * 7919 + len(name)])
    n = rng.standard_normal(shape)
    if name.endswith("linear_attn.norm.weight"):
        return 1.0 + 0.1 * n  # Qwen3NextRMSNormGated: the weight as stored
    if name.endswith("norm.weight"):
        return 0.1 * n  # Qwen3NextRMSNorm: scales by 1 + w
    if name in ("model.embed_tokens.weight", "lm_head.weight"):
        return n * (2.0 / math.sqrt(f["H"]))
    if name.endswith("A_log"):
        return np.log(rng.uniform(0.5, 4.0, shape))
    if name.endswith("dt_bias"):
        return 0.5 * n
    if name.endswith("conv1d.weight"):
        return n * 0.5
    if name.endswith(".bias"):
        return 0.1 * n
    std = 2.0 / math.sqrt(shape[-1])
    if name.endswith(("out_proj.weight", "o_proj.weight", "down_proj.weight")):
        std *= 2.0
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


def _silu(x):
    return x / (1.0 + np.exp(-x))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softplus(x):
    return np.log1p(np.exp(x))


class Reference:
    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as fp:
            self.cfg = json.load(fp)
        self.f = facts(self.cfg)
        path = os.path.join(folder, "model.safetensors")
        header, _, start = safetensors_io.read_header(path)
        self.w = {k: safetensors_io.read_tensor(path, v, start) for k, v in header.items()}
        self.vocab_size = self.f["V"]
        f = self.f
        spec = hf_facts.RopeSpec(theta=f["theta"], scaling={"rope_type": "default"},
                                 rotary_dim=f["rot"], max_position_embeddings=f["max_pos"],
                                 original_max_position_embeddings=None)
        self.inv_freq, self.rope_factor = reference.rope_inv_freq(spec)

    def new_state(self):
        """Per layer: the delta rule's conv window and S, or the attention's keys and
        values."""
        f = self.f
        CD = 2 * f["nk"] * f["dk"] + f["nv"] * f["dv"]
        return [{"conv": np.zeros((CD, f["K"])), "S": np.zeros((f["nv"], f["dk"], f["dv"]))}
                if t == "linear_attention" else {"k": [], "v": []} for t in f["types"]]

    def _norm(self, x, w):
        """Qwen3NextRMSNorm (Gemma 3's): x / rms(x) * (1 + w), over the last axis."""
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.f["eps"]) * (1.0 + w)

    def _lin(self, x, name):
        y = self.w[name + ".weight"] @ x
        b = self.w.get(name + ".bias")
        return y if b is None else y + b

    def _delta(self, i, h, st):
        f, w = self.f, self.w
        a = "model.layers.%d.linear_attn." % i
        nk, nv, dk, dv = f["nk"], f["nv"], f["dk"], f["dv"]
        r = nv // nk
        qkvz = (w[a + "in_proj_qkvz.weight"] @ h).reshape(nk, 2 * dk + 2 * r * dv)
        ba = (w[a + "in_proj_ba.weight"] @ h).reshape(nk, 2 * r)
        q, k = qkvz[:, :dk], qkvz[:, dk:2 * dk]
        v = qkvz[:, 2 * dk:2 * dk + r * dv].reshape(nv, dv)
        z = qkvz[:, 2 * dk + r * dv:].reshape(nv, dv)
        b, av = ba[:, :r].reshape(nv), ba[:, r:].reshape(nv)
        mixed = np.concatenate([q.reshape(-1), k.reshape(-1), v.reshape(-1)])
        st["conv"] = np.concatenate([st["conv"][:, 1:], mixed[:, None]], axis=1)
        conv = _silu(np.sum(st["conv"] * w[a + "conv1d.weight"][:, 0, :], axis=1))
        kd = nk * dk
        q = conv[:kd].reshape(nk, dk)
        k = conv[kd:2 * kd].reshape(nk, dk)
        v = conv[2 * kd:].reshape(nv, dv)
        q = q / np.sqrt(np.sum(q * q, axis=1, keepdims=True) + 1e-6) / math.sqrt(dk)
        k = k / np.sqrt(np.sum(k * k, axis=1, keepdims=True) + 1e-6)
        q, k = np.repeat(q, r, axis=0), np.repeat(k, r, axis=0)  # repeat_interleave
        beta = _sigmoid(b)
        g = -np.exp(w[a + "A_log"]) * _softplus(av + w[a + "dt_bias"])
        S = st["S"]
        o = np.empty((nv, dv))
        for hh in range(nv):  # torch_recurrent_gated_delta_rule, one head at a time
            S[hh] *= np.exp(g[hh])
            mem = S[hh].T @ k[hh]
            d = (v[hh] - mem) * beta[hh]
            S[hh] += np.outer(k[hh], d)
            o[hh] = S[hh].T @ q[hh]
        y = o / np.sqrt(np.mean(o * o, axis=1, keepdims=True) + f["eps"]) * w[a + "norm.weight"]
        y = y * _silu(z)
        return w[a + "out_proj.weight"] @ y.reshape(-1)

    def _attention(self, i, h, st, pos):
        f, w = self.f, self.w
        a = "model.layers.%d.self_attn." % i
        nh, nkv, hd = f["nh"], f["nkv"], f["hd"]
        qg = self._lin(h, a + "q_proj").reshape(nh, 2 * hd)
        q, gate = qg[:, :hd], qg[:, hd:].reshape(-1)
        k = self._lin(h, a + "k_proj").reshape(nkv, hd)
        v = self._lin(h, a + "v_proj").reshape(nkv, hd)
        q = self._norm(q, w[a + "q_norm.weight"])
        k = self._norm(k, w[a + "k_norm.weight"])
        q = reference.apply_rope(q[None], [pos], self.inv_freq, self.rope_factor)[0]
        k = reference.apply_rope(k[None], [pos], self.inv_freq, self.rope_factor)[0]
        st["k"].append(k)
        st["v"].append(v)
        K, V = np.array(st["k"]), np.array(st["v"])  # [S, nkv, hd]
        rep = nh // nkv
        out = np.empty((nh, hd))
        for hh in range(nh):
            s = K[:, hh // rep, :] @ q[hh] / math.sqrt(hd)
            p = np.exp(s - s.max())
            out[hh] = (p / p.sum()) @ V[:, hh // rep, :]
        out = out.reshape(-1) * _sigmoid(gate)
        return self._lin(out, a + "o_proj")

    def _mlp(self, p, h):
        w = self.w
        return w[p + "down_proj.weight"] @ (_silu(w[p + "gate_proj.weight"] @ h) *
                                            (w[p + "up_proj.weight"] @ h))

    def _ffn(self, i, h):
        f, w = self.f, self.w
        m = "model.layers.%d.mlp." % i
        if not f["sparse"][i]:
            return self._mlp(m, h)
        logits = w[m + "gate.weight"] @ h
        p = np.exp(logits - logits.max())
        p /= p.sum()
        top = np.argsort(-p, kind="stable")[: f["k"]]
        wt = p[top]
        if f["norm_topk"]:
            wt = wt / wt.sum()
        out = np.zeros(f["H"])
        for j, e in enumerate(top):
            out = out + wt[j] * self._mlp(m + "experts.%d." % e, h)
        shared = self._mlp(m + "shared_expert.", h)
        return out + _sigmoid((w[m + "shared_expert_gate.weight"] @ h)[0]) * shared

    def step(self, token, state, pos):
        """One token through every layer; returns its logits (float64)."""
        f, w = self.f, self.w
        x = w["model.embed_tokens.weight"][token].astype(np.float64)
        for i, t in enumerate(f["types"]):
            p = "model.layers.%d." % i
            h = self._norm(x, w[p + "input_layernorm.weight"])
            if t == "linear_attention":
                h = self._delta(i, h, state[i])
            else:
                h = self._attention(i, h, state[i], pos)
            x = x + h
            h = self._norm(x, w[p + "post_attention_layernorm.weight"])
            x = x + self._ffn(i, h)
        x = self._norm(x, w["model.norm.weight"])
        head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
        return head @ x

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
    ap.add_argument("cmd", choices=["write"])
    ap.add_argument("out")
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    write(shrink(QWEN3_NEXT_80B_A3B), a.out, a.dtype, a.seed)


if __name__ == "__main__":
    main()
