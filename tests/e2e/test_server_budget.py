"""`facet serve`'s KV budget sized to the machine (src/server/budget.h).

The checkpoint has the KV-cache shape of Qwen3-0.6B (28 layers, 8 KV heads of head_dim
128: a bf16 cache of 28 x 8 x 128 x 2 x 2 = 114688 B per token, 140 GiB for the old
default of 32 x 40960 tokens) with tiny matrices, random weights and the bundled
tokenizer. Oracles: the per-token bytes written out above, the weight bytes `facet plan
--json` reports, MemAvailable of /proc/meminfo (or FACET_MEM_AVAILABLE, a fixed machine
size), and the 10% margin the server documents.
"""

import concurrent.futures
import os
import re
import shutil
import subprocess

import pytest

from server_harness import Server

KV_PER_TOKEN = 28 * 8 * 128 * 2 * 2  # bf16 K and V, every layer
DEFAULT = 32 * 40960                  # --max-batch 32 x max_position_embeddings
GIB = 1 << 30

CONFIG = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False,
    "head_dim": 128, "hidden_act": "silu", "hidden_size": 64, "intermediate_size": 64,
    "max_position_embeddings": 40960, "num_attention_heads": 16, "num_hidden_layers": 28,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-6, "rope_scaling": None,
    "rope_theta": 1000000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "vocab_size": 512, "bos_token_id": 1, "eos_token_id": 2, "use_sliding_window": False,
    "sliding_window": None, "max_window_layers": 28,
}


@pytest.fixture(scope="module")
def model(make_checkpoint, repo_root, tmp_path_factory):
    src = make_checkpoint(CONFIG, dtype="bf16")
    dst = tmp_path_factory.mktemp("kvbudget") / "qwen3-kv"
    shutil.copytree(src, dst)
    shutil.copy(repo_root / "models" / "stories260k" / "tokenizer.json", dst / "tokenizer.json")
    return dst


@pytest.fixture(scope="module")
def weight_bytes(run_facet, model):
    import json
    p = run_facet(["plan", str(model), "--json"], timeout=60)
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    assert plan["kv_bytes_per_token_naive"] == KV_PER_TOKEN
    return plan["weight_bytes"][plan["weights"]]


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no MemAvailable in /proc/meminfo")


def budget_line(server):
    lines = [l for l in server.log
             if ("KV budget" in l or "warning: --kv-budget" in l) and "listening" not in l]
    assert len(lines) == 1, server.log
    m = re.search(r"(?:KV budget|--kv-budget) (\d+) tokens", lines[0])
    assert m, lines[0]
    listening = [l for l in server.log if "listening on" in l][0]
    assert "KV budget %s tokens" % m.group(1) in listening, listening
    return int(m.group(1)), lines[0]


def expected_budget(mem, weights):
    """The documented rule: (MemAvailable - 10% - weights) / KV bytes per token."""
    room = mem - mem // 100 * 10 - weights
    return max(0, room) // KV_PER_TOKEN


def test_default_budget_fits_this_machine(facet_bin, model, weight_bytes):
    before = mem_available()
    with Server(facet_bin, model, "--threads", "1", timeout=120) as s:
        after = mem_available()
        budget, line = budget_line(s)
        assert s.metrics()["facet_kv_cache_tokens_budget"] == budget
        # the budget's KV cache and the weights fit in 90% of the free memory at start
        # (MemAvailable moves a little between our readings and the server's)
        assert budget * KV_PER_TOKEN + weight_bytes <= 0.9 * max(before, after) + 64 * 2**20
        if DEFAULT * KV_PER_TOKEN + weight_bytes > 0.9 * max(before, after):
            # the user's case: 140 GiB of KV asked of a smaller machine
            assert budget < DEFAULT and "lowered from max batch 32 x ctx 40960" in line, line
            assert "140.00 GiB of KV cache at 112.00 KiB/token" in line, line
        else:
            assert budget == DEFAULT, line


