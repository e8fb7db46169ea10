"""Qwen3-Next (qwen3_next, issue 26) against the float64 reference.

Shrunk checkpoints of Qwen/Qwen3-Next-80B-A3B-Instruct's published config (inline in
tests/ref/qwen3next_ref.py): 4 layers (three gated delta-rule layers, then one gated
attention layer, by full_attention_interval 4), hidden 64, 2 key heads and 4 value heads
of 16 in the delta rule (the 16 : 32 ratio), 4 query heads on 1 KV head of 32 rotated
over a quarter of each head, 8 experts (2 a token) and a sigmoid-gated shared expert on
every layer. Oracle: qwen3next_ref.Reference (transformers' modular_qwen3_next.py
semantics, the delta rule run one token at a time in float64, independently of
src/engine). Runs on the exact path (--weights f32 --kv-cache f32). Bit-for-bit
invariances (chunked prefill, batched decode, state release): tests/unit/
test_engine_qwen3next.c.
"""

import json

import numpy as np
import pytest

import compare
import qwen3next_ref

N_PROMPT = 64
N_GEN = 32

# the real facts; dense MLPs on mlp_only_layers (the dense kind beside the MoE one);
# layer_types written out with attention first and third, attention_bias (the gate's half
# of q_proj's bias too) and norm_topk_prob false
VARIANTS = {
    "80b": {},
    "mlp-only": {"mlp_only_layers": [0, 3]},
    "types-bias": {"layer_types": ["full_attention", "linear_attention", "full_attention",
                                   "linear_attention"],
                   "attention_bias": True, "norm_topk_prob": False},
}


def write(tmp_path, name="ck", dtype="f32", **over):
    cfg = qwen3next_ref.shrink(qwen3next_ref.QWEN3_NEXT_80B_A3B, **over)
    return qwen3next_ref.write(cfg, str(tmp_path / name), dtype)


def run_and_compare(run_facet, path, n_prompt, n_gen, tmp_path, seed=7):
    return compare.run_against_reference(run_facet, path, qwen3next_ref.Reference(str(path)), n_prompt, n_gen, tmp_path, seed)


@pytest.mark.parametrize("cell", [("80b", "f32"), ("80b", "bf16"), ("mlp-only", "f32"),
                                  ("types-bias", "f32")],
                         ids=lambda c: "%s-%s" % c)
