"""Every corpus config the capability table supports runs like the float64 reference.

For each config of tests/data/configs (copies of ../shared/corpus/configs) whose cpu
verdict is supported, a shrunk checkpoint with the same facts (4 layers, so that local
and global layers both occur where the config mixes them; a live window shrunk to 16 so
the 96-token prompt is longer than it; vocab 512) is generated in F32 and BF16 by
tests/ref/gen_checkpoint.py. facet's logits over the prompt must be within 1e-4 relative
error (||delta|| / ||ref|| per position) of tests/ref/reference.py, and 32 greedy steps
identical wherever the reference's top-2 margin exceeds 1e-3 (issue 6 acceptance).
Refused configs are checked to be refused by `facet run` too, with conform's lines.
"""

import json

import numpy as np
import pytest

import compare

N_PROMPT = 96
N_GEN = 32
WINDOW = 16


def corpus_configs(repo_root):
    return sorted(p for p in (repo_root / "tests" / "data" / "configs").iterdir()
                  if (p / "config.json").is_file())


def pytest_generate_tests(metafunc):
    if "corpus_cell" in metafunc.fixturenames:
        import pathlib
        repo = pathlib.Path(__file__).resolve().parents[2]
        cells = [(d.name, dtype) for d in corpus_configs(repo) for dtype in ("f32", "bf16")]
        metafunc.parametrize("corpus_cell", cells, ids=["%s-%s" % c for c in cells])


@pytest.mark.evidence(checkpoints="supported-corpus", backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32 and BF16 files")
def test_corpus_config_matches_reference(corpus_cell, repo_root, run_facet, make_checkpoint,
                                         reference_for, tmp_path):
    name, dtype = corpus_cell
    src = repo_root / "tests" / "data" / "configs" / name
    out = tmp_path / "conform.json"
    proc = run_facet(["conform", str(src), "--json", str(out)])
    assert proc.returncode in (2, 3), proc.stdout + proc.stderr  # a bare config.json
    obj = json.loads(out.read_text())
    if proc.returncode == 2:
        refusals = [r["text"] for r in obj["verdict"]["refusals"]]
        assert refusals, obj
        pytest.skip("refused by the table: " + refusals[0])
    if obj["facts"].get("model_type") in ("mamba", "mamba2"):
        # state spaces: their checkpoints and float64 oracle are tests/ref/mamba_ref.py
        import mamba_ref
        cfg = json.loads((src / "config.json").read_text())
        small = mamba_ref.shrink2 if cfg["model_type"] == "mamba2" else mamba_ref.shrink
        path = mamba_ref.write(small(cfg, num_hidden_layers=4), str(tmp_path / "ck"), dtype)
        ref = mamba_ref.Reference(path)
        vocab = ref.vocab_size
    elif obj["facts"].get("model_type") in ("deepseek_v2", "deepseek_v3"):
        # latent attention: its checkpoints and float64 oracle are tests/ref/mla_ref.py
        # (the FP8 release's quantization_config dropped: the F32 / BF16 files of its facts)
        import mla_ref
        cfg = json.loads((src / "config.json").read_text())
        small = mla_ref.shrink(cfg, num_hidden_layers=4, experts=32, first_k_dense_replace=1)
        path = mla_ref.write(small, str(tmp_path / "ck"), dtype)
        ref = mla_ref.Reference(path)
        vocab = ref.f.vocab_size
    else:
        cfg = json.loads((src / "config.json").read_text())
        mxfp4 = (cfg.get("quantization_config") or {}).get("quant_method") == "mxfp4"
        shrink, kw = {"num_hidden_layers": 4}, {}
        if obj["facts"].get("n_sliding_layers", 0) > 0:
            shrink["sliding_window"] = WINDOW
        if mxfp4:  # gpt-oss's 4-bit experts: whole blocks of 32, test_moe_mxfp4's gain
            shrink.update(hidden_size=128, intermediate_size=128)
            kw["gain"] = 1.0
        path = make_checkpoint(src, dtype=dtype, shrink=shrink, **kw)
        ref = reference_for(path)
        if mxfp4:  # 8-bit inputs to the 4-bit experts, as the int8 dot rounds them
            ref.expert_act_round = "q8_0"
        vocab = ref.facts.vocab_size
    p = [int(x) for x in np.random.default_rng(5).integers(3, vocab, N_PROMPT)]
    dump = tmp_path / "logits.f32"
    run = run_facet(["run", str(path), "--prompt-ids", ",".join(map(str, p)), "-n", str(N_GEN),
                     "--json", "--ignore-eos", "--weights", "f32", "--no-cache", "--dump-logits", str(dump)])
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout)
    want = ref.generate(p, N_GEN)
    rows = compare.read_logits(str(dump), vocab)
    errs = compare.relative_errors(rows[:N_PROMPT], want["logits"][:N_PROMPT])
    if getattr(ref, "expert_act_round", None):  # a Q8_0 rounding flip moves a position
        bad = compare.rounding_flip_agreement(errs)
        assert bad is None, "%s %s: %s" % (name, dtype, bad)
    else:
        assert errs.max() < 1e-4, "%s %s: prompt position %d: relative error %.3g" % (
            name, dtype, int(errs.argmax()), errs.max())
    g = compare.greedy_agreement(got["generated_ids"], want,
                                 1e-2 if getattr(ref, "expert_act_round", None) else 1e-3)
    assert g["mismatch"] is None, compare.describe(g)
