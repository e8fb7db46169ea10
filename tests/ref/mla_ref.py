#!/usr/bin/env python3
"""DeepSeek-V2 / V3 (multi-head latent attention, DeepSeek's MoE routing) in float64,
one token at a time, and their shrunk checkpoints.

Semantics from transformers' models/deepseek_v2/modeling_deepseek_v2.py and
models/deepseek_v3/modeling_deepseek_v3.py (DeepseekV2Attention / DeepseekV3Attention,
DeepseekV2Moe.route_tokens_to_experts, DeepseekV3TopkRouter, the decoder layers), with
the softmax scale as DeepSeek's own modeling code sets it (times yarn's mscale(factor,
mscale_all_dim)^2, which transformers' DeepseekV2 port once left out). Written here
independently of facet's C code (src/engine/mixer_mla.c, ffn_moe.c). Attention runs in
the plain, expanded form: per head k = [W_kb c | k_rope], v = W_vb c, from the cached
latent c (kv_a_layernorm'd) and rope key.

  q = h W_q^T, or RMSNorm(h W_qa^T) W_qb^T      per head [q_nope (dn) | q_rope (dr)]
  [c | kr] = h W_kva^T;  c = RMSNorm(c)
  rope on q_rope and kr, pairs (2i, 2i+1) rotated by position * inv_freq[i]
  (yarn: DeepSeek's inv_freq blend, cos/sin times mscale(f, m) / mscale(f, m_all))
  scores = q . k * (dn + dr)^-1/2 * mscale(f, m_all)^2
  MoE layers (i >= first_k_dense_replace): scores s = softmax(logits) (V2) or
  sigmoid(logits) (V3); choice = s (+ e_score_correction_bias, V3); groups of E / n_group
  ranked by max (group_limited_greedy) or top-2 sum (noaux_tc), the topk_group best kept,
  the rest set to 0; top-k of the choice (ties to the lower index); w = s[ids]
  (/ sum + 1e-20 when norm_topk_prob, V3) * routed_scaling_factor; plus the shared experts
  (one MLP of n_shared_experts * moe_intermediate_size).

kv_round ("bf16" / "f16"): the cached latent and rope key are rounded as a 16-bit
latent cache stores them (queries are not rounded: facet's latent attention keeps them
float32).
"""

import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
from reference import round_kv  # noqa: E402

# deepseek-ai/DeepSeek-V2-Lite's config.json values as published (no q_lora_rank, greedy
# softmax routing, 2 shared experts, the first layer dense, yarn with mscale 0.707)
DEEPSEEK_V2_LITE = {
    "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
    "attention_bias": False, "attention_dropout": 0.0, "aux_loss_alpha": 0.001,
    "bos_token_id": 100000, "eos_token_id": 100001, "ep_size": 1,
    "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048,
    "initializer_range": 0.02, "intermediate_size": 10944, "kv_lora_rank": 512,
    "max_position_embeddings": 163840, "moe_intermediate_size": 1408, "moe_layer_freq": 1,
    "n_group": 1, "n_routed_experts": 64, "n_shared_experts": 2, "norm_topk_prob": False,
    "num_attention_heads": 16, "num_experts_per_tok": 6, "num_hidden_layers": 27,
    "num_key_value_heads": 16, "pretraining_tp": 1, "q_lora_rank": None,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
                     "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096,
                     "type": "yarn"},
    "rope_theta": 10000, "routed_scaling_factor": 1.0, "scoring_func": "softmax",
    "seq_aux": True, "tie_word_embeddings": False, "topk_group": 1, "topk_method": "greedy",
    "torch_dtype": "bfloat16", "use_cache": True, "v_head_dim": 128, "vocab_size": 102400,
}

# deepseek-ai/DeepSeek-V2's shape (q_lora_rank 1536, group-limited routing over 8 groups
# of 20 experts, 3 groups kept, routed_scaling_factor 16)
DEEPSEEK_V2 = dict(DEEPSEEK_V2_LITE, hidden_size=5120, intermediate_size=12288,
                   moe_intermediate_size=1536, n_routed_experts=160, num_attention_heads=128,
                   num_key_value_heads=128, num_hidden_layers=60, q_lora_rank=1536,
                   n_group=8, topk_group=3, topk_method="group_limited_greedy",
                   routed_scaling_factor=16.0)

