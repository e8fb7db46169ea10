"""`facet conform` on GGUF files (issue 18, first step): facts from the metadata, the
plan, and the verdict with each tensor type checked against what the engine runs.

Oracle: ../shared/corpus/gguf (llama.cpp-written files; the README states the shapes:
hidden 256, 2 layers, 4/2 heads, head_dim 64, vocab 512, rope theta per family, window
16 on gemma3's layer 0) and the JSON each model's expected/<model>.json records. Skips
loudly when the corpus is absent. facet runs F32, F16, BF16 and the block types with
kernels (their logits are checked against llama.cpp's in test_gguf_logits.py and
test_gguf_blocks.py); any other type is refused by a tensor of it (exit 2).
"""

import json
import shutil

import pytest

FAMILIES = {
    # file: (model_type, rope theta, extra words in the facts line)
    "llama-F32": ("llama", "theta=500000", ["rope=llama3", "factor=32", "tie=0"]),
    "qwen3-F32": ("qwen3", "theta=1e+06", ["qk_norm=1", "tie=1"]),
    "gemma3-F32": ("gemma3_text", "theta=1e+06",
                   ["local_theta=10000", "window=16 on 1/2 layers", "act=gelu_pytorch_tanh"]),
    "phi3-F32": ("phi3", "theta=250000", ["tie=0"]),
    "qwen2-F32": ("qwen2", "theta=1e+06", ["qkv_bias=1", "tie=1"]),
}


@pytest.fixture
def corpus(facet_shared):
    d = facet_shared / "corpus" / "gguf"
    if not d.is_dir():
        pytest.skip(f"SKIPPED LOUDLY: {d} is absent: GGUF conform was NOT tested")
    return d


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_conform_family_facts(run_facet, corpus, name, tmp_path):
    model_type, theta, words = FAMILIES[name]
    out_json = tmp_path / "c.json"
    p = run_facet(["conform", str(corpus / "models" / f"{name}.gguf"), "--json", str(out_json)])
    assert p.returncode == 0, p.stdout + p.stderr
    facts = next(line for line in p.stdout.splitlines() if line.startswith("facts: "))
    assert facts.startswith(f"facts: {model_type}: layers=2 hidden=256 heads=4 kv_heads=2 "
                            "head_dim=64 intermediate=256 vocab=512"), facts
    for w in [theta, "(probed)", "eos=2"] + words:
        assert w in facts, (w, facts)
    assert "plan: weights f32" in p.stdout
    assert "verdict: supported on cpu" in p.stdout
    assert "REFUSED" not in p.stdout  # F32 files: every type runs
    o = json.loads(out_json.read_text())
    assert o["exit_code"] == 0
    assert o["facts"]["hidden_size"] == 256 and o["facts"]["vocab_size"] == 512
    assert o["verdict"]["refusals"] == []


def test_conform_quantized_runs_in_its_types(run_facet, corpus):
    """A quantized file is supported: its matrices run in their own block types, the plan
    line says so and lists each type with its tensors and bytes."""
    exp = json.loads((corpus / "expected" / "qwen3-Q4_K_M.json").read_text())
    p = run_facet(["conform", str(corpus / "models" / "qwen3-Q4_K_M.gguf")])
    assert p.returncode == 0, p.stdout + p.stderr
    assert "REFUSED" not in p.stdout
    assert "plan: weights gguf" in p.stdout, p.stdout
    line = next(l for l in p.stdout.splitlines() if l.startswith("plan: gguf tensors"))
    for typ, count in exp["tensor_type_counts"].items():
        assert f"{typ} x{count} (" in line, (typ, line)


