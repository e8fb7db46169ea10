"""Architecture facts of a Hugging Face config.json, as transformers' config classes
and modeling files read them (the defaults of each config class when a key is absent).

This is the reference side's own reading of a config, written from the transformers
sources' semantics (configuration_*.py / modeling_*.py of llama, mistral, qwen2, qwen3,
gemma, gemma2, gemma3, phi3, olmo2, granite, smollm3), independent of facet's C code.
Both tests/ref/gen_checkpoint.py (which tensors to write) and tests/ref/reference.py (the
float64 forward pass) use it.

facts(config_dict) -> Facts; raises NotImplementedError naming the model_type or key for
anything the reference does not implement (never guesses).
"""

import math
from dataclasses import dataclass, field, replace
from typing import Optional

# Per-family conventions and the config-class defaults that apply when a key is absent.
#   tie:        PretrainedConfig subclass default of tie_word_embeddings
#   eps:        default rms_norm_eps
#   theta:      default rope_theta
#   act_keys:   config keys naming the FFN activation, first present wins; act: default
#   qkv_bias:   "always" (Qwen2: q/k/v bias=True, o bias=False), "attention_bias"
#               (q/k/v/o bias = config.attention_bias), or "never"
#   mlp_bias:   whether config.mlp_bias adds gate/up/down biases
#   qk_norm:    None, "head" (RMSNorm over head_dim, per head, before RoPE: Qwen3, Gemma3)
#               or "full" (RMSNorm over the whole q/k projection: OLMo 2)
#   norm_offset: 1.0 for Gemma's x * (1 + w) RMSNorm, else 0.0
#   block:      "pre" (Llama: x + attn(norm(x)); x + mlp(norm(x))), "sandwich" (Gemma 2/3:
#               pre and post norms around attention and FFN), "post" (OLMo 2: x + norm(attn(x)))
#   fused:      Phi-3's qkv_proj and gate_up_proj
#   sliding:    how layers get a window: "none", "all" (config.sliding_window on every layer),
#               "qwen" (use_sliding_window + max_window_layers), "alternate" (Gemma 2: even
#               layers), "pattern" (Gemma 3: sliding_window_pattern); an explicit layer_types
#               list in the config always wins
FAMILIES = {
    "llama": dict(tie=False, eps=1e-6, theta=10000.0, act_keys=("hidden_act",), act="silu",
                  qkv_bias="attention_bias", mlp_bias=True, sliding="none"),
    "mistral": dict(tie=False, eps=1e-6, theta=10000.0, act_keys=("hidden_act",), act="silu",
                    qkv_bias="never", sliding="all", sliding_default=4096),
    "qwen2": dict(tie=False, eps=1e-6, theta=10000.0, act_keys=("hidden_act",), act="silu",
                  qkv_bias="always", sliding="qwen", sliding_default=4096),
    "qwen3": dict(tie=False, eps=1e-6, theta=10000.0, act_keys=("hidden_act",), act="silu",
                  qkv_bias="attention_bias", qk_norm="head", sliding="qwen", sliding_default=4096),
    # Gemma 1: current transformers' GemmaMLP uses ACT2FN[config.hidden_act] (versions
    # before ~4.40 forced gelu_pytorch_tanh unless hidden_activation was set; this
    # reference follows the current code).
    "gemma": dict(tie=True, eps=1e-6, theta=10000.0, act_keys=("hidden_act",),
                  act="gelu_pytorch_tanh", qkv_bias="attention_bias", norm_offset=1.0,
                  embed_scale="sqrt_hidden", sliding="none"),
    "gemma2": dict(tie=True, eps=1e-6, theta=10000.0, act_keys=("hidden_activation",),
                   act="gelu_pytorch_tanh", qkv_bias="attention_bias", norm_offset=1.0,
                   embed_scale="sqrt_hidden", block="sandwich", sliding="alternate",
                   sliding_default=4096, query_pre_attn_scalar=256.0,
                   attn_logit_softcapping=50.0, final_logit_softcapping=30.0),
    "gemma3_text": dict(tie=True, eps=1e-6, theta=1000000.0, act_keys=("hidden_activation",),
                        act="gelu_pytorch_tanh", qkv_bias="attention_bias", qk_norm="head",
                        norm_offset=1.0, embed_scale="sqrt_hidden", block="sandwich",
                        sliding="pattern", sliding_default=4096, sliding_pattern=6,
                        query_pre_attn_scalar=256.0, attn_logit_softcapping=None,
                        final_logit_softcapping=None, local_theta=10000.0),
    "phi3": dict(tie=False, eps=1e-5, theta=10000.0, act_keys=("hidden_act",), act="silu",
                 qkv_bias="never", fused=True, sliding="all", sliding_default=None),
    "olmo2": dict(tie=False, eps=1e-5, theta=10000.0, act_keys=("hidden_act",), act="silu",
                  qkv_bias="attention_bias", qk_norm="full", block="post", sliding="none"),
    "granite": dict(tie=False, eps=1e-6, theta=10000.0, act_keys=("hidden_act",), act="silu",
                    qkv_bias="attention_bias", mlp_bias=True, sliding="none", granite=True),
    "smollm3": dict(tie=True, eps=1e-6, theta=2000000.0, act_keys=("hidden_act",), act="silu",
                    qkv_bias="attention_bias", mlp_bias=True, sliding="qwen",
                    sliding_default=None, no_rope=True),
    # Mixture of experts (moe: see MOE below). Mixtral: MixtralConfig's
    # sliding_window defaults to None.
    "mixtral": dict(tie=False, eps=1e-5, theta=1e6, act_keys=("hidden_act",), act="silu",
                    qkv_bias="never", sliding="all", sliding_default=None, moe="mixtral"),
    "qwen2_moe": dict(tie=False, eps=1e-6, theta=10000.0, act_keys=("hidden_act",), act="silu",
                      qkv_bias="always", sliding="qwen", sliding_default=4096, moe="qwen2_moe"),
    "qwen3_moe": dict(tie=False, eps=1e-6, theta=10000.0, act_keys=("hidden_act",), act="silu",
                      qkv_bias="attention_bias", qk_norm="head", sliding="qwen",
                      sliding_default=4096, moe="qwen3_moe"),
    # OlmoeAttention: q_norm over hidden_size, k_norm over kv heads x head_dim, both on
    # the projections before the head split; pre-norm blocks (unlike OLMo 2)
    "olmoe": dict(tie=False, eps=1e-5, theta=10000.0, act_keys=("hidden_act",), act="silu",
                  qkv_bias="attention_bias", qk_norm="full", sliding="none", moe="olmoe"),
    "granitemoe": dict(tie=False, eps=1e-6, theta=10000.0, act_keys=("hidden_act",), act="silu",
                       qkv_bias="attention_bias", sliding="none", granite=True, moe="granitemoe"),
    "granitemoeshared": dict(tie=False, eps=1e-6, theta=10000.0, act_keys=("hidden_act",),
                             act="silu", qkv_bias="attention_bias", sliding="none", granite=True,
                             moe="granitemoeshared"),
    # GptOssConfig / modeling_gpt_oss: windows by layer_types (sliding_window 128), q/k/v/o
    # biases by attention_bias, per-head attention sinks, every layer sparse
    "gpt_oss": dict(tie=False, eps=1e-5, theta=150000.0, act_keys=("hidden_act",), act="silu",
                    qkv_bias="attention_bias", sliding="alternate", sliding_default=128, sinks=True,
                    moe="gpt_oss"),
    # Classic decoders (issue 28; classic: see CLASSIC below). GPTNeoXConfig: gelu (erf),
    # layer_norm_eps 1e-5, rotary_pct 0.25, rotary_emb_base 10000, use_parallel_residual
    # True, attention_bias True, untied embed_out.
    "gpt_neox": dict(tie=False, eps=1e-5, theta=10000.0, act_keys=("hidden_act",), act="gelu",
                     qkv_bias="attention_bias", attention_bias=True, sliding="none",
                     classic="gpt_neox"),
    # PhiConfig (Phi-1/1.5/2): gelu_new, layer_norm_eps 1e-5, partial_rotary_factor 0.5,
    # rope_theta 10000; PhiAttention's q/k/v/dense and the MLP's fc1/fc2 always carry biases.
    "phi": dict(tie=False, eps=1e-5, theta=10000.0, act_keys=("hidden_act",), act="gelu_new",
                qkv_bias="always_all", sliding="none", classic="phi"),
    # StableLmConfig / modeling_stablelm: Llama's names and gated MLP with LayerNorms
    # (weight and bias), q/k/v biases by use_qkv_bias (o_proj none), partial rotary 0.25,
    # use_parallel_residual (one norm feeds both). stable-code-3b's remote-code
    # StableLMEpochConfig: norm_eps, rope_pct, the same block, sequential.
    # GPT2Config / modeling_gpt2: n_embd, n_layer, n_head, n_positions, n_inner (None: 4 x
    # n_embd), activation_function gelu_new, layer_norm_epsilon; Conv1D (x @ W + b)
    # projections, learned absolute positions (wpe), no rotary, tied to wte.
    "gpt2": dict(tie=True, eps=1e-5, theta=10000.0, act_keys=("activation_function",),
                 act="gelu_new", qkv_bias="always_all", sliding="none", classic="gpt2"),
    # OlmoConfig / modeling_olmo: OlmoLayerNorm = F.layer_norm without weight or bias,
    # eps 1e-5 (fixed); Llama's names and gated MLP; q/k/v/o bias by attention_bias;
    # clip_qkv (clamping q, k, v) is not implemented here.
    "olmo": dict(tie=False, eps=1e-5, theta=10000.0, act_keys=("hidden_act",), act="silu",
                 qkv_bias="attention_bias", sliding="none", keys="olmo"),
    # Starcoder2Config / modeling_starcoder2: LayerNorm (norm_epsilon), use_bias on q/k/v/o
    # and c_fc/c_proj, mlp = c_proj(act(c_fc(x))), sliding_window on every layer, tied.
    "starcoder2": dict(tie=True, eps=1e-5, theta=10000.0, act_keys=("hidden_act",),
                       act="gelu_pytorch_tanh", qkv_bias="use_bias", sliding="all",
                       sliding_default=None, keys="starcoder2", mlp_names=("mlp.c_fc", "mlp.c_proj")),
    # FalconConfig / modeling_falcon: LayerNorm (layer_norm_epsilon) with bias, FalconMLP
    # dense_4h_to_h(act(dense_h_to_4h(x))) with activation (default gelu) and
    # ffn_hidden_size (None: 4 x hidden); q/k/v, dense and MLP biases all by `bias`;
    # query_key_value in KV groups; parallel_attn; tied lm_head (PretrainedConfig).
    "falcon": dict(tie=True, eps=1e-5, theta=10000.0, act_keys=("activation",), act="gelu",
                   qkv_bias="bias", sliding="none", classic="falcon"),
    # BloomConfig / modeling_bloom: n_layer, n_head, layer_norm_epsilon; LayerNorms with
    # bias, word_embeddings_layernorm on the embeddings; every Linear with a bias; ALiBi
    # (build_alibi_tensor) instead of rotary; MLP dense_4h_to_h(bloom_gelu(dense_h_to_4h))
    # 4 x hidden wide; tied lm_head.
    "bloom": dict(tie=True, eps=1e-5, theta=10000.0, act_keys=(), act="bloom_gelu",
                  qkv_bias="always_all", sliding="none", classic="bloom"),
    # MptConfig / modeling_mpt: d_model, n_heads, n_layers, max_seq_len; LayerNorm without
    # bias; no Linear biases; ALiBi (build_mpt_alibi_tensor, max bias 8: slope_h * (key
    # - last key)); Wqkv chunked q | k | v; MLP down_proj(gelu(up_proj)) 4 x d_model;
    # attn_config.softmax_scale (None: 1/sqrt(head_dim)); tied lm_head.
    "mpt": dict(tie=True, eps=1e-5, theta=10000.0, act_keys=(), act="gelu",
                qkv_bias="never", sliding="none", classic="mpt"),
    # GPTJConfig / modeling_gptj: n_embd, n_layer, n_head, n_positions, n_inner (None: 4 x
    # n_embd), rotary_dim (None: the whole head), activation_function gelu_new,
    # layer_norm_epsilon; h + attn(ln_1(h)) + mlp(ln_1(h)); q/k/v/out_proj without bias,
    # fc_in/fc_out with; rotate_every_two rotary; untied lm_head with a bias.
    "gptj": dict(tie=False, eps=1e-5, theta=10000.0, act_keys=("activation_function",),
                 act="gelu_new", qkv_bias="never", sliding="none", classic="gptj"),
    # CohereConfig / modeling_cohere: CohereLayerNorm (mean-centred, weight, no bias,
    # layer_norm_eps); h + attn(ln(h)) + mlp(ln(h)) with Llama's names and gated MLP;
    # rotary with repeat_interleave'd frequencies and the pairwise rotate_half; logits *
    # logit_scale (0.0625); tied. use_qk_norm is not implemented here.
    "cohere": dict(tie=True, eps=1e-5, theta=10000.0, act_keys=("hidden_act",), act="silu",
                   qkv_bias="attention_bias", sliding="none", keys="cohere", norm_bias=False),
    # Cohere2Config / modeling_cohere2: Cohere's block (CohereLayerNorm, the parallel
    # attention + gated MLP, pairwise rotary, logits * logit_scale 0.0625, tied);
    # __post_init__ sets head_dim = hidden_size // num_attention_heads and, with no
    # layer_types, layer i sliding iff (i + 1) % sliding_window_pattern (default 4);
    # sliding_window 4096. Cohere2Attention.sliding_window = config.sliding_window on the
    # sliding layers, else None, and apply_rotary_pos_emb runs only when it is not None:
    # the full-attention layers have no positions.
    "cohere2": dict(tie=True, eps=1e-5, theta=10000.0, act_keys=("hidden_act",), act="silu",
                    qkv_bias="attention_bias", sliding="pattern", sliding_default=4096,
                    sliding_pattern=4, keys="cohere", norm_bias=False, rope_sliding_only=True,
                    head_dim_from_hidden=True),
    # InternLM2Config / modeling_internlm2 (internlm2-chat-7b's remote code): Llama's block
    # (RMSNorm, gated silu MLP w2(act(w1 x) * w3 x), rotate_half rotary) under its own
    # names; wqkv rearranged "(h gs d)" with gs = heads / kv + 2: per KV group its query
    # heads, key, value; wqkv and wo biases by config.bias (default True); untied output.
    "internlm2": dict(tie=False, eps=1e-6, theta=10000.0, act_keys=("hidden_act",), act="silu",
                      qkv_bias="internlm2", sliding="none", names="internlm2"),
    # MiniCPMConfig / modeling_minicpm (MiniCPM-2B's remote code): Llama's block and names
    # with muP: embed_tokens(ids) * scale_emb, residual + branch * scale_depth /
    # sqrt(num_hidden_layers), lm_head(h / (hidden_size / dim_model_base)); all three
    # default 1; tie_word_embeddings defaults to True.
    "minicpm": dict(tie=True, eps=1e-6, theta=10000.0, act_keys=("hidden_act",), act="silu",
                    qkv_bias="attention_bias", sliding="none", mup=True),
    # ExaoneConfig / modeling_exaone (EXAONE 3.0 / 3.5's remote code): Llama's block
    # (RMSNorm with layer_norm_epsilon, rotate_half rotary with rope_scaling, gated MLP
    # c_proj(act(c_fc_0 x) * c_fc_1 x)) under GPT-2-like names (transformer.wte,
    # transformer.h.N.ln_1 / attn.attention.{q,k,v,out}_proj / ln_2 / mlp, transformer.ln_f);
    # no biases; num_layers; intermediate_size None = 4 x hidden; tied by PretrainedConfig's
    # default.
    # QWenConfig / modeling_qwen (Qwen-7B's remote code): RMSNorm ln_1 / ln_2 / ln_f
    # (layer_norm_epsilon); attn.c_attn a Linear whose rows are q | k | v, always with a
    # bias; attn.c_proj and the MLP without (no_bias); mlp: c_proj(w1 x * silu(w2 x)), w1 /
    # w2 intermediate_size // 2 wide; rotate_half rotary over int(kv_channels x rotary_pct)
    # dims, base rotary_emb_base; scores / sqrt(head_dim); logn attention and dynamic NTK
    # act only past seq_length (not modelled: the reference runs within it); untied.
    "qwen": dict(tie=False, eps=1e-6, theta=10000.0, act_keys=(), act="silu", qkv_bias="always",
                 fused="qkv", sliding="none", names="qwen"),
    # ChatGLMConfig / modeling_chatglm (the remote code of THUDM/chatglm3-6b at 456aa87,
    # whose RotaryEmbedding ignores rope_ratio, and of glm-4-9b, whose forward_impl takes
    # base = 10000 * rope_ratio; the two agree at rope_ratio 1): num_layers,
    # padded_vocab_size, kv_channels (head size), ffn_hidden_size; RMSNorm (rmsnorm true)
    # or torch LayerNorm with bias, eps layernorm_epsilon; query_key_value [q; k; v] rows
    # with multi_query_attention (multi_query_group_num KV heads), else view(heads, 3 hd)
    # per head; a bias iff add_qkv_bias; dense / dense_h_to_4h / dense_4h_to_h biases iff
    # add_bias_linear; MLP dense_4h_to_h(silu(a) * b), a, b = dense_h_to_4h(x).chunk(2);
    # rotary on pairs (2i, 2i+1) of the first kv_channels / 2 dims, inv_freq over those
    # dims; scores / sqrt(kv_channels) (apply_query_key_layer_scaling divides by the layer
    # number and multiplies back: the identity here); final_layernorm when
    # post_layer_norm; output_layer untied; the context seq_length.
    "chatglm": dict(tie=False, eps=1e-5, theta=10000.0, act_keys=(), act="silu",
                    qkv_bias="chatglm", fused=True, sliding="none", names="chatglm"),
    # BaichuanConfig / modeling_baichuan (remote code of baichuan-inc's Baichuan-7B,
    # Baichuan-13B, Baichuan2-7B, Baichuan2-13B): Llama's block (RMSNorm, silu gated MLP
    # gate_proj / up_proj / down_proj), self_attn.W_pack(x).unflatten(-1, (3, hidden)) ->
    # q, k, v, no biases, o_proj, untied lm_head. The 7B files rotate (RotaryEmbedding over
    # the head, base 10000) and their config classes define max_position_embeddings; the
    # 13B files add ALiBi after the 1/sqrt(d) scale and their classes define
    # model_max_length only. Baichuan 2 (both sizes) has NormHead: F.normalize(lm_head) in
    # eval; its config classes define z_loss_weight and its vocabulary is 125696 tokens.
    "baichuan": dict(tie=False, eps=1e-6, theta=10000.0, act_keys=("hidden_act",), act="silu",
                     qkv_bias="never", fused="qkv", sliding="none", names="baichuan"),
    "exaone": dict(tie=True, eps=1e-5, theta=10000.0, act_keys=("activation_function",),
                   act="silu", qkv_bias="never", sliding="none", names="exaone"),
    "stablelm": dict(tie=False, eps=1e-5, theta=10000.0, act_keys=("hidden_act",), act="silu",
                     qkv_bias="use_qkv_bias", sliding="none", keys="stablelm"),
    "stablelm_epoch": dict(tie=False, eps=1e-5, theta=10000.0, act_keys=("hidden_act",), act="silu",
                           qkv_bias="use_qkv_bias", sliding="none", keys="stablelm_epoch"),
}

