"""`facet run` against the bundled model's published outputs
(tests/data/stories260k/expected.json: two independent float64 references and llama2.c's
own expected text), and the sampling / stop / chat options end to end."""

import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
EXPECTED = json.loads((REPO / "tests" / "data" / "stories260k" / "expected.json").read_text())


def facet(*args, check=True):
    exe = os.environ.get("FACET_BIN", str(REPO / "build" / "facet"))
    p = subprocess.run([exe] + [str(a) for a in args], capture_output=True, text=True, timeout=120)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def run_json(*args):
    return json.loads(facet("run", "--json", *args).stdout)


def test_default_run_prints_published_text():
    """`facet run` with no model: greedy from BOS, 200 tokens, byte-for-byte the text
    llama2.c's authors published for this model."""
    g = EXPECTED["greedy_from_bos"]
    p = facet("run", "-n", "200")
    assert p.stdout == g["text"] + "\n"
    assert "decode 200 tokens" in p.stderr


def test_from_bos_ids():
    g = EXPECTED["greedy_from_bos"]
    out = run_json("-n", "200")
    assert out["prompt_ids"] == g["input_ids"]
    assert out["generated_ids"] == g["generated_ids"]
    assert out["finish_reason"] == "length"


@pytest.mark.parametrize("case", EXPECTED["prompts"], ids=lambda c: c["prompt"])
def test_prompt_continuations(case):
    n = len(case["generated_ids"])
    out = run_json("-p", case["prompt"], "-n", n)
    assert out["prompt_ids"] == case["prompt_ids"]
    assert out["generated_ids"] == case["generated_ids"]
    # "text" is what the generation added to the prompt's text: decode(prompt + generated)
    # minus decode(prompt) (the published continuation is decode(generated) alone, which
    # the SentencePiece decoder's leading-space strip shortens by one space)
    assert case["prompt"] + out["text"] == case["full_text"]
    assert out["text"].lstrip(" ") == case["continuation"]
    assert facet("run", "-p", case["prompt"], "-n", n).stdout == case["full_text"] + "\n"
    # the same through --prompt-ids
    ids = ",".join(str(i) for i in case["prompt_ids"])
    assert run_json("--prompt-ids", ids, "-n", n)["generated_ids"] == case["generated_ids"]


def test_top_logprobs_match_reference():
    g = EXPECTED["greedy_from_bos"]
    out = run_json("-n", "1", "--top-logprobs", "5")
    top = out["top_logprobs"][0]
    assert [t[0] for t in top] == [t[0] for t in g["top5_first"]]
    # log-probabilities: differences of logits are preserved by log_softmax
    ref = g["top5_first"]
    for (i, lp), (_, logit) in zip(top[1:], ref[1:]):
        assert abs((lp - top[0][1]) - (logit - ref[0][1])) < 1e-4


def test_seeded_sampling_reproducible():
    a = run_json("-n", "48", "--temp", "0.9", "--seed", "7")
    b = run_json("-n", "48", "--temp", "0.9", "--seed", "7")
    c = run_json("-n", "48", "--temp", "0.9", "--seed", "8")
    assert a["generated_ids"] == b["generated_ids"]
    assert a["generated_ids"] != c["generated_ids"]
    assert a["generated_ids"] != EXPECTED["greedy_from_bos"]["generated_ids"][:48]


def test_top_k_one_is_greedy_at_any_temperature():
    out = run_json("-n", "64", "--temp", "7", "--top-k", "1", "--seed", "3")
    assert out["generated_ids"] == EXPECTED["greedy_from_bos"]["generated_ids"][:64]


def test_stop_string_cuts_text():
    full = EXPECTED["greedy_from_bos"]["text"]
    out = run_json("-n", "200", "--stop", "park")
    assert out["finish_reason"] == "stop"
    assert out["text"] == full[: full.index("park")]


