"""facet serve on hybrid recurrent + attention checkpoints (issue 26): shrunk Granite
4.0-H, LFM2, Jamba (Mamba-1 layers, MoE routed per sequence in the batch) and
Nemotron-3-Nano (Mamba-2, attention, MLP and MoE layers with ungated experts) checkpoints (tests/ref/hybrid_ref.py), Falcon-H1 (attention and Mamba-2 in
parallel on every layer: tests/ref/falcon_h1_ref.py) and Qwen3-Next (gated delta rule,
gated attention, MoE with a shared expert: tests/ref/qwen3next_ref.py) with the bundled tokenizer (vocab
512). Oracle: facet run alone on each prompt (the float64 reference checks facet run in
test_reference_hybrid.py)."""

import json

import numpy as np
import pytest

import falcon_h1_ref
import hybrid_ref
import qwen3next_ref


def write(tmp_path, family):
    if family == "granite":
        cfg = hybrid_ref.shrink(hybrid_ref.GRANITE_4_H_TINY)
        return hybrid_ref.write(cfg, str(tmp_path / "ck"))
    if family == "nemotron_moe":  # the cell of test_reference_hybrid's MoE test
        cfg = hybrid_ref.nemotron_shrink(hybrid_ref.NEMOTRON_3_NANO, pattern="MEM*E-",
                                         n_routed_experts=16, num_experts_per_tok=4)
        return hybrid_ref.nemotron_write(cfg, str(tmp_path / "ck"))
    if family == "falcon_h1":  # attention and Mamba-2 in parallel on every layer
        return falcon_h1_ref.write(falcon_h1_ref.shrink(falcon_h1_ref.FALCON_H1_0_5B),
                                   str(tmp_path / "ck"))
    if family == "qwen3_next":  # gated delta rule + gated attention, MoE + shared expert
        return qwen3next_ref.write(qwen3next_ref.shrink(qwen3next_ref.QWEN3_NEXT_80B_A3B),
                                   str(tmp_path / "ck"))
    if family == "jamba":
        return hybrid_ref.jamba_write(hybrid_ref.jamba_shrink(hybrid_ref.JAMBA_V0_1),
                                      str(tmp_path / "ck"))
    cfg = hybrid_ref.lfm2_shrink(hybrid_ref.LFM2_1_2B)
    return hybrid_ref.lfm2_write(cfg, str(tmp_path / "ck"))


@pytest.mark.parametrize("family", ["granite", "lfm2", "jamba", "nemotron_moe", "falcon_h1",
                                    "qwen3_next"])
def test_hybrid_server_batches_like_alone(family, run_facet, facet_bin, tmp_path, repo_root):
    """facet serve on a hybrid (the bundled tokenizer: vocab 512): eight completions at
    once (batched decode over attention KV and recurrent state together) each identical
    to facet run's greedy text alone, and a continuation of prompt + answer that goes on
    from the earlier sequence's state and KV (its cached tokens counted)."""
    import concurrent.futures as cf
    import shutil

    import server_harness

    path = write(tmp_path, family)
    shutil.copy(repo_root / "models" / "stories260k" / "tokenizer.json", path)
    prompts = [[int(x) for x in np.random.default_rng(s).integers(3, 500, 10 + s)] for s in range(8)]

    def alone(p):
        proc = run_facet(["run", path, "--prompt-ids", ",".join(map(str, p)), "-n", "10",
                          "--json", "--no-cache"])
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    first = alone(prompts[0])
    cont = prompts[0] + first["generated_ids"] + [5, 6]
    want = [alone(p)["text"] for p in prompts] + [alone(cont)["text"]]
    with server_harness.Server(facet_bin, path, "--max-batch", "8") as s:
        def ask(p):
            st, r = s.post("/v1/completions", {"prompt": p, "max_tokens": 10, "temperature": 0})
            assert st == 200, r
            return r

        with cf.ThreadPoolExecutor(8) as ex:
            many = list(ex.map(ask, prompts))
        assert [r["choices"][0]["text"] for r in many] == want[:8]
        ask(prompts[0])
        r = ask(cont)
        assert r["choices"][0]["text"] == want[8]
        assert r["usage"]["prompt_tokens_details"]["cached_tokens"] == \
            len(prompts[0]) + len(first["generated_ids"]) - 1


def test_qwen3next_server_budget_counts_the_state(facet_bin, tmp_path, repo_root):
    """facet serve's startup budget on the shrunk Qwen3-Next holds the delta-rule state of
    every batch slot beside the weights, by hand: 3 delta-rule layers x ((2 x 2 x 16 + 4 x
    16) conv channels x 3 + 4 value heads x 16 x 16) x 4 B = 16,896 bytes a sequence, x 4
    slots = 67,584 bytes (66.00 KiB)."""
    import os
    import shutil
    import subprocess

    path = write(tmp_path, "qwen3_next")
    shutil.copy(repo_root / "models" / "stories260k" / "tokenizer.json", path)
    p = subprocess.Popen([str(facet_bin), "serve", str(path), "--port", "0", "--max-batch", "4"],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                         env=dict(os.environ, FACET_MEM_AVAILABLE=str(1 << 30)))
    lines = []
    try:
        for line in p.stderr:
            lines.append(line)
            if "listening on" in line:
                break
    finally:
        p.kill()
        p.wait()
    text = "".join(lines)
    budget = [ln for ln in lines if "KV budget" in ln and "listening" not in ln]
    assert budget, text
    assert "recurrent state 66.00 KiB (4 sequences)" in budget[0], text
