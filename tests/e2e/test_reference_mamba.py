"""Mamba (issue 26) against the float64 reference.

Shrunk checkpoints of the corpus's state-spaces/mamba-2.8b-hf config and of the public
state-spaces/mamba-130m-hf config (inline in tests/ref/mamba_ref.py), in F32 and BF16
files: 3 layers, hidden 64, the configs' state_size, conv_kernel and expand, an explicit
time_step_rank. Oracle: tests/ref/mamba_ref.py (transformers' MambaMixer semantics, the
recurrence run one token at a time, independently of src/engine/mixer_mamba.c). Batch and
chunk invariance bit for bit, state lifetime: tests/unit/test_engine_mamba.c.
"""

import json

import numpy as np
import pytest

import compare
import mamba_ref

N_PROMPT = 96
N_GEN = 32


def corpus_config(repo_root):
    p = repo_root / "tests" / "data" / "configs" / "state-spaces__mamba-2.8b-hf" / "config.json"
    if not p.exists():
        pytest.skip("no corpus config at %s" % p)
    return json.loads(p.read_text())


SOURCES = {"mamba-2.8b": lambda r: mamba_ref.shrink(corpus_config(r)),
           "mamba-130m": lambda r: mamba_ref.shrink(mamba_ref.MAMBA_130M),
           "mamba2-codestral": lambda r: mamba_ref.shrink2(mamba_ref.MAMBA2_CODESTRAL)}


