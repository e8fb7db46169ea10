"""Falcon-H1 (falcon_h1, issue 26) against the float64 reference.

Shrunk checkpoints of tiiuae/Falcon-H1-0.5B's config (inline in tests/ref/falcon_h1_ref.py
with its source): 3 layers, each running attention (4 query heads of 16 on 2 KV heads,
RoPE) and a Mamba-2 mixer (8 heads x 12, mamba_d_ssm 96 != expand x hidden, n_groups 2)
in parallel on the same normed input, the 0.5B's muP multipliers (embeddings, logits, key,
attention in/out, SSM in/out, the in_proj segments, the MLP's gate and down) with every
one of them != 1, and the gated norm per group before or after the gate, or off (the
release's mamba_rms_norm false). Oracle: tests/ref/falcon_h1_ref.py (transformers'
FalconH1DecoderLayer, FalconH1Mixer's cache step and FalconH1RMSNormGated semantics, the
recurrence and the attention one token at a time, independently of src/engine). Runs on
the exact path (--weights f32 --kv-cache f32). Batched decode and chunked prefill bit for
bit, the state released: tests/unit/test_engine_hybrid.c; the server:
test_server_hybrid.py.
"""

import json

import pytest

import compare
import falcon_h1_ref

N_PROMPT = 64
N_GEN = 32

VARIANTS = {
    # the grouped gated norm after the gate (mamba_norm_before_gate false, as the release)
    "norm-after-gate": {},
    # the norm before the gate (FalconH1Config's default); the attention's, the MLP's and
    # the Mamba-2 mixer's projection biases (mamba_proj_bias on in_proj, projectors_bias
    # on out_proj)
    "norm-before-gate-bias": {"mamba_norm_before_gate": True, "attention_bias": True,
                              "mlp_bias": True, "mamba_proj_bias": True,
                              "projectors_bias": True},
    # no norm at all: y * SiLU(z) (the release's mamba_rms_norm false)
    "no-norm": {"mamba_rms_norm": False},
}


def write(tmp_path, name="ck", dtype="f32", **over):
    cfg = falcon_h1_ref.shrink(falcon_h1_ref.FALCON_H1_0_5B, **over)
    return falcon_h1_ref.write(cfg, str(tmp_path / name), dtype)


def run_and_compare(run_facet, path, n_prompt, n_gen, tmp_path, seed=7):
    return compare.run_against_reference(run_facet, path, falcon_h1_ref.Reference(str(path)), n_prompt, n_gen, tmp_path, seed)


def test_shrunk_config_exercises_every_multiplier():
    """The test checkpoints are no identity in disguise: n_groups > 1, and every muP
    multiplier the class reads is away from 1."""
    cfg = falcon_h1_ref.shrink(falcon_h1_ref.FALCON_H1_0_5B)
    assert cfg["mamba_n_groups"] > 1
    scalars = ("embedding_multiplier", "lm_head_multiplier", "key_multiplier",
               "attention_in_multiplier", "attention_out_multiplier", "ssm_in_multiplier",
               "ssm_out_multiplier")
    for key in scalars:
        assert cfg[key] != 1.0, key
    for key in ("ssm_multipliers", "mlp_multipliers"):
        assert all(m != 1.0 for m in cfg[key]), key
    assert cfg["mamba_d_ssm"] != cfg["mamba_expand"] * cfg["hidden_size"]


@pytest.mark.parametrize("cell", [("norm-after-gate", "f32"), ("norm-after-gate", "bf16"),
                                  ("norm-before-gate-bias", "f32"), ("no-norm", "f32")],
                         ids=lambda c: "%s-%s" % c)
