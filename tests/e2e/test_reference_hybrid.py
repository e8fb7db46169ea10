"""Hybrid recurrent + attention families (issue 26) against the float64 reference.

Bamba (bamba): shrunk checkpoints of ibm-ai-platform/Bamba-9B's config (inline in
hybrid_ref.py), 4 layers (attention on attn_layer_indices [2]), hidden 64, 4 query heads
on 1 KV head rotated over half of each head; the oracle is hybrid_ref.BambaReference.

Jamba (jamba): shrunk checkpoints of ai21labs/Jamba-v0.1's config (inline in
hybrid_ref.py), 4 layers (attention on layer 2 by period 4 / offset 2, MoE of 4 experts on
layers 1 and 3), hidden 64; the oracle is hybrid_ref.JambaReference.

LFM2 (lfm2): shrunk checkpoints of LiquidAI/LFM2-1.2B's config (inline in hybrid_ref.py),
4 layers (conv, conv, attention, conv), hidden 64, 4 query heads on 1 KV head, its FFN
sizing rule and key spellings; the oracle is hybrid_ref.Lfm2Reference.

Granite 4.0-H (granitemoehybrid): shrunk checkpoints of ibm-granite/granite-4.0-h-tiny's
config (inline in tests/ref/hybrid_ref.py: the corpus holds no granitemoehybrid config),
4 layers (mamba, mamba, attention, mamba), hidden 96, its multipliers, GQA ratio, Mamba-2
and MoE + shared-MLP facts. Oracle: tests/ref/hybrid_ref.py (transformers' decoder layer
and BambaMixer semantics, the recurrence and the attention one token at a time,
independently of src/engine). Runs on the exact path (--weights f32 --kv-cache f32).
"""

import json

import pytest

import compare
import hybrid_ref

N_PROMPT = 64
N_GEN = 32

# variants of the shrunk config: the real facts; n_groups 2 (the per-group gated norm)
# with RoPE on the attention layers and attention biases; a dense (no experts) hybrid
# whose FFN is the shared MLP alone, as granite-4.0-h-1b / -350m
VARIANTS = {
    "tiny": {},
    "groups2-rope-bias": {"mamba_n_groups": 2, "position_embedding_type": "rope",
                          "attention_bias": True},
    "dense": {"num_local_experts": 0, "num_experts_per_tok": 0},
}


def write(tmp_path, name="ck", dtype="f32", **over):
    cfg = hybrid_ref.shrink(hybrid_ref.GRANITE_4_H_TINY, **over)
    return hybrid_ref.write(cfg, str(tmp_path / name), dtype)


def run_and_compare(run_facet, path, n_prompt, n_gen, tmp_path, seed=7, ref_class=None):
    return compare.run_against_reference(run_facet, path, (ref_class or hybrid_ref.Reference)(str(path)), n_prompt, n_gen, tmp_path, seed)


