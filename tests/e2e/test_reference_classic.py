"""The classic decoder classes (issue 28) against the float64 reference.

Each class: a shrunk checkpoint written from its real config (tests/data/configs, a
byte-exact corpus copy, or the public config written inline below), with the class's own
tensor names (tests/ref/gen_checkpoint.py); facet run in F32 weights and an F32 KV cache
must give logits within 1e-4 relative error of tests/ref/reference.py (written from
transformers' modeling code, independently of the C) over a 96-token prompt, and the same
32 greedy tokens while the reference's top-2 margin exceeds 1e-3.

Classes: gpt_neox (RedPajama-INCITE: sequential residual, full rotary; Pythia-1B:
parallel residual, rotary_pct 0.25); phi (Phi-2: one LayerNorm feeding attention and MLP
in parallel, partial_rotary_factor 0.4, lm_head bias); stablelm (StableLM 2 1.6B: LayerNorm,
q/k/v bias, partial rotary 0.25; and with use_parallel_residual); stablelm_epoch
(stable-code-3b's remote-code config: norm_eps, rope_pct, rope_theta 1e6); starcoder2
(StarCoder2-3B: LayerNorm, biases, c_fc/c_proj gelu MLP, GQA 12:1, a 16-token window);
olmo (OLMo-1B: the non-parametric LayerNorm, tied); gpt2 (gpt2-xl, corpus: Conv1D
projections, learned positions, no rotary, n_embd-style keys, tied); falcon
(falcon-7b-instruct, corpus: multi-query, one norm in parallel; falcon-40b: the new
decoder architecture, KV groups, two norms; and the sequential per-head layout with
biases); bloom (bloom-560m: ALiBi over 8 and 12 heads, the embeddings' LayerNorm); mpt
(mpt-7b: ALiBi, no biases, fused Wqkv; and 12 heads with a softmax_scale); gptj (GPT-J-6B:
rotary in pairs on a quarter of the head, one ln_1 in parallel, lm_head bias); cohere
(c4ai-command-r-v01: bias-free LayerNorm feeding attention and the gated MLP in parallel,
interleaved rotary, logit_scale; and with 2 KV heads); internlm2 (internlm2-chat-7b, corpus:
the grouped wqkv, without and with biases); minicpm (MiniCPM-2B: muP scale_emb, scale_depth,
dim_model_base as the embedding, residual and logits multipliers; and 4 heads in 2 KV groups);
exaone (EXAONE-3.5-2.4B: Llama's block under transformer.h.N.attn.attention / mlp.c_fc_0,
c_fc_1, c_proj names, GQA, llama3 rope; and untied with a null intermediate_size); qwen
(Qwen-7B, corpus: the Linear c_attn with its bias, the w1 / w2 MLP; and half-head rotary);
chatglm (chatglm3-6b, corpus, and GLM-4-9B: multi-query query_key_value blocks, pairwise
rotary over half the head, rope_ratio; without multi-query; LayerNorm with every bias).
"""

import base64
import json
import os

import numpy as np
import pytest

import compare

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG_DIR = os.path.join(REPO, "tests", "data", "configs")

# EleutherAI/pythia-1b config.json as published (public), written inline.
PYTHIA_1B = {
    "architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "bos_token_id": 0,
    "eos_token_id": 0, "hidden_act": "gelu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 8192, "layer_norm_eps": 1e-05, "max_position_embeddings": 2048,
    "num_attention_heads": 8, "num_hidden_layers": 16, "rotary_emb_base": 10000,
    "rotary_pct": 0.25, "tie_word_embeddings": False, "torch_dtype": "float16",
    "transformers_version": "4.24.0", "use_cache": True, "use_parallel_residual": True,
    "vocab_size": 50304,
}