def gguf_retyped(src, dst, tensor, new_type):
    """Copy GGUF file src to dst with tensor's type id replaced (same byte size kept by
    the caller's choice of type): the header walked as the GGUF spec lays it out."""
    import struct
    b = bytearray(src.read_bytes())
    o = 24
    n_tensors, n_kv = struct.unpack_from("<QQ", b, 8)
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip(o, t):
        if t in sizes:
            return o + sizes[t]
        if t == 8:
            return o + 8 + struct.unpack_from("<Q", b, o)[0]
        et, n = struct.unpack_from("<IQ", b, o)
        o += 12
        for _ in range(n):
            o = skip(o, et)
        return o

    for _ in range(n_kv):
        o += 8 + struct.unpack_from("<Q", b, o)[0]
        t = struct.unpack_from("<I", b, o)[0]
        o = skip(o + 4, t)
    for _ in range(n_tensors):
        n = struct.unpack_from("<Q", b, o)[0]
        name = bytes(b[o + 8:o + 8 + n]).decode()
        o += 8 + n
        nd = struct.unpack_from("<I", b, o)[0]
        o += 4 + 8 * nd
        if name == tensor:
            struct.pack_into("<I", b, o, new_type)
        o += 12
    dst.write_bytes(bytes(b))


def test_conform_type_without_kernels_refused_by_name(run_facet, corpus, tmp_path):
    """A tensor of a type no kernel runs is refused by name, with the list of the types
    that run (derived from the kernels' traits table): a norm retyped F32 -> I32 (the same
    4 bytes an element, so the file stays well formed)."""
    bad = tmp_path / "qwen3-i32.gguf"
    gguf_retyped(corpus / "models" / "qwen3-Q4_0.gguf", bad, "blk.1.ffn_norm.weight", 26)
    p = run_facet(["conform", str(bad)])
    assert p.returncode == 2, p.stdout + p.stderr
    assert ("REFUSED: tensor blk.1.ffn_norm.weight has type I32 (1 tensor of this type); "
            "supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, "
            "Q4_K, Q5_K, Q6_K, IQ4_XS") in p.stdout, p.stdout
    p = run_facet(["run", str(bad), "--prompt-ids", "1", "-n", "1"])
    assert p.returncode == 2 and "has type I32" in p.stderr, p.stderr


def test_conform_split_and_folder(run_facet, corpus, tmp_path):
    first = corpus / "models" / "llama-Q4_K_M-split-00001-of-00002.gguf"
    p = run_facet(["conform", str(first)])
    assert p.returncode == 0 and "22 tensors in 2 files" in p.stdout, p.stdout + p.stderr
    assert "Q4_K x13" in p.stdout
    # a folder holding one model; then the folder with its second part missing
    d = tmp_path / "m"
    d.mkdir()
    for part in ("00001", "00002"):
        shutil.copy(corpus / "models" / f"llama-Q4_K_M-split-{part}-of-00002.gguf", d)
    p = run_facet(["conform", str(d)])
    assert p.returncode == 0 and "22 tensors in 2 files" in p.stdout, p.stdout + p.stderr
    (d / "llama-Q4_K_M-split-00002-of-00002.gguf").unlink()
    p = run_facet(["conform", str(d)])
    assert p.returncode == 1
    assert ("part 2 of 2 of this split model is missing: "
            f"{d}/llama-Q4_K_M-split-00002-of-00002.gguf") in p.stderr, p.stderr


def test_conform_moe_and_vocab_only(run_facet, corpus):
    # mixture of experts (issue 27): Mixtral as llama + llama.expert_count, qwen3moe
    p = run_facet(["conform", str(corpus / "models" / "mixtral-F32.gguf")])
    assert p.returncode == 0, p.stdout + p.stderr
    assert "verdict: supported on cpu (profile mixtral)" in p.stdout
    assert "experts=8 top_k=2" in p.stdout
    p = run_facet(["conform", str(corpus / "models" / "qwen3moe-F32.gguf")])
    assert p.returncode == 0, p.stdout + p.stderr
    assert "verdict: supported on cpu (profile qwen3_moe)" in p.stdout
    assert "router=softmax-topk-renorm" in p.stdout
    p = run_facet(["conform", str(corpus / "vocab" / "ggml-vocab-llama-spm.gguf")])
    assert p.returncode == 1
    # llama.cpp wrote the hparams into it, but no tensor
    assert "ggml-vocab-llama-spm.gguf: tensor token_embd.weight is missing" in p.stderr


