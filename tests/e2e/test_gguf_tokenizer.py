"""The tokenizer and chat template of a GGUF file, from its metadata (issue 18).

Oracle: llama.cpp's own tokenizer tests. Each ggml-vocab-*.gguf holds only a vocabulary;
its .inp holds input strings (each followed by "\\n__ggml_vocab_test__\\n") and its .out
the ids llama.cpp's llama_tokenize gives them with add_special = false and
parse_special = false (facet: `tokenize --no-special --split-special`), one line each.
Every line must be identical: the two pairs in tests/data/gguf_vocab (SentencePiece
llama-spm and byte-level BPE gpt-2) always, all ten of ../shared/corpus/gguf/vocab
(SentencePiece, BPE with the pre-tokenizers gpt-2, mpt, starcoder, refact, falcon,
deepseek-llm, deepseek-coder, WordPiece bert-bge; 460 lines) when the corpus is there.
The corpus models (stories260K's SentencePiece vocabulary) must give the README's 48
prompt ids for its prompt. Hand-made vocabularies (tests/fuzz/gguf_vocab_seeds.py) check
the chat template path and the refusals of bad metadata, one line each naming the file,
the key, the value and what was expected.
"""

import json
import pathlib
import struct
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "fuzz"))
import gguf_vocab_seeds as gv  # noqa: E402

DATA = REPO / "tests" / "data" / "gguf_vocab"
SEP = "\n__ggml_vocab_test__\n"
README_IDS = [1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401,
              396, 267, 337, 410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 335, 311, 374, 419, 426,
              385, 328, 432, 358, 272, 277, 264, 261, 370, 352, 266, 268]
PROMPT = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the "
          "park with her friends. One day, she found a big red ball under a tree.")


def read_pair(gguf):
    inputs = pathlib.Path(str(gguf) + ".inp").read_bytes().decode("utf-8").split(SEP)
    assert inputs[-1] == ""  # the file ends with a separator
    inputs = inputs[:-1]
    lines = pathlib.Path(str(gguf) + ".out").read_text(encoding="utf-8").split("\n")
    expected = [ln.strip() for ln in lines[:len(inputs)]]
    assert len(expected) == len(inputs)
    return inputs, expected


def tokenize_all(run_facet, gguf, inputs, tmp_path):
    jl = tmp_path / "in.jsonl"
    jl.write_text("".join(json.dumps({"text": s}) + "\n" for s in inputs), encoding="utf-8")
    p = run_facet(["tokenize", str(gguf), "--jsonl", str(jl), "--no-special", "--split-special"])
    assert p.returncode == 0, p.stderr
    return [" ".join(map(str, json.loads(ln)["ids"])) for ln in p.stdout.splitlines()]


def check_pair(run_facet, gguf, tmp_path):
    inputs, expected = read_pair(gguf)
    got = tokenize_all(run_facet, gguf, inputs, tmp_path)
    bad = [(s, g, e) for s, g, e in zip(inputs, got, expected) if g != e]
    print(f"{gguf.name}: {len(inputs) - len(bad)}/{len(inputs)} lines identical")
    assert not bad, bad[:3]
    return len(inputs)


@pytest.mark.parametrize("name", ["llama-spm", "gpt-2"])
def test_bundled_vocab_pairs(run_facet, name, tmp_path):
    assert check_pair(run_facet, DATA / f"ggml-vocab-{name}.gguf", tmp_path) == 46


@pytest.fixture
def corpus(facet_shared):
    d = facet_shared / "corpus" / "gguf"
    if not d.is_dir():
        pytest.skip(f"SKIPPED LOUDLY: {d} is absent: GGUF tokenizers were NOT tested on the corpus")
    return d


# a tokenizer oracle: it claims no checkpoint or config-class row of docs/SUPPORT.md
@pytest.mark.evidence(checkpoints=[], backend="cpu", weights=[],
                      oracle="llama.cpp's tokenizer tests (ggml-vocab-*.gguf with .inp/.out)")
