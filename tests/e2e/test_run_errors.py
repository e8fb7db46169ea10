"""Bad input to `facet run`: one test each, each a one-line error on stderr that names the
file / field / tensor, the value and what was expected, a non-zero exit, and no crash —
run under the Release binary and, when FACET_ASAN_BIN is set, the ASan+UBSan one.

The broken checkpoints are made from the bundled stories260k model (a real checkpoint)
by editing one thing each.
"""

import json
import os
import pathlib
import shutil
import struct
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUNDLED = REPO / "models" / "stories260k"


def binaries():
    out = [os.environ.get("FACET_BIN", str(REPO / "build" / "facet"))]
    asan = os.environ.get("FACET_ASAN_BIN")
    if asan and os.access(asan, os.X_OK):
        out.append(asan)
    return out


@pytest.fixture(params=binaries(), ids=lambda p: "asan" if "asan" in p else "release")
def facet(request):
    return request.param


def run(facet, args, **kw):
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=99",
               UBSAN_OPTIONS="halt_on_error=1:exitcode=98")
    return subprocess.run([facet] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=120, env=env, **kw)


def assert_clean_error(p, *needles, code=1):
    """Non-zero exit with the expected code, no sanitizer report, one error line naming
    every needle."""
    assert p.returncode == code, "exit %d (want %d); stderr: %s" % (p.returncode, code, p.stderr)
    assert "Sanitizer" not in p.stderr and "runtime error" not in p.stderr, p.stderr
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, "want one error line, got: %r" % p.stderr
    for n in needles:
        assert n in lines[0], "%r not in %r" % (n, lines[0])


def copy_model(tmp_path, name="m"):
    d = tmp_path / name
    shutil.copytree(BUNDLED, d)
    for f in d.iterdir():
        os.chmod(f, 0o644)
    return d


def read_st(path):
    data = path.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def write_st(path, header, body):
    h = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(h)) + h + body)


def edit_header(d, fn):
    st = d / "model.safetensors"
    header, body = read_st(st)
    fn(header)
    write_st(st, header, body)


def test_no_config(facet, tmp_path):
    d = copy_model(tmp_path)
    (d / "config.json").unlink()
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "config.json")


def test_config_not_json(facet, tmp_path):
    d = copy_model(tmp_path)
    (d / "config.json").write_text('{"hidden_size": 64,, }')
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "config.json", "JSON")


def test_required_key_missing(facet, tmp_path):
    d = copy_model(tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    del cfg["hidden_size"]
    (d / "config.json").write_text(json.dumps(cfg))
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "config.json", "hidden_size")


def test_wrong_type(facet, tmp_path):
    d = copy_model(tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["num_hidden_layers"] = "five"
    (d / "config.json").write_text(json.dumps(cfg))
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "num_hidden_layers", "five")


def test_safetensors_truncated(facet, tmp_path):
    d = copy_model(tmp_path)
    st = d / "model.safetensors"
    data = st.read_bytes()
    st.write_bytes(data[: len(data) - 1000])
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "model.safetensors")


def test_header_length_past_eof(facet, tmp_path):
    d = copy_model(tmp_path)
    st = d / "model.safetensors"
    data = st.read_bytes()
    st.write_bytes(struct.pack("<Q", len(data) * 10) + data[8:])
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "model.safetensors", str(len(data) * 10))


def test_overlapping_offsets(facet, tmp_path):
    d = copy_model(tmp_path)

    def overlap(h):
        a = h["model.norm.weight"]["data_offsets"]
        # put model.norm.weight on top of the first 256 bytes of the embeddings
        e = h["model.embed_tokens.weight"]["data_offsets"]
        h["model.norm.weight"]["data_offsets"] = [e[0], e[0] + (a[1] - a[0])]

    edit_header(d, overlap)
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "model.safetensors", "overlap")


def _by_offset(header):
    return sorted((k for k in header if k != "__metadata__"),
                  key=lambda k: header[k]["data_offsets"][0])