def test_conform_bad_file(run_facet, tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + (2).to_bytes(4, "little") + bytes(16))
    p = run_facet(["conform", str(bad)])
    assert p.returncode == 1
    assert f"{bad}: GGUF version 2, expected 3" in p.stderr


def test_plan_gguf(run_facet, corpus):
    p = run_facet(["plan", str(corpus / "models" / "qwen3-F32.gguf")],)
    assert p.returncode == 0, p.stderr
    # by hand: (512*256 embedding + 2 * (3*256*256 + 2*128*256 + 2*256*256) matrices
    # + 2 * (256 + 256 + 64 + 64) + 256 norms) * 4 bytes, tied (no lm_head)
    assert "f32           3676160 bytes" in p.stdout
    p = run_facet(["plan", str(corpus / "models" / "qwen3-Q4_0.gguf")])
    assert p.returncode == 0, p.stderr
    # the file's own bytes, by hand: 14 Q4_0 matrices 2 * (5 * 256*256 + 2 * 128*256)
    # / 32 * 18 = 442368, the Q6_K embedding 512*256 / 256 * 210 = 107520, 9 F32 vectors
    # (2 * (256 + 256 + 64 + 64) + 256) * 4 = 6144: 556032
    assert "gguf           556032 bytes" in p.stdout, p.stdout
    assert "Q4_0     14 tensors" in p.stdout and "Q6_K      1 tensor " in p.stdout


