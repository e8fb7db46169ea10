"""End-to-end tests of `facet tokenize` / `facet detokenize` against independent oracles.

Oracles:
  * models/stories260k/tokenizer_expected.json: ids from Hugging Face tokenizers (Rust and
    JS agree) and the decode, for the bundled model;
  * vectors.jsonl of each tokenizer in tests/data/tokenizers (copied from the corpus) and,
    when present, ../shared/corpus/tokenizers (ids from Hugging Face tokenizers 0.23.2 with
    the transformers v4 rules; decoded / decoded_skip_special from tokenizer.decode).
The count of identical lines is printed per tokenizer.
"""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("FACET_BIN", str(ROOT / "build" / "facet"))
SHARED = pathlib.Path(os.environ.get("FACET_SHARED", ROOT.parent / "shared"))
STORIES = ROOT / "models" / "stories260k"
BUNDLED = sorted(p.parent for p in (ROOT / "tests" / "data" / "tokenizers").glob("*/vectors.jsonl"))
SHARED_DIRS = sorted(p.parent for p in (SHARED / "corpus" / "tokenizers").glob("*/vectors.jsonl"))


def facet(*args, stdin=None):
    return subprocess.run([BIN, *map(str, args)], input=stdin, capture_output=True, timeout=300)


def batch(cmd, model, lines):
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    r = facet(cmd, model, "--jsonl", "-", stdin=data)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    # split on "\n" only: decoded text may hold U+2028 and other line breaks of str.splitlines
    return [json.loads(x) for x in r.stdout.decode().split("\n") if x]


def check_vectors(folder, capsys):
    rows = [json.loads(x) for x in (folder / "vectors.jsonl").read_text(encoding="utf-8").split("\n") if x.strip()]
    enc = batch("tokenize", folder, [{"text": r["text"], "add_special_tokens": r["add_special_tokens"]} for r in rows])
    dec = batch("detokenize", folder, [{"ids": r["ids"], "skip_special_tokens": False} for r in rows])
    dsk = batch("detokenize", folder, [{"ids": r["ids"], "skip_special_tokens": True} for r in rows])
    bad = []
    for r, e, d, s in zip(rows, enc, dec, dsk):
        if e["ids"] != r["ids"] or d["text"] != r["decoded"] or s["text"] != r["decoded_skip_special"]:
            bad.append(r["id"])
    with capsys.disabled():
        print(f"\n  tokenizer {folder.name}: {len(rows) - len(bad)}/{len(rows)} lines identical (ids, decoded, decoded_skip_special)")
    assert not bad, f"{folder.name}: lines differ: {bad}"


@pytest.mark.parametrize("folder", BUNDLED, ids=[p.name for p in BUNDLED])
def test_vectors_bundled(folder, capsys):
    check_vectors(folder, capsys)


@pytest.mark.parametrize("name", ["qwen3", "qwen2.5", "llama3.1", "gemma3", "deepseek-v3", "gpt-oss",
                                  "mistral-v0.1", "phi-3-mini-4k-instruct", "tinyllama-1.1b-chat-v1.0"])
def test_vectors_shared(name, capsys):
    folder = SHARED / "corpus" / "tokenizers" / name
    if not (folder / "vectors.jsonl").exists():
        pytest.skip(f"LOUD SKIP: {folder} is absent, tokenizer {name} was NOT tested (set FACET_SHARED)")
    check_vectors(folder, capsys)


def test_stories_expected(capsys):
    cases = json.loads((STORIES / "tokenizer_expected.json").read_text(encoding="utf-8"))["cases"]
    enc = batch("tokenize", STORIES, [{"text": c["text"]} for c in cases])
    dec = batch("detokenize", STORIES, [{"ids": c["ids"], "skip_special_tokens": True} for c in cases])
    ok = sum(e["ids"] == c["ids"] and d["text"] == c["decode"] for c, e, d in zip(cases, enc, dec))
    with capsys.disabled():
        print(f"\n  stories260k tokenizer_expected.json: {ok}/{len(cases)} identical")
    assert ok == len(cases)


