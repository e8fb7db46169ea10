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

from server_harness import MESSAGES, Server, chat_expected as expected, chat_prompt_ids, \
    render_chat

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


def test_models_capabilities_chat(server, tool_server):
    """A chat template shows in /v1/models: TinyLlama's turns have no tool-call syntax
    (tools null), Qwen2.5's have Hermes <tool_call> (tools "hermes"); the contexts are
    the configs' max_position_embeddings (512, and 1024 for the tool model)."""
    caps = [json.loads(s.get("/v1/models")[2])["data"][0]["capabilities"]
            for s in (server, tool_server)]
    assert caps[0] == {"chat_template": True, "tools": None, "context_length": 512,
                       "embeddings": False, "reasoning": False}
    assert caps[1] == {"chat_template": True, "tools": "hermes", "context_length": 1024,
                       "embeddings": False, "reasoning": False}


def test_chat_without_model(server, run_facet, chat_model):
    """A chat request that omits "model" is answered by the one served model."""
    n = 6
    _, want = expected(run_facet, chat_model[0], chat_model[1], MESSAGES, n)
    status, r = server.post("/v1/chat/completions", {"messages": MESSAGES, "max_tokens": n,
                                                     "temperature": 0})
    assert status == 200, r
    assert r["model"] == "stories260k-chat"
    assert r["choices"][0]["message"]["content"] == want["text"]


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


def test_tools_need_a_tool_call_syntax(server):
    # TinyLlama's template shows no tool-call syntax: tools are refused, by name
    st, r = server.post("/v1/chat/completions", {
        "model": "stories260k-chat", "messages": MESSAGES,
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]})
    assert st == 400 and r["error"]["param"] == "tools"
    assert "tool-call syntax" in r["error"]["message"]
    st, r = server.post("/v1/chat/completions", {
        "model": "stories260k-chat", "messages": MESSAGES, "max_tokens": 3, "tool_choice": "none",
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]})
    assert st == 200


# ------------------------------------------------------------------- tools --
# small, because the template's tool preamble and stories260k's character-level
# tokens use most of the 512-token context
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
TOOL_MSGS = [{"role": "system", "content": "Hi."},
             {"role": "user", "content": "Paris?"}]


@pytest.fixture(scope="module")
def tool_model(repo_root, tmp_path_factory):
    """stories260k with the Qwen2.5-Instruct template (Hermes <tool_call> syntax)."""
    src = repo_root / "models" / "stories260k"
    dst = tmp_path_factory.mktemp("toolmodel") / "stories-tools"
    dst.mkdir()
    for name in ("generation_config.json", "model.safetensors", "tokenizer.json",
                 "special_tokens_map.json"):
        shutil.copy(src / name, dst / name)
    # room for the template's tool preamble (stories260k tokens are near character level)
    config = json.loads((src / "config.json").read_text())
    config["max_position_embeddings"] = 1024
    (dst / "config.json").write_text(json.dumps(config))
    cfg = json.loads((src / "tokenizer_config.json").read_text())
    template = (repo_root / "tests" / "data" / "server" /
                "qwen2.5_chat_template.jinja").read_text()
    cfg["chat_template"] = template
    (dst / "tokenizer_config.json").write_text(json.dumps(cfg))
    return dst, template


@pytest.fixture(scope="module")
def tool_server(facet_bin, tool_model):
    s = Server(facet_bin, tool_model[0], "--threads", "1")
    try:
        yield s
        s.assert_clean_exit()
    finally:
        s.stop()


def test_tool_round_trip_prompts(tool_server, run_facet, tool_model):
    model, template = tool_model
    base = {"model": "stories-tools", "temperature": 0, "max_tokens": 8}
    # turn 1, tool_choice auto: the tools are rendered into the system turn
    st, r = tool_server.post("/v1/chat/completions", dict(base, messages=TOOL_MSGS, tools=TOOLS))
    assert st == 200, r
    want = chat_prompt_ids(run_facet, model, render_chat(template, TOOL_MSGS, TOOLS))
    assert r["usage"]["prompt_tokens"] == len(want)
    ch = r["choices"][0]
    assert ch["finish_reason"] in ("stop", "length", "tool_calls")
    # turn 1, a named function: the assistant turn opens inside that call
    st, r = tool_server.post("/v1/chat/completions", dict(
        base, messages=TOOL_MSGS, tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_weather"}}))
    assert st == 200, r
    opening = '<tool_call>\n{"name": "get_weather", "arguments": '
    want = chat_prompt_ids(run_facet, model,
                           render_chat(template, TOOL_MSGS, TOOLS) + opening)
    assert r["usage"]["prompt_tokens"] == len(want)
    msg = r["choices"][0]["message"]
    if msg.get("tool_calls"):  # a tiny story model rarely completes the JSON
        assert msg["tool_calls"][0]["function"]["name"] == "get_weather"
        assert r["choices"][0]["finish_reason"] == "tool_calls"
    else:
        assert msg["content"].startswith(opening)
    # turn 2: the call (arguments as OpenAI's JSON string) and the tool's result
    call = {"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
    turn2 = TOOL_MSGS + [{"role": "assistant", "content": None, "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"}]
    st, r = tool_server.post("/v1/chat/completions", dict(base, messages=turn2, tools=TOOLS))
    assert st == 200, r
    oracle_msgs = TOOL_MSGS + [
        {"role": "assistant", "content": None, "tool_calls": [
            dict(call, function={"name": "get_weather", "arguments": {"city": "Paris"}})]},
        turn2[-1]]
    want = chat_prompt_ids(run_facet, model, render_chat(template, oracle_msgs, TOOLS))
    assert r["usage"]["prompt_tokens"] == len(want)


def test_tool_stream_equals_whole(tool_server):
    """A tools stream sends text as it comes (only what could become <tool_call> waits):
    its content pieces join to the whole answer's content, its last chunk carries the
    finish reason (and the tool calls, when the output is one)."""
    body = {"model": "stories-tools", "temperature": 0, "max_tokens": 12, "messages": TOOL_MSGS,
            "tools": TOOLS}
    st, whole = tool_server.post("/v1/chat/completions", body)
    st, chunks, done, _ = tool_server.stream("/v1/chat/completions", dict(body, stream=True))
    assert st == 200 and done
    deltas = [c["choices"][0] for c in chunks if c["choices"]]
    assert deltas[0]["delta"] == {"role": "assistant", "content": ""}
    assert [d["finish_reason"] for d in deltas[1:]][-1] == whole["choices"][0]["finish_reason"]
    assert all(d["finish_reason"] is None for d in deltas[1:-1])
    msg = whole["choices"][0]["message"]
    if msg.get("tool_calls"):
        assert deltas[-1]["delta"]["tool_calls"][0]["function"] == \
            msg["tool_calls"][0]["function"]
    else:
        assert "".join(d["delta"].get("content") or "" for d in deltas) == msg["content"]