def plan_full(run_facet, tmp_path, config):
    """`facet plan` (ctx 4096, batch 2, bf16 weights and cache) of a full-size config
    written alone to a folder; its output, the command having succeeded."""
    d = tmp_path / "full"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config))
    proc = run_facet(["plan", str(d), "--ctx", "4096", "--batch", "2", "--weights", "bf16",
                      "--kv-cache", "bf16"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    return out


@pytest.mark.parametrize("cell", [("tiny", "f32"), ("tiny", "bf16"), ("groups2-rope-bias", "f32"),
                                  ("dense", "f32")],
                         ids=lambda c: "%s-%s" % c)
@pytest.mark.evidence(config_classes=["granitemoehybrid"], backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32 and BF16 files")
def test_granite_hybrid_matches_reference(cell, run_facet, tmp_path):
    """Logits of a 64-token prompt within 1e-4 relative error per position, 32 greedy
    steps identical while the reference's top-2 margin exceeds 1e-3."""
    variant, dtype = cell
    path = write(tmp_path, dtype=dtype, **VARIANTS[variant])
    run_and_compare(run_facet, path, N_PROMPT, N_GEN, tmp_path)


def test_granite_hybrid_long_prompt_in_chunks(run_facet, tmp_path):
    """A 600-token prompt (three forward chunks of at most 256 entries: the Mamba-2 state
    and the attention layer's KV cache carried between them) matches the reference."""
    path = write(tmp_path)
    run_and_compare(run_facet, path, 600, 4, tmp_path, seed=5)


def test_granite_hybrid_plan(run_facet, tmp_path):
    """facet plan on the full-size granite-4.0-h-tiny config, by hand.
    State per sequence: 36 Mamba-2 layers x (conv: (3072 + 2 x 1 x 128) channels x 3 +
    SSM: 3072 x 128) x 4 B = 36 x (9,984 + 393,216) x 4 = 58,060,800 bytes.
    KV (bf16) per token: naive 40 layers x 4 kv heads x 128 x 2 x 2 B = 81,920; actual:
    the 4 attention layers alone, 8,192 bytes per token (ctx 4096: 33,554,432 bytes)."""
    out = plan_full(run_facet, tmp_path, hybrid_ref.GRANITE_4_H_TINY)
    assert "recurrent state: 58060800 bytes per sequence" in out, out
    assert "per token, naive (layers x kv_heads x head_dim x 2 x 2 B): 81920 bytes" in out, out
    assert "per token, actual at ctx 4096: 8192.0 bytes (4 global, 0 windowed layers)" in out, out
    assert "(KV 32.00 MiB + state 55.37 MiB) x 2" in out, out


def test_granite_hybrid_refusals(run_facet, tmp_path):
    """Typed refusals naming the fact, its value and the range: in/out projection biases
    of the Mamba-2 mixer are not built; malformed shapes and layer types."""
    cfg = hybrid_ref.shrink(hybrid_ref.GRANITE_4_H_TINY)
    path = hybrid_ref.write(dict(cfg, mamba_proj_bias=True), str(tmp_path / "bias"))
    proc = run_facet(["conform", path])
    assert proc.returncode != 0
    assert "state-space mixer=mamba2 on 3 of 4 layers, each with its FFN with " \
           "mamba_proj_bias=true" in proc.stdout, proc.stdout
    assert "mamba_proj_bias=false" in proc.stdout
    for bad, needle in (({"mamba_d_head": 8}, "mamba_d_head is 8 (integer), expected \"auto\" or "
                         "mamba_expand * hidden_size / mamba_n_heads"),
                        ({"mamba_n_heads": 7}, "mamba_n_heads is 7 (integer), expected a divisor "
                         "of mamba_expand * hidden_size"),
                        ({"mamba_n_groups": 5}, "a divisor of mamba_n_heads"),
                        ({"layer_types": ["mamba", "attention"]},
                         "expected an array of num_hidden_layers (4) entries"),
                        ({"layer_types": ["mamba", "mamba", "linear_attention", "mamba"]},
                         "\"mamba\" or \"attention\""),
                        ({"position_embedding_type": "alibi"}, "null, \"nope\" or \"rope\"")):
        d = tmp_path / ("c-%s" % "-".join(sorted(bad)))
        d.mkdir(exist_ok=True)
        (d / "config.json").write_text(json.dumps(dict(cfg, **bad)))
        proc = run_facet(["conform", str(d)])
        assert proc.returncode != 0 and needle in proc.stderr, (bad, proc.stderr)


LFM2_VARIANTS = {
    "1.2b": {},
    "layer-types": {"layer_types": ["conv", "full_attention", "conv", "conv", "full_attention"]},
}


def lfm2_write(tmp_path, name="lfm2", dtype="f32", **over):
    return hybrid_ref.lfm2_write(hybrid_ref.lfm2_shrink(hybrid_ref.LFM2_1_2B, **over),
                                 str(tmp_path / name), dtype)


@pytest.mark.parametrize("cell", [("1.2b", "f32"), ("1.2b", "bf16"), ("layer-types", "f32")],
                         ids=lambda c: "%s-%s" % c)
@pytest.mark.evidence(config_classes=["lfm2"], backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32 and BF16 files")
def test_lfm2_matches_reference(cell, run_facet, tmp_path):
    """LFM2: logits of a 64-token prompt within 1e-4 per position, 32 greedy steps."""
    variant, dtype = cell
    path = lfm2_write(tmp_path, dtype=dtype, **LFM2_VARIANTS[variant])
    run_and_compare(run_facet, path, N_PROMPT, N_GEN, tmp_path, ref_class=hybrid_ref.Lfm2Reference)


def test_lfm2_long_prompt_in_chunks(run_facet, tmp_path):
    """LFM2: a 600-token prompt in three forward chunks (the conv window and the KV cache
    carried between them) matches the reference."""
    path = lfm2_write(tmp_path)
    run_and_compare(run_facet, path, 600, 4, tmp_path, seed=5, ref_class=hybrid_ref.Lfm2Reference)


def test_lfm2_plan(run_facet, tmp_path):
    """facet plan on the full-size LFM2-1.2B config, by hand.
    Parameters: embed 65536 x 2048 = 134,217,728; FFN (2/3 x 12288 = 8192) 16 x 3 x 2048 x
    8192 = 805,306,368; 10 conv layers x (3 x 2048^2 + 2048^2 + 2048 x 3) = 167,833,600;
    6 attention layers x (2 x 2048^2 + 2 x 512 x 2048 + 2 x 64) = 62,915,328; norms
    16 x 2 x 2048 + 2048 = 67,584: 1,170,340,608 (the published count).
    State per sequence: 10 conv layers x 2048 channels x 2 inputs x 4 B = 163,840 bytes.
    KV (bf16) per token: naive 16 x 8 x 64 x 2 x 2 B = 32,768; actual (6 attention
    layers) 12,288 bytes (ctx 4096: 48 MiB)."""
    out = plan_full(run_facet, tmp_path, hybrid_ref.LFM2_1_2B)
    assert "parameters: 1170340608 total" in out, out
    assert "recurrent state: 163840 bytes per sequence" in out, out
    assert "per token, naive (layers x kv_heads x head_dim x 2 x 2 B): 32768 bytes" in out, out
    assert "per token, actual at ctx 4096: 12288.0 bytes (6 global, 0 windowed layers)" in out, out
    assert "(KV 48.00 MiB + state 160.00 KiB) x 2" in out, out


def test_lfm2_refusals(run_facet, tmp_path):
    """Typed refusals naming the fact, its value and the range."""
    cfg = hybrid_ref.lfm2_shrink(hybrid_ref.LFM2_1_2B)
    d = tmp_path / "bias"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(dict(cfg, conv_bias=True)))
    proc = run_facet(["conform", str(d)])
    assert proc.returncode != 0
    assert "state-space mixer=shortconv on 3 of 4 layers, each with its FFN with " \
           "conv_bias=true" in proc.stdout, proc.stdout
    for bad, needle in (({"block_dim": 32}, "block_dim is 32 (integer), expected hidden_size"),
                        ({"full_attn_idxs": [7]}, "expected an array of layer indices in [0, 4)"),
                        ({"layer_types": ["conv", "sliding_attention", "conv", "conv"]},
                         "\"conv\" or \"full_attention\""),
                        ({"num_heads": 8}, "num_heads")):
        d = tmp_path / ("c-%s" % "-".join(sorted(bad)))
        d.mkdir(exist_ok=True)
        (d / "config.json").write_text(json.dumps(dict(cfg, **bad)))
        proc = run_facet(["conform", str(d)])
        assert proc.returncode != 0 and needle in proc.stderr, (bad, proc.stderr)



@pytest.mark.parametrize("layer_types,needle", [
    (["conv", "conv", "conv", "full_attention"],
     "model.layers.0 holds an attention layer's tensors (model.layers.0.self_attn.q_proj.weight)"
     " and none of a recurrent mixer layer's, but layer_types[0]=\"conv\" makes it a "
     "short-convolution layer"),
    (["full_attention", "full_attention", "conv", "conv"],
     "model.layers.1 holds a recurrent mixer layer's tensors (model.layers.1.conv.in_proj.weight) "
     "and none of an attention layer's, but layer_types[1]=\"full_attention\" makes it an "
     "attention layer"),
], ids=["attention-as-conv", "conv-as-attention"])
def test_lfm2_layer_types_disagreeing_with_the_tensors(layer_types, needle, run_facet,
                                                      tmp_path):
    """A layer_types that contradicts the checkpoint (layers attention, conv, conv, conv):
    the error blamed layer 0's missing q_norm; it names the layer, the tensors it holds
    and layer_types[i] with its value."""
    path = lfm2_write(tmp_path, layer_types=["full_attention", "conv", "conv", "conv"])
    cfg = json.loads((tmp_path / "lfm2" / "config.json").read_text())
    cfg["layer_types"] = layer_types
    (tmp_path / "lfm2" / "config.json").write_text(json.dumps(cfg))
    proc = run_facet(["run", str(path), "--prompt-ids", "1,2", "-n", "1"])
    assert proc.returncode == 1, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and needle in lines[0], proc.stderr


@pytest.mark.parametrize("mult", ["1e300", "1e-30"])
def test_lfm2_ffn_multiplier_out_of_range(mult, run_facet, tmp_path):
    """block_ffn_dim_multiplier scales 2/3 x block_ff_dim (384 -> 256 here): a product
    past int64 was cast unchecked (undefined; the tensor error then expected a width of
    -9223372036854775792), one below 1 gave an FFN of width 0. Both: one line naming it."""
    cfg = hybrid_ref.lfm2_shrink(hybrid_ref.LFM2_1_2B)
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, block_ffn_dim_multiplier=float(mult))))
    proc = run_facet(["conform", str(tmp_path)])
    assert proc.returncode == 1, proc.stderr
    assert ("block_ffn_dim_multiplier is %s (number), expected a multiplier making 2/3 x "
            "block_ff_dim x it (256 x it) an FFN width in [1, 16777216]" % mult) in proc.stderr