def test_cli_forms(tmp_path):
    # argv text, -f FILE, standard input and --no-special give the recorded ids
    r = facet("tokenize", STORIES, "Once upon a time")
    assert r.returncode == 0 and json.loads(r.stdout) == [1, 403, 407, 261, 378]
    f = tmp_path / "t.txt"
    f.write_bytes("Once upon a time".encode())
    assert json.loads(facet("tokenize", STORIES, "-f", f).stdout) == [1, 403, 407, 261, 378]
    assert json.loads(facet("tokenize", STORIES, stdin=b"Once upon a time").stdout) == [1, 403, 407, 261, 378]
    assert json.loads(facet("tokenize", STORIES, "Once upon a time", "--no-special").stdout) == [403, 407, 261, 378]
    # tokenizer.decode keeps special tokens unless asked: "<s>" + " Once" (Strip removes
    # one leading space of the whole text only)
    r = facet("detokenize", STORIES, "1", "403", "407", "261", "378")
    assert r.returncode == 0 and r.stdout == b"<s> Once upon a time"
    assert facet("detokenize", STORIES, "--skip-special", "1,403,407").stdout == b"Once upon"
    # the model folder may be a tokenizer-only folder
    assert json.loads(facet("tokenize", ROOT / "tests/data/tokenizers/mistral-v0.1", "Hello").stdout) == [1, 22557]


def test_invalid_utf8_names_offset(tmp_path):
    f = tmp_path / "bad.txt"
    f.write_bytes(b"abc\xff def")
    r = facet("tokenize", STORIES, "-f", f)
    assert r.returncode == 1
    assert b"byte offset 3" in r.stderr and b"UTF-8" in r.stderr
    assert r.stderr.startswith(b"facet: " + str(f).encode() + b": ")  # names the file


def write_tok(tmp_path, obj, name="tok"):
    d = tmp_path / name
    d.mkdir()
    (d / "tokenizer.json").write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
    return d


def small_tokenizer():
    return json.loads((STORIES / "tokenizer.json").read_text(encoding="utf-8"))


def test_malformed_tokenizer_json_names_path(tmp_path):
    t = small_tokenizer()
    t["model"]["vocab"]["▁t"] = "x"
    r = facet("tokenize", write_tok(tmp_path, t), "hi")
    assert r.returncode == 1 and b"model.vocab" in r.stderr and b"expected a token id" in r.stderr

    t = small_tokenizer()
    t["normalizer"]["normalizers"][1]["content"] = 5
    r = facet("tokenize", write_tok(tmp_path, t, "b"), "hi")
    assert r.returncode == 1 and b"normalizer.normalizers[1].content" in r.stderr

    t = small_tokenizer()
    t["model"]["merges"][3] = "nospace"
    r = facet("tokenize", write_tok(tmp_path, t, "c"), "hi")
    assert r.returncode == 1 and b"model.merges[3]" in r.stderr

    r = facet("tokenize", write_tok(tmp_path, '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},\n "added_tokens": [,]}', "d"), "a")
    assert r.returncode == 1 and b"tokenizer.json:2:" in r.stderr  # line and column of the bad byte


@pytest.mark.parametrize("kind", ["Unigram", "WordLevel"])
def test_unsupported_model_refused(tmp_path, kind):
    t = {"model": {"type": kind, "vocab": {"a": 0}}, "normalizer": None, "pre_tokenizer": None}
    r = facet("tokenize", write_tok(tmp_path, t), "a")
    assert r.returncode == 2 and kind.encode() in r.stderr and b"not supported" in r.stderr


def test_detokenize_drops_ids_without_a_token():
    """As `tokenizers` does (model embedding rows past the tokenizer's vocabulary, e.g.
    Qwen's 151936 vs 151665, decode to nothing); negative ids are errors."""
    r = facet("detokenize", STORIES, "--skip-special", "1", "403", "99999", "407")
    assert r.returncode == 0 and r.stdout == facet("detokenize", STORIES, "--skip-special", "1", "403", "407").stdout
    r = facet("detokenize", STORIES, "1", "-5")
    assert r.returncode == 1


def test_jsonl_errors_name_file_and_line(tmp_path):
    """--jsonl: an error names the input (file or <stdin>) and its line, once."""
    f = tmp_path / "in.jsonl"
    f.write_text('{"text": "hi"}\n\n{"text": 3}\n')
    r = facet("tokenize", STORIES, "--jsonl", f)
    assert r.returncode == 1 and r.stdout == b'{"ids":[1,270,417]}\n'
    assert r.stderr.decode() == 'facet: %s:3: "text" must be a string\n' % f
    r = facet("detokenize", STORIES, "--jsonl", "-", stdin=b'{"ids": [1, 2]}\n{"ids": [1, -4]}\n')
    assert r.returncode == 1
    assert r.stderr.decode() == "facet: <stdin>:2: ids[1] is -4, expected an integer 0..2147483647\n"


def test_bad_tokenizer_config_names_its_path(tmp_path):
    d = tmp_path / "tok"
    d.mkdir()
    shutil.copy(STORIES / "tokenizer.json", d / "tokenizer.json")
    (d / "tokenizer_config.json").write_text('{"a":')
    r = facet("tokenize", d, "hi")
    assert r.returncode == 1
    assert r.stderr.decode().startswith("facet: %s:1:5: not valid JSON" % (d / "tokenizer_config.json"))
