#!/usr/bin/python3
"""Float64 NumPy reference forward pass of Hugging Face decoder checkpoints.

Written from the semantics of transformers' modeling code (modeling_llama, mistral,
qwen2, qwen3, gemma, gemma2, gemma3, phi3, olmo2, granite, smollm3 and
modeling_rope_utils), independently of facet's C code. Every computation is float64;
weights stored as F32/BF16/F16 are widened exactly. The checkpoint's facts are read by
tests/ref/hf_facts.py; which biases exist is read from the tensors themselves.

Library use (tests/e2e put tests/ref on sys.path; see tests/e2e/conftest.py):

    import reference
    ref = reference.Reference("path/to/checkpoint")
    logits = ref.logits([1, 2, 3])                # [3, vocab] float64, one row per position
    out = ref.generate([1, 2, 3], 32)            # greedy, no stop token
    out["generated_ids"], out["margins"], out["logits"]
    # margins[i] = top1 - top2 of the logits that chose generated_ids[i];
    # logits rows as facet's --dump-logits: n_prompt + n - 1 rows, row i = logits after
    # feeding token i of prompt_ids + generated_ids[:-1]

Semantics pinned here (each with its transformers source):
- RMSNorm: x * rsqrt(mean(x^2) + eps) * w (LlamaRMSNorm); Gemma: * (1 + w) (GemmaRMSNorm).
- RoPE: rotate_half layout, inv_freq = 1 / theta^(arange(0, d, 2) / d) with d = rotary
  dims (head_dim * partial_rotary_factor, the rest passes through as in Phi-3);
  rope_scaling linear / dynamic / llama3 / yarn / longrope as modeling_rope_utils'
  _compute_*_parameters, cos and sin multiplied by the attention factor (yarn, longrope).
  dynamic picks its frequencies per forward call from the largest position seen so far
  (transformers' dynamic_rope_update with a KV cache; earlier keys keep their rotation);
  longrope uses the short factors while the sequence is within
  original_max_position_embeddings and, at the step that crosses it, recomputes the
  whole sequence with the long factors (Phi3ForCausalLM drops its cache there).
- Attention: GQA by repeat_kv (query head h reads kv head h // (heads / kv_heads)),
  scores * scale (1/sqrt(head_dim), Gemma 2/3 query_pre_attn_scalar^-0.5, Granite
  attention_multiplier), optional tanh softcap (Gemma 2), causal mask, sliding window
  admitting key j for query i iff i - window < j <= i (masking_utils'
  sliding_window_overlay), softmax in float64.
- q/k norm: per head over head_dim before RoPE (Qwen3, Gemma 3), or over the whole
  projection (OLMo 2).
- Blocks: pre-norm (Llama family), sandwich (Gemma 2/3: post-attention and pre/post-FFN
  norms), post-norm (OLMo 2); Granite residual_multiplier.
- FFN: down(act(gate(x)) * up(x)); Phi-3 gate_up_proj split as chunk(2): gate first.
- Embeddings: Gemma multiplies by sqrt(hidden_size) rounded to the compute dtype
  (embed_scale_dtype, default float32, the engine's compute dtype); Granite by
  embedding_multiplier.
- Logits: lm_head (or the tied embedding), / logits_scaling (Granite), tanh final
  softcap (Gemma 2).
- Mixture of experts (mixtral, qwen2_moe, qwen3_moe, olmoe, granitemoe,
  granitemoeshared): router logits = x W_gate^T; the k experts are the k largest logits
  (a stable descending sort: equal logits go to the lower expert index); weights
  softmax over all experts, then renormalized over the k (Mixtral; Qwen/OLMoE when
  norm_topk_prob) or not (Qwen/OLMoE default) -- GraniteMoeTopKGating's softmax over the
  k logits is the renormalized form; output = sum_j w_j expert_j(x) (expert_j a gated
  FFN, down(act(gate x) * up x)), + sigmoid(x . shared_expert_gate) * shared(x)
  (Qwen2-MoE) or + shared_mlp(x) (Granite-MoE-shared). Layers outside decoder_sparse_step
  / in mlp_only_layers are dense (Qwen-MoE). Expert tensors are read in any layout the
  generator writes (per expert, or 3-D [E, 2 I, H] with gate rows first).
- ChatGLM2/3 and GLM-4 (model_type chatglm; remote modeling_chatglm.py of THUDM/chatglm3-6b
  at 456aa87 and of glm-4-9b, which adds base = 10000 * rope_ratio): Llama's pre-norm block
  under transformer.embedding / encoder.layers.N / encoder.final_layernorm / output_layer
  names, query_key_value [q; k; v] rows (multi_query_attention) or per head, the MLP's
  dense_h_to_4h chunked gate then up, RoPE on pairs (2i, 2i+1) of the first half of each
  head (apply_rotary_pos_emb), RMSNorm or LayerNorm by rmsnorm.
- gpt-oss: attention sinks (a learned logit per head in the softmax's denominator,
  modeling_gpt_oss's eager_attention_forward), the router's bias, experts as
  x @ W_gu + b_gu with gate/up columns interleaved, g = min(gate, limit),
  u = clamp(up, -limit, limit), ((u + 1) * g * sigmoid(1.702 g)) @ W_d + b_d.

CLI:
    tests/ref/reference.py MODEL --prompt-ids 1,2,3 [-n 32] [--dump-logits FILE]
prints {"prompt_ids", "generated_ids", "margins"} as JSON; --dump-logits writes float32
rows exactly like facet run --dump-logits.
"""

import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_facts  # noqa: E402
import mxfp4  # noqa: E402
import safetensors_io  # noqa: E402


# ---------------------------------------------------------------------------- math

def rms_norm(x, w, eps, offset=0.0):
    """LlamaRMSNorm / GemmaRMSNorm over the last axis, float64."""
    x = np.asarray(x, dtype=np.float64)
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y * (offset + w)


def layer_norm(x, w, b, eps):
    """torch.nn.LayerNorm over the last axis (biased variance), float64."""
    x = np.asarray(x, dtype=np.float64)
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps) * w
    return y if b is None else y + b


_erf = np.vectorize(math.erf, otypes=[np.float64])


def activation(name, x):
    """transformers ACT2FN semantics, float64."""
    if name in ("silu", "swish"):
        return x / (1.0 + np.exp(-x))
    if name == "gelu":
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if name in ("gelu_pytorch_tanh", "gelu_new", "gelu_fast"):
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "bloom_gelu":  # modeling_bloom.bloom_gelu_forward, its own constant
        return x * 0.5 * (1.0 + np.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))
    raise NotImplementedError("activation %r" % name)