def test_gap_between_tensors(facet, tmp_path):
    """16 unused bytes between two tensors' data: the safetensors reference implementation
    refuses the layout (its ranges must tile the data section), so facet does too."""
    d = copy_model(tmp_path)
    st = d / "model.safetensors"
    header, body = read_st(st)
    names = _by_offset(header)
    first = names[0]
    split = header[first]["data_offsets"][1]
    for k in names[1:]:
        header[k]["data_offsets"] = [o + 16 for o in header[k]["data_offsets"]]
    write_st(st, header, body[:split] + bytes(16) + body[split:])
    p = run(facet, ["run", d, "-n", "1"])
    second = names[1]
    b, e = header[second]["data_offsets"]
    assert_clean_error(p, "model.safetensors", "tensor '%s' data_offsets [%d, %d]" % (second, b, e),
                       "gap of 16 unused bytes after tensor '%s'" % first)


def test_trailing_bytes(facet, tmp_path):
    d = copy_model(tmp_path)
    st = d / "model.safetensors"
    st.write_bytes(st.read_bytes() + b"\0" * 8)
    header, body = read_st(st)
    last = _by_offset(header)[-1]
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "model.safetensors", "8 trailing bytes", "tensor '%s'" % last,
                       "end at %d" % (len(body) - 8))


def test_duplicate_tensor_name(facet, tmp_path):
    """model.norm.weight named twice, the second entry pointing at other bytes of the same
    size: a reader that keeps the last entry would run with other norm weights."""
    d = copy_model(tmp_path)
    st = d / "model.safetensors"
    header, body = read_st(st)
    norm = header.pop("model.norm.weight")
    a, b = norm["data_offsets"]
    h = json.dumps(header)[:-1] + ', "model.norm.weight": %s, "model.norm.weight": %s}' % (
        json.dumps(norm), json.dumps(dict(norm, data_offsets=[0, b - a])))
    st.write_bytes(struct.pack("<Q", len(h)) + h.encode() + body)
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "model.safetensors", "tensor 'model.norm.weight' is named twice",
                       "header byte %d" % h.rindex('"model.norm.weight"'))


def test_out_of_range_offsets(facet, tmp_path):
    d = copy_model(tmp_path)

    def oob(h):
        a = h["model.norm.weight"]["data_offsets"]
        h["model.norm.weight"]["data_offsets"] = [a[0] + 10**7, a[1] + 10**7]

    edit_header(d, oob)
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "model.safetensors", "model.norm.weight")


def test_unknown_dtype(facet, tmp_path):
    d = copy_model(tmp_path)
    edit_header(d, lambda h: h["model.norm.weight"].update(dtype="F13"))
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "model.norm.weight", "F13")


def test_unreadable_dtype_refused(facet, tmp_path):
    """A known but non-float dtype (I8 with the same byte span as 64 F32) is refused by name."""
    d = copy_model(tmp_path)
    edit_header(d, lambda h: h["model.norm.weight"].update(dtype="I8", shape=[256]))
    p = run(facet, ["run", d, "-n", "1"])
    assert p.returncode != 0
    assert "I8" in p.stderr and "Sanitizer" not in p.stderr, p.stderr


def test_shape_byte_size_mismatch(facet, tmp_path):
    d = copy_model(tmp_path)
    edit_header(d, lambda h: h["model.norm.weight"].update(shape=[65]))
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "model.norm.weight", "65")


def test_index_names_missing_shard(facet, tmp_path):
    d = copy_model(tmp_path)
    header, _ = read_st(d / "model.safetensors")
    wm = {k: "model.safetensors" for k in header if k != "__metadata__"}
    wm["model.norm.weight"] = "model-00002-of-00002.safetensors"
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": wm}))
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "model-00002-of-00002.safetensors", "model.norm.weight")


def drop_tensor(d, name):
    """Remove tensor `name` and its bytes, so the rest still tiles the data section."""
    st = d / "model.safetensors"
    header, body = read_st(st)
    a, b = header.pop(name)["data_offsets"]
    for k, v in header.items():
        if k != "__metadata__" and v["data_offsets"][0] >= b:
            v["data_offsets"] = [o - (b - a) for o in v["data_offsets"]]
    write_st(st, header, body[:a] + body[b:])


