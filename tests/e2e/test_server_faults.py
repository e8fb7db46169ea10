"""`facet serve`: the faults a traffic campaign found (issue 19), each reproduced.

Every test here failed on the server before the fix it names (a hang shows as a bounded
socket timeout). Oracles: the OpenAI API reference (statuses, error shape, parameter
ranges, stream chunk fields), HTTP/1.1 (RFC 9110: 413 before 100-continue, HEAD, 415,
Retry-After), and counts taken from the server's own answers.
"""

import concurrent.futures
import json
import shutil
import socket
import struct
import threading
import time

import pytest

from server_harness import Server, raw_socket, wait_until

BANNED_EOS = {"1": -100, "2": -100}  # stories260k's bos/eos: generation runs to its limit


@pytest.fixture(scope="module")
def model(repo_root):
    return repo_root / "models" / "stories260k"


@pytest.fixture(scope="module")
def server(facet_bin, model):
    s = Server(facet_bin, model, "--threads", "1", "--max-batch", "4", "--timeout", "2",
               "--max-connections", "8")
    try:
        yield s
        assert s.healthy()
        s.assert_clean_exit()
    finally:
        s.stop()


def chat_copy(repo_root, dst, template_path, ctx=None):
    """stories260k with a chat template (and optionally another context)."""
    src = repo_root / "models" / "stories260k"
    dst.mkdir()
    for name in ("generation_config.json", "model.safetensors", "tokenizer.json",
                 "special_tokens_map.json"):
        shutil.copy(src / name, dst / name)
    config = json.loads((src / "config.json").read_text())
    if ctx:
        config["max_position_embeddings"] = ctx
    (dst / "config.json").write_text(json.dumps(config))
    cfg = json.loads((src / "tokenizer_config.json").read_text())
    cfg["chat_template"] = template_path.read_text()
    (dst / "tokenizer_config.json").write_text(json.dumps(cfg))
    return dst


@pytest.fixture(scope="module")
def chat_model(repo_root, tmp_path_factory):
    return chat_copy(repo_root, tmp_path_factory.mktemp("faults") / "stories-chat",
                     repo_root / "tests" / "data" / "server" / "tinyllama_chat_template.jinja")


@pytest.fixture(scope="module")
def qwen3_model(repo_root, tmp_path_factory):
    return chat_copy(repo_root, tmp_path_factory.mktemp("faults") / "stories-qwen3",
                     repo_root / "tests" / "fuzz" / "seeds" / "fuzz_template" /
                     "tokenizers_qwen3.jinja", ctx=2048)


def drop(s):
    """Abort a socket with RST, as a crashed client does."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def read_response(s, limit=8.0):
    """Bytes until the peer closes or `limit` seconds pass (then what came)."""
    s.settimeout(0.2)
    data, end = b"", time.time() + limit
    while time.time() < end:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            if b"\r\n\r\n" in data and b"Content-Length" in data:
                head, _, body = data.partition(b"\r\n\r\n")
                n = int(head.split(b"Content-Length:")[1].split(b"\r\n")[0])
                if len(body) >= n:
                    break
            continue
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


# ------------------------------------------------ 1. n above --max-batch ----------
def test_n_above_max_batch_is_refused(server):
    """n=5 on 4 slots was queued forever (and every request behind it too): now a 400
    that names both numbers, and the next request is answered."""
    st, r = server.post("/v1/completions", {"prompt": [1, 403], "n": 5, "max_tokens": 2},
                        timeout=10)
    assert st == 400, r
    e = r["error"]
    assert e["param"] == "n" and "5" in e["message"] and "4" in e["message"], e
    st, r = server.post("/v1/completions", {"prompt": [1, 403], "n": 4, "max_tokens": 2},
                        timeout=10)
    assert st == 200 and len(r["choices"]) == 4


# ------------------------------------------------ 2. connection lockout -----------
def drip(socks, stop):
    """Send one header byte per 0.3 s on every socket (the idle timer's reset)."""
    line = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 1000
    i = 0
    while not stop.is_set() and i < len(line):
        for s in socks:
            try:
                s.send(line[i:i + 1])
            except OSError:
                pass
        i += 1
        time.sleep(0.3)


def test_connection_limit_is_503_and_health_answers(server):
    """8 connections that drip header bytes held every slot (the idle timeout restarts
    on each byte): past --max-connections a request gets a 503 JSON error with
    Retry-After, /health still answers, and the drippers are cut once --timeout (2 s)
    has passed since their request began, although they never went idle."""
    socks = [raw_socket(server.port, timeout=10) for _ in range(8)]
    stop = threading.Event()
    t = threading.Thread(target=drip, args=(socks, stop), daemon=True)
    t.start()
    try:
        time.sleep(0.5)
        status, headers, data = server.request("POST", "/v1/completions",
                                               {"prompt": [1], "max_tokens": 1}, timeout=5)
        assert status == 503, data
        assert headers.get("retry-after") and headers["content-type"] == "application/json"
        assert json.loads(data)["error"]["code"] == "too_many_connections"
        assert server.healthy()
        t0 = time.time()
        for s in socks:
            assert read_response(s, 6.0) is not None
        assert time.time() - t0 < 6, "dripping connections were not cut"
        closed = 0
        for s in socks:  # cut: the peer closed (recv gives b"" or a reset)
            try:
                s.settimeout(0.5)
                closed += s.recv(1) == b""
            except (ConnectionResetError, BrokenPipeError):
                closed += 1
            except socket.timeout:
                pass
        assert closed == 8
    finally:
        stop.set()
        t.join(5)
        for s in socks:
            s.close()
    st, r = server.post("/v1/completions", {"prompt": [1], "max_tokens": 1}, timeout=10)
    assert st == 200, r


def test_slow_body_is_cut_at_the_request_deadline(server):
    """A body sent one byte per 0.3 s never went idle, so it was never timed out."""
    s = raw_socket(server.port, timeout=10)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
              b"\r\nContent-Length: 400\r\n\r\n")
    t0 = time.time()
    cut = False
    try:
        for _ in range(40):  # 12 s of drip at most
            s.send(b" ")
            time.sleep(0.3)
    except OSError:
        cut = True
    if not cut:
        s.settimeout(1)
        try:
            cut = s.recv(4096) == b"" or True
        except (ConnectionResetError, socket.timeout):
            cut = True
    elapsed = time.time() - t0
    s.close()
    assert cut and elapsed < 8, elapsed
    assert server.healthy()


