#!/usr/bin/env python3
"""Mamba (MambaForCausalLM) in float64, step by step, and its shrunk checkpoints.

Semantics from transformers' models/mamba/modeling_mamba.py (MambaMixer.slow_forward and
its cache update, MambaRMSNorm, MambaBlock, MambaModel, MambaForCausalLM), written here
independently of facet's C code (src/engine/mixer_mamba.c). The reference runs the
recurrence one token at a time, as transformers' decode path does:

  h = RMSNorm(x) * w                                 (MambaRMSNorm, eps layer_norm_epsilon)
  (xs, z) = h W_in^T                                 in_proj, chunk(2)
  conv_state = roll(conv_state, -1); conv_state[:, -1] = xs
  xs = act(sum(conv_state * conv1d.weight[:, 0, :]) + conv1d.bias)
  (dt, B, C) = split(xs W_x^T, [R, N, N])
  dt = softplus(dt W_dt^T + b_dt)
  A = -exp(A_log)
  ssm = exp(A dt) * ssm + (dt B) * xs               (per channel, N values)
  y = ssm C + D xs;  y = y * act(z);  out = y W_out^T
  x = x + out                                        (residual in float32/float64)
  logits = RMSNorm(x) * norm_f  W_lm^T               (lm_head tied to embeddings by default)

Command line: mamba_ref.py write CONFIG.json OUT_DIR [--dtype f32|bf16] [--seed S] [--full]
writes config.json (shrunk with shrink(), or as given with --full: the full-size shapes
of bench/RESULTS.md) and model.safetensors.
"""

import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

# state-spaces/mamba-130m-hf's config.json (public values, the hub)
MAMBA_130M = {
    "architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 768,
    "intermediate_size": 1536, "num_hidden_layers": 24, "n_layer": 24, "state_size": 16,
    "conv_kernel": 4, "expand": 2, "time_step_rank": 48, "use_bias": False,
    "use_conv_bias": True, "hidden_act": "silu", "layer_norm_epsilon": 1e-05,
    "residual_in_fp32": True, "rms_norm": True, "fused_add_norm": True,
    "initializer_range": 0.1, "rescale_prenorm_residual": False, "time_step_floor": 0.0001,
    "time_step_init_scheme": "random", "time_step_max": 0.1, "time_step_min": 0.001,
    "time_step_scale": 1.0, "pad_vocab_size_multiple": 8, "vocab_size": 50280,
    "bos_token_id": 0, "eos_token_id": 0, "pad_token_id": 0, "use_cache": True,
    "torch_dtype": "float32",
}


# A Mamba-2 config of mistralai/Mamba-Codestral-7B-v0.1's shape (Mamba2Config keys; the
# values as published for that model: 64 layers, hidden 4096, 128 heads of 64, 8 groups,
# state 128, conv 4, untied)
MAMBA2_CODESTRAL = {
    "architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2", "hidden_size": 4096,
    "num_hidden_layers": 64, "num_heads": 128, "head_dim": 64, "n_groups": 8,
    "state_size": 128, "expand": 2, "conv_kernel": 4, "chunk_size": 256,
    "vocab_size": 32768, "use_bias": False, "use_conv_bias": True, "hidden_act": "silu",
    "layer_norm_epsilon": 1e-05, "residual_in_fp32": True, "rms_norm": True,
    "tie_word_embeddings": False, "time_step_rank": 256, "time_step_min": 0.001,
    "time_step_max": 0.1, "time_step_floor": 0.0001, "initializer_range": 0.1,
    "rescale_prenorm_residual": False, "bos_token_id": 0, "eos_token_id": 0,
    "pad_token_id": 0, "use_cache": True, "torch_dtype": "bfloat16",
}