def test_corpus_vocab_pairs_all_lines(run_facet, corpus, tmp_path):
    files = sorted((corpus / "vocab").glob("ggml-vocab-*.gguf"))
    assert len(files) == 10, files
    total = sum(check_pair(run_facet, g, tmp_path) for g in files)
    print(f"all vocab pairs: {total}/460 lines identical")
    assert total == 460


def test_corpus_model_prompt_ids(run_facet, corpus):
    """run -p on a corpus model tokenizes with its metadata's vocabulary: the README's
    48 prompt ids (BOS first) are the start of the prompt's tokenization."""
    model = corpus / "models" / "llama-Q8_0.gguf"
    p = run_facet(["run", str(model), "-p", PROMPT, "-n", "1", "--json"])
    assert p.returncode == 0, p.stderr
    ids = json.loads(p.stdout)["prompt_ids"]
    assert ids[:48] == README_IDS
    p = run_facet(["tokenize", str(corpus / "models" / "llama-Q4_K_M-split-00002-of-00002.gguf"), PROMPT])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)[:48] == README_IDS


@pytest.mark.parametrize("name", ["llama-spm", "gpt-2"])
def test_decode_round_trips(run_facet, name, tmp_path):
    """detokenize(tokenize(s)) == s for the test strings that neither model changes on the
    way (SentencePiece drops the leading space it adds; GPT-2's decoding applies
    clean_up_tokenization_spaces, which moves the spaces before ' . , ! ? n't 's ...)."""
    gguf = DATA / f"ggml-vocab-{name}.gguf"
    inputs, expected = read_pair(gguf)
    lines = []
    for s, ids in zip(inputs, expected):
        if name == "gpt-2" and any(t in s for t in (" .", " ,", " !", " ?", " '", " n't")):
            continue
        lines.append(json.dumps({"ids": [int(x) for x in ids.split()]}))
    jl = tmp_path / "ids.jsonl"
    jl.write_text("\n".join(lines) + "\n")
    p = run_facet(["detokenize", str(gguf), "--jsonl", str(jl)])
    assert p.returncode == 0, p.stderr
    got = [json.loads(ln)["text"] for ln in p.stdout.splitlines()]
    want = [s for s in inputs if not (name == "gpt-2" and any(t in s for t in (" .", " ,", " !", " ?", " '", " n't")))]
    assert len(got) == len(want) > 30
    for g, s in zip(got, want):
        assert g == s, (g, s)


def write(tmp_path, name, kvs):
    p = tmp_path / name
    p.write_bytes(gv.gguf_bytes(kvs))
    return p


def test_handmade_vocabularies(run_facet, tmp_path):
    """Hand-worked ids. SentencePiece: ' ab' is '▁ab' (score -1.2 beats '▁'+'ab'), 'h' has no
    piece so it is its byte <0x68> (3 + 0x68), the user-defined '<|user|>' is split out even
    with --split-special and the text after it gets its own leading '▁'. BPE: ' hello' is
    the merge 'Ġhello' (262), 'é' its two bytes. WordPiece: [CLS] ... [SEP], 'playing' is
    '▁play' + 'ing', 'Héllo' lowercased and stripped to '▁hello', an unknown word [UNK]."""
    spm = write(tmp_path, "spm.gguf", gv.spm_kvs())
    p = run_facet(["tokenize", str(spm), "ab h<|user|>ab", "--split-special"])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [1, 263, 259, 3 + 0x68, 266, 263]
    bpe = write(tmp_path, "bpe.gguf", gv.bpe_kvs())
    p = run_facet(["tokenize", str(bpe), "hello hello é", "--no-special"])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [261, 262, 32, 0xC3, 0xA9]  # byte b's token is id b
    wpm = write(tmp_path, "wpm.gguf", gv.wpm_kvs())
    p = run_facet(["tokenize", str(wpm), "Héllo, playing zz!"])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [101, 104, 107, 105, 106, 100, 108, 102]
    p = run_facet(["detokenize", str(spm), "263,259,107,266"])
    assert p.returncode == 0, p.stderr
    assert p.stdout == "ab h<|user|>"


