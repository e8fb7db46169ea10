"""`facet bench` (performance issue): the report's shape and its internal consistency on
the bundled model, per DESIGN.md's --json contract. Speed itself is measured in
bench/RESULTS.md, never asserted here."""

import json
import shutil


def test_bench_json(run_facet, repo_root, tmp_path):
    model = tmp_path / "stories260k"
    shutil.copytree(repo_root / "models" / "stories260k", model)
    out = tmp_path / "bench.json"
    proc = run_facet(["bench", str(model), "--shapes", "16,40", "--concurrency", "1,3", "-n", "4",
                      "--threads", "2", "--json", str(out)], timeout=300)
    assert proc.returncode == 0, proc.stderr
    b = json.loads(out.read_text())
    assert b["model"] == str(model) and b["threads"] == 2
    assert b["weights"] == "f32" and b["kv_cache"] == "f32"  # an F32 checkpoint: auto
    for k in ("bandwidth_gb_s", "triad_gb_s", "peak_gflops", "peak_gflops_f32"):
        assert b[k] > 0, k
    assert b["load_s"]["cold"] > 0 and b["load_s"]["cached"] > 0 and b["load_s"]["first_token_s"] > 0
    assert [p["tokens"] for p in b["prefill"]] == [16, 40]
    for p in b["prefill"]:
        assert abs(p["tok_s"] - p["tokens"] / (p["ttft_ms"] / 1e3)) < 1e-6 * p["tok_s"]
    assert [d["concurrency"] for d in b["decode"]] == [1, 3]
    for d in b["decode"]:
        assert abs(d["aggregate_tok_s"] - d["concurrency"] * d["tok_s_per_seq"]) < 1e-6 * d["aggregate_tok_s"]
        assert d["bandwidth_gb_s"] > 0
        # of_ceiling: tokens/s per sequence over (probe bandwidth / weight bytes)
        want = d["tok_s_per_seq"] / (d["bandwidth_gb_s"] * 1e9 / b["weight_bytes"])
        assert abs(d["of_ceiling"] - want) < 1e-6 * want
    assert "KV cache f32" in proc.stdout and "weight cache mapped" in proc.stdout


def test_bench_kv_cache_and_errors(run_facet, repo_root, tmp_path):
    model = tmp_path / "stories260k"
    shutil.copytree(repo_root / "models" / "stories260k", model)
    out = tmp_path / "bench.json"
    proc = run_facet(["bench", str(model), "--shapes", "8", "--concurrency", "2", "-n", "2",
                      "--threads", "1", "--weights", "bf16", "--json", str(out)], timeout=300)
    assert proc.returncode == 0, proc.stderr
    b = json.loads(out.read_text())
    assert b["weights"] == "bf16" and b["kv_cache"] == "bf16"
    proc = run_facet(["bench", str(model), "--kv-cache", "q4"])
    assert proc.returncode == 1
    assert "--kv-cache expects auto, f32, bf16 or f16, got 'q4'" in proc.stderr