def facts(cfg):
    H = cfg["hidden_size"]
    expand = cfg.get("expand", 2)
    R = cfg.get("time_step_rank", "auto")
    if cfg.get("model_type") == "mamba2":
        DI = expand * H
        return {
            "v": 2, "H": H, "DI": DI, "N": cfg.get("state_size", 128),
            "K": cfg.get("conv_kernel", 4), "NH": cfg.get("num_heads", 128),
            "P": cfg.get("head_dim", 64), "G": cfg.get("n_groups", 8),
            "L": cfg["num_hidden_layers"], "V": cfg["vocab_size"],
            "eps": cfg.get("layer_norm_epsilon", 1e-5),
            "conv_bias": cfg.get("use_conv_bias", True), "bias": cfg.get("use_bias", False),
            "tied": cfg.get("tie_word_embeddings", False), "act": cfg.get("hidden_act", "silu"),
        }
    return {
        "v": 1,
        "H": H, "DI": cfg.get("intermediate_size", expand * H), "N": cfg.get("state_size", 16),
        "K": cfg.get("conv_kernel", 4), "R": math.ceil(H / 16) if R == "auto" else R,
        "L": cfg["num_hidden_layers"], "V": cfg["vocab_size"],
        "eps": cfg.get("layer_norm_epsilon", 1e-5), "conv_bias": cfg.get("use_conv_bias", True),
        "bias": cfg.get("use_bias", False), "tied": cfg.get("tie_word_embeddings", True),
        "act": cfg.get("hidden_act", "silu"),
    }


