"""GGUF gpt-oss files run (issue 27): facet on llama.cpp's gpt-oss layout (attn_sinks,
attention biases, post_attention_norm before the experts, ffn_gate_inp with its bias,
ffn_{gate,up,down}_exps split from gpt-oss's interleaved gate_up with their [E, width]
biases, layers windowed by llama.cpp's period-2 pattern, yarn) against llama.cpp's own
logits and greedy ids on the same files.

Oracle: tests/data/gpt_oss_gguf (SOURCE.md says how it was made): llama.cpp's logits for
the prompt positions and its 32 greedy steps, its greedy ids and top-2 margins.
F32: every row within 1e-5 relative L2 (both sides round in float32) and greedy
identical. MXFP4 experts (llama-quantize MXFP4_MOE: the experts in MXFP4, the other
matrices in Q8_0): llama.cpp rounds its activations to 8-bit blocks, so the prompt rows
must be within half of what the quantization itself moves llama.cpp's logits (its MXFP4
file against its F32 file, stored in the JSON), and greedy identical up to the first step
where llama.cpp's margin is below 0.01.
"""

import json
import pathlib

import numpy as np
import pytest

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "gpt_oss_gguf"
V = 512


def run(run_facet, name, weights, tmp_path):
    exp = json.loads((DATA / f"{name}.json").read_text())
    ref = np.fromfile(DATA / f"{name}.f32", dtype="<f4").reshape(-1, V).astype(np.float64)
    dump = tmp_path / "logits.f32"
    p = run_facet(["run", str(DATA / f"{name}.gguf"), "--prompt-ids",
                   ",".join(str(t) for t in exp["prompt_ids"]), "-n", "32", "--ignore-eos",
                   "--json", "--weights", weights, "--dump-logits", str(dump)])
    assert p.returncode == 0, p.stderr
    got = np.fromfile(dump, dtype="<f4").reshape(-1, V).astype(np.float64)
    return exp, ref, got, json.loads(p.stdout)["generated_ids"]


def rel_l2(got, ref):
    return np.linalg.norm(got - ref, axis=1) / np.linalg.norm(ref, axis=1)


def test_f32_matches_llama_cpp(run_facet, tmp_path):
    exp, ref, got, greedy = run(run_facet, "oss-F32", "f32", tmp_path)
    rel = rel_l2(got[:len(ref)], ref)
    print(f"gpt-oss F32: rel L2 per row max {rel.max():.2e} mean {rel.mean():.2e}")
    assert rel.max() <= 1e-5, (rel.max(), int(rel.argmax()))
    # llama.cpp's smallest margin is 0.0011 (step 7): facet's logits are within 1e-5
    # of its, so the order of the top two holds
    assert greedy == exp["greedy"], (greedy, exp["greedy"])


@pytest.mark.parametrize("weights", ["f32", "auto"])
def test_mxfp4_experts_match_llama_cpp(run_facet, tmp_path, weights):
    exp, ref, got, greedy = run(run_facet, "oss-MXFP4", weights, tmp_path)
    n = len(exp["prompt_ids"]) - 1
    rel = rel_l2(got[:n], ref[:n])
    tol = 0.5 * exp["llama_cpp_mxfp4_vs_f32_rel_l2_prompt_rows_max"]
    print(f"gpt-oss MXFP4 --weights {weights}: prompt rows rel L2 max {rel.max():.2e} "
          f"(tolerance {tol:.2e})")
    assert rel.max() <= tol, (rel.max(), tol)
    steps = 0
    for a, b, m in zip(greedy, exp["greedy"], exp["margins"]):
        if m < 0.01:
            break
        assert a == b, (weights, steps, a, b)
        steps += 1
    assert steps >= 10, steps  # the rule still checks something


def test_same_as_the_hugging_face_folder(run_facet, make_checkpoint, repo_root, tmp_path):
    """The GGUF mapping lands on the Hugging Face path's facts and weights: the folder the
    file was converted from (SOURCE.md: the same config and seed), with rope_scaling.
    truncate true (llama.cpp always truncates yarn's ramp; gpt-oss's config says false),
    gives bit-identical logits."""
    cfg = json.loads((repo_root / "tests" / "data" / "configs" / "openai__gpt-oss-20b" /
                      "config.json").read_text())
    del cfg["quantization_config"]
    cfg.update(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
               hidden_size=64, intermediate_size=32, vocab_size=512, num_local_experts=8,
               sliding_window=8, layer_types=cfg["layer_types"][:2], eos_token_id=2,
               pad_token_id=0, bos_token_id=1, max_position_embeddings=4096)
    cfg["rope_scaling"]["truncate"] = True
    hf = make_checkpoint(cfg, dtype="f32", seed=27)
    exp, _, gguf_logits, gguf_ids = run(run_facet, "oss-F32", "f32", tmp_path)
    dump = tmp_path / "hf.f32"
    p = run_facet(["run", str(hf), "--prompt-ids", ",".join(str(t) for t in exp["prompt_ids"]),
                   "-n", "32", "--ignore-eos", "--json", "--weights", "f32",
                   "--dump-logits", str(dump)])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["generated_ids"] == gguf_ids
    hf_logits = np.fromfile(dump, dtype="<f4").astype(np.float64).reshape(-1, V)
    assert np.array_equal(hf_logits, gguf_logits)


@pytest.mark.parametrize("old,new,refusal", [
    # a key facet does not know may change the math: refused by its name
    (b"gpt-oss.attention.sliding_window", b"gpt-oss.attention.sliding_windox",
     "REFUSED: gpt-oss.attention.sliding_windox=8 is not supported"),
    # a tensor kind outside the table is refused by name before any weight is read
    (b"blk.0.attn_sinks.weight", b"blk.0.attn_sinkz.weight",
     "REFUSED: tensor blk.0.attn_sinkz.weight"),
])
def test_unknown_names_refused(run_facet, tmp_path, old, new, refusal):
    b = bytearray((DATA / "oss-F32.gguf").read_bytes())
    i = b.index(old)
    b[i:i + len(old)] = new
    path = tmp_path / "patched.gguf"
    path.write_bytes(b)
    p = run_facet(["conform", str(path)])
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert refusal in p.stdout, p.stdout
