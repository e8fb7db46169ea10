"""Issue 2 acceptance: facet's forward pass against the float64 NumPy reference.

Generated checkpoints (tests/ref/gen_checkpoint.py) from four real configs
(tests/data/ref/configs, see SOURCE.md there), shrunk with their facts kept:
  llama   TinyLlama-1.1B: untied lm_head, no bias
  qwen2   Qwen2.5-0.5B: q/k/v bias, tied
  qwen3   Qwen3-0.6B: q/k-norm, tied, explicit head_dim (heads x head_dim != hidden_size)
  llama32 Llama-3.2-1B: llama3 rope_scaling, tied
each in F32 and BF16, single file and 3 shards (16 cells; plus F16 single): logits of a 48-token prompt
within 1e-4 relative error (||delta|| / ||ref|| per position) of the reference, and 32
greedy steps token-identical wherever the reference's top-2 margin exceeds 1e-3.

The reference itself is validated against the published oracle of the bundled model
(models/stories260k/expected.json: ids from llama2.c's own expectations).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import compare
import gen_checkpoint
import hf_facts
import reference
import safetensors_io

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG_DIR = os.path.join(REPO, "tests", "data", "ref", "configs")
CONFIGS = {
    "llama": "TinyLlama__TinyLlama-1.1B-Chat-v1.0__resaved",
    "qwen2": "Qwen__Qwen2.5-0.5B__resaved",
    "qwen3": "Qwen__Qwen3-0.6B__dims",
    "llama32": "meta-llama__Llama-3.2-1B-Instruct__resaved",
}
SHRINK = {}  # gen_checkpoint.shrink_config defaults: 2 layers, head_dim 32, vocab 512
N_PROMPT = 48
N_GEN = 32
REL_TOL = 1e-4
MIN_MARGIN = 1e-3
CELLS = [(fam, dtype, shards) for fam in CONFIGS for dtype in ("f32", "bf16") for shards in (1, 3)]
CELLS += [(fam, "f16", 1) for fam in CONFIGS]  # beyond the acceptance: F16 storage too


def config_path(fam):
    return os.path.join(CONFIG_DIR, CONFIGS[fam])


def prompt_for(fam, vocab):
    rng = np.random.default_rng(sorted(CONFIGS).index(fam) + 100)
    return [int(x) for x in rng.integers(0, vocab, N_PROMPT)]


def cell_id(cell):
    return "%s-%s-%s" % (cell[0], cell[1], "single" if cell[2] == 1 else "sharded%d" % cell[2])


# ------------------------------------------------------------------ the reference itself

def _stories_expected(repo_root):
    with open(repo_root / "models" / "stories260k" / "expected.json") as f:
        return json.load(f)


def test_reference_reproduces_stories260k_published_ids(repo_root):
    """The float64 reference, run on the bundled real model, gives the published greedy
    ids (llama2.c's expected output) and top-5 logits."""
    exp = _stories_expected(repo_root)
    ref = reference.Reference(str(repo_root / "models" / "stories260k"))
    g = exp["greedy_from_bos"]
    out = ref.generate(g["input_ids"], g["new_tokens"])
    assert out["generated_ids"] == g["generated_ids"]
    for p in exp["prompts"]:
        out = ref.generate(p["prompt_ids"], len(p["generated_ids"]))
        assert out["generated_ids"] == p["generated_ids"], p["prompt"]
        first = out["logits"][len(p["prompt_ids"]) - 1]
        for tok, val in p["top5_first"]:
            assert abs(first[tok] - val) < 1e-9, (p["prompt"], tok)
        assert abs(min(out["margins"]) - p["min_margin"]) < 1e-9


@pytest.mark.parametrize("fam", sorted(CONFIGS))
def test_shrunk_config_keeps_facts(fam):
    """Shrinking keeps the facts each cell is about."""
    src = gen_checkpoint.load_config(config_path(fam))
    small = gen_checkpoint.shrink_config(src, **SHRINK)
    a, b = hf_facts.facts(src), hf_facts.facts(small)
    assert b.num_hidden_layers == 2 and b.vocab_size == 512
    assert a.num_attention_heads // a.num_key_value_heads == b.num_attention_heads // b.num_key_value_heads
    for k in ("model_type", "tie_word_embeddings", "qkv_bias", "o_bias", "qk_norm", "hidden_act",
              "rms_norm_eps", "max_position_embeddings", "sliding_window"):
        assert getattr(a, k) == getattr(b, k), k
    assert b.layer_types == a.layer_types[:2]
    assert a.rope_global.scaling == b.rope_global.scaling
    assert a.rope_global.theta == b.rope_global.theta
    assert ("head_dim" in src) == ("head_dim" in small)
    assert (a.num_attention_heads * a.head_dim == a.hidden_size) == \
        (b.num_attention_heads * b.head_dim == b.hidden_size)
    ids = [small.get("eos_token_id")] if not isinstance(small.get("eos_token_id"), list) else small["eos_token_id"]
    assert all(0 <= i < 512 for i in ids if i is not None)
    if fam == "qwen3":
        assert b.num_attention_heads * b.head_dim != b.hidden_size
    if fam == "llama32":
        assert b.rope_global.rope_type == "llama3"


def _tensor_names(path):
    return set(safetensors_io.TensorStore(str(path)).names())


@pytest.mark.parametrize("fam", sorted(CONFIGS))
def test_generated_checkpoint_tensors(fam, make_checkpoint):
    """Tensor names and shapes are those a transformers *ForCausalLM loads."""
    path = make_checkpoint(config_path(fam), shrink=SHRINK)
    with open(path / "config.json") as f:
        f_ = hf_facts.facts(json.load(f))
    st = safetensors_io.TensorStore(str(path))
    H, nh, kv, hd = f_.hidden_size, f_.num_attention_heads, f_.num_key_value_heads, f_.head_dim
    assert st.shape("model.embed_tokens.weight") == (512, H)
    assert st.shape("model.layers.1.self_attn.q_proj.weight") == (nh * hd, H)
    assert st.shape("model.layers.1.self_attn.k_proj.weight") == (kv * hd, H)
    assert st.shape("model.layers.1.self_attn.o_proj.weight") == (H, nh * hd)
    assert st.shape("model.layers.0.mlp.down_proj.weight") == (H, f_.intermediate_size)
    names = set(st.names())
    assert ("lm_head.weight" in names) == (fam == "llama")
    assert ("model.layers.0.self_attn.q_proj.bias" in names) == (fam == "qwen2")
    assert "model.layers.0.self_attn.o_proj.bias" not in names
    assert ("model.layers.0.self_attn.q_norm.weight" in names) == (fam == "qwen3")
    if fam == "qwen3":
        assert st.shape("model.layers.0.self_attn.k_norm.weight") == (hd,)


def test_safetensors_layout(make_checkpoint):
    """Files follow the format: 8-byte LE header length (header padded to 8), JSON
    header with __metadata__, contiguous in-bounds offsets; the index maps every tensor."""
    path = make_checkpoint(config_path("qwen2"), dtype="bf16", shards=3, shrink=SHRINK)
    with open(path / "model.safetensors.index.json") as f:
        index = json.load(f)
    shards = sorted(set(index["weight_map"].values()))
    assert shards == ["model-0000%d-of-00003.safetensors" % i for i in (1, 2, 3)]
    total = 0
    seen = set()
    for fn in shards:
        header, meta, start = safetensors_io.read_header(str(path / fn))
        assert (start - 8) % 8 == 0 and meta == {"format": "pt"}
        pos = 0
        for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
            assert info["dtype"] == "BF16"
            b, e = info["data_offsets"]
            assert b == pos and e - b == 2 * int(np.prod(info["shape"]))
            pos = e
            assert index["weight_map"][name] == fn
            seen.add(name)
        assert start + pos == os.path.getsize(path / fn)
        total += pos
    assert index["metadata"]["total_size"] == total
    assert seen == set(index["weight_map"])


def test_bf16_and_shards_hold_the_same_weights(make_checkpoint):
    """Weights depend only on (seed, name): BF16 is the round-to-nearest-even of the F32
    values, and sharding changes no value."""
    a = safetensors_io.TensorStore(str(make_checkpoint(config_path("llama32"), shrink=SHRINK)))
    b = safetensors_io.TensorStore(str(make_checkpoint(config_path("llama32"), dtype="bf16", shards=3,
                                                       shrink=SHRINK)))
    c = safetensors_io.TensorStore(str(make_checkpoint(config_path("llama32"), dtype="f16",
                                                       shrink=SHRINK)))
    assert a.names() == b.names() == c.names()
    for n in a.names():
        f32 = a[n].astype(np.float32)
        want = safetensors_io.bf16_bits_to_f32(safetensors_io.f32_to_bf16_bits(f32))
        np.testing.assert_array_equal(b[n], want.astype(np.float64))
        np.testing.assert_array_equal(c[n], f32.astype(np.float16).astype(np.float64))


def test_bf16_rounding_is_nearest_even():
    x = np.array([1.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 1.0 + 2 ** -8 + 2 ** -20, -2.5, 0.0],
                 dtype=np.float32)
    got = safetensors_io.bf16_bits_to_f32(safetensors_io.f32_to_bf16_bits(x))
    np.testing.assert_array_equal(got, np.array([1.0, 1.0, 1.0 + 4 * 2 ** -8, 1.0 + 2 ** -7, -2.5, 0.0],
                                                dtype=np.float32))


def test_llama3_inv_freq_regimes():
    """llama3 rope_scaling (transformers _compute_llama3_parameters): wavelengths below
    original/high_freq_factor unchanged, above original/low_freq_factor divided by factor,
    smooth in between."""
    spec = hf_facts.RopeSpec(theta=500000.0, scaling={"rope_type": "llama3", "factor": 32.0,
                                                      "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                      "original_max_position_embeddings": 8192},
                             rotary_dim=32, max_position_embeddings=131072,
                             original_max_position_embeddings=None)
    inv, att = reference.rope_inv_freq(spec)
    base = 1.0 / 500000.0 ** (np.arange(0, 32, 2) / 32)
    wl = 2 * np.pi / base
    hi, lo = wl < 8192 / 4, wl > 8192
    assert att == 1.0 and hi.any() and lo.any() and (~hi & ~lo).any()
    np.testing.assert_array_equal(inv[hi], base[hi])
    np.testing.assert_allclose(inv[lo], base[lo] / 32, rtol=1e-15)
    mid = ~hi & ~lo
    assert np.all(inv[mid] < base[mid]) and np.all(inv[mid] > base[mid] / 32)


@pytest.mark.parametrize("fam", sorted(CONFIGS))
def test_reference_incremental_equals_full(fam, make_checkpoint, reference_for):
    """KV-cached generation rows equal a single full-sequence forward pass, and the
    random weights give non-degenerate greedy runs (decisive margins, varied tokens)."""
    path = make_checkpoint(config_path(fam), shrink=SHRINK)
    ref = reference_for(path)
    prompt = prompt_for(fam, ref.facts.vocab_size)
    out = ref.generate(prompt, N_GEN)
    full = ref.logits(prompt + out["generated_ids"][:-1])
    assert out["logits"].shape == (N_PROMPT + N_GEN - 1, 512)
    assert np.max(np.abs(full - out["logits"])) < 1e-10
    assert sum(m > MIN_MARGIN for m in out["margins"]) >= N_GEN - 2
    assert len(set(out["generated_ids"])) >= 8


def test_cli_tools(tmp_path):
    """gen_checkpoint.py and reference.py as command lines."""
    out = tmp_path / "ck"
    subprocess.run([sys.executable, os.path.join(REPO, "tests", "ref", "gen_checkpoint.py"),
                    config_path("qwen3"), str(out), "--shrink", "--dtype", "bf16", "--shards", "2",
                    "--set", "rms_norm_eps=1e-5"], check=True, capture_output=True)
    with open(out / "config.json") as f:
        cfg = json.load(f)
    assert cfg["rms_norm_eps"] == 1e-5 and cfg["torch_dtype"] == "bfloat16"
    assert (out / "model-00002-of-00002.safetensors").exists()
    dump = tmp_path / "l.f32"
    p = subprocess.run([sys.executable, os.path.join(REPO, "tests", "ref", "reference.py"), str(out),
                        "--prompt-ids", "1,2,3", "-n", "4", "--dump-logits", str(dump)],
                       check=True, capture_output=True, text=True)
    obj = json.loads(p.stdout)
    assert len(obj["generated_ids"]) == 4 and len(obj["margins"]) == 4
    assert compare.read_logits(str(dump), 512).shape == (3 + 4 - 1, 512)


# ------------------------------------------------------------------ facet vs the reference

@pytest.mark.parametrize("cell", CELLS, ids=cell_id)
@pytest.mark.evidence(checkpoints=CONFIGS, backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32/BF16/F16 files, sharded")
def test_facet_matches_reference(cell, make_checkpoint, reference_for, facet_generate):
    fam, dtype, shards = cell
    path = make_checkpoint(config_path(fam), dtype=dtype, shards=shards, shrink=SHRINK)
    ref = reference_for(path)
    prompt = prompt_for(fam, ref.facts.vocab_size)
    want = ref.generate(prompt, N_GEN)
    got = facet_generate(path, prompt, N_GEN, extra=["--weights", "f32"])
    obj, rows = got["json"], got["logits"]
    assert obj["prompt_ids"] == prompt
    assert len(obj["generated_ids"]) == N_GEN, obj.get("finish_reason")
    assert rows.shape == (N_PROMPT + N_GEN - 1, ref.facts.vocab_size)

    errs = compare.relative_errors(rows[:N_PROMPT], want["logits"][:N_PROMPT])
    worst = int(np.argmax(errs))
    assert errs[worst] < REL_TOL, "prompt position %d: relative error %.3g" % (worst, errs[worst])

    g = compare.greedy_agreement(obj["generated_ids"], want, MIN_MARGIN)
    assert g["mismatch"] is None, compare.describe(g)
    assert g["decisive"] >= N_GEN // 2, "reference too indecisive to test: %s" % compare.describe(g)
    k = g["comparable_rows"]
    if k:
        e2 = compare.relative_errors(rows[N_PROMPT:N_PROMPT + k], want["logits"][N_PROMPT:N_PROMPT + k])
        assert e2.max() < REL_TOL, "generated position %d: relative error %.3g" % (
            int(np.argmax(e2)), e2.max())


@pytest.mark.evidence(checkpoints=["stories260k"], backend="cpu", weights=["f32"],
                      oracle="float64 reference logits")
def test_facet_stories260k_logits_match_reference(repo_root, reference_for, facet_generate):
    """The bundled real model: facet's logits within 1e-4 of the reference at every
    position of a published prompt and its first 16 generated tokens."""
    exp = _stories_expected(repo_root)
    p = exp["prompts"][0]
    model = repo_root / "models" / "stories260k"
    ref = reference_for(model)
    want = ref.generate(p["prompt_ids"], 16)
    got = facet_generate(model, p["prompt_ids"], 16)
    assert got["json"]["generated_ids"] == p["generated_ids"][:16]
    errs = compare.relative_errors(got["logits"], want["logits"])
    assert errs.max() < REL_TOL, "position %d: %.3g" % (int(np.argmax(errs)), errs.max())


def test_facet_asan_cell_matches_reference(make_checkpoint, reference_for, facet_generate, facet_asan_bin):
    """One cell (Qwen3, BF16, sharded: every loader and forward path of the richest
    facts) under the ASan+UBSan build: same logits, a clean exit."""
    path = make_checkpoint(config_path("qwen3"), dtype="bf16", shards=3, shrink=SHRINK)
    ref = reference_for(path)
    prompt = prompt_for("qwen3", ref.facts.vocab_size)
    want = ref.generate(prompt, 8)
    got = facet_generate(path, prompt, 8, bin=facet_asan_bin)
    assert "Sanitizer" not in got["proc"].stderr and "runtime error" not in got["proc"].stderr
    errs = compare.relative_errors(got["logits"], want["logits"])
    assert errs.max() < REL_TOL
    assert got["json"]["generated_ids"] == want["generated_ids"]


def test_synthetic_config_has_the_requested_facts():
    """gen_checkpoint.synthetic_config over issue 5's whole fact space (576 cells)."""
    import itertools
    n = 0
    for hd, qk, win, rope, act, bias, tie, g in itertools.product(
            [64, 96, 128], [0, 1], [None, 16], ["plain", "llama3"],
            ["silu", "gelu_pytorch_tanh"], [0, 1], [0, 1], [1, 2, 4]):
        f = hf_facts.facts(gen_checkpoint.synthetic_config(
            head_dim=hd, qk_norm=qk, sliding_window=win, rope=rope, hidden_act=act,
            qkv_bias=bias, tie=tie, gqa=g))
        assert (f.qk_norm == "head") == bool(qk) and f.qkv_bias == bool(bias)
        assert f.tie_word_embeddings == bool(tie) and f.head_dim == hd and f.hidden_act == act
        assert f.num_attention_heads // f.num_key_value_heads == g
        assert ("sliding_attention" in f.layer_types) == (win is not None)
        assert f.rope_global.rope_type == ("llama3" if rope == "llama3" else "default")
        n += 1
    assert n == 576


def test_facet_second_load_same_logits(make_checkpoint, reference_for, facet_generate):
    """The second run of a checkpoint (weights from facet's on-disk cache when it has
    one) gives bit-identical logits to the first, both within tolerance of the
    reference."""
    path = make_checkpoint(config_path("llama32"), dtype="bf16", shrink=SHRINK, seed=1)
    ref = reference_for(path)
    prompt = prompt_for("llama32", ref.facts.vocab_size)
    want = ref.generate(prompt, 4)
    first = facet_generate(path, prompt, 4)
    second = facet_generate(path, prompt, 4)
    np.testing.assert_array_equal(first["logits"], second["logits"])
    assert compare.relative_errors(second["logits"], want["logits"]).max() < REL_TOL