def bloom_alibi_slopes(num_heads):
    """modeling_bloom.build_alibi_tensor's slopes: base 2^(-8 / c) to the powers 1..c for
    c the closest power of two <= num_heads, then the extra heads' slopes, odd powers of
    2^(-4 / c), float64."""
    c = 2 ** math.floor(math.log2(num_heads))
    base = 2.0 ** (-(2.0 ** -(math.log2(c) - 3)))
    slopes = [base ** p for p in range(1, c + 1)]
    if c != num_heads:
        extra = 2.0 ** (-(2.0 ** -(math.log2(2 * c) - 3)))
        n = min(c, num_heads - c)
        slopes += [extra ** p for p in range(1, 2 * n, 2)]
    return np.asarray(slopes, dtype=np.float64)


def mpt_alibi_slopes(num_heads, alibi_bias_max=8.0):
    """modeling_mpt's slopes: 1 / 2^(k * max / p) for k = 1..p, p the power of two >=
    num_heads; when p != num_heads the odd-indexed ones, then the even-indexed, cut to
    num_heads; float64."""
    p = 2 ** math.ceil(math.log2(num_heads))
    s = 1.0 / 2.0 ** (np.arange(1, p + 1, dtype=np.float64) * (alibi_bias_max / p))
    if p != num_heads:
        s = np.concatenate([s[1::2], s[::2]])[:num_heads]
    return s


def baichuan_alibi_slopes(num_heads):
    """Baichuan-13B / Baichuan2-13B modeling_baichuan._get_interleave(n): for n a power
    of two, start = 2^(-2^-(log2 n - 3)) and the slopes start * start^i, i < n; otherwise
    the closest lower power of two c's slopes, then every other slope of
    _get_interleave(2c), cut to n - c; float64."""
    def pow2(n):
        start = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if math.log2(num_heads).is_integer():
        return np.asarray(pow2(num_heads), dtype=np.float64)
    c = 2 ** math.floor(math.log2(num_heads))
    return np.asarray(pow2(c) + list(baichuan_alibi_slopes(2 * c))[0::2][: num_heads - c],
                      dtype=np.float64)


def softcap(x, cap):
    return x if cap is None else np.tanh(x / cap) * cap