def test_phi3_special_tokens_take_the_whitespace_after_them(run_facet, tmp_path):
    """llama.cpp marks a Phi-3 model's special tokens (by general.name) to swallow the
    whitespace after them, as Phi-3's tokenizer.json does (rstrip): '<|user|>\\n ab' is
    <|user|> '▁ab' there, <|user|> '▁' <0x0A> '▁ab' for another model."""
    kvs = gv.spm_kvs()
    other = write(tmp_path, "other.gguf", kvs + [("general.name", gv.STR, "Some Model")])
    phi3 = write(tmp_path, "phi3.gguf", kvs + [("general.name", gv.STR, "Phi-3 mini")])
    p = run_facet(["tokenize", str(other), "<|user|>\n ab"])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [1, 266, 259, 3 + 0x0A, 263]
    p = run_facet(["tokenize", str(phi3), "<|user|>\n ab"])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [1, 266, 263]


def test_chat_template_from_metadata(run_facet, tmp_path):
    """template and run --messages render tokenizer.chat_template, bos_token being the
    text of tokenizer.ggml.bos_token_id."""
    spm = write(tmp_path, "spm.gguf", gv.spm_kvs())
    msgs = tmp_path / "m.json"
    msgs.write_text('[{"role": "user", "content": "ab"}]')
    p = run_facet(["template", str(spm), "--messages", str(msgs)])
    assert p.returncode == 0, p.stderr
    assert p.stdout == "<s><|user|>ab\n" or p.stdout == "<s><|user|>ab", p.stdout


def set_kv(kvs, key, t, v):
    out = [kv for kv in kvs if kv[0] != key]
    if t is not None:
        out.append((key, t, v))
    return out


def bad_cases():
    spm, bpe = gv.spm_kvs(), gv.bpe_kvs()
    n_spm = len(dict((k, v) for k, _, v in spm)["tokenizer.ggml.tokens"][1])
    types = list(dict((k, v) for k, _, v in spm)["tokenizer.ggml.token_type"][1])
    types[5] = 9
    toks = list(dict((k, v) for k, _, v in spm)["tokenizer.ggml.tokens"][1])
    toks[260] = toks[4]
    return {
        "model": (set_kv(spm, "tokenizer.ggml.model", gv.STR, "rwkv"),
                  'tokenizer.ggml.model is "rwkv"; supported: llama (SentencePiece), gpt2 (byte-level BPE), '
                  "bert (WordPiece)"),
        "pre": (set_kv(bpe, "tokenizer.ggml.pre", gv.STR, "nonesuch"),
                'tokenizer.ggml.pre is "nonesuch"; supported: default, llama3, '),
        "type": (set_kv(spm, "tokenizer.ggml.token_type", gv.ARR, (gv.I32, types)),
                 "tokenizer.ggml.token_type[5] is 9, expected a llama.cpp token type 0..6"),
        "scores-short": (set_kv(spm, "tokenizer.ggml.scores", gv.ARR, (gv.F32, [0.0] * 10)),
                         f"key tokenizer.ggml.scores has 10 elements, expected one per token ({n_spm})"),
        "tokens-type": (set_kv(spm, "tokenizer.ggml.tokens", gv.ARR, (gv.I32, [1, 2])),
                        "key tokenizer.ggml.tokens is [i32 x 2], expected an array of strings"),
        "tokens-missing": (set_kv(spm, "tokenizer.ggml.tokens", None, None),
                           "required key tokenizer.ggml.tokens is missing"),
        "repeat": (set_kv(spm, "tokenizer.ggml.tokens", gv.ARR, (gv.STR, toks)),
                   'tokenizer.ggml.tokens[260] "<0x01>" repeats token 4'),
        "bos-range": (set_kv(spm, "tokenizer.ggml.bos_token_id", gv.U32, n_spm),
                      "key tokenizer.ggml.bos_token_id"),
        "merge": (set_kv(bpe, "tokenizer.ggml.merges", gv.ARR, (gv.STR, ["h e", "Q Z"])),
                  "tokenizer.ggml.merges[1]: merged token \"QZ\" is not in tokenizer.ggml.tokens"),
        "merge-shape": (set_kv(bpe, "tokenizer.ggml.merges", gv.ARR, (gv.STR, ["he"])),
                        'tokenizer.ggml.merges[0] "he" is not two tokens "a b"'),
    }


