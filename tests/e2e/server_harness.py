"""Helpers of the `facet serve` end-to-end tests (test_server*.py).

Server(bin, model, *args) starts `facet serve MODEL --port 0 ...` on loopback, reads the
port from its "listening on" line, and always kills it (context manager / stop()).
Every network call has a timeout, so no test can hang.
"""

import http.client
import json
import os
import signal
import socket
import subprocess
import threading
import time

START_TIMEOUT = 30


class Server:
    def __init__(self, facet_bin, model, *args, env=None, timeout=START_TIMEOUT):
        cmd = [str(facet_bin), "serve", str(model), "--host", "127.0.0.1", "--port", "0"]
        cmd += [str(a) for a in args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     env=env)
        self.log = []
        self.port = None
        ready = threading.Event()

        def drain():
            for raw in self.proc.stderr:
                line = raw.decode("utf-8", "replace")
                self.log.append(line)
                if self.port is None and "listening on http://" in line:
                    self.port = int(line.split("listening on http://")[1].split()[0]
                                    .rsplit(":", 1)[1])
                    ready.set()
            ready.set()

        self.thread = threading.Thread(target=drain, daemon=True)
        self.thread.start()
        if not ready.wait(timeout) or self.port is None:
            self.stop()
            raise AssertionError("facet serve did not start: %s" % "".join(self.log)[-3000:])

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is not None:
            self.stop()
            return
        self.assert_clean_exit()

    def assert_clean_exit(self, timeout=30):
        """SIGTERM, then require exit status 0 and no sanitizer report: a graceful
        shutdown that frees everything (LeakSanitizer fails the exit otherwise)."""
        rc = self.stop(signal.SIGTERM, timeout)
        log = "".join(self.log)
        assert rc == 0, "facet serve exited %s:\n%s" % (rc, log[-4000:])
        for bad in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
            assert bad not in log, log[-4000:]

    def stop(self, sig=signal.SIGKILL, timeout=10):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.thread.join(5)
        return self.proc.returncode

    def alive(self):
        return self.proc.poll() is None

    # ------------------------------------------------------------------ HTTP --
    def conn(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=60):
        """-> (status, headers dict (lower-case names), body bytes)."""
        c = self.conn(timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            elif isinstance(body, str):
                body = body.encode()
            h = {"Content-Type": "application/json"}
            h.update(headers or {})
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            c.close()

    def get(self, path, timeout=60):
        return self.request("GET", path, timeout=timeout)

    def post(self, path, obj, timeout=120):
        """POST JSON; -> (status, parsed JSON body)."""
        status, _, data = self.request("POST", path, obj, timeout=timeout)
        return status, json.loads(data)

    def stream(self, path, obj, timeout=120):
        """POST a streaming request; -> (status, [parsed chunk objects], saw_done, raw)."""
        c = self.conn(timeout)
        try:
            c.request("POST", path, body=json.dumps(obj).encode(),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            raw = r.read()
        finally:
            c.close()
        if r.status != 200:
            return r.status, [json.loads(raw)], False, raw
        chunks, done = [], False
        for event in raw.split(b"\n\n"):
            if not event.strip():
                continue
            assert event.startswith(b"data: "), event[:200]
            payload = event[len(b"data: "):]
            if payload == b"[DONE]":
                done = True
                continue
            assert not done, "data after [DONE]"
            chunks.append(json.loads(payload.decode("utf-8")))  # strict UTF-8 per event
        return r.status, chunks, done, raw

    def metrics(self):
        status, _, data = self.get("/metrics")
        assert status == 200
        out = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def healthy(self):
        try:
            status, _, data = self.get("/health", timeout=10)
            return status == 200 and json.loads(data) == {"status": "ok"}
        except OSError:
            return False


def raw_socket(port, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(timeout)
    return s


def stream_text(chunks, index=0, chat=False):
    out = []
    for ch in chunks:
        for c in ch.get("choices", []):
            if c["index"] != index:
                continue
            if chat:
                out.append(c["delta"].get("content") or "")
            else:
                out.append(c["text"])
    return "".join(out)


def env_with_asan(extra=None):
    e = dict(os.environ)
    e.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    if extra:
        e.update(extra)
    return e


def wait_until(pred, timeout=10, step=0.05):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


# ---------------------------------------------------------------- chat oracle --
MESSAGES = [
    {"role": "system", "content": "You tell short stories."},
    {"role": "user", "content": "Tell me about a cat."},
]


def render_chat(template, messages, tools=None):
    """The template rendered as transformers' apply_chat_template does, with Python's
    jinja2 (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
    tojson = json.dumps(ensure_ascii=False))."""
    import jinja2.ext
    import jinja2.sandbox
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, \
        sort_keys=False: json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                                    separators=separators, sort_keys=sort_keys)
    return env.from_string(template).render(messages=messages, tools=tools,
                                            add_generation_prompt=True, bos_token="<s>",
                                            eos_token="</s>", unk_token="<unk>")


def chat_prompt_ids(run_facet, model, text):
    """`facet tokenize --no-special` of a rendered chat prompt."""
    p = run_facet(["tokenize", str(model), "--no-special", text], timeout=30)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def chat_expected(run_facet, model, template, messages, n):
    """(prompt ids, `facet run --json` object) for a greedy chat answer of n tokens:
    jinja2 rendering -> `facet tokenize --no-special` -> `facet run --prompt-ids`."""
    text = render_chat(template, messages)
    p = run_facet(["tokenize", str(model), "--no-special", text], timeout=30)
    assert p.returncode == 0, p.stderr
    ids = json.loads(p.stdout)
    p = run_facet(["run", str(model), "--prompt-ids", ",".join(map(str, ids)), "-n", str(n),
                   "--json"], timeout=60)
    assert p.returncode == 0, p.stderr
    return ids, json.loads(p.stdout)