def test_missing_tensor(facet, tmp_path):
    d = copy_model(tmp_path)
    drop_tensor(d, "model.layers.3.mlp.up_proj.weight")
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "model.layers.3.mlp.up_proj.weight")


def published_after_403(n):
    """The next n ids after prompt [1, 403]: the float64 reference's greedy continuation
    of the bundled model from BOS (models/stories260k/expected.json) starts with 403."""
    ids = json.loads((BUNDLED / "expected.json").read_text())["greedy_from_bos"]["generated_ids"]
    assert ids[0] == 403
    return ids[1:1 + n]


def test_model_argument_forms(facet, tmp_path):
    """MODEL is the checkpoint folder; a path to its config.json means that folder (as
    conform and plan read it); any other file is one clear error, for every command."""
    ids = ["--prompt-ids", "1,403", "-n", "3", "--no-cache", "--json"]
    want = json.loads(run(facet, ["run", BUNDLED] + ids).stdout)["generated_ids"]
    p = run(facet, ["run", BUNDLED / "config.json"] + ids)
    assert p.returncode == 0 and json.loads(p.stdout)["generated_ids"] == want == published_after_403(3), p.stderr
    p = run(facet, ["tokenize", BUNDLED / "config.json", "Hi there"])
    assert p.returncode == 0 and p.stdout == run(facet, ["tokenize", BUNDLED, "Hi there"]).stdout
    msgs = tmp_path / "m.json"
    msgs.write_text('[{"role": "user", "content": "x"}]')
    for cmd in (["run", "-p", "x"], ["bench"], ["serve", "--port", "0"], ["tokenize", "x"], ["detokenize", "1"],
                ["template", "--messages", msgs]):
        st = BUNDLED / "model.safetensors"
        p = run(facet, cmd[:1] + [st] + cmd[1:])
        assert_clean_error(p, "facet: %s is a file; MODEL is the checkpoint folder (the one holding config.json)" % st)
    p = run(facet, ["template", tmp_path / "absent", "--messages", msgs])
    assert_clean_error(p, "absent: no such folder")


def test_no_tokenizer_prints_ids(facet, tmp_path):
    """Without tokenizer.json there is no text: the ids (prompt, then the published greedy
    continuation of the bundled model) are printed instead, and stderr says why."""
    d = copy_model(tmp_path)
    (d / "tokenizer.json").unlink()
    p = run(facet, ["run", d, "--prompt-ids", "1,403", "-n", "3", "--no-cache"])
    assert p.returncode == 0, p.stderr
    assert p.stdout == " ".join(map(str, [1, 403] + published_after_403(3))) + "\n"
    assert "has no tokenizer.json: token ids are printed instead of text" in p.stderr.splitlines()[0]


def test_unused_layers_noted(facet, tmp_path):
    """Tensors beyond num_hidden_layers are not an error (transformers ignores them too),
    but run says so, as conform does, and generates with the layers the config names."""
    d = copy_model(tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["num_hidden_layers"] = 4
    (d / "config.json").write_text(json.dumps(cfg))
    p = run(facet, ["run", d, "--prompt-ids", "1,403", "-n", "2", "--no-cache"])
    assert p.returncode == 0, p.stderr
    want = "facet: note: checkpoint has tensors model.layers.4.* beyond num_hidden_layers=4; they are not used"
    assert want in p.stderr.splitlines(), p.stderr
    assert "note:" not in run(facet, ["run", BUNDLED, "--prompt-ids", "1,403", "-n", "2", "--no-cache"]).stderr


def test_tensor_wrong_shape(facet, tmp_path):
    d = copy_model(tmp_path)
    # same byte size, transposed shape: only the shape check can catch it
    edit_header(d, lambda h: h["model.layers.1.mlp.down_proj.weight"].update(shape=[172, 64]))
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "model.layers.1.mlp.down_proj.weight", "172")