def run_and_compare(run_facet, path, n_prompt, n_gen, tmp_path, seed=7):
    ref = mamba_ref.Reference(str(path))
    p = [int(x) for x in np.random.default_rng(seed).integers(0, ref.vocab_size, n_prompt)]
    dump = tmp_path / "logits.f32"
    proc = run_facet(["run", path, "--prompt-ids", ",".join(map(str, p)), "-n", str(n_gen),
                      "--json", "--ignore-eos", "--weights", "f32", "--no-cache",
                      "--dump-logits", dump], timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    obj = json.loads(proc.stdout)
    want = ref.generate(p, n_gen)
    rows = compare.read_logits(str(dump), ref.vocab_size)
    assert rows.shape == want["logits"].shape
    errs = compare.relative_errors(rows[:n_prompt], want["logits"][:n_prompt])
    assert errs.max() < 1e-4, "prompt position %d: relative error %.3g" % (int(errs.argmax()), errs.max())
    g = compare.greedy_agreement(obj["generated_ids"], want, 1e-3)
    assert g["mismatch"] is None, compare.describe(g)
    assert g["decisive"] >= min(8, n_gen), "only %d decisive steps" % g["decisive"]
    k = g["comparable_rows"]
    if k:
        e2 = compare.relative_errors(rows[n_prompt:n_prompt + k], want["logits"][n_prompt:n_prompt + k])
        assert e2.max() < 1e-4, "generated position %d: %.3g" % (int(e2.argmax()), e2.max())
    return errs.max()


@pytest.mark.parametrize("cell", [(s, d) for s in sorted(SOURCES) for d in ("f32", "bf16")],
                         ids=lambda c: "%s-%s" % c)
@pytest.mark.evidence(config_classes=["mamba", "mamba2"], backend="cpu", weights=["f32"],
                      oracle="float64 reference, F32 and BF16 files")
def test_mamba_matches_reference(cell, run_facet, tmp_path, repo_root):
    """Logits of a 96-token prompt within 1e-4 relative error per position, 32 greedy
    steps identical while the reference's top-2 margin exceeds 1e-3."""
    src, dtype = cell
    path = mamba_ref.write(SOURCES[src](repo_root), str(tmp_path / "ck"), dtype)
    run_and_compare(run_facet, path, N_PROMPT, N_GEN, tmp_path)


def test_mamba_long_prompt_in_chunks(run_facet, tmp_path):
    """A 600-token prompt (three forward chunks of at most 256 entries, the state carried
    between them) matches the reference at every position."""
    path = mamba_ref.write(mamba_ref.shrink(mamba_ref.MAMBA_130M), str(tmp_path / "ck"))
    run_and_compare(run_facet, path, 600, 4, tmp_path, seed=5)


def test_mamba2_long_prompt_in_chunks(run_facet, tmp_path):
    """Mamba-2: a 600-token prompt in three forward chunks matches the reference."""
    path = mamba_ref.write(mamba_ref.shrink2(mamba_ref.MAMBA2_CODESTRAL), str(tmp_path / "ck"))
    run_and_compare(run_facet, path, 600, 4, tmp_path, seed=5)


def test_mamba2_gated_norm_is_per_group(run_facet, tmp_path):
    """With n_groups = 2, facet follows the per-group gated RMSNorm (mamba_ssm, llama.cpp):
    within 1e-4 of it, and far (> 1e-3) from transformers' whole-width form, so the test
    above tells the two apart."""
    path = mamba_ref.write(mamba_ref.shrink2(mamba_ref.MAMBA2_CODESTRAL), str(tmp_path / "ck"))
    ref = mamba_ref.Reference(str(path))
    assert ref.f["G"] == 2
    p = [int(x) for x in np.random.default_rng(3).integers(0, ref.vocab_size, 24)]
    dump = tmp_path / "logits.f32"
    proc = run_facet(["run", path, "--prompt-ids", ",".join(map(str, p)), "-n", "1",
                      "--ignore-eos", "--weights", "f32", "--no-cache", "--dump-logits", dump])
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = compare.read_logits(str(dump), ref.vocab_size)
    per_group = ref.generate(p, 1)["logits"]
    whole = mamba_ref.Reference(str(path))
    whole.f["norm_groups"] = 1  # the same model, the gated norm over all channels
    whole_width = whole.generate(p, 1)["logits"]
    assert compare.relative_errors(got, per_group).max() < 1e-4
    assert compare.relative_errors(got, whole_width).max() > 1e-3


def test_plan_counts_state_per_sequence(run_facet, tmp_path):
    """facet plan on the full-size configs: no KV cache, the state per sequence by hand.
    Mamba-130m: 24 layers x 1536 channels x (3 conv + 16 state) x 4 B = 2,801,664.
    Mamba-Codestral-7B: 64 x (10,240 conv channels (8192 + 2 x 8 groups x 128) x 3 +
    8192 x 128 state) x 4 B = 276,299,776."""
    cases = [(mamba_ref.MAMBA2_CODESTRAL, 276299776), (mamba_ref.MAMBA_130M, 24 * 1536 * 19 * 4)]
    for cfg, want in cases:
        d = tmp_path / cfg["model_type"]
        d.mkdir()
        (d / "config.json").write_text(json.dumps(cfg))
        proc = run_facet(["plan", str(d), "--ctx", "4096", "--batch", "4", "--weights", "bf16"])
        assert proc.returncode == 0, proc.stderr
        assert "recurrent state: %d bytes per sequence" % want in proc.stdout + proc.stderr, proc.stdout


def test_mamba_refusals(run_facet, tmp_path):
    """Typed refusals: in/out projection biases (use_bias) are not built; a config whose
    intermediate_size is not expand * hidden_size is malformed."""
    cfg = mamba_ref.shrink(mamba_ref.MAMBA_130M)
    path = mamba_ref.write(dict(cfg, use_bias=True), str(tmp_path / "bias"))
    proc = run_facet(["conform", path])
    assert "state-space mixer=mamba with use_bias=true" in proc.stdout + proc.stderr
    path = mamba_ref.write(dict(cfg, intermediate_size=100), str(tmp_path / "inner"))
    proc = run_facet(["run", path, "--prompt-ids", "1,2", "-n", "1"])
    assert proc.returncode != 0
    assert "intermediate_size is 100" in proc.stderr and "expand * hidden_size" in proc.stderr
    # Mamba-2: heads x head_dim must be the inner width; groups must divide the heads
    cfg2 = mamba_ref.shrink2(mamba_ref.MAMBA2_CODESTRAL)
    for bad, needle in (({"head_dim": 8}, "num_heads * head_dim = expand * hidden_size"),
                        ({"n_groups": 3}, "a divisor of num_heads"),
                        ({"time_step_limit": [0.0, 10.0]}, "[0.0, inf] (no clamp)")):
        d = tmp_path / ("m2-%s" % next(iter(bad)))
        d.mkdir()
        (d / "config.json").write_text(json.dumps(dict(cfg2, **bad)))
        proc = run_facet(["conform", str(d)])
        assert proc.returncode != 0 and needle in proc.stderr, proc.stderr


def test_mamba_server(run_facet, facet_bin, tmp_path, repo_root):
    """facet serve on a Mamba checkpoint (the bundled tokenizer: vocab 512): completions,
    alone and eight at once (batched decode); a prompt that extends an earlier prompt but
    not its answer (the prefix cache cannot cut a recurrent state back: the sequence starts
    afresh, nothing cached); a continuation of prompt + answer (the state goes on: the
    cached tokens are the first sequence's); each identical to facet run's greedy text."""
    import shutil

    import server_harness

    path = mamba_ref.write(mamba_ref.shrink(mamba_ref.MAMBA_130M), str(tmp_path / "ck"))
    shutil.copy(repo_root / "models" / "stories260k" / "tokenizer.json", path)
    prompts = [[int(x) for x in np.random.default_rng(s).integers(3, 500, 12 + s)] for s in range(8)]
    prompts.append(prompts[0] + [7, 8, 9])

    def alone(p):
        proc = run_facet(["run", path, "--prompt-ids", ",".join(map(str, p)), "-n", "12",
                          "--json", "--no-cache"])
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["text"]

    proc = run_facet(["run", path, "--prompt-ids", ",".join(map(str, prompts[0])), "-n", "12",
                      "--json", "--no-cache"])
    gen0 = json.loads(proc.stdout)["generated_ids"]
    # a continuation: the first prompt, its answer and more (the state can go on)
    prompts.append(prompts[0] + gen0 + [5, 6])
    want = [alone(p) for p in prompts]
    with server_harness.Server(facet_bin, path, "--max-batch", "8") as s:
        def ask(p):
            st, r = s.post("/v1/completions", {"prompt": p, "max_tokens": 12, "temperature": 0})
            assert st == 200, r
            return r

        first = ask(prompts[0])
        import concurrent.futures as cf
        with cf.ThreadPoolExecutor(8) as ex:
            many = list(ex.map(ask, prompts[:8]))
        last = ask(prompts[8])
        texts = [r["choices"][0]["text"] for r in [first] + many + [last]]
        want_texts = [want[0]] + want[:8] + [want[8]]
        assert texts == want_texts
        assert sum(len(t) for t in texts) > 0
        # the earlier sequence's state holds its generated tokens too: nothing reused
        assert last["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0) == 0
        ask(prompts[0])
        cont = ask(prompts[9])
        assert cont["choices"][0]["text"] == want[9]
        # it went on from the state of the first answer (prompt + answer but its last token)
        assert cont["usage"]["prompt_tokens_details"]["cached_tokens"] == len(prompts[0]) + len(gen0) - 1
