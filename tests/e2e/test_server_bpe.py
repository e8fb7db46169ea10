"""`facet serve` on a byte-level BPE vocabulary: a generated one-layer checkpoint with
the Qwen2.5-0.5B-Instruct facts and its full 151,936-token vocabulary (random weights,
tests/ref/gen_checkpoint.py), served with the real Qwen2.5 tokenizer and chat template
from ../shared/corpus. Random weights pick tokens all over the vocabulary, including
byte-level pieces that split UTF-8 characters, which the stream must never cut.

Oracles: the non-streamed answer of the same seeded request; strict UTF-8 decoding of
the raw SSE bytes; Python's jinja2 rendering + `facet tokenize --no-special` for the
chat prompt; the request served alone for the batched one.
"""

import concurrent.futures
import json
import shutil

import pytest

from server_harness import Server, chat_prompt_ids, render_chat, stream_text

CONFIG = "configs/Qwen__Qwen2.5-0.5B-Instruct__resaved"
TOKENIZER = "tokenizers/qwen2.5"


@pytest.fixture(scope="module")
def qwen_model(facet_shared, make_checkpoint, tmp_path_factory):
    src = make_checkpoint(facet_shared / "corpus" / CONFIG,
                          shrink={"vocab_size": 151936, "num_hidden_layers": 1})
    dst = tmp_path_factory.mktemp("qwenbpe") / "qwen-tiny"
    shutil.copytree(src, dst)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(facet_shared / "corpus" / TOKENIZER / name, dst / name)
    return dst


@pytest.fixture(scope="module")
def server(facet_bin, qwen_model):
    s = Server(facet_bin, qwen_model, "--ctx", "1024", "--threads", "1", timeout=120)
    try:
        yield s
        s.assert_clean_exit()
    finally:
        s.stop()


def body(seed, **kw):
    b = {"model": "qwen-tiny", "prompt": "Schöne Grüße — 你好, ", "max_tokens": 48,
         "temperature": 1.3, "seed": seed}
    b.update(kw)
    return b


def test_stream_never_splits_utf8(server):
    for seed in range(6):
        st, whole = server.post("/v1/completions", body(seed))
        assert st == 200, whole
        text = whole["choices"][0]["text"]
        st, chunks, done, raw = server.stream("/v1/completions", body(seed, stream=True))
        assert st == 200 and done
        raw.decode("utf-8")  # strict: no event carries half a character
        assert stream_text(chunks) == text
        assert whole["usage"]["completion_tokens"] == 48 or \
            whole["choices"][0]["finish_reason"] == "stop"


def test_batched_equals_alone(server):
    bodies = [body(100 + i, max_tokens=24) for i in range(8)]
    alone = [server.post("/v1/completions", b)[1]["choices"][0]["text"] for b in bodies]
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        got = list(ex.map(lambda b: server.post("/v1/completions", b)[1], bodies))
    assert [g["choices"][0]["text"] for g in got] == alone


def test_chat_prompt_with_tools_matches_jinja2(server, run_facet, qwen_model, facet_shared):
    cfg = json.loads((facet_shared / "corpus" / TOKENIZER / "tokenizer_config.json").read_text())
    template = cfg["chat_template"]
    msgs = [{"role": "user", "content": "Wetter in München?"}]
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Wetter für eine Stadt",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    st, r = server.post("/v1/chat/completions", {"model": "qwen-tiny", "messages": msgs,
                                                 "tools": tools, "max_tokens": 4})
    assert st == 200, r
    want = chat_prompt_ids(run_facet, qwen_model, render_chat(template, msgs, tools))
    assert r["usage"]["prompt_tokens"] == len(want)
    # tool_choice required opens the assistant turn inside a Hermes call
    st, r = server.post("/v1/chat/completions", {"model": "qwen-tiny", "messages": msgs,
                                                 "tools": tools, "tool_choice": "required",
                                                 "max_tokens": 4})
    assert st == 200, r
    want = chat_prompt_ids(run_facet, qwen_model,
                           render_chat(template, msgs, tools) + '<tool_call>\n{"name": "')
    assert r["usage"]["prompt_tokens"] == len(want)
