"""`facet serve` driven by the official `openai` Node client (npm `openai`, pinned in
tests/e2e/node/package-lock.json and installed by scripts/setup): completions and chat,
streaming and not, error classes. Oracle: `facet run --prompt-ids` greedy output for the
same ids (for chat, the ids the server reports in usage come from the template; the
chat text must equal the non-streamed chat text and the stream)."""

import json
import pathlib
import shutil
import subprocess

import pytest

from server_harness import MESSAGES, Server, chat_expected as expected, chat_prompt_ids, \
    render_chat

NODE_DIR = pathlib.Path(__file__).resolve().parent / "node"


@pytest.fixture(scope="module")
def node():
    exe = shutil.which("node")
    if not exe or not (NODE_DIR / "node_modules" / "openai").is_dir():
        pytest.skip("SKIPPED LOUDLY: node or the npm `openai` client is missing "
                    "(run scripts/setup, which does `npm ci` in tests/e2e/node)")
    return exe


@pytest.fixture(scope="module")
def chat_model(repo_root, tmp_path_factory):
    src = repo_root / "models" / "stories260k"
    dst = tmp_path_factory.mktemp("nodechat") / "stories-chat"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("llama2c", "source"))
    cfg = json.loads((src / "tokenizer_config.json").read_text())
    template = (repo_root / "tests" / "data" / "server" /
                "tinyllama_chat_template.jinja").read_text()
    cfg["chat_template"] = template
    (dst / "tokenizer_config.json").write_text(json.dumps(cfg))
    return dst, template


def run_client(node, port, model, scenario):
    p = subprocess.run([node, str(NODE_DIR / "openai_client.mjs"),
                        "http://127.0.0.1:%d/v1" % port, model, json.dumps(scenario)],
                       capture_output=True, text=True, timeout=120, cwd=str(NODE_DIR))
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


def test_openai_node_client(node, facet_bin, run_facet, chat_model):
    model, template = chat_model
    ids = [1, 403, 407]
    p = run_facet(["run", str(model), "--prompt-ids", ",".join(map(str, ids)), "-n", "30",
                   "--json"], timeout=60)
    ref = json.loads(p.stdout)
    chat_ids, chat_ref = expected(run_facet, model, template, MESSAGES, 30)
    with Server(facet_bin, model, "--threads", "1") as s:
        out = run_client(node, s.port, "stories-chat",
                         {"prompt_ids": ids, "max_tokens": 30, "messages": MESSAGES})
        assert s.healthy()
    assert out["models"] == ["stories-chat"]
    assert out["missing_model_status"] == 404
    assert out["missing_model_class"] == "NotFoundError"
    assert out["completion"]["text"] == ref["text"]
    assert out["completion"]["finish_reason"] == ref["finish_reason"]
    assert out["completion"]["usage"]["completion_tokens"] == len(ref["generated_ids"])
    assert "".join(out["completion"]["tokens"]) == ref["text"]
    assert out["completion_stream"] == {"text": ref["text"], "finish_reason": "length"}
    assert out["bad_request_status"] == 400 and out["bad_request_param"] == "max_tokens"
    chat = out["chat"]
    assert chat["object"] == "chat.completion" and chat["role"] == "assistant"
    assert chat["content"] == chat_ref["text"]
    assert chat["usage"]["prompt_tokens"] == len(chat_ids)
    assert out["chat_stream"]["content"] == chat_ref["text"]
    assert out["chat_stream"]["role"] == "assistant"
    assert out["chat_stream"]["finish_reason"] == chat["finish_reason"]
    counts = ("prompt_tokens", "completion_tokens", "total_tokens")  # cached_tokens differ
    assert [out["chat_stream"]["usage"][k] for k in counts] == [chat["usage"][k] for k in counts]


def test_openai_node_client_tool_round_trip(node, facet_bin, run_facet, repo_root, tmp_path):
    """Two turns through the Node client on stories260k with the Qwen2.5 template
    (Hermes tool calls): a forced call, then the call and the tool's result sent back.
    The prompts the server builds are checked against jinja2 + facet tokenize."""
    src = repo_root / "models" / "stories260k"
    model = tmp_path / "stories-tools"
    shutil.copytree(src, model, ignore=shutil.ignore_patterns("llama2c", "source"))
    config = json.loads((src / "config.json").read_text())
    config["max_position_embeddings"] = 1024  # room for the template's tool preamble
    (model / "config.json").write_text(json.dumps(config))
    cfg = json.loads((src / "tokenizer_config.json").read_text())
    template = (repo_root / "tests" / "data" / "server" /
                "qwen2.5_chat_template.jinja").read_text()
    cfg["chat_template"] = template
    (model / "tokenizer_config.json").write_text(json.dumps(cfg))
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    msgs = [{"role": "user", "content": "Paris?"}]
    with Server(facet_bin, model, "--threads", "1") as s:
        out = run_client(node, s.port, "stories-tools",
                         {"prompt_ids": None, "max_tokens": 8, "messages": msgs,
                          "tools": tools})
    opening = '<tool_call>\n{"name": "get_weather", "arguments": '
    want1 = chat_prompt_ids(run_facet, model, render_chat(template, msgs, tools) + opening)
    assert out["turn1"]["usage"]["prompt_tokens"] == len(want1)
    if out["turn1"]["tool_calls"]:
        assert out["turn1"]["finish_reason"] == "tool_calls"
        assert out["turn1"]["tool_calls"][0]["function"]["name"] == "get_weather"
    else:  # the tiny story model did not complete the call: the text says so
        assert out["turn1"]["content"].startswith(opening)
    call = out["turn2"]["call_sent"]
    oracle_call = dict(call, function={"name": call["function"]["name"],
                                       "arguments": json.loads(call["function"]["arguments"])})
    turn2 = msgs + [{"role": "assistant", "content": None, "tool_calls": [oracle_call]},
                    {"role": "tool", "tool_call_id": call["id"], "content": "sunny, 21 C"}]
    want2 = chat_prompt_ids(run_facet, model, render_chat(template, turn2, tools))
    assert out["turn2"]["usage"]["prompt_tokens"] == len(want2)
    assert out["turn2"]["finish_reason"] in ("stop", "length", "tool_calls")


def test_openai_node_client_zod_parse(node, facet_bin, chat_model):
    """chat.completions.parse with zodResponseFormat (npm `zod`): the server enforces the
    schema the helper sends, and the client's own zod parse of the reply succeeds."""
    if not (NODE_DIR / "node_modules" / "zod").is_dir():
        pytest.skip("SKIPPED LOUDLY: the npm `zod` package is missing (rerun scripts/setup, "
                    "which does `npm ci` in tests/e2e/node)")
    model, _ = chat_model
    with Server(facet_bin, model, "--threads", "1") as s:
        for seed in (1, 2):
            out = run_client(node, s.port, "stories-chat",
                             {"messages": MESSAGES, "max_tokens": 200, "zod": True,
                              "seed": seed})["parsed"]
            assert out["finish_reason"] == "stop", out
            parsed = out["parsed"]
            assert isinstance(parsed, dict) and sorted(parsed) == ["age", "happy", "name"], out
            assert parsed == json.loads(out["content"])  # the client parsed what was sent
            assert isinstance(parsed["name"], str) and len(parsed["name"]) <= 12
            assert isinstance(parsed["age"], int) and not isinstance(parsed["age"], bool)
            assert isinstance(parsed["happy"], bool)
            assert out["refusal"] is None
        assert s.healthy()
