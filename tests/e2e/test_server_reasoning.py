"""`facet serve` with a reasoning model's chat template: chat_template_kwargs reach the
template, and the <think> part of the output comes back as reasoning_content (whole and
streamed). The model is the bundled stories260k with Qwen3's real chat template from the
corpus (../shared/corpus/tokenizers/qwen3), and a variant of it whose generation prompt
opens the <think> block (as DeepSeek-R1's and Qwen3-Thinking's do), so that the whole
output is reasoning.

Oracles: Python's jinja2 renders the template with the same variables (the prompt must
tokenize to the server's prompt_tokens); /v1/completions on the same prompt ids gives the
raw text the split is checked against, split here independently of the C."""

import json
import shutil

import pytest

from server_harness import Server

QWEN3 = "tokenizers/qwen3/tokenizer_config.json"
MSGS = [{"role": "system", "content": "You tell stories."},
        {"role": "user", "content": "Once upon a time"}]


def render(template, messages, **kw):
    import jinja2.ext
    import jinja2.sandbox
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, \
        sort_keys=False: json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                                    separators=separators, sort_keys=sort_keys)
    return env.from_string(template).render(messages=messages, add_generation_prompt=True,
                                            **kw)


def make_model(repo_root, dst, template):
    src = repo_root / "models" / "stories260k"
    dst.mkdir()
    for name in ("generation_config.json", "model.safetensors", "tokenizer.json",
                 "special_tokens_map.json"):
        shutil.copy(src / name, dst / name)
    config = json.loads((src / "config.json").read_text())
    config["max_position_embeddings"] = 1024
    (dst / "config.json").write_text(json.dumps(config))
    cfg = json.loads((src / "tokenizer_config.json").read_text())
    cfg["chat_template"] = template
    (dst / "tokenizer_config.json").write_text(json.dumps(cfg))
    return dst


@pytest.fixture(scope="module")
def templates(facet_shared):
    path = facet_shared / "corpus" / QWEN3
    if not path.exists():
        pytest.skip("SKIPPED LOUDLY: the corpus's Qwen3 tokenizer_config.json is absent")
    qwen3 = json.loads(path.read_text())["chat_template"]
    tail = "{{- '<|im_start|>assistant\\n' }}"
    assert qwen3.count(tail) == 1
    opened = qwen3.replace(tail, "{{- '<|im_start|>assistant\\n<think>\\n' }}")
    return qwen3, opened


@pytest.fixture(scope="module")
def servers(facet_bin, repo_root, tmp_path_factory, templates):
    base = tmp_path_factory.mktemp("reasoning")
    a = make_model(repo_root, base / "qwen3-stories", templates[0])
    b = make_model(repo_root, base / "think-stories", templates[1])
    sa = Server(facet_bin, a, "--threads", "1")
    try:
        sb = Server(facet_bin, b, "--threads", "1")
    except BaseException:
        sa.stop()
        raise
    try:
        yield sa, sb
        sa.assert_clean_exit()
        sb.assert_clean_exit()
    finally:
        sa.stop()
        sb.stop()


def tokenize(run_facet, model_dir, text):
    p = run_facet(["tokenize", str(model_dir), "--no-special", text], timeout=30)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def raw_text(server, ids, n):
    st, r = server.post("/v1/completions", {"prompt": ids, "max_tokens": n, "temperature": 0})
    assert st == 200, r
    return r["choices"][0]["text"]


def split(text, opened):
    """The reasoning/content split, worked here: reasoning up to </think>, content after
    it without leading blanks; without an opened block, only an output that starts with
    <think> reasons."""
    if not opened:
        s = text.lstrip(" \n\r\t")
        if not s.startswith("<think>"):
            return None, text
        text = s[len("<think>"):]
    i = text.find("</think>")
    if i < 0:
        return text, ""
    return text[:i], text[i + len("</think>"):].lstrip(" \n\r\t")


def chat(server, **kw):
    body = {"messages": MSGS, "temperature": 0, "max_tokens": 24}
    body.update(kw)
    st, r = server.post("/v1/chat/completions", body)
    assert st == 200, r
    return r


def test_enable_thinking_false_reaches_the_template(servers, templates, run_facet):
    sa, _ = servers
    model_dir = sa.proc.args[2]
    plain = chat(sa)
    caps = json.loads(sa.get("/v1/models")[2])["data"][0]["capabilities"]
    assert caps["reasoning"] is True and caps["chat_template"] is True
    off = chat(sa, chat_template_kwargs={"enable_thinking": False})
    want_plain = tokenize(run_facet, model_dir, render(templates[0], MSGS))
    want_off = tokenize(run_facet, model_dir,
                        render(templates[0], MSGS, enable_thinking=False))
    assert render(templates[0], MSGS, enable_thinking=False).endswith(
        "<think>\n\n</think>\n\n")
    assert plain["usage"]["prompt_tokens"] == len(want_plain)
    assert off["usage"]["prompt_tokens"] == len(want_off) > len(want_plain)
    # the prompt closed the block: the output is the answer, reasoning_content null
    text = raw_text(sa, want_off, 24)
    msg = off["choices"][0]["message"]
    r, c = split(text, False)
    assert msg["reasoning_content"] == r and msg["content"] == c


def test_chat_template_kwargs_must_be_an_object(servers):
    sa, _ = servers
    for bad in ([1], "x", 3):
        st, r = sa.post("/v1/chat/completions", {"messages": MSGS, "chat_template_kwargs": bad})
        assert st == 400 and r["error"]["param"] == "chat_template_kwargs", r


def test_opened_block_is_reasoning(servers, templates, run_facet):
    _, sb = servers
    model_dir = sb.proc.args[2]
    ids = tokenize(run_facet, model_dir, render(templates[1], MSGS))
    text = raw_text(sb, ids, 24)
    want_r, want_c = split(text, True)
    r = chat(sb)
    assert r["usage"]["prompt_tokens"] == len(ids)
    msg = r["choices"][0]["message"]
    assert msg["reasoning_content"] == want_r and want_r
    assert (msg["content"] or "") == want_c
    # streamed: reasoning deltas and content deltas join to the same split
    st, chunks, done, _ = sb.stream("/v1/chat/completions",
                                    {"messages": MSGS, "temperature": 0, "max_tokens": 24,
                                     "stream": True})
    assert st == 200 and done
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("reasoning_content") or "" for d in deltas) == want_r
    assert "".join(d.get("content") or "" for d in deltas) == want_c
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"