def shrink2(cfg, hidden_size=64, num_hidden_layers=3, vocab_size=512, num_heads=8,
            n_groups=2, state_size=16):
    """A Mamba-2 config at test size: expand and conv_kernel kept; num_heads x head_dim =
    expand x hidden_size; n_groups > 1 (the per-group gated norm differs from the
    whole-width one only then)."""
    c = dict(cfg)
    di = c.get("expand", 2) * hidden_size
    c.update(hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
             vocab_size=vocab_size, num_heads=num_heads, head_dim=di // num_heads,
             n_groups=n_groups, state_size=state_size, time_step_rank=hidden_size // 16)
    return c


def shrink(cfg, hidden_size=64, num_hidden_layers=3, vocab_size=512, time_step_rank=6):
    """The same config class and facts at test size: expand, state_size, conv_kernel and
    the flags kept; intermediate_size = expand * hidden_size as MambaConfig derives it;
    an explicit time_step_rank (not "auto") so the key is read."""
    c = dict(cfg)
    c.update(hidden_size=hidden_size, num_hidden_layers=num_hidden_layers, vocab_size=vocab_size,
             time_step_rank=time_step_rank)
    c["intermediate_size"] = c.get("expand", 2) * hidden_size
    if "n_layer" in c:
        c["n_layer"] = num_hidden_layers
    return c


def tensor_specs(cfg):
    f = facts(cfg)
    if f["v"] == 2:
        H, DI, N, K, NH, G = f["H"], f["DI"], f["N"], f["K"], f["NH"], f["G"]
        CD = DI + 2 * G * N
        specs = [("backbone.embeddings.weight", (f["V"], H))]
        for i in range(f["L"]):
            p = "backbone.layers.%d." % i
            specs += [(p + "norm.weight", (H,)), (p + "mixer.in_proj.weight", (DI + CD + NH, H)),
                      (p + "mixer.conv1d.weight", (CD, 1, K))]
            if f["conv_bias"]:
                specs.append((p + "mixer.conv1d.bias", (CD,)))
            specs += [(p + "mixer.dt_bias", (NH,)), (p + "mixer.A_log", (NH,)),
                      (p + "mixer.D", (NH,)), (p + "mixer.norm.weight", (DI,)),
                      (p + "mixer.out_proj.weight", (H, DI))]
        specs.append(("backbone.norm_f.weight", (H,)))
        if not f["tied"]:
            specs.append(("lm_head.weight", (f["V"], H)))
        return specs
    H, DI, N, K, R = f["H"], f["DI"], f["N"], f["K"], f["R"]
    specs = [("backbone.embeddings.weight", (f["V"], H))]
    for i in range(f["L"]):
        p = "backbone.layers.%d." % i
        specs += [(p + "norm.weight", (H,)), (p + "mixer.in_proj.weight", (2 * DI, H)),
                  (p + "mixer.conv1d.weight", (DI, 1, K))]
        if f["conv_bias"]:
            specs.append((p + "mixer.conv1d.bias", (DI,)))
        specs += [(p + "mixer.x_proj.weight", (R + 2 * N, DI)),
                  (p + "mixer.dt_proj.weight", (DI, R)), (p + "mixer.dt_proj.bias", (DI,)),
                  (p + "mixer.A_log", (DI, N)), (p + "mixer.D", (DI,)),
                  (p + "mixer.out_proj.weight", (H, DI))]
    specs.append(("backbone.norm_f.weight", (H,)))
    if not f["tied"]:
        specs.append(("lm_head.weight", (f["V"], H)))
    return specs


def init(name, shape, cfg, seed):
    """Seeded weights of the scales a trained Mamba has (A_log = log(1..N), dt in
    [1e-3, 1e-1] through dt_proj's bias as MambaMixer's init), so the state matters."""
    f = facts(cfg)
    rng = np.random.default_rng([seed, sum(map(ord, name)) * 7919 + len(name)])
    n = rng.standard_normal(shape)
    if name.endswith("norm.weight") or name.endswith("norm_f.weight"):
        return 1.0 + 0.1 * n
    if name.endswith("embeddings.weight") or name == "lm_head.weight":
        return n * (2.0 / math.sqrt(f["H"]))
    if name.endswith("in_proj.weight"):
        return n / math.sqrt(shape[1])
    if name.endswith("conv1d.weight"):
        return n * 0.5
    if name.endswith("conv1d.bias"):
        return n * 0.1
    if name.endswith("x_proj.weight"):
        return n * (2.0 / math.sqrt(shape[1]))
    if name.endswith("dt_proj.weight"):
        return n * (f["R"] ** -0.5)
    if name.endswith("dt_proj.bias") or name.endswith("dt_bias"):
        u = rng.random(shape)
        dt = np.exp(u * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
        return dt + np.log(-np.expm1(-dt))
    if name.endswith("A_log") and len(shape) == 1:  # Mamba-2: A in [1, 16] per head
        return np.log(rng.uniform(1, 16, shape))
    if name.endswith("A_log"):
        return np.log(np.arange(1, shape[1] + 1, dtype=np.float64))[None, :] + 0.1 * n
    if name.endswith("mixer.norm.weight"):
        return 1.0 + 0.1 * n
    if name.endswith(".D"):
        return 1.0 + 0.1 * n
    if name.endswith("out_proj.weight"):
        return n * (1.0 / math.sqrt(shape[1]))
    raise ValueError(name)


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


def _softplus(x):  # torch.nn.functional.softplus, beta 1, threshold 20
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


def mamba2_step(w, p, f, h, st):
    """One token through a Mamba-2 mixer (Mamba2Mixer's cache step, torch_forward; the
    gated norm per group as mamba_ssm): w the tensors, p their name prefix ("...mixer."),
    f the facts (DI, N, NH, P, G, eps, conv_bias; norm_groups overrides the norm's
    groups), h the normed input (H), st the layer's {"conv": (CD, K), "ssm": (NH, P, N)},
    updated in place. Returns out_proj's output (H)."""
    DI, N, NH, P, G = f["DI"], f["N"], f["NH"], f["P"], f["G"]
    CD = DI + 2 * G * N
    proj = w[p + "in_proj.weight"] @ h
    z, xbc, dt = proj[:DI], proj[DI:DI + CD], proj[DI + CD:]
    st["conv"] = np.roll(st["conv"], -1, axis=1)
    st["conv"][:, -1] = xbc
    xbc = np.sum(st["conv"] * w[p + "conv1d.weight"][:, 0, :], axis=1)
    if f["conv_bias"]:
        xbc = xbc + w[p + "conv1d.bias"]
    xbc = _silu(xbc)
    x, B, C = xbc[:DI], xbc[DI:DI + G * N], xbc[DI + G * N:]
    dt = _softplus(dt + w[p + "dt_bias"])                    # (NH)
    A = -np.exp(w[p + "A_log"])                              # (NH)
    heads_per_group = NH // G
    Bh = np.repeat(B.reshape(G, N), heads_per_group, axis=0)  # (NH, N)
    Ch = np.repeat(C.reshape(G, N), heads_per_group, axis=0)
    xh = x.reshape(NH, P)
    dA = np.exp(dt * A)[:, None, None]
    st["ssm"] = st["ssm"] * dA + (dt[:, None, None] * Bh[:, None, :]) * xh[:, :, None]
    y = np.einsum("hpn,hn->hp", st["ssm"], Ch) + w[p + "D"][:, None] * xh
    y = y.reshape(DI) * _silu(z)
    ng = f.get("norm_groups", G)  # 1: transformers' whole-width form (tests only)
    yg = y.reshape(ng, DI // ng)
    yg = yg / np.sqrt(np.mean(yg * yg, axis=1, keepdims=True) + f["eps"])
    y = yg.reshape(DI) * w[p + "norm.weight"]
    return w[p + "out_proj.weight"] @ y


class Reference:
    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as fp:
            self.cfg = json.load(fp)
        self.f = facts(self.cfg)
        if self.f["act"] != "silu" or self.f["bias"]:
            raise ValueError("reference: hidden_act silu and use_bias false only")
        path = os.path.join(folder, "model.safetensors")
        header, _, start = safetensors_io.read_header(path)
        self.w = {k: safetensors_io.read_tensor(path, v, start) for k, v in header.items()}
        self.vocab_size = self.f["V"]

    def new_state(self):
        f = self.f
        if f["v"] == 2:
            CD = f["DI"] + 2 * f["G"] * f["N"]
            return [{"conv": np.zeros((CD, f["K"])), "ssm": np.zeros((f["NH"], f["P"], f["N"]))}
                    for _ in range(f["L"])]
        return [{"conv": np.zeros((f["DI"], f["K"])), "ssm": np.zeros((f["DI"], f["N"]))}
                for _ in range(f["L"])]

    def _norm(self, x, w):
        return x / np.sqrt(np.mean(x * x) + self.f["eps"]) * w

    def _mixer(self, i, h, st):
        f, w = self.f, self.w
        p = "backbone.layers.%d.mixer." % i
        DI, N, R = f["DI"], f["N"], f["R"]
        xz = w[p + "in_proj.weight"] @ h
        xs, z = xz[:DI], xz[DI:]
        st["conv"] = np.roll(st["conv"], -1, axis=1)
        st["conv"][:, -1] = xs
        xs = np.sum(st["conv"] * w[p + "conv1d.weight"][:, 0, :], axis=1)
        if f["conv_bias"]:
            xs = xs + w[p + "conv1d.bias"]
        xs = _silu(xs)
        dbc = w[p + "x_proj.weight"] @ xs
        dt, B, C = dbc[:R], dbc[R:R + N], dbc[R + N:]
        dt = _softplus(w[p + "dt_proj.weight"] @ dt + w[p + "dt_proj.bias"])
        A = -np.exp(w[p + "A_log"])
        st["ssm"] = np.exp(A * dt[:, None]) * st["ssm"] + (dt[:, None] * B[None, :]) * xs[:, None]
        y = st["ssm"] @ C + w[p + "D"] * xs
        y = y * _silu(z)
        return w[p + "out_proj.weight"] @ y

    def _mixer2(self, i, h, st):
        return mamba2_step(self.w, "backbone.layers.%d.mixer." % i, self.f, h, st)

    def step(self, token, state):
        """One token through every layer; returns its logits (float64)."""
        w = self.w
        x = w["backbone.embeddings.weight"][token].copy()
        for i in range(self.f["L"]):
            h = self._norm(x, w["backbone.layers.%d.norm.weight" % i])
            mix = self._mixer2 if self.f["v"] == 2 else self._mixer
            x = x + mix(i, h, state[i])
        x = self._norm(x, w["backbone.norm_f.weight"])
        head = w.get("lm_head.weight", w["backbone.embeddings.weight"])
        return head @ x

    def generate(self, prompt_ids, n):
        """Greedy: {"logits": rows for prompt + generated[:-1], "generated_ids",
        "margins"} (compare.greedy_agreement's shape)."""
        state = self.new_state()
        rows = [self.step(t, state) for t in prompt_ids]
        gen, margins = [], []
        for k in range(n):
            last = rows[-1]
            top = np.sort(last)[-2:]
            gen.append(int(np.argmax(last)))
            margins.append(float(top[1] - top[0]))
            if k + 1 < n:
                rows.append(self.step(gen[-1], state))
        return {"logits": np.array(rows), "generated_ids": gen, "margins": margins}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cmd", choices=["write"])
    ap.add_argument("config", help="a config.json, or 'mamba-130m' / 'mamba2-codestral' for "
                    "the inline public ones")
    ap.add_argument("out")
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--full", action="store_true", help="write CONFIG.json's shape unshrunk")
    a = ap.parse_args(argv)
    if a.config == "mamba2-codestral":
        write(shrink2(MAMBA2_CODESTRAL), a.out, a.dtype, a.seed)
        return
    if a.config == "mamba-130m":
        cfg = MAMBA_130M
    else:
        with open(a.config) as fp:
            cfg = json.load(fp)
    write(cfg if a.full else shrink(cfg), a.out, a.dtype, a.seed)


if __name__ == "__main__":
    main()