@pytest.mark.parametrize("case", sorted(bad_cases()))
def test_bad_metadata_refused(run_facet, tmp_path, case):
    kvs, want = bad_cases()[case]
    path = write(tmp_path, f"{case}.gguf", kvs)
    p = run_facet(["tokenize", str(path), "ab"])
    assert p.returncode in (1, 2), (case, p.stdout)  # 2: unsupported
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert str(path) in lines[0] and want in lines[0], (case, lines[0])
    assert "Traceback" not in p.stderr and "Sanitizer" not in p.stderr


CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant:{% endif %}")


@pytest.fixture
def chat_gguf(corpus, tmp_path):
    """llama-Q8_0.gguf with a tokenizer.chat_template added to its metadata."""
    data = (corpus / "models" / "llama-Q8_0.gguf").read_bytes()
    p = tmp_path / "chat.gguf"
    p.write_bytes(gv.add_kvs(data, [("tokenizer.chat_template", gv.STR, CHAT_TEMPLATE)]))
    return p


def test_run_messages_uses_the_metadata_template(run_facet, chat_gguf, tmp_path):
    """run --messages renders tokenizer.chat_template ('<s>' from bos_token_id 1) and
    tokenizes the text with special text parsed and no BOS added (as for tokenizer.json
    models): the ids equal tokenize --no-special of the rendered text, '<s>' being 1."""
    msgs = tmp_path / "m.json"
    msgs.write_text('[{"role": "user", "content": "Once upon a time"}]')
    p = run_facet(["template", str(chat_gguf), "--messages", str(msgs), "--add-generation-prompt"])
    assert p.returncode == 0, p.stderr
    assert p.stdout == "<s>user: Once upon a time\nassistant:"
    t = run_facet(["tokenize", str(chat_gguf), "--no-special", p.stdout])
    assert t.returncode == 0, t.stderr
    want = json.loads(t.stdout)
    assert want[0] == 1 and want.count(1) == 1
    r = run_facet(["run", str(chat_gguf), "--messages", str(msgs), "-n", "2", "--json"])
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["prompt_ids"] == want


def test_server_chat_uses_the_metadata_template(facet_bin, run_facet, chat_gguf):
    """serve on a .gguf: its tokenizer and chat template come from the metadata; a greedy
    chat completion equals run --prompt-ids on the rendered prompt's ids."""
    from server_harness import Server
    messages = [{"role": "user", "content": "Once upon a time"}]
    with Server(facet_bin, chat_gguf) as srv:
        st, r = srv.post("/v1/chat/completions", {"messages": messages, "temperature": 0,
                                                  "max_completion_tokens": 5})
        assert st == 200, r
    prompt = "<s>user: Once upon a time\nassistant:"
    ids = json.loads(run_facet(["tokenize", str(chat_gguf), "--no-special", prompt]).stdout)
    assert r["usage"]["prompt_tokens"] == len(ids)
    ref = run_facet(["run", str(chat_gguf), "--prompt-ids", ",".join(map(str, ids)), "-n", "5", "--json"])
    assert ref.returncode == 0, ref.stderr
    out = json.loads(ref.stdout)
    assert r["choices"][0]["message"]["content"] == out["text"]
    assert r["usage"]["completion_tokens"] == len(out["generated_ids"])


