"""Mixture-of-experts families (issue 27) against the float64 reference.

Shrunk checkpoints of every MoE config class facet runs (the corpus's configs where they
exist; Qwen1.5-MoE-A2.7B, Qwen3-30B-A3B and OLMoE-1B-7B from their public config values,
written inline below; Granite-MoE-shared from the corpus's granite-3.1 MoE config with
its shared expert; gpt-oss-20b's config without its MXFP4 quantization_config: sinks,
alternating windows, yarn without truncation, biases, the clamped SwiGLU): >= 8 experts,
top-k >= 2, dense and sparse layers where the class has both, each expert tensor layout
the loader reads (per expert, 3-D fused, gpt-oss's x @ W with gate/up interleaved). Oracle:
tests/ref/reference.py (transformers' routing semantics, written independently of
src/engine/ffn_moe.c). Batch and chunk invariance bit for bit: tests/unit/test_engine_moe.c.
"""

import json

import numpy as np
import pytest

import compare
import gen_checkpoint
import hf_facts

# Public config values (the models' config.json on the Hugging Face hub).
QWEN15_MOE_A27B = {
    "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 2048,
    "intermediate_size": 5632, "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4,
    "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
    "decoder_sparse_step": 1, "norm_topk_prob": False, "mlp_only_layers": [],
    "max_position_embeddings": 8192, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
    "vocab_size": 151936, "tie_word_embeddings": False, "use_sliding_window": False,
    "sliding_window": 32768, "max_window_layers": 21, "hidden_act": "silu",
    "bos_token_id": 151643, "eos_token_id": 151643, "torch_dtype": "bfloat16",
    "router_aux_loss_coef": 0.001, "output_router_logits": False,
}
QWEN3_30B_A3B = {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
    "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
    "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_attention_heads": 32,
    "num_key_value_heads": 4, "head_dim": 128, "decoder_sparse_step": 1, "norm_topk_prob": True,
    "mlp_only_layers": [], "max_position_embeddings": 40960, "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-06, "vocab_size": 151936, "tie_word_embeddings": False,
    "use_sliding_window": False, "sliding_window": None, "max_window_layers": 48,
    "attention_bias": False, "hidden_act": "silu", "bos_token_id": 151643,
    "eos_token_id": 151645, "torch_dtype": "bfloat16", "router_aux_loss_coef": 0.001,
    "output_router_logits": False,
}
OLMOE_1B_7B = {
    "architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "hidden_size": 2048,
    "intermediate_size": 1024, "num_experts": 64, "num_experts_per_tok": 8,
    "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 16,
    "norm_topk_prob": False, "max_position_embeddings": 4096, "rope_theta": 10000.0,
    "rms_norm_eps": 1e-05, "vocab_size": 50304, "tie_word_embeddings": False,
    "attention_bias": False, "clip_qkv": None, "hidden_act": "silu", "bos_token_id": None,
    "eos_token_id": 50279, "pad_token_id": 1, "torch_dtype": "float32",
    "router_aux_loss_coef": 0.01, "output_router_logits": False,
}


def corpus(repo_root, name):
    return repo_root / "tests" / "data" / "configs" / name


def granite_shared(repo_root):
    cfg = gen_checkpoint.load_config(str(corpus(repo_root, "ibm-granite__granite-3.1-1b-a400m-instruct")))
    cfg.update(model_type="granitemoeshared", architectures=["GraniteMoeSharedForCausalLM"],
               shared_intermediate_size=1024)
    return cfg


def gpt_oss(repo_root):
    cfg = gen_checkpoint.load_config(str(corpus(repo_root, "openai__gpt-oss-20b")))
    cfg.pop("quantization_config")
    return cfg


# name -> (source, shrink, experts_layout or None for the class's own)
CELLS = {
    "mixtral": (lambda r: corpus(r, "mistralai__Mixtral-8x7B-v0.1"), {"num_hidden_layers": 3}, None),
    "mixtral-fused3d": (lambda r: corpus(r, "mistralai__Mixtral-8x7B-v0.1"), {}, "fused"),
    "qwen2_moe": (lambda r: QWEN15_MOE_A27B, {"num_hidden_layers": 4, "mlp_only_layers": [1]}, None),
    "qwen3_moe": (lambda r: QWEN3_30B_A3B, {"num_hidden_layers": 3, "decoder_sparse_step": 2}, None),
    "olmoe": (lambda r: OLMOE_1B_7B, {"num_hidden_layers": 3}, None),
    "granitemoe": (lambda r: corpus(r, "ibm-granite__granite-3.1-1b-a400m-instruct"),
                   {"num_hidden_layers": 3}, None),
    "granitemoeshared": (granite_shared, {"num_hidden_layers": 3}, None),
    # the corpus config without its MXFP4 quantization_config (unquantized weights)
    "gpt_oss": (gpt_oss, {"num_hidden_layers": 4, "sliding_window": 16}, None),
}
N_PROMPT = 96
N_GEN = 32