def test_eos_stops_generation(tmp_path):
    """A copy of the bundled model whose generation_config names the 10th published greedy
    id as its eos: generation must stop right after emitting it (finish "stop"), and run
    on to -n with --ignore-eos. The ids come from the published greedy sequence."""
    g = EXPECTED["greedy_from_bos"]["generated_ids"]
    eos = g[9]
    assert eos not in g[:9]
    d = tmp_path / "eos"
    shutil.copytree(REPO / "models" / "stories260k", d)
    os.chmod(d / "generation_config.json", 0o644)
    (d / "generation_config.json").write_text(json.dumps({"bos_token_id": 1, "eos_token_id": [eos]}))
    out = run_json(d, "-n", "50", "--no-cache")
    assert out["finish_reason"] == "stop"
    assert out["generated_ids"] == g[:10]
    forced = run_json(d, "-n", "50", "--no-cache", "--ignore-eos")
    assert forced["finish_reason"] == "length" and forced["generated_ids"] == g[:50]
    # the eos (an ordinary token here) is recorded but its text is not the completion's,
    # as serve does: text = decode(first 9 ids)
    head = facet("detokenize", d, "--skip-special", ",".join(map(str, [1] + g[:9]))).stdout
    assert out["text"] == head
    assert forced["text"].startswith(head) and len(forced["text"]) > len(head)


def test_context_limit_ends_with_length():
    """512-token context, 5-token prompt: the context counts the prompt and the generated
    tokens (as serve, transformers' max_length, vLLM's max_model_len): 507 generated.
    --ctx 20 likewise ends at 20 tokens; a prompt that fills the context is refused,
    naming the room left."""
    out = run_json("-p", "Once upon a time", "-n", "1000", "--ignore-eos")
    assert out["finish_reason"] == "length"
    assert len(out["prompt_ids"]) == 5 and len(out["generated_ids"]) == 512 - 5
    out = run_json("-p", "Once upon a time", "-n", "1000", "--ignore-eos", "--ctx", "20")
    assert len(out["prompt_ids"]) + len(out["generated_ids"]) == 20
    p = facet("run", "--prompt-ids", ",".join(["1"] * 20), "--ctx", "20", check=False)
    assert p.returncode == 1
    assert "the prompt has 20 tokens but the context holds 20" in p.stderr
    assert "at most 19 leave room for one generated token" in p.stderr


def test_invalid_sampling_values_are_errors():
    for args in (["--temp", "-1"], ["--top-p", "1.5"], ["--min-p", "2"], ["--top-k", "-3"]):
        p = facet("run", *args, check=False)
        assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr


def test_messages_without_template_is_an_error(tmp_path):
    m = tmp_path / "m.json"
    m.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    p = facet("run", "--messages", m, check=False)
    assert p.returncode != 0
    assert "template" in p.stderr


def test_messages_render_like_jinja2(tmp_path):
    """A copy of the bundled model given a Zephyr-style chat template (TinyLlama's, from
    the corpus): `run --messages` must tokenize exactly what Jinja2 renders, without
    adding special tokens (transformers' apply_chat_template; this template writes no
    BOS, so none is added, as serve does)."""
    jinja2 = pytest.importorskip("jinja2")
    d = tmp_path / "chat"
    shutil.copytree(REPO / "models" / "stories260k", d)
    tpl = ("{% for message in messages %}\n{% if message['role'] == 'user' %}\n"
           "{{ '<|user|>\n' + message['content'] + eos_token }}\n"
           "{% elif message['role'] == 'assistant' %}\n"
           "{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n"
           "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n"
           "{% endfor %}")
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg["chat_template"] = tpl
    os.chmod(d / "tokenizer_config.json", 0o644)
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    msgs = [{"role": "user", "content": "Tell me a story about Lily."}]
    (tmp_path / "m.json").write_text(json.dumps(msgs))
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    rendered = env.from_string(tpl).render(messages=msgs, add_generation_prompt=True,
                                           eos_token="</s>", bos_token="<s>")
    ids = json.loads(facet("tokenize", d, rendered, "--no-special").stdout)
    assert ids[0] != 1  # no BOS
    out = run_json(d, "--messages", tmp_path / "m.json", "-n", "8")
    assert out["prompt_ids"] == ids
    assert len(out["generated_ids"]) == 8