@pytest.mark.evidence(config_classes=["falcon_h1"], backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32 and BF16 files")
def test_falcon_h1_matches_reference(cell, run_facet, tmp_path):
    """Logits of a 64-token prompt within 1e-4 relative error per position, 32 greedy
    steps identical while the reference's top-2 margin exceeds 1e-3."""
    variant, dtype = cell
    path = write(tmp_path, dtype=dtype, **VARIANTS[variant])
    run_and_compare(run_facet, path, N_PROMPT, N_GEN, tmp_path)


def test_falcon_h1_long_prompt_in_chunks(run_facet, tmp_path):
    """A 600-token prompt (three forward chunks of at most 256 entries: every layer's
    Mamba-2 state and KV cache carried between them) matches the reference."""
    path = write(tmp_path)
    run_and_compare(run_facet, path, 600, 4, tmp_path, seed=5)


def plan_full(run_facet, tmp_path, config, name):
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config))
    proc = run_facet(["plan", str(d), "--ctx", "4096", "--batch", "2", "--weights", "bf16",
                      "--kv-cache", "bf16"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    return out


def test_falcon_h1_plan(run_facet, tmp_path):
    """facet plan on the full-size Falcon-H1 configs (inline in falcon_h1_ref.py), by hand.
    Every layer has attention and a Mamba-2 state, so the naive and actual KV agree and
    the state counts every layer: per layer and sequence (DI + 2 G N) x (K - 1) + DI x N
    float32 values.
    0.5B: DI 1536, G 1, N 128, K 4: (1536 + 256) x 3 + 1536 x 128 = 5,376 + 196,608 =
      201,984 floats = 807,936 B; x 36 layers = 29,085,696 bytes. KV (bf16) per token:
      36 x 2 KV heads x 64 x 2 x 2 B = 18,432 (ctx 4096: 72 MiB).
    1.5B: DI 3072, N 256: (3072 + 512) x 3 + 3072 x 256 = 10,752 + 786,432 = 797,184
      floats = 3,188,736 B; x 24 = 76,529,664 bytes. KV: 24 x 2 x 128 x 2 x 2 = 24,576.
    7B: the same mixer, x 44 = 140,304,384 bytes. KV: 44 x 2 x 128 x 2 x 2 = 45,056
      (ctx 4096: 176 MiB)."""
    cases = ((falcon_h1_ref.FALCON_H1_0_5B, 36, 29085696, 18432, "72.00 MiB", "27.74 MiB"),
             (falcon_h1_ref.FALCON_H1_1_5B, 24, 76529664, 24576, "96.00 MiB", "72.98 MiB"),
             (falcon_h1_ref.FALCON_H1_7B, 44, 140304384, 45056, "176.00 MiB", "133.80 MiB"))
    for i, (cfg, layers, state, kv, kv_text, state_text) in enumerate(cases):
        out = plan_full(run_facet, tmp_path, cfg, "full%d" % i)
        assert "recurrent state: %d bytes per sequence" % state in out, out
        assert "per token, naive (layers x kv_heads x head_dim x 2 x 2 B): %d bytes" % kv in out, out
        assert "per token, actual at ctx 4096: %d.0 bytes (%d global, 0 windowed layers)" % (
            kv, layers) in out, out
        assert "(KV %s + state %s) x 2" % (kv_text, state_text) in out, out
        assert "mixer attention+mamba2" in out, out


def test_falcon_h1_refusals(run_facet, tmp_path):
    """Typed errors naming the key, its value and what is expected: a clamped dt,
    malformed shapes and multiplier lists; keys FalconH1Config never reads that would
    change the model are refused by name; a bias the config promises and the file lacks
    is named by the tensor check."""
    cfg = falcon_h1_ref.shrink(falcon_h1_ref.FALCON_H1_0_5B)
    path = falcon_h1_ref.write(cfg, str(tmp_path / "nobias"))
    cfg_path = tmp_path / "nobias" / "config.json"
    cfg_path.write_text(json.dumps(dict(cfg, projectors_bias=True)))
    proc = run_facet(["conform", path])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "layers.0.mixer.out_proj.bias' is missing" in proc.stderr, proc.stdout + proc.stderr
    for bad, needle in (({"mamba_d_head": 8}, "mamba_d_head is 8 (integer), expected \"auto\" or "
                         "mamba_d_ssm / mamba_n_heads"),
                        ({"mamba_n_heads": 7}, "mamba_n_heads is 7 (integer), expected a divisor "
                         "of mamba_d_ssm"),
                        ({"mamba_n_groups": 3}, "a divisor of mamba_n_heads"),
                        ({"time_step_limit": [0.0, 1.0]}, "time_step_limit is [0.0,1.0]"),
                        ({"ssm_multipliers": [1.0, 2.0]}, "ssm_multipliers is [1.0,2.0] (array), "
                         "expected a list of 5 positive numbers"),
                        ({"mlp_multipliers": [1.0, -2.0]}, "expected a list of 2 positive numbers"),
                        ({"lm_head_multiplier": 0}, "lm_head_multiplier is 0 (integer), expected "
                         "a positive number")):
        d = tmp_path / ("c-%s" % "-".join(sorted(bad)))
        d.mkdir()
        (d / "config.json").write_text(json.dumps(dict(cfg, **bad)))
        proc = run_facet(["conform", str(d)])
        assert proc.returncode != 0 and needle in proc.stderr, (bad, proc.stderr)
    for bad, key in (({"attn_layer_indices": [0]}, "attn_layer_indices"),):
        d = tmp_path / ("k-%s" % key)
        d.mkdir()
        (d / "config.json").write_text(json.dumps(dict(cfg, **bad)))
        proc = run_facet(["conform", str(d)])
        assert proc.returncode == 2 and key in proc.stdout, (bad, proc.stdout + proc.stderr)