def test_lfm2_tensor_parallel_refusal_names_the_layers(run_facet, tmp_path):
    """LFM2's recurrent layers are gated short convolutions: the refusal of a tensor split
    called them Mamba layers."""
    cfg = hybrid_ref.lfm2_shrink(hybrid_ref.LFM2_1_2B)  # conv, conv, attention, conv
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    proc = run_facet(["plan", str(tmp_path), "--tensor-parallel", "2"])
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == ("facet: --tensor-parallel 2: the model has 3 recurrent (gated "
                           "short-convolution) layers, whose state is not split by heads; "
                           "T = 1 works\n")

NEMOTRON_VARIANTS = {
    "8b": {},
    "biases-list": {"attention_bias": True, "mlp_bias": True, "hybrid_override_pattern": "M-*MM",
                    "layers_block_type": ["mamba", "mlp", "attention", "mamba", "mamba"]},
}


def nemotron_write(tmp_path, name="nemotron", dtype="f32", **over):
    return hybrid_ref.nemotron_write(hybrid_ref.nemotron_shrink(hybrid_ref.NEMOTRON_H_8B, **over),
                                     str(tmp_path / name), dtype)


@pytest.mark.parametrize("cell", [("8b", "f32"), ("8b", "bf16"), ("biases-list", "f32")],
                         ids=lambda c: "%s-%s" % c)
