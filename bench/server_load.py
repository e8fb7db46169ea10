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
       [--threads N] [--json FILE] [--check] [--slow N] [--disconnects N]
       [--extra "SERVER ARGS"]

Crowd options (issue 19): --check first answers each of the 100 (prompt, seed) pairs
alone and then requires every load request's text to equal its pair's (seeded sampling
does not depend on the batch); --slow N holds N connections that send one header byte
every 5 s for the whole run (reconnecting when the server cuts them at --timeout);
--disconnects N drops N streams with a reset after their first event, spread over the
run. A probe GETs /health every 0.5 s throughout and reports failures and its slowest
answer. A 503 (connection limit or queue) is retried after its Retry-After and counted.
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


RETRIED = [0]


def one_request(port, i, max_tokens, want_text=False):
    """-> (latency, ttft[, text]) or None on an error; a 503 is retried."""
    body = json.dumps({"model": MODEL_ID, "prompt": [1, 403 + i % 100], "max_tokens": max_tokens,
                       "temperature": 0.8, "seed": i % 100, "stream": True}).encode()
    t0 = time.perf_counter()
    for _ in range(100):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            c.request("POST", "/v1/completions", body=body,
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            if r.status == 503:
                r.read()
                RETRIED[0] += 1
                time.sleep(float(r.getheader("Retry-After") or 1))
                continue
            if r.status != 200:
                return None
            ttft = None
            done = False
            text = []
            while True:
                line = r.readline()
                if not line:
                    break
                if line.startswith(b"data: ") and ttft is None:
                    ttft = time.perf_counter() - t0
                if line.strip() == b"data: [DONE]":
                    done = True
                elif want_text and line.startswith(b"data: "):
                    ev = json.loads(line[6:])
                    text += [ch["text"] for ch in ev["choices"]]
            if not done:
                return None
            return time.perf_counter() - t0, ttft, "".join(text)
        except OSError:
            return None
        finally:
            c.close()
    return None


def slow_client(port, stop, cut):
    """Hold a connection that sends one header byte every 5 s; reconnect when cut."""
    import socket
    line = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 100000
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
        except OSError:
            time.sleep(1)
            continue
        try:
            for b in line:
                if stop.wait(5):
                    break
                s.send(bytes([b]))
        except OSError:
            cut[0] += 1
        finally:
            s.close()


def drop_stream(port, i):
    """A stream aborted with a reset after its first event. -> 1 if it got one."""
    import socket
    import struct
    body = json.dumps({"model": MODEL_ID, "prompt": [1, 403 + i % 100], "max_tokens": 400,
                       "temperature": 0.8, "seed": i, "stream": True}).encode()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                  b"application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        got = b""
        while b"data: " not in got:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        return 1 if b"data: " in got else 0
    except OSError:
        return 0


def health_probe(port, stop, out):
    while not stop.is_set():
        t0 = time.perf_counter()
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/health")
            ok = c.getresponse().status == 200
            c.close()
        except OSError:
            ok = False
        dt = time.perf_counter() - t0
        out["probes"] += 1
        out["failures"] += not ok
        out["max_s"] = max(out["max_s"], dt)
        stop.wait(0.5)


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
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--slow", type=int, default=0)
    ap.add_argument("--disconnects", type=int, default=0)
    ap.add_argument("--extra", default="")
    a = ap.parse_args()
    MODEL_ID = pathlib.Path(a.model).resolve().name
    extra = ["--max-batch", str(max(a.concurrency, 1))] + a.extra.split()
    if a.threads:
        extra += ["--threads", str(a.threads)]
    proc, port = start(a.bin, a.model, extra)
    stop = threading.Event()
    health = {"probes": 0, "failures": 0, "max_s": 0.0}
    cut, dropped, wrong = [0], [0], [0]
    side = []
    try:
        ref = {}
        if a.check:  # each (prompt, seed) pair answered alone
            for k in range(100):
                r = one_request(port, k, a.max_tokens, want_text=True)
                assert r is not None, "reference request %d failed" % k
                ref[k] = r[2]
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
        side.append(threading.Thread(target=health_probe, args=(port, stop, health)))
        side += [threading.Thread(target=slow_client, args=(port, stop, cut))
                 for _ in range(a.slow)]

        def dropper():
            for k in range(a.disconnects):
                if stop.wait(a.duration / max(a.disconnects, 1) * 0.9):
                    return
                dropped[0] += drop_stream(port, 50000 + k)

        side.append(threading.Thread(target=dropper))
        for t in side:
            t.daemon = True
            t.start()

        def worker():
            while True:
                with lock:
                    i = next_i[0]
                    if i >= a.requests or time.time() > deadline:
                        return
                    next_i[0] += 1
                r = one_request(port, 10000 + i, a.max_tokens, want_text=a.check)
                with lock:
                    if r is None:
                        errors[0] += 1
                    else:
                        lat.append(r[0])
                        ttft.append(r[1])
                        if a.check and r[2] != ref[(10000 + i) % 100]:
                            wrong[0] += 1

        t0 = time.perf_counter()
        ts = [threading.Thread(target=worker) for _ in range(a.concurrency)]
        [t.start() for t in ts]
        while any(t.is_alive() for t in ts):
            rss_samples.append(rss_kib(proc.pid))
            time.sleep(0.25)
        [t.join() for t in ts]
        wall = time.perf_counter() - t0
        rss_end = rss_kib(proc.pid)
        stop.set()
        for t in side:
            t.join(15)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/metrics")
        metrics = {}
        for line in c.getresponse().read().decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                metrics[k] = float(v)
        c.close()
    finally:
        stop.set()
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
        "wrong_texts": wrong[0] if a.check else None,
        "retried_503": RETRIED[0],
        "slow_connections": a.slow, "slow_cut_by_server": cut[0],
        "disconnects_done": dropped[0],
        "health_probes": health["probes"], "health_failures": health["failures"],
        "health_max_ms": round(health["max_s"] * 1000, 1),
        "rss_samples_kib_first_mid_last": [rss_samples[0], rss_samples[len(rss_samples) // 2],
                                           rss_samples[-1]] if rss_samples else None,
    }
    print(json.dumps(res, indent=1))
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(res, indent=1) + "\n")
    return 0 if res["errors"] == 0 and not res["wrong_texts"] else 1


if __name__ == "__main__":
    sys.exit(main())
