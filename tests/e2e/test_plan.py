"""`facet plan` end to end: the numbers of --json against hand-computed values.

Machine size is fixed with FACET_MEM_AVAILABLE (bytes) so the fit answers are exact.
Formulas (docs in src/model/plan.h): k = 2 x num_key_value_heads x head_dim x 4 bytes
per layer and position (facet's float32 KV cache); naive bytes/token = L x k; actual
bytes of one sequence at context c = k x (G x min(c, max_pos) + S x min(c, window)).
"""

import json
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
CONFIGS = REPO / "tests" / "data" / "configs"
GIB = 1 << 30

MISTRAL_V01 = {  # Mistral-7B-v0.1's published config: window 4096 on every layer
    "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 32768,
    "sliding_window": 4096, "rope_theta": 10000.0, "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False, "hidden_act": "silu", "torch_dtype": "bfloat16",
}


def plan(facet_bin, model, *args, mem=64 * GIB):
    env = dict(os.environ, FACET_MEM_AVAILABLE=str(mem))
    proc = subprocess.run([str(facet_bin), "plan", str(model), "--json"] + [str(a) for a in args],
                          capture_output=True, text=True, env=env, timeout=60)
    return proc, (json.loads(proc.stdout) if proc.stdout.strip() else None)


def test_dense_gqa_llama32_1b(facet_bin):
    proc, p = plan(facet_bin, CONFIGS / "meta-llama__Llama-3.2-1B-Instruct__resaved",
                   "--ctx", 4096, "--batch", 4, "--weights", "f32", mem=8 * GIB)
    assert proc.returncode == 0, proc.stderr
    # 1235814400 parameters (embed 128256*2048 + 16 layers * 60821504 + 2048), tied
    assert p["n_params"] == 1235814400
    # int8: one byte per weight + one f16 scale per 32 inputs and row; q4: half a byte,
    # its tied embedding (the output projection, 128256 x 2048) in Q6_K blocks (210 bytes
    # per 256 inputs)
    emb = 128256 * 2048
    assert p["weight_bytes"] == {"f32": 4943257600, "bf16": 2471763968, "f16": 2471763968,
                                 "int8": 1235746816 + 1235746816 // 16 + 4 * 67584,
                                 "q4": (1235746816 - emb) * 9 // 16 + emb // 256 * 210 + 4 * 67584}
    assert p["kv_bytes_per_layer_position"] == 2 * 8 * 64 * 4
    assert p["kv_bytes_per_token_naive"] == 16 * 4096
    assert p["kv_bytes_per_sequence"] == 16 * 4096 * 4096
    assert p["total_bytes"] == 4943257600 + 4 * 16 * 4096 * 4096
    assert p["fits"] is True
    assert p["max_batch_at_ctx"] == (8 * GIB - 4943257600) // (16 * 4096 * 4096)  # 13
    # 13910 positions fit; the cache allocates whole groups of 16 positions: 13904
    assert p["max_ctx_at_batch"] == (8 * GIB - 4943257600) // (4 * 16 * 4096) // 16 * 16
    assert p["verdict"]["status"] == "supported-pending-probe"


def test_mistral_v01_window(facet_bin, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(MISTRAL_V01))
    proc, p = plan(facet_bin, tmp_path, "--ctx", 8192, "--weights", "bf16")
    # the window is live (4096 < 32768): the CPU keeps a ring of 4096 rows per layer
    assert proc.returncode == 0
    assert p["verdict"]["status"] == "supported-pending-probe"
    assert p["n_params"] == 7241732096
    assert p["n_sliding_layers"] == 32 and p["n_global_layers"] == 0
    # bf16 weights: the KV cache follows in bf16, 2 * 8 kv heads * 128 * 2 B = 4096 B
    assert p["kv_cache"] == "bf16"
    assert p["kv_bytes_per_token_naive"] == 32 * 4096
    assert p["kv_bytes_per_sequence"] == 32 * 4096 * 4096  # min(8192, 4096) per layer
    assert p["kv_bytes_per_token_actual"] == 32 * 4096 * 4096 / 8192
    assert p["weights_requested"] == "bf16"
    # an f32 cache asked for: twice the bytes
    proc, p = plan(facet_bin, tmp_path, "--ctx", 8192, "--weights", "bf16", "--kv-cache", "f32")
    assert proc.returncode == 0 and p["kv_cache"] == "f32"
    assert p["kv_bytes_per_sequence"] == 32 * 4096 * 8192
    proc, _ = plan(facet_bin, tmp_path, "--kv-cache", "int4")
    assert proc.returncode == 1
    assert "--kv-cache expects auto, f32, bf16 or f16, got 'int4'" in proc.stderr


def test_gemma3_five_local_one_global(facet_bin):
    proc, p = plan(facet_bin, CONFIGS / "google__medgemma-27b-it", "--ctx", 8192, mem=1 << 40)
    assert proc.returncode == 0  # gemma3's text decoder runs on the cpu
    assert p["n_global_layers"] == 10 and p["n_sliding_layers"] == 52
    assert p["window"] == 1024
    assert p["weights"] == "bf16" and p["kv_cache"] == "bf16"  # torch_dtype bfloat16
    k = 2 * 16 * 128 * 2
    assert p["kv_bytes_per_token_naive"] == 62 * k
    assert p["kv_bytes_per_sequence"] == k * (10 * 8192 + 52 * 1024)
    groups = p["kernels"]["layers"]
    assert [(g["first"], g["last"], g["sliding"]) for g in groups[:3]] == \
        [(0, 4, True), (5, 5, False), (6, 10, True)]


def test_window_inert(facet_bin):
    proc, p = plan(facet_bin, CONFIGS / "deepseek-ai__DeepSeek-R1-Distill-Qwen-32B",
                   "--ctx", 32768, "--batch", 2, mem=1 << 40)
    assert proc.returncode == 0
    assert p["n_sliding_layers"] == 0 and p["window"] == 0
    assert p["kv_cache"] == "bf16"
    k = 2 * 8 * 128 * 2
    assert p["kv_bytes_per_sequence"] == 64 * k * 32768  # naive: the window is off
    assert p["total_bytes"] == p["weight_bytes"][p["weights"]] + 2 * 64 * k * 32768


def test_weights_format_and_kernel_path(facet_bin):
    proc, p = plan(facet_bin, CONFIGS / "Qwen__Qwen3-8B__resaved", "--ctx", 1024, "--weights", "int8")
    assert proc.returncode == 0
    assert p["weights_requested"] == "int8" and p["weights"] == "int8"
    assert p["kernels"]["matmul"] in ("int8-avx512vnni", "int8-avx2", "int8-scalar")
    env = dict(os.environ, FACET_MEM_AVAILABLE=str(GIB), FACET_CPU="scalar")
    proc = subprocess.run([str(facet_bin), "plan", str(CONFIGS / "Qwen__Qwen3-8B__resaved"),
                           "--weights", "bf16", "--json"], capture_output=True, text=True, env=env)
    p = json.loads(proc.stdout)
    assert p["kernels"]["matmul"] == "bf16-scalar"
    assert "using bf16-scalar (the closest declared path)" in p["weights_note"]
    _, p = plan(facet_bin, CONFIGS / "Qwen__Qwen3-8B__resaved", "--ctx", 1024)
    assert p["weights_requested"] == "auto" and p["weights"] == "f32"  # what run loads


def test_text_output(facet_bin):
    env = dict(os.environ, FACET_MEM_AVAILABLE=str(16 * GIB))
    proc = subprocess.run([str(facet_bin), "plan", str(CONFIGS / "meta-llama__Llama-2-7b-hf"),
                           "--ctx", "4096"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0
    # torch_dtype float16: f16 weights and an f16 KV cache, 32 * 32 * 128 * 2 * 2
    assert "per token, naive (layers x kv_heads x head_dim x 2 x 2 B): 524288 bytes" in proc.stdout
    assert ("per sequence, layer and KV head (32, head_dim 128): f16 keys "
            "[position/16][head_dim][16] and values [position][head_dim]") in proc.stdout
    assert "int8 = one f16 scale per 32 inputs" in proc.stdout


@pytest.mark.parametrize("args,needle", [
    (["--ctx", "0"], "--ctx '0' is not a positive integer"),
    (["--ctx", "99999"], "--ctx 99999 is outside 1..max_position_embeddings (4096)"),
    (["--batch", "x"], "--batch 'x'"),
    (["--weights", "q5"], "--weights 'q5' is not one of auto, f32, bf16, f16, int8, q4"),
])
def test_bad_options(facet_bin, args, needle):
    proc = subprocess.run([str(facet_bin), "plan", str(CONFIGS / "meta-llama__Llama-2-7b-hf")] + args,
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert needle in proc.stderr


def test_outside_table_without_shape(facet_bin):
    proc, _ = plan(facet_bin, REPO / "tests" / "data" / "outside" / "rwkv")
    assert proc.returncode == 2
    assert "REFUSED: model_type=rwkv" in proc.stderr


@pytest.mark.parametrize("value", ["-5", "abc", "0", "", "1e9", " 5", "18446744073709551616",
                                   str((1 << 60) + 1)])
def test_bad_mem_available(facet_bin, value):
    """FACET_MEM_AVAILABLE that is not a byte count: one error line, for plan and serve,
    never a negative read as 16 EiB or a typo silently ignored."""
    want = "facet: FACET_MEM_AVAILABLE expects a byte count in [1, 1152921504606846976], got '%s'\n" % value
    env = dict(os.environ, FACET_MEM_AVAILABLE=value)
    for cmd in (["plan", str(CONFIGS / "meta-llama__Llama-2-7b-hf")], ["serve", "--port", "0"]):
        proc = subprocess.run([str(facet_bin)] + cmd, capture_output=True, text=True, env=env, timeout=60)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", want), cmd


@pytest.mark.parametrize("args,refusal", [
    (["--kv-cache", "f16"], "REFUSED: kv_cache=f16 is not supported on vulkan (supported: f32, bf16)"),
])
def test_vulkan_refuses_what_run_refuses(facet_bin, args, refusal):
    """plan --backend vulkan says what run --backend vulkan does (engine/model.c and
    session.c refuse these before loading, exit 2): the verdict was 'supported' and the
    exit status 0 while run refused the same options."""
    proc, p = plan(facet_bin, CONFIGS / "meta-llama__Llama-3.2-1B-Instruct__resaved",
                   "--backend", "vulkan", *args)
    assert proc.returncode == 2, proc.stderr
    assert p["verdict"]["status"] == "refused"
    assert refusal in [r["text"] for r in p["verdict"]["refusals"]]


def test_vulkan_kv_cache_auto(facet_bin):
    """On vulkan an auto KV cache follows the weights as on the CPU, but f16 weights get
    bf16 (session.c: no f16 cache shader; same 2 bytes), which is not refused as an
    explicit --kv-cache f16 is. Llama-3.2-1B: 16 layers x 8 KV heads x 64 x 2 (k, v)."""
    model = CONFIGS / "meta-llama__Llama-3.2-1B-Instruct__resaved"
    for weights, kv, size in (("f32", "f32", 4), ("bf16", "bf16", 2), ("f16", "bf16", 2),
                              ("int8", "bf16", 2), ("q4", "bf16", 2)):
        _, vk = plan(facet_bin, model, "--weights", weights, "--backend", "vulkan")
        assert vk["kv_cache"] == kv
        assert vk["kv_bytes_per_token_naive"] == 16 * 8 * 64 * 2 * size
        assert not [r for r in vk["verdict"]["refusals"] if r["fact"] in ("weights", "kv_cache")]


def test_parallel_refuses_what_a_parallel_run_refuses(facet_bin):
    """plan -pp/-tp said 'fits' (exit 0) for splits a parallel run refuses after starting
    the ranks: --backend vulkan in a parallel job (engine/model.c), and tensor parallel of
    a GGUF file whose layers keep block-type matrices (engine/weights_tp.c). The bundled
    qwen3-Q4_0.gguf's layers are Q4_0, repacked into q4 panels (cut and requantized: fine);
    FACET_GGUF_BLOCKS=1 keeps them Q4_0 blocks, which a tensor rank cannot cut."""
    qwen = REPO / "tests" / "data" / "gguf" / "qwen3-Q4_0.gguf"
    proc, _ = plan(facet_bin, qwen, "--tensor-parallel", 2)
    assert proc.returncode == 0, proc.stderr
    env = dict(os.environ, FACET_MEM_AVAILABLE=str(64 * GIB), FACET_GGUF_BLOCKS="1")
    proc = subprocess.run([str(facet_bin), "plan", str(qwen), "--tensor-parallel", "2"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == ("facet: --tensor-parallel cannot cut a Q4_0 matrix (GGUF block type): "
                           "load with --weights f32, bf16, f16, int8 or q4\n")
    proc = subprocess.run([str(facet_bin), "plan", str(qwen), "--tensor-parallel", "2", "--weights",
                           "q4"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    proc, _ = plan(facet_bin, CONFIGS / "meta-llama__Llama-3.2-1B-Instruct__resaved",
                   "--pipeline-parallel", 2, "--backend", "vulkan")
    assert proc.returncode == 2
    assert ("REFUSED: backend=vulkan in a parallel job is not supported (supported: one "
            "process, the whole model)") in proc.stderr