def test_budget_on_a_fixed_machine_size(facet_bin, model, weight_bytes):
    # a machine whose memory leaves room for about 200 tokens of KV after the weights
    mem = int((weight_bytes + 200.5 * KV_PER_TOKEN) / 0.9)
    want = expected_budget(mem, weight_bytes)
    assert 195 <= want <= 205
    env = dict(os.environ, FACET_MEM_AVAILABLE=str(mem))
    with Server(facet_bin, model, "--threads", "1", env=env, timeout=120) as s:
        budget, line = budget_line(s)
        assert budget == want, line
        assert "lowered from max batch 32 x ctx 40960 = 1310720 tokens" in line
        assert s.metrics()["facet_kv_cache_tokens_budget"] == want
        # a request that can never fit is a 400 naming the budget (no allocation tried)
        st, r = s.post("/v1/completions", {"model": "qwen3-kv", "prompt": [1, 5, 9],
                                           "max_tokens": want})
        assert st == 400 and r["error"]["code"] == "kv_budget_exceeded", r
        assert str(want) in r["error"]["message"] and r["error"]["param"] == "max_tokens"
        st, r = s.post("/v1/completions", {"model": "qwen3-kv", "prompt": [1, 5, 9],
                                           "max_tokens": want // 2, "n": 4})
        assert st == 400 and r["error"]["code"] == "kv_budget_exceeded", r
        assert r["error"]["param"] == "n"
        # requests that fit alone but not together: admitted by use, the newest wait or
        # are preempted as the others grow; all answered, the budget never passed
        body = {"model": "qwen3-kv", "prompt": [1, 5, 9], "max_tokens": want // 2,
                "temperature": 0}
        with concurrent.futures.ThreadPoolExecutor(3) as ex:
            res = list(ex.map(lambda _: s.post("/v1/completions", body, timeout=300), range(3)))
        assert all(st == 200 for st, _ in res), res
        assert len({r["choices"][0]["text"] for _, r in res}) == 1
        assert s.metrics()["facet_kv_cache_tokens_peak"] <= want


def test_explicit_budget_above_memory_is_honoured_with_a_warning(facet_bin, model,
                                                                  weight_bytes):
    mem = 4 * GIB
    env = dict(os.environ, FACET_MEM_AVAILABLE=str(mem))
    with Server(facet_bin, model, "--threads", "1", "--kv-budget", str(DEFAULT), env=env,
                timeout=120) as s:
        budget, line = budget_line(s)
        assert budget == DEFAULT
        assert line.startswith("facet serve: warning: --kv-budget 1310720 tokens needs "
                               "140.00 GiB of KV cache"), line
        assert "about %d tokens" % expected_budget(mem, weight_bytes) in line, line
        assert s.metrics()["facet_kv_cache_tokens_budget"] == DEFAULT
    # within the memory: no warning
    with Server(facet_bin, model, "--threads", "1", "--kv-budget", "64", env=env,
                timeout=120) as s:
        budget, line = budget_line(s)
        assert budget == 64 and "warning" not in line and "(--kv-budget;" in line, line


def test_no_memory_for_the_kv_cache(facet_bin, model, weight_bytes):
    # the weights alone exceed 90% of the machine: refused before loading, one line
    env = dict(os.environ, FACET_MEM_AVAILABLE=str(weight_bytes))
    p = subprocess.run([str(facet_bin), "serve", str(model), "--port", "0"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert p.stderr.startswith("facet: no memory left for the KV cache: MemAvailable"), p.stderr
    assert "listening" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    # an explicit budget is the operator's call: it starts, with the warning
    with Server(facet_bin, model, "--threads", "1", "--kv-budget", "100", env=env,
                timeout=120) as s:
        budget, line = budget_line(s)
        assert budget == 100 and "warning:" in line and "about 0 tokens" in line, line