# The classic decoders' config keys (transformers configuration_*.py / modeling_*.py):
#   eps_key: the LayerNorm eps; rotary_pct: (key, default) of the rotated share of each
#   head; theta_key: the rope base's key (older spelling; rope_theta wins when present);
#   parallel: (key, default) of the parallel attention/MLP residual; norm: "layer"
#   (LayerNorm with weight and bias); gated: False for the ungated MLP (up, act, down).
CLASSIC = {
    "gpt_neox": dict(eps_key="layer_norm_eps", rotary_pct=("rotary_pct", 0.25),
                     theta_key="rotary_emb_base", parallel=("use_parallel_residual", True),
                     norm="layer", gated=False),
    "gpt2": dict(eps_key="layer_norm_epsilon", rotary_pct=("partial_rotary_factor", 1.0),
                 theta_key="rope_theta", parallel=(None, False), norm="layer", gated=False,
                 aliases={"n_embd": "hidden_size", "n_layer": "num_hidden_layers",
                          "n_head": "num_attention_heads", "n_positions": "max_position_embeddings"},
                 learned_positions=True),
    "olmo": dict(eps_key=None, rotary_pct=("partial_rotary_factor", 1.0), theta_key="rope_theta",
                 parallel=(None, False), norm="layer_noweight", gated=True),
    "starcoder2": dict(eps_key="norm_epsilon", rotary_pct=("partial_rotary_factor", 1.0),
                       theta_key="rope_theta", parallel=(None, False), norm="layer", gated=False),
    "falcon": dict(eps_key="layer_norm_epsilon", rotary_pct=("partial_rotary_factor", 1.0),
                   theta_key="rope_theta", parallel=("parallel_attn", True), norm="layer",
                   gated=False),
    "bloom": dict(eps_key="layer_norm_epsilon", rotary_pct=("partial_rotary_factor", 1.0),
                  theta_key="rope_theta", parallel=(None, False), norm="layer", gated=False,
                  aliases={"n_layer": "num_hidden_layers", "n_head": "num_attention_heads"},
                  ffn_mult=4, alibi="bloom"),
    "mpt": dict(eps_key="layer_norm_epsilon", rotary_pct=("partial_rotary_factor", 1.0),
                theta_key="rope_theta", parallel=(None, False), norm="layer", gated=False,
                aliases={"d_model": "hidden_size", "n_heads": "num_attention_heads",
                         "n_layers": "num_hidden_layers", "max_seq_len": "max_position_embeddings"},
                ffn_mult=4, alibi="mpt"),
    "gptj": dict(eps_key="layer_norm_epsilon", rotary_pct=("partial_rotary_factor", 1.0),
                 theta_key="rope_theta", parallel=(None, True), norm="layer", gated=False,
                 aliases={"n_embd": "hidden_size", "n_layer": "num_hidden_layers",
                          "n_head": "num_attention_heads", "n_positions": "max_position_embeddings"},
                 inner_key="n_inner", rotary_dim_key="rotary_dim", interleaved=True),
    "cohere": dict(eps_key="layer_norm_eps", rotary_pct=("partial_rotary_factor", 1.0),
                   theta_key="rope_theta", parallel=(None, True), norm="layer", gated=True,
                   interleaved=True),
    "stablelm": dict(eps_key="layer_norm_eps", rotary_pct=("partial_rotary_factor", 0.25),
                     theta_key="rope_theta", parallel=("use_parallel_residual", False),
                     norm="layer", gated=True),
    "stablelm_epoch": dict(eps_key="norm_eps", rotary_pct=("rope_pct", 0.25),
                           theta_key="rope_theta", parallel=(None, False), norm="layer", gated=True),
    "phi": dict(eps_key="layer_norm_eps", rotary_pct=("partial_rotary_factor", 0.5),
                theta_key="rope_theta", parallel=(None, True), norm="layer", gated=False),
}