# moonshotai/Kimi-K2-Instruct's config.json values as published (public; checked against
# public copies of that file and of Moonshot's deploy guidance, which says the config sets
# model_type "kimi_k2" so engines can tell it from DeepSeek-V3, while auto_map and
# architectures name DeepSeek-V3's own config and modeling classes). DeepSeek-V3's
# architecture with 64 heads, 384 routed experts in one group (no group limit), one dense
# layer, routed_scaling_factor 2.827, rope_theta 50000, yarn factor 32 with beta_fast 1,
# vocab 163840 (a tiktoken vocabulary: tiktoken.model + tokenization_kimi.py, no
# tokenizer.json), FP8 weights in 128 x 128 blocks as DeepSeek-V3's release.
KIMI_K2 = {
    "architectures": ["DeepseekV3ForCausalLM"], "attention_bias": False,
    "attention_dropout": 0.0,
    "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config",
                 "AutoModel": "modeling_deepseek.DeepseekV3Model",
                 "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM"},
    "aux_loss_alpha": 0.001, "bos_token_id": 163584, "eos_token_id": 163585,
    "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 7168,
    "initializer_range": 0.02, "intermediate_size": 18432, "kv_lora_rank": 512,
    "max_position_embeddings": 131072, "model_type": "kimi_k2", "moe_intermediate_size": 2048,
    "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 384, "n_shared_experts": 1,
    "norm_topk_prob": True, "num_attention_heads": 64, "num_experts_per_tok": 8,
    "num_hidden_layers": 61, "num_key_value_heads": 64, "num_nextn_predict_layers": 0,
    "pretraining_tp": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                            "weight_block_size": [128, 128]},
    "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 1.0, "beta_slow": 1.0, "factor": 32.0, "mscale": 1.0,
                     "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                     "type": "yarn"},
    "rope_theta": 50000.0, "routed_scaling_factor": 2.827, "scoring_func": "sigmoid",
    "seq_aux": True, "tie_word_embeddings": False, "topk_group": 1, "topk_method": "noaux_tc",
    "torch_dtype": "bfloat16", "transformers_version": "4.48.3", "use_cache": True,
    "v_head_dim": 128, "vocab_size": 163840,
}

# the shrunk shape: hidden 64, 4 heads, latent 32, rope 8 (every kind of dimension kept
# distinct so a swapped axis fails)
SMALL = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4,
         "kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 24,
         "intermediate_size": 96, "moe_intermediate_size": 32, "vocab_size": 512}