# microsoft/phi-2 config.json as published (public), written inline.
PHI_2 = {
    "architectures": ["PhiForCausalLM"], "model_type": "phi", "attention_dropout": 0.0,
    "bos_token_id": 50256, "embd_pdrop": 0.0, "eos_token_id": 50256, "hidden_act": "gelu_new",
    "hidden_size": 2560, "initializer_range": 0.02, "intermediate_size": 10240,
    "layer_norm_eps": 1e-05, "max_position_embeddings": 2048, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "partial_rotary_factor": 0.4,
    "qk_layernorm": False, "resid_pdrop": 0.1, "rope_scaling": None, "rope_theta": 10000.0,
    "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.37.0",
    "use_cache": True, "vocab_size": 51200,
}

# stabilityai/stablelm-2-1_6b config.json as published (public), written inline.
STABLELM_2_1_6B = {
    "architectures": ["StableLmForCausalLM"], "model_type": "stablelm", "bos_token_id": 100257,
    "eos_token_id": 100257, "hidden_act": "silu", "hidden_dropout": 0.0, "hidden_size": 2048,
    "initializer_range": 0.02, "intermediate_size": 5632, "layer_norm_eps": 1e-05,
    "max_position_embeddings": 4096, "num_attention_heads": 32, "num_hidden_layers": 24,
    "num_key_value_heads": 32, "partial_rotary_factor": 0.25, "qk_layernorm": False,
    "rope_scaling": None, "rope_theta": 10000, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "transformers_version": "4.38.0", "use_cache": True,
    "use_parallel_residual": False, "use_qkv_bias": True, "vocab_size": 100352,
}

# bigcode/starcoder2-3b config.json as published (public), written inline.
STARCODER2_3B = {
    "architectures": ["Starcoder2ForCausalLM"], "model_type": "starcoder2",
    "attention_dropout": 0.1, "residual_dropout": 0.1, "embedding_dropout": 0.1,
    "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "gelu_pytorch_tanh", "hidden_size": 3072,
    "initializer_range": 0.018042, "intermediate_size": 12288, "max_position_embeddings": 16384,
    "mlp_type": "default", "norm_epsilon": 1e-05, "norm_type": "layer_norm",
    "num_attention_heads": 24, "num_hidden_layers": 30, "num_key_value_heads": 2,
    "rope_theta": 999999.4420358813, "sliding_window": 4096, "torch_dtype": "bfloat16",
    "transformers_version": "4.37.0.dev0", "use_bias": True, "use_cache": True,
    "vocab_size": 49152,
}

# allenai/OLMo-1B-hf config.json as published (public), written inline.
OLMO_1B = {
    "architectures": ["OlmoForCausalLM"], "model_type": "olmo", "attention_bias": False,
    "attention_dropout": 0.0, "clip_qkv": None, "eos_token_id": 50279, "hidden_act": "silu",
    "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
    "max_position_embeddings": 2048, "num_attention_heads": 16, "num_hidden_layers": 16,
    "num_key_value_heads": 16, "pad_token_id": 1, "rope_scaling": None, "rope_theta": 10000.0,
    "tie_word_embeddings": True, "torch_dtype": "float32", "transformers_version": "4.40.0.dev0",
    "use_cache": True, "vocab_size": 50304,
}

# tiiuae/falcon-40b config.json as published (public; model_type falcon), written inline:
# the new decoder architecture (grouped query_key_value, ln_attn and ln_mlp).
FALCON_40B = {
    "alibi": False, "apply_residual_connection_post_layernorm": False,
    "architectures": ["FalconForCausalLM"], "attention_dropout": 0.0, "bias": False,
    "bos_token_id": 11, "eos_token_id": 11, "hidden_dropout": 0.0, "hidden_size": 8192,
    "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "falcon",
    "multi_query": True, "new_decoder_architecture": True, "num_attention_heads": 128,
    "num_hidden_layers": 60, "num_kv_heads": 8, "parallel_attn": True,
    "torch_dtype": "bfloat16", "transformers_version": "4.27.4", "use_cache": True,
    "vocab_size": 65024,
}
FALCON_7B = os.path.join(CONFIG_DIR, "tiiuae__falcon-7b-instruct")