@pytest.mark.evidence(config_classes=["nemotron_h"], backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32 and BF16 files")
def test_nemotron_h_matches_reference(cell, run_facet, tmp_path):
    """Nemotron-H (5 layers M * - M -, n_groups 2): logits of a 64-token prompt within
    1e-4 per position, 32 greedy steps; the biases variant gives its layers as
    layers_block_type (M - * M M), which the class takes over the pattern string."""
    variant, dtype = cell
    over = dict(NEMOTRON_VARIANTS[variant])
    path = nemotron_write(tmp_path, dtype=dtype, **over)
    if "layers_block_type" in over:  # the reference reads the pattern string
        cfg = json.loads((tmp_path / "nemotron" / "config.json").read_text())
        assert hybrid_ref.nemotron_facts(dict(cfg, hybrid_override_pattern="M-*MM"))["pat"] == "M-*MM"
        cfg["hybrid_override_pattern"] = "M-*MM"
        (tmp_path / "nemotron" / "config.json").write_text(json.dumps(cfg))
    run_and_compare(run_facet, path, N_PROMPT, N_GEN, tmp_path,
                    ref_class=hybrid_ref.NemotronHReference)


# NVIDIA-Nemotron-3-Nano-30B-A3B (hybrid_ref.NEMOTRON_3_NANO) shrunk: hidden 64, the MoE
# sizes by the same ratio (1856 -> 48, 3712 -> 88), 16 experts of which 4 per token (the
# released 128 / 6 would make a 6-layer checkpoint mostly experts), its scaling 2.5 and
# norm_topk_prob; a pattern with each block kind, two MoE layers
NANO_PATTERN = "MEM*E-"


def nano_write(tmp_path, dtype="f32", experts3d=False):
    cfg = hybrid_ref.nemotron_shrink(hybrid_ref.NEMOTRON_3_NANO, pattern=NANO_PATTERN,
                                     n_routed_experts=16, num_experts_per_tok=4)
    assert (cfg["moe_intermediate_size"], cfg["moe_shared_expert_intermediate_size"]) == (48, 88)
    return hybrid_ref.nemotron_write(cfg, str(tmp_path / "nano"), dtype, experts3d=experts3d)


@pytest.mark.parametrize("cell", [("per-expert", "f32"), ("3d", "f32"), ("per-expert", "bf16")],
                         ids=lambda c: "%s-%s" % c)
def test_nemotron_h_moe_matches_reference(cell, run_facet, tmp_path):
    """Nemotron-H with MoE layers (M E M * E -): sigmoid routing with the per-expert
    e_score_correction_bias, ungated relu2 experts and shared expert; logits of a 64-token
    prompt within 1e-4 per position in F32, 32 greedy steps where decisive. The experts as
    the released checkpoints store them (mixer.experts.N.up_proj.weight) and as 3-D
    tensors (transformers 5's NemotronHExperts parameters); a BF16 file (the reference
    reads its values; facet runs them in F32)."""
    layout, dtype = cell
    path = nano_write(tmp_path, dtype, experts3d=layout == "3d")
    # seed 3: the reference's 32 steps all decisive (seed 7's first margin is 2e-5)
    run_and_compare(run_facet, path, N_PROMPT, N_GEN, tmp_path, seed=3,
                    ref_class=hybrid_ref.NemotronHReference)


@pytest.mark.parametrize("moe", [False, True], ids=["dense", "moe"])
def test_nemotron_h_long_prompt_in_chunks(moe, run_facet, tmp_path):
    """Nemotron-H: a 600-token prompt in three forward chunks matches the reference (the
    MoE cell: each chunk's tokens grouped by expert)."""
    path = nano_write(tmp_path) if moe else nemotron_write(tmp_path)
    run_and_compare(run_facet, path, 600, 4, tmp_path, seed=5,
                    ref_class=hybrid_ref.NemotronHReference)


def test_nemotron_h_plan(run_facet, tmp_path):
    """facet plan on NemotronHConfig's defaults (the 8B shape), by hand: 24 Mamba-2, 4
    attention, 24 MLP layers. State per sequence: 24 x ((8192 + 2 x 8 x 128) x 3 + 8192 x
    128) x 4 B = 24 x 4,317,184 = 103,612,416 bytes. KV (bf16) per token: naive 52 x 8 x 128
    x 2 x 2 B = 212,992; actual, the 4 attention layers: 16,384 (ctx 4096: 64 MiB).
    Parameters: embeddings and untied head 2 x 131072 x 4096 = 1,073,741,824; Mamba-2
    24 x (in_proj 4096 x (8192 + 10240 + 128) + out_proj 4096 x 8192 + conv 10240 x (4 + 1)
    + dt_bias, A_log, D 3 x 128 + gated norm 8192 + norm 4096) = 24 x 109,640,064 =
    2,631,361,536; attention 4 x (2 x 4096^2 + 2 x 1024 x 4096 + 4096) = 4 x 41,947,136 =
    167,788,544; MLP 24 x (2 x 21504 x 4096 + 4096) = 4,227,956,736; final norm 4096:
    8,100,852,736."""
    out = plan_full(run_facet, tmp_path, hybrid_ref.NEMOTRON_H_8B)
    assert "parameters: 8100852736 total" in out, out
    assert "recurrent state: 103612416 bytes per sequence" in out, out
    assert "per token, naive (layers x kv_heads x head_dim x 2 x 2 B): 212992 bytes" in out, out
    assert "per token, actual at ctx 4096: 16384.0 bytes (4 global, 0 windowed layers)" in out, out
    assert "(KV 64.00 MiB + state 98.81 MiB) x 2" in out, out


def test_nemotron_h_moe_plan(run_facet, tmp_path):
    """facet plan on NVIDIA-Nemotron-3-Nano-30B-A3B's config (hybrid_ref.NEMOTRON_3_NANO),
    by hand: 23 Mamba-2, 23 MoE, 6 attention layers. Parameters: embeddings and untied
    head 2 x 131072 x 2688 = 704,643,072; Mamba-2 23 x (in_proj 2688 x (4096 + 6144 + 64)
    + out_proj 2688 x 4096 + conv 6144 x (4 + 1) + dt_bias, A_log, D 3 x 64 + gated norm
    4096 + norm 2688) = 23 x 38,744,896 = 891,132,608; attention 6 x (2 x 4096 x 2688 + 2 x
    256 x 2688 + 2688) = 6 x 23,399,040 = 140,394,240; MoE 23 x (router 128 x 2688 + score
    bias 128 + 128 ungated experts x 2 x 1856 x 2688 + shared 2 x 3712 x 2688 + norm 2688)
    = 23 x 1,297,468,160 = 29,841,767,680; final norm 2688: 31,577,940,288 (NVIDIA's card:
    31.6B). Read per token: that less 23 x 122 unchosen experts x 9,977,856 =
    3,580,076,352 (the card's ~3.5B active with embeddings). State per sequence: 23 x
    (6144 x 3 + 4096 x 128) x 4 B = 49,930,240. KV (bf16) per token on the 6 attention
    layers: 6 x 2 x 128 x 2 x 2 B = 6,144."""
    out = plan_full(run_facet, tmp_path, hybrid_ref.NEMOTRON_3_NANO)
    assert "parameters: 31577940288 total, 3580076352 read per decoded token" in out, out
    assert "recurrent state: 49930240 bytes per sequence" in out, out
    assert "per token, actual at ctx 4096: 6144.0 bytes (6 global, 0 windowed layers)" in out, out
    assert ("layers 1-1: none: the MoE FFN alone (128 experts, 6 a token, relu2, shared "
            "expert); mixer none (-), ffn moe") in out, out


def test_nemotron_h_moe_keys(run_facet, tmp_path):
    """NemotronHConfig's MoE spellings: "moe" in layers_block_type, num_local_experts (its
    attribute_map's name for n_routed_experts), a null moe_shared_expert_intermediate_size
    (NemotronHMLP then takes intermediate_size), norm_topk_prob false (no renormalisation);
    multi-token-prediction layers noted as not run; without an E layer the keys set no
    expert fact."""
    cfg = hybrid_ref.nemotron_shrink(hybrid_ref.NEMOTRON_3_NANO, pattern=NANO_PATTERN,
                                     n_routed_experts=16, num_experts_per_tok=4)
    del cfg["n_routed_experts"]
    cfg.update(num_local_experts=12, moe_shared_expert_intermediate_size=None,
               norm_topk_prob=False, intermediate_size=40, num_nextn_predict_layers=1,
               layers_block_type=["mamba", "moe", "mamba", "attention", "moe", "mlp"])
    for name, c, want in (("moe", cfg, "intermediate=40 vocab=512"),
                          ("dense", dict(cfg, layers_block_type=None, hybrid_override_pattern="M*-M-",
                                         num_hidden_layers=5),
                           "intermediate=40 vocab=512")):
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text(json.dumps(c))
        proc = run_facet(["conform", str(d)])
        facts = [l for l in proc.stdout.splitlines() if l.startswith("facts:")]
        assert facts and want in facts[0], proc.stdout + proc.stderr
        if name == "moe":
            assert ("experts=12 top_k=4 expert_intermediate=48 router=sigmoid-noaux_tc "
                    "sparse_layers=2 shared_expert=40") in facts[0], facts[0]
            assert ("note: num_nextn_predict_layers=1: multi-token-prediction layers are read "
                    "past, not run") in proc.stdout, proc.stdout
        else:
            assert "experts=" not in facts[0], facts[0]


def test_nemotron_h_refusals(run_facet, tmp_path):
    """Typed refusals naming the fact, its value and the range."""
    cfg = hybrid_ref.nemotron_shrink(hybrid_ref.NEMOTRON_H_8B)
    d = tmp_path / "bias"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(dict(cfg, mamba_proj_bias=True)))
    proc = run_facet(["conform", str(d)])
    assert proc.returncode != 0
    assert "state-space mixer=mamba2 on 2 of 5 layers with use_bias=true" in proc.stdout, proc.stdout
    moe = {"hybrid_override_pattern": "M*EM-", "n_routed_experts": 8, "moe_intermediate_size": 16,
           "moe_shared_expert_intermediate_size": 16}
    for bad, needle in (({"hybrid_override_pattern": "M*XM-"}, "layers of M (Mamba-2), * (attention), "
                         "- (MLP) or E (MoE)"),
                        (dict(moe, n_group=2, topk_group=1), "n_group is 2 (integer), expected 1"),
                        (dict(moe, moe_latent_size=32), "moe_latent_size is 32 (integer), "
                         "expected null"),
                        (dict(moe, num_experts_per_tok=9), "num_experts_per_tok is 9"),
                        (dict(moe, mlp_bias=True), "mlp_bias is true (true), expected false "
                         "with MoE layers"),
                        ({"hybrid_override_pattern": "M*-"}, "num_hidden_layers (5) layers of M"),
                        ({"mamba_hidden_act": "gelu"}, "mamba_hidden_act is \"gelu\" (string), "
                         "expected \"silu\""),
                        ({"n_groups": 3}, "a divisor of mamba_num_heads")):
        d = tmp_path / ("c-%s" % "-".join(sorted(bad)))
        d.mkdir(exist_ok=True)
        (d / "config.json").write_text(json.dumps(dict(cfg, **bad)))
        proc = run_facet(["conform", str(d)])
        assert proc.returncode != 0 and needle in proc.stderr, (bad, proc.stderr)


