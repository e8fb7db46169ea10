"""Issue 24: `--backend vulkan`, checked on whatever Vulkan device the loader gives (CI:
Mesa's lavapipe, a Vulkan driver on the CPU; LP_NUM_THREADS=2 keeps it cheap). No GPU
has run these.

- The bundled stories260k: greedy from BOS and a published prompt give the ids llama2.c's
  authors published.
- Shrunk checkpoints of the reference tests (Llama, Qwen3 with qk-norm, Gemma 2 with a
  sliding window of 8 on ring layers, both softcaps, (1 + w) sandwich norms and gelu
  tanh) and an f16 run: greedy ids identical to the CPU exact path (`--weights f32
  --kv-cache f32`) wherever the CPU's top-2 margin exceeds 1e-2, every compared logit
  within 1e-3.
- Quantized weights (`--weights int8`, `--weights q4`: its output projection Q6_K or
  int8) on the bundled model and shrunk Llama (hidden 256: a Q6_K output) and Qwen3
  checkpoints: the shaders dequantize the blocks exactly and multiply float32
  activations, so the oracle with the same weights is the CPU exact path on a copy of the
  checkpoint whose matrices hold the rounded values (tests/ref/weights_round.py: the
  formats' definitions in NumPy). Same margin and 1e-3 rule. (The CPU's own int8 / q4
  kernels also round each activation row to int8 per block of 32: 1e-2..5e-2 relative
  logit error, measured, far from 1e-3.)
- GGUF files in their own blocks (the bundled qwen3-Q4_0: Q4_0 and a Q6_K output; from
  ../shared, a file of every other type with a shader: Q8_0, Q4_K_M, Q2_K, Q3_K_M, Q4_1,
  Q5_0, Q5_1, Q5_K_M, IQ4_NL, IQ4_XS), as run loads them and, where that repacks them,
  with FACET_GGUF_BLOCKS=1 (blocks kept as the file stores them): against the CPU exact
  path on the same file (`--weights f32` dequantizes the blocks exactly), the same rule.
- The classic decoders (GPT-2, GPT-NeoX / Pythia, Phi-2, StableLM, StarCoder2, OLMo,
  Falcon old and new and rw's ALiBi, BLOOM, MPT, GPT-J, Command-R and R7B, ChatGLM3,
  Baichuan2-13B's ALiBi, Gemma's erf gelu) likewise: LayerNorm, ungated MLPs with gelu /
  gelu_new, the parallel residual, ALiBi, RoPE on pairs, BLOOM's embedding norm.
- What the shaders do not serve is refused before loading, naming the fact, its value
  and what is supported (a GGUF block type without a shader: MXFP4; an f16 cache,
  state-space layers, a device index the machine does not have) — never run elsewhere.
The ops one by one: tests/unit/test_vulkan_ops.c.
"""

import json
import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

import gen_checkpoint  # noqa: F401  (the conftest's checkpoint generator)

REPO = pathlib.Path(__file__).resolve().parents[2]
REF_CONFIGS = REPO / "tests" / "data" / "ref" / "configs"
EXPECTED = json.loads((REPO / "tests" / "data" / "stories260k" / "expected.json").read_text())
os.environ.setdefault("LP_NUM_THREADS", "2")  # lavapipe's threads, for the facet children

# Baichuan2-7B-Chat's public config: rotary and NormHead, its lm_head rows L2-normalised as
# the loader reads them, which every backend then runs
from test_reference_baichuan import BAICHUAN2_13B, BAICHUAN2_7B, FALCON_RW_1B  # noqa: E402
# the classic decoders' public configs (issue 28), as the float64 reference tests shrink them
from test_reference_cohere2 import COMMAND_R7B  # noqa: E402
from test_reference_classic import (  # noqa: E402
    BLOOM_560M, COMMAND_R, CONFIG_DIR, FALCON_40B, FALCON_7B, GPTJ_6B, MPT_7B, OLMO_1B, PHI_2,
    PYTHIA_1B, STABLELM_2_1_6B, STARCODER2_3B)

