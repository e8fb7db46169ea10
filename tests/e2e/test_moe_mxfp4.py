"""gpt-oss's MXFP4 experts (issue 27), run natively in their 4-bit blocks.

Checkpoints: the corpus's gpt-oss-20b config, with its quantization_config (quant_method
"mxfp4"), shrunk to 4 layers, hidden 128 and intermediate 128 (whole blocks of 32), window
16; tests/ref/gen_checkpoint.py writes each expert matrix as transformers' MXFP4 pair
(NAME_blocks [E, R, C/32, 16], NAME_scales [E, R, C/32], U8; tests/ref/mxfp4.py).

Oracle: tests/ref/reference.py, which dequantizes the pair independently (mxfp4.dequant_hf,
transformers' convert_moe_packed_tensors semantics) and, with expert_act_round "q8_0",
rounds each expert matmul's input rows to Q8_0 blocks as the int8 dot on 4-bit blocks does
(facet, llama.cpp). Bound: compare.rounding_flip_agreement (float32 noise until float32 and
float64 round one input to different Q8_0 steps; every position within 1e-2, mean 5e-3),
and 32 greedy steps identical while the reference's margin exceeds 0.05. Against exact
arithmetic (float64 activations) the same run is only within the int8-activation noise,
which a top-4 of 32 router magnifies (expert flips): checked loosely (gain 1 below). The kernels
themselves: tests/unit/test_quant_mxfp4.c.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import compare
import gen_checkpoint

N_PROMPT = 96
N_GEN = 32
SHRINK = {"num_hidden_layers": 4, "sliding_window": 16, "hidden_size": 128,
          "intermediate_size": 128}
# Projection gain 1 (gen_checkpoint.init_tensor; the default 2 makes attention sharp): with
# gain 2 this shape is chaotic, one Q8_0 rounding flip moving every later position by ~1e-2
# and 8-bit inputs moving logits by 0.1-0.4 from exact arithmetic, which would hide a wrong
# block far less than it hides the flips; with gain 1 (bf16 file), 97% of positions agree
# to 1e-5 (measured: largest 2.2e-3, at the flips).
GAIN = 1.0


def gpt_oss_mxfp4(repo_root):
    cfg = gen_checkpoint.load_config(str(repo_root / "tests" / "data" / "configs" / "openai__gpt-oss-20b"))
    assert cfg["quantization_config"]["quant_method"] == "mxfp4"
    return cfg


def run(run_facet, path, p, n_gen, tmp_path, extra=()):
    dump = tmp_path / "logits.f32"
    proc = run_facet(["run", str(path), "--prompt-ids", ",".join(map(str, p)), "-n", str(n_gen),
                      "--json", "--ignore-eos", "--weights", "f32", "--kv-cache", "f32",
                      "--no-cache", "--dump-logits", dump] + list(extra), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout), dump


@pytest.mark.parametrize("dtype", ["bf16"])
@pytest.mark.evidence(config_classes=["gpt_oss"], backend="cpu", weights=["f32"],
                      oracle="float64 reference on the dequantized MXFP4 experts, Q8_0 inputs")
def test_mxfp4_experts_match_reference(dtype, make_checkpoint, reference_for, run_facet, tmp_path,
                                       repo_root):
    path = make_checkpoint(gpt_oss_mxfp4(repo_root), dtype=dtype, shrink=SHRINK, gain=GAIN)
    names = set(json.loads((path / "model.safetensors").read_bytes()[8:8 + int.from_bytes(
        (path / "model.safetensors").read_bytes()[:8], "little")]))
    assert "model.layers.0.mlp.experts.gate_up_proj_blocks" in names
    assert "model.layers.0.mlp.experts.gate_up_proj" not in names
    ref = reference_for(path)
    f = ref.facts
    assert f.num_experts >= 8 and f.top_k >= 2
    p = [int(x) for x in np.random.default_rng(7).integers(0, f.vocab_size, N_PROMPT)]
    got, dump = run(run_facet, path, p, N_GEN, tmp_path)
    rows = compare.read_logits(str(dump), f.vocab_size)

    ref.expert_act_round = "q8_0"
    want = ref.generate(p, N_GEN)
    errs = compare.relative_errors(rows[:N_PROMPT], want["logits"][:N_PROMPT])
    bad = compare.rounding_flip_agreement(errs)
    assert bad is None, bad
    g = compare.greedy_agreement(got["generated_ids"], want, 1e-2)
    assert g["mismatch"] is None, compare.describe(g)
    assert g["decisive"] >= 8, compare.describe(g)

    ref.expert_act_round = None  # exact arithmetic on the same 4-bit weights
    exact = ref.logits(p)
    e2 = compare.relative_errors(rows[:N_PROMPT], exact)
    assert np.median(e2) < 0.05 and e2.max() < 0.3, (np.median(e2), e2.max())


def test_mxfp4_plan_counts_the_blocks(run_facet, repo_root, tmp_path):
    """facet plan counts each expert matrix at 17 bytes per 32 weights in every run-time
    format: the plan of the same config without its quantization_config is larger by
    exactly layers x experts x 3 matrices x H x I x (bytes per weight - 17/32)."""
    cfg = gen_checkpoint.shrink_config(gpt_oss_mxfp4(repo_root), **SHRINK)
    plain = dict(cfg)
    plain.pop("quantization_config")
    plans = []
    for name, c in (("mx", cfg), ("plain", plain)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(c))
        proc = run_facet(["plan", str(tmp_path / name), "--json"])
        assert proc.returncode == 0, proc.stderr
        plans.append(json.loads(proc.stdout))
    E, H, I, L = (cfg["num_local_experts"], cfg["hidden_size"], cfg["intermediate_size"],
                  cfg["num_hidden_layers"])
    n = L * E * 3 * H * I
    mx_bytes = n // 32 * 17
    # bytes of one expert matrix in facet's packed formats (panels of 16 rows, int8 and q4
    # with an f16 scale per 32): f32 4, bf16 2, int8 34/32, q4 18/32 bytes per weight
    per = {"f32": 4 * n, "bf16": 2 * n, "int8": n // 32 * 34, "q4": n // 32 * 18}
    for fmt, b in per.items():
        assert plans[1]["weight_bytes"][fmt] - plans[0]["weight_bytes"][fmt] == b - mx_bytes, fmt
    assert plans[0]["n_params"] == plans[1]["n_params"]


def test_mxfp4_refusals(make_checkpoint, run_facet, repo_root, tmp_path):
    """A blocks tensor of the wrong shape is a typed error naming it and the shape wanted."""
    import shutil
    import safetensors_io
    path = make_checkpoint(gpt_oss_mxfp4(repo_root), dtype="bf16", shrink=SHRINK, gain=GAIN)
    bad = tmp_path / "bad"
    shutil.copytree(path, bad)
    header, meta, start = safetensors_io.read_header(str(bad / "model.safetensors"))
    name = "model.layers.1.mlp.experts.down_proj_scales"
    shape = header[name]["shape"]
    entries, data = [], {}
    for n, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        arr = safetensors_io.read_tensor(str(bad / "model.safetensors"), info, start)
        if n == name:  # one block fewer per row: the same bytes, a different shape
            arr = arr.reshape(-1)[: int(np.prod(shape[:-1])) * (shape[-1] - 1)].reshape(
                shape[:-1] + [shape[-1] - 1])
        entries.append((n, info["dtype"], arr.shape))
        data[n] = arr
    safetensors_io.write_file(str(bad / "model.safetensors"), entries, lambda n: data[n], meta)
    proc = run_facet(["run", str(bad), "--prompt-ids", "1,2,3", "-n", "1", "--no-cache"])
    assert proc.returncode != 0
    assert ("tensor '%s' is U8 [%s], expected U8 [%s]" % (
        name, ", ".join(map(str, shape[:-1] + [shape[-1] - 1])), ", ".join(map(str, shape)))) \
        in proc.stderr, proc.stderr


def test_mxfp4_data_tracks_llama_cpp_blocks(facet_shared):
    """tests/data/quant_mxfp4 (what test_quant_mxfp4.c reads) is mxfp4.py's dequantization
    of its blocks, and the blocks llama-quantize wrote track the corpus F32 originals of the
    same rows (a wrong element order or scale would not: correlation 0.99, relative RMS
    0.11 measured). The corpus check skips loudly without ../shared."""
    import ggml_kquants
    import mxfp4
    data = Path(__file__).resolve().parents[1] / "data" / "quant_mxfp4"
    raw = (data / "MXFP4.bin").read_bytes()
    want = np.fromfile(data / "MXFP4.f32", dtype="<f4")
    assert np.array_equal(mxfp4.dequant_gguf(raw).astype(np.float32), want)
    # the Hugging Face form holds the same values once repacked (the loader's mapping)
    b, s = mxfp4.quantize_hf(np.random.default_rng(3).standard_normal((2, 5, 64)))
    assert np.array_equal(mxfp4.dequant_gguf(mxfp4.hf_to_gguf_blocks(b, s)),
                          mxfp4.dequant_hf(b, s).reshape(-1))
    f32 = facet_shared / "corpus" / "gguf" / "models" / "qwen3moe-F32.gguf"
    if not f32.is_file():
        pytest.skip("SKIPPED LOUDLY: %s is absent: the MXFP4 blocks were NOT checked against "
                    "their originals" % f32)
    orig, ttype = ggml_kquants.gguf_tensor_bytes(f32, mxfp4.TENSOR, mxfp4.N_CORPUS * 32 * 4)
    assert ttype == 0
    o = np.frombuffer(orig, dtype="<f4").astype(np.float64)
    w = want[: mxfp4.N_CORPUS * 32].astype(np.float64)
    assert np.corrcoef(w, o)[0, 1] > 0.99
    assert np.sqrt(np.mean((w - o) ** 2) / np.mean(o ** 2)) < 0.15
