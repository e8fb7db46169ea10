"""Baichuan (model_type baichuan, remote code) and Falcon's alibi option against the float64
reference (tests/ref/reference.py, written from the modeling files), issue 28.

Baichuan's four releases share model_type "baichuan"; the facts come from the keys their
configuration classes define (facts.c read_baichuan, DESIGN.md "Baichuan"):
max_position_embeddings (the 7B classes) -> rotary, model_max_length alone (the 13B
classes) -> ALiBi after the 1/sqrt(d) scale; z_loss_weight or the 125,696-token vocabulary
(Baichuan 2) -> NormHead, the lm_head rows L2-normalised at load. Falcon with alibi true
(falcon-rw-1b / 7b) adds BLOOM's slopes to q.k before the 1/sqrt(d) scale.

Each cell: a shrunk F32 checkpoint of a real config, logits over a 96-token prompt within
1e-4 relative error (--weights f32 --kv-cache f32) and 32 greedy steps identical where the
reference's top-2 margin exceeds 1e-3. Cells: Baichuan2-13B-Chat (corpus: ALiBi over 8
heads, NormHead), the same over 12 heads (the interleaved extra slopes), Baichuan2-7B-Chat
(inline: rotary, NormHead), falcon-rw-1b (inline: ALiBi scaled with q.k, per-head
[q; k; v] with biases, sequential block) over 8 and 12 heads. Then the refusals: a
baichuan config naming neither position key, one whose vocabulary names no release, and
a folder whose tokenizer is tokenizer.model alone.
"""

import json
import os

import numpy as np
import pytest

import compare

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG_DIR = os.path.join(REPO, "tests", "data", "configs")
BAICHUAN2_13B = os.path.join(CONFIG_DIR, "baichuan-inc__Baichuan2-13B-Chat")

# baichuan-inc/Baichuan2-7B-Chat config.json as published (public), written inline. Its
# keys and values match a copy re-saved by BaichuanConfig found in the code corpus
# (transformers 4.52.3: the same shape, max_position_embeddings and model_max_length both
# 4096, vocab_size 125696, plus the z_loss_weight its class writes).
BAICHUAN2_7B = {
    "_from_model_config": True, "architectures": ["BaichuanForCausalLM"],
    "auto_map": {"AutoConfig": "configuration_baichuan.BaichuanConfig",
                 "AutoModelForCausalLM": "modeling_baichuan.BaichuanForCausalLM"},
    "tokenizer_class": "BaichuanTokenizer", "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 11008, "max_position_embeddings": 4096, "model_max_length": 4096,
    "model_type": "baichuan", "num_attention_heads": 32, "num_hidden_layers": 32,
    "pad_token_id": 0, "rms_norm_eps": 1e-06, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "transformers_version": "4.29.2", "use_cache": True,
    "vocab_size": 125696,
}

# tiiuae/falcon-rw-1b config.json as published (public; the in-library FalconConfig
# version), written inline. Checked: vocab 50304, hidden 2048, 24 layers, biases and the
# 4 x hidden MLP give 1,311,625,216 parameters with the tied head, the count keras-hub's
# falcon_refinedweb_1b_en preset states for this model.
FALCON_RW_1B = {
    "alibi": True, "apply_residual_connection_post_layernorm": False,
    "architectures": ["FalconForCausalLM"], "attention_dropout": 0.0, "bias": True,
    "bos_token_id": 1, "eos_token_id": 2, "hidden_dropout": 0.0, "hidden_size": 2048,
    "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "falcon",
    "multi_query": False, "new_decoder_architecture": False, "num_attention_heads": 32,
    "num_hidden_layers": 24, "parallel_attn": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.33.0.dev0", "use_cache": True, "vocab_size": 50304,
}

# name -> (source, shrink kwargs)
CELLS = {
    "baichuan2-13b": (BAICHUAN2_13B, {}),
    "baichuan2-13b-12-heads": (BAICHUAN2_13B, {"num_attention_heads": 12,
                                               "num_key_value_heads": 12, "head_dim": 16}),
    "baichuan2-7b": (BAICHUAN2_7B, {}),
    "falcon-rw-1b": (FALCON_RW_1B, {}),
    "falcon-rw-12-heads": (FALCON_RW_1B, {"num_attention_heads": 12, "num_key_value_heads": 12,
                                          "head_dim": 16}),
}
N_PROMPT = 96
N_GEN = 32


