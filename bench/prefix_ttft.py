#!/usr/bin/python3
"""Time to first token of a repeated long prompt with and without `facet serve`'s
prefix cache (bench/RESULTS-server.md).

Starts `facet serve MODEL --port 0` (plus --extra arguments), then for each of --prompts
seeded random token-id prompts of --length tokens sends the same streaming completion
twice (max_tokens 1, greedy) and times the first token (request sent -> first SSE event)
of each; the second finds the prompt in the prefix cache and prefills one token. Prints
a table with the first/second TTFT, the ratio, usage.prompt_tokens_details.cached_tokens
of the second, and checks that both answers are the same token. The server is always
killed.

usage: bench/prefix_ttft.py --model DIR [--bin build/facet] [--length 1500]
       [--prompts 3] [--threads N] [--extra "ARGS"]
"""

import argparse
import http.client
import json
import random
import shlex
import statistics
import subprocess
import threading
import time


def start(binary, model, extra):
    p = subprocess.Popen([binary, "serve", model, "--port", "0"] + extra,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    port, end = None, time.time() + 120
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


def ttft(port, prompt):
    """-> (seconds to the first event, the answer's text, the usage of the last event)."""
    body = json.dumps({"prompt": prompt, "max_tokens": 1, "temperature": 0, "stream": True,
                       "stream_options": {"include_usage": True}}).encode()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", body=body,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200, r.read()
    first, text, usage = None, "", None
    for raw in r:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        if first is None:
            first = time.perf_counter() - t0
        ev = json.loads(line[6:])
        for ch in ev["choices"]:
            text += ch["text"]
        if ev.get("usage"):
            usage = ev["usage"]
    c.close()
    return first, text, usage


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/facet")
    ap.add_argument("--model", required=True)
    ap.add_argument("--length", type=int, default=1500)
    ap.add_argument("--prompts", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--extra", default="")
    a = ap.parse_args()
    extra = shlex.split(a.extra) + (["--threads", str(a.threads)] if a.threads else [])
    p, port = start(a.bin, a.model, extra)
    rows = []
    try:
        rng = random.Random(1)
        for i in range(a.prompts):
            prompt = [1] + [rng.randrange(3, 500) for _ in range(a.length - 1)]
            t1, x1, _ = ttft(port, prompt)
            t2, x2, u2 = ttft(port, prompt)
            assert x1 == x2, (x1, x2)
            rows.append((t1, t2, u2["prompt_tokens_details"]["cached_tokens"]))
    finally:
        p.kill()
        p.wait()
    print("| prompt | tokens | TTFT first | TTFT second | speed-up | cached tokens (2nd) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for i, (t1, t2, cached) in enumerate(rows):
        print("| %d | %d | %.1f ms | %.1f ms | %.0fx | %d |"
              % (i, a.length, t1 * 1e3, t2 * 1e3, t1 / t2, cached))
    print("median speed-up: %.0fx" % statistics.median(t1 / t2 for t1, t2, _ in rows))


if __name__ == "__main__":
    main()
