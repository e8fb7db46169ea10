"""Chat templates against real Jinja2 renderings (issue 4 acceptance).

Every case of every chat_cases.jsonl must render byte-identical to its recorded
"rendered" text (or fail where Jinja2 raised: "error"), with the case's extra variables
as --var and SOURCE_DATE_EPOCH from its env. The oracle is Python transformers'
apply_chat_template over Debian python3-jinja2 3.1.2 (see ../shared/corpus/tokenizers/
README.md). Two sources:
  * tests/data/chat/*  (copies of the corpus cases; always run, fresh clones included)
  * ../shared/corpus/{tokenizers,configs}/*  (the live corpus; skipped loudly if absent)
Counts per folder are printed (run pytest with -s to see them).
"""

import json
import os
import pathlib
import subprocess
import tempfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "chat"
SPECIAL = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token",
           "additional_special_tokens"]


def data_folders():
    return sorted(p for p in DATA.iterdir() if (p / "chat_cases.jsonl").is_file())


def render(facet_bin, folder, case, tmp):
    mp = os.path.join(tmp, "messages.json")
    with open(mp, "w", encoding="utf-8") as f:
        json.dump(case["messages"], f, ensure_ascii=False)
    args = [str(facet_bin), "template", str(folder), "--messages", mp]
    if case.get("tools") is not None:
        tp = os.path.join(tmp, "tools.json")
        with open(tp, "w", encoding="utf-8") as f:
            json.dump(case["tools"], f, ensure_ascii=False)
        args += ["--tools", tp]
    if case.get("add_generation_prompt"):
        args.append("--add-generation-prompt")
    for k, v in (case.get("extra") or {}).items():
        args += ["--var", "%s=%s" % (k, json.dumps(v, ensure_ascii=False))]
    env = dict(os.environ)
    env.pop("SOURCE_DATE_EPOCH", None)
    env.update(case.get("env") or {})
    return subprocess.run(args, capture_output=True, env=env, timeout=60)


def check_folder(facet_bin, folder):
    cases = [json.loads(line) for line in open(folder / "chat_cases.jsonl", encoding="utf-8") if line.strip()]
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        for c in cases:
            p = render(facet_bin, folder, c, tmp)
            err = p.stderr.decode("utf-8", "replace").strip()
            if "error" in c:
                if p.returncode == 0:
                    bad.append("%s: Jinja2 raised %r, facet rendered %r" % (c["case"], c["error"][:80], p.stdout[:80]))
                elif p.returncode not in (1, 2) or not err.startswith("facet: "):
                    bad.append("%s: error exit %d without a one-line message: %r" % (c["case"], p.returncode, err[:200]))
                continue
            if p.returncode != 0:
                bad.append("%s: failed: %s" % (c["case"], err[:300]))
                continue
            got = p.stdout.decode("utf-8")
            if got != c["rendered"]:
                exp = c["rendered"]
                i = next((i for i in range(min(len(got), len(exp))) if got[i] != exp[i]), min(len(got), len(exp)))
                bad.append("%s: differs at char %d: got %r expected %r" % (c["case"], i, got[max(0, i - 40):i + 40],
                                                                         exp[max(0, i - 40):i + 40]))
    print("chat corpus %s: %d/%d cases identical" % (folder.name, len(cases) - len(bad), len(cases)))
    assert not bad, "%s: %d of %d cases wrong:\n  %s" % (folder, len(bad), len(cases), "\n  ".join(bad))
    return len(cases)


@pytest.mark.parametrize("folder", data_folders(), ids=lambda p: p.name)
def test_chat_cases_data(facet_bin, folder):
    assert check_folder(facet_bin, folder) > 0


def shared_folders(facet_shared):
    out = []
    for sub in ("tokenizers", "configs"):
        root = facet_shared / "corpus" / sub
        if root.is_dir():
            out += sorted(p for p in root.iterdir() if (p / "chat_cases.jsonl").is_file())
    return out


def test_chat_cases_shared_corpus(facet_bin, facet_shared):
    folders = shared_folders(facet_shared)
    assert folders, "no chat_cases.jsonl under %s/corpus" % facet_shared
    total = sum(check_folder(facet_bin, f) for f in folders)
    print("chat corpus (shared): %d cases in %d folders, all identical" % (total, len(folders)))


@pytest.mark.parametrize("folder", [p for p in data_folders() if (p / "tokenizer_config.json").is_file()],
                         ids=lambda p: p.name)