# Mixture-of-experts semantics per config class (transformers modeling_*.py):
#   experts_key / experts, top_k: the number of experts key and the class defaults
#   router: "topk_softmax" (Mixtral: softmax, top-k, renormalize -- the same weights as a
#           softmax over the k logits; GraniteMoeTopKGating: top-k of the logits then
#           softmax over them) or "softmax_topk" (Qwen2/3-MoE, OLMoE: softmax, top-k,
#           renormalized only when norm_topk_prob)
#   norm: None (the modeling code always normalizes / never reads the key) or the class
#         default of norm_topk_prob
#   moe_size: the key of each expert's width (None: intermediate_size)
#   shared: the shared expert's size key and default (None: none); shared_gate: its
#           sigmoid gate (Qwen2-MoE's shared_expert_gate)
#   sparse_step: decoder_sparse_step / mlp_only_layers pick the sparse layers
#   layout: the expert tensor names the class's checkpoints use
MOE = {
    "mixtral": dict(experts_key="num_local_experts", experts=8, top_k=2, router="topk_softmax",
                    norm=None, moe_size=None, shared=None, layout="w123"),
    "qwen2_moe": dict(experts_key="num_experts", experts=60, top_k=4, router="softmax_topk",
                      norm=False, moe_size=("moe_intermediate_size", 1408),
                      shared=("shared_expert_intermediate_size", 5632), shared_gate=True,
                      sparse_step=True, layout="proj"),
    "qwen3_moe": dict(experts_key="num_experts", experts=128, top_k=8, router="softmax_topk",
                      norm=False, moe_size=("moe_intermediate_size", 768), shared=None,
                      sparse_step=True, layout="proj"),
    "olmoe": dict(experts_key="num_experts", experts=64, top_k=8, router="softmax_topk",
                  norm=False, moe_size=None, shared=None, layout="proj"),
    "granitemoe": dict(experts_key="num_local_experts", experts=8, top_k=2,
                       router="topk_softmax", norm=None, moe_size=None, shared=None,
                       layout="granite"),
    "granitemoeshared": dict(experts_key="num_local_experts", experts=8, top_k=2,
                             router="topk_softmax", norm=None, moe_size=None,
                             shared=("shared_intermediate_size", 0), layout="granite"),
    # GptOssTopKRouter: logits = x W^T + b, top-k, softmax over the k; GptOssExperts:
    # gate_up = x @ W_gu[e] + b_gu[e] (columns gate, up, gate, up, ...), g = min(gate,
    # limit), u = clamp(up, -limit, limit), ((u + 1) * g * sigmoid(1.702 g)) @ W_d[e] + b_d[e]
    "gpt_oss": dict(experts_key="num_local_experts", experts=128, top_k=4, router="topk_softmax",
                    norm=None, moe_size=None, shared=None, layout="gptoss", biases=True,
                    swiglu_limit=7.0),
}

