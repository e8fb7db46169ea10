"""Inputs that were accepted and computed wrongly (issue 17), end to end on the bundled
stories260k model or on small inputs each test builds.

Oracles: the greedy continuation (`facet run` at temperature 0) for temperatures near 0,
whose distribution tends to the argmax; Python's json for integers beyond 64 bits; the
same command reading a file for `-f -`.
"""

import json
import subprocess

import pytest

from server_harness import Server


@pytest.fixture(scope="module")
def model(repo_root):
    return repo_root / "models" / "stories260k"


def run_ids(run_facet, model, *extra):
    p = run_facet(["run", str(model), "--prompt-ids", "1,403", "-n", "8", "--json",
                   "--ignore-eos", "--no-cache"] + list(extra), timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["generated_ids"]


def test_tiny_temperature_samples_the_argmax(facet_bin, run_facet, model):
    """--temp 1.5e-38 divided the logits into +inf and sampled the lowest id of them; the
    CLI refused 1e-40, which the server took. Any positive temperature now samples the
    chain's distribution, here (no tied maxima) the greedy tokens, in the CLI and the
    server alike; 1e-50, below float32's range, stays a positive temperature; both
    refuse 1e31 the same way."""
    greedy = run_ids(run_facet, model)
    for t in ("1.5e-38", "1e-40", "1e-50"):
        assert run_ids(run_facet, model, "--temp", t, "--seed", "3") == greedy, t
    p = run_facet(["run", str(model), "-n", "1", "--temp", "1e31"], timeout=60)
    assert p.returncode == 1 and "--temp=1e31 is out of range" in p.stderr, p.stderr

    def complete(s, t):
        status, r = s.post("/v1/completions", {"model": "stories260k", "prompt": [1, 403],
                                               "max_tokens": 8, "temperature": t, "seed": 3})
        return status, r

    with Server(facet_bin, model, "--threads", "1") as s:
        status, r0 = complete(s, 0)
        assert status == 200, r0
        for t in (1.5e-38, 1e-40, 1e-50):
            status, r = complete(s, t)
            assert status == 200, r
            assert r["choices"][0]["text"] == r0["choices"][0]["text"], t
        status, r = complete(s, 1e31)
        assert status == 400 and "temperature" in r["error"]["message"], r
        # the same expectation as the CLI's (it said only 'out of range')
        assert "expected a finite number of magnitude at most 1e30" in r["error"]["message"], r


CHAT = "tests/data/chat/configs__Qwen__Qwen2.5-0.5B-Instruct__resaved"


def test_dash_is_standard_input_for_every_file_option(facet_bin, repo_root, model, tmp_path):
    """`-f -` failed with "-: cannot open" in tokenize; every option that takes an input
    file now reads standard input for "-", giving what the file gives, and a second "-"
    in one command is refused by name instead of reading an empty stream."""

    def facet(args, stdin):
        return subprocess.run([str(facet_bin)] + args, input=stdin, capture_output=True,
                              timeout=60)

    text = tmp_path / "prompt.txt"
    text.write_text("Once upon a time")
    msgs = tmp_path / "messages.json"
    msgs.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "f"}}]))
    chat = str(repo_root / CHAT)
    cases = [
        (["tokenize", str(model), "-f", "-"], ["tokenize", str(model), "-f", str(text)], text),
        (["run", str(model), "-f", "-", "-n", "3", "--no-cache"],
         ["run", str(model), "-f", str(text), "-n", "3", "--no-cache"], text),
        (["template", chat, "--messages", "-"], ["template", chat, "--messages", str(msgs)], msgs),
        (["template", chat, "--messages", str(msgs), "--tools", "-"],
         ["template", chat, "--messages", str(msgs), "--tools", str(tools)], tools),
    ]
    for dash, named, src in cases:
        a, b = facet(dash, src.read_bytes()), facet(named, b"")
        assert b.returncode == 0, b.stderr
        assert a.returncode == 0, (dash, a.stderr)
        assert a.stdout == b.stdout and a.stdout, dash
    import shutil
    m = tmp_path / "m"
    shutil.copytree(model, m, ignore=shutil.ignore_patterns(".facet-cache"))
    p = facet(["onboard", str(m), "--gate", "--reference", "-", "-n", "4"],
              (model / "expected.json").read_bytes())
    assert p.returncode == 0, p.stderr
    assert b"validated against reference ids (-): 1 prompt token, 4 greedy steps identical" \
        in p.stdout + p.stderr
    p = facet(["template", chat, "--messages", "-", "--tools", "-"], msgs.read_bytes())
    assert p.returncode == 1
    assert p.stderr.decode().strip() == ("facet: --tools -: standard input is already read by "
                                         "--messages -; at most one option can read it")


def copy_model(model, tmp_path, name="m"):
    import shutil
    d = tmp_path / name
    shutil.copytree(model, d, ignore=shutil.ignore_patterns(".facet-cache"))
    return d


LLAMA3 = {"factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
          "original_max_position_embeddings": 8192}