def test_plan_q8_0_says_what_run_loads(run_facet, corpus):
    """A Q8_0 file runs in its own blocks with a bf16 KV cache under auto; plan, conform's
    plan line and bench say what run loads (they once said f32 weights and an f32 cache
    because only the loader knew about Q8_0)."""
    path = str(corpus / "models" / "qwen3-Q8_0.gguf")
    p = run_facet(["plan", path, "--json"])
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    assert plan["weights_requested"] == "auto" and plan["weights"] == "gguf", plan["weights"]
    assert plan["kv_cache"] == "bf16", plan["kv_cache"]
    # 15 Q8_0 matrices as stored (34 bytes per 32 weights) + 9 F32 vectors
    assert plan["weight_bytes"]["gguf"] == plan["gguf_types"]["Q8_0"]["bytes"] + \
        plan["gguf_types"]["F32"]["bytes"]
    assert plan["gguf_types"]["Q8_0"] == {"tensors": 15, "bytes": (512 * 256 + 2 * (
        3 * 256 * 256 + 2 * 128 * 256 + 2 * 256 * 256)) // 32 * 34}
    p = run_facet(["conform", path])
    assert p.returncode == 0, p.stderr
    assert "plan: weights gguf" in p.stdout and "(bf16)" in p.stdout, p.stdout
    p = run_facet(["bench", path, "--shapes", "8", "--reps", "1", "--concurrency", "1",
                   "-n", "2", "--threads", "1"])
    assert p.returncode == 0, p.stderr
    assert "weights gguf" in p.stdout and "KV cache bf16" in p.stdout, p.stdout
    # run prints nothing about a cache it never tries: bench says why itself
    assert "cache NOT used: GGUF models have no weight cache yet" in p.stdout, p.stdout
    # an F32 file stays f32
    p = run_facet(["plan", str(corpus / "models" / "qwen3-F32.gguf"), "--json"])
    assert json.loads(p.stdout)["weights"] == "f32"


def test_onboard_gate_on_gguf_needs_a_reference(run_facet, corpus):
    """The float64 reference (tests/ref) reads checkpoint folders: on a GGUF file it died
    with a Python traceback (NotADirectoryError). The gate now says what to give."""
    p = run_facet(["onboard", str(corpus / "models" / "qwen3-F32.gguf"), "--gate"])
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    assert "not GGUF files: give --reference FILE.json or --reference-logits" in p.stderr, p.stderr


def test_text_commands_read_the_gguf_metadata(run_facet, corpus, tmp_path):
    """tokenize, detokenize and template take a GGUF file (issue 18): the tokenizer comes
    from its tokenizer.ggml.* metadata (the stories260K SentencePiece vocabulary: 'Once'
    is 403 after BOS 1, as the README's prompt ids say), and a file without
    tokenizer.chat_template says so by the key's name."""
    path = str(corpus / "models" / "qwen3-F32.gguf")
    msgs = tmp_path / "m.json"
    msgs.write_text('[{"role": "user", "content": "x"}]')
    p = run_facet(["tokenize", path, "Once upon a time"])
    assert p.returncode == 0, p.stderr
    assert p.stdout == "[1,403,407,261,378]\n"
    p = run_facet(["detokenize", path, "403,407,261,378"])
    assert p.returncode == 0, p.stderr
    assert p.stdout == "Once upon a time"
    p = run_facet(["template", path, "--messages", str(msgs)])
    assert p.returncode == 1, p.stderr
    assert p.stderr == f"facet: {path}: no chat template (the GGUF metadata has no " \
        "tokenizer.chat_template)\n", p.stderr


def test_conform_and_plan_check_tensor_shapes(run_facet, corpus, tmp_path):
    """conform and plan on a GGUF file run the loader's tensor check (names and shapes,
    from a view that reads no tensor data), as they do on safetensors: a file whose
    blk.0.attn_k.weight has its two dims swapped was 'supported' (exit 0) while run
    refused it."""
    import struct
    b = bytearray((corpus / "models" / "qwen3-F32.gguf").read_bytes())
    name = b"blk.0.attn_k.weight"
    i = b.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
    assert struct.unpack_from("<I", b, i)[0] == 2
    d0, d1 = struct.unpack_from("<QQ", b, i + 4)
    struct.pack_into("<QQ", b, i + 4, d1, d0)
    bad = tmp_path / "kswap.gguf"
    bad.write_bytes(bytes(b))
    want = ("checkpoint: tensor 'model.layers.0.self_attn.k_proj.weight' (blk.0.attn_k.weight in "
            "%s, whose ne lists the shape reversed) has shape [256, 128], expected [128, 256] "
            "from the GGUF metadata" % bad)
    for cmd in (["conform", str(bad)], ["plan", str(bad)],
                ["run", str(bad), "--prompt-ids", "1", "-n", "1"]):
        p = run_facet(cmd)
        assert p.returncode == 1 and want in p.stderr, (cmd, p.returncode, p.stdout, p.stderr)
    # the corpus files still pass, Q8_0 (not dequantized by the check) included
    for ok in ("qwen3-F32", "qwen3-Q8_0", "llama-F16", "gemma3-Q8_0", "phi3-F32"):
        p = run_facet(["conform", str(corpus / "models" / f"{ok}.gguf")])
        assert p.returncode == 0, (ok, p.stderr)


def test_conform_vulkan_refuses_block_weights(run_facet, repo_root, tmp_path):
    """conform FILE.gguf --backend vulkan judges what run loads by default: the bundled
    file's Q4_0 matrices as q4 panels and its tied Q6_K output, which Vulkan shaders read
    (supported); its last matrix retyped MXFP4 (17-byte blocks in the 18-byte ones'
    space), which none reads, is refused naming it, as run refuses it (exit 2; conform
    once said 'supported on vulkan' with exit 0 for what run refused)."""
    gguf = repo_root / "tests" / "data" / "gguf" / "qwen3-Q4_0.gguf"
    p = run_facet(["conform", gguf, "--backend", "vulkan"])
    assert "REFUSED" not in p.stdout and p.returncode == 0, p.stdout + p.stderr
    mx = tmp_path / "qwen3-mxfp4.gguf"
    gguf_retyped(gguf, mx, "blk.1.ffn_up.weight", 39)
    p = run_facet(["conform", mx, "--backend", "vulkan"])
    assert p.returncode == 2, p.stdout + p.stderr
    assert ("REFUSED: weights=MXFP4 is not supported on vulkan (supported: f32, bf16, f16, int8, "
            "q4, GGUF Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS "
            "blocks; or run it with --weights f32, bf16, f16, int8 or q4)") in p.stdout, p.stdout
    p = run_facet(["conform", gguf])  # the CPU runs them
    assert "REFUSED" not in p.stdout and p.returncode == 0, p.stdout + p.stderr