@pytest.mark.parametrize("args,want", [
    (["-p", "A", "-p", "B"], "facet: run: -p given twice"),
    (["--prompt-ids", "1", "--prompt-ids", "2"], "facet: run: --prompt-ids given twice"),
    (["--prompt-ids", "1,2,"], "facet: --prompt-ids: unexpected ',' in '1,2,'"),
])
def test_prompt_options_strict(facet, args, want):
    p = run(facet, ["run"] + args + ["-n", "1"])
    assert_clean_error(p, want)
    assert p.stderr == want + "\n"


def test_prompt_longer_than_context(facet):
    ids = ",".join(["5"] * 600)
    p = run(facet, ["run", "--prompt-ids", ids, "-n", "1"])
    assert_clean_error(p, "600", "512")


def test_prompt_longer_than_ctx_option(facet):
    p = run(facet, ["run", "-p", "Once upon a time there was a cat", "--ctx", "4", "-n", "1"])
    assert_clean_error(p, "context", "4")


def test_prompt_file_not_utf8(facet, tmp_path):
    f = tmp_path / "prompt.txt"
    f.write_bytes(b"Once upon a \xff time")
    p = run(facet, ["run", "-f", f, "-n", "1"])
    assert_clean_error(p, str(f), "UTF-8", "12")


def test_prompt_id_out_of_vocab(facet):
    p = run(facet, ["run", "--prompt-ids", "1,512", "-n", "1"])
    assert_clean_error(p, "512")


def test_unknown_option(facet):
    p = run(facet, ["run", "--frobnicate"])
    assert_clean_error(p, "--frobnicate")


@pytest.mark.parametrize("cmd", ["run", "plan", "bench", "serve"])
def test_missing_and_bad_option_value(facet, cmd):
    """Every subcommand names a missing value and a bad one the same way, in one line."""
    p = run(facet, [cmd, BUNDLED, "--kv-cache"])
    assert_clean_error(p, "facet: %s: --kv-cache needs a value" % cmd)
    p = run(facet, [cmd, BUNDLED, "--kv-cache", "f8"])
    assert_clean_error(p, "--kv-cache expects auto, f32, bf16 or f16, got 'f8'")
    opt = "--threads" if cmd == "bench" else "--ctx"
    p = run(facet, [cmd, BUNDLED, opt])
    assert_clean_error(p, "facet: %s: %s needs a value" % (cmd, opt))


