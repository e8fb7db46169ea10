"""`--weights q4` (4-bit weights, the output projection Q6_K, or int8 where its rows are not
a multiple of 256 inputs) against a float64 reference that rounds the weights the same way.

facet q4 rounds every weight matrix once (tests/ref/weights_round.py models the rounding
from the format's definition) and quantizes each activation row to int8 per block of 32
before every matmul. The reference with weights_round="q4" holds facet's rounded weights
in float64 and keeps the activations unrounded, so what remains between them is the
int8 activation rounding: the same residual int8 weights show against a reference
rounded as int8 (the yardstick, measured in the same test). Bound: q4's median relative
error against its rounded reference within 1.25x int8's against its own (measured 0.95-1.0x
on the bundled model and the Qwen3 / Llama-3.2 shapes, 48-token prompt, 24 greedy steps),
and the unrounded reference at least 5x farther (measured 10-13x), so the test fails
if the weights are rounded differently from the definition, or not at all.
"""

import os

import numpy as np
import pytest

import compare

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG_DIR = os.path.join(REPO, "tests", "data", "ref", "configs")
CONFIGS = {
    "qwen3": "Qwen__Qwen3-0.6B__dims",
    "llama32": "meta-llama__Llama-3.2-1B-Instruct__resaved",
}
N_PROMPT, N_GEN = 48, 24


def model_path(name, make_checkpoint):
    if name == "stories260k":
        return os.path.join(REPO, "models", "stories260k")
    return make_checkpoint(os.path.join(CONFIG_DIR, CONFIGS[name]), shrink={})


def errors(path, weights, ids, reference_for, facet_generate):
    got = facet_generate(path, ids, N_GEN, extra=["--weights", weights])
    gen = got["json"]["generated_ids"]
    assert len(gen) == N_GEN
    seq = ids + gen[:-1]
    rows = got["logits"]
    assert rows.shape[0] == len(seq)
    rounded = compare.relative_errors(rows, reference_for(path, weights_round=weights).logits(seq))
    plain = compare.relative_errors(rows, reference_for(path).logits(seq))
    return rounded, plain


CASES = [("stories260k", "scalar"), ("stories260k", "avx2"), ("stories260k", "avx512"),
         ("qwen3", "avx512"), ("llama32", "avx512")]


@pytest.mark.parametrize("name,cpu", CASES)
@pytest.mark.evidence(checkpoints=["stories260k"] + sorted(CONFIGS.values()), backend="cpu",
                      weights=["q4"], oracle="float64 reference with the weights rounded "
                      "as the format stores them")
def test_q4_matches_rounded_reference(name, cpu, make_checkpoint, reference_for, facet_generate,
                                      monkeypatch):
    """FACET_CPU picks the kernel path (scalar, AVX2, AVX512-VNNI; only lowers it)."""
    monkeypatch.setenv("FACET_CPU", cpu)
    path = model_path(name, make_checkpoint)
    rng = np.random.default_rng(7)
    ids = [1] + [int(x) for x in rng.integers(3, 512, N_PROMPT - 1)]
    r4, p4 = errors(path, "q4", ids, reference_for, facet_generate)
    r8, _ = errors(path, "int8", ids, reference_for, facet_generate)
    m4, m8, mp = np.median(r4), np.median(r8), np.median(p4)
    assert m4 <= 1.25 * m8, ("%s: q4 median %.3g vs its rounded reference, above 1.25x int8's "
                             "activation residual %.3g" % (name, m4, m8))
    assert mp >= 5 * m4, ("%s: the unrounded reference (median %.3g) is not clearly farther "
                          "than the q4-rounded one (%.3g)" % (name, mp, m4))