def shrink(cfg, num_hidden_layers=3, experts=16, top_k=4, **overrides):
    """A small config of cfg's facts: SMALL's sizes, q_lora_rank 48 where cfg has one,
    `experts` routed experts (n_group kept when it divides them, else 4), `top_k`,
    special token ids remapped below the vocab; overrides last."""
    c = json.loads(json.dumps(cfg))
    c.pop("quantization_config", None)
    c.update(SMALL)
    c["num_hidden_layers"] = num_hidden_layers
    if c.get("q_lora_rank"):
        c["q_lora_rank"] = 48
    c["n_routed_experts"] = experts
    c["num_experts_per_tok"] = top_k
    g = int(c.get("n_group") or 1)
    if experts % g or experts // g < 2:
        c["n_group"] = g = 4
    c["topk_group"] = min(int(c.get("topk_group") or 1), g)
    if c["topk_group"] * (experts // g) < top_k:
        c["topk_group"] = -(-top_k // (experts // g))
    c["bos_token_id"], c["eos_token_id"] = 510, 511
    c.update(overrides)
    return c


class Facts:
    def __init__(self, c):
        # DeepseekV3Config's semantics: deepseek_v3, and kimi_k2 (Moonshot's name for it)
        self.v3 = c["model_type"] in ("deepseek_v3", "kimi_k2")
        self.H, self.V, self.L = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
        self.nh = c["num_attention_heads"]
        self.QL = c.get("q_lora_rank") or 0
        self.C, self.dn = c["kv_lora_rank"], c["qk_nope_head_dim"]
        self.dr, self.dv = c["qk_rope_head_dim"], c["v_head_dim"]
        self.I, self.EI = c["intermediate_size"], c["moe_intermediate_size"]
        self.E, self.k = c.get("n_routed_experts") or 0, c["num_experts_per_tok"]
        self.shared = c.get("n_shared_experts") or 0
        self.first_dense = c.get("first_k_dense_replace", 3 if self.v3 else 0)
        self.n_group = c.get("n_group") or 1
        self.topk_group = c.get("topk_group") or 1
        self.method = c.get("topk_method", "noaux_tc" if self.v3 else "greedy")
        if self.method == "greedy":
            self.n_group = self.topk_group = 1
        self.norm = bool(c.get("norm_topk_prob", self.v3)) and self.v3
        self.scaling = float(c.get("routed_scaling_factor", 2.5 if self.v3 else 1.0))
        self.eps = c.get("rms_norm_eps", 1e-6)
        self.theta = float(c.get("rope_theta", 10000.0))
        self.rs = c.get("rope_scaling") or None
        self.vocab_size = self.V

    def sparse(self, i):
        return self.E > 0 and i >= self.first_dense


def tensor_specs(c):
    f = Facts(c)
    H, nh = f.H, f.nh
    specs = [("model.embed_tokens.weight", (f.V, H))]
    for i in range(f.L):
        p = "model.layers.%d." % i
        specs.append((p + "input_layernorm.weight", (H,)))
        a = p + "self_attn."
        if f.QL:
            specs += [(a + "q_a_proj.weight", (f.QL, H)), (a + "q_a_layernorm.weight", (f.QL,)),
                      (a + "q_b_proj.weight", (nh * (f.dn + f.dr), f.QL))]
        else:
            specs.append((a + "q_proj.weight", (nh * (f.dn + f.dr), H)))
        specs += [(a + "kv_a_proj_with_mqa.weight", (f.C + f.dr, H)),
                  (a + "kv_a_layernorm.weight", (f.C,)),
                  (a + "kv_b_proj.weight", (nh * (f.dn + f.dv), f.C)),
                  (a + "o_proj.weight", (H, nh * f.dv)),
                  (p + "post_attention_layernorm.weight", (H,))]
        m = p + "mlp."
        if not f.sparse(i):
            specs += [(m + "gate_proj.weight", (f.I, H)), (m + "up_proj.weight", (f.I, H)),
                      (m + "down_proj.weight", (H, f.I))]
            continue
        specs.append((m + "gate.weight", (f.E, H)))
        if f.v3:
            specs.append((m + "gate.e_score_correction_bias", (f.E,)))
        for e in range(f.E):
            q = m + "experts.%d." % e
            specs += [(q + "gate_proj.weight", (f.EI, H)), (q + "up_proj.weight", (f.EI, H)),
                      (q + "down_proj.weight", (H, f.EI))]
        if f.shared:
            S = f.shared * f.EI
            specs += [(m + "shared_experts.gate_proj.weight", (S, H)),
                      (m + "shared_experts.up_proj.weight", (S, H)),
                      (m + "shared_experts.down_proj.weight", (H, S))]
    specs += [("model.norm.weight", (H,)), ("lm_head.weight", (f.V, H))]
    return specs


def init(name, shape, f, seed):
    """Seeded weights: linear N(0, 4 / fan_in) (2 / sqrt(fan_in): sharp attention, lively
    blocks), norms 1 + N(0, 0.01), embeddings and lm_head 2 / sqrt(H), the router's
    correction bias N(0, 0.05^2)."""
    rng = np.random.default_rng([seed, sum(map(ord, name)) * 7919 + len(name)])
    n = rng.standard_normal(shape)
    if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
        return 1.0 + 0.1 * n
    if name.endswith("e_score_correction_bias"):
        return 0.05 * n
    if name.endswith("embed_tokens.weight") or name == "lm_head.weight":
        return n * (2.0 / math.sqrt(f.H))
    return n * (2.0 / math.sqrt(shape[1]))


def fp8_matrix(name, shape):
    """Whether DeepSeek-V3's FP8 release stores this tensor in float8 e4m3 with a
    weight_scale_inv: every linear weight of the decoder layers but the router (embeddings,
    lm_head, norms, mlp.gate and its bias stay in bf16 / f32)."""
    return (len(shape) == 2 and name.startswith("model.layers.") and name.endswith("proj.weight")
            or name.endswith("kv_a_proj_with_mqa.weight"))


def fp8_block_quantize(x, block):
    """(e4m3 values q, float32 scale_inv per block) with x ~ q * scale_inv: each block's
    scale its largest |x| / 448 (the e4m3 maximum), rounded to float32."""
    r, c = x.shape
    br, bc = block
    nr, nc = -(-r // br), -(-c // bc)
    scale = np.zeros((nr, nc), dtype=np.float32)
    q = np.zeros_like(x)
    for i in range(nr):
        for j in range(nc):
            b = x[i * br:(i + 1) * br, j * bc:(j + 1) * bc]
            s = np.float32(max(np.abs(b).max(), 1e-12) / 448.0)
            scale[i, j] = s
            q[i * br:(i + 1) * br, j * bc:(j + 1) * bc] = safetensors_io.e4m3_round(
                np.clip(b / np.float64(s), -448, 448))
    return q, scale


def write(cfg, out_dir, dtype="f32", seed=0, fp8_block=(16, 16)):
    """dtype f32 / bf16, or fp8: DeepSeek-V3's release layout (quantization_config fp8 /
    e4m3 / weight_block_size, fp8_matrix tensors as F8_E4M3 + F32 weight_scale_inv, the
    rest BF16)."""
    st = {"f32": "F32", "bf16": "BF16", "fp8": "BF16"}[dtype]
    cfg = dict(cfg)
    cfg["torch_dtype"] = {"f32": "float32", "bf16": "bfloat16", "fp8": "bfloat16"}[dtype]
    if dtype == "fp8":
        cfg["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3",
                                      "quant_method": "fp8", "weight_block_size": list(fp8_block)}
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as fp:
        json.dump(cfg, fp, indent=2)
    specs = tensor_specs(cfg)
    f = Facts(cfg)
    entries, made = [], {}
    for n, shp in specs:
        if dtype == "fp8" and fp8_matrix(n, shp):
            entries.append((n, "F8_E4M3", shp))
            entries.append((n + "_scale_inv", "F32", (-(-shp[0] // fp8_block[0]), -(-shp[1] // fp8_block[1]))))
        else:
            entries.append((n, "F32" if n.endswith("e_score_correction_bias") and dtype == "fp8" else st, shp))
    shapes = dict(specs)

    def make(n):
        if n.endswith("_scale_inv"):
            return made.pop(n)
        x = init(n, shapes[n], f, seed)
        if dtype == "fp8" and fp8_matrix(n, shapes[n]):
            q, made[n + "_scale_inv"] = fp8_block_quantize(x, fp8_block)
            return q
        return x

    safetensors_io.write_file(os.path.join(out_dir, "model.safetensors"), entries, make)
    return out_dir


def _mscale(scale, m):
    return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0


def rope_tables(f):
    """(inv_freq over dr / 2, cos/sin multiplier, softmax scale)."""
    d = f.dr
    extra = 1.0 / f.theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    scale = (f.dn + f.dr) ** -0.5
    rs = f.rs
    if not rs or rs.get("rope_type", rs.get("type")) in (None, "default"):
        return extra, 1.0, scale
    kind = rs.get("rope_type", rs.get("type"))
    if kind != "yarn":
        raise NotImplementedError("rope_scaling type %r" % kind)
    factor = float(rs["factor"])
    orig = float(rs.get("original_max_position_embeddings", 4096))
    bf, bs = float(rs.get("beta_fast", 32)), float(rs.get("beta_slow", 1))
    m, m_all = float(rs.get("mscale", 1)), float(rs.get("mscale_all_dim", 0))

    def corr(rot):
        return d * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(f.theta))

    lo, hi = max(math.floor(corr(bf)), 0), min(math.ceil(corr(bs)), d - 1)
    if lo == hi:
        hi += 0.001
    ramp = np.clip((np.arange(d // 2, dtype=np.float64) - lo) / (hi - lo), 0, 1)
    extra_mask = 1.0 - ramp
    inv = (extra / factor) * (1 - extra_mask) + extra * extra_mask
    if m_all:
        scale *= _mscale(factor, m_all) ** 2
    return inv, _mscale(factor, m) / _mscale(factor, m_all), scale


class Reference:
    def __init__(self, folder, kv_round=None):
        with open(os.path.join(folder, "config.json")) as fp:
            self.cfg = json.load(fp)
        self.f = f = Facts(self.cfg)
        path = os.path.join(folder, "model.safetensors")
        header, _, start = safetensors_io.read_header(path)
        self.w = {k: safetensors_io.read_tensor(path, v, start) for k, v in header.items()}
        qc = self.cfg.get("quantization_config") or {}
        for k in [k for k in self.w if k.endswith("_scale_inv")]:  # FP8 blocks: W = q * s
            s = self.w.pop(k)
            q = self.w[k[:-len("_scale_inv")]]
            br, bc = qc["weight_block_size"]
            self.w[k[:-len("_scale_inv")]] = q * np.kron(s, np.ones((br, bc)))[:q.shape[0], :q.shape[1]]
        self.vocab_size = f.V
        self.kv_round = kv_round
        self.inv_freq, self.attn_factor, self.scale = rope_tables(f)

    def _norm(self, x, w):
        return x / np.sqrt(np.mean(x * x) + self.f.eps) * w

    def _rope(self, x, pos):
        """Pairs (2i, 2i+1) of x's last axis rotated by pos * inv_freq[i]."""
        ang = pos * self.inv_freq
        c, s = np.cos(ang) * self.attn_factor, np.sin(ang) * self.attn_factor
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = a * c - b * s
        out[..., 1::2] = b * c + a * s
        return out

    def _attention(self, i, h, pos, cache):
        f, w = self.f, self.w
        a = "model.layers.%d.self_attn." % i
        if f.QL:
            q = w[a + "q_b_proj.weight"] @ self._norm(w[a + "q_a_proj.weight"] @ h,
                                                      w[a + "q_a_layernorm.weight"])
        else:
            q = w[a + "q_proj.weight"] @ h
        q = q.reshape(f.nh, f.dn + f.dr)
        q_nope, q_rope = q[:, :f.dn], self._rope(q[:, f.dn:], pos)
        kv = w[a + "kv_a_proj_with_mqa.weight"] @ h
        c = self._norm(kv[:f.C], w[a + "kv_a_layernorm.weight"])
        kr = self._rope(kv[f.C:], pos)
        if self.kv_round:
            c, kr = round_kv(c, self.kv_round), round_kv(kr, self.kv_round)
        cache[i].append((c, kr))
        C = np.array([x[0] for x in cache[i]])          # (T, C)
        KR = np.array([x[1] for x in cache[i]])         # (T, dr)
        kvb = w[a + "kv_b_proj.weight"].reshape(f.nh, f.dn + f.dv, f.C)
        out = np.empty((f.nh, f.dv))
        for hd in range(f.nh):
            k_nope = C @ kvb[hd, :f.dn].T                # (T, dn)
            v = C @ kvb[hd, f.dn:].T                     # (T, dv)
            sc = (k_nope @ q_nope[hd] + KR @ q_rope[hd]) * self.scale
            p = np.exp(sc - sc.max())
            out[hd] = (p / p.sum()) @ v
        return w[a + "o_proj.weight"] @ out.reshape(-1)

    def route(self, logits, bias=None):
        """(ids, weights) of one token from its router logits (module docstring)."""
        f = self.f
        if f.v3:
            s = 1.0 / (1.0 + np.exp(-logits))
        else:
            e = np.exp(logits - logits.max())
            s = e / e.sum()
        choice = s + (bias if bias is not None else 0.0)
        if f.n_group > 1:
            g = choice.reshape(f.n_group, -1)
            gs = (np.sort(g, axis=1)[:, -2:].sum(axis=1) if f.method == "noaux_tc"
                  else g.max(axis=1))
            keep = np.argsort(-gs, kind="stable")[:f.topk_group]
            mask = np.zeros(f.n_group, dtype=bool)
            mask[keep] = True
            choice = np.where(np.repeat(mask, f.E // f.n_group), choice, 0.0)
        ids = np.argsort(-choice, kind="stable")[:f.k]
        wts = s[ids]
        if f.norm:
            wts = wts / (wts.sum() + 1e-20)
        return ids, wts * f.scaling

    def _mlp(self, p, h):
        w = self.w
        g, u = w[p + "gate_proj.weight"] @ h, w[p + "up_proj.weight"] @ h
        return w[p + "down_proj.weight"] @ (g / (1.0 + np.exp(-g)) * u)

    def _ffn(self, i, h):
        f, w = self.f, self.w
        m = "model.layers.%d.mlp." % i
        if not f.sparse(i):
            return self._mlp(m, h)
        ids, wts = self.route(w[m + "gate.weight"] @ h, w.get(m + "gate.e_score_correction_bias"))
        y = np.zeros(f.H)
        for e, wt in sorted(zip(ids.tolist(), wts.tolist())):
            y += wt * self._mlp(m + "experts.%d." % e, h)
        if f.shared:
            y += self._mlp(m + "shared_experts.", h)
        return y

    def step(self, token, pos, cache):
        """One token at position pos through every layer; its logits (float64)."""
        w = self.w
        x = w["model.embed_tokens.weight"][token].copy()
        for i in range(self.f.L):
            p = "model.layers.%d." % i
            x = x + self._attention(i, self._norm(x, w[p + "input_layernorm.weight"]), pos, cache)
            x = x + self._ffn(i, self._norm(x, w[p + "post_attention_layernorm.weight"]))
        return w["lm_head.weight"] @ self._norm(x, w["model.norm.weight"])

    def logits(self, ids):
        cache = [[] for _ in range(self.f.L)]
        return np.array([self.step(t, p, cache) for p, t in enumerate(ids)])

    def generate(self, prompt_ids, n):
        """Greedy: {"logits": rows for prompt + generated[:-1], "generated_ids",
        "margins"} (compare.greedy_agreement's shape)."""
        cache = [[] for _ in range(self.f.L)]
        rows = [self.step(t, p, cache) for p, t in enumerate(prompt_ids)]
        gen, margins = [], []
        for k in range(n):
            last = rows[-1]
            top = np.sort(last)[-2:]
            gen.append(int(np.argmax(last)))
            margins.append(float(top[1] - top[0]))
            if k + 1 < n:
                rows.append(self.step(gen[-1], len(rows), cache))
        return {"logits": np.array(rows), "generated_ids": gen, "margins": margins}


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description="write a shrunk DeepSeek-V2/V3 checkpoint")
    ap.add_argument("config", help="a config.json, or 'deepseek-v2' / 'deepseek-v2-lite' for the "
                    "inline ones")
    ap.add_argument("out")
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                    help="override a key of the shrunk config")
    a = ap.parse_args(argv)
    inline = {"deepseek-v2": DEEPSEEK_V2, "deepseek-v2-lite": DEEPSEEK_V2_LITE}
    if a.config in inline:
        cfg = inline[a.config]
    else:
        with open(a.config) as fp:
            cfg = json.load(fp)
    over = {}
    for kv in a.set:
        k, v = kv.split("=", 1)
        over[k] = json.loads(v)
    write(shrink(cfg, **over), a.out, a.dtype, a.seed)


if __name__ == "__main__":
    main()