def test_time_step_limit_spellings(run_facet, tmp_path):
    """time_step_limit as transformers writes (0, inf): Python's bare Infinity (older
    releases; not JSON, read as transformers 5's {"__float__": "Infinity"}), that object,
    and the alias mamba_dt_limit: all the unclamped limit; a string holding the word
    stays a string; a finite limit is refused by name."""
    cfg = hybrid_ref.nemotron_shrink(hybrid_ref.NEMOTRON_H_8B)
    base = json.dumps(dict(cfg, note="Infinity, NaN: words in a string"))[:-1]
    cases = (('"time_step_limit": [0.0, Infinity]', 0),
             ('"time_step_limit": [0.0, {"__float__": "Infinity"}]', 0),
             ('"mamba_dt_limit": [0.0, Infinity], "time_step_limit": [0.0, 1.0]', 0),
             ('"time_step_limit": [0.0, 1.0]', 1))
    for i, (text, refused) in enumerate(cases):
        d = tmp_path / ("c%d" % i)
        d.mkdir()
        (d / "config.json").write_text(base + ", " + text + "}")
        proc = run_facet(["conform", str(d)])
        assert ("time_step_limit is [0.0,1.0]" in proc.stderr) == bool(refused), (text, proc.stderr)
        if not refused:
            assert proc.returncode == 3 and "supported-pending-probe" in proc.stdout, (text, proc.stdout)


