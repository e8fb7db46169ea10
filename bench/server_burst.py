#!/usr/bin/python3
"""A burst of 600 simultaneous completions against `facet serve` with its defaults
(--max-connections 512): every request gets an HTTP answer (200, or 503 with
Retry-After past the limits), none a reset. Run from the repository root after a
build: /usr/bin/python3 bench/server_burst.py (bench/RESULTS-server.md)."""
import sys, json, threading, http.client, collections
sys.path.insert(0, "tests/e2e")
from server_harness import Server
res = collections.Counter()
lock = threading.Lock()
with Server("build/facet", "models/stories260k", "--threads", "1") as s:
    start = threading.Event()
    def one(i):
        start.wait()
        try:
            c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
            c.request("POST", "/v1/completions", body=json.dumps({"prompt": [1, 403], "max_tokens": 16, "seed": i, "temperature": 0.8}), headers={"Content-Type": "application/json"})
            r = c.getresponse(); r.read(); k = r.status
        except Exception as e:
            k = type(e).__name__
        with lock: res[k] += 1
    ts = [threading.Thread(target=one, args=(i,)) for i in range(600)]
    [t.start() for t in ts]; start.set(); [t.join() for t in ts]
    print(dict(res), s.healthy())