# model_type of a multimodal wrapper -> the model_type of its text_config's family.
TEXT_WRAPPERS = {"gemma3": "gemma3_text"}

ACTIVATIONS = ("silu", "swish", "gelu", "gelu_pytorch_tanh", "gelu_new", "gelu_fast", "relu",
               "bloom_gelu")

ROPE_TYPES = ("default", "linear", "dynamic", "llama3", "yarn", "longrope")


@dataclass
class RopeSpec:
    """RoPE of one layer kind. theta: base; scaling: the rope_scaling dict with
    rope_type normalized ('default' when none); rotary_dim: rotated dims of head_dim
    (int(head_dim * partial_rotary_factor)); max_position_embeddings and
    original_max_position_embeddings as the rope functions of transformers read them."""
    theta: float
    scaling: dict
    rotary_dim: int
    max_position_embeddings: int
    original_max_position_embeddings: Optional[int]

    @property
    def rope_type(self):
        return self.scaling.get("rope_type", "default")


@dataclass
class Facts:
    model_type: str
    family: dict
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    max_position_embeddings: int
    rms_norm_eps: float
    norm_offset: float
    hidden_act: str
    tie_word_embeddings: bool
    qkv_bias: bool           # config says q/k/v projections carry a bias
    o_bias: bool             # config says o_proj carries a bias
    mlp_bias: bool           # config says gate/up/down carry a bias
    qk_norm: Optional[str]   # None | "head" | "full"
    block: str               # "pre" | "sandwich" | "post"
    fused: bool              # Phi-3 fused qkv_proj / gate_up_proj
    embed_multiplier: Optional[float]   # None, or the factor embeddings are multiplied by
    embed_multiplier_is_sqrt_hidden: bool
    attn_scale: float        # softmax scale of q.k
    attn_logit_softcapping: Optional[float]
    final_logit_softcapping: Optional[float]
    residual_multiplier: float
    logits_scaling: float    # logits are divided by this (Granite)
    layer_types: list        # per layer "full_attention" | "sliding_attention"
    sliding_window: Optional[int]
    rope_global: RopeSpec
    rope_local: RopeSpec     # rope of sliding layers (== rope_global unless dual base)
    use_rope: list = field(default_factory=list)  # per layer bool (SmolLM3 NoPE layers)
    # mixture of experts (num_experts 0: dense; see MOE)
    num_experts: int = 0
    top_k: int = 0
    moe_intermediate_size: int = 0
    router: Optional[str] = None       # "topk_softmax" | "softmax_topk"
    norm_topk_prob: bool = True
    shared_intermediate_size: int = 0
    shared_gate: bool = False
    sparse_layers: list = field(default_factory=list)  # per layer bool
    experts_layout: Optional[str] = None  # class default tensor names: w123 | proj | granite | gptoss
    moe_biases: bool = False           # router and expert biases (gpt-oss)
    swiglu_limit: Optional[float] = None  # gpt-oss's clamped SwiGLU
    attn_sinks: bool = False           # per-head attention sinks (gpt-oss)
    # classic decoders (CLASSIC): their tensor names are the class's own
    classic: Optional[str] = None  # None | "gpt_neox"
    norm: str = "rms"              # "rms" | "layer" (LayerNorm: mean, variance, w, b)
    parallel: bool = False         # x + attn(ln1(x)) + mlp(ln2(x))
    gated: bool = True             # False: mlp = down(act(up(x)))
    # Falcon (FalconAttention._split_heads / FalconDecoderLayer): "grouped" fused
    # query_key_value rows, per KV group [q x (heads / kv); k; v]; the parallel block's
    # norms: 1 (input_layernorm feeds both) or 2 (ln_attn, ln_mlp)
    qkv_layout: Optional[str] = None
    parallel_norms: int = 1
    rope_interleaved: bool = False  # GPT-J's rotate_every_two: pairs (2i, 2i+1)
    alibi: Optional[str] = None    # ALiBi instead of rotary: "bloom" (slope * key
                                   # position) or "mpt" (slope * (key - last key)), both
                                   # after the 1/sqrt(d) scale; "baichuan" (Baichuan-13B's
                                   # _gen_alibi_mask: slope * key position, after it);
                                   # "falcon" (slope * key position joined to q.k before it)
    lm_head_norm: bool = False     # Baichuan 2's NormHead: lm_head rows / their L2 norm


