"""Judging an engine's output against the float64 reference (tests/ref/reference.py).

    import compare
    errs = compare.relative_errors(got_rows, ref_rows)        # per position ||d|| / ||ref||
    g = compare.greedy_agreement(got_ids, ref_out, min_margin=1e-3)
    assert g["mismatch"] is None, compare.describe(g)
    rows = g["comparable_rows"]   # rows of --dump-logits whose context equals the reference's

Greedy identity is judged only where the reference is decisive: steps are compared in
order while the reference's top1 - top2 margin exceeds min_margin; at the first step
whose margin is at or below it the comparison stops (that step may legitimately go
either way, and after a different token the contexts differ).
"""

import numpy as np


def read_logits(path, vocab_size):
    """Rows of a facet --dump-logits file: little-endian float32, vocab_size per row."""
    raw = np.fromfile(path, dtype="<f4")
    if raw.size % vocab_size:
        raise ValueError("%s: %d floats is not a multiple of vocab_size %d" % (path, raw.size, vocab_size))
    return raw.reshape(-1, vocab_size).astype(np.float64)


def relative_errors(got, ref):
    """||got_i - ref_i|| / ||ref_i|| for each row i (float64)."""
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        raise ValueError("shape %s vs reference %s" % (got.shape, ref.shape))
    return np.linalg.norm(got - ref, axis=-1) / np.linalg.norm(ref, axis=-1)


def greedy_agreement(got_ids, ref_out, min_margin=1e-3):
    """Compare generated ids with a Reference.generate() result.

    Returns {"decisive": number of leading reference steps with margin > min_margin,
    "compared": steps actually compared, "mismatch": None or the first step index where
    the ids differ (or where got_ids ended early), "got", "want" at the mismatch,
    "comparable_rows": how many generated-position logits rows share the reference's
    context (rows n_prompt .. n_prompt + comparable_rows - 1 of --dump-logits)}."""
    want = list(ref_out["generated_ids"])
    margins = list(ref_out["margins"])
    got = [int(x) for x in got_ids]
    decisive = 0
    while decisive < len(want) and margins[decisive] > min_margin:
        decisive += 1
    mismatch = None
    for i in range(decisive):
        if i >= len(got) or got[i] != want[i]:
            mismatch = i
            break
    compared = decisive if mismatch is None else mismatch + 1
    # Row n_prompt + j is the logits after feeding generated[j]: its context matches
    # while generated[0..j] all match.
    same = 0
    while same < min(len(got), len(want)) and got[same] == want[same]:
        same += 1
    comparable = min(same, len(want) - 1, max(len(got) - 1, 0))
    return {"decisive": decisive, "compared": compared, "mismatch": mismatch,
            "got": None if mismatch is None or mismatch >= len(got) else got[mismatch],
            "want": None if mismatch is None else want[mismatch],
            "margin": None if mismatch is None else margins[mismatch],
            "comparable_rows": comparable}


def describe(g):
    if g["mismatch"] is None:
        return "identical for %d decisive steps" % g["decisive"]
    return ("step %d: engine id %s, reference id %s (reference top-2 margin %.4g); %d decisive steps"
            % (g["mismatch"], g["got"], g["want"], g["margin"], g["decisive"]))


def rounding_flip_agreement(errs, loose=1e-2, mean=5e-3):
    """Per-position relative errors of an engine whose matmul inputs are rounded to 8-bit
    blocks (Q8_0, as MXFP4's int8 dot) against a reference that rounds the same inputs the
    same way (Reference.expert_act_round). Positions agree to float32 noise (~1e-6) until
    an input lies within float32 noise of a rounding boundary and the two round it one q
    step apart: that moves its position by ~1e-3 and, through the cache, the later ones
    about as much (measured on the gpt-oss MXFP4 cells: the first flip anywhere from
    position 2 to 44 of 96; after it, median 2.4e-3, largest 7.2e-3, while the same run
    against exact float64 inputs is 0.095 mean, 0.45 largest, and a wrong block layout
    O(1)). Returns None when every position is within `loose` and their mean within
    `mean`, else a description of the failure."""
    errs = np.asarray(errs)
    if errs.max() <= loose and errs.mean() <= mean:
        return None
    return ("largest %.3g at position %d (want <= %.0e), mean %.3g (want <= %.0e); %.0f%% of "
            "positions within 1e-4" % (errs.max(), int(errs.argmax()), loose, errs.mean(), mean,
                                      100 * float(np.mean(errs <= 1e-4))))


def run_against_reference(run_facet, path, ref, n_prompt, n_gen, tmp_path, seed=7):
    """`facet run` on checkpoint `path` (F32 weights and cache) against `ref`, a float64
    reference with vocab_size and generate(ids, n): a seeded random prompt of n_prompt ids
    within 1e-4 per position, greedy identical for n_gen steps while the reference is
    decisive (>= min(8, n_gen) such steps), the comparable generated rows within 1e-4.
    run_facet(args, timeout=) returns a CompletedProcess. Returns the prompt's worst error."""
    import json
    p = [int(x) for x in np.random.default_rng(seed).integers(0, ref.vocab_size, n_prompt)]
    dump = tmp_path / "logits.f32"
    proc = run_facet(["run", path, "--prompt-ids", ",".join(map(str, p)), "-n", str(n_gen),
                      "--json", "--ignore-eos", "--weights", "f32", "--kv-cache", "f32",
                      "--no-cache", "--dump-logits", dump], timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    obj = json.loads(proc.stdout)
    want = ref.generate(p, n_gen)
    rows = read_logits(str(dump), ref.vocab_size)
    assert rows.shape == want["logits"].shape
    errs = relative_errors(rows[:n_prompt], want["logits"][:n_prompt])
    assert errs.max() < 1e-4, "prompt position %d: relative error %.3g" % (int(errs.argmax()), errs.max())
    g = greedy_agreement(obj["generated_ids"], want, 1e-3)
    assert g["mismatch"] is None, describe(g)
    assert g["decisive"] >= min(8, n_gen), "only %d decisive steps" % g["decisive"]
    k = g["comparable_rows"]
    if k:
        e2 = relative_errors(rows[n_prompt:n_prompt + k], want["logits"][n_prompt:n_prompt + k])
        assert e2.max() < 1e-4, "generated position %d: %.3g" % (int(e2.argmax()), e2.max())
    return errs.max()
