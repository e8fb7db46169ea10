#!/usr/bin/python3
"""Write a real-format Hugging Face checkpoint folder with seeded random weights.

From any config.json (a path, a folder holding one, or a dict): optionally shrink it
(fewer layers, smaller heads/head_dim/hidden/intermediate/vocab, every other fact kept),
then write config.json, generation_config.json and safetensors in F32, BF16 (round to
nearest even from float32) or F16, as one model.safetensors or N shards
model-0000i-of-0000N.safetensors with model.safetensors.index.json. No tokenizer is
written: drive the engine with token ids (facet run --prompt-ids).

Library use (tests/e2e add tests/ref to sys.path; see tests/e2e/conftest.py):

    import gen_checkpoint as gc
    cfg = gc.load_config("tests/data/ref/configs/Qwen__Qwen3-0.6B__dims")
    small = gc.shrink_config(cfg, num_hidden_layers=2, head_dim=32)   # facts kept
    gc.write_checkpoint(small, out_dir, dtype="bf16", shards=2, seed=0)

Weights are a pure function of (seed, tensor name, shape): the F32, BF16 and F16 writes
of one config hold the same values up to the storage rounding, whatever the sharding.

CLI:
    tests/ref/gen_checkpoint.py CONFIG OUT [--dtype f32|bf16|f16] [--shards N] [--seed S]
        [--shrink] [--layers N] [--heads N] [--kv-heads N] [--head-dim N] [--hidden N]
        [--intermediate N] [--vocab N] [--set KEY=JSON]...
"""

import argparse
import json
import math
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_facts  # noqa: E402
import mxfp4  # noqa: E402
import safetensors_io  # noqa: E402

DTYPES = {"f32": ("F32", "float32"), "bf16": ("BF16", "bfloat16"), "f16": ("F16", "float16")}


# ---------------------------------------------------------------------------- config

def load_config(src):
    """config dict from a dict, a config.json path or a folder holding config.json."""
    if isinstance(src, dict):
        return json.loads(json.dumps(src))
    path = os.path.join(src, "config.json") if os.path.isdir(src) else src
    with open(path) as f:
        return json.load(f)


