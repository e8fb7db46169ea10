"""`facet serve` under hostile input: truncated and invalid bodies, huge numbers, deep
nesting, slow clients, mass disconnects mid-stream. After each, the server must still
answer /health, free every slot and KV reservation, and exit cleanly on SIGTERM (the
sanitizer build also proves no leak). Every socket has a timeout."""

import concurrent.futures
import json
import socket
import struct
import time

import pytest

from server_harness import Server, raw_socket, wait_until


@pytest.fixture(scope="module")
def server(facet_bin, repo_root):
    s = Server(facet_bin, repo_root / "models" / "stories260k", "--timeout", "2",
               "--threads", "1", "--max-batch", "32")
    try:
        yield s
        assert s.healthy()
        s.assert_clean_exit()
    finally:
        s.stop()


def idle(server):
    """All slots and KV reservations returned."""
    m = server.metrics()
    return m["facet_sequence_slots_used"] == 0 and m["facet_kv_cache_tokens_used"] == 0 \
        and m["facet_queue_length"] == 0


def post_raw(server, body, ctype="application/json"):
    return server.request("POST", "/v1/completions", body, headers={"Content-Type": ctype})


@pytest.mark.parametrize("body,words", [
    (b'{"model": "stories260k", "prompt": "\xff\xfe"}', ["JSON"]),           # invalid UTF-8
    (b'{"model": "stories260k", "prompt": "a", "max_tokens": 1e999}', ["JSON"]),
    (b'{"model": "stories260k", "prompt": "a", "max_tokens": 99999999999999999999999}',
     ["JSON"]),
    (b'{"model": "stories260k", "prompt": "a", "max_tokens": 4294967297}', ["max_tokens"]),
    (b'{"model": "stories260k", "prompt": "a", "temperature": 1e300}', ["temperature"]),
    (b'{"model": "stories260k", "prompt": [1, -5]}', ["-5"]),
    (b'{"model": "stories260k", "prompt": [1, 4294967297]}', ["4294967297"]),
    (b'[' * 10000 + b']' * 10000, ["JSON"]),
    (b'{"model": "stories260k", "prompt": ' + b'[' * 10000 + b']' * 10000 + b'}', ["JSON"]),
    (b'{"a":' * 10000 + b'1' + b'}' * 10000, ["JSON"]),
    (b'', ["JSON"]),
    (b'\x00\x01\x02garbage', ["JSON"]),
    (b'{"model": "stories260k", "prompt": "a", "model": "stories260k"}', ["JSON"]),  # duplicate
    (b'{"model": "stories260k", "prompt": "a\\u0000b", "stop": "x\\u0000"}', ["NUL"]),
])
def test_bad_bodies_are_400(server, body, words):
    st, _, data = post_raw(server, body)
    assert st == 400, data
    e = json.loads(data)["error"]
    for w in words:
        assert w in e["message"], e["message"]
    assert server.healthy()


def test_truncated_bodies(server):
    for sent in (b"", b'{"model": "stor', b'{"model": "stories260k", "prompt": [1, 2'):
        s = raw_socket(server.port)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                  b"\r\nContent-Length: 500\r\n\r\n" + sent)
        s.close()
    # a body cut short but the connection kept open: the idle timeout (2 s) ends it
    s = raw_socket(server.port, timeout=10)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"a\"")
    t0 = time.time()
    try:
        data = s.recv(4096)
    except (ConnectionResetError, socket.timeout):
        data = b""
    assert time.time() - t0 < 8
    assert data == b"" or data.startswith(b"HTTP/1.1 4")
    s.close()
    assert server.healthy()


def test_slow_clients_time_out(server):
    socks = []
    for i in range(20):
        s = raw_socket(server.port, timeout=10)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")  # headers never finish
        socks.append(s)
    assert server.healthy()  # other clients are served meanwhile
    t0 = time.time()
    for s in socks:
        try:
            while s.recv(4096):
                pass
        except (ConnectionResetError, socket.timeout):
            pass
        s.close()
    assert time.time() - t0 < 9, "slow connections were not closed by the idle timeout"
    assert server.healthy()