GEMMA2_WINDOW = {  # Gemma 2's published dimensions (test_reference_families.py), window 8
    "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 2304,
    "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8,
    "num_key_value_heads": 4, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh",
    "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256,
    "sliding_window": 4096, "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0,
    "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "vocab_size": 256000,
    "max_position_embeddings": 8192, "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0,
    "attention_bias": False, "torch_dtype": "float32",
}
CASES = {
    "llama": (str(REF_CONFIGS / "TinyLlama__TinyLlama-1.1B-Chat-v1.0__resaved"), {}, "f32"),
    "qwen3": (str(REF_CONFIGS / "Qwen__Qwen3-0.6B__dims"), {}, "f32"),
    "gemma2-window": (GEMMA2_WINDOW, {"sliding_window": 8}, "f32"),
    "qwen3-f16": (str(REF_CONFIGS / "Qwen__Qwen3-0.6B__dims"), {}, "f16"),
    # a bf16 cache: the store shader writes 16-bit halves, rounded as the CPU's
    "llama-bf16-cache": (str(REF_CONFIGS / "TinyLlama__TinyLlama-1.1B-Chat-v1.0__resaved"), {},
                         "f32+bf16"),
    "baichuan2-7b": (BAICHUAN2_7B, {}, "f32"),
}
# The classic decoders on vulkan: each the reference tests' shrunk checkpoint of a family
# and what it brings to the shaders
CLASSIC = {
    "gpt2-xl": (os.path.join(CONFIG_DIR, "openai-community__gpt2-xl"), {}),  # LayerNorm, gelu_new
    "pythia": (PYTHIA_1B, {}),  # parallel residual from two norms, gelu (erf), partial rotary
    "redpajama": (os.path.join(CONFIG_DIR, "togethercomputer__RedPajama-INCITE-7B-Base"), {}),
    "phi-2": (PHI_2, {}),  # one norm feeding both branches (the copy), lm_head bias
    "stablelm-2-parallel": (STABLELM_2_1_6B, {"use_parallel_residual": True}),
    "starcoder2": (STARCODER2_3B, {"sliding_window": 8}),  # a window crossed by the prompt
    "olmo": (OLMO_1B, {}),  # the non-parametric LayerNorm
    "falcon-7b": (FALCON_7B, {}),  # multi-query, one norm in parallel
    "falcon-40b": (FALCON_40B, {"num_kv_heads": 2}),  # the new decoder: KV groups, two norms
    "falcon-rw": (FALCON_RW_1B, {}),  # ALiBi scaled with q.k, sequential, biases
    "bloom": (BLOOM_560M, {}),  # ALiBi, the embeddings' LayerNorm, per-head fused qkv
    "bloom-12-heads": (BLOOM_560M, {"num_attention_heads": 12, "num_key_value_heads": 12,
                                    "head_dim": 16}),  # the interleaved extra slopes
    "mpt": (MPT_7B, {}),  # ALiBi, bias-free LayerNorm
    "gptj": (GPTJ_6B, {"rotary_dim": 8}),  # RoPE on pairs over a quarter of the head
    "command-r": (COMMAND_R, {"num_key_value_heads": 2}),  # pairs, parallel gated MLP
    # Command R7B: pairs on the sliding layers only (window 8), the full layer without positions
    "command-r7b": (COMMAND_R7B, {"num_hidden_layers": 4, "sliding_window": 8}),
    "chatglm3": (os.path.join(CONFIG_DIR, "THUDM__chatglm3-6b"),
                 {"num_attention_heads": 4, "num_key_value_heads": 2}),  # pairs on half a head
    # Baichuan2-13B: Llama's block with ALiBi over 12 heads (not a power of two)
    "baichuan2-13b": (BAICHUAN2_13B, {"num_attention_heads": 12, "num_key_value_heads": 12,
                                      "head_dim": 16}),
    # Gemma 1 as published with hidden_act gelu: the gated MLP's exact (erf) gelu
    "gemma-gelu": (os.path.join(CONFIG_DIR, "google__gemma-2b-it"), {}),
}
EXACT = ["--kv-cache", "f32"]
N_PROMPT, N_GEN = 16, 10
MARGIN, TOL = 1e-2, 1e-3


def vulkan_built(facet_bin):
    table = subprocess.run([str(facet_bin), "conform", "--table"], capture_output=True, text=True)
    return "backend vulkan (not built into this binary" not in table.stdout


