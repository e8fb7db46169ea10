"""`facet serve` chat completions: a copy of the bundled stories260k model with a real
chat template from the corpus (tests/data/server, TinyLlama's Zephyr-style turns).

Oracle: Python's jinja2 (Debian) renders the same messages with transformers' settings
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols); `facet
tokenize --no-special` turns the text into ids (apply_chat_template adds no special
tokens); `facet run --prompt-ids` generates from those ids greedily. The server's chat
answer must be token-identical to that.
"""

import json
import shutil

import pytest

from server_harness import MESSAGES, Server, chat_expected as expected

@pytest.fixture(scope="module")
def chat_model(repo_root, tmp_path_factory):
    src = repo_root / "models" / "stories260k"
    dst = tmp_path_factory.mktemp("chatmodel") / "stories260k-chat"
    dst.mkdir()
    for name in ("config.json", "generation_config.json", "model.safetensors",
                 "tokenizer.json", "special_tokens_map.json"):
        shutil.copy(src / name, dst / name)
    cfg = json.loads((src / "tokenizer_config.json").read_text())
    template = (repo_root / "tests" / "data" / "server" /
                "tinyllama_chat_template.jinja").read_text()
    cfg["chat_template"] = template
    (dst / "tokenizer_config.json").write_text(json.dumps(cfg))
    return dst, template


@pytest.fixture(scope="module")
def server(facet_bin, chat_model):
    s = Server(facet_bin, chat_model[0], "--threads", "1")
    try:
        yield s
        s.assert_clean_exit()
    finally:
        s.stop()


def test_chat_matches_template_and_run(server, run_facet, chat_model):
    model, template = chat_model
    ids, ref = expected(run_facet, model, template, MESSAGES, 40)
    st, r = server.post("/v1/chat/completions", {"model": "stories260k-chat",
                                                 "messages": MESSAGES, "temperature": 0,
                                                 "max_completion_tokens": 40})
    assert st == 200, r
    assert r["object"] == "chat.completion"
    msg = r["choices"][0]["message"]
    assert msg["role"] == "assistant"
    assert msg["content"] == ref["text"]
    assert r["choices"][0]["finish_reason"] == ref["finish_reason"]
    assert r["usage"]["prompt_tokens"] == len(ids)
    assert r["usage"]["completion_tokens"] == len(ref["generated_ids"])


def test_chat_streaming_and_text_parts(server, run_facet, chat_model):
    model, template = chat_model
    ids, ref = expected(run_facet, model, template, MESSAGES, 30)
    parts = [dict(m, content=[{"type": "text", "text": m["content"][:5]},
                              {"type": "text", "text": m["content"][5:]}]) for m in MESSAGES]
    body = {"model": "stories260k-chat", "messages": parts, "temperature": 0, "max_tokens": 30,
            "stream": True, "stream_options": {"include_usage": True}, "logprobs": True,
            "top_logprobs": 2}
    st, chunks, done, _ = server.stream("/v1/chat/completions", body)
    assert st == 200 and done
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    content = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks
                      if c["choices"])
    assert content == ref["text"]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[-1]["usage"]["prompt_tokens"] == len(ids)
    lps = [t for c in chunks if c["choices"] and c["choices"][0]["logprobs"]
           for t in c["choices"][0]["logprobs"]["content"]]
    assert len(lps) == len(ref["generated_ids"])
    assert "".join(t["token"] for t in lps) == ref["text"]
    assert all(len(t["top_logprobs"]) == 2 and bytes(t["bytes"]).decode() == t["token"]
               for t in lps)


def test_chat_stop_and_n(server):
    body = {"model": "stories260k-chat", "messages": MESSAGES, "temperature": 0,
            "max_tokens": 40}
    st, full = server.post("/v1/chat/completions", body)
    text = full["choices"][0]["message"]["content"]
    cut = text[10:14]
    st, r = server.post("/v1/chat/completions", dict(body, stop=[cut], n=2))
    assert st == 200
    for ch in r["choices"]:
        assert ch["message"]["content"] == text[:text.find(cut)]
        assert ch["finish_reason"] == "stop"


def test_chat_tools_refused_clearly(server):
    st, r = server.post("/v1/chat/completions", {
        "model": "stories260k-chat", "messages": MESSAGES,
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]})
    assert st == 400 and r["error"]["param"] == "tools"