@pytest.mark.parametrize("edit,needles", [
    ({"rope_scaling": dict(LLAMA3, rope_type="llama3", type="linear")},
     ['rope_scaling.rope_type="llama3" and rope_scaling.type="linear" disagree']),
    ({"rope_scaling": dict(LLAMA3, rope_type="yarn", type="llama3")},
     ['rope_scaling.rope_type="yarn" and rope_scaling.type="llama3" disagree']),
    ({"rope_scaling": {"rope_type": "linear", "factor": 32},
      "rope_parameters": {"rope_type": "linear", "factor": 16, "rope_theta": 10000.0}},
     ["rope_scaling.factor=32 and rope_parameters.factor=16 disagree"]),
    ({"rope_theta": 500000.0, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}},
     ["rope_theta=500000.0 and rope_parameters.rope_theta=10000.0 disagree"]),
])
def test_conflicting_rope_spellings_refused(facet_bin, model, tmp_path, edit, needles):
    """Two spellings of one rope fact that disagree are ambiguous (transformers v4 and v5
    read different ones): `run` and `conform` refuse, naming both keys and values; the
    same spellings agreeing still run."""
    d = copy_model(model, tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps(dict(cfg, **edit)))
    for cmd in (["run", str(d), "-n", "1", "--no-cache"], ["conform", str(d)]):
        p = subprocess.run([str(facet_bin)] + cmd, capture_output=True, text=True, timeout=60)
        assert p.returncode == 1, p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and str(d / "config.json") in lines[0], p.stderr
        for n in needles:
            assert n in lines[0], lines[0]
    agree = {k: (dict(v, type=v["rope_type"]) if k == "rope_scaling" and "type" in v else v)
             for k, v in edit.items()}
    if "rope_parameters" in edit:  # make them equal
        agree = {"rope_scaling": {"rope_type": "linear", "factor": 16},
                 "rope_parameters": {"rope_type": "linear", "factor": 16, "rope_theta": 10000.0},
                 "rope_theta": 10000.0}
    (d / "config.json").write_text(json.dumps(dict(cfg, **agree)))
    p = subprocess.run([str(facet_bin), "run", str(d), "-n", "1", "--no-cache"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("tie", [False, None])
def test_untied_model_without_head_refused(facet_bin, model, tmp_path, tie):
    """The bundled (tied) model with tie_word_embeddings false, or the key removed (llama's
    class default is untied), and no lm_head.weight: it used to run with the embeddings
    as the head; transformers would initialise a random head. Refused by name."""
    d = copy_model(model, tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg.pop("tie_word_embeddings", None)
    if tie is not None:
        cfg["tie_word_embeddings"] = tie
    (d / "config.json").write_text(json.dumps(cfg))
    why = "config.json" if tie is not None else "the config class's default"
    for cmd in (["run", str(d), "-n", "1", "--no-cache"], ["conform", str(d)]):
        p = subprocess.run([str(facet_bin)] + cmd, capture_output=True, text=True, timeout=60)
        assert p.returncode == 1, p.stdout + p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1, p.stderr
        assert "checkpoint has no lm_head.weight, but tie_word_embeddings is false (%s" % why \
            in lines[0], lines[0]
    cfg["tie_word_embeddings"] = True
    (d / "config.json").write_text(json.dumps(cfg))
    p = subprocess.run([str(facet_bin), "run", str(d), "-n", "1", "--no-cache"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr


BIG_TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {
    "type": "object", "properties": {"x": {"type": "integer", "maximum": 18446744073709551615,
                                           "minimum": -99999999999999999999999}}}}}]


def test_big_json_integers_rendered_exactly(facet_bin, repo_root, model, tmp_path):
    """A tool schema's "maximum": 2^64 - 1 was "not valid JSON" for `facet template`,
    `run --tools` and the server; Python's json and tojson carry it exactly. The oracle:
    Python's json.dumps of the same tool inside the Qwen2.5 template's <tools> block, and
    for `run`, the ids `tokenize` gives for the text `template` renders."""
    def facet(args):
        p = subprocess.run([str(facet_bin)] + args, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout

    msgs = tmp_path / "messages.json"
    msgs.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(BIG_TOOLS))
    chat = repo_root / CHAT
    text = facet(["template", str(chat), "--messages", str(msgs), "--tools", str(tools),
                  "--add-generation-prompt"])
    assert "\n" + json.dumps(BIG_TOOLS[0], ensure_ascii=False) + "\n" in text, text
    # run --tools: the bundled model (512 positions) with a short template printing the
    # tools with tojson
    d = copy_model(model, tmp_path)
    tc = json.loads((d / "tokenizer_config.json").read_text()) \
        if (d / "tokenizer_config.json").exists() else {}
    tc["chat_template"] = ("{% for t in tools %}{{ t.function.parameters | tojson }}{% endfor %}"
                           "{% for m in messages %}{{ m.content }}{% endfor %}")
    (d / "tokenizer_config.json").write_text(json.dumps(tc))
    text = facet(["template", str(d), "--messages", str(msgs), "--tools", str(tools)])
    assert text == json.dumps(BIG_TOOLS[0]["function"]["parameters"]) + "hi", text
    ids = json.loads(facet(["tokenize", str(d), "--no-special", text]))
    out = json.loads(facet(["run", str(d), "--messages", str(msgs), "--tools", str(tools),
                            "-n", "1", "--json", "--no-cache"]))
    assert out["prompt_ids"] == ids
