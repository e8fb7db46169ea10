"""Weight formats (--weights f32|f16|bf16|int8) on every kernel path (FACET_CPU=scalar,
avx2, avx512) against the bundled model's float64 greedy ids
(tests/data/stories260k/expected.json).

Identity gate (issue 7): greedy ids identical to the float64 reference up to the first
step whose float64 top-1 minus top-2 logit margin is below 0.05 (expected.json lists
those steps); past it a reduced-precision format may legitimately pick the other token.
f32 must reproduce every id. A path the CPU lacks runs the best path it has (FACET_CPU
only lowers), so the test still checks a correct result there."""

import json
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
EXPECTED = json.loads((REPO / "tests" / "data" / "stories260k" / "expected.json").read_text())


def greedy(prompt_ids, n, weights, path):
    exe = os.environ.get("FACET_BIN", str(REPO / "build" / "facet"))
    env = dict(os.environ, FACET_CPU=path)
    p = subprocess.run([exe, "run", "--json", "--ignore-eos", "--prompt-ids",
                        ",".join(map(str, prompt_ids)), "-n", str(n), "--weights", weights],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["generated_ids"]


def cases():
    g = EXPECTED["greedy_from_bos"]
    yield "bos", g["input_ids"], g["generated_ids"], [s for s, _ in g["steps_with_margin_below_0.05"]]
    for c in EXPECTED["prompts"]:
        yield c["prompt"], c["prompt_ids"], c["generated_ids"], [s for s, _ in c["low_margin_steps"]]


@pytest.mark.parametrize("path", ["scalar", "avx2", "avx512"])
@pytest.mark.parametrize("weights", ["f32", "f16", "bf16", "int8"])
def test_greedy_identity_until_first_low_margin_step(weights, path):
    for name, prompt, want, low in cases():
        got = greedy(prompt, len(want), weights, path)
        assert len(got) == len(want)
        limit = len(want) if weights == "f32" else (min(low) if low else len(want))
        first_diff = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
        assert first_diff is None or first_diff >= limit, (
            "%s weights, FACET_CPU=%s, prompt %r: first difference at step %d (got %d, float64 "
            "%d); ids must agree before step %d (first margin < 0.05: %s)"
            % (weights, path, name, first_diff, got[first_diff], want[first_diff], limit, low))