# bigscience/bloom-560m config.json as published (public), written inline: ALiBi, the
# embeddings' LayerNorm, Megatron keys BloomConfig never reads.
BLOOM_560M = {
    "apply_residual_connection_post_layernorm": False, "architectures": ["BloomForCausalLM"],
    "attention_dropout": 0.0, "attention_softmax_in_fp32": True, "bias_dropout_fusion": True,
    "bos_token_id": 1, "eos_token_id": 2, "hidden_dropout": 0.0, "hidden_size": 1024,
    "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "masked_softmax_fusion": True,
    "model_type": "bloom", "n_head": 16, "n_inner": None, "n_layer": 24, "offset_alibi": 100,
    "pad_token_id": 3, "pretraining_tp": 1, "skip_bias_add": True, "skip_bias_add_qkv": False,
    "slow_but_exact": False, "transformers_version": "4.27.0.dev0", "unk_token_id": 0,
    "use_cache": True, "vocab_size": 250880,
}

# mosaicml/mpt-7b config.json as published (public; its init_config and auto_map
# abridged to what matters here, both unread), written inline: ALiBi, no biases, Wqkv.
MPT_7B = {
    "architectures": ["MPTForCausalLM"],
    "attn_config": {"alibi": True, "alibi_bias_max": 8, "attn_impl": "torch", "attn_pdrop": 0,
                    "attn_type": "multihead_attention", "attn_uses_sequence_id": False,
                    "clip_qkv": None, "prefix_lm": False, "qk_ln": False, "softmax_scale": None},
    "auto_map": {"AutoConfig": "configuration_mpt.MPTConfig",
                 "AutoModelForCausalLM": "modeling_mpt.MPTForCausalLM"},
    "d_model": 4096, "emb_pdrop": 0, "embedding_fraction": 1.0, "expansion_ratio": 4,
    "init_config": {"init_div_is_residual": True, "init_nonlinearity": "relu",
                    "init_std": 0.02, "name": "kaiming_normal_"},
    "init_device": "cpu", "learned_pos_emb": True, "logit_scale": None, "max_seq_len": 2048,
    "model_type": "mpt", "n_heads": 32, "n_layers": 32, "no_bias": True,
    "norm_type": "low_precision_layernorm", "resid_pdrop": 0,
    "tokenizer_name": "EleutherAI/gpt-neox-20b", "torch_dtype": "bfloat16",
    "transformers_version": "4.28.1", "use_cache": False, "verbose": 0, "vocab_size": 50432,
}

# EleutherAI/gpt-j-6b config.json as published (public; task_specific_params dropped),
# written inline: interleaved rotary on 64 of 256 dims, one ln_1, lm_head bias.
GPTJ_6B = {
    "activation_function": "gelu_new", "architectures": ["GPTJForCausalLM"], "attn_pdrop": 0.0,
    "bos_token_id": 50256, "embd_pdrop": 0.0, "eos_token_id": 50256,
    "gradient_checkpointing": False, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05,
    "model_type": "gptj", "n_embd": 4096, "n_head": 16, "n_inner": None, "n_layer": 28,
    "n_positions": 2048, "resid_pdrop": 0.0, "rotary": True, "rotary_dim": 64,
    "summary_activation": None, "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
    "summary_type": "cls_index", "summary_use_proj": True, "tie_word_embeddings": False,
    "tokenizer_class": "GPT2Tokenizer", "transformers_version": "4.18.0.dev0", "use_cache": True,
    "vocab_size": 50400,
}