@pytest.fixture(scope="module", autouse=True)
def need_vulkan(facet_bin):
    if not vulkan_built(facet_bin):
        pytest.skip("SKIPPED LOUDLY: this facet was built without the Vulkan backend "
                    "(libvulkan-dev and glslc missing at build time; scripts/setup installs them)")
    p = subprocess.run([str(facet_bin), "run", "--backend", "vulkan", "-n", "1"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0 and "vulkan:" in p.stderr:
        pytest.skip("SKIPPED LOUDLY: no usable Vulkan driver here: %s (mesa-vulkan-drivers "
                    "gives lavapipe)" % p.stderr.strip())


def run(facet_bin, *args):
    return subprocess.run([str(facet_bin)] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.evidence(checkpoints=["stories260k"], backend="vulkan", weights=["f32"],
                      oracle="published ids, on Mesa lavapipe only")
def test_bundled_model_published_ids(facet_bin):
    g = EXPECTED["greedy_from_bos"]
    p = run(facet_bin, "run", "--backend", "vulkan", "--json", "-n", 32)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["prompt_ids"] == g["input_ids"]
    assert out["generated_ids"] == g["generated_ids"][:32]
    assert "facet: vulkan device " in p.stderr and " GiB" in p.stderr  # the device, named
    case = EXPECTED["prompts"][0]
    n = min(len(case["generated_ids"]), 16)
    p = run(facet_bin, "run", "--backend", "vulkan", "--json", "-p", case["prompt"], "-n", n)
    assert json.loads(p.stdout)["generated_ids"] == case["generated_ids"][:n], p.stderr


def test_one_submission_per_forward(facet_bin):
    """The operations of a forward chunk (every layer's matmuls, norms, RoPE, K/V stores,
    attention, residuals and the logits) are recorded over activations that stay on the
    device and submitted once: a run of n tokens (one prefill, n - 1 decode steps) makes
    n submissions, not one per operation (52 a token on this 5-layer model before)."""
    for n in (1, 12):
        p = run(facet_bin, "run", "--backend", "vulkan", "--json", "--prompt-ids", "1,403,407",
                "-n", n)
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout)
        assert len(out["generated_ids"]) == n
        assert out["timings"]["device_submissions"] == n, out["timings"]
    p = run(facet_bin, "run", "--json", "--prompt-ids", "1,403,407", "-n", 1)
    assert "device_submissions" not in json.loads(p.stdout)["timings"]  # the CPU has none


def test_weights_split_past_the_storage_range(monkeypatch, facet_bin, make_checkpoint,
                                              facet_generate):
    """One storage binding reaches maxStorageBufferRange bytes (lavapipe: 128 MiB, less
    than a 150k-vocabulary lm_head): a larger weight is split by rows into up to 16
    buffers, a dispatch each. FACET_VK_MAX_STORAGE_RANGE lowers the limit so small
    checkpoints split: the bundled model's lm_head in 8 parts still gives the published
    ids; a shrunk Llama whose largest matrices take ~10 parts matches the CPU exact path;
    a limit needing more than 16 parts is refused before loading, naming the matrix."""
    g = EXPECTED["greedy_from_bos"]
    monkeypatch.setenv("FACET_VK_MAX_STORAGE_RANGE", "16384")  # lm_head 512 x 64 f32: 8 parts
    p = run(facet_bin, "run", "--backend", "vulkan", "--json", "-n", 24)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["generated_ids"] == g["generated_ids"][:24]
    path = make_checkpoint(CASES["llama"][0], shrink={})
    cfg = json.loads((pathlib.Path(path) / "config.json").read_text())
    # the largest matrix: lm_head (vocab x hidden) or gate/up/down (intermediate x hidden)
    big = max(cfg["vocab_size"], cfg["intermediate_size"]) * cfg["hidden_size"] * 4
    monkeypatch.setenv("FACET_VK_MAX_STORAGE_RANGE", str(big // 10 + 1024))
    prompt = [int(x) for x in np.random.default_rng(7).integers(3, cfg["vocab_size"], N_PROMPT)]
    cpu = facet_generate(path, prompt, N_GEN, extra=["--weights", "f32"] + EXACT)
    vk = facet_generate(path, prompt, N_GEN, extra=["--weights", "f32", "--backend", "vulkan"] + EXACT)
    assert compare_runs(cpu, vk) >= N_PROMPT
    monkeypatch.setenv("FACET_VK_MAX_STORAGE_RANGE", str(big // 40))
    p = run(facet_bin, "conform", path, "--backend", "vulkan")
    assert "REFUSED: weight matrix=" in p.stdout + p.stderr, p.stdout + p.stderr
    assert "split by rows into at most 16 buffers" in p.stdout + p.stderr
    # a value it cannot take is said to be ignored, not dropped silently
    monkeypatch.setenv("FACET_VK_MAX_STORAGE_RANGE", "abc")
    p = run(facet_bin, "run", "--backend", "vulkan", "-n", 1)
    assert p.returncode == 0 and "FACET_VK_MAX_STORAGE_RANGE=abc ignored (expected bytes" in p.stderr


def compare_runs(cpu, vk, n_prompt=N_PROMPT, n_gen=N_GEN):
    """Greedy ids equal up to the first position whose CPU top-2 margin is under MARGIN
    (after it the runs may rightly part); logits within TOL over the rows compared.
    Returns the number of logits rows compared."""
    ids_c, ids_v = cpu["json"]["generated_ids"], vk["json"]["generated_ids"]
    lc, lv = cpu["logits"], vk["logits"]
    rows = n_prompt  # logits rows: the prompt's, then one per generated token but the last
    for i in range(n_gen):
        top = np.sort(lc[n_prompt - 1 + i])[-2:]
        if top[1] - top[0] < MARGIN:
            break
        assert ids_v[i] == ids_c[i], "generated token %d: vulkan %d, cpu %d" % (i, ids_v[i], ids_c[i])
        rows = n_prompt + i
    diff = np.abs(lv[:rows].astype(np.float64) - lc[:rows])
    worst = np.unravel_index(int(np.argmax(diff)), diff.shape)
    assert diff[worst] < TOL, "logits row %d id %d: |vulkan - cpu| = %.3g" % (worst[0], worst[1], diff[worst])
    return rows


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.evidence(checkpoints=["TinyLlama__TinyLlama-1.1B-Chat-v1.0__resaved", "Qwen__Qwen3-0.6B__dims"],
                      config_classes=["llama", "qwen3", "gemma2", "baichuan"], backend="vulkan", weights=["f32"],
                      oracle="the CPU exact path, on Mesa lavapipe only")
def test_vulkan_matches_cpu_exact_path(case, make_checkpoint, facet_generate):
    src, shrink, weights = CASES[case]
    path = make_checkpoint(src, shrink=shrink)
    vocab = json.loads((pathlib.Path(path) / "config.json").read_text())["vocab_size"]
    prompt = [int(x) for x in np.random.default_rng(sorted(CASES).index(case)).integers(3, vocab, N_PROMPT)]
    weights, _, cache = weights.partition("+")
    extra = ["--weights", weights] + (["--kv-cache", cache] if cache else EXACT)
    cpu = facet_generate(path, prompt, N_GEN, extra=extra)
    vk = facet_generate(path, prompt, N_GEN, extra=extra + ["--backend", "vulkan"])
    assert vk["json"]["prompt_ids"] == prompt
    rows = compare_runs(cpu, vk)
    assert rows >= N_PROMPT, rows


def rounded_copy(path, weights, out, keep=None):
    """A copy of checkpoint `path` whose 2-D weight matrices hold the values `--weights
    weights` rounds them to (weights_round.RoundedStore's rule, the output projection in
    its own format), as F32: the CPU exact path on it multiplies the quantized run's
    weights. keep: a regular expression of tensor names the loader keeps float32 (a
    router), copied unrounded."""
    import shutil

    import safetensors_io
    import weights_round
    out.mkdir()
    files = sorted(pathlib.Path(path).glob("*.safetensors"))
    names = set()
    for f in files:
        names |= set(safetensors_io.read_header(f)[0])
    output = "lm_head.weight" if "lm_head.weight" in names else "model.embed_tokens.weight"
    for f in pathlib.Path(path).iterdir():
        if f.suffix != ".safetensors" and f.is_file():
            shutil.copy(f, out / f.name)
    for f in files:
        header, meta, start = safetensors_io.read_header(f)
        store = {n: safetensors_io.read_tensor(f, i, start) for n, i in header.items()}
        rounded = weights_round.RoundedStore(store, weights, output)
        entries = [(n, "F32", i["shape"]) for n, i in header.items()]
        safetensors_io.write_file(out / f.name, entries,
                                  lambda n: store[n] if keep and re.search(keep, n) else rounded[n],
                                  meta)
    return out


QUANT_CASES = {"stories260k": REPO / "models" / "stories260k",
               "llama": CASES["llama"][0], "qwen3": CASES["qwen3"][0]}


@pytest.mark.parametrize("weights", ["int8", "q4"])
@pytest.mark.parametrize("name", sorted(QUANT_CASES))
@pytest.mark.evidence(checkpoints=["stories260k", "TinyLlama__TinyLlama-1.1B-Chat-v1.0__resaved",
                                   "Qwen__Qwen3-0.6B__dims"],
                      config_classes=["llama", "qwen3"], backend="vulkan", weights=["int8", "q4"],
                      oracle="the CPU exact path on the same rounded weights, on Mesa lavapipe only")
def test_quantized_weights_match_cpu_on_the_same_values(name, weights, make_checkpoint,
                                                         facet_generate, tmp_path):
    src = QUANT_CASES[name]
    path = src if name == "stories260k" else make_checkpoint(src, shrink={})
    same = rounded_copy(path, weights, tmp_path / "rounded")
    vocab = json.loads((pathlib.Path(path) / "config.json").read_text())["vocab_size"]
    prompt = [int(x) for x in np.random.default_rng(len(name)).integers(3, vocab, N_PROMPT)]
    cpu = facet_generate(same, prompt, N_GEN, extra=["--weights", "f32", "--no-cache"] + EXACT)
    vk = facet_generate(path, prompt, N_GEN, extra=["--weights", weights, "--no-cache",
                                                     "--backend", "vulkan"] + EXACT)
    rows = compare_runs(cpu, vk)
    assert rows >= N_PROMPT, rows


def gguf_logits(facet_bin, model, prompt, extra=(), env=None):
    dump = pathlib.Path(str(model) + ".%d.f32" % len(extra))
    p = subprocess.run([str(facet_bin), "run", str(model), "--prompt-ids", ",".join(map(str, prompt)),
                        "-n", str(N_GEN), "--json", "--ignore-eos", "--dump-logits", str(dump)] +
                       EXACT + list(extra), capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **(env or {})))
    assert p.returncode == 0, p.stderr
    out = {"json": json.loads(p.stdout), "logits": np.fromfile(dump, dtype="<f4").reshape(-1, 512)}
    dump.unlink()
    return out


def gguf_case(facet_bin, model, tmp_path, kept_too):
    """Vulkan on the file's own blocks (as loaded by default, and with kept_too also kept
    as the file stores them: Q4_0 / Q8_0 are repacked into facet's panels, Q4_K / Q6_K
    into 16-row panels on AVX-512 VNNI) against the CPU exact path on the same file:
    `--weights f32` dequantizes each block exactly, so both multiply the same values."""
    local = tmp_path / model.name  # the dumps beside a copy (../shared is read-only)
    local.write_bytes(model.read_bytes())
    prompt = [int(x) for x in np.random.default_rng(3).integers(3, 512, N_PROMPT)]
    cpu = gguf_logits(facet_bin, local, prompt, ["--weights", "f32"])
    for blocks in ("0", "1") if kept_too else ("0",):
        vk = gguf_logits(facet_bin, local, prompt, ["--backend", "vulkan"], {"FACET_GGUF_BLOCKS": blocks})
        assert compare_runs(cpu, vk) >= N_PROMPT


def test_gguf_blocks_match_cpu_on_the_same_values(facet_bin, tmp_path):
    gguf_case(facet_bin, REPO / "tests" / "data" / "gguf" / "qwen3-Q4_0.gguf", tmp_path, True)


@pytest.mark.parametrize("name", ["qwen3-Q8_0", "qwen3-Q4_K_M", "llama-Q2_K", "llama-Q3_K_M",
                                  "llama-Q4_1", "llama-Q5_0", "llama-Q5_1", "llama-Q5_K_M",
                                  "llama-IQ4_NL", "llama-IQ4_XS",
                                  # mixture of experts: 3-D expert blocks, one expert a wtensor
                                  "mixtral-Q4_K_M", "qwen3moe-Q4_K_M"])
def test_corpus_gguf_blocks_match_cpu(facet_bin, facet_shared, name, tmp_path):
    model = facet_shared / "corpus" / "gguf" / "models" / (name + ".gguf")
    if not model.is_file():
        pytest.skip("SKIPPED LOUDLY: %s is absent: vulkan %s NOT tested" % (model, name))
    gguf_case(facet_bin, model, tmp_path, name in ("qwen3-Q8_0", "qwen3-Q4_K_M"))


@pytest.mark.parametrize("case", sorted(CLASSIC))
@pytest.mark.evidence(checkpoints=["openai-community__gpt2-xl", "togethercomputer__RedPajama-INCITE-7B-Base",
                                   "tiiuae__falcon-7b-instruct", "THUDM__chatglm3-6b",
                                   "google__gemma-2b-it"],
                      config_classes=["gpt2", "gpt_neox", "phi", "stablelm", "starcoder2", "olmo",
                                      "falcon", "bloom", "mpt", "gptj", "cohere", "cohere2",
                                      "chatglm", "baichuan", "gemma"],
                      backend="vulkan", weights=["f32"], oracle="the CPU exact path, on Mesa lavapipe only")
def test_classic_families_match_cpu_exact_path(case, make_checkpoint, facet_generate):
    """The classic decoders (LayerNorm, ungated MLPs, parallel residuals, ALiBi, RoPE on
    pairs, BLOOM's embedding norm) on vulkan: greedy ids identical to the CPU exact path
    where its top-2 margin exceeds 1e-2, logits within 1e-3."""
    src, shrink = CLASSIC[case]
    path = make_checkpoint(src, shrink=shrink)
    cfg = json.loads((pathlib.Path(path) / "config.json").read_text())
    vocab = int(cfg.get("vocab_size") or cfg["padded_vocab_size"])  # ChatGLM: padded
    rng = np.random.default_rng(100 + sorted(CLASSIC).index(case))
    prompt = [int(x) for x in rng.integers(3, vocab, N_PROMPT)]
    extra = ["--weights", "f32"] + EXACT
    cpu = facet_generate(path, prompt, N_GEN, extra=extra)
    vk = facet_generate(path, prompt, N_GEN, extra=extra + ["--backend", "vulkan"])
    assert vk["json"]["prompt_ids"] == prompt
    assert compare_runs(cpu, vk) >= N_PROMPT


# The mixture-of-experts cells of tests/e2e/test_reference_moe.py (the corpus's configs,
# public config values): routing either way, renormalized or not, dense layers between
# sparse ones, a shared expert with and without its sigmoid gate, 3-D expert tensors,
# gpt-oss's router and expert biases and clamped SwiGLU.
MOE_CELLS = ["granitemoe", "granitemoeshared", "gpt_oss", "mixtral", "olmoe", "qwen2_moe",
             "qwen3_moe"]


def moe_checkpoint(make_checkpoint, name):
    import test_reference_moe as moe
    src, shrink, layout = moe.CELLS[name]
    return make_checkpoint(src(REPO), shrink=shrink, experts_layout=layout)


@pytest.mark.parametrize("name", MOE_CELLS)
@pytest.mark.evidence(config_classes=["mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "granitemoe",
                                      "granitemoeshared", "gpt_oss"], backend="vulkan",
                      weights=["f32"], oracle="the CPU exact path, on Mesa lavapipe only")
def test_vulkan_moe_matches_cpu_exact_path(name, make_checkpoint, facet_generate):
    """Each entry's experts run on the device (matmul_each); the host waits once a sparse
    layer, for the router logits. Greedy ids and logits as the dense cases; the decode
    steps' submissions are one per sparse layer (the experts' choice) plus the step's
    own (gpt-oss: one more per sparse layer, its clamped SwiGLU is the host's)."""
    path = moe_checkpoint(make_checkpoint, name)
    cfg = json.loads((pathlib.Path(path) / "config.json").read_text())
    prompt = [int(x) for x in np.random.default_rng(MOE_CELLS.index(name)).integers(3, cfg["vocab_size"], N_PROMPT)]
    cpu = facet_generate(path, prompt, N_GEN, extra=EXACT)
    vk = facet_generate(path, prompt, N_GEN, extra=EXACT + ["--backend", "vulkan"])
    rows = compare_runs(cpu, vk)
    assert rows >= N_PROMPT, rows
    one = facet_generate(path, prompt, 1, extra=EXACT + ["--backend", "vulkan"], dump=False)
    per_token = (vk["json"]["timings"]["device_submissions"] -
                 one["json"]["timings"]["device_submissions"]) / (N_GEN - 1)
    sparse = sparse_layers(path)
    waits = 2 if name == "gpt_oss" else 1
    assert per_token == waits * sparse + 1, (per_token, sparse)


# The router stays float32 under every --weights (src/engine/weights.c): its ranking
# picks the experts. The cells whose experts are 2-D tensors (RoundedStore rounds those).
ROUTER = r"\.(block_sparse_moe|mlp)\.gate\.weight$"


@pytest.mark.parametrize("weights", ["int8", "q4"])
@pytest.mark.parametrize("name", ["mixtral", "olmoe", "qwen2_moe", "qwen3_moe"])
@pytest.mark.evidence(config_classes=["mixtral", "olmoe", "qwen2_moe", "qwen3_moe"],
                      backend="vulkan", weights=["int8", "q4"],
                      oracle="the CPU exact path on the same rounded weights, on Mesa lavapipe only")
def test_vulkan_moe_quantized_experts_match_cpu_on_the_same_values(name, weights, make_checkpoint,
                                                                    facet_generate, tmp_path):
    """Quantized experts (int8, q4 blocks) through matmul_each and matmul_multi, against
    the CPU exact path on a copy holding the values the loader rounds them to."""
    path = moe_checkpoint(make_checkpoint, name)
    same = rounded_copy(path, weights, tmp_path / "rounded", keep=ROUTER)
    prompt = [int(x) for x in np.random.default_rng(len(name)).integers(3, 512, N_PROMPT)]
    cpu = facet_generate(same, prompt, N_GEN, extra=["--weights", "f32", "--no-cache"] + EXACT)
    vk = facet_generate(path, prompt, N_GEN, extra=["--weights", weights, "--no-cache",
                                                     "--backend", "vulkan"] + EXACT)
    rows = compare_runs(cpu, vk)
    assert rows >= N_PROMPT, rows


def test_vulkan_moe_batched_decode_equals_alone(facet_bin, make_checkpoint, tmp_path):
    """`facet serve --backend vulkan` on a shrunk Qwen2-MoE (a shared expert with its gate,
    a dense layer): four greedy completions sent at once, decoded in one batch (each
    entry's experts its own dispatches), each give the text `facet run --backend vulkan`
    gives alone."""
    import concurrent.futures as cf
    import shutil

    from server_harness import Server
    path = tmp_path / "qwen2_moe"
    shutil.copytree(moe_checkpoint(make_checkpoint, "qwen2_moe"), path)
    shutil.copy(REPO / "models" / "stories260k" / "tokenizer.json", path)
    assert json.loads((path / "config.json").read_text())["vocab_size"] == 512
    prompts = [[int(x) for x in np.random.default_rng(s).integers(3, 512, 6 + 3 * s)]
               for s in range(4)]
    want = []
    for ids in prompts:
        p = run(facet_bin, "run", path, "--backend", "vulkan", "--json", "--weights", "f32",
                "--kv-cache", "f32", "--prompt-ids", ",".join(map(str, ids)), "-n", 12)
        assert p.returncode == 0, p.stderr
        want.append(json.loads(p.stdout)["text"])
    with Server(facet_bin, path, "--backend", "vulkan", "--weights", "f32", "--kv-cache", "f32",
                "--max-batch", 4) as srv:
        def ask(ids):
            status, r = srv.post("/v1/completions", {"prompt": ids, "max_tokens": 12,
                                                     "temperature": 0})
            return r["choices"][0]["text"] if status == 200 else r

        with cf.ThreadPoolExecutor(4) as ex:
            got = list(ex.map(ask, prompts))
    assert got == want
    assert sum(len(t) for t in want) > 0


def sparse_layers(path):
    """The checkpoint's sparse layers (the reference's reading of its config)."""
    import hf_facts
    cfg = json.loads((pathlib.Path(path) / "config.json").read_text())
    return sum(1 for x in hf_facts.facts(cfg).sparse_layers if x)


def test_auto_cache_follows_the_weights(make_checkpoint, facet_generate):
    """--kv-cache auto on vulkan is the cache `facet plan` and serve's KV budget count:
    bf16 weights give a bf16 cache (it was f32, twice the bytes the budget counted), so
    auto's logits are bit for bit those of an explicit bf16 cache and not an f32 one's."""
    path = make_checkpoint(CASES["llama"][0], shrink={})
    prompt, vk = [5, 9, 17, 33, 2, 8], ["--backend", "vulkan", "--weights", "bf16"]
    auto = facet_generate(path, prompt, 2, extra=vk)["logits"]
    bf16 = facet_generate(path, prompt, 2, extra=vk + ["--kv-cache", "bf16"])["logits"]
    f32 = facet_generate(path, prompt, 2, extra=vk + ["--kv-cache", "f32"])["logits"]
    assert np.array_equal(auto, bf16)
    assert not np.array_equal(auto, f32)


def mxfp4_file(tmp_path):
    """The bundled qwen3-Q4_0.gguf with its last matrix (by offset) retyped MXFP4 (17-byte
    blocks of 32 in the 18-byte ones' space: nothing after it to misplace), the one block
    type the CPU runs and no Vulkan shader reads."""
    from test_conform_gguf import gguf_retyped
    mx = tmp_path / "qwen3-mxfp4.gguf"
    gguf_retyped(REPO / "tests" / "data" / "gguf" / "qwen3-Q4_0.gguf", mx, "blk.1.ffn_up.weight", 39)
    return mx


def test_refused_by_name_before_loading(facet_bin, make_checkpoint, tmp_path):
    # a GGUF block type without a shader is refused naming it; the CPU runs the file
    mx = mxfp4_file(tmp_path)
    p = run(facet_bin, "run", mx, "--backend", "vulkan", "-n", 1)
    assert p.returncode == 2, p.stderr
    assert "REFUSED: weights=MXFP4 is not supported on vulkan (supported: f32, bf16, f16, int8, q4, " in p.stderr, p.stderr
    assert run(facet_bin, "run", mx, "-n", 1).returncode == 0
    p = run(facet_bin, "run", "--backend", "vulkan", "--kv-cache", "f16", "-n", 1)
    assert p.returncode == 2, p.stderr
    assert "REFUSED: kv_cache=f16 is not supported on vulkan (supported: f32, bf16)" in p.stderr
    p = run(facet_bin, "run", "--backend", "vulkan", "--device", 99, "-n", 1)
    assert p.returncode != 0 and "--device 99: no such device" in p.stderr, p.stderr
    # plan names the shaders that would run
    p = run(facet_bin, "plan", REPO / "models" / "stories260k", "--backend", "vulkan")
    assert "kernels (vulkan): matvec.comp (decode) / matmul_tiled.comp (prefill)" in p.stdout, p.stdout
    assert "verdict: supported on vulkan" in p.stdout, p.stdout
    # a state-space family (no shaders for the scan yet): the vulkan column names the
    # fact; the CPU runs it
    import mamba_ref
    path = mamba_ref.write(mamba_ref.shrink(mamba_ref.MAMBA_130M), str(tmp_path / "mamba"))
    p = run(facet_bin, "run", path, "--backend", "vulkan", "--prompt-ids", "1,2", "-n", 1)
    assert p.returncode == 2, p.stderr
    assert "REFUSED: state-space mixer=mamba is not supported on vulkan (supported: none)" in p.stderr, p.stderr
    assert run(facet_bin, "run", path, "--prompt-ids", "1,2", "-n", 1).returncode == 0


def test_serve_batched_decode_equals_alone(facet_bin):
    """`facet serve --backend vulkan`: three greedy completions sent at once (decoded in
    one batch) each give the text `facet run` gives alone, on the CPU and on vulkan. (The
    logits bit for bit, batched vs alone on vulkan: tests/unit/test_vulkan_batch.c.)"""
    import threading

    from server_harness import Server
    prompts = [c["prompt_ids"] for c in EXPECTED["prompts"][:3]]
    want = []
    for ids in prompts:
        got = [json.loads(run(facet_bin, "run", "--json", "--prompt-ids", ",".join(map(str, ids)),
                              "-n", 16, *backend).stdout)["text"]
               for backend in ([], ["--backend", "vulkan"])]
        assert got[0] == got[1], got
        want.append(got[0])
    with Server(facet_bin, REPO / "models" / "stories260k", "--backend", "vulkan",
                "--max-batch", 4) as srv:
        assert any("vulkan device " in line for line in srv.log), "".join(srv.log)
        got = [None] * len(prompts)

        def ask(i):
            status, r = srv.post("/v1/completions", {"prompt": prompts[i], "max_tokens": 16,
                                                     "temperature": 0})
            got[i] = r["choices"][0]["text"] if status == 200 else r

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(prompts))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert got == want
