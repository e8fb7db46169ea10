"""Bounded loopback load test of `facet serve` (bench/server_load.py): a fixed number
of streaming requests at concurrency 16 within a time bound; zero errors, every
request complete ([DONE]), batching observed, and the server's RSS flat after warm-up
(growth under 4 MiB + 10%: no per-request leak)."""

import json
import os
import subprocess
import sys


def test_bounded_load(facet_bin, repo_root, tmp_path):
    out = tmp_path / "load.json"
    p = subprocess.run([sys.executable, str(repo_root / "bench" / "server_load.py"),
                        "--bin", str(facet_bin), "--requests", "300", "--concurrency", "16",
                        "--max-tokens", "48", "--duration", "90", "--threads", "1",
                        "--json", str(out)], capture_output=True, text=True, timeout=240,
                       # under AddressSanitizer, freed memory waits in a quarantine (256 MiB
                       # by default) that would read as RSS growth: turn it off
                       env=dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") +
                                ":quarantine_size_mb=0"))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    r = json.loads(out.read_text())
    assert r["errors"] == 0 and r["requests"] == 300
    assert r["batch_size_max"] > 1
    growth = r["rss_end_kib"] - r["rss_after_warmup_kib"]
    assert growth < 4096 + r["rss_after_warmup_kib"] // 10, r