def text_config(config):
    """The dict holding the decoder's facts: config itself, or its text_config for
    multimodal wrappers (Gemma 3), with the wrapper's model_type mapped to the text one."""
    if "text_config" in config and isinstance(config["text_config"], dict):
        tc = dict(config["text_config"])
        if "model_type" not in tc:
            mt = config.get("model_type")
            if mt not in TEXT_WRAPPERS:
                raise NotImplementedError("model_type=%s: text_config without a model_type" % mt)
            tc["model_type"] = TEXT_WRAPPERS[mt]
        return tc
    return config


def _get(cfg, key, default):
    """cfg[key] unless absent or null (transformers treats an explicit null like the
    class default for these keys)."""
    v = cfg.get(key)
    return default if v is None else v


def _rope_params(cfg, fam, layer_type):
    """(theta, scaling dict or None) for one layer type, from rope_theta/rope_scaling
    (transformers 4.x) or rope_parameters (5.x, possibly keyed by layer type)."""
    rp = cfg.get("rope_parameters")
    if isinstance(rp, dict) and rp:
        if layer_type in rp and isinstance(rp[layer_type], dict):
            rp = rp[layer_type]
        elif "full_attention" in rp and isinstance(rp["full_attention"], dict):
            rp = rp["full_attention"]
        theta = rp.get("rope_theta")
        scaling = {k: v for k, v in rp.items() if k != "rope_theta"}
        if theta is None:
            theta = fam["theta"]
        return float(theta), scaling
    if layer_type == "sliding_attention" and fam.get("local_theta") is not None:
        # Gemma 3: local layers use rope_local_base_freq and no scaling.
        return float(_get(cfg, "rope_local_base_freq", fam["local_theta"])), None
    return float(_get(cfg, "rope_theta", fam["theta"])), cfg.get("rope_scaling")


