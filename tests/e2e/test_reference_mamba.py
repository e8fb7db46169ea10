"""Mamba (issue 26) against the float64 reference.

Shrunk checkpoints of the corpus's state-spaces/mamba-2.8b-hf config and of the public
state-spaces/mamba-130m-hf config (inline in tests/ref/mamba_ref.py), in F32 and BF16
files: 3 layers, hidden 64, the configs' state_size, conv_kernel and expand, an explicit
time_step_rank. Oracle: tests/ref/mamba_ref.py (transformers' MambaMixer semantics, the
recurrence run one token at a time, independently of src/engine/mixer_mamba.c). Batch and
chunk invariance bit for bit, state lifetime: tests/unit/test_engine_mamba.c.
"""

import json

import numpy as np
import pytest

import compare
import mamba_ref

N_PROMPT = 96
N_GEN = 32


def corpus_config(repo_root):
    p = repo_root / "tests" / "data" / "configs" / "state-spaces__mamba-2.8b-hf" / "config.json"
    if not p.exists():
        pytest.skip("no corpus config at %s" % p)
    return json.loads(p.read_text())


SOURCES = {"mamba-2.8b": corpus_config, "mamba-130m": lambda r: mamba_ref.MAMBA_130M}


def run_and_compare(run_facet, path, n_prompt, n_gen, tmp_path, seed=7):
    ref = mamba_ref.Reference(str(path))
    p = [int(x) for x in np.random.default_rng(seed).integers(0, ref.vocab_size, n_prompt)]
    dump = tmp_path / "logits.f32"
    proc = run_facet(["run", path, "--prompt-ids", ",".join(map(str, p)), "-n", str(n_gen),
                      "--json", "--ignore-eos", "--weights", "f32", "--no-cache",
                      "--dump-logits", dump], timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    obj = json.loads(proc.stdout)
    want = ref.generate(p, n_gen)
    rows = compare.read_logits(str(dump), ref.vocab_size)
    assert rows.shape == want["logits"].shape
    errs = compare.relative_errors(rows[:n_prompt], want["logits"][:n_prompt])
    assert errs.max() < 1e-4, "prompt position %d: relative error %.3g" % (int(errs.argmax()), errs.max())
    g = compare.greedy_agreement(obj["generated_ids"], want, 1e-3)
    assert g["mismatch"] is None, compare.describe(g)
    assert g["decisive"] >= min(8, n_gen), "only %d decisive steps" % g["decisive"]
    k = g["comparable_rows"]
    if k:
        e2 = compare.relative_errors(rows[n_prompt:n_prompt + k], want["logits"][n_prompt:n_prompt + k])
        assert e2.max() < 1e-4, "generated position %d: %.3g" % (int(e2.argmax()), e2.max())
    return errs.max()


@pytest.mark.parametrize("cell", [(s, d) for s in sorted(SOURCES) for d in ("f32", "bf16")],
                         ids=lambda c: "%s-%s" % c)
@pytest.mark.evidence(config_classes=["mamba"], backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32 and BF16 files")
def test_mamba_matches_reference(cell, run_facet, tmp_path, repo_root):
    """Logits of a 96-token prompt within 1e-4 relative error per position, 32 greedy
    steps identical while the reference's top-2 margin exceeds 1e-3."""
    src, dtype = cell
    path = mamba_ref.write(mamba_ref.shrink(SOURCES[src](repo_root)), str(tmp_path / "ck"), dtype)
    run_and_compare(run_facet, path, N_PROMPT, N_GEN, tmp_path)


def test_mamba_long_prompt_in_chunks(run_facet, tmp_path):
    """A 600-token prompt (three forward chunks of at most 256 entries, the state carried
    between them) matches the reference at every position."""
    path = mamba_ref.write(mamba_ref.shrink(mamba_ref.MAMBA_130M), str(tmp_path / "ck"))
    run_and_compare(run_facet, path, 600, 4, tmp_path, seed=5)


def test_mamba_refusals(run_facet, tmp_path):
    """Typed refusals: in/out projection biases (use_bias) are not built; a config whose
    intermediate_size is not expand * hidden_size is malformed."""
    cfg = mamba_ref.shrink(mamba_ref.MAMBA_130M)
    path = mamba_ref.write(dict(cfg, use_bias=True), str(tmp_path / "bias"))
    proc = run_facet(["conform", path])
    assert "state-space mixer=mamba with use_bias=true" in proc.stdout + proc.stderr
    path = mamba_ref.write(dict(cfg, intermediate_size=100), str(tmp_path / "inner"))
    proc = run_facet(["run", path, "--prompt-ids", "1,2", "-n", "1"])
    assert proc.returncode != 0
    assert "intermediate_size is 100" in proc.stderr and "expand * hidden_size" in proc.stderr