def prompt(vocab, seed, n=N_PROMPT):
    return [int(x) for x in np.random.default_rng(seed).integers(0, vocab, n)]


def run_and_compare(run_facet, ref, path, p, n_gen, tmp_path, extra=()):
    dump = tmp_path / "logits.f32"
    proc = run_facet(["run", path, "--prompt-ids", ",".join(map(str, p)), "-n", str(n_gen),
                      "--json", "--ignore-eos", "--weights", "f32", "--kv-cache", "f32",
                      "--no-cache", "--dump-logits", dump] + list(extra), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    obj = json.loads(proc.stdout)
    want = ref.generate(p, n_gen)
    rows = compare.read_logits(str(dump), ref.facts.vocab_size)
    assert rows.shape == want["logits"].shape
    n = len(p)
    errs = compare.relative_errors(rows[:n], want["logits"][:n])
    assert errs.max() < 1e-4, "prompt position %d: relative error %.3g" % (int(errs.argmax()), errs.max())
    g = compare.greedy_agreement(obj["generated_ids"], want, 1e-3)
    assert g["mismatch"] is None, compare.describe(g)
    k = g["comparable_rows"]
    if k:
        e2 = compare.relative_errors(rows[n:n + k], want["logits"][n:n + k])
        assert e2.max() < 1e-4, "generated position %d: %.3g" % (int(e2.argmax()), e2.max())


@pytest.mark.parametrize("cell", [(c, d) for c in sorted(CELLS) for d in ("f32", "bf16")],
                         ids=lambda c: "%s-%s" % c)
@pytest.mark.evidence(config_classes=["mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "granitemoe",
                                      "granitemoeshared", "gpt_oss"],
                      backend="cpu", weights=["f32"], oracle="float64 reference, F32 and BF16 files")
def test_moe_matches_reference(cell, make_checkpoint, reference_for, run_facet, tmp_path, repo_root):
    """Logits of a 96-token prompt within 1e-4 relative error per position, 32 greedy
    steps identical while the reference's top-2 margin exceeds 1e-3."""
    name, dtype = cell
    src, shrink, layout = CELLS[name]
    path = make_checkpoint(src(repo_root), dtype=dtype, shrink=shrink, experts_layout=layout)
    ref = reference_for(path)
    f = ref.facts
    assert f.num_experts >= 8 and f.top_k >= 2
    if name in ("qwen2_moe", "qwen3_moe"):
        assert True in f.sparse_layers and False in f.sparse_layers
    run_and_compare(run_facet, ref, path, prompt(f.vocab_size, 7), N_GEN, tmp_path)


def test_moe_long_prompt_in_chunks(make_checkpoint, reference_for, run_facet, tmp_path, repo_root):
    """A 600-token prompt (three forward chunks of at most 256 entries, each grouping its
    tokens by expert) matches the reference at every position."""
    path = make_checkpoint(QWEN15_MOE_A27B, shrink={"num_hidden_layers": 3, "mlp_only_layers": [0]})
    ref = reference_for(path)
    run_and_compare(run_facet, ref, path, prompt(ref.facts.vocab_size, 5, 600), 8, tmp_path)


def test_reference_routing_semantics():
    """The reference's routing on hand-worked logits: the k largest (ties to the lower
    expert index), softmax weights renormalized or not per the class."""
    import reference
    r = reference.Reference.__new__(reference.Reference)
    logits = np.array([[0.5, 2.0, -1.0, 2.0, 1.0, 2.0]])
    r.facts = hf_facts.facts(dict(QWEN15_MOE_A27B, num_experts_per_tok=3))
    ids, w = r.route(logits)
    assert ids.tolist() == [[1, 3, 5]]
    total = np.exp(0.5) + 3 * np.exp(2.0) + np.exp(-1.0) + np.exp(1.0)
    np.testing.assert_allclose(w, [[np.exp(2.0) / total] * 3], rtol=1e-15)
    r.facts = hf_facts.facts(dict(QWEN15_MOE_A27B, num_experts_per_tok=3, norm_topk_prob=True))
    np.testing.assert_allclose(r.route(logits)[1], [[1 / 3] * 3], rtol=1e-15)
    r.facts = hf_facts.facts(gen_checkpoint.shrink_config(OLMOE_1B_7B, num_experts_per_tok=2))
    ids, w = r.route(np.array([[0.0, -3.0, 1.0, -0.5]]))
    assert ids.tolist() == [[2, 0]]
    total = np.exp(0.0) + np.exp(-3.0) + np.exp(1.0) + np.exp(-0.5)
    np.testing.assert_allclose(w, [[np.exp(1.0) / total, 1.0 / total]], rtol=1e-15)