@pytest.mark.parametrize("name", sorted(CELLS))
@pytest.mark.evidence(config_classes=["baichuan", "falcon"], backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32 files")
def test_alibi_class_matches_reference(name, make_checkpoint, reference_for, run_facet, tmp_path):
    src, shrink = CELLS[name]
    path = make_checkpoint(src, dtype="f32", shrink=shrink)
    ref = reference_for(path)
    f = ref.facts
    # the facts each cell is about, as the reference derives them from the config
    want_alibi = {"baichuan2-7b": None}.get(name, "falcon" if name.startswith("falcon") else "baichuan")
    assert f.alibi == want_alibi
    assert f.lm_head_norm == name.startswith("baichuan")
    p = [int(x) for x in np.random.default_rng(7).integers(0, f.vocab_size, N_PROMPT)]
    dump = tmp_path / "logits.f32"
    proc = run_facet(["run", path, "--prompt-ids", ",".join(map(str, p)), "-n", str(N_GEN),
                      "--json", "--ignore-eos", "--weights", "f32", "--kv-cache", "f32",
                      "--dump-logits", dump])
    assert proc.returncode == 0, proc.stderr[-2000:]
    obj = json.loads(proc.stdout)
    want = ref.generate(p, N_GEN)
    assert sum(m > 1e-3 for m in want["margins"]) >= N_GEN - 4, want["margins"]
    rows = compare.read_logits(str(dump), f.vocab_size)
    assert rows.shape == want["logits"].shape
    errs = compare.relative_errors(rows[:N_PROMPT], want["logits"][:N_PROMPT])
    print("%s: prompt max relative error %.3g" % (name, errs.max()))
    assert errs.max() < 1e-4, "prompt position %d: relative error %.3g" % (int(errs.argmax()), errs.max())
    g = compare.greedy_agreement(obj["generated_ids"], want, 1e-3)
    assert g["mismatch"] is None, compare.describe(g)


def test_baichuan_ambiguous_configs_refused(make_checkpoint, run_facet, tmp_path):
    """A baichuan config the keys cannot place in a release is refused by name before any
    weight is read (exit 2): no position key (the 7B classes' max_position_embeddings, the
    13B classes' model_max_length), or a vocabulary of neither release without Baichuan 2's
    z_loss_weight."""
    cfg = json.loads(open(os.path.join(BAICHUAN2_13B, "config.json")).read())
    cases = {"positions": (dict(cfg, model_max_length=None), "model_max_length"),
             "head": (dict(cfg, vocab_size=1000), "vocab_size 1000 and no z_loss_weight")}
    for name, (c, want) in cases.items():
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text(json.dumps({k: v for k, v in c.items() if v is not None}))
        proc = run_facet(["conform", d])
        assert proc.returncode == 2 and want in proc.stderr, (name, proc.stdout, proc.stderr)


def test_baichuan_sentencepiece_tokenizer_refused_by_name(make_checkpoint, run_facet, tmp_path):
    """Baichuan ships tokenizer.model (a SentencePiece ModelProto read by its own
    tokenization_baichuan.py) and no tokenizer.json. facet does not read SentencePiece model
    files: text in or out of such a folder is refused by name (exit 2, FACET_E_UNSUPPORTED,
    naming tokenizer.model); the checkpoint still runs on token ids."""
    src = make_checkpoint(BAICHUAN2_13B, dtype="f32", shrink={})
    d = tmp_path / "baichuan"
    d.mkdir()
    for fn in ("config.json", "model.safetensors"):
        (d / fn).symlink_to(os.path.join(src, fn))
    # a real SentencePiece model file: the bundled model's
    (d / "tokenizer.model").symlink_to(os.path.join(REPO, "models", "stories260k", "tokenizer.model"))
    want = "%s: a SentencePiece model" % (d / "tokenizer.model")
    for args in (["tokenize", d, "hi"], ["run", d, "--prompt", "hi", "-n", "1"]):
        proc = run_facet(args)
        assert proc.returncode == 2 and want in proc.stderr, (args, proc.stderr)
        assert "give the prompt as token ids (--prompt-ids)" in proc.stderr, proc.stderr
    proc = run_facet(["run", d, "--prompt-ids", "1,2,3", "-n", "2", "--ignore-eos", "--no-cache"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[:3] == ["1", "2", "3"], proc.stdout


@pytest.mark.parametrize("name", ["baichuan2-13b", "baichuan2-7b", "falcon-rw-1b"])
def test_conform_names_the_positions_and_head(name, run_facet, tmp_path):
    """conform on the full configs says which facts the keys chose: Baichuan2-13B (corpus)
    ALiBi after the scale and the L2-normalised head, supported pending the probe;
    Baichuan2-7B rotary with the normalised head; falcon-rw-1b ALiBi scaled with q.k."""
    src = CELLS[name][0]
    d = tmp_path / name
    d.mkdir()
    cfg = json.loads(open(os.path.join(src, "config.json")).read()) if isinstance(src, str) else src
    (d / "config.json").write_text(json.dumps(cfg))
    out = tmp_path / "conform.json"
    proc = run_facet(["conform", d, "--json", out])
    assert proc.returncode == 3, proc.stdout + proc.stderr  # supported pending the probe
    facts = json.loads(out.read_text())["facts"]
    head = name.startswith("baichuan")
    assert facts.get("alibi", False) == (name != "baichuan2-7b")
    assert facts.get("alibi_pre_scale", False) == (name == "falcon-rw-1b")
    assert facts.get("lm_head_l2_norm", False) == head
    assert ("lm_head=l2-normalised" in proc.stdout) == head, proc.stdout
    want = {"baichuan2-13b": "alibi max_bias=8 (no rotary)",
            "baichuan2-7b": "rope-default rotate_half theta=10000",
            "falcon-rw-1b": "alibi max_bias=8, scaled with q.k (no rotary)"}[name]
    assert want in proc.stdout, proc.stdout