def test_special_token_variables(facet_bin, folder, tmp_path):
    """The variables facet derives from tokenizer_config.json equal chat_meta.json's
    special_tokens_variables (what the oracle passed to the template)."""
    meta = json.load(open(folder / "chat_meta.json", encoding="utf-8"))
    want = meta["special_tokens_variables"]
    cfg = json.load(open(folder / "tokenizer_config.json", encoding="utf-8"))
    parts = ", ".join("%s: (%s if %s is defined else '<undefined>')" % (json.dumps(k), k, k) for k in SPECIAL)
    cfg["chat_template"] = "{{ {%s}|tojson }}" % parts
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(cfg), encoding="utf-8")
    (tmp_path / "m.json").write_text("[]", encoding="utf-8")
    p = subprocess.run([str(facet_bin), "template", str(tmp_path), "--messages", str(tmp_path / "m.json")],
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    got = {k: v for k, v in json.loads(p.stdout).items() if v != "<undefined>"}
    assert got == want


def test_template_errors_are_one_line(facet_bin, tmp_path):
    (tmp_path / "m.json").write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    # no template at all
    p = subprocess.run([str(facet_bin), "template", str(tmp_path), "--messages", str(tmp_path / "m.json")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "no chat template" in p.stderr and p.stdout == ""
    # an unsupported construct names itself and its line:column
    (tmp_path / "chat_template.jinja").write_text("line one\n  {% include 'x.j2' %}", encoding="utf-8")
    p = subprocess.run([str(facet_bin), "template", str(tmp_path), "--messages", str(tmp_path / "m.json")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert "include" in p.stderr and "line 2:" in p.stderr and p.stderr.count("\n") == 1
    # raise_exception carries its message
    (tmp_path / "chat_template.jinja").write_text("{{ raise_exception('no system role, ' ~ messages[0].role) }}",
                                                  encoding="utf-8")
    p = subprocess.run([str(facet_bin), "template", str(tmp_path), "--messages", str(tmp_path / "m.json")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "no system role, user" in p.stderr


def _template(facet_bin, folder, *extra):
    p = subprocess.run([str(facet_bin), "template", str(folder), "--messages", str(folder / "m.json")] + list(extra),
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def test_template_sources(facet_bin, tmp_path):
    """Where the template comes from, as transformers resolves it: chat_template.jinja
    first, then tokenizer_config.json chat_template (a string, or named templates with
    "tool_use" chosen when tools are given), then chat_template.json."""
    (tmp_path / "m.json").write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    (tmp_path / "tools.json").write_text('[{"type": "function", "function": {"name": "f"}}]', encoding="utf-8")
    cfg = {"bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": False}, "eos_token": None,
           "model_max_length": 1000000000000000019884624838656,
           "chat_template": [{"name": "default", "template": "D{{ bos_token }}{{ tools is none }}{{ eos_token is defined }}"},
                             {"name": "tool_use", "template": "T{{ tools|length }}{{ messages[0].content }}"}]}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(cfg), encoding="utf-8")
    assert _template(facet_bin, tmp_path) == (0, "D<s>TrueFalse", "")
    assert _template(facet_bin, tmp_path, "--tools", str(tmp_path / "tools.json")) == (0, "T1hi", "")
    # --var overrides anything, including special tokens
    assert _template(facet_bin, tmp_path, "--var", "bos_token=\"<B>\"") == (0, "D<B>TrueFalse", "")
    # chat_template.jinja wins over tokenizer_config.json
    (tmp_path / "chat_template.jinja").write_text("J{{ add_generation_prompt }}\n", encoding="utf-8")
    assert _template(facet_bin, tmp_path, "--add-generation-prompt") == (0, "JTrue", "")
    # chat_template.json is the last resort
    (tmp_path / "chat_template.jinja").unlink()
    del cfg["chat_template"]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(cfg), encoding="utf-8")
    (tmp_path / "chat_template.json").write_text(json.dumps({"chat_template": "P{{ messages|length }}"}), encoding="utf-8")
    assert _template(facet_bin, tmp_path) == (0, "P1", "")
    # bad inputs: one-line errors
    rc, out, err = _template(facet_bin, tmp_path, "--var", "x={bad")
    assert rc == 1 and out == "" and err.startswith("facet: ") and err.count("\n") == 1
    (tmp_path / "m.json").write_text('{"role": "user"}', encoding="utf-8")
    rc, out, err = _template(facet_bin, tmp_path)
    assert rc == 1 and err == "facet: %s: messages: expected a JSON array, got object\n" % (tmp_path / "m.json")
    # an integer beyond 64 bits is named as the integer it is (held as a marked string)
    (tmp_path / "m.json").write_text('18446744073709551616', encoding="utf-8")
    rc, out, err = _template(facet_bin, tmp_path)
    assert rc == 1 and err == "facet: %s: messages: expected a JSON array, got integer\n" % (tmp_path / "m.json")
    # a template runtime error names the template's file
    (tmp_path / "m.json").write_text('[{"role": "user", "content": "x"}]', encoding="utf-8")
    (tmp_path / "chat_template.jinja").write_text('x\n  {{- raise_exception("roles must alternate") }}', encoding="utf-8")
    rc, out, err = _template(facet_bin, tmp_path)
    assert (rc, err) == (1, "facet: %s: template line 2:7: TemplateError: roles must alternate\n"
                         % (tmp_path / "chat_template.jinja"))
    (tmp_path / "chat_template.jinja").unlink()
    (tmp_path / "m.json").write_text('[\n{', encoding="utf-8")  # the file is named with the line:column
    rc, out, err = _template(facet_bin, tmp_path)
    assert rc == 1 and err.startswith("facet: %s: messages:2:1: not valid JSON" % (tmp_path / "m.json")), err
