"""`facet serve FILE.gguf` sizes its KV budget to the machine as it does for a Hugging Face
folder: facts and run-time weight bytes from the GGUF file, as `facet plan` counts them
(before, the budget step read the .gguf as a config.json, failed, and left the budget
unchecked: max batch x ctx tokens whatever the memory). Oracle: `facet plan --json`'s
weight bytes and KV bytes per token, FACET_MEM_AVAILABLE a fixed machine size, and the
server's documented 10% margin."""

import json
import os
import re
import subprocess

import pytest


@pytest.fixture
def gguf(facet_shared):
    p = facet_shared / "corpus" / "gguf" / "models" / "qwen3-Q4_K_M.gguf"
    if not p.is_file():
        pytest.skip("SKIPPED LOUDLY: %s not found" % p)
    return p


def serve_lines(facet_bin, model, mem):
    """Start serve with a fixed MemAvailable; return its stderr up to 'listening' (then
    stop it) or all of it when it exits, and the exit status (None when it listened)."""
    env = dict(os.environ, FACET_MEM_AVAILABLE=str(mem))
    p = subprocess.Popen([str(facet_bin), "serve", str(model), "--port", "0"], env=env,
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    lines = []
    try:
        for line in p.stderr:
            lines.append(line)
            if "listening on" in line:
                p.terminate()
                p.wait(timeout=30)
                return lines, None
        return lines, p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_gguf_budget_fits_memory(facet_bin, run_facet, gguf):
    plan = json.loads(run_facet(["plan", str(gguf), "--json"]).stdout)
    weights = plan["weight_bytes"][plan["weights"]]
    per_token = plan["kv_bytes_per_token_actual"]
    mem = 64 << 20
    lines, rc = serve_lines(facet_bin, gguf, mem)
    text = "".join(lines)
    assert rc is None, text
    assert "memory not checked" not in text, text
    m = re.search(r"KV budget (\d+) tokens, lowered from", text)
    assert m, text
    want = int((mem * 0.9 - weights) // per_token)
    assert abs(int(m.group(1)) - want) <= 1, (m.group(1), want, text)


def test_gguf_too_little_memory_refused(facet_bin, gguf):
    lines, rc = serve_lines(facet_bin, gguf, 1000)
    text = "".join(lines)
    assert rc == 1, text
    assert "no memory left for the KV cache: MemAvailable 1000 B" in text, text