def _normalize_scaling(scaling):
    if not scaling:
        return {"rope_type": "default"}
    s = dict(scaling)
    t = s.get("rope_type", s.get("type"))
    if t is None:
        t = "default"
    if t == "su":  # Phi-3's early name of longrope
        t = "longrope"
    if t not in ROPE_TYPES:
        raise NotImplementedError("rope_scaling rope_type=%r is not implemented by the reference" % t)
    s["rope_type"] = t
    s.pop("type", None)
    return s


def _layer_types(cfg, fam, n_layers):
    lt = cfg.get("layer_types")
    if isinstance(lt, list):
        if len(lt) < n_layers:
            raise ValueError("layer_types has %d entries, num_hidden_layers=%d" % (len(lt), n_layers))
        for t in lt:
            if t not in ("full_attention", "sliding_attention"):
                raise NotImplementedError("layer_types entry %r is not implemented" % t)
        return list(lt[:n_layers])
    kind = fam.get("sliding", "none")
    window = cfg.get("sliding_window", fam.get("sliding_default"))
    if kind == "none" or window is None:
        return ["full_attention"] * n_layers
    if kind == "all":
        return ["sliding_attention"] * n_layers
    if kind == "qwen":
        # Qwen2Config: sliding_window only when use_sliding_window; layers at index
        # >= max_window_layers slide.
        if not cfg.get("use_sliding_window", False):
            return ["full_attention"] * n_layers
        mwl = _get(cfg, "max_window_layers", 28)
        return ["sliding_attention" if i >= mwl else "full_attention" for i in range(n_layers)]
    if kind == "alternate":
        return ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n_layers)]
    if kind == "pattern":
        p = int(_get(cfg, "sliding_window_pattern", fam["sliding_pattern"]))
        return ["sliding_attention" if (i + 1) % p else "full_attention" for i in range(n_layers)]
    raise AssertionError(kind)