@pytest.mark.parametrize("model_type", ["zamba2"])
def test_hybrids_not_built_are_refused_by_name(model_type, run_facet, tmp_path):
    """The issue's hybrids not built yet: a typed refusal naming model_type and the
    families that run, before any weight is read."""
    d = tmp_path / model_type
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": model_type, "hidden_size": 64,
                                               "num_hidden_layers": 2, "vocab_size": 512}))
    proc = run_facet(["conform", str(d)])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "REFUSED: model_type=%s is not supported on cpu (supported: " % model_type in proc.stdout
    assert "granitemoehybrid, bamba, falcon_h1, jamba, lfm2, nemotron_h" in proc.stdout


BAMBA_VARIANTS = {
    "9b": {},
    # n_groups 2 (the per-group gated norm), attention first and last
    "groups2": {"mamba_n_groups": 2, "attn_layer_indices": [0, 3]},
}


def bamba_write(tmp_path, name="bamba", dtype="f32", **over):
    return hybrid_ref.bamba_write(hybrid_ref.bamba_shrink(hybrid_ref.BAMBA_9B, **over),
                                  str(tmp_path / name), dtype)


@pytest.mark.parametrize("cell", [("9b", "f32"), ("9b", "bf16"), ("groups2", "f32")],
                         ids=lambda c: "%s-%s" % c)
