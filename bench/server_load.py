#!/usr/bin/python3
"""Bounded loopback load test of `facet serve` (bench/RESULTS-server.md).

Starts `facet serve MODEL --port 0`, sends a warm-up round, then exactly --requests
streaming completions from --concurrency client threads (each request: a token-id
prompt, --max-tokens new tokens, seeded sampling), stops after the fixed count or
--duration seconds (whichever first), and reports: errors, request latency p50/p99,
TTFT p50/p99, aggregate generated tok/s, and the server's RSS after warm-up and at the
end (sampled from /proc/PID/status). The server is always killed.

usage: bench/server_load.py [--bin build/facet] [--model models/stories260k]
       [--requests 2000] [--concurrency 16] [--max-tokens 64] [--duration 120]
       [--threads N] [--json FILE]
"""

import argparse
import http.client
import json
import os
import pathlib
import statistics
import subprocess
import sys
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[1]


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def start(binary, model, extra):
    p = subprocess.Popen([binary, "serve", model, "--port", "0"] + extra,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    port = None
    end = time.time() + 30
    while time.time() < end:
        line = p.stderr.readline().decode()
        if not line:
            break
        if "listening on http://" in line:
            port = int(line.split("listening on http://")[1].split()[0].rsplit(":", 1)[1])
            break
    if port is None:
        p.kill()
        raise SystemExit("facet serve did not start")
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    return p, port


def one_request(port, i, max_tokens):
    body = json.dumps({"model": MODEL_ID, "prompt": [1, 403 + i % 100], "max_tokens": max_tokens,
                       "temperature": 0.8, "seed": i, "stream": True}).encode()
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        c.request("POST", "/v1/completions", body=body,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            return None
        ttft = None
        done = False
        while True:
            line = r.readline()
            if not line:
                break
            if line.startswith(b"data: ") and ttft is None:
                ttft = time.perf_counter() - t0
            if line.strip() == b"data: [DONE]":
                done = True
        if not done:
            return None
        return time.perf_counter() - t0, ttft
    except OSError:
        return None
    finally:
        c.close()


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100.0 * (len(xs) - 1))))]


def main():
    global MODEL_ID
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / "build" / "facet"))
    ap.add_argument("--model", default=str(REPO / "models" / "stories260k"))
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--duration", type=float, default=120)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json")
    a = ap.parse_args()
    MODEL_ID = pathlib.Path(a.model).resolve().name
    extra = ["--max-batch", str(max(a.concurrency, 1))]
    if a.threads:
        extra += ["--threads", str(a.threads)]
    proc, port = start(a.bin, a.model, extra)
    try:
        # warm-up: one round at full concurrency
        warm = [threading.Thread(target=one_request, args=(port, i, a.max_tokens))
                for i in range(a.concurrency * 2)]
        [t.start() for t in warm]
        [t.join() for t in warm]
        rss_warm = rss_kib(proc.pid)
        lat, ttft, errors, rss_samples = [], [], [0], []
        lock = threading.Lock()
        next_i = [0]
        deadline = time.time() + a.duration

        def worker():
            while True:
                with lock:
                    i = next_i[0]
                    if i >= a.requests or time.time() > deadline:
                        return
                    next_i[0] += 1
                r = one_request(port, 10000 + i, a.max_tokens)
                with lock:
                    if r is None:
                        errors[0] += 1
                    else:
                        lat.append(r[0])
                        ttft.append(r[1])

        t0 = time.perf_counter()
        ts = [threading.Thread(target=worker) for _ in range(a.concurrency)]
        [t.start() for t in ts]
        while any(t.is_alive() for t in ts):
            rss_samples.append(rss_kib(proc.pid))
            time.sleep(0.25)
        [t.join() for t in ts]
        wall = time.perf_counter() - t0
        rss_end = rss_kib(proc.pid)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/metrics")
        metrics = {}
        for line in c.getresponse().read().decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                metrics[k] = float(v)
        c.close()
    finally:
        proc.kill()
        proc.wait(10)
    done = len(lat)
    res = {
        "command": " ".join([sys.argv[0]] + sys.argv[1:]),
        "requests": done, "errors": errors[0], "concurrency": a.concurrency,
        "max_tokens": a.max_tokens, "wall_s": round(wall, 3),
        "latency_p50_ms": round(1000 * pct(lat, 50), 2) if lat else None,
        "latency_p99_ms": round(1000 * pct(lat, 99), 2) if lat else None,
        "ttft_p50_ms": round(1000 * pct(ttft, 50), 2) if ttft else None,
        "ttft_p99_ms": round(1000 * pct(ttft, 99), 2) if ttft else None,
        "requests_per_s": round(done / wall, 2),
        "aggregate_tok_s": round(done * a.max_tokens / wall, 1),
        "rss_after_warmup_kib": rss_warm, "rss_end_kib": rss_end,
        "rss_max_kib": max(rss_samples + [rss_end]),
        "batch_size_max": metrics.get("facet_batch_size_max"),
        "mean_batch": round(metrics["facet_batch_size_sum"] / metrics["facet_batch_size_count"],
                            2) if metrics.get("facet_batch_size_count") else None,
        "cpu_count": os.cpu_count(),
    }
    print(json.dumps(res, indent=1))
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(res, indent=1) + "\n")
    return 0 if res["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