def test_garbage_http(server):
    for junk in (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 100,
                 b"GET / HTTP/9.9\r\n\r\n", b"BREW /coffee HTCPCP/1.0\r\n\r\n",
                 b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\n\r\n"):
        s = raw_socket(server.port)
        try:
            s.sendall(junk)
            s.recv(4096)
        except OSError:
            pass
        s.close()
    assert server.healthy()


def _stream_then_drop(port, i):
    s = raw_socket(port, timeout=30)
    body = json.dumps({"model": "stories260k", "prompt": [1, 403 + (i % 50)],
                       "max_tokens": 400, "temperature": 0.8, "seed": i,
                       "stream": True}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    got = b""
    while b"data: " not in got:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    # abort with RST (SO_LINGER 0), as a crashed client would
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    return got.startswith(b"HTTP/1.1 200")


def test_100_disconnects_mid_stream(server):
    before = server.metrics()
    with concurrent.futures.ThreadPoolExecutor(100) as ex:
        ok = list(ex.map(lambda i: _stream_then_drop(server.port, i), range(100)))
    assert all(ok)
    assert server.healthy()
    assert wait_until(lambda: idle(server), 30), server.metrics()
    after = server.metrics()
    assert after["facet_requests_cancelled_total"] - before["facet_requests_cancelled_total"] >= 90
    # far fewer tokens than 100 x 400 were generated: the sequences were cancelled
    assert after["facet_generation_tokens_total"] - before["facet_generation_tokens_total"] < 30000
    st, r = server.post("/v1/completions", {"model": "stories260k", "prompt": [1, 403],
                                            "max_tokens": 5, "temperature": 0})
    assert st == 200 and r["usage"]["completion_tokens"] == 5


def test_disconnect_while_waiting_whole_response(server):
    for i in range(10):
        s = raw_socket(server.port)
        body = json.dumps({"model": "stories260k", "prompt": [1], "max_tokens": 500,
                           "temperature": 1.0, "seed": i}).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                  % len(body) + body)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    assert server.healthy()
    assert wait_until(lambda: idle(server), 30), server.metrics()


@pytest.mark.parametrize("stream", [False, True])
def test_disconnect_counts_as_cancelled_only(server, stream):
    # a client that closes its socket while its request runs is cancelled, streamed or
    # not: facet_requests_cancelled_total counts it, failed and rejected (503, queue
    # full) do not
    names = ["facet_requests_%s_total" % n for n in ("cancelled", "failed", "rejected")]
    assert wait_until(lambda: idle(server), 30), server.metrics()
    before = server.metrics()
    s = raw_socket(server.port)
    # 16 x 500 tokens with both eos ids banned: far longer than the wait below
    body = json.dumps({"model": "stories260k", "prompt": [1], "max_tokens": 500, "n": 16,
                       "temperature": 1.0, "seed": 3, "logit_bias": {"1": -100, "2": -100},
                       "stream": stream}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
              % len(body) + body)
    running = wait_until(lambda: server.metrics()["facet_sequence_slots_used"] > 0, 10, 0.005)
    s.close()
    assert running
    assert wait_until(lambda: idle(server), 30), server.metrics()
    after = server.metrics()
    delta = {n: after[n] - before[n] for n in names}
    assert delta == {names[0]: 1, names[1]: 0, names[2]: 0}, delta
    # far fewer than 16 x 500 tokens: the sequences were cancelled, not run to the end
    assert after["facet_generation_tokens_total"] - before["facet_generation_tokens_total"] \
        < 16 * 500


def test_shutdown_with_clients_that_never_read(facet_bin, repo_root):
    # streams whose clients stop reading (full socket buffers) must not hold up SIGTERM
    s = Server(facet_bin, repo_root / "models" / "stories260k", "--threads", "1",
               "--shutdown-grace", "1")
    socks = []
    try:
        for i in range(5):
            k = raw_socket(s.port)
            k.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
            body = json.dumps({"model": "stories260k", "prompt": [1], "max_tokens": 500,
                               "n": 8, "temperature": 1, "seed": i, "stream": True,
                               "logprobs": 5}).encode()
            k.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                      % len(body) + body)
            socks.append(k)
        time.sleep(1.0)
        assert s.healthy()
        t0 = time.time()
        s.assert_clean_exit(timeout=30)
        assert time.time() - t0 < 15
    finally:
        s.stop()
        for k in socks:
            k.close()