def facts(config):
    """Facts of a config.json dict (see Facts). Raises NotImplementedError for families
    and math-changing keys the reference does not implement."""
    cfg = text_config(config)
    mt = cfg.get("model_type")
    if mt not in FAMILIES:
        raise NotImplementedError("model_type=%r is not implemented by the reference" % mt)
    fam = FAMILIES[mt]
    classic = CLASSIC.get(fam.get("keys", fam.get("classic")))
    if mt == "olmo" and cfg.get("clip_qkv") is not None:
        raise NotImplementedError("clip_qkv is not implemented by the reference")
    if mt == "stablelm_epoch" and float(_get(cfg, "rotary_scaling_factor", 1.0)) != 1.0:
        raise NotImplementedError("rotary_scaling_factor != 1 is not implemented by the reference")
    if mt == "qwen":  # QWenConfig's own keys, as modeling_qwen reads them
        cfg = dict(cfg)
        if not _get(cfg, "no_bias", True) or not _get(cfg, "scale_attn_weights", True) \
                or cfg.get("use_cache_quantization"):
            raise NotImplementedError("qwen no_bias / scale_attn_weights false or cache "
                                      "quantization is not implemented by the reference")
        cfg["head_dim"] = int(_get(cfg, "kv_channels", 128))
        cfg["intermediate_size"] = int(cfg["intermediate_size"]) // 2
        cfg["rms_norm_eps"] = _get(cfg, "layer_norm_epsilon", fam["eps"])
        cfg["partial_rotary_factor"] = _get(cfg, "rotary_pct", 1.0)
        cfg["rope_theta"] = _get(cfg, "rotary_emb_base", 10000)
        cfg["max_position_embeddings"] = cfg["seq_length"]
        cfg.pop("num_key_value_heads", None)
    if mt == "exaone":  # ExaoneConfig's own keys, as its modeling code reads them
        cfg = dict(cfg)
        cfg["num_hidden_layers"] = cfg["num_layers"]
        cfg["rms_norm_eps"] = _get(cfg, "layer_norm_epsilon", fam["eps"])
        cfg["intermediate_size"] = _get(cfg, "intermediate_size", 4 * int(cfg["hidden_size"]))
    glm = {}
    if mt == "chatglm":  # ChatGLMConfig's own keys, as modeling_chatglm reads them
        cfg = dict(cfg)
        if cfg.get("apply_residual_connection_post_layernorm") or not _get(cfg, "post_layer_norm", True) \
                or cfg.get("quantization_bit") or cfg.get("pre_seq_len") is not None:
            raise NotImplementedError("chatglm apply_residual_connection_post_layernorm, no "
                                      "post_layer_norm, quantization_bit or pre_seq_len is not "
                                      "implemented by the reference")
        mq = bool(_get(cfg, "multi_query_attention", False))
        cfg["num_hidden_layers"] = cfg["num_layers"]
        cfg["vocab_size"] = cfg["padded_vocab_size"]
        cfg["head_dim"] = int(_get(cfg, "kv_channels", 128))
        cfg["intermediate_size"] = int(_get(cfg, "ffn_hidden_size", 13696))
        cfg["num_key_value_heads"] = (int(_get(cfg, "multi_query_group_num", 1)) if mq
                                      else int(cfg["num_attention_heads"]))
        cfg["rms_norm_eps"] = _get(cfg, "layernorm_epsilon", fam["eps"])
        cfg["partial_rotary_factor"] = 0.5
        cfg["rope_theta"] = fam["theta"] * float(_get(cfg, "rope_ratio", 1))
        cfg.pop("rope_scaling", None)
        cfg["max_position_embeddings"] = int(_get(cfg, "seq_length", 2048))
        glm = dict(norm="rms" if _get(cfg, "rmsnorm", True) else "layer", rope_interleaved=True,
                   qkv_layout=None if mq else "grouped")
    alibi_kind, lm_head_norm = None, False
    if mt == "baichuan":  # which release's modeling file: by the keys its class defines
        if cfg.get("max_position_embeddings") is not None:
            pass  # Baichuan-7B / Baichuan2-7B: RotaryEmbedding(head_dim, base 10000)
        elif cfg.get("model_max_length") is not None:  # Baichuan-13B / Baichuan2-13B
            alibi_kind = "baichuan"
            cfg = dict(cfg, max_position_embeddings=cfg["model_max_length"])
        else:
            raise ValueError("baichuan config names neither max_position_embeddings nor "
                             "model_max_length")
        if "z_loss_weight" in cfg or int(cfg["vocab_size"]) == 125696:
            lm_head_norm = True  # Baichuan 2's NormHead
        elif int(cfg["vocab_size"]) != 64000:
            raise ValueError("baichuan config: neither Baichuan 1 nor Baichuan 2's vocabulary")
    falcon = {}
    if mt == "falcon":
        if cfg.get("alibi"):  # FalconModel: build_alibi_tensor, no rotary (config.rotary)
            alibi_kind = "falcon"
        cfg = dict(cfg)
        heads = int(cfg["num_attention_heads"])
        new_arch = bool(cfg.get("new_decoder_architecture", False))
        mq = bool(_get(cfg, "multi_query", True))
        nkv = int(_get(cfg, "num_kv_heads", heads))
        n_ln = cfg.get("num_ln_in_parallel_attn")
        if new_arch:
            if not _get(cfg, "parallel_attn", True):
                raise ValueError("new_decoder_architecture needs parallel_attn")
            kv_heads, norms = nkv, (2 if n_ln is None else int(n_ln))
        else:
            if n_ln == 2:
                raise ValueError("num_ln_in_parallel_attn=2 needs new_decoder_architecture")
            kv_heads, norms = (1 if mq else heads), 1
            if not mq and nkv != heads:
                raise ValueError("num_kv_heads must equal num_attention_heads")
        cfg["num_key_value_heads"] = kv_heads
        cfg["intermediate_size"] = _get(cfg, "ffn_hidden_size", 4 * int(cfg["hidden_size"]))
        cfg["attention_bias"] = bool(_get(cfg, "bias", False))
        falcon = dict(qkv_layout="grouped", parallel_norms=norms)
    if classic:
        # the class's own key names, read as the modeling code reads them
        cfg = dict(cfg)
        for k, v in classic.get("aliases", {}).items():
            if k in cfg:
                cfg[v] = cfg[k]
        if classic.get("learned_positions"):
            cfg["intermediate_size"] = _get(cfg, "n_inner", 4 * int(cfg["hidden_size"]))
        if classic.get("inner_key"):
            cfg["intermediate_size"] = _get(cfg, classic["inner_key"], 4 * int(cfg["hidden_size"]))
        if classic.get("ffn_mult"):
            cfg["intermediate_size"] = classic["ffn_mult"] * int(cfg["hidden_size"])
        if mt == "mpt":
            ac = cfg.get("attn_config") or {}
            for k in ("clip_qkv", "qk_ln", "prefix_lm"):
                if ac.get(k):
                    raise NotImplementedError("attn_config.%s is not implemented by the reference" % k)
            if float(_get(cfg, "expansion_ratio", 4)) != 4 or not _get(cfg, "no_bias", True):
                raise NotImplementedError("MPT expansion_ratio != 4 / no_bias false")
        if mt == "cohere" and cfg.get("use_qk_norm"):
            raise NotImplementedError("cohere use_qk_norm is not implemented by the reference")
        if mt == "bloom" and cfg.get("apply_residual_connection_post_layernorm"):
            raise NotImplementedError("apply_residual_connection_post_layernorm=true is not "
                                      "implemented by the reference")
        cfg["rms_norm_eps"] = _get(cfg, classic["eps_key"], fam["eps"]) if classic["eps_key"] else fam["eps"]
        k, d = classic["rotary_pct"]
        cfg["partial_rotary_factor"] = _get(cfg, k, d)
        if classic.get("rotary_dim_key") and cfg.get(classic["rotary_dim_key"]) is not None:
            hd = int(cfg["hidden_size"]) // int(cfg["num_attention_heads"])
            cfg["partial_rotary_factor"] = int(cfg[classic["rotary_dim_key"]]) / hd
        if cfg.get("rope_theta") is None and cfg.get(classic["theta_key"]) is not None:
            cfg["rope_theta"] = cfg[classic["theta_key"]]
        if cfg.get("attention_bias") is None:
            cfg["attention_bias"] = fam.get("attention_bias", False)
    hidden = int(cfg["hidden_size"])
    heads = int(cfg["num_attention_heads"])
    kv = int(_get(cfg, "num_key_value_heads", heads))
    head_dim = int(_get(cfg, "head_dim", hidden // heads))
    if fam.get("head_dim_from_hidden"):  # Cohere2Config overwrites the key
        head_dim = hidden // heads
    n_layers = int(cfg["num_hidden_layers"])
    act = None
    for k in fam["act_keys"]:
        if cfg.get(k) is not None:
            act = cfg[k]
            break
    if act is None:
        act = fam["act"]
    if act not in ACTIVATIONS:
        raise NotImplementedError("activation %r is not implemented by the reference" % act)
    attn_bias = bool(_get(cfg, "attention_bias", False))
    qb = fam.get("qkv_bias", "never")
    qkv_bias = True if qb in ("always", "always_all") else (attn_bias if qb == "attention_bias" else False)
    if qb == "use_qkv_bias":
        qkv_bias = bool(_get(cfg, "use_qkv_bias", False))
    if qb == "use_bias":
        qkv_bias = o_bias = bool(_get(cfg, "use_bias", True))
    o_bias = True if qb == "always_all" else (attn_bias if qb == "attention_bias" else False)
    mlp_bias = bool(_get(cfg, "mlp_bias", False)) if fam.get("mlp_bias") else False
    if qb == "use_bias":
        mlp_bias = qkv_bias
    if qb == "internlm2":  # wqkv and wo by config.bias (default True), MLP never
        qkv_bias = o_bias = bool(_get(cfg, "bias", True))
        mlp_bias = False
    if qb == "bias":  # Falcon: every FalconLinear by config.bias
        qkv_bias = o_bias = mlp_bias = attn_bias
    if qb == "chatglm":  # query_key_value by add_qkv_bias, the other Linears by add_bias_linear
        qkv_bias = bool(_get(cfg, "add_qkv_bias", False))
        o_bias = mlp_bias = bool(_get(cfg, "add_bias_linear", False))
    tie = cfg.get("tie_word_embeddings", config.get("tie_word_embeddings"))
    tie = fam["tie"] if tie is None else bool(tie)

    if fam.get("granite"):
        embed_mult = float(_get(cfg, "embedding_multiplier", 1.0))
        attn_scale = float(_get(cfg, "attention_multiplier", 1.0))
        resid = float(_get(cfg, "residual_multiplier", 1.0))
        logits_scaling = float(_get(cfg, "logits_scaling", 1.0))
    elif fam.get("mup"):
        embed_mult = float(_get(cfg, "scale_emb", 1.0))
        attn_scale = head_dim ** -0.5
        resid = float(_get(cfg, "scale_depth", 1.0)) / math.sqrt(int(cfg["num_hidden_layers"]))
        logits_scaling = hidden / float(_get(cfg, "dim_model_base", 1.0))
    else:
        embed_mult = math.sqrt(hidden) if fam.get("embed_scale") == "sqrt_hidden" else None
        if "query_pre_attn_scalar" in fam:
            attn_scale = float(_get(cfg, "query_pre_attn_scalar", fam["query_pre_attn_scalar"])) ** -0.5
        else:
            attn_scale = head_dim ** -0.5
        if mt == "mpt" and (cfg.get("attn_config") or {}).get("softmax_scale") is not None:
            attn_scale = float(cfg["attn_config"]["softmax_scale"])
        resid = 1.0
        logits_scaling = 1.0
        if mt in ("cohere", "cohere2"):  # Cohere(2)ForCausalLM: logits * logit_scale
            logits_scaling = 1.0 / float(_get(cfg, "logit_scale", 0.0625))
    attn_cap = cfg.get("attn_logit_softcapping", fam.get("attn_logit_softcapping")) \
        if "attn_logit_softcapping" in fam else None
    final_cap = cfg.get("final_logit_softcapping", fam.get("final_logit_softcapping")) \
        if "final_logit_softcapping" in fam else None

    layer_types = _layer_types(cfg, fam, n_layers)
    window = cfg.get("sliding_window", fam.get("sliding_default"))
    if "sliding_attention" in layer_types and window is None:
        raise ValueError("layer_types has sliding layers but sliding_window is null")

    max_pos = int(_get(cfg, "max_position_embeddings", 2048))
    orig_max = cfg.get("original_max_position_embeddings")  # Phi-3 keeps it top-level
    prf = float(_get(cfg, "partial_rotary_factor", 1.0))
    rotary_dim = int(head_dim * prf)

    def rope(layer_type):
        theta, scaling = _rope_params(cfg, fam, layer_type)
        return RopeSpec(theta=theta, scaling=_normalize_scaling(scaling), rotary_dim=rotary_dim,
                        max_position_embeddings=max_pos,
                        original_max_position_embeddings=None if orig_max is None else int(orig_max))

    if alibi_kind or (classic and (classic.get("learned_positions") or classic.get("alibi"))):
        use_rope = [False] * n_layers
    elif fam.get("rope_sliding_only"):  # Cohere2Attention: RoPE iff its window is set
        use_rope = [t == "sliding_attention" and window is not None for t in layer_types]
    elif fam.get("no_rope"):
        nrl = cfg.get("no_rope_layers")
        if nrl is None:
            interval = int(_get(cfg, "no_rope_layer_interval", 4))
            nrl = [int((i + 1) % interval != 0) for i in range(n_layers)]
        use_rope = [bool(x) for x in nrl[:n_layers]]
    else:
        use_rope = [True] * n_layers

    moe = {}
    if fam.get("moe"):
        spec = MOE[fam["moe"]]
        E = int(_get(cfg, spec["experts_key"], spec["experts"]))
        k = int(_get(cfg, "num_experts_per_tok", spec["top_k"]))
        msz = spec["moe_size"]
        ei = int(_get(cfg, msz[0], msz[1])) if msz else int(cfg["intermediate_size"])
        sh = spec["shared"]
        si = int(_get(cfg, sh[0], sh[1])) if sh else 0
        norm = True if spec["norm"] is None else bool(_get(cfg, "norm_topk_prob", spec["norm"]))
        if spec.get("sparse_step"):
            step = int(_get(cfg, "decoder_sparse_step", 1))
            dense = set(_get(cfg, "mlp_only_layers", []))
            sparse = [E > 0 and i not in dense and (i + 1) % step == 0 for i in range(n_layers)]
        else:
            sparse = [True] * n_layers
        moe = dict(num_experts=E, top_k=k, moe_intermediate_size=ei, router=spec["router"],
                   norm_topk_prob=norm, shared_intermediate_size=si,
                   shared_gate=bool(spec.get("shared_gate")) and si > 0, sparse_layers=sparse,
                   experts_layout=spec["layout"], moe_biases=bool(spec.get("biases")),
                   swiglu_limit=(float(_get(cfg, "swiglu_limit", spec["swiglu_limit"]))
                                 if spec.get("swiglu_limit") else None))
    else:
        for key in ("num_local_experts", "num_experts", "num_experts_per_tok", "experts_per_token"):
            if cfg.get(key):
                raise NotImplementedError("%s=%r in a %s config is not implemented" % (key, cfg[key], mt))

    out = Facts(
        model_type=mt, family=fam, hidden_size=hidden,
        intermediate_size=int(cfg["intermediate_size"]), num_hidden_layers=n_layers,
        num_attention_heads=heads, num_key_value_heads=kv, head_dim=head_dim,
        vocab_size=int(cfg["vocab_size"]), max_position_embeddings=max_pos,
        rms_norm_eps=float(_get(cfg, "rms_norm_eps", fam["eps"])),
        norm_offset=float(fam.get("norm_offset", 0.0)), hidden_act=act,
        tie_word_embeddings=tie, qkv_bias=qkv_bias, o_bias=o_bias, mlp_bias=mlp_bias,
        qk_norm=fam.get("qk_norm"), block=fam.get("block", "pre"), fused=bool(fam.get("fused")),
        embed_multiplier=embed_mult,
        embed_multiplier_is_sqrt_hidden=fam.get("embed_scale") == "sqrt_hidden",
        attn_scale=attn_scale,
        attn_logit_softcapping=None if attn_cap is None else float(attn_cap),
        final_logit_softcapping=None if final_cap is None else float(final_cap),
        residual_multiplier=resid, logits_scaling=logits_scaling,
        layer_types=layer_types, sliding_window=None if window is None else int(window),
        rope_global=rope("full_attention"), rope_local=rope("sliding_attention"),
        use_rope=use_rope, attn_sinks=bool(fam.get("sinks")), **moe,
        classic=fam.get("classic"), norm=classic["norm"] if classic else "rms",
        parallel=(bool(_get(cfg, classic["parallel"][0], classic["parallel"][1]))
                  if classic and classic["parallel"][0] else bool(classic and classic["parallel"][1])),
        gated=classic["gated"] if classic else True,
        **(falcon or ({"qkv_layout": "grouped"} if fam.get("names") == "internlm2" else {})),
        alibi=alibi_kind or ((classic.get("alibi") or None) if classic else None),
        lm_head_norm=lm_head_norm,
        rope_interleaved=bool(classic and classic.get("interleaved")),
    )
    return replace(out, **glm) if glm else out