@pytest.mark.parametrize("prompt", ["Tom saw a 🙂", "Tom saw a", "Lily said \"hi", "snow ❄️"])
def test_json_text_is_the_completion_only(prompt):
    """--json's text is decode(prompt + generated) after decode(prompt): text the prompt's
    decode holds back (a byte-fallback group such as the emoji's four <0xHH> tokens) is
    the prompt's, not the completion's; the streamed stdout echoes the prompt once."""
    model = REPO / "models" / "stories260k"
    r = run_json(model, "-p", prompt, "-n", "12")
    ids, gen = r["prompt_ids"], r["generated_ids"]
    whole = facet("detokenize", model, "--skip-special", ",".join(map(str, ids + gen))).stdout
    head = facet("detokenize", model, "--skip-special", ",".join(map(str, ids))).stdout
    assert whole.startswith(head)
    assert r["text"] == whole[len(head):]
    out = facet("run", model, "-p", prompt, "-n", "12").stdout
    assert out == whole + "\n"


def test_prompt_from_standard_input():
    """`-f -` reads the prompt from standard input, as tokenize does: the same ids as -p."""
    exe = os.environ.get("FACET_BIN", str(REPO / "build" / "facet"))
    p = subprocess.run([exe, "run", "--json", "-f", "-", "-n", "4"], input="Once upon a time",
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    got, want = json.loads(p.stdout), run_json("-p", "Once upon a time", "-n", "4")
    assert got["prompt_ids"] == want["prompt_ids"] and got["text"] == want["text"]


def run_on_terminal(*args):
    """Run facet with stdout and stderr on one pseudo-terminal, as a user sees it; the
    bytes it shows, with the terminal's \\r\\n read back as \\n."""
    import pty
    exe = os.environ.get("FACET_BIN", str(REPO / "build" / "facet"))
    master, slave = pty.openpty()
    p = subprocess.Popen([exe] + [str(a) for a in args], stdout=slave, stderr=slave,
                         stdin=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert p.wait(timeout=120) == 0, out
    return out.decode().replace("\r\n", "\n")


def test_terminal_text_ends_before_the_stats_line():
    """On a terminal the streamed text ends with a newline, so the stats line on stderr
    starts a line of its own (the README's first command); stdout to a pipe is the same
    text and newline, byte for byte, and --json stays one JSON line."""
    case = EXPECTED["prompts"][0]
    n = len(case["generated_ids"])
    shown = run_on_terminal("run", "-p", case["prompt"], "-n", n)
    text, stats = shown.split("\nfacet: load ", 1)
    assert text == case["full_text"]
    assert re.match(r"[0-9.]+ s \| prefill %d tokens, TTFT [0-9.]+ ms, [0-9.]+ tok/s \| decode "
                    r"%d tokens, [0-9.]+ tok/s \| finish: length\n" % (len(case["prompt_ids"]), n),
                    stats), stats
    assert facet("run", "-p", case["prompt"], "-n", n).stdout == case["full_text"] + "\n"
    shown = run_on_terminal("run", "--json", "-p", case["prompt"], "-n", n)
    lines = [l for l in shown.split("\n") if l.startswith("{")]
    assert len(lines) == 1 and json.loads(lines[0])["generated_ids"] == case["generated_ids"]


def test_text_line_ends_before_the_stats_on_one_pipe():
    """With stdout and stderr on one pipe (2>&1, a log file), the newline that ends the
    text comes before the stats line; it sat in stdout's buffer while the stats went out,
    so the log read '...mom saidfacet: load ...'."""
    exe = os.environ.get("FACET_BIN", str(REPO / "build" / "facet"))
    p = subprocess.run([exe, "run", "-p", "Once upon a time", "-n", "8"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    assert p.returncode == 0, p.stdout
    lines = p.stdout.splitlines()
    assert lines[0].startswith("Once upon a time") and "facet:" not in lines[0], lines
    assert lines[1].startswith("facet: load "), lines