@pytest.mark.evidence(config_classes=["qwen3_next"], backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32 and BF16 files")
def test_qwen3next_matches_reference(cell, run_facet, tmp_path):
    """Logits of a 64-token prompt within 1e-4 relative error per position, 32 greedy
    steps identical while the reference's top-2 margin exceeds 1e-3."""
    variant, dtype = cell
    path = write(tmp_path, dtype=dtype, **VARIANTS[variant])
    run_and_compare(run_facet, path, N_PROMPT, N_GEN, tmp_path)


def test_qwen3next_long_prompt_in_chunks(run_facet, tmp_path):
    """A 600-token prompt (three forward chunks of at most 256 entries: the conv windows,
    the delta-rule state and the attention layer's KV cache carried between them) matches
    the reference."""
    path = write(tmp_path)
    run_and_compare(run_facet, path, 600, 4, tmp_path, seed=5)


def test_qwen3next_plan(run_facet, tmp_path):
    """facet plan (ctx 4096, batch 2, bf16) on the full-size Qwen3-Next-80B-A3B config, by
    hand.
    State per sequence: 36 delta-rule layers x (conv: (2 x 16 x 128 + 32 x 128 = 8192)
    channels x (4 - 1) + S: 32 value heads x 128 x 128) x 4 B = 36 x (24,576 + 524,288) x 4
    = 79,036,416 bytes (75.38 MiB).
    KV (bf16) per token: naive 48 layers x 2 kv heads x 256 x 2 x 2 B = 98,304; actual: the
    12 attention layers alone, 24,576 bytes (ctx 4096: 96 MiB).
    Parameters: embeddings + lm_head 2 x 151936 x 2048 = 622,329,856; 12 attention layers
    x (q with its gate 2 x 4096 x 2048 + k, v 2 x 512 x 2048 + o 2048 x 4096 + q/k norms
    2 x 256) = 327,161,856; 36 delta-rule layers x (in_proj_qkvz 12288 x 2048 + in_proj_ba
    64 x 2048 + out_proj 2048 x 4096 + conv 8192 x 4 + dt_bias, A_log 2 x 32 + norm 128)
    = 1,213,864,704; 48 MoE layers x (router 512 x 2048 + 512 experts x 3 x 512 x 2048 +
    shared 3 x 512 x 2048 + its gate 2048) = 77,510,836,224; norms 2 x 48 x 2048 + 2048 =
    198,656: 79,674,391,296 (the card's 80B without its MTP layer)."""
    d = tmp_path / "full"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(qwen3next_ref.QWEN3_NEXT_80B_A3B))
    proc = run_facet(["plan", str(d), "--ctx", "4096", "--batch", "2", "--weights", "bf16",
                      "--kv-cache", "bf16"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "parameters: 79674391296 total" in out, out
    assert "recurrent state: 79036416 bytes per sequence (75.38 MiB" in out, out
    assert "per token, naive (layers x kv_heads x head_dim x 2 x 2 B): 98304 bytes" in out, out
    assert "per token, actual at ctx 4096: 24576.0 bytes (12 global, 0 windowed layers)" in out, out
    assert "(KV 96.00 MiB + state 75.38 MiB) x 2" in out, out
    assert "layers 0-2: none: gated delta rule, 32 value heads x 128, 16 key heads x 128, " \
           "conv 4 taps; mixer gated_delta" in out, out
    assert "layers 3-3: causal GQA 16q/2kv hd=256 qk-norm sigmoid-gated" in out, out


def test_qwen3next_conform_facts(run_facet, tmp_path):
    """conform on the shrunk checkpoint: the delta-rule layers named as a hybrid's
    recurrent layers, the (1 + w) norm, partial rotary, the gated shared expert."""
    path = write(tmp_path)
    proc = run_facet(["conform", path])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verdict: supported on cpu (profile qwen3_next)" in proc.stdout, proc.stdout
    assert "rmsnorm(1+w)" in proc.stdout and "partial" in proc.stdout, proc.stdout
    assert "shared_expert=32(gated)" in proc.stdout and "router=softmax-topk-renorm" in proc.stdout


def test_qwen3next_refusals(run_facet, tmp_path):
    """Typed errors naming the key, its value and what is expected."""
    cfg = qwen3next_ref.shrink(qwen3next_ref.QWEN3_NEXT_80B_A3B)
    for bad, needle in (({"linear_num_value_heads": 3},
                         "linear_num_value_heads is 3 (integer), expected a multiple of "
                         "linear_num_key_heads"),
                        ({"layer_types": ["linear_attention", "full_attention"]},
                         "expected an array of num_hidden_layers (4) entries"),
                        ({"layer_types": ["linear_attention", "sliding_attention",
                                          "linear_attention", "full_attention"]},
                         "\"linear_attention\" or \"full_attention\"")):
        d = tmp_path / ("c-%s" % "-".join(sorted(bad)))
        d.mkdir(exist_ok=True)
        (d / "config.json").write_text(json.dumps(dict(cfg, **bad)))
        proc = run_facet(["conform", str(d)])
        assert proc.returncode != 0 and needle in proc.stderr, (bad, proc.stderr)
    # a vulkan backend runs no recurrent layer: refused before loading, naming the mixer
    d = tmp_path / "vk"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    proc = run_facet(["conform", str(d), "--backend", "vulkan"])
    assert proc.returncode != 0
    assert "state-space mixer=gated_delta on 3 of 4 layers, each with its FFN" in proc.stdout, \
        proc.stdout


@pytest.mark.parametrize("layer_types,needle", [
    (["linear_attention"] * 4,
     "model.layers.3 holds an attention layer's tensors (model.layers.3.self_attn.q_proj.weight)"
     " and none of a recurrent mixer layer's, but layer_types[3]=\"linear_attention\" makes it "
     "a gated delta-rule layer"),
    (["full_attention", "linear_attention", "linear_attention", "full_attention"],
     "model.layers.0 holds a recurrent mixer layer's tensors "
     "(model.layers.0.linear_attn.in_proj_qkvz.weight) and none of an attention layer's, but "
     "layer_types[0]=\"full_attention\" makes it an attention layer"),
], ids=["attention-as-linear", "linear-as-attention"])
def test_qwen3next_layer_types_disagreeing_with_the_tensors(layer_types, needle, run_facet,
                                                           tmp_path):
    """A layer_types that contradicts the checkpoint (linear, linear, linear, full): one
    line naming the layer, the tensors it holds and layer_types[i] with its value (the
    delta-rule kind's name was read past the end of the kinds' names)."""
    path = write(tmp_path)
    cfg = json.loads((tmp_path / "ck" / "config.json").read_text())
    cfg["layer_types"] = layer_types
    (tmp_path / "ck" / "config.json").write_text(json.dumps(cfg))
    proc = run_facet(["run", str(path), "--prompt-ids", "1,2", "-n", "1"])
    assert proc.returncode == 1, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and needle in lines[0], proc.stderr


def test_qwen3next_experts_3d_same_logits(run_facet, tmp_path):
    """transformers 5 stores Qwen2MoeExperts as 3-D parameters (mlp.experts.gate_up_proj
    [E, 2 I, H], mlp.experts.down_proj [E, H, I]): the same experts written that way give
    the per-expert checkpoint's logits bit for bit (the oracle for these values:
    test_qwen3next_matches_reference)."""
    import safetensors_io

    src = write(tmp_path)
    dst = tmp_path / "ck3d"
    dst.mkdir()
    (dst / "config.json").write_text((tmp_path / "ck" / "config.json").read_text())
    st = str(tmp_path / "ck" / "model.safetensors")
    header, _, start = safetensors_io.read_header(st)
    w = {k: safetensors_io.read_tensor(st, v, start) for k, v in header.items()}
    f = qwen3next_ref.facts(json.loads((dst / "config.json").read_text()))
    out = {k: v for k, v in w.items() if ".mlp.experts." not in k}
    for i in range(f["L"]):
        p = "model.layers.%d.mlp.experts." % i
        if p + "0.gate_proj.weight" not in w:
            continue
        out[p + "gate_up_proj"] = np.stack([np.concatenate([w[p + "%d.gate_proj.weight" % e],
                                                            w[p + "%d.up_proj.weight" % e]])
                                            for e in range(f["E"])])
        out[p + "down_proj"] = np.stack([w[p + "%d.down_proj.weight" % e] for e in range(f["E"])])
    safetensors_io.write_file(str(dst / "model.safetensors"),
                              [(n, "F32", out[n].shape) for n in out], lambda n: out[n])
    rows = []
    for d in (src, str(dst)):
        dump = tmp_path / "l.f32"
        proc = run_facet(["run", d, "--prompt-ids", "1,2,3,4,5,6,7,8", "-n", "4", "--ignore-eos",
                          "--weights", "f32", "--kv-cache", "f32", "--no-cache",
                          "--dump-logits", dump])
        assert proc.returncode == 0, proc.stderr
        rows.append(compare.read_logits(str(dump), f["V"]))
    assert np.array_equal(rows[0], rows[1])