def test_folder_prefers_tokenizer_json(run_facet, corpus, repo_root, tmp_path):
    """A folder holding the .gguf and a tokenizer.json (+ tokenizer_config.json) uses those
    files: TinyLlama's tokenizer gives its own ids for the text, not stories260K's."""
    d = tmp_path / "m"
    d.mkdir()
    (d / "llama-Q8_0.gguf").symlink_to(corpus / "models" / "llama-Q8_0.gguf")
    src = repo_root / "tests" / "data" / "tokenizers" / "tinyllama-1.1b-chat-v1.0"
    want = run_facet(["tokenize", str(src), "Once upon a time"])
    assert want.returncode == 0, want.stderr
    gguf = run_facet(["tokenize", str(d), "Once upon a time"])
    assert gguf.stdout == "[1,403,407,261,378]\n", gguf.stderr
    for f in ("tokenizer.json", "tokenizer_config.json"):
        (d / f).write_bytes((src / f).read_bytes())
    got = run_facet(["tokenize", str(d), "Once upon a time"])
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout != gguf.stdout


# tokenizer.json of the shared corpus -> the tokenizer.ggml.pre convert_hf_to_gguf.py
# writes for it
HF_BPE = {"llama3.1": "llama-bpe", "qwen2.5": "qwen2", "qwen3": "qwen2", "deepseek-v3": "deepseek-v3",
          "gpt-oss": "gpt-4o"}


def gguf_from_tokenizer_json(tj, pre):
    """A vocabulary-only GGUF holding a byte-level BPE tokenizer.json as llama.cpp's
    converter writes it: tokens by id (gaps as unused [PADn]), added special tokens
    CONTROL, other added tokens USER_DEFINED, merges as 'a b'."""
    vocab = dict(tj["model"]["vocab"])
    added = {a["content"]: a for a in tj.get("added_tokens", [])}
    vocab.update({c: a["id"] for c, a in added.items()})
    n = max(vocab.values()) + 1
    toks, types = ["[PAD%d]" % i for i in range(n)], [5] * n
    for t, i in vocab.items():
        toks[i] = t
        types[i] = (3 if added[t]["special"] else 4) if t in added else 1
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    return gv.gguf_bytes([("tokenizer.ggml.model", gv.STR, "gpt2"), ("tokenizer.ggml.pre", gv.STR, pre),
                          ("tokenizer.ggml.tokens", gv.ARR, (gv.STR, toks)),
                          ("tokenizer.ggml.token_type", gv.ARR, (gv.I32, types)),
                          ("tokenizer.ggml.merges", gv.ARR, (gv.STR, merges))])


@pytest.mark.parametrize("name", sorted(HF_BPE))
def test_converted_hf_tokenizers_match_hf(run_facet, facet_shared, name, tmp_path):
    """The pre-tokenizers with no llama.cpp vocabulary test here (llama-bpe, qwen2,
    deepseek-v3, gpt-4o) against Hugging Face's ids (the corpus vectors, no special tokens
    added) on the tokenizer.json converted to GGUF. Qwen's tokenizer.json normalizes to NFC
    first, which llama.cpp does not: its two vectors whose text is not NFC differ by that
    alone and are compared after NFC."""
    import unicodedata
    d = facet_shared / "corpus" / "tokenizers" / name
    if not d.is_dir():
        pytest.skip(f"SKIPPED LOUDLY: {d} is absent")
    g = tmp_path / f"{name}.gguf"
    g.write_bytes(gguf_from_tokenizer_json(json.loads((d / "tokenizer.json").read_text()), HF_BPE[name]))
    vec = [json.loads(ln) for ln in (d / "vectors.jsonl").read_text(encoding="utf-8").split("\n") if ln.strip()]
    vec = [v for v in vec if not v["add_special_tokens"]]
    nfc = name.startswith("qwen")
    texts = [unicodedata.normalize("NFC", v["text"]) if nfc else v["text"] for v in vec]
    jl = tmp_path / "in.jsonl"
    jl.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    p = run_facet(["tokenize", str(g), "--jsonl", str(jl), "--no-special"])
    assert p.returncode == 0, p.stderr
    got = [json.loads(ln)["ids"] for ln in p.stdout.split("\n") if ln]
    bad = [(v["id"], g_, v["ids"]) for v, g_ in zip(vec, got) if g_ != v["ids"]]
    print(f"{name} as GGUF (pre {HF_BPE[name]}): {len(vec) - len(bad)}/{len(vec)} identical to Hugging Face")
    assert len(got) == len(vec) and not bad, bad[:3]