@pytest.mark.evidence(config_classes=["bamba"], backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32 and BF16 files")
def test_bamba_matches_reference(cell, run_facet, tmp_path):
    """Logits of a 64-token prompt within 1e-4 per position, 32 greedy steps identical
    while the reference's top-2 margin exceeds 1e-3."""
    variant, dtype = cell
    path = bamba_write(tmp_path, dtype=dtype, **BAMBA_VARIANTS[variant])
    run_and_compare(run_facet, path, N_PROMPT, N_GEN, tmp_path,
                    ref_class=hybrid_ref.BambaReference)


def test_bamba_long_prompt_in_chunks(run_facet, tmp_path):
    """A 600-token prompt (three forward chunks: Mamba-2 state and the attention layer's
    KV cache carried between them) matches the reference."""
    path = bamba_write(tmp_path)
    run_and_compare(run_facet, path, 600, 4, tmp_path, seed=5,
                    ref_class=hybrid_ref.BambaReference)


def test_bamba_plan(run_facet, tmp_path):
    """facet plan on the full-size Bamba-9B config, by hand.
    State per sequence: 29 Mamba-2 layers x (conv: (8192 + 2 x 1 x 128) channels x 3 +
    SSM: 8192 x 128) x 4 B = 29 x (25,344 + 1,048,576) x 4 = 124,574,720 bytes.
    KV (bf16) per token: naive 32 layers x 8 kv heads x 128 x 2 x 2 B = 131,072; actual:
    the 3 attention layers alone, 12,288 bytes per token (ctx 4096: 48 MiB)."""
    out = plan_full(run_facet, tmp_path, hybrid_ref.BAMBA_9B)
    assert "recurrent state: 124574720 bytes per sequence" in out, out
    assert "per token, naive (layers x kv_heads x head_dim x 2 x 2 B): 131072 bytes" in out, out
    assert "per token, actual at ctx 4096: 12288.0 bytes (3 global, 0 windowed layers)" in out, out
    assert "(KV 48.00 MiB + state 118.80 MiB) x 2" in out, out


def test_bamba_refusals(run_facet, tmp_path):
    """Typed refusals naming the fact, its value and the range."""
    cfg = hybrid_ref.bamba_shrink(hybrid_ref.BAMBA_9B)
    path = hybrid_ref.bamba_write(dict(cfg, mamba_proj_bias=True), str(tmp_path / "bias"))
    proc = run_facet(["conform", path])
    assert proc.returncode != 0
    assert "mamba_proj_bias=true" in proc.stdout and "mamba_proj_bias=false" in proc.stdout, \
        proc.stdout
    for bad, needle in (({"attn_layer_indices": [4]},
                         "attn_layer_indices is [4] (array), expected an array of layer indices in [0, 4)"),
                        ({"attn_layer_indices": 2}, "an array of layer indices in [0, 4)"),
                        ({"mamba_n_heads": 7}, "mamba_n_heads is 7 (integer), expected a divisor "
                         "of mamba_expand * hidden_size")):
        d = tmp_path / ("c-%s-%s" % (next(iter(bad)), len(str(bad))))
        d.mkdir(exist_ok=True)
        (d / "config.json").write_text(json.dumps(dict(cfg, **bad)))
        proc = run_facet(["conform", str(d)])
        assert proc.returncode != 0 and needle in proc.stderr, (bad, proc.stderr)


def jamba_write(tmp_path, name="jamba", dtype="f32", **over):
    return hybrid_ref.jamba_write(hybrid_ref.jamba_shrink(hybrid_ref.JAMBA_V0_1, **over),
                                  str(tmp_path / name), dtype)


@pytest.mark.parametrize("cell", [("v0.1", "f32"), ("v0.1", "bf16"), ("dense", "f32")],
                         ids=lambda c: "%s-%s" % c)
@pytest.mark.evidence(config_classes=["jamba"], backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32 and BF16 files")
def test_jamba_matches_reference(cell, run_facet, tmp_path):
    """Logits of a 64-token prompt within 1e-4 per position, 32 greedy steps identical
    while the reference's top-2 margin exceeds 1e-3 (dense: num_experts 1, every FFN a
    plain MLP as JambaConfig's layers_num_experts makes it)."""
    variant, dtype = cell
    over = {"num_experts": 1} if variant == "dense" else {}
    path = jamba_write(tmp_path, dtype=dtype, **over)
    run_and_compare(run_facet, path, N_PROMPT, N_GEN, tmp_path,
                    ref_class=hybrid_ref.JambaReference)


def test_jamba_long_prompt_in_chunks(run_facet, tmp_path):
    """A 600-token prompt (three forward chunks: the Mamba state and the attention layer's
    KV cache carried between them) matches the reference."""
    path = jamba_write(tmp_path)
    run_and_compare(run_facet, path, 600, 4, tmp_path, seed=5,
                    ref_class=hybrid_ref.JambaReference)


def test_jamba_plan(run_facet, tmp_path):
    """facet plan on the full-size Jamba-v0.1 config, by hand.
    Parameters: embeddings + lm_head 2 x 65536 x 4096 = 536,870,912; norms 4096 + 32 x 2 x
    4096 = 266,240; 4 attention layers x (2 x 4096^2 + 2 x 1024 x 4096) = 167,772,160;
    28 Mamba layers x 105,308,448 (in_proj 16384 x 4096, conv 8192 x (4 + 1), x_proj
    288 x 8192, dt_proj 8192 x 256 + 8192, A_log 8192 x 16, D 8192, out_proj 4096 x 8192,
    dt/B/C norms 256 + 16 + 16) = 2,948,636,544; 16 MLP layers x 3 x 4096 x 14336 =
    2,818,572,288; 16 MoE layers x (16 x 176,160,768 + router 16 x 4096) = 45,098,205,184:
    51,570,323,328 in all (the published 52B), 12,110,311,296 read per token (2 of 16
    experts). State: 28 x (8192 x 3 + 8192 x 16) x 4 B = 17,432,576 bytes per sequence.
    KV (bf16): naive 32 x 8 x 128 x 2 x 2 B = 131,072 per token; 4 attention layers:
    16,384."""
    out = plan_full(run_facet, tmp_path, hybrid_ref.JAMBA_V0_1)
    assert "parameters: 51570323328 total, 12110311296 read per decoded token" in out, out
    assert "recurrent state: 17432576 bytes per sequence" in out, out
    assert "per token, naive (layers x kv_heads x head_dim x 2 x 2 B): 131072 bytes" in out, out
    assert "per token, actual at ctx 4096: 16384.0 bytes (4 global, 0 windowed layers)" in out, out


def test_jamba_refusals(run_facet, tmp_path):
    """Typed refusals naming the fact, its value and the range."""
    cfg = hybrid_ref.jamba_shrink(hybrid_ref.JAMBA_V0_1)
    path = hybrid_ref.jamba_write(dict(cfg, mamba_proj_bias=True), str(tmp_path / "bias"))
    proc = run_facet(["conform", path])
    assert proc.returncode != 0
    assert "state-space mixer=mamba on 3 of 4 layers, each with its FFN with " \
           "mamba_proj_bias=true" in proc.stdout, proc.stdout
    for bad, needle in (({"attn_layer_offset": 4}, "attn_layer_offset is 4 (integer), expected "
                         "less than attn_layer_period"),
                        ({"expert_layer_offset": 2}, "expert_layer_offset is 2 (integer), "
                         "expected less than expert_layer_period"),
                        ({"mamba_dt_rank": "big"}, "mamba_dt_rank is \"big\" (string), "
                         "expected \"auto\" or a positive integer"),
                        ({"sliding_window": 4096}, "sliding_window is 4096 (integer), expected "
                         "null (no window)")):
        d = tmp_path / ("c-%s" % "-".join(sorted(bad)))
        d.mkdir(exist_ok=True)
        (d / "config.json").write_text(json.dumps(dict(cfg, **bad)))
        proc = run_facet(["conform", str(d)])
        assert proc.returncode != 0 and needle in proc.stderr, (bad, proc.stderr)