# CohereForAI/c4ai-command-r-v01 config.json as published (public), written inline.
COMMAND_R = {
    "architectures": ["CohereForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 5, "eos_token_id": 255001, "hidden_act": "silu", "hidden_size": 8192,
    "initializer_range": 0.02, "intermediate_size": 22528, "layer_norm_eps": 1e-05,
    "logit_scale": 0.0625, "max_position_embeddings": 8192, "model_type": "cohere",
    "num_attention_heads": 64, "num_hidden_layers": 40, "num_key_value_heads": 64,
    "pad_token_id": 0, "rope_theta": 8000000.0, "torch_dtype": "float16",
    "transformers_version": "4.38.0.dev0", "use_cache": True, "use_qk_norm": False,
    "vocab_size": 256000,
}

# openbmb/MiniCPM-2B-sft-bf16 config.json as published (public), written inline (its
# auto_map to the remote configuration_minicpm / modeling_minicpm left out).
MINICPM_2B = {
    "_name_or_path": "openbmb/CPM-2B", "architectures": ["MiniCPMForCausalLM"],
    "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 2304,
    "initializer_range": 0.1, "intermediate_size": 5760, "max_position_embeddings": 2048,
    "model_type": "minicpm", "num_attention_heads": 36, "num_hidden_layers": 40,
    "num_key_value_heads": 36, "rms_norm_eps": 1e-05, "rope_scaling": None,
    "torch_dtype": "bfloat16", "transformers_version": "4.36.0", "use_cache": True,
    "vocab_size": 122753, "scale_emb": 12, "dim_model_base": 256, "scale_depth": 1.4,
}

# LGAI-EXAONE/EXAONE-3.5-2.4B-Instruct config.json's values (public), written inline (its
# auto_map to the remote configuration_exaone / modeling_exaone left out).
EXAONE_35_2_4B = {
    "activation_function": "silu", "architectures": ["ExaoneForCausalLM"],
    "attention_dropout": 0.0, "bos_token_id": 1, "embed_dropout": 0.0, "eos_token_id": 361,
    "hidden_size": 2560, "initializer_range": 0.02, "intermediate_size": 7168,
    "layer_norm_epsilon": 1e-05, "max_position_embeddings": 32768, "model_type": "exaone",
    "num_attention_heads": 32, "num_key_value_heads": 8, "num_layers": 30, "pad_token_id": 0,
    "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 1000000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0", "use_cache": True, "vocab_size": 102400,
}

# THUDM/glm-4-9b config.json's values (public: the model card's repository on Hugging Face,
# its remote configuration_chatglm / modeling_chatglm), written inline: hidden 4096, 40
# layers, 32 heads of kv_channels 128 in 2 multi-query groups, ffn 13696, padded vocab
# 151552, rope_ratio 500 (base 5e6), layernorm_epsilon 1.5625e-07, seq_length 131072.
GLM_4_9B = {
    "architectures": ["ChatGLMModel"], "model_type": "chatglm", "add_bias_linear": False,
    "add_qkv_bias": True, "apply_query_key_layer_scaling": True,
    "apply_residual_connection_post_layernorm": False, "attention_dropout": 0.0,
    "attention_softmax_in_fp32": True, "bias_dropout_fusion": True, "ffn_hidden_size": 13696,
    "fp32_residual_connection": False, "hidden_dropout": 0.0, "hidden_size": 4096,
    "kv_channels": 128, "layernorm_epsilon": 1.5625e-07, "multi_query_attention": True,
    "multi_query_group_num": 2, "num_attention_heads": 32, "num_layers": 40,
    "original_rope": True, "padded_vocab_size": 151552, "post_layer_norm": True,
    "rmsnorm": True, "rope_ratio": 500, "seq_length": 131072, "use_cache": True,
    "torch_dtype": "bfloat16", "transformers_version": "4.30.2", "tie_word_embeddings": False,
    "eos_token_id": [151329, 151336, 151338], "pad_token_id": 151329,
}

# name -> (source, shrink kwargs)
CLASSES = {
    "gpt_neox-redpajama": (os.path.join(CONFIG_DIR, "togethercomputer__RedPajama-INCITE-7B-Base"), {}),
    "gpt_neox-pythia": (PYTHIA_1B, {}),
    "phi-2": (PHI_2, {}),
    "stablelm_epoch-stable-code-3b": (os.path.join(CONFIG_DIR, "stabilityai__stable-code-3b"), {}),
    "stablelm-2-1_6b": (STABLELM_2_1_6B, {}),
    "stablelm-2-parallel": (STABLELM_2_1_6B, {"use_parallel_residual": True}),
    # a 16-token window, so the 96-token prompt crosses it
    "starcoder2-3b": (STARCODER2_3B, {"sliding_window": 16}),
    "olmo-1b": (OLMO_1B, {}),
    "gpt2-xl": (os.path.join(CONFIG_DIR, "openai-community__gpt2-xl"), {}),
    # multi_query (one KV head), one norm feeding attention and MLP in parallel
    "falcon-7b": (FALCON_7B, {}),
    # 8 heads in 2 KV groups, ln_attn + ln_mlp
    "falcon-40b": (FALCON_40B, {"num_kv_heads": 2}),
    # the per-head [q; k; v] layout, sequential block, biases (falcon-rw's block, rotary)
    "falcon-sequential": (FALCON_7B, {"multi_query": False, "parallel_attn": False, "bias": True}),
    # ALiBi over 8 heads (a power of two) and over 12 (the interleaved extra slopes)
    "bloom-560m": (BLOOM_560M, {}),
    "bloom-12-heads": (BLOOM_560M, {"num_attention_heads": 12, "num_key_value_heads": 12,
                                    "head_dim": 16}),
    # ALiBi relative to the last key, a custom softmax_scale, 12 heads
    "mpt-7b": (MPT_7B, {}),
    "mpt-12-heads": (MPT_7B, {"num_attention_heads": 12, "num_key_value_heads": 12, "head_dim": 16,
                              "attn_config": dict(MPT_7B["attn_config"], softmax_scale=0.2)}),
    # rotary_dim scaled with the shrunk head (64 of 256 -> 8 of 32)
    "gptj-6b": (GPTJ_6B, {"rotary_dim": 8}),
    # parallel block from one bias-free LayerNorm, interleaved rotary, logit_scale; and GQA
    "command-r": (COMMAND_R, {}),
    "command-r-gqa": (COMMAND_R, {"num_key_value_heads": 2}),
    # corpus; wqkv in 2 KV groups of 4 heads (the remote code's modeling_internlm2), biases
    # off as its config says, and on (InternLM2Config's default)
    "internlm2-chat-7b": (os.path.join(CONFIG_DIR, "internlm__internlm2-chat-7b"), {}),
    "internlm2-bias": (os.path.join(CONFIG_DIR, "internlm__internlm2-chat-7b"), {"bias": True}),
    # muP: embeddings x 12, residual branches x 1.4 / sqrt(2 layers), logits / (hidden / 256)
    # (hidden 256: / 1); tied; and 4 heads in 2 KV groups, hidden 128: logits / 0.5
    "minicpm-2b": (MINICPM_2B, {}),
    "minicpm-gqa": (MINICPM_2B, {"num_attention_heads": 4, "num_key_value_heads": 2}),
    # Llama's block under EXAONE's names and keys: 4 query heads per KV head, llama3 rope
    # scaling, tied; and untied with intermediate_size null (4 x hidden)
    # corpus; Qwen-7B: c_attn a Linear q|k|v with a bias, w1 / w2 MLP of intermediate_size
    # // 2, kv_channels shrunk with the head
    "qwen-7b": (os.path.join(CONFIG_DIR, "Qwen__Qwen-7B"), {"kv_channels": 32}),
    # and rotary over half of each head
    "qwen-rotary-half": (os.path.join(CONFIG_DIR, "Qwen__Qwen-7B"), {"kv_channels": 32, "rotary_pct": 0.5}),
    # corpus; ChatGLM3-6B (modeling_chatglm of THUDM/chatglm3-6b at 456aa87): 4 heads in
    # 2 multi-query groups, query_key_value [q; k; v] with its bias, rotary on pairs over
    # half of each head (16 of 32 dims), dense_h_to_4h [gate; up]
    "chatglm3-6b": (os.path.join(CONFIG_DIR, "THUDM__chatglm3-6b"),
                    {"num_attention_heads": 4, "num_key_value_heads": 2}),
    # GLM-4-9B: base 10000 x rope_ratio 500, eps 1.5625e-07
    "glm-4-9b": (GLM_4_9B, {"num_attention_heads": 4, "num_key_value_heads": 2}),
    # without multi_query_attention: query_key_value per head [q_h; k_h; v_h] (its
    # multi_query_group_num, 2, unread)
    "chatglm-mha": (os.path.join(CONFIG_DIR, "THUDM__chatglm3-6b"),
                    {"num_attention_heads": 4, "num_key_value_heads": 2,
                     "multi_query_attention": False}),
    # rmsnorm false (LayerNorms with biases) and add_bias_linear (dense, dense_h_to_4h's
    # gate and up halves, dense_4h_to_h)
    "chatglm-layernorm-biases": (os.path.join(CONFIG_DIR, "THUDM__chatglm3-6b"),
                                 {"num_attention_heads": 4, "num_key_value_heads": 2,
                                  "rmsnorm": False, "add_bias_linear": True}),
    "exaone-3.5-2.4b": (EXAONE_35_2_4B, {}),
    "exaone-untied": (EXAONE_35_2_4B, {"tie_word_embeddings": False, "intermediate_size": None}),
}
N_PROMPT = 96
N_GEN = 32


def prompt(vocab, seed, n=N_PROMPT):
    return [int(x) for x in np.random.default_rng(seed).integers(0, vocab, n)]


@pytest.mark.parametrize("name", sorted(CLASSES))
@pytest.mark.evidence(config_classes=["gpt_neox", "phi", "stablelm", "stablelm_epoch", "starcoder2", "olmo", "gpt2", "falcon", "bloom", "mpt", "gptj", "cohere", "internlm2", "minicpm", "exaone", "qwen", "chatglm"], backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32 files")
def test_classic_class_matches_reference(name, make_checkpoint, reference_for, run_facet, tmp_path):
    src, shrink = CLASSES[name]
    path = make_checkpoint(src, dtype="f32", shrink=shrink)
    ref = reference_for(path)
    p = prompt(ref.facts.vocab_size, 7)
    dump = tmp_path / "logits.f32"
    proc = run_facet(["run", path, "--prompt-ids", ",".join(map(str, p)), "-n", str(N_GEN),
                      "--json", "--ignore-eos", "--weights", "f32", "--kv-cache", "f32",
                      "--dump-logits", dump])
    assert proc.returncode == 0, proc.stderr[-2000:]
    obj = json.loads(proc.stdout)
    want = ref.generate(p, N_GEN)
    # the random model must be decisive, or the greedy check proves little
    assert sum(m > 1e-3 for m in want["margins"]) >= N_GEN - 4, want["margins"]
    rows = compare.read_logits(str(dump), ref.facts.vocab_size)
    assert rows.shape == want["logits"].shape
    errs = compare.relative_errors(rows[:N_PROMPT], want["logits"][:N_PROMPT])
    print("%s: prompt max relative error %.3g" % (name, errs.max()))
    assert errs.max() < 1e-4, "prompt position %d: relative error %.3g" % (int(errs.argmax()), errs.max())
    g = compare.greedy_agreement(obj["generated_ids"], want, 1e-3)
    assert g["mismatch"] is None, compare.describe(g)
    k = g["comparable_rows"]
    if k:
        e2 = compare.relative_errors(rows[N_PROMPT:N_PROMPT + k], want["logits"][N_PROMPT:N_PROMPT + k])
        print("%s: generated max relative error %.3g over %d rows" % (name, e2.max(), k))
        assert e2.max() < 1e-4, "generated position %d: %.3g" % (int(e2.argmax()), e2.max())


@pytest.mark.parametrize("kind", ["sentencepiece", "tiktoken"])
def test_chatglm_tokenizer_model_refused_by_name(kind, make_checkpoint, run_facet, tmp_path):
    """ChatGLM3 ships its vocabulary as tokenizer.model, a SentencePiece ModelProto, and
    GLM-4 as tokenizer.model holding tiktoken ranks ('base64(token bytes) rank' per line),
    each read by the checkpoint's own tokenization_chatglm.py, with no tokenizer.json.
    facet reads neither: text into such a folder (tokenize, run --prompt) is refused with
    FACET_E_UNSUPPORTED (exit 2) naming the file and what it holds, and the checkpoint still
    runs on token ids."""
    src, shrink = CLASSES["chatglm3-6b" if kind == "sentencepiece" else "glm-4-9b"]
    path = make_checkpoint(src, dtype="f32", shrink=shrink)
    d = tmp_path / "glm"
    d.mkdir()
    for fn in ("config.json", "model.safetensors"):
        (d / fn).symlink_to(os.path.join(path, fn))
    if kind == "sentencepiece":  # a ModelProto with one piece: "<unk>", score 0, type UNKNOWN
        piece = b"\x0a\x05<unk>" + b"\x15\x00\x00\x00\x00" + b"\x18\x02"
        (d / "tokenizer.model").write_bytes(b"\x0a" + bytes([len(piece)]) + piece)
        want = "%s: a SentencePiece model" % (d / "tokenizer.model")
    else:
        (d / "tokenizer.model").write_text("".join(
            "%s %d\n" % (base64.b64encode(t).decode(), i)
            for i, t in enumerate([b"h", b"i", b"hi", b" ", b" hi"])))
        want = "%s: a tiktoken vocabulary" % (d / "tokenizer.model")
    (d / "tokenization_chatglm.py").write_text("# THUDM's ChatGLMTokenizer (stand-in)\n")
    for args in (["tokenize", d, "hi hi"], ["run", d, "--prompt", "hi", "-n", "1"]):
        proc = run_facet(args)
        assert proc.returncode == 2 and want in proc.stderr, (args, proc.stderr)
        assert "give the prompt as token ids (--prompt-ids)" in proc.stderr, proc.stderr
    proc = run_facet(["run", d, "--prompt-ids", "1,2,3", "-n", "2", "--ignore-eos", "--no-cache"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[:3] == ["1", "2", "3"], proc.stdout


# The default 16-bit KV cache of a BF16 checkpoint (bf16) against the reference that
# rounds each key, value and query as a bf16 cache holds them (kv_round), both reading the
# same BF16 weights exactly (--weights f32 widens them; bf16 weights also round the
# activations, which no reference here models): typical rows within float32 arithmetic,
# the worst within the one-bf16-step slack of test_kv_cache.py; and measurably nearer than
# the unrounded reference, so the cache's rounding is modelled, not ignored.
DEFAULT_16BIT = ["falcon-7b", "falcon-40b", "bloom-560m", "mpt-7b"]


@pytest.mark.parametrize("name", DEFAULT_16BIT)
@pytest.mark.evidence(config_classes=["falcon", "bloom", "mpt"], backend="cpu", weights=["f32"],
                      oracle="float64 reference with bf16 KV rounding, BF16 files")
def test_classic_default_16bit_matches_rounded_reference(name, make_checkpoint, reference_for,
                                                         run_facet, tmp_path):
    src, shrink = CLASSES[name]
    path = make_checkpoint(src, dtype="bf16", shrink=shrink)
    ref = reference_for(path, kv_round="bf16")
    p = prompt(ref.facts.vocab_size, 11, 48)
    dump = tmp_path / "logits.f32"
    proc = run_facet(["run", path, "--prompt-ids", ",".join(map(str, p)), "-n", "16", "--json",
                      "--ignore-eos", "--weights", "f32", "--kv-cache", "bf16", "--dump-logits", dump])
    assert proc.returncode == 0, proc.stderr[-2000:]
    gen = json.loads(proc.stdout)["generated_ids"]
    seq = p + gen[:-1]
    rows = compare.read_logits(str(dump), ref.facts.vocab_size)
    assert rows.shape[0] == len(seq)
    r = compare.relative_errors(rows, ref.logits(seq))
    u = compare.relative_errors(rows, reference_for(path).logits(seq))
    print("%s: bf16 cache, median %.3g worst %.3g (unrounded median %.3g)"
          % (name, np.median(r), r.max(), np.median(u)))
    assert np.median(r) < 1e-4, np.median(r)
    assert r.max() < 2e-3, r.max()
    assert np.median(u) > 3 * np.median(r), (np.median(u), np.median(r))