def _yarn_get_mscale(scale, mscale=1.0):
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def rope_inv_freq(spec, seq_len=None):
    """(inv_freq [rotary_dim // 2] float64, attention_factor) of a hf_facts.RopeSpec, as
    transformers' modeling_rope_utils computes them; seq_len is the dynamic/longrope
    sequence length (largest position + 1 of the forward call)."""
    d = spec.rotary_dim
    base = spec.theta
    s = spec.scaling
    t = spec.rope_type
    expo = np.arange(0, d, 2, dtype=np.float64) / d
    if t == "default":
        return 1.0 / base ** expo, 1.0
    if t == "linear":
        return 1.0 / base ** expo / float(s["factor"]), 1.0
    if t == "dynamic":
        factor = float(s["factor"])
        mpe = spec.max_position_embeddings
        sl = seq_len if seq_len is not None and seq_len > mpe else mpe
        base = base * ((factor * sl / mpe) - (factor - 1)) ** (d / (d - 2))
        return 1.0 / base ** expo, 1.0
    if t == "llama3":
        inv = 1.0 / base ** expo
        factor = float(s["factor"])
        low = float(s["low_freq_factor"])
        high = float(s["high_freq_factor"])
        old = float(s["original_max_position_embeddings"])
        low_wl = old / low
        high_wl = old / high
        wavelen = 2 * math.pi / inv
        inv_l = np.where(wavelen > low_wl, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
        medium = ~(wavelen < high_wl) & ~(wavelen > low_wl)
        return np.where(medium, smoothed, inv_l), 1.0
    if t == "yarn":
        factor = float(s["factor"])
        attention_factor = s.get("attention_factor")
        mscale = s.get("mscale")
        mscale_all_dim = s.get("mscale_all_dim")
        # Current transformers: the correction range uses rope_scaling's
        # original_max_position_embeddings (else max_position_embeddings); factor is
        # rope_scaling's own (some 4.4x releases recomputed it as max / original, equal
        # for every released yarn config).
        omax = float(s.get("original_max_position_embeddings") or spec.max_position_embeddings)
        if attention_factor is None:
            if mscale and mscale_all_dim:
                attention_factor = _yarn_get_mscale(factor, mscale) / _yarn_get_mscale(factor, mscale_all_dim)
            else:
                attention_factor = _yarn_get_mscale(factor)
        beta_fast = s.get("beta_fast") or 32
        beta_slow = s.get("beta_slow") or 1

        def corr_dim(rot):
            return (d * math.log(omax / (rot * 2 * math.pi))) / (2 * math.log(base))

        lo, hi = corr_dim(beta_fast), corr_dim(beta_slow)
        if s.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, d - 1)
        if lo == hi:
            hi += 0.001
        ramp = np.clip((np.arange(d // 2, dtype=np.float64) - lo) / (hi - lo), 0, 1)
        extra_factor = 1 - ramp
        pos_freqs = base ** expo
        inv_extra = 1.0 / pos_freqs
        inv_inter = 1.0 / (factor * pos_freqs)
        return inv_inter * (1 - extra_factor) + inv_extra * extra_factor, float(attention_factor)
    if t == "longrope":
        attention_factor = s.get("attention_factor")
        factor = s.get("factor")
        if spec.original_max_position_embeddings is not None:
            omax = spec.original_max_position_embeddings
            factor = spec.max_position_embeddings / omax
        else:
            omax = spec.max_position_embeddings
        if attention_factor is None:
            if factor is None or factor <= 1.0:
                attention_factor = 1.0
            else:
                attention_factor = math.sqrt(1 + math.log(factor) / math.log(omax))
        ext = s["long_factor"] if seq_len is not None and seq_len > omax else s["short_factor"]
        ext = np.asarray(ext, dtype=np.float64)
        if ext.shape != (d // 2,):
            raise ValueError("longrope factor list has %d entries, expected %d" % (len(ext), d // 2))
        return 1.0 / (ext * base ** expo), float(attention_factor)
    raise NotImplementedError("rope_type %r" % t)


def apply_rope(x, positions, inv_freq, attention_factor):
    """x [T, heads, head_dim]; rotate_half on the first 2*len(inv_freq) dims
    (apply_rotary_pos_emb; the rest passes through, as Phi-3's partial rotary)."""
    rd = 2 * len(inv_freq)
    freqs = np.outer(np.asarray(positions, dtype=np.float64), inv_freq)  # [T, rd/2]
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos = (np.cos(emb) * attention_factor)[:, None, :]
    sin = (np.sin(emb) * attention_factor)[:, None, :]
    xr, xp = x[..., :rd], x[..., rd:]
    half = rd // 2
    rot = np.concatenate([-xr[..., half:], xr[..., :half]], axis=-1)
    return np.concatenate([xr * cos + rot * sin, xp], axis=-1)


def apply_rope_interleaved(x, positions, inv_freq, attention_factor):
    """modeling_gptj.apply_rotary_pos_emb: sin and cos repeat_interleave'd by 2 over the
    first 2*len(inv_freq) dims, rotate_every_two (pairs (x[2i], x[2i+1]) -> (-x[2i+1],
    x[2i])); the rest of the head passes."""
    rd = 2 * len(inv_freq)
    freqs = np.outer(np.asarray(positions, dtype=np.float64), inv_freq)  # [T, rd/2]
    cos = np.repeat(np.cos(freqs), 2, axis=-1)[:, None, :] * attention_factor
    sin = np.repeat(np.sin(freqs), 2, axis=-1)[:, None, :] * attention_factor
    xr, xp = x[..., :rd], x[..., rd:]
    rot = np.stack([-xr[..., 1::2], xr[..., ::2]], axis=-1).reshape(xr.shape)
    return np.concatenate([xr * cos + rot * sin, xp], axis=-1)


def round_kv(x, kind):
    """x rounded to float32, then to bf16 (the top 16 bits, round to nearest even) or
    IEEE f16 (NumPy's float16 cast, round to nearest even), returned as float64."""
    x32 = np.ascontiguousarray(x, dtype=np.float32)
    if kind == "f16":
        return x32.astype(np.float16).astype(np.float64)
    u = x32.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return (r & 0xFFFFFFFF).astype(np.uint32).view(np.float32).astype(np.float64)


def top2_margin(row):
    """top1 - top2 of a logits row."""
    part = np.partition(np.asarray(row, dtype=np.float64), -2)[-2:]
    return float(part[1] - part[0])


# ---------------------------------------------------------------------------- model

class Cache:
    """Per-layer keys (after norm and RoPE) and values of the positions fed so far."""

    def __init__(self, n_layers):
        self.k = [None] * n_layers
        self.v = [None] * n_layers
        self.length = 0
        self.ids = []          # every token fed so far
        self.max_seq_len = {}  # dynamic rope: largest seq_len seen per rope spec id


class Reference:
    """The float64 forward pass of one checkpoint folder (see the module doc)."""

    def __init__(self, folder, embed_scale_dtype="float32", kv_round=None, weights_round=None):
        """kv_round: None (float64 keys and values), or "bf16" / "f16": each key (after
        the norm and RoPE) and value is rounded to float32 and then to that type, round to
        nearest even, before it enters the cache, as a 16-bit KV cache stores it. With
        "bf16" the query is rounded the same way (a bf16 cache is bf16 attention: scores
        are products of bf16 values, as FlashAttention computes them in bf16).
        weights_round: None, or "q4" / "int8": every weight matrix read back as facet's
        block format stores it (weights_round.py); activations stay float64."""
        if kv_round not in (None, "bf16", "f16"):
            raise ValueError("kv_round %r: expected None, 'bf16' or 'f16'" % (kv_round,))
        self.kv_round = kv_round
        # None, or "q8_0": MXFP4 expert matmuls see their inputs rounded as Q8_0 blocks
        # (_expert_act), the arithmetic of an int8 dot on 4-bit blocks (facet, llama.cpp)
        self.expert_act_round = None
        with open(os.path.join(folder, "config.json")) as f:
            self.config = json.load(f)
        self.facts = hf_facts.facts(self.config)
        self.w = safetensors_io.TensorStore(folder)
        names = self.w.names()
        if self.facts.classic:
            self._classic_init(folder, names, weights_round)
            return
        self.aliases = self.NAME_ALIASES.get(self.facts.family.get("names"), ())
        emb_name = self._alias("embed_tokens.weight")
        emb = [n for n in names if n.endswith(emb_name)]
        if len(emb) != 1:
            raise ValueError("%s: expected one *%s, found %s" % (folder, emb_name, emb))
        self.prefix = emb[0][: -len(emb_name)]
        heads = [n for n in names if n.endswith(self._alias("lm_head.weight"))]
        self.lm_head_name = heads[0] if heads else None
        if weights_round:
            import weights_round as wr
            self.w = wr.RoundedStore(self.w, weights_round, self.lm_head_name or emb[0])
        self.embed_scale_dtype = embed_scale_dtype
        f = self.facts
        if f.num_attention_heads % f.num_key_value_heads:
            raise ValueError("num_attention_heads %d not a multiple of num_key_value_heads %d"
                             % (f.num_attention_heads, f.num_key_value_heads))

    # -- classic decoders (issue 28), each with its class's own tensor names
    # GPT-NeoX (modeling_gpt_neox): h = embed_in[ids]; per layer
    #   a = dense(attn(LN_in(h)))  with q, k, v = query_key_value(x).view(T, heads, 3 hd)
    #       split in three per head, rotary (rotate_half) on the first rotary_ndims dims
    #   parallel: h = h + a + mlp(LN_post(h));  else h' = h + a; h = h' + mlp(LN_post(h'))
    #   mlp(x) = dense_4h_to_h(act(dense_h_to_4h(x)))
    # logits = embed_out(final_layer_norm(h)).
    CLASSIC_NAMES = {
        "gpt_neox": dict(embed="gpt_neox.embed_in.weight", layer="gpt_neox.layers.%d.",
                         ln_in="input_layernorm", ln_post="post_attention_layernorm",
                         qkv="attention.query_key_value", o="attention.dense",
                         up="mlp.dense_h_to_4h", down="mlp.dense_4h_to_h",
                         final="gpt_neox.final_layer_norm", head="embed_out.weight"),
        # Phi (modeling_phi): one input_layernorm; h = h + attn(ln(h)) + mlp(ln(h)) (the same
        # normed input); q/k/v_proj and dense with biases, rotary (rotate_half) on the first
        # int(head_dim * partial_rotary_factor) dims; mlp = fc2(gelu_new(fc1(x)));
        # logits = lm_head(final_layernorm(h)) + lm_head.bias
        # GPT-2 (modeling_gpt2): h = wte[ids] + wpe[positions]; per layer
        #   h = h + c_proj(attn(ln_1(h))), q | k | v = split(c_attn(x), H, dim=-1), no rotary;
        #   h = h + mlp(ln_2(h)), mlp(x) = c_proj(gelu_new(c_fc(x)));
        #   Conv1D(x) = x @ W + b with W stored [in, out]; logits = ln_f(h) @ wte^T (tied).
        "gpt2": dict(embed="transformer.wte.weight", wpe="transformer.wpe.weight",
                     layer="transformer.h.%d.", ln_in="ln_1", ln_post="ln_2", qkv="attn.c_attn",
                     qkv_layout="columns", o="attn.c_proj", up="mlp.c_fc", down="mlp.c_proj",
                     final="transformer.ln_f", head="lm_head.weight", conv1d=True),
        # Falcon (modeling_falcon): h = word_embeddings[ids]; per layer, query_key_value(x)
        # viewed [T, kv, heads / kv + 2, hd]: per KV group its query heads, then its key and
        # value (multi_query: one group; the old non-multi-query layout: one head per
        # group), each key and value serving its group's query heads; rotary on the whole
        # head (rotate_half); scores / sqrt(hd). parallel_attn: h + dense(attn(ln_a(h))) +
        # mlp(ln_m(h)) with ln_a = ln_m = input_layernorm, or ln_attn / ln_mlp (the new
        # decoder architecture's two norms); else sequential with post_attention_layernorm.
        # mlp = dense_4h_to_h(act(dense_h_to_4h(x))); logits = lm_head(ln_f(h)).
        "falcon": dict(embed="transformer.word_embeddings.weight", layer="transformer.h.%d.",
                       ln_in="input_layernorm", ln_post="post_attention_layernorm",
                       qkv="self_attention.query_key_value", qkv_layout="grouped",
                       o="self_attention.dense", up="mlp.dense_h_to_4h", down="mlp.dense_4h_to_h",
                       final="transformer.ln_f", head="lm_head.weight"),
        # BLOOM (modeling_bloom): h = LN(word_embeddings[ids]) (word_embeddings_layernorm);
        # per layer h = h + dense(attn(LN_in(h))), h = h + mlp(LN_post(h)); query_key_value
        # viewed [T, heads, 3, hd]; scores = alibi + q.k / sqrt(hd) (baddbmm, beta 1), alibi
        # = slope_h * key position; mlp = dense_4h_to_h(bloom_gelu(dense_h_to_4h(x)));
        # logits = ln_f(h) @ word_embeddings^T (tied).
        "bloom": dict(embed="transformer.word_embeddings.weight",
                      embed_ln="transformer.word_embeddings_layernorm", layer="transformer.h.%d.",
                      ln_in="input_layernorm", ln_post="post_attention_layernorm",
                      qkv="self_attention.query_key_value", o="self_attention.dense",
                      up="mlp.dense_h_to_4h", down="mlp.dense_4h_to_h", final="transformer.ln_f",
                      head="lm_head.weight"),
        # MPT (modeling_mpt): h = wte[ids]; per layer h = h + out_proj(attn(norm_1(h))),
        # h = h + down_proj(gelu(up_proj(norm_2(h)))), LayerNorms without bias; Wqkv(x)
        # chunked q | k | v; scores = q.k * softmax_scale + ALiBi; logits = norm_f(h) @ wte^T.
        "mpt": dict(embed="transformer.wte.weight", layer="transformer.blocks.%d.",
                    ln_in="norm_1", ln_post="norm_2", qkv="attn.Wqkv", qkv_layout="columns",
                    o="attn.out_proj", up="ffn.up_proj", down="ffn.down_proj",
                    final="transformer.norm_f", head="lm_head.weight"),
        # GPT-J (modeling_gptj): h = wte[ids]; x = ln_1(h); h = h + out_proj(attn(x)) +
        # fc_out(gelu_new(fc_in(x))); q/k/v_proj without bias, rotary in pairs on the first
        # rotary_dim dims; logits = lm_head(ln_f(h)) + lm_head.bias.
        "gptj": dict(embed="transformer.wte.weight", layer="transformer.h.%d.", ln_in="ln_1",
                     ln_post=None, qkv=None, q="attn.q_proj", k="attn.k_proj", v="attn.v_proj",
                     o="attn.out_proj", up="mlp.fc_in", down="mlp.fc_out",
                     final="transformer.ln_f", head="lm_head.weight"),
        "phi": dict(embed="model.embed_tokens.weight", layer="model.layers.%d.",
                    ln_in="input_layernorm", ln_post=None, qkv=None, q="self_attn.q_proj",
                    k="self_attn.k_proj", v="self_attn.v_proj", o="self_attn.dense",
                    up="mlp.fc1", down="mlp.fc2", final="model.final_layernorm",
                    head="lm_head.weight"),
    }

    def _classic_init(self, folder, names, weights_round):
        self.names = dict(self.CLASSIC_NAMES[self.facts.classic])
        f = self.facts
        if f.classic == "falcon" and f.parallel:
            two = f.parallel_norms == 2
            self.names.update(ln_in="ln_attn" if two else "input_layernorm",
                              ln_post="ln_mlp" if two else None)
        self.prefix = ""
        self.lm_head_name = self.names["head"] if self.names["head"] in names else None
        if weights_round:
            import weights_round as wr
            self.w = wr.RoundedStore(self.w, weights_round, self.lm_head_name or self.names["embed"])

    def _ln(self, x, name):
        return layer_norm(x, self._t(name + ".weight"), self._opt(name + ".bias"),
                          self.facts.rms_norm_eps)

    def _lin(self, x, name):
        """nn.Linear (x W^T + b), or GPT-2's Conv1D (x W + b, W stored [in, out])."""
        if not self.names.get("conv1d"):
            return self._linear(x, name)
        return x @ self._t(name + ".weight") + self._t(name + ".bias")

    def _classic_attention(self, layer, x, positions, cache):
        f, n = self.facts, self.names
        T = x.shape[0]
        nh, hd = f.num_attention_heads, f.head_dim
        if n.get("qkv_layout") == "columns":  # GPT-2: c_attn(x).split(H, dim=-1)
            qkv = self._lin(x, n["layer"] % layer + n["qkv"])
            Q = nh * hd
            q, k, v = (qkv[:, i * Q:(i + 1) * Q].reshape(T, nh, hd) for i in range(3))
        elif n.get("qkv_layout") == "grouped":  # Falcon: [T, kv, g + 2, hd]
            kvh = f.num_key_value_heads
            g = nh // kvh
            qkv = self._linear(x, n["layer"] % layer + n["qkv"]).reshape(T, kvh, g + 2, hd)
            q = qkv[:, :, :g].reshape(T, nh, hd)
            k, v = qkv[:, :, g], qkv[:, :, g + 1]
        elif n["qkv"]:
            qkv = self._linear(x, n["layer"] % layer + n["qkv"]).reshape(T, nh, 3 * hd)
            q, k, v = qkv[..., :hd], qkv[..., hd:2 * hd], qkv[..., 2 * hd:]
        else:
            q, k, v = (self._linear(x, n["layer"] % layer + n[w]).reshape(T, nh, hd) for w in "qkv")
        rope = self._rope(layer, positions, cache)
        if rope is not None:  # GPT-2 has none
            turn = apply_rope_interleaved if f.rope_interleaved else apply_rope
            q = turn(q, positions, *rope)
            k = turn(k, positions, *rope)
        if self.kv_round:
            k, v = round_kv(k, self.kv_round), round_kv(v, self.kv_round)
        if self.kv_round == "bf16":
            q = round_kv(q, "bf16")
        if cache.k[layer] is None:
            cache.k[layer], cache.v[layer] = k, v
        else:
            cache.k[layer] = np.concatenate([cache.k[layer], k], axis=0)
            cache.v[layer] = np.concatenate([cache.v[layer], v], axis=0)
        K, V = cache.k[layer], cache.v[layer]
        if K.shape[1] != nh:  # a key/value head serves heads / kv query heads in a row
            K = np.repeat(K, nh // K.shape[1], axis=1)
            V = np.repeat(V, nh // V.shape[1], axis=1)
        S = K.shape[0]
        if f.alibi == "falcon":  # FalconAttention: (q.k + slope_h * key position) * inv_norm
            scores = (np.einsum("thd,shd->hts", q, K)
                      + bloom_alibi_slopes(nh)[:, None, None] * np.arange(S)[None, None, :]) * f.attn_scale
        else:
            scores = np.einsum("thd,shd->hts", q, K) * f.attn_scale
        if f.alibi == "bloom":  # + slope_h * key position
            scores = scores + bloom_alibi_slopes(nh)[:, None, None] * np.arange(S)[None, None, :]
        elif f.alibi == "mpt":  # + slope_h * (key position - last key position)
            scores = scores + mpt_alibi_slopes(nh)[:, None, None] * np.arange(1 - S, 1)[None, None, :]
        allowed = np.arange(S)[None, :] <= np.asarray(positions)[:, None]
        scores = np.where(allowed[None], scores, -np.inf)
        scores -= scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(axis=-1, keepdims=True)
        out = np.einsum("hts,shd->thd", probs, V).reshape(T, nh * hd)
        return self._lin(out, n["layer"] % layer + n["o"])

    def _classic_mlp(self, layer, x):
        n, p = self.names, self.names["layer"] % layer
        return self._lin(activation(self.facts.hidden_act, self._lin(x, p + n["up"])), p + n["down"])

    def _classic_layer(self, layer, h, positions, cache):
        n, p = self.names, self.names["layer"] % layer
        x = self._ln(h, p + n["ln_in"])
        a = self._classic_attention(layer, x, positions, cache)
        if self.facts.parallel and n["ln_post"] is None:  # one norm feeds both
            return h + a + self._classic_mlp(layer, x)
        if self.facts.parallel:
            return h + a + self._classic_mlp(layer, self._ln(h, p + n["ln_post"]))
        h = h + a
        return h + self._classic_mlp(layer, self._ln(h, p + n["ln_post"]))

    # -- weights
    # Llama's module names as other classes spell them (InternLM2's modeling_internlm2,
    # EXAONE's modeling_exaone)
    NAME_ALIASES = {"internlm2": (("embed_tokens.weight", "tok_embeddings.weight"),
                                  (".input_layernorm.", ".attention_norm."),
                                  (".self_attn.qkv_grouped.", ".attention.wqkv."),
                                  (".self_attn.o_proj.", ".attention.wo."),
                                  (".post_attention_layernorm.", ".ffn_norm."),
                                  (".mlp.gate_proj.", ".feed_forward.w1."),
                                  (".mlp.up_proj.", ".feed_forward.w3."),
                                  (".mlp.down_proj.", ".feed_forward.w2."),
                                  ("lm_head.weight", "output.weight")),
                    # QWen's modeling_qwen: transformer.wte / h.N / ln_f
                    "qwen": (("embed_tokens.weight", "wte.weight"), ("norm.weight", "ln_f.weight"),
                             (".layers.", ".h."), (".input_layernorm.", ".ln_1."),
                             (".self_attn.qkv_proj.", ".attn.c_attn."),
                             (".self_attn.o_proj.", ".attn.c_proj."),
                             (".post_attention_layernorm.", ".ln_2."),
                             (".mlp.gate_proj.", ".mlp.w2."), (".mlp.up_proj.", ".mlp.w1."),
                             (".mlp.down_proj.", ".mlp.c_proj.")),
                    # ChatGLM's modeling_chatglm: transformer.embedding / encoder.layers.N /
                    # encoder.final_layernorm / output_layer; query_key_value [q; k; v]
                    # (qkv_proj) or per head (qkv_grouped: one KV group per head)
                    "chatglm": (("embed_tokens.weight", "embedding.word_embeddings.weight"),
                                ("norm.weight", "encoder.final_layernorm.weight"),
                                ("norm.bias", "encoder.final_layernorm.bias"),
                                ("lm_head.weight", "output_layer.weight"),
                                (".layers.", ".encoder.layers."),
                                (".self_attn.qkv_proj.", ".self_attention.query_key_value."),
                                (".self_attn.qkv_grouped.", ".self_attention.query_key_value."),
                                (".self_attn.o_proj.", ".self_attention.dense."),
                                (".mlp.gate_up_proj.", ".mlp.dense_h_to_4h."),
                                (".mlp.down_proj.", ".mlp.dense_4h_to_h.")),
                    # Baichuan's modeling_baichuan: Llama's names, self_attn.W_pack
                    "baichuan": ((".self_attn.qkv_proj.", ".self_attn.W_pack."),),
                    # EXAONE's modeling_exaone: transformer.wte / h.N / ln_f
                    "exaone": (("embed_tokens.weight", "wte.weight"), ("norm.weight", "ln_f.weight"),
                               (".layers.", ".h."),
                               (".input_layernorm.", ".ln_1."),
                               (".self_attn.q_proj.", ".attn.attention.q_proj."),
                               (".self_attn.k_proj.", ".attn.attention.k_proj."),
                               (".self_attn.v_proj.", ".attn.attention.v_proj."),
                               (".self_attn.o_proj.", ".attn.attention.out_proj."),
                               (".post_attention_layernorm.", ".ln_2."),
                               (".mlp.gate_proj.", ".mlp.c_fc_0."),
                               (".mlp.up_proj.", ".mlp.c_fc_1."),
                               (".mlp.down_proj.", ".mlp.c_proj."))}

    def _alias(self, name):
        """name under the class's own spelling (a leading-dot alias is a path part)."""
        for a, b in getattr(self, "aliases", ()):
            if a.startswith("."):
                name = ("." + name).replace(a, b)[1:]
            elif name == a:
                name = b
        return name

    def _t(self, name):
        return self.w[self.prefix + self._alias(name)]

    def _opt(self, name):
        return self.w.get(self.prefix + self._alias(name))

    def _linear(self, x, name):
        """x @ W^T + b (nn.Linear), bias when the checkpoint has one."""
        y = x @ self._t(name + ".weight").T
        b = self._opt(name + ".bias")
        return y if b is None else y + b

    def _norm(self, x, name):
        f = self.facts
        if f.norm == "layer_noweight":  # OLMo: F.layer_norm(x, shape, None, None, eps)
            return layer_norm(x, 1.0, None, f.rms_norm_eps)
        if f.norm == "layer":  # torch LayerNorm, bias when the checkpoint has one
            return layer_norm(x, self._t(name + ".weight"), self._opt(name + ".bias"), f.rms_norm_eps)
        return rms_norm(x, self._t(name + ".weight"), f.rms_norm_eps, f.norm_offset)

    # -- blocks
    def _embed(self, ids):
        f = self.facts
        if f.classic:
            h = self._t(self.names["embed"])[np.asarray(ids, dtype=np.int64)]
            return self._ln(h, self.names["embed_ln"]) if self.names.get("embed_ln") else h
        h = self._t("embed_tokens.weight")[np.asarray(ids, dtype=np.int64)]
        if f.embed_multiplier is not None:
            m = f.embed_multiplier
            if f.embed_multiplier_is_sqrt_hidden and self.embed_scale_dtype != "float64":
                if self.embed_scale_dtype == "bfloat16":
                    m = float(safetensors_io.bf16_bits_to_f32(
                        safetensors_io.f32_to_bf16_bits(np.float32([m])))[0])
                else:
                    m = float(np.float32(m) if self.embed_scale_dtype == "float32" else np.float16(m))
            h = h * m
        return h

    def _rope(self, layer, positions, cache):
        f = self.facts
        if not f.use_rope[layer]:
            return None
        spec = f.rope_local if f.layer_types[layer] == "sliding_attention" else f.rope_global
        seq_len = int(max(positions)) + 1
        if spec.rope_type == "dynamic":
            key = id(spec)
            seq_len = max(seq_len, cache.max_seq_len.get(key, 0))
            cache.max_seq_len[key] = seq_len
        return rope_inv_freq(spec, seq_len)

    def _attention(self, layer, x, positions, cache):
        f = self.facts
        p = "layers.%d.self_attn." % layer
        T = x.shape[0]
        nh, kv, hd = f.num_attention_heads, f.num_key_value_heads, f.head_dim
        if f.qkv_layout == "grouped":  # InternLM2's wqkv: "(h gs d)", gs = nh / kv + 2
            g = nh // kv
            qkv = self._linear(x, p + "qkv_grouped").reshape(T, kv, g + 2, hd)
            q = qkv[:, :, :g].reshape(T, nh * hd)
            k = qkv[:, :, g].reshape(T, kv * hd)
            v = qkv[:, :, g + 1].reshape(T, kv * hd)
        elif f.fused:
            qkv = self._linear(x, p + "qkv_proj")
            q = qkv[:, : nh * hd]
            k = qkv[:, nh * hd: (nh + kv) * hd]
            v = qkv[:, (nh + kv) * hd:]
        else:
            q = self._linear(x, p + "q_proj")
            k = self._linear(x, p + "k_proj")
            v = self._linear(x, p + "v_proj")
        if f.qk_norm == "full":
            q = self._norm(q, p + "q_norm")
            k = self._norm(k, p + "k_norm")
        q = q.reshape(T, nh, hd)
        k = k.reshape(T, kv, hd)
        v = v.reshape(T, kv, hd)
        if f.qk_norm == "head":
            q = self._norm(q, p + "q_norm")
            k = self._norm(k, p + "k_norm")
        rope = self._rope(layer, positions, cache)
        if rope is not None:  # Cohere turns pairs (2i, 2i+1), as GPT-J
            turn = apply_rope_interleaved if f.rope_interleaved else apply_rope
            q = turn(q, positions, *rope)
            k = turn(k, positions, *rope)
        if self.kv_round:
            k, v = round_kv(k, self.kv_round), round_kv(v, self.kv_round)
        if self.kv_round == "bf16":
            q = round_kv(q, "bf16")
        if cache.k[layer] is None:
            cache.k[layer], cache.v[layer] = k, v
        else:
            cache.k[layer] = np.concatenate([cache.k[layer], k], axis=0)
            cache.v[layer] = np.concatenate([cache.v[layer], v], axis=0)
        K, V = cache.k[layer], cache.v[layer]  # [S, kv, hd]
        S = K.shape[0]
        rep = nh // kv
        Kh = np.repeat(K.transpose(1, 0, 2), rep, axis=0)  # [nh, S, hd] (repeat_kv)
        Vh = np.repeat(V.transpose(1, 0, 2), rep, axis=0)
        scores = np.einsum("thd,hsd->hts", q, Kh) * f.attn_scale
        if f.alibi == "baichuan":  # modeling_baichuan: q.k / sqrt(d) + slope_h * key position
            scores = scores + baichuan_alibi_slopes(nh)[:, None, None] * np.arange(S)[None, None, :]
        scores = softcap(scores, f.attn_logit_softcapping)
        qpos = np.asarray(positions)[:, None]
        kpos = np.arange(S)[None, :]
        allowed = kpos <= qpos
        if f.layer_types[layer] == "sliding_attention":
            allowed &= kpos > qpos - f.sliding_window
        scores = np.where(allowed[None], scores, -np.inf)
        if f.attn_sinks:  # gpt-oss: one more logit per head in the denominator, value 0
            sink = self._t(p + "sinks")[:, None, None]  # [nh, 1, 1]
            m = np.maximum(scores.max(axis=-1, keepdims=True), sink)
            probs = np.exp(scores - m)
            probs /= probs.sum(axis=-1, keepdims=True) + np.exp(sink - m)
        else:
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
        out = np.einsum("hts,hsd->thd", probs, Vh).reshape(T, nh * hd)
        return self._linear(out, p + "o_proj")

    def _mlp(self, layer, x):
        f = self.facts
        if f.sparse_layers and f.sparse_layers[layer]:
            return self._moe(layer, x)
        p = "layers.%d.mlp." % layer
        if not f.gated:  # StarCoder2: c_proj(act(c_fc(x)))
            up, down = f.family["mlp_names"]
            q = "layers.%d." % layer
            return self._linear(activation(f.hidden_act, self._linear(x, q + up)), q + down)
        if f.fused and f.family.get("fused") != "qkv":  # Phi-3's gate_up_proj
            gu = self._linear(x, p + "gate_up_proj")
            gate, up = gu[:, : f.intermediate_size], gu[:, f.intermediate_size:]
        else:
            gate = self._linear(x, p + "gate_proj")
            up = self._linear(x, p + "up_proj")
        return self._linear(activation(f.hidden_act, gate) * up, p + "down_proj")

    def route(self, logits):
        """(ids [T, k], weights [T, k]) of router logits [T, E] (see the module doc)."""
        f = self.facts
        logits = np.asarray(logits, dtype=np.float64)
        order = np.argsort(-logits, axis=-1, kind="stable")[:, : f.top_k]
        p = np.exp(logits - logits.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        w = np.take_along_axis(p, order, axis=-1)
        if f.router == "topk_softmax" or f.norm_topk_prob:
            w = w / w.sum(axis=-1, keepdims=True)
        return order, w

    def _experts(self, layer):
        """[(gate [I, H], up [I, H], down [H, I])] per expert and the router's [E, H]."""
        f = self.facts
        p = "layers.%d." % layer
        E, I = f.num_experts, f.moe_intermediate_size
        if self._opt(p + "block_sparse_moe.experts.0.w1.weight") is not None:
            q = p + "block_sparse_moe.experts.%d."
            ex = [(self._t(q % e + "w1.weight"), self._t(q % e + "w3.weight"),
                   self._t(q % e + "w2.weight")) for e in range(E)]
            return ex, self._t(p + "block_sparse_moe.gate.weight")
        if self._opt(p + "mlp.experts.0.gate_proj.weight") is not None:
            q = p + "mlp.experts.%d."
            ex = [(self._t(q % e + "gate_proj.weight"), self._t(q % e + "up_proj.weight"),
                   self._t(q % e + "down_proj.weight")) for e in range(E)]
            return ex, self._t(p + "mlp.gate.weight")
        if self._opt(p + "mlp.experts.gate_up_proj") is not None:
            gu, dn, router = (self._t(p + "mlp.experts.gate_up_proj"), self._t(p + "mlp.experts.down_proj"),
                              self._t(p + "mlp.gate.weight"))
        else:
            gu = self._t(p + "block_sparse_moe.input_linear.weight")
            dn = self._t(p + "block_sparse_moe.output_linear.weight")
            router = self._t(p + "block_sparse_moe.router.layer.weight")
        return [(gu[e, :I], gu[e, I:], dn[e]) for e in range(E)], router

    def _experts_w(self, name):
        """gpt-oss's x @ W expert tensor [E, C, R]: as stored, or from its MXFP4
        NAME_blocks / NAME_scales (mxfp4.py; dequantized [E, R, C], transposed as
        transformers' convert_moe_packed_tensors does)."""
        blocks = self._opt(name + "_blocks")
        if blocks is None:
            return self._t(name)
        return np.swapaxes(mxfp4.dequant_hf(blocks, self._t(name + "_scales")), 1, 2)

    def _expert_act(self, a):
        """The input rows of an MXFP4 expert matmul as seen by it: unchanged, or with
        expert_act_round == "q8_0" each row rounded as ggml's (and facet's) Q8_0
        activation blocks of 32: x to float32, amax = max|x|, d = f16(amax / 127), q =
        round-half-even(x * (127 / amax)) in float32, value q * d."""
        if self.expert_act_round != "q8_0":
            return a
        x = np.asarray(a, dtype=np.float32).reshape(a.shape[:-1] + (-1, 32))
        amax = np.abs(x).max(axis=-1, keepdims=True)
        d = (amax / np.float32(127)).astype(np.float16).astype(np.float64)
        with np.errstate(divide="ignore"):
            idv = np.where(amax > 0, np.float32(127) / np.where(amax > 0, amax, 1), 0).astype(np.float32)
        q = np.rint((x * idv).astype(np.float32)).astype(np.float64)
        return (q * d).reshape(a.shape)

    def _gptoss_moe(self, layer, x):
        """GptOssMLP: router with a bias; experts x @ W_gu + b_gu (gate, up interleaved),
        clamped SwiGLU, @ W_d + b_d."""
        f = self.facts
        p = "layers.%d.mlp." % layer
        ids, w = self.route(x @ self._t(p + "router.weight").T + self._t(p + "router.bias"))
        gu_w, gu_b = self._experts_w(p + "experts.gate_up_proj"), self._t(p + "experts.gate_up_proj_bias")
        d_w, d_b = self._experts_w(p + "experts.down_proj"), self._t(p + "experts.down_proj_bias")
        lim, alpha = f.swiglu_limit, 1.702
        ar = self._expert_act if self._opt(p + "experts.down_proj_blocks") is not None else (lambda a: a)
        out = np.zeros_like(x)
        for e in range(f.num_experts):
            rows, slot = np.nonzero(ids == e)
            if not len(rows):
                continue
            gu = ar(x[rows]) @ gu_w[e] + gu_b[e]
            gate, up = np.minimum(gu[:, ::2], lim), np.clip(gu[:, 1::2], -lim, lim)
            y = ar((up + 1) * (gate / (1.0 + np.exp(-alpha * gate)))) @ d_w[e] + d_b[e]
            out[rows] += w[rows, slot][:, None] * y
        return out

    def _moe(self, layer, x):
        f = self.facts
        p = "layers.%d." % layer
        if f.experts_layout == "gptoss":
            return self._gptoss_moe(layer, x)
        experts, router = self._experts(layer)
        ids, w = self.route(x @ router.T)
        out = np.zeros_like(x)
        for e in range(f.num_experts):  # expert order, as the modeling code's loop
            rows, slot = np.nonzero(ids == e)
            if not len(rows):
                continue
            g, u, d = experts[e]
            xe = x[rows]
            y = (activation(f.hidden_act, xe @ g.T) * (xe @ u.T)) @ d.T
            out[rows] += w[rows, slot][:, None] * y
        S = f.shared_intermediate_size
        if S and self._opt(p + "shared_mlp.input_linear.weight") is not None:
            gu = x @ self._t(p + "shared_mlp.input_linear.weight").T
            out = out + (activation(f.hidden_act, gu[:, :S]) * gu[:, S:]) @ self._t(
                p + "shared_mlp.output_linear.weight").T
        elif S:
            q = p + "mlp.shared_expert."
            y = (activation(f.hidden_act, x @ self._t(q + "gate_proj.weight").T) *
                 (x @ self._t(q + "up_proj.weight").T)) @ self._t(q + "down_proj.weight").T
            if f.shared_gate:
                y = y / (1.0 + np.exp(-(x @ self._t(p + "mlp.shared_expert_gate.weight").T)))
            out = out + y
        return out

    def _layer(self, layer, h, positions, cache):
        f = self.facts
        if f.classic:
            return self._classic_layer(layer, h, positions, cache)
        p = "layers.%d." % layer
        rm = f.residual_multiplier
        if f.block == "post":  # OLMo 2
            h = h + self._norm(self._attention(layer, h, positions, cache), p + "post_attention_layernorm")
            h = h + self._norm(self._mlp(layer, h), p + "post_feedforward_layernorm")
            return h
        if f.block == "sandwich":  # Gemma 2 / 3
            a = self._attention(layer, self._norm(h, p + "input_layernorm"), positions, cache)
            h = h + self._norm(a, p + "post_attention_layernorm")
            m = self._mlp(layer, self._norm(h, p + "pre_feedforward_layernorm"))
            return h + self._norm(m, p + "post_feedforward_layernorm")
        if f.parallel:  # StableLM use_parallel_residual: one norm feeds both
            x = self._norm(h, p + "input_layernorm")
            return h + self._attention(layer, x, positions, cache) + self._mlp(layer, x)
        a = self._attention(layer, self._norm(h, p + "input_layernorm"), positions, cache)
        h = h + a * rm if rm != 1.0 else h + a
        m = self._mlp(layer, self._norm(h, p + "post_attention_layernorm"))
        return h + m * rm if rm != 1.0 else h + m

    def _head(self, h):
        f = self.facts
        if f.classic:
            h = self._ln(h, self.names["final"])
            W = self.w[self.lm_head_name] if self.lm_head_name else self._t(self.names["embed"])
            b = self.w.get(self.lm_head_name[:-len("weight")] + "bias") if self.lm_head_name else None
            return h @ W.T if b is None else h @ W.T + b
        h = self._norm(h, "norm")
        if f.tie_word_embeddings or self.lm_head_name is None:
            if not f.tie_word_embeddings:
                raise ValueError("tie_word_embeddings is false but the checkpoint has no lm_head.weight")
            W = self._t("embed_tokens.weight")
        else:
            W = self.w[self.lm_head_name]
        if f.lm_head_norm:  # Baichuan 2's NormHead: F.normalize(weight) (dim 1, eps 1e-12)
            W = W / np.maximum(np.linalg.norm(W, axis=1, keepdims=True), 1e-12)
        logits = h @ W.T
        if f.logits_scaling != 1.0:
            logits = logits / f.logits_scaling
        return softcap(logits, f.final_logit_softcapping)

    # -- public
    def new_cache(self):
        return Cache(self.facts.num_hidden_layers)

    def _longrope_switch(self):
        """original_max_position_embeddings of a longrope layer, else None."""
        for spec in (self.facts.rope_global, self.facts.rope_local):
            if spec.rope_type == "longrope":
                return spec.original_max_position_embeddings or spec.max_position_embeddings
        return None

    def forward(self, ids, cache):
        """Feed ids after the cache's positions; returns their logits [len(ids), vocab].

        longrope: when this call takes the sequence past original_max_position_embeddings
        while the cache is still within it, everything is recomputed from scratch with
        the long factors, as Phi3ForCausalLM.prepare_inputs_for_generation drops the cache
        at that point."""
        ids = [int(t) for t in ids]
        if not ids:
            raise ValueError("forward of zero tokens")
        V = self.facts.vocab_size
        for t in ids:
            if not 0 <= t < V:
                raise ValueError("token id %d outside the vocabulary [0, %d)" % (t, V))
        switch = self._longrope_switch()
        if switch is not None and 0 < cache.length <= switch < cache.length + len(ids):
            n_old = cache.length
            everything = cache.ids + ids
            fresh = self.new_cache()
            rows = self.forward(everything, fresh)
            cache.__dict__.update(fresh.__dict__)
            return rows[n_old:]
        cache.ids.extend(ids)
        positions = np.arange(cache.length, cache.length + len(ids))
        h = self._embed(ids)
        if self.facts.classic and self.names.get("wpe"):  # learned absolute positions
            h = h + self._t(self.names["wpe"])[positions]
        for layer in range(self.facts.num_hidden_layers):
            h = self._layer(layer, h, positions, cache)
        cache.length += len(ids)
        return self._head(h)

    def logits(self, ids):
        """Logits [len(ids), vocab] of every position of ids fed at once from position 0."""
        return self.forward(ids, self.new_cache())

    def hidden(self, ids):
        """Hidden states after the final norm [len(ids), hidden_size] of ids fed at once
        from position 0: what an embedding model pools (sentence-transformers' token
        embeddings of a decoder)."""
        ids = [int(t) for t in ids]
        if not ids:
            raise ValueError("hidden states of zero tokens")
        cache = self.new_cache()
        cache.ids.extend(ids)
        positions = np.arange(len(ids))
        h = self._embed(ids)
        for layer in range(self.facts.num_hidden_layers):
            h = self._layer(layer, h, positions, cache)
        return self._norm(h, "norm")

    def generate(self, prompt_ids, n, stop_ids=()):
        """Greedy (argmax, lowest id on an exact tie) for n new tokens: the prompt fed at
        once, then one token per step. Stops early only on an id in stop_ids (default
        none, like --ignore-eos). Returns {"prompt_ids", "generated_ids", "margins"
        (top1 - top2 per generated token), "logits" (rows as facet --dump-logits)}."""
        cache = self.new_cache()
        rows = [self.forward(prompt_ids, cache)]
        last = rows[0][-1]
        gen, margins = [], []
        for step in range(n):
            t = int(np.argmax(last))
            gen.append(t)
            margins.append(top2_margin(last))
            if t in stop_ids or step == n - 1:
                break
            r = self.forward([t], cache)
            rows.append(r)
            last = r[-1]
        return {"prompt_ids": list(prompt_ids), "generated_ids": gen, "margins": margins,
                "logits": np.concatenate(rows, axis=0)}


def main(argv=None):
    ap = argparse.ArgumentParser(description="float64 reference greedy generation")
    ap.add_argument("model")
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("-n", type=int, default=32)
    ap.add_argument("--dump-logits")
    ap.add_argument("--embed-scale-dtype", default="float32",
                    choices=["float32", "bfloat16", "float16", "float64"])
    ap.add_argument("--kv-round", choices=["bf16", "f16"],
                    help="round keys and values as a 16-bit KV cache stores them (bf16: the queries too)")
    a = ap.parse_args(argv)
    ids = [int(x) for x in a.prompt_ids.split(",") if x.strip()]
    ref = Reference(a.model, embed_scale_dtype=a.embed_scale_dtype, kv_round=a.kv_round)
    out = ref.generate(ids, a.n)
    if a.dump_logits:
        out["logits"].astype("<f4").tofile(a.dump_logits)
    print(json.dumps({k: out[k] for k in ("prompt_ids", "generated_ids", "margins")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
