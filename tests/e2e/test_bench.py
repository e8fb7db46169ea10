"""`facet bench` (performance issue): the report's shape and its internal consistency on
the bundled model, per DESIGN.md's --json contract. Speed itself is measured in
bench/RESULTS.md, never asserted here."""

import json
import shutil
import statistics


def test_bench_json(run_facet, repo_root, tmp_path):
    model = tmp_path / "stories260k"
    shutil.copytree(repo_root / "models" / "stories260k", model)
    out = tmp_path / "bench.json"
    proc = run_facet(["bench", str(model), "--shapes", "16,40", "--reps", "2", "--concurrency", "1,3",
                      "-n", "4", "--threads", "2", "--json", str(out)], timeout=300)
    assert proc.returncode == 0, proc.stderr
    b = json.loads(out.read_text())
    assert b["model"] == str(model) and b["threads"] == 2
    assert b["weights"] == "f32" and b["kv_cache"] == "f32"  # an F32 checkpoint: auto
    for k in ("bandwidth_gb_s", "triad_gb_s", "peak_gflops", "peak_gflops_f32"):
        assert b[k] > 0, k
    assert b["load_s"]["cold"] > 0 and b["load_s"]["cached"] > 0 and b["load_s"]["first_token_s"] > 0
    assert [p["tokens"] for p in b["prefill"]] == [16, 40]
    # the derived fields follow DESIGN.md's definitions (units: ms, tok/s, GB/s, bytes)
    for p in b["prefill"]:
        assert abs(p["tok_s"] - p["tokens"] / (p["ttft_ms"] / 1e3)) < 1e-6 * p["tok_s"]
        assert p["reps"] == 2 and p["gflops"] > 0 and p["peak_gflops"] > 0 and 0 < p["of_peak"]
        # gflops: 2 flops per weight of the layers' matrices per token, at the median TTFT
        want = 2 * b["layer_matrix_params"] * p["tokens"] / (p["ttft_ms"] / 1e3) / 1e9
        assert abs(p["gflops"] - want) < 1e-6 * want
        # the medians are taken over the per-prefill runs; of_peak is the median of each
        # prefill's GFLOP/s over its own adjacent peak (not of the header's startup peak)
        runs = p["runs"]
        assert len(runs) == 2 and all(r["ttft_ms"] > 0 and r["peak_gflops"] > 0 for r in runs)
        assert abs(p["ttft_ms"] - statistics.median(r["ttft_ms"] for r in runs)) < 1e-9 * p["ttft_ms"]
        assert abs(p["peak_gflops"] - statistics.median(r["peak_gflops"] for r in runs)) < 1e-9 * p["peak_gflops"]
        per_run = [2 * b["layer_matrix_params"] * p["tokens"] / (r["ttft_ms"] / 1e3) / 1e9 / r["peak_gflops"]
                   for r in runs]
        assert abs(p["of_peak"] - statistics.median(per_run)) < 1e-9 * p["of_peak"]
    assert [d["concurrency"] for d in b["decode"]] == [1, 3]
    for d in b["decode"]:
        assert abs(d["aggregate_tok_s"] - d["concurrency"] * d["tok_s_per_seq"]) < 1e-6 * d["aggregate_tok_s"]
        assert d["bandwidth_gb_s"] > 0
        # of_ceiling: tokens/s per sequence over (probe bandwidth / bytes read per decoded
        # token, which for a dense model are all the weights)
        assert b["decode_bytes"] == b["weight_bytes"]
        want = d["tok_s_per_seq"] / (d["bandwidth_gb_s"] * 1e9 / b["decode_bytes"])
        assert abs(d["of_ceiling"] - want) < 1e-6 * want
    assert "KV cache f32" in proc.stdout and "weight cache mapped" in proc.stdout


def test_bench_kv_cache_and_errors(run_facet, repo_root, tmp_path):
    model = tmp_path / "stories260k"
    shutil.copytree(repo_root / "models" / "stories260k", model)
    out = tmp_path / "bench.json"
    proc = run_facet(["bench", str(model), "--shapes", "8", "--concurrency", "2", "-n", "2",
                      "--threads", "1", "--weights", "bf16", "--no-cold", "--json", str(out)],
                     timeout=300)
    assert proc.returncode == 0, proc.stderr
    b = json.loads(out.read_text())
    assert b["weights"] == "bf16" and b["kv_cache"] == "bf16"
    # --no-cold: the converting load is skipped (-1), the cache still written and timed
    assert b["load_s"]["cold"] == -1 and b["load_s"]["cached"] > 0
    assert "load: cold not measured (--no-cold), cached " in proc.stdout, proc.stdout
    proc = run_facet(["bench", str(model), "--reps", "0"])
    assert proc.returncode == 1
    assert proc.stderr.strip() == "facet: --reps expects an integer in [1, 64], got '0'"
    proc = run_facet(["bench", str(model), "--kv-cache", "q4"])
    assert proc.returncode == 1
    assert "--kv-cache expects auto, f32, bf16 or f16, got 'q4'" in proc.stderr
    many = ",".join(["1"] * 17)
    proc = run_facet(["bench", str(model), "--concurrency", many])
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("facet: bench: --concurrency expects up to 16 values in "
                                   "[1, 1024], got '%s'" % many)
    proc = run_facet(["bench", str(model), "--shapes", "8", "--concurrency", "1", "-n", "600",
                      "--threads", "1"], timeout=300)
    assert proc.returncode == 1
    assert ("facet: bench: -n 600: the decode runs hold 16 prompt tokens + 600 steps, more "
            "than max_position_embeddings=512") in proc.stderr
    proc = run_facet(["bench", str(model), "--shapes", "8,600", "--concurrency", "1", "-n", "2",
                      "--threads", "1"], timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "600        skipped: longer than max_position_embeddings=512" in proc.stdout


def test_bench_int8_under_sanitizers(facet_asan_bin, repo_root, tmp_path):
    """The int8 peak probe and the int8 kernels run clean under ASan+UBSan (a signed
    overflow in the probe's sink aborted this once)."""
    import subprocess
    model = tmp_path / "stories260k"
    shutil.copytree(repo_root / "models" / "stories260k", model)
    proc = subprocess.run([str(facet_asan_bin), "bench", str(model), "--shapes", "8", "--concurrency",
                           "1", "-n", "2", "--threads", "2", "--weights", "int8"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


def test_bench_unwritable_json_fails_before_measuring(run_facet, repo_root, tmp_path):
    """--json to a folder that does not exist is an error before any measurement."""
    model = repo_root / "models" / "stories260k"
    p = run_facet(["bench", str(model), "--json", str(tmp_path / "no" / "such" / "out.json")],
                  timeout=60)
    assert p.returncode == 1
    assert "facet: bench: --json" in p.stderr and "No such file or directory" in p.stderr
    assert "read bandwidth" not in p.stdout