def test_f16_cache_overflow_is_an_error(facet, tmp_path):
    """Values beyond f16's range (layer 0's v_proj scaled by 1e6) overflow an f16 KV cache
    to infinity and the logits to NaN: `facet run` stops with an error naming the step and
    the cache type, instead of sampling from a NaN row; the f32 cache runs the same model."""
    d = copy_model(tmp_path)
    st = d / "model.safetensors"
    header, body = read_st(st)
    name = "model.layers.0.self_attn.v_proj.weight"
    a, b = header[name]["data_offsets"]
    w = struct.unpack("<%df" % ((b - a) // 4), body[a:b])
    scaled = struct.pack("<%df" % len(w), *(x * 1e6 for x in w))
    write_st(st, header, body[:a] + scaled + body[b:])
    ok = run(facet, ["run", d, "--prompt-ids", "1,2,3", "-n", "4", "--kv-cache", "f32", "--no-cache"])
    assert ok.returncode == 0, ok.stderr
    p = run(facet, ["run", d, "--prompt-ids", "1,2,3", "-n", "4", "--kv-cache", "f16", "--no-cache"])
    assert_clean_error(p, "facet: run: the logits of generation step 0 are not finite",
                       "the f16 KV cache holds only values within +-65504")


@pytest.mark.parametrize("cmd,opt", [("tokenize", "-f"), ("tokenize", "--jsonl"),
                                     ("detokenize", "--jsonl"), ("template", "--messages"),
                                     ("template", "--tools"), ("conform", "--backend"),
                                     ("conform", "--json"), ("onboard", "--ledger"),
                                     ("plan", "--batch"), ("bench", "-n"), ("serve", "--weights"),
                                     ("run", "--weights")])
def test_every_subcommand_names_a_missing_value(facet, cmd, opt):
    p = run(facet, [cmd, BUNDLED, opt])
    assert_clean_error(p, "facet: %s: %s needs a value" % (cmd, opt))


def test_template_help(facet):
    p = run(facet, ["template", "--help"])
    assert p.returncode == 0 and p.stdout.startswith("usage: facet template MODEL"), p.stderr


@pytest.mark.parametrize("cmd", ["plan", "conform"])
def test_unknown_backend_is_refused_by_the_table(facet, cmd):
    """A backend is one of the table's facts: an unknown one is a refusal naming it
    (exit 2, as conform's contract says), not a usage error."""
    p = run(facet, [cmd, BUNDLED, "--backend", "tpu"])
    assert p.returncode == 2, p.stderr
    assert "REFUSED: backend=tpu is not supported (supported: cpu, vulkan)" in p.stdout


def test_unknown_cpu_path_is_said(facet):
    """FACET_CPU with a name that is not a path: said on stderr, the run goes on."""
    env = dict(os.environ, FACET_CPU="AVX2")
    p = subprocess.run([facet, "run", "-n", "3"], capture_output=True, text=True, timeout=60,
                       env=env)
    assert p.returncode == 0, p.stderr
    assert "FACET_CPU='AVX2' is not one of scalar, avx2, avx512: ignored" in p.stderr


@pytest.mark.parametrize("args,needle", [(["--host", "abc"], "--host expects an IPv4 address"),
                                         (["--model-id", ""], "--model-id must not be empty")])
def test_serve_rejects_bad_values_before_loading(facet, args, needle):
    p = run(facet, ["serve", BUNDLED] + args)
    assert_clean_error(p, needle)


@pytest.mark.parametrize("case", ["bad-utf8-file", "missing-messages", "id-past-vocab",
                                  "no-tokenizer", "prompt-fills-ctx", "stop-no-tokenizer"])
def test_prompt_errors_come_before_any_weight_is_converted(facet, tmp_path, case):
    """A bad prompt is refused before the weights are converted (a large checkpoint
    converts for minutes, then writes a cache): no conversion progress on stderr and no
    weight cache written."""
    d = tmp_path / "m"
    shutil.copytree(BUNDLED, d, ignore=shutil.ignore_patterns(".facet-cache"))
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"Once \xff upon")
    args = {"bad-utf8-file": ["-f", bad],
            "missing-messages": ["--messages", tmp_path / "none.json"],
            "id-past-vocab": ["--prompt-ids", "1,2,512"],
            "no-tokenizer": ["-p", "Once"],
            "prompt-fills-ctx": ["--prompt-ids", ",".join(["1"] * 8), "--ctx", "8"],
            "stop-no-tokenizer": ["--prompt-ids", "1,2", "--stop", "x"]}[case]
    want = {"bad-utf8-file": "bad.txt: not valid UTF-8 at byte offset 5",
            "missing-messages": "none.json",
            "id-past-vocab": "prompt token 512 at index 2 is outside [0, 512)",
            "no-tokenizer": "has no tokenizer.json; give the prompt as --prompt-ids",
            "prompt-fills-ctx": "at most 7 leave room for one generated token",
            "stop-no-tokenizer": "--stop matches generated text, and"}[case]
    if case in ("no-tokenizer", "stop-no-tokenizer"):  # no tokenizer file at all (a lone
        (d / "tokenizer.json").unlink()                  # tokenizer.model is refused by name:
        (d / "tokenizer.model").unlink()                 # test_reference_baichuan)
    p = run(facet, ["run", d] + args)
    assert p.returncode == 1, p.stderr
    assert want in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert "convert" not in p.stderr
    assert not (d / ".facet-cache").exists()


@pytest.mark.parametrize("cmd", [["run", "-p", "Once", "-n", "4"], ["run", "-p", "Once", "-n", "4", "--json"],
                                 ["tokenize", BUNDLED, "Once"], ["detokenize", BUNDLED, "1", "403"],
                                 ["conform", BUNDLED], ["plan", BUNDLED]])
def test_stdout_write_failure_exits_1(facet, cmd):
    """Output that cannot be written (stdout on a full disk) exits 1 naming it; run,
    tokenize, detokenize, conform and plan exited 0 with their output lost."""
    with open("/dev/full", "w") as full:
        p = subprocess.run([facet] + [str(a) for a in cmd], stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=120)
    assert p.returncode == 1, (cmd, p.returncode, p.stderr)
    assert "writing standard output failed: " in p.stderr and p.stderr.count("\n") <= 3, p.stderr


@pytest.mark.parametrize("weights", ["int8", "q4"])
def test_int8_packing_failure_names_the_tensor(facet, tmp_path, weights):
    """A weight int8 (or q4) cannot scale (an inf) is refused naming the tensor; the message
    said only "a block's max |w| = inf", leaving the user to search every matrix."""
    d = copy_model(tmp_path)
    st = d / "model.safetensors"
    b = bytearray(st.read_bytes())
    n = struct.unpack_from("<Q", b, 0)[0]
    header = json.loads(b[8:8 + n])
    name = "model.layers.1.self_attn.q_proj.weight"
    start = header[name]["data_offsets"][0]
    assert header[name]["dtype"] == "F32"
    struct.pack_into("<f", b, 8 + n + start + 4 * 70, float("inf"))
    st.write_bytes(bytes(b))
    p = run(facet, ["run", d, "--prompt-ids", "1", "-n", "1", "--weights", weights, "--no-cache"])
    assert_clean_error(p, "tensor %s: %s weights: a block's max |w| = inf" % (name, weights))


@pytest.mark.parametrize("cmd", ["run", "conform", "plan", "tokenize"])
def test_missing_model_path_named(facet, tmp_path, cmd):
    """A MODEL path that does not exist says so (not "no config.json" or "no
    tokenizer.json in this folder", which sent a user looking inside a folder that is not
    there), naming the path as given — a .gguf path included."""
    missing = tmp_path / "nothere.gguf"
    args = [cmd, missing] + (["-p", "hi"] if cmd == "run" else ["hi"] if cmd == "tokenize" else [])
    p = run(facet, args)
    assert p.returncode == 1, p.stderr
    assert f"{missing}: no such file or folder (expected a" in p.stderr, p.stderr
    assert p.stderr.count("\n") == 1, p.stderr


@pytest.mark.parametrize("cmd", ["run", "serve", "bench", "conform", "plan"])
def test_device_without_vulkan_backend(facet, cmd):
    """--device N picks a Vulkan device; without --backend vulkan it was silently ignored
    (the run went to the CPU, the user believing it on the GPU). Refused before loading."""
    args = [cmd] + (["-p", "hi", "-n", "1"] if cmd == "run" else ["--port", "1"] if cmd == "serve"
                    else [BUNDLED]) + ["--device", "1"]
    p = run(facet, args)
    assert_clean_error(p, "facet: %s: --device 1 selects a Vulkan device; add --backend vulkan "
                          "(the cpu backend has no devices)" % cmd)
    p = run(facet, args + ["--backend", "cpu"])
    assert_clean_error(p, "--device 1 selects a Vulkan device")


@pytest.mark.parametrize("cmd", ["run", "plan"])
def test_weights_gguf_needs_a_gguf_file(facet, cmd):
    """`--weights gguf` (a GGUF file's own block types) on a safetensors folder: refused,
    naming the folder and the formats that apply (it ran as f32 before, silently)."""
    args = [cmd, BUNDLED, "--weights", "gguf"] + (["-n", "1"] if cmd == "run" else [])
    p = run(facet, args)
    assert_clean_error(p, str(BUNDLED), "--weights gguf", "not a GGUF file", "int8 or q4")


@pytest.mark.parametrize("source,hidden_key,heads_key", [
    ("tiiuae__falcon-7b-instruct", "hidden_size", "num_attention_heads"),
    ("openai-community__gpt2-xl", "n_embd", "n_head"),
], ids=["falcon", "gpt2"])
def test_hidden_size_not_a_multiple_of_heads(facet, tmp_path, make_checkpoint, source,
                                             hidden_key, heads_key):
    """FalconAttention / GPT2Attention (BLOOM, GPT-J, GPT-NeoX, MPT alike) split
    hidden_size into the heads and raise ValueError when it is not a multiple: 256 over 3
    heads was read as head_dim 85 and failed later on a fused projection's shape of a
    made-up width (765). Now the config read refuses it, naming both keys and values."""
    src = make_checkpoint(REPO / "tests" / "data" / "configs" / source, shrink={})
    d = tmp_path / "m"
    shutil.copytree(src, d)
    cfg = json.loads((d / "config.json").read_text())
    assert cfg[hidden_key] == 256, cfg
    cfg[heads_key] = 3
    (d / "config.json").write_text(json.dumps(cfg))
    p = run(facet, ["run", d, "-n", "1"])
    assert_clean_error(p, "config.json: %s is 256 (integer), expected a multiple of %s=3"
                       % (hidden_key, heads_key))


def unknown_family_models(tmp_path):
    """The bundled model with a model_type no profile has, and the qwen3 GGUF with a
    general.architecture no profile has (the same length, so nothing else moves)."""
    d = copy_model(tmp_path, "unknown")
    cfg = json.loads((d / "config.json").read_text())
    cfg["model_type"] = "nonsense"
    (d / "config.json").write_text(json.dumps(cfg))
    raw = (REPO / "tests" / "data" / "gguf" / "qwen3-Q4_0.gguf").read_bytes()
    key = b"general.architecture" + struct.pack("<IQ", 8, 5)
    assert raw.count(key + b"qwen3") == 1
    g = tmp_path / "unknown.gguf"
    g.write_bytes(raw.replace(key + b"qwen3", key + b"zzzz9"))
    return d, g


@pytest.mark.parametrize("args", [["run", "-p", "Once"], ["run", "--prompt-ids", "1", "--ctx", "4"],
                                  ["bench"], ["serve", "--port", "0", "--pipeline-parallel", "2"],
                                  ["bench", "--pipeline-parallel", "2"]])
def test_family_outside_the_table_is_refused_by_name(facet, tmp_path, args):
    """A model_type / general.architecture outside the table has no layer count, context or
    vocabulary: run, serve and bench refuse it by name (exit 2, conform's refusal), never
    with an error about the zero shape facts it leaves (a prompt token 'outside [0, 0)',
    'the context holds 0', 'layers [0, 0)')."""
    d, g = unknown_family_models(tmp_path)
    p = run(facet, [args[0], d] + args[1:])
    assert_clean_error(p, "REFUSED: model_type=nonsense is not supported", code=2)
    p = run(facet, [args[0], g] + args[1:])
    assert_clean_error(p, "REFUSED: model_type=zzzz9 is not supported",
                       "general.architecture=zzzz9 is not supported", code=2)


def test_serve_ctx_past_the_context_before_loading(facet):
    """serve's --ctx past max_position_embeddings is refused from config.json, naming the
    option, before the weights load (it was found only at session creation, after a
    load that converts a large checkpoint for minutes, as 'context N is larger ...')."""
    p = run(facet, ["serve", BUNDLED, "--port", "0", "--ctx", "100000"])
    assert_clean_error(p, "--ctx 100000 is larger than max_position_embeddings=512")


@pytest.mark.parametrize("var,value,want", [
    ("FACET_MICRO_BATCHES", "abc", "FACET_MICRO_BATCHES='abc' is not an integer in [0, 1048576]: ignored"),
    ("FACET_MICRO_BATCHES", "-3", "FACET_MICRO_BATCHES='-3' is not an integer in [0, 1048576]: ignored"),
    ("FACET_MPI_WAIT", "spinn", "FACET_MPI_WAIT='spinn' is not 'spin': ignored"),
])
def test_parallel_env_value_it_does_not_take_is_named(facet, var, value, want):
    """README's parallel knobs: a value they do not take is named on stderr and ignored
    (atoi read FACET_MICRO_BATCHES=abc as 0 and -3 as 1, silently; a misspelt
    FACET_MPI_WAIT was silently the default). The run itself goes on."""
    def run_with(**env):
        return subprocess.run([facet, "run", "-p", "Once", "-n", "2"], capture_output=True,
                              text=True, timeout=120, env=dict(os.environ, **env))
    p = run_with(**{var: value})
    assert p.returncode == 0, p.stderr
    assert "facet: " + want in p.stderr, p.stderr
    ok = run_with(FACET_MICRO_BATCHES="2", FACET_MPI_WAIT="spin")
    assert ok.returncode == 0 and "ignored" not in ok.stderr, ok.stderr


def test_shared_expert_tensors_the_config_does_not_size(facet, tmp_path):
    """A mixture-of-experts checkpoint whose config sizes no shared expert
    (shared_expert_intermediate_size 0) beside mlp.shared_expert.* tensors: the config and
    the tensors disagree. facet ran it without the shared expert, the tensors silently
    unused; now an error naming the tensor and the keys."""
    import qwen3next_ref
    d = pathlib.Path(qwen3next_ref.write(qwen3next_ref.shrink(qwen3next_ref.QWEN3_NEXT_80B_A3B),
                                         str(tmp_path / "q3n")))
    cfg = json.loads((d / "config.json").read_text())
    cfg["shared_expert_intermediate_size"] = 0
    (d / "config.json").write_text(json.dumps(cfg))
    want = ("checkpoint has model.layers.0.mlp.shared_expert.down_proj.weight, a shared "
            "expert's tensor, but the config sizes none")
    p = run(facet, ["run", d, "--prompt-ids", "1,2", "-n", "2", "--no-cache"])
    assert_clean_error(p, want)
    p = run(facet, ["conform", d])
    assert p.returncode == 1 and want in p.stderr, (p.returncode, p.stdout, p.stderr)


def _nested(expr):
    t = "{% set a0 = [1] %}"
    for i in range(1, 41):
        t += "{%% set a%d = [a%d, a%d] %%}" % (i, i - 1, i - 1)
    return t + expr


@pytest.mark.parametrize("template,needle", [
    ('{% set ns = namespace(a="x") %}{% for i in range(40) %}{% set ns.a = ns.a ~ ns.a %}'
     '{% endfor %}{{ ns.a|length }}', "string concatenation exceeds the output limit"),
    ('{% set ns = namespace(a="x") %}{% for i in range(40) %}{% set ns.a = ns.a|replace("x", "xx") %}'
     '{% endfor %}{{ ns.a|length }}', "a string of 134217728 bytes exceeds the output limit"),
    ('{% set ns = namespace(a=[1]) %}{% for i in range(40) %}{% set ns.a = ns.a + ns.a %}'
     '{% endfor %}{{ ns.a|length }}', "list concatenation exceeds the iteration limit"),
    ('{% set ns = namespace(a=[1]) %}{% for i in range(40) %}{% set ns.a = [ns.a, ns.a] %}'
     '{% endfor %}{{ ns.a|length }}', "a namespace attribute's value holds more than 1000000 references"),
    (_nested("{{ a40|tojson }}"), "tojson output exceeds the output limit"),
    (_nested("{{ a40 }}"), "rendered output exceeds the limit"),
])
def test_template_that_doubles_a_value_fails_fast(facet, tmp_path, template, needle):
    """A chat template that doubles a string or a shared list in a loop grows 2^n: each
    of these ran for minutes (or until memory ran out); now a limit error at once, naming
    the template's file and line."""
    if "|replace(" in template and "asan" in str(facet):
        pytest.skip("replace() through 2^27 bytes under ASan's instrumentation runs past the "
                    "120 s limit on the 2-core machine (linear, ~0.5 us a byte, measured); the "
                    "Release binary's case checks the error")
    d = tmp_path / "tpl"
    d.mkdir()
    (d / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
    m = tmp_path / "m.json"
    m.write_text('[{"role": "user", "content": "hi"}]')
    p = run(facet, ["template", d, "--messages", m])
    assert_clean_error(p, "tokenizer_config.json: template line 1:", needle)
