"""Cohere 2 (Command R7B, issue 28) against the float64 reference.

Cohere2Config / modeling_cohere2 (transformers): Cohere's block (a bias-free LayerNorm
feeding attention and the gated silu MLP in parallel, rotary on pairs (2i, 2i+1), logits
times logit_scale, tied) with sliding_window on the sliding layers, named by layer_types
or, in configs written before it, by sliding_window_pattern (layer i slides iff (i + 1) %
pattern != 0); Cohere2Attention rotates q and k only when its layer has a window, so the
full-attention layers attend without positions. tests/ref/hf_facts.py reads that from the
transformers source, independently of facet's C.

Each case: a shrunk checkpoint of the public config below, 4 layers (3 sliding with rotary,
1 full without) and a 16-token window so it binds inside the 96-token prompt; facet in F32
weights and an F32 KV cache must give logits within 1e-4 relative error of
tests/ref/reference.py and the same 32 greedy tokens while the reference's top-2 margin
exceeds 1e-3. A short prompt with a long generation has the window fill and slide during
decode (the ring KV cache wraps there). Refusals and the plan's layer pattern are checked
by value.
"""

import json
import os

import numpy as np
import pytest

import compare

# CohereForAI/c4ai-command-r7b-12-2024 config.json (public), written inline. hidden 4096,
# 32 layers, 32 heads over 8 KV heads (head_dim 128), intermediate 14336, vocab 256000,
# logit_scale 0.25, rope_theta 50000, sliding_window 4096 with sliding_window_pattern 4,
# max_position_embeddings 132096 (the 128K context; a port of the model cites this value),
# tied, written by transformers 4.48 (before layer_types). The keys from Cohere's training
# code that Cohere2Config never reads (order_of_interleaved_layers "local_attn_first",
# position_embedding_type "rope_gptj", rotary_pct 1.0, use_gated_activation, ...) are
# consumed unread, as transformers ignores them.
COMMAND_R7B = {
    "architectures": ["Cohere2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 5, "cache_implementation": "hybrid", "eos_token_id": 255001,
    "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "layer_norm_eps": 1e-05, "logit_scale": 0.25,
    "max_position_embeddings": 132096, "model_type": "cohere2", "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8,
    "order_of_interleaved_layers": "local_attn_first", "pad_token_id": 0,
    "position_embedding_type": "rope_gptj", "rope_scaling": None, "rope_theta": 50000,
    "rotary_pct": 1.0, "sliding_window": 4096, "sliding_window_pattern": 4,
    "torch_dtype": "bfloat16", "transformers_version": "4.48.0.dev0", "use_cache": True,
    "use_embedding_sharing": True, "use_gated_activation": True, "use_parallel_block": True,
    "use_parallel_embedding": True, "vocab_size": 256000,
}

# transformers >= 4.53 writes layer_types and no sliding_window_pattern
LAYER_TYPES = {k: v for k, v in COMMAND_R7B.items() if k != "sliding_window_pattern"}

CASES = {
    # layers 0-2 slide (window 16, rotary), layer 3 full (no positions)
    "command-r7b": (COMMAND_R7B, {"num_hidden_layers": 4, "sliding_window": 16}),
    # the same model spelled with layer_types
    "command-r7b-layer-types": (LAYER_TYPES, {
        "num_hidden_layers": 4, "sliding_window": 16,
        "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}),
    # full, sliding, full, sliding: the NoPE layer first, and 2 of the 4 without positions
    "command-r7b-full-first": (LAYER_TYPES, {
        "num_hidden_layers": 4, "sliding_window": 16,
        "layer_types": ["full_attention", "sliding_attention"] * 2}),
    # every second layer full by sliding_window_pattern 2
    "command-r7b-pattern-2": (COMMAND_R7B, {"num_hidden_layers": 4, "sliding_window": 16,
                                            "sliding_window_pattern": 2}),
}
N_PROMPT = 96
N_GEN = 32


def prompt(vocab, seed, n=N_PROMPT):
    return [int(x) for x in np.random.default_rng(seed).integers(0, vocab, n)]


def run_against_reference(path, ref, p, n_gen, run_facet, tmp_path):
    dump = tmp_path / "logits.f32"
    proc = run_facet(["run", path, "--prompt-ids", ",".join(map(str, p)), "-n", str(n_gen),
                      "--json", "--ignore-eos", "--weights", "f32", "--kv-cache", "f32",
                      "--dump-logits", dump])
    assert proc.returncode == 0, proc.stderr[-2000:]
    obj = json.loads(proc.stdout)
    want = ref.generate(p, n_gen)
    # the random model must be decisive, or the greedy check proves little
    assert sum(m > 1e-3 for m in want["margins"]) >= n_gen - 4, want["margins"]
    rows = compare.read_logits(str(dump), ref.facts.vocab_size)
    assert rows.shape == want["logits"].shape
    n = len(p)
    errs = compare.relative_errors(rows[:n], want["logits"][:n])
    assert errs.max() < 1e-4, "prompt position %d: relative error %.3g" % (int(errs.argmax()), errs.max())
    g = compare.greedy_agreement(obj["generated_ids"], want, 1e-3)
    assert g["mismatch"] is None, compare.describe(g)
    k = g["comparable_rows"]
    e2 = compare.relative_errors(rows[n:n + k], want["logits"][n:n + k]) if k else np.zeros(1)
    assert e2.max() < 1e-4, "generated position %d: %.3g" % (int(e2.argmax()), e2.max())
    return errs.max(), e2.max(), k


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.evidence(config_classes=["cohere2"], backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32 files")
def test_cohere2_matches_reference(name, make_checkpoint, reference_for, run_facet, tmp_path):
    src, shrink = CASES[name]
    path = make_checkpoint(src, dtype="f32", shrink=shrink)
    ref = reference_for(path)
    # the reference read the pattern the case means: windowed layers rotate, full ones not
    f = ref.facts
    assert f.use_rope == [t == "sliding_attention" for t in f.layer_types], f.layer_types
    assert f.sliding_window == 16 and "full_attention" in f.layer_types
    assert f.logits_scaling == 4.0 and f.rope_interleaved and f.parallel
    e1, e2, k = run_against_reference(path, ref, prompt(f.vocab_size, 7), N_GEN, run_facet,
                                      tmp_path)
    print("%s: prompt max relative error %.3g, generated %.3g over %d rows" % (name, e1, e2, k))


@pytest.mark.evidence(config_classes=["cohere2"], backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32 files")
def test_cohere2_window_slides_during_decode(make_checkpoint, reference_for, run_facet, tmp_path):
    """An 8-token prompt and 40 generated tokens with a 16-token window: the window first
    binds at position 16 and slides 32 more times in decode, the ring KV cache of the
    sliding layers wrapping twice, while the full layer keeps every position."""
    src, shrink = CASES["command-r7b"]
    path = make_checkpoint(src, dtype="f32", shrink=shrink)
    ref = reference_for(path)
    e1, e2, k = run_against_reference(path, ref, prompt(ref.facts.vocab_size, 3, 8), 40,
                                      run_facet, tmp_path)
    assert k >= 24, k  # rows past position 32 compared: the window slid in decode
    print("decode: prompt %.3g, generated %.3g over %d rows" % (e1, e2, k))


def test_cohere2_facts_and_plan_print_the_pattern(make_checkpoint, run_facet):
    """The full-size config: 24 of 32 layers windowed, 8 (3, 7, ..., 31) without
    positions; plan groups the layers by that pattern."""
    d = make_checkpoint(COMMAND_R7B, dtype="f32", shrink={"num_hidden_layers": 8})
    proc = run_facet(["conform", os.path.join(d, "config.json")])
    out = proc.stdout + proc.stderr
    assert "window=4096 on 6/8 layers" in out and "no_rope_layers=2/8" in out, out
    assert " interleaved" in out, out
    proc = run_facet(["plan", d, "--json"])
    assert proc.returncode == 0, proc.stderr
    p = json.loads(proc.stdout)
    groups = [(g["first"], g["last"], g["sliding"], g["no_rope"]) for g in p["kernels"]["layers"]]
    assert groups == [(0, 2, True, False), (3, 3, False, True), (4, 6, True, False),
                      (7, 7, False, True)], groups
    assert p["n_sliding_layers"] == 6 and p["n_global_layers"] == 2
    assert "no rope" in p["kernels"]["layers"][1]["attention"]
    proc = run_facet(["plan", d])
    assert "no rope" in proc.stdout and "window 4096 (ring)" in proc.stdout, proc.stdout


@pytest.mark.parametrize("change, key, expected", [
    # Cohere2Config sets head_dim = hidden_size // num_attention_heads over the key
    ({"head_dim": 64}, "head_dim", "hidden_size / num_attention_heads = 32"),
    # layer_types and sliding_window_pattern naming different layers (transformers
    # before 4.53 read the second, later ones the first)
    ({"layer_types": ["sliding_attention", "full_attention"] * 2}, "layer_types[1]",
     "sliding_window_pattern"),
])
def test_cohere2_refusals(change, key, expected, make_checkpoint, run_facet, tmp_path):
    d = make_checkpoint(COMMAND_R7B, dtype="f32", shrink={"num_hidden_layers": 4})
    cfg = json.load(open(os.path.join(d, "config.json")))
    cfg.update(change)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    proc = run_facet(["run", tmp_path, "--prompt-ids", "1,2", "-n", "1"])
    assert proc.returncode == 1, (proc.returncode, proc.stderr)  # FACET_E_FORMAT
    assert key in proc.stderr and expected in proc.stderr, proc.stderr