# ------------------------------------------------ 3. 413 at once ------------------
def test_huge_content_length_is_413_at_once(server):
    s = raw_socket(server.port, timeout=10)
    t0 = time.time()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
              b"\r\nContent-Length: 99999999999\r\n\r\n{")
    data = read_response(s, 5.0)
    s.close()
    assert data.startswith(b"HTTP/1.1 413"), data[:200]
    assert time.time() - t0 < 3
    body = json.loads(data.partition(b"\r\n\r\n")[2])
    assert body["error"]["code"] == "request_too_large"


def test_expect_100_continue_over_limit_is_413(server):
    s = raw_socket(server.port, timeout=10)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
              b"\r\nContent-Length: 5000000\r\nExpect: 100-continue\r\n\r\n")
    data = read_response(s, 3.0)
    s.close()
    assert data.startswith(b"HTTP/1.1 413"), data[:200]
    assert b"100 Continue" not in data


# ------------------------------------------------ 4. content null ------------------
def test_assistant_content_null_reaches_templates_as_empty(facet_bin, qwen3_model):
    """The OpenAI SDK sends an assistant tool-call turn back with "content": null; the
    Qwen3 template does `'</think>' in message.content`, which failed on None."""
    tools = [{"type": "function", "function": {
        "name": "get_weather", "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}}}}}]
    call = {"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
    msgs = [{"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
    with Server(facet_bin, qwen3_model, "--threads", "1") as s:
        st, r = s.post("/v1/chat/completions", {"messages": msgs, "tools": tools,
                                                "max_tokens": 2, "temperature": 0})
        assert st == 200, r
        # the same turn with content "" renders the same prompt
        msgs[1]["content"] = ""
        st, r2 = s.post("/v1/chat/completions", {"messages": msgs, "tools": tools,
                                                 "max_tokens": 2, "temperature": 0})
        assert st == 200 and r2["usage"]["prompt_tokens"] == r["usage"]["prompt_tokens"]


# ------------------------------------------------ 5. default max_tokens ------------
def test_default_max_tokens_is_not_a_budget_error(facet_bin, chat_model):
    """A budget below the context (300 < 512) refused every chat without max_tokens with
    kv_budget_exceeded for a max_tokens the client never sent; now it is answered, and
    its length is bounded by what the budget allows."""
    with Server(facet_bin, chat_model, "--threads", "1", "--kv-budget", "300") as s:
        body = {"messages": [{"role": "user", "content": "Tell me a story."}],
                "temperature": 0, "logit_bias": BANNED_EOS}
        st, r = s.post("/v1/chat/completions", body, timeout=60)
        assert st == 200, r
        u = r["usage"]
        assert u["prompt_tokens"] + u["completion_tokens"] == 300
        assert r["choices"][0]["finish_reason"] == "length"
        # an explicit max_tokens beyond the budget is still the client's error
        st, r = s.post("/v1/chat/completions", dict(body, max_tokens=400), timeout=60)
        assert st == 400 and r["error"]["code"] in ("kv_budget_exceeded",
                                                    "context_length_exceeded"), r


# ------------------------------------------------ 7. incremental tool streams ------
def test_tool_stream_is_incremental(facet_bin, qwen3_model):
    """With tools, an answer came as one content event at the end: now its text comes
    as it is generated (none of it can become <tool_call>). The stream coalesces the
    tokens of steps the reader missed, so the count asked is far below the 200 tokens,
    and far above the 1 event of holding."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    body = {"messages": [{"role": "user", "content": "Hi"}], "tools": tools,
            "max_tokens": 200, "temperature": 0, "stream": True,
            "logit_bias": dict(BANNED_EOS, **{"63": -100, "504": -100})}  # both "<"
    with Server(facet_bin, qwen3_model, "--threads", "1") as s:
        st, chunks, done, _ = s.stream("/v1/chat/completions", body)
        assert st == 200 and done
        contents = [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]]
        pieces = [x for x in contents[1:] if x]
        assert len(pieces) >= 10, contents
        body.pop("stream")
        st, whole = s.post("/v1/chat/completions", body)
        assert "".join(pieces) == whole["choices"][0]["message"]["content"]


# ------------------------------------------------ 8. batch gauge after cancels -----
def test_batch_gauge_returns_to_zero_after_cancelled_streams(server):
    socks = []
    for i in range(4):
        s = raw_socket(server.port, timeout=10)
        body = json.dumps({"prompt": [1, 403], "max_tokens": 400, "stream": True,
                           "logit_bias": BANNED_EOS, "seed": i}).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                  b"application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        socks.append(s)
    for s in socks:
        got = b""
        while b"data: " not in got:
            got += s.recv(4096)
    for s in socks:
        drop(s)
    m = {}

    def idle():
        m.update(server.metrics())
        return m["facet_sequence_slots_used"] == 0 and m["facet_queue_length"] == 0

    assert wait_until(idle, 20), m
    time.sleep(0.3)
    assert server.metrics()["facet_batch_size_running"] == 0


# ------------------------------------------------ 9. OpenAI divergences ------------
@pytest.mark.parametrize("field,value", [
    ("temperature", 2.5), ("temperature", -0.1), ("top_p", 1.5), ("presence_penalty", 2.5),
    ("frequency_penalty", -3)])
def test_out_of_range_values_are_400(server, field, value):
    st, r = server.post("/v1/completions", {"prompt": [1], "max_tokens": 1, field: value},
                        timeout=10)
    assert st == 400 and r["error"]["param"] == field, r


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", None])
def test_content_type_must_be_json(server, ctype):
    body = json.dumps({"prompt": [1], "max_tokens": 1}).encode()
    s = raw_socket(server.port)
    head = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n" % len(body)
    if ctype:
        head += b"Content-Type: %s\r\n" % ctype.encode()
    s.sendall(head + b"\r\n" + body)
    data = read_response(s, 5.0)
    s.close()
    assert data.startswith(b"HTTP/1.1 415"), data[:300]
    assert json.loads(data.partition(b"\r\n\r\n")[2])["error"]["type"] == \
        "invalid_request_error"


def test_json_content_type_with_charset(server):
    st, _, data = server.request("POST", "/v1/completions", {"prompt": [1], "max_tokens": 1},
                                 headers={"Content-Type": "application/json; charset=utf-8"},
                                 timeout=10)
    assert st == 200, data


def test_head_health(server):
    st, _, data = server.request("HEAD", "/health", timeout=10)
    assert st == 200 and data == b""


def test_encoded_slash_is_not_a_path_separator(server):
    st, _, data = server.get("/v1%2Fmodels", timeout=10)
    assert st == 404, data
    assert json.loads(data)["error"]["code"] == "unknown_url"


def test_include_usage_null_on_every_chunk_but_the_last(server):
    st, chunks, done, _ = server.stream("/v1/completions", {
        "prompt": [1, 403], "max_tokens": 5, "stream": True, "temperature": 0,
        "stream_options": {"include_usage": True}})
    assert st == 200 and done
    assert all("usage" in c and c["usage"] is None for c in chunks[:-1]), chunks
    assert chunks[-1]["usage"]["completion_tokens"] == 5 and chunks[-1]["choices"] == []