def load_generation_config(src):
    """generation_config.json beside a config path/folder, or None."""
    if isinstance(src, dict):
        return None
    folder = src if os.path.isdir(src) else os.path.dirname(src)
    path = os.path.join(folder, "generation_config.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return None


# Architecture class of a text-only model_type (for text_only_config).
TEXT_ARCHITECTURES = {"gemma3_text": "Gemma3ForCausalLM"}


def text_only_config(config):
    """The decoder of a multimodal wrapper as a standalone *ForCausalLM config (e.g.
    medgemma's Gemma3ForConditionalGeneration -> model_type gemma3_text,
    Gemma3ForCausalLM): text_config's keys at top level, plus the wrapper's token ids
    and dtype keys where text_config lacks them. Configs without text_config are
    returned unchanged (a copy)."""
    config = load_config(config)
    if not isinstance(config.get("text_config"), dict):
        return config
    tc = hf_facts.text_config(config)
    out = dict(tc)
    for k in TOKEN_ID_KEYS + ("torch_dtype", "dtype", "transformers_version"):
        if k not in out and k in config:
            out[k] = config[k]
    if out["model_type"] in TEXT_ARCHITECTURES:
        out["architectures"] = [TEXT_ARCHITECTURES[out["model_type"]]]
    return out


def _round_to(x, m):
    return max(m, int(round(x / m)) * m)


def _resample(values, n):
    """A list of n floats following the shape of values (linear interpolation over the
    index), for per-frequency lists such as longrope's short_factor/long_factor."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) == n:
        return [float(x) for x in v]
    xs = np.linspace(0, len(v) - 1, n)
    return [float(x) for x in np.interp(xs, np.arange(len(v)), v)]


TOKEN_ID_KEYS = ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id")


def _token_id_map(cfgs, vocab):
    """Map special token ids >= vocab to distinct ids at the top of the shrunk vocab
    (largest original -> vocab-1, ...), so eos/bos/pad stay valid and distinct."""
    ids = set()
    for c in cfgs:
        if not c:
            continue
        for k in TOKEN_ID_KEYS:
            v = c.get(k)
            for x in (v if isinstance(v, list) else [v]):
                if isinstance(x, int) and x >= vocab:
                    ids.add(x)
    return {x: vocab - 1 - i for i, x in enumerate(sorted(ids, reverse=True))}


def _remap_ids(c, m):
    if not c:
        return c
    for k in TOKEN_ID_KEYS:
        v = c.get(k)
        if isinstance(v, list):
            c[k] = [m.get(x, x) if isinstance(x, int) else x for x in v]
        elif isinstance(v, int):
            c[k] = m.get(v, v)
    return c


# config keys shrink_config handles under their usual names (GPT2Config's attribute_map)
SHRINK_ALIASES = {"n_embd": "hidden_size", "n_layer": "num_hidden_layers",
                  "n_head": "num_attention_heads", "n_inner": "intermediate_size",
                  "d_model": "hidden_size", "n_heads": "num_attention_heads",
                  "n_layers": "num_hidden_layers", "num_layers": "num_hidden_layers"}

# ChatGLMConfig's spellings (modeling_chatglm), shrunk under the usual names; its
# multi_query_group_num counts KV heads only with multi_query_attention
CHATGLM_ALIASES = {"padded_vocab_size": "vocab_size", "ffn_hidden_size": "intermediate_size",
                   "kv_channels": "head_dim", "multi_query_group_num": "num_key_value_heads"}


def shrink_config(config, num_hidden_layers=2, num_key_value_heads=None,
                  num_attention_heads=None, head_dim=32, hidden_size=None,
                  intermediate_size=None, vocab_size=512, max_heads=8,
                  generation_config=None, **overrides):
    """A smaller config with the same facts. Returns the new config dict; when
    generation_config is given, returns (config, generation_config) with its token ids
    remapped the same way.

    Kept: every key not listed here, and the facts: GQA ratio (heads // kv heads),
    head_dim written explicitly iff the original writes it, an explicit head_dim with
    heads x head_dim != hidden_size keeps that inequality (same ratio), the
    intermediate/hidden ratio, biases, tie, rope type and parameters, windows, softcaps.
    Changed: num_hidden_layers; num_key_value_heads (default min(kv, max_heads // ratio),
    at least 1); num_attention_heads (kv x ratio); head_dim (default 32); hidden_size
    (default heads x head_dim, or the original q-width ratio); intermediate_size
    (original ratio, multiple of 8); vocab_size (default 512); layer_types, no_rope_layers
    truncated (if the original mixes sliding and full layers and the prefix does not, the
    last layer is made full_attention); max_window_layers scaled with the layer count;
    longrope short/long factors resampled to rotary_dim / 2 entries; special token ids
    >= vocab_size remapped to the top of the vocab; overrides (KEY=value) set last.
    Multimodal wrappers (text_config) are shrunk inside text_config."""
    config = load_config(config)
    gen = json.loads(json.dumps(generation_config)) if generation_config else None
    cfg = config["text_config"] if isinstance(config.get("text_config"), dict) else config
    # GPT2Config's spellings: shrunk under the usual names, written back under its own
    aliases = {k: v for k, v in SHRINK_ALIASES.items() if k in cfg}
    if cfg.get("model_type") == "chatglm":
        aliases.update({k: v for k, v in CHATGLM_ALIASES.items() if k in cfg and (
            k != "multi_query_group_num" or cfg.get("multi_query_attention"))})
    for k, v in aliases.items():
        cfg[v] = cfg.pop(k)
    if "n_inner" in aliases and cfg.get("intermediate_size") is None:
        cfg.pop("intermediate_size")

    heads = int(cfg["num_attention_heads"])
    kv = int(cfg.get("num_key_value_heads") or heads)
    hidden = int(cfg["hidden_size"])
    old_hd = int(cfg.get("head_dim") or hidden // heads)
    ratio = max(1, heads // kv)
    kv_new = num_key_value_heads or max(1, min(kv, max_heads // ratio))
    heads_new = num_attention_heads or kv_new * ratio
    hd = int(head_dim)
    explicit = cfg.get("head_dim") is not None
    differs = explicit and heads * old_hd != hidden
    if hidden_size is None:
        if differs:
            hidden_new = _round_to(heads_new * hd * hidden / (heads * old_hd), 8)
            if hidden_new == heads_new * hd:
                hidden_new += 8
        else:
            hidden_new = heads_new * hd
    else:
        hidden_new = int(hidden_size)
    inter = cfg.get("intermediate_size")
    if intermediate_size is not None:
        inter_new = int(intermediate_size)
    elif inter:
        inter_new = _round_to(hidden_new * inter / hidden, 8)
    else:
        inter_new = inter

    # mixture-of-experts widths keep their ratio to hidden_size (multiples of 8)
    for key in ("moe_intermediate_size", "shared_expert_intermediate_size", "shared_intermediate_size"):
        if isinstance(cfg.get(key), int) and cfg[key] > 0 and key not in overrides:
            cfg[key] = _round_to(hidden_new * cfg[key] / hidden, 8)

    old_layers = int(cfg["num_hidden_layers"])
    cfg["num_hidden_layers"] = int(num_hidden_layers)
    cfg["num_attention_heads"] = heads_new
    if "num_heads" in cfg:  # StableLMEpochConfig repeats the head count
        cfg["num_heads"] = heads_new
    if "num_key_value_heads" in cfg or kv_new != heads_new:
        cfg["num_key_value_heads"] = kv_new
    cfg["hidden_size"] = hidden_new
    if explicit or hidden_new != heads_new * hd:
        cfg["head_dim"] = hd
    if inter_new is not None:
        cfg["intermediate_size"] = inter_new
    if cfg.get("model_type") == "baichuan" and int(cfg["vocab_size"]) == 125696 \
            and "z_loss_weight" not in cfg:
        # Baichuan 2's marker past its vocabulary: z_loss_weight, a key only Baichuan 2's
        # configuration classes define (its NormHead; hf_facts / facts.c read_baichuan)
        cfg["z_loss_weight"] = 0
    cfg["vocab_size"] = int(vocab_size)

    n = int(num_hidden_layers)
    lt = cfg.get("layer_types")
    if isinstance(lt, list):
        new = [lt[i % len(lt)] for i in range(n)]
        if len(set(lt)) > 1 and len(set(new)) == 1 and n > 1:
            new[-1] = "full_attention" if new[0] != "full_attention" else "sliding_attention"
        cfg["layer_types"] = new
    if isinstance(cfg.get("no_rope_layers"), list):
        nrl = cfg["no_rope_layers"]
        cfg["no_rope_layers"] = [nrl[i % len(nrl)] for i in range(n)]
    if cfg.get("max_window_layers") is not None:
        cfg["max_window_layers"] = int(round(cfg["max_window_layers"] * n / old_layers))

    prf = float(cfg.get("partial_rotary_factor") or 1.0)
    half = int(hd * prf) // 2
    for key in ("rope_scaling", "rope_parameters"):
        rs = cfg.get(key)
        if not isinstance(rs, dict):
            continue
        groups = [v for v in rs.values() if isinstance(v, dict)] or [rs]
        for g in groups:
            for fk in ("short_factor", "long_factor"):
                if isinstance(g.get(fk), list):
                    g[fk] = _resample(g[fk], half)

    for k, v in overrides.items():
        cfg[k] = v
    for k, v in aliases.items():
        if v in cfg:
            cfg[k] = cfg.pop(v)

    m = _token_id_map([config, cfg, gen], int(vocab_size))
    _remap_ids(config, m)
    if cfg is not config:
        _remap_ids(cfg, m)
    _remap_ids(gen, m)
    if generation_config is not None:
        return config, gen
    return config


def synthetic_config(head_dim=64, qk_norm=False, sliding_window=None, rope="plain",
                     hidden_act="silu", qkv_bias=False, tie=False, gqa=1,
                     num_key_value_heads=2, num_hidden_layers=2, vocab_size=512,
                     intermediate_size=None, rope_theta=10000.0, max_position_embeddings=4096):
    """A small config.json dict with exactly the requested facts, written as the
    Hugging Face family that has them (for fact-space batteries):
      qk_norm             -> qwen3 (q/k/v/o bias via attention_bias)
      no qk_norm, bias    -> qwen2 (q/k/v bias; o_proj has none)
      no qk_norm, no bias -> mistral when windowed, else llama
    sliding_window: None or a window on every layer (qwen2/3: use_sliding_window with
    max_window_layers 0); rope: "plain" or "llama3" (factor 8, low/high 1/4, original
    max 64 so every frequency regime occurs at head_dim >= 32); gqa: heads per kv head.
    num_attention_heads = num_key_value_heads * gqa, hidden_size = heads * head_dim."""
    heads = num_key_value_heads * gqa
    hidden = heads * head_dim
    if qk_norm:
        mt, arch = "qwen3", "Qwen3ForCausalLM"
    elif qkv_bias:
        mt, arch = "qwen2", "Qwen2ForCausalLM"
    elif sliding_window is not None:
        mt, arch = "mistral", "MistralForCausalLM"
    else:
        mt, arch = "llama", "LlamaForCausalLM"
    cfg = {"architectures": [arch], "model_type": mt, "hidden_size": hidden,
           "intermediate_size": intermediate_size or 2 * hidden,
           "num_hidden_layers": num_hidden_layers, "num_attention_heads": heads,
           "num_key_value_heads": num_key_value_heads, "head_dim": head_dim,
           "hidden_act": hidden_act, "rms_norm_eps": 1e-6, "rope_theta": rope_theta,
           "max_position_embeddings": max_position_embeddings, "vocab_size": vocab_size,
           "tie_word_embeddings": bool(tie), "bos_token_id": 1, "eos_token_id": 2,
           "torch_dtype": "float32"}
    if mt in ("llama", "qwen3"):
        cfg["attention_bias"] = bool(qkv_bias)
    if mt in ("qwen2", "qwen3"):
        cfg["use_sliding_window"] = sliding_window is not None
        cfg["sliding_window"] = sliding_window
        cfg["max_window_layers"] = 0
    elif mt == "mistral":
        cfg["sliding_window"] = sliding_window
    if rope == "llama3":
        cfg["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
    elif rope != "plain":
        raise ValueError("rope %r: expected plain or llama3" % (rope,))
    return cfg


# ---------------------------------------------------------------------------- tensors

EXPERTS_LAYOUTS = ("w123", "proj", "fused", "granite", "gptoss")


def moe_specs(f, p, layout):
    """Tensors of one mixture-of-experts layer (prefix p = "model.layers.N."), by layout:
      w123    block_sparse_moe.gate + block_sparse_moe.experts.E.w1/w3/w2 (Mixtral)
      proj    mlp.gate + mlp.experts.E.gate_proj/up_proj/down_proj (Qwen-MoE, OLMoE)
      fused   mlp.gate + mlp.experts.gate_up_proj [E, 2 I, H] (rows: gate then up) and
              mlp.experts.down_proj [E, H, I] (newer transformers' 3-D experts)
      granite block_sparse_moe.router.layer + input_linear [E, 2 I, H] / output_linear
              [E, H, I] (GraniteMoeParallelExperts)
    plus the shared expert (Qwen2-MoE mlp.shared_expert.* and shared_expert_gate [1, H];
    Granite-MoE-shared shared_mlp.input_linear [2 S, H] / output_linear [H, S])."""
    H, E, I = f.hidden_size, f.num_experts, f.moe_intermediate_size
    out = []
    if layout == "gptoss":  # GptOssMLP: router with a bias, experts as x @ W with biases
        return [(p + "mlp.router.weight", (E, H), ("linear", H)),
                (p + "mlp.router.bias", (E,), ("bias",)),
                (p + "mlp.experts.gate_up_proj", (E, H, 2 * I), ("linear", H)),
                (p + "mlp.experts.gate_up_proj_bias", (E, 2 * I), ("bias",)),
                (p + "mlp.experts.down_proj", (E, I, H), ("linear", I)),
                (p + "mlp.experts.down_proj_bias", (E, H), ("bias",))]
    router = {"w123": "block_sparse_moe.gate.weight", "proj": "mlp.gate.weight",
              "fused": "mlp.gate.weight", "granite": "block_sparse_moe.router.layer.weight"}[layout]
    out.append((p + router, (E, H), ("linear", H)))
    if layout in ("w123", "proj"):
        names = (("w1", "w3", "w2") if layout == "w123" else ("gate_proj", "up_proj", "down_proj"))
        base = "block_sparse_moe.experts." if layout == "w123" else "mlp.experts."
        for e in range(E):
            q = p + base + "%d." % e
            out.append((q + names[0] + ".weight", (I, H), ("linear", H)))
            out.append((q + names[1] + ".weight", (I, H), ("linear", H)))
            out.append((q + names[2] + ".weight", (H, I), ("linear", I)))
    elif layout == "fused":
        out.append((p + "mlp.experts.gate_up_proj", (E, 2 * I, H), ("linear", H)))
        out.append((p + "mlp.experts.down_proj", (E, H, I), ("linear", I)))
    else:
        out.append((p + "block_sparse_moe.input_linear.weight", (E, 2 * I, H), ("linear", H)))
        out.append((p + "block_sparse_moe.output_linear.weight", (E, H, I), ("linear", I)))
    S = f.shared_intermediate_size
    if S and layout == "granite":
        out.append((p + "shared_mlp.input_linear.weight", (2 * S, H), ("linear", H)))
        out.append((p + "shared_mlp.output_linear.weight", (H, S), ("linear", S)))
    elif S:
        for name, shape, fan in (("gate_proj", (S, H), H), ("up_proj", (S, H), H),
                                 ("down_proj", (H, S), S)):
            out.append((p + "mlp.shared_expert.%s.weight" % name, shape, ("linear", fan)))
        if f.shared_gate:
            out.append((p + "mlp.shared_expert_gate.weight", (1, H), ("linear", H)))
    return out


def mxfp4_specs(specs):
    """gpt-oss's experts in the Hugging Face MXFP4 form (tests/ref/mxfp4.py): each x @ W
    matrix NAME [E, C, R] becomes NAME_blocks [E, R, C/32, 16] and NAME_scales [E, R, C/32]
    (U8), the quantized values of the unquantized tensor the same seed gives (its
    transpose, nn.Linear's layout, quantized by mxfp4.quantize_hf)."""
    out = []
    for name, shape, init in specs:
        if name.endswith(("experts.gate_up_proj", "experts.down_proj")):
            E, C, R = shape
            out.append((name + "_blocks", (E, R, C // 32, 16), ("mxfp4_blocks", name, shape, init)))
            out.append((name + "_scales", (E, R, C // 32), ("mxfp4_scales", name, shape, init)))
        else:
            out.append((name, shape, init))
    return out


def tensor_specs(config, experts_layout=None):
    """[(name, shape, init)] of the checkpoint a Hugging Face *ForCausalLM of this
    config loads, in a stable order. init is one of ("embed",), ("linear", fan_in),
    ("bias",), ("norm",) — see init_tensor. experts_layout: the mixture-of-experts
    tensor names (moe_specs; None: the config class's own)."""
    f = hf_facts.facts(config)
    q = hf_facts.text_config(config).get("quantization_config")
    layout = experts_layout or f.experts_layout
    mx = isinstance(q, dict) and q.get("quant_method") == "mxfp4" and layout == "gptoss"
    if q and not mx:  # only gpt-oss's MXFP4 experts (blocks and scales tensors)
        raise NotImplementedError("quantization_config %r: the generator writes unquantized "
                                  "weights and gpt-oss's MXFP4 experts only"
                                  % (q.get("quant_method") if isinstance(q, dict) else q))
    if layout is not None and layout not in EXPERTS_LAYOUTS:
        raise ValueError("experts_layout %r: expected one of %s" % (layout, EXPERTS_LAYOUTS))
    H, I, V = f.hidden_size, f.intermediate_size, f.vocab_size
    nh, kv, hd = f.num_attention_heads, f.num_key_value_heads, f.head_dim
    if f.classic == "gpt_neox":
        return _neox_specs(f)
    if f.classic == "phi":
        return _phi_specs(f)
    if f.classic == "gpt2":
        return _gpt2_specs(f)
    if f.classic == "falcon":
        return _falcon_specs(f)
    if f.classic == "bloom":
        return _bloom_specs(f)
    if f.classic == "mpt":
        return _mpt_specs(f)
    if f.classic == "gptj":
        return _gptj_specs(f)
    if f.family.get("names") == "internlm2":
        return _internlm2_specs(f)
    if f.family.get("names") == "exaone":
        return _exaone_specs(f)
    if f.family.get("names") == "qwen":
        return _qwen_specs(f)
    if f.family.get("names") == "chatglm":
        return _chatglm_specs(f)
    specs = [("model.embed_tokens.weight", (V, H), ("embed",))]
    for i in range(f.num_hidden_layers):
        p = "model.layers.%d." % i
        if f.block != "post" and f.norm != "layer_noweight":
            specs.append((p + "input_layernorm.weight", (H,), ("norm",)))
            if f.norm == "layer" and f.family.get("norm_bias", True):
                specs.append((p + "input_layernorm.bias", (H,), ("bias",)))
        if f.fused:
            specs.append((p + "self_attn.qkv_proj.weight", ((nh + 2 * kv) * hd, H), ("linear", H)))
            if f.qkv_bias:
                specs.append((p + "self_attn.qkv_proj.bias", ((nh + 2 * kv) * hd,), ("bias",)))
        else:
            for name, rows in (("q", nh * hd), ("k", kv * hd), ("v", kv * hd)):
                specs.append((p + "self_attn.%s_proj.weight" % name, (rows, H), ("linear", H)))
                if f.qkv_bias:
                    specs.append((p + "self_attn.%s_proj.bias" % name, (rows,), ("bias",)))
        if f.qk_norm == "head":
            specs.append((p + "self_attn.q_norm.weight", (hd,), ("norm",)))
            specs.append((p + "self_attn.k_norm.weight", (hd,), ("norm",)))
        elif f.qk_norm == "full":
            specs.append((p + "self_attn.q_norm.weight", (nh * hd,), ("norm",)))
            specs.append((p + "self_attn.k_norm.weight", (kv * hd,), ("norm",)))
        if f.attn_sinks:
            specs.append((p + "self_attn.sinks", (nh,), ("sink",)))
        specs.append((p + "self_attn.o_proj.weight", (H, nh * hd), ("linear", nh * hd)))
        if f.o_bias:
            specs.append((p + "self_attn.o_proj.bias", (H,), ("bias",)))
        if not f.parallel and f.norm != "layer_noweight":
            specs.append((p + "post_attention_layernorm.weight", (H,), ("norm",)))
            if f.norm == "layer" and f.family.get("norm_bias", True):
                specs.append((p + "post_attention_layernorm.bias", (H,), ("bias",)))
        if f.block == "sandwich":
            specs.append((p + "pre_feedforward_layernorm.weight", (H,), ("norm",)))
        if f.block in ("sandwich", "post"):
            specs.append((p + "post_feedforward_layernorm.weight", (H,), ("norm",)))
        if f.sparse_layers and f.sparse_layers[i]:
            specs.extend(mxfp4_specs(moe_specs(f, p, layout)) if mx else moe_specs(f, p, layout))
            continue
        if not f.gated:  # StarCoder2's c_fc / c_proj
            up, down = f.family["mlp_names"]
            specs.append((p + up + ".weight", (I, H), ("linear", H)))
            if f.mlp_bias:
                specs.append((p + up + ".bias", (I,), ("bias",)))
            specs.append((p + down + ".weight", (H, I), ("linear", I)))
            if f.mlp_bias:
                specs.append((p + down + ".bias", (H,), ("bias",)))
            continue
        if f.fused and f.family.get("fused") != "qkv":  # Phi-3's gate_up_proj
            specs.append((p + "mlp.gate_up_proj.weight", (2 * I, H), ("linear", H)))
        else:
            specs.append((p + "mlp.gate_proj.weight", (I, H), ("linear", H)))
            specs.append((p + "mlp.up_proj.weight", (I, H), ("linear", H)))
            if f.mlp_bias:
                specs.append((p + "mlp.gate_proj.bias", (I,), ("bias",)))
                specs.append((p + "mlp.up_proj.bias", (I,), ("bias",)))
        specs.append((p + "mlp.down_proj.weight", (H, I), ("linear", I)))
        if f.mlp_bias and not f.fused:
            specs.append((p + "mlp.down_proj.bias", (H,), ("bias",)))
        if f.family.get("names") == "baichuan":  # modeling_baichuan's fused q|k|v: W_pack
            specs = [(n.replace(".self_attn.qkv_proj.", ".self_attn.W_pack."), s, i) for n, s, i in specs]
    if f.norm != "layer_noweight":
        specs.append(("model.norm.weight", (H,), ("norm",)))
    if f.norm == "layer" and f.family.get("norm_bias", True):
        specs.append(("model.norm.bias", (H,), ("bias",)))
    if not f.tie_word_embeddings:
        specs.append(("lm_head.weight", (V, H), ("linear", H, "lm_head")))
    return specs


def _neox_specs(f):
    """GPTNeoXForCausalLM's tensors (modeling_gpt_neox): every Linear and LayerNorm with
    a bias; query_key_value rows per head [q_h; k_h; v_h]; embed_out untied."""
    H, I, V = f.hidden_size, f.intermediate_size, f.vocab_size
    Q = f.num_attention_heads * f.head_dim
    specs = [("gpt_neox.embed_in.weight", (V, H), ("embed",))]
    for i in range(f.num_hidden_layers):
        p = "gpt_neox.layers.%d." % i
        for n in ("input_layernorm", "post_attention_layernorm"):
            specs.append((p + n + ".weight", (H,), ("norm",)))
            specs.append((p + n + ".bias", (H,), ("bias",)))
        specs.append((p + "attention.query_key_value.weight", (3 * Q, H), ("linear", H)))
        specs.append((p + "attention.query_key_value.bias", (3 * Q,), ("bias",)))
        specs.append((p + "attention.dense.weight", (H, Q), ("linear", Q)))
        specs.append((p + "attention.dense.bias", (H,), ("bias",)))
        specs.append((p + "mlp.dense_h_to_4h.weight", (I, H), ("linear", H)))
        specs.append((p + "mlp.dense_h_to_4h.bias", (I,), ("bias",)))
        specs.append((p + "mlp.dense_4h_to_h.weight", (H, I), ("linear", I)))
        specs.append((p + "mlp.dense_4h_to_h.bias", (H,), ("bias",)))
    specs.append(("gpt_neox.final_layer_norm.weight", (H,), ("norm",)))
    specs.append(("gpt_neox.final_layer_norm.bias", (H,), ("bias",)))
    if not f.tie_word_embeddings:
        specs.append(("embed_out.weight", (V, H), ("linear", H, "lm_head")))
    return specs


def _gpt2_specs(f):
    """GPT2LMHeadModel's tensors (modeling_gpt2): wte, wpe, per layer ln_1, attn.c_attn
    (Conv1D [H, 3H]), attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj (Conv1D weights stored
    [in, out], each with a bias), ln_f; lm_head tied to wte."""
    H, I, V, P = f.hidden_size, f.intermediate_size, f.vocab_size, f.max_position_embeddings
    specs = [("transformer.wte.weight", (V, H), ("embed",)),
             ("transformer.wpe.weight", (P, H), ("embed",))]
    for i in range(f.num_hidden_layers):
        p = "transformer.h.%d." % i
        for n in ("ln_1", "ln_2"):
            specs.append((p + n + ".weight", (H,), ("norm",)))
            specs.append((p + n + ".bias", (H,), ("bias",)))
        for n, fan_in, fan_out in (("attn.c_attn", H, 3 * H), ("attn.c_proj", H, H),
                                   ("mlp.c_fc", H, I), ("mlp.c_proj", I, H)):
            specs.append((p + n + ".weight", (fan_in, fan_out), ("linear", fan_in)))
            specs.append((p + n + ".bias", (fan_out,), ("bias",)))
    specs.append(("transformer.ln_f.weight", (H,), ("norm",)))
    specs.append(("transformer.ln_f.bias", (H,), ("bias",)))
    return specs


def _falcon_specs(f):
    """FalconForCausalLM's tensors (modeling_falcon): word_embeddings; per layer the
    norms of its block (input_layernorm [+ post_attention_layernorm when sequential], or
    ln_attn + ln_mlp), self_attention.query_key_value ((heads + 2 kv) hd rows in KV
    groups), self_attention.dense, mlp.dense_h_to_4h / dense_4h_to_h, each Linear with a
    bias iff config.bias; ln_f; lm_head unless tied."""
    H, I, V = f.hidden_size, f.intermediate_size, f.vocab_size
    Q = f.num_attention_heads * f.head_dim
    QKV = (f.num_attention_heads + 2 * f.num_key_value_heads) * f.head_dim
    specs = [("transformer.word_embeddings.weight", (V, H), ("embed",))]
    if f.parallel:
        norms = ("ln_attn", "ln_mlp") if f.parallel_norms == 2 else ("input_layernorm",)
    else:
        norms = ("input_layernorm", "post_attention_layernorm")
    for i in range(f.num_hidden_layers):
        p = "transformer.h.%d." % i
        for n in norms:
            specs.append((p + n + ".weight", (H,), ("norm",)))
            specs.append((p + n + ".bias", (H,), ("bias",)))
        for n, rows, fan_in in (("self_attention.query_key_value", QKV, H), ("self_attention.dense", H, Q),
                                ("mlp.dense_h_to_4h", I, H), ("mlp.dense_4h_to_h", H, I)):
            specs.append((p + n + ".weight", (rows, fan_in), ("linear", fan_in)))
            if f.qkv_bias:
                specs.append((p + n + ".bias", (rows,), ("bias",)))
    specs.append(("transformer.ln_f.weight", (H,), ("norm",)))
    specs.append(("transformer.ln_f.bias", (H,), ("bias",)))
    if not f.tie_word_embeddings:
        specs.append(("lm_head.weight", (V, H), ("linear", H, "lm_head")))
    return specs


def _bloom_specs(f):
    """BloomForCausalLM's tensors (modeling_bloom): word_embeddings and its LayerNorm; per
    layer input_layernorm, self_attention.query_key_value (3 H rows, per head [q; k; v]),
    self_attention.dense, post_attention_layernorm, mlp.dense_h_to_4h / dense_4h_to_h,
    every Linear and LayerNorm with a bias; ln_f; lm_head tied."""
    H, I, V = f.hidden_size, f.intermediate_size, f.vocab_size
    Q = f.num_attention_heads * f.head_dim
    specs = [("transformer.word_embeddings.weight", (V, H), ("embed",)),
             ("transformer.word_embeddings_layernorm.weight", (H,), ("norm",)),
             ("transformer.word_embeddings_layernorm.bias", (H,), ("bias",))]
    for i in range(f.num_hidden_layers):
        p = "transformer.h.%d." % i
        for n in ("input_layernorm", "post_attention_layernorm"):
            specs.append((p + n + ".weight", (H,), ("norm",)))
            specs.append((p + n + ".bias", (H,), ("bias",)))
        for n, rows, fan_in in (("self_attention.query_key_value", 3 * Q, H), ("self_attention.dense", H, Q),
                                ("mlp.dense_h_to_4h", I, H), ("mlp.dense_4h_to_h", H, I)):
            specs.append((p + n + ".weight", (rows, fan_in), ("linear", fan_in)))
            specs.append((p + n + ".bias", (rows,), ("bias",)))
    specs.append(("transformer.ln_f.weight", (H,), ("norm",)))
    specs.append(("transformer.ln_f.bias", (H,), ("bias",)))
    if not f.tie_word_embeddings:
        specs.append(("lm_head.weight", (V, H), ("linear", H, "lm_head")))
    return specs


def _mpt_specs(f):
    """MptForCausalLM's tensors (modeling_mpt): wte; per block norm_1, attn.Wqkv (3 H
    rows: q, k, v), attn.out_proj, norm_2, ffn.up_proj / down_proj, no biases anywhere
    (the LayerNorms' too); norm_f; lm_head tied."""
    H, I, V = f.hidden_size, f.intermediate_size, f.vocab_size
    specs = [("transformer.wte.weight", (V, H), ("embed",))]
    for i in range(f.num_hidden_layers):
        p = "transformer.blocks.%d." % i
        specs += [(p + "norm_1.weight", (H,), ("norm",)),
                  (p + "attn.Wqkv.weight", (3 * H, H), ("linear", H)),
                  (p + "attn.out_proj.weight", (H, H), ("linear", H)),
                  (p + "norm_2.weight", (H,), ("norm",)),
                  (p + "ffn.up_proj.weight", (I, H), ("linear", H)),
                  (p + "ffn.down_proj.weight", (H, I), ("linear", I))]
    specs.append(("transformer.norm_f.weight", (H,), ("norm",)))
    if not f.tie_word_embeddings:
        specs.append(("lm_head.weight", (V, H), ("linear", H, "lm_head")))
    return specs


def _gptj_specs(f):
    """GPTJForCausalLM's tensors (modeling_gptj): wte; per layer ln_1 (weight, bias),
    attn.q/k/v_proj and out_proj (no biases), mlp.fc_in / fc_out (with biases); ln_f;
    lm_head with a bias (untied)."""
    H, I, V = f.hidden_size, f.intermediate_size, f.vocab_size
    Q = f.num_attention_heads * f.head_dim
    specs = [("transformer.wte.weight", (V, H), ("embed",))]
    for i in range(f.num_hidden_layers):
        p = "transformer.h.%d." % i
        specs += [(p + "ln_1.weight", (H,), ("norm",)), (p + "ln_1.bias", (H,), ("bias",))]
        for n in ("q_proj", "k_proj", "v_proj"):
            specs.append((p + "attn.%s.weight" % n, (Q, H), ("linear", H)))
        specs += [(p + "attn.out_proj.weight", (H, Q), ("linear", Q)),
                  (p + "mlp.fc_in.weight", (I, H), ("linear", H)), (p + "mlp.fc_in.bias", (I,), ("bias",)),
                  (p + "mlp.fc_out.weight", (H, I), ("linear", I)), (p + "mlp.fc_out.bias", (H,), ("bias",))]
    specs += [("transformer.ln_f.weight", (H,), ("norm",)), ("transformer.ln_f.bias", (H,), ("bias",))]
    if not f.tie_word_embeddings:
        specs += [("lm_head.weight", (V, H), ("linear", H, "lm_head")), ("lm_head.bias", (V,), ("bias",))]
    return specs


def _internlm2_specs(f):
    """InternLM2ForCausalLM's tensors (modeling_internlm2): model.tok_embeddings; per layer
    attention_norm, attention.wqkv ((heads + 2 kv) hd rows in KV groups) and attention.wo
    (biases iff config.bias), ffn_norm, feed_forward.w1 / w3 / w2; model.norm; output."""
    H, I, V = f.hidden_size, f.intermediate_size, f.vocab_size
    Q = f.num_attention_heads * f.head_dim
    QKV = (f.num_attention_heads + 2 * f.num_key_value_heads) * f.head_dim
    specs = [("model.tok_embeddings.weight", (V, H), ("embed",))]
    for i in range(f.num_hidden_layers):
        p = "model.layers.%d." % i
        specs.append((p + "attention_norm.weight", (H,), ("norm",)))
        specs.append((p + "attention.wqkv.weight", (QKV, H), ("linear", H)))
        if f.qkv_bias:
            specs.append((p + "attention.wqkv.bias", (QKV,), ("bias",)))
        specs.append((p + "attention.wo.weight", (H, Q), ("linear", Q)))
        if f.o_bias:
            specs.append((p + "attention.wo.bias", (H,), ("bias",)))
        specs += [(p + "ffn_norm.weight", (H,), ("norm",)),
                  (p + "feed_forward.w1.weight", (I, H), ("linear", H)),
                  (p + "feed_forward.w3.weight", (I, H), ("linear", H)),
                  (p + "feed_forward.w2.weight", (H, I), ("linear", I))]
    specs.append(("model.norm.weight", (H,), ("norm",)))
    if not f.tie_word_embeddings:
        specs.append(("output.weight", (V, H), ("linear", H, "lm_head")))
    return specs


def _qwen_specs(f):
    """QWenLMHeadModel's tensors (modeling_qwen): transformer.wte; per layer ln_1,
    attn.c_attn (q | k | v rows, with a bias), attn.c_proj, ln_2, mlp.w1 (up) / w2 (gate)
    / c_proj (down); transformer.ln_f; lm_head."""
    H, I, V = f.hidden_size, f.intermediate_size, f.vocab_size
    Q = f.num_attention_heads * f.head_dim
    specs = [("transformer.wte.weight", (V, H), ("embed",))]
    for i in range(f.num_hidden_layers):
        p = "transformer.h.%d." % i
        specs += [(p + "ln_1.weight", (H,), ("norm",)),
                  (p + "attn.c_attn.weight", (3 * Q, H), ("linear", H)),
                  (p + "attn.c_attn.bias", (3 * Q,), ("bias",)),
                  (p + "attn.c_proj.weight", (H, Q), ("linear", Q)),
                  (p + "ln_2.weight", (H,), ("norm",)),
                  (p + "mlp.w1.weight", (I, H), ("linear", H)),
                  (p + "mlp.w2.weight", (I, H), ("linear", H)),
                  (p + "mlp.c_proj.weight", (H, I), ("linear", I))]
    specs.append(("transformer.ln_f.weight", (H,), ("norm",)))
    specs.append(("lm_head.weight", (V, H), ("linear", H, "lm_head")))
    return specs


def _chatglm_specs(f):
    """ChatGLMForConditionalGeneration's tensors (modeling_chatglm): transformer.embedding.
    word_embeddings; per layer input_layernorm, self_attention.query_key_value ((heads + 2
    kv) hd rows, a bias iff add_qkv_bias), self_attention.dense, post_attention_layernorm,
    mlp.dense_h_to_4h (gate then up rows) / dense_4h_to_h (these three with biases iff
    add_bias_linear), the norms' biases iff LayerNorm (rmsnorm false);
    encoder.final_layernorm; output_layer; and the buffer RotaryEmbedding saves,
    rotary_pos_emb.inv_freq (kv_channels / 4 values, base 10000), which no forward reads."""
    H, I, V, hd = f.hidden_size, f.intermediate_size, f.vocab_size, f.head_dim
    Q = f.num_attention_heads * hd
    QKV = (f.num_attention_heads + 2 * f.num_key_value_heads) * hd
    ln = f.norm == "layer"
    specs = [("transformer.embedding.word_embeddings.weight", (V, H), ("embed",)),
             ("transformer.rotary_pos_emb.inv_freq", (hd // 4,), ("inv_freq",))]
    for i in range(f.num_hidden_layers):
        p = "transformer.encoder.layers.%d." % i
        for norm, lin in (("input_layernorm", (("self_attention.query_key_value", QKV, H, f.qkv_bias),
                                               ("self_attention.dense", H, Q, f.o_bias))),
                          ("post_attention_layernorm", (("mlp.dense_h_to_4h", 2 * I, H, f.mlp_bias),
                                                        ("mlp.dense_4h_to_h", H, I, f.mlp_bias)))):
            specs.append((p + norm + ".weight", (H,), ("norm",)))
            if ln:
                specs.append((p + norm + ".bias", (H,), ("bias",)))
            for name, rows, fan_in, bias in lin:
                specs.append((p + name + ".weight", (rows, fan_in), ("linear", fan_in)))
                if bias:
                    specs.append((p + name + ".bias", (rows,), ("bias",)))
    specs.append(("transformer.encoder.final_layernorm.weight", (H,), ("norm",)))
    if ln:
        specs.append(("transformer.encoder.final_layernorm.bias", (H,), ("bias",)))
    specs.append(("transformer.output_layer.weight", (V, H), ("linear", H, "lm_head")))
    return specs


def _exaone_specs(f):
    """ExaoneForCausalLM's tensors (modeling_exaone): transformer.wte; per layer ln_1,
    attn.attention.q/k/v/out_proj, ln_2, mlp.c_fc_0 (gate) / c_fc_1 (up) / c_proj (down),
    no biases; transformer.ln_f; lm_head unless tied."""
    H, I, V = f.hidden_size, f.intermediate_size, f.vocab_size
    Q, KV = f.num_attention_heads * f.head_dim, f.num_key_value_heads * f.head_dim
    specs = [("transformer.wte.weight", (V, H), ("embed",))]
    for i in range(f.num_hidden_layers):
        p = "transformer.h.%d." % i
        specs += [(p + "ln_1.weight", (H,), ("norm",)),
                  (p + "attn.attention.q_proj.weight", (Q, H), ("linear", H)),
                  (p + "attn.attention.k_proj.weight", (KV, H), ("linear", H)),
                  (p + "attn.attention.v_proj.weight", (KV, H), ("linear", H)),
                  (p + "attn.attention.out_proj.weight", (H, Q), ("linear", Q)),
                  (p + "ln_2.weight", (H,), ("norm",)),
                  (p + "mlp.c_fc_0.weight", (I, H), ("linear", H)),
                  (p + "mlp.c_fc_1.weight", (I, H), ("linear", H)),
                  (p + "mlp.c_proj.weight", (H, I), ("linear", I))]
    specs.append(("transformer.ln_f.weight", (H,), ("norm",)))
    if not f.tie_word_embeddings:
        specs.append(("lm_head.weight", (V, H), ("linear", H, "lm_head")))
    return specs


def _phi_specs(f):
    """PhiForCausalLM's tensors (modeling_phi): LayerNorms with biases, q/k/v_proj and
    dense with biases, fc1/fc2 with biases, final_layernorm, lm_head with a bias."""
    H, I, V = f.hidden_size, f.intermediate_size, f.vocab_size
    Q = f.num_attention_heads * f.head_dim
    KV = f.num_key_value_heads * f.head_dim
    specs = [("model.embed_tokens.weight", (V, H), ("embed",))]
    for i in range(f.num_hidden_layers):
        p = "model.layers.%d." % i
        specs.append((p + "input_layernorm.weight", (H,), ("norm",)))
        specs.append((p + "input_layernorm.bias", (H,), ("bias",)))
        for n, rows in (("q_proj", Q), ("k_proj", KV), ("v_proj", KV)):
            specs.append((p + "self_attn.%s.weight" % n, (rows, H), ("linear", H)))
            specs.append((p + "self_attn.%s.bias" % n, (rows,), ("bias",)))
        specs.append((p + "self_attn.dense.weight", (H, Q), ("linear", Q)))
        specs.append((p + "self_attn.dense.bias", (H,), ("bias",)))
        specs.append((p + "mlp.fc1.weight", (I, H), ("linear", H)))
        specs.append((p + "mlp.fc1.bias", (I,), ("bias",)))
        specs.append((p + "mlp.fc2.weight", (H, I), ("linear", I)))
        specs.append((p + "mlp.fc2.bias", (H,), ("bias",)))
    specs.append(("model.final_layernorm.weight", (H,), ("norm",)))
    specs.append(("model.final_layernorm.bias", (H,), ("bias",)))
    if not f.tie_word_embeddings:
        specs.append(("lm_head.weight", (V, H), ("linear", H, "lm_head")))
        specs.append(("lm_head.bias", (V,), ("bias",)))
    return specs


def init_scales(facts, logit_std=2.0, gain=2.0):
    """Per-role standard deviations that keep a random model of these facts lively:
    logits with std ~ logit_std, a residual stream dominated by the blocks (not by the
    current token's embedding, which makes tied models repeat their input), and
    attention about as sharp whatever the configured softmax scale. For the Llama/Qwen
    facts (no embedding multiplier, no logits scaling, residual multiplier 1) every
    factor below is 1 and the stds are the plain ones of init_tensor.

    Returns {"embed", "lm_head": std; "out_gain": factor on o_proj/down_proj (pre-norm
    blocks); "post_norm": centre of post-block norm scales (sandwich/post blocks);
    "qk_gain": factor on q/k projections}."""
    H = facts.hidden_size
    ls = facts.logits_scaling
    m = facts.embed_multiplier or 1.0
    lm_head = logit_std * ls / math.sqrt(H)
    embed = lm_head if facts.tie_word_embeddings else logit_std / (math.sqrt(H) * m)
    emb_in = m * embed  # per-entry std of the embedding's share of the residual stream
    target = max(3.0, 4.0 * emb_in)  # per-entry std wanted from each block's output
    # q.k grows like gain^2 with the q/k stds (or like the product of the q/k norm
    # scales); undo a softmax scale below 1/sqrt(head_dim), half on q and half on k.
    qk = min(16.0, max(1.0, math.sqrt(facts.head_dim ** -0.5 / facts.attn_scale)))
    return {"embed": embed, "lm_head": lm_head, "out_gain": (target / 3.0) / facts.residual_multiplier,
            "post_norm": max(2.0, 8.0 * emb_in), "qk_gain": qk}


def init_tensor(name, shape, init, seed, facts, logit_std=2.0, bias_std=0.1, norm_noise=0.1,
                gain=2.0):
    """Seeded float32 values of one tensor (a pure function of seed, name, shape, init
    and the facts).

    linear: N(0, gain^2/fan_in) so each projection keeps activations O(1) (std 0.03-0.06
    at the usual widths); gain 2 (measured on the issue-2 configs) makes attention sharp
    enough that greedy continuations of random models rarely collapse into a repeated
    token, so 32 greedy steps exercise varied contexts. lm_head: N(0, logit_std^2 /
    hidden) so logits of the normalized final state spread with std ~ logit_std (top-2
    margins mostly >> 1e-3); embed: the same std when tied. bias: N(0, bias_std^2);
    norm weights 1 + N(0, norm_noise^2) (for Gemma's (1 + w) norms w = N(0, ...)).
    Families with embedding multipliers, logits scaling, residual multipliers or
    post-block norms get the compensating factors of init_scales."""
    if init[0] == "inv_freq":  # RotaryEmbedding(dim).inv_freq, dim = 2 x its length
        dim = 2 * shape[0]
        return (1.0 / 10000.0 ** (np.arange(0, dim, 2, dtype=np.float64) / dim)).astype(np.float32)
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(name.encode()) & 0xFFFFFFFF])
    x = rng.standard_normal(size=shape, dtype=np.float32)
    sc = init_scales(facts, logit_std, gain)
    kind = init[0]
    if kind == "embed":
        x *= np.float32(sc["embed"])
    elif kind == "linear":
        if len(init) > 2 and init[2] == "lm_head":
            std = sc["lm_head"]
        else:
            std = gain / math.sqrt(init[1])
            if facts.block == "pre" and name.endswith(("o_proj.weight", "down_proj.weight", "w2.weight",
                                                       "experts.down_proj", "output_linear.weight",
                                                       "attention.dense.weight", "self_attn.dense.weight",
                                                       "mlp.fc2.weight", "mlp.c_proj.weight",
                                                       "attn.c_proj.weight", "self_attention.dense.weight",
                                                       "mlp.dense_4h_to_h.weight")) or (
                    facts.classic in ("mpt", "gptj") and name.endswith((".attn.out_proj.weight",
                                                                        "mlp.fc_out.weight"))) or (
                    facts.family.get("names") == "internlm2" and name.endswith(("attention.wo.weight",
                                                                              "feed_forward.w2.weight"))) or (
                    facts.family.get("names") == "exaone" and name.endswith(".attention.out_proj.weight")) or (
                    facts.family.get("names") == "qwen" and name.endswith("attn.c_proj.weight")):
                std *= sc["out_gain"]
            if facts.qk_norm is None and (name.endswith("q_proj.weight") or name.endswith("k_proj.weight")):
                std *= sc["qk_gain"]
        x *= np.float32(std)
    elif kind == "bias":
        x *= np.float32(bias_std)
    elif kind == "sink":  # attention sinks: a logit per head, about as large as the scores
        x *= np.float32(1.0)
    elif kind == "norm":
        x *= np.float32(norm_noise)
        centre = 1.0
        if facts.block != "pre" and ("post_attention_layernorm" in name or "post_feedforward_layernorm" in name):
            centre = sc["post_norm"]
        if name.endswith("q_norm.weight") or name.endswith("k_norm.weight"):
            centre = 1.5 * sc["qk_gain"]  # 1.5: measured, as gain 2 for plain q/k
        x += np.float32(centre - facts.norm_offset)
    else:
        raise ValueError(init)
    return x


# ---------------------------------------------------------------------------- writing

def _split_shards(specs, shards, elem):
    """Contiguous groups of specs of about equal bytes; exactly min(shards, len(specs))
    groups, none empty."""
    sizes = [int(np.prod(s)) * elem for _, s, _ in specs]
    total = sum(sizes)
    shards = max(1, min(int(shards), len(specs)))
    groups, acc = [[]], 0
    for k, (spec, sz) in enumerate(zip(specs, sizes)):
        if groups[-1] and len(groups) < shards and (
                acc >= total * len(groups) / shards or len(specs) - k <= shards - len(groups)):
            groups.append([])
        groups[-1].append(spec)
        acc += sz
    return groups


def _set_dtype_keys(config, torch_name):
    for c in (config, config.get("text_config") if isinstance(config.get("text_config"), dict) else None):
        if not c:
            continue
        for k in ("torch_dtype", "dtype"):
            if k in c:
                c[k] = torch_name


def write_checkpoint(config, out_dir, dtype="f32", shards=1, seed=0, generation_config=None,
                     logit_std=2.0, bias_std=0.1, norm_noise=0.1, gain=2.0, overwrite=True,
                     experts_layout=None):
    """Write config.json, generation_config.json and the safetensors of config to out_dir
    (created). dtype: "f32" | "bf16" | "f16"; shards: 1 -> model.safetensors, N > 1 ->
    model-0000i-of-0000N.safetensors + model.safetensors.index.json. config may be a
    dict or a path (its generation_config.json is used when generation_config is None;
    else one with bos/eos from the config is written). torch_dtype/dtype keys present in
    the config are set to the storage dtype. logit_std, bias_std, norm_noise, gain: see
    init_tensor. experts_layout: the mixture-of-experts tensor names (moe_specs; None:
    the config class's own). Returns out_dir."""
    if dtype not in DTYPES:
        raise ValueError("dtype %r: expected one of %s" % (dtype, sorted(DTYPES)))
    st_dtype, torch_name = DTYPES[dtype]
    if generation_config is None:
        generation_config = load_generation_config(config) if not isinstance(config, dict) else None
    config = load_config(config)
    if isinstance(config.get("text_config"), dict):
        raise ValueError("config is a multimodal wrapper (text_config); write "
                         "gen_checkpoint.text_only_config(config) instead")
    _set_dtype_keys(config, torch_name)
    facts = hf_facts.facts(config)
    specs = tensor_specs(config, experts_layout)

    os.makedirs(out_dir, exist_ok=True)
    if overwrite:
        for fn in os.listdir(out_dir):
            if fn.endswith(".safetensors") or fn == "model.safetensors.index.json":
                os.remove(os.path.join(out_dir, fn))
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    if generation_config is None:
        tc = hf_facts.text_config(config)
        generation_config = {"_from_model_config": True}
        for k in ("bos_token_id", "eos_token_id", "pad_token_id"):
            v = config.get(k, tc.get(k))
            if v is not None:
                generation_config[k] = v
    with open(os.path.join(out_dir, "generation_config.json"), "w") as f:
        json.dump(generation_config, f, indent=2)
        f.write("\n")

    by_name = {name: (shape, init) for name, shape, init in specs}

    def make(name):
        shape, init = by_name[name]
        if init[0] in ("mxfp4_blocks", "mxfp4_scales"):  # mxfp4_specs
            _, base, bshape, binit = init
            w = init_tensor(base, bshape, binit, seed, facts, logit_std, bias_std, norm_noise, gain)
            blocks, scales = mxfp4.quantize_hf(np.swapaxes(w, 1, 2))
            return blocks if init[0] == "mxfp4_blocks" else scales
        return init_tensor(name, shape, init, seed, facts, logit_std, bias_std, norm_noise, gain)

    def dt(init):
        return "U8" if init[0] in ("mxfp4_blocks", "mxfp4_scales") else st_dtype

    elem = safetensors_io.DTYPE_SIZE[st_dtype]
    groups = _split_shards(specs, shards, elem)
    if len(groups) == 1:
        safetensors_io.write_file(os.path.join(out_dir, "model.safetensors"),
                                  [(n, dt(i), s) for n, s, i in groups[0]], make)
        return out_dir
    weight_map, total = {}, 0
    for k, g in enumerate(groups):
        fn = "model-%05d-of-%05d.safetensors" % (k + 1, len(groups))
        total += safetensors_io.write_file(os.path.join(out_dir, fn),
                                           [(n, dt(i), s) for n, s, i in g], make)
        for n, _, _ in g:
            weight_map[n] = fn
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))},
                  f, indent=2)
        f.write("\n")
    return out_dir


def make_checkpoint(source, out_dir, dtype="f32", shards=1, seed=0, shrink=None,
                    overrides=None, **write_kw):
    """load (path or dict) + optional shrink_config(**shrink) + write_checkpoint.
    shrink: None (full size) or a dict of shrink_config keyword arguments ({} = defaults);
    overrides: config keys set last (in text_config for wrappers). The source folder's
    generation_config.json is carried over (ids remapped when shrunk). A multimodal
    wrapper config is reduced to its text decoder first (text_only_config)."""
    cfg = text_only_config(source)
    gen = load_generation_config(source)
    if shrink is not None:
        if gen is not None:
            cfg, gen = shrink_config(cfg, generation_config=gen, **shrink)
        else:
            cfg = shrink_config(cfg, **shrink)
    if overrides:
        target = cfg["text_config"] if isinstance(cfg.get("text_config"), dict) else cfg
        target.update(overrides)
    return write_checkpoint(cfg, out_dir, dtype=dtype, shards=shards, seed=seed,
                            generation_config=gen, **write_kw)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", help="config.json or a folder holding one")
    ap.add_argument("out", help="output checkpoint folder")
    ap.add_argument("--dtype", default="f32", choices=sorted(DTYPES))
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shrink", action="store_true", help="shrink with the defaults below")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--kv-heads", type=int)
    ap.add_argument("--head-dim", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--intermediate", type=int)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                    help="set a config key last (value parsed as JSON)")
    a = ap.parse_args(argv)
    shrink = None
    opts = {"num_hidden_layers": a.layers, "num_attention_heads": a.heads,
            "num_key_value_heads": a.kv_heads, "head_dim": a.head_dim, "hidden_size": a.hidden,
            "intermediate_size": a.intermediate, "vocab_size": a.vocab}
    opts = {k: v for k, v in opts.items() if v is not None}
    overrides = {}
    for kv in a.set:
        k, _, v = kv.partition("=")
        overrides[k] = json.loads(v)
    if a.shrink or opts:
        shrink = opts
    make_checkpoint(a.config, a.out, dtype=a.dtype, shards=a.shards, seed=a.seed, shrink=shrink,
                    overrides=overrides)
    print(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
