"""Issue 24's acceptance, swept: every family and config variant the reference tests build
(the cell lists of tests/e2e/test_reference*.py, imported, and the corpus configs under
tests/data/configs), shrunk hard, is put to the vulkan column: `facet conform DIR
--backend vulkan --json` on the shrunk config.json alone (the table), then on the written
checkpoint (the tensor probe's facts), and the run itself (the device's limits). Each
supported one runs
on vulkan and on the CPU exact path (`--weights f32 --kv-cache f32`): greedy ids
identical while the CPU's top-2 margin exceeds 1e-2, logits within 1e-3
(test_vulkan.compare_runs). Each refused one is skipped with its REFUSED line(s) as the
reason, so `pytest -rs` lists what the vulkan column still lacks; a family that joins
the column later is run here without a change to this file.

Cheap by construction (lavapipe, LP_NUM_THREADS=2): 2 layers (4 where the class's layer
pattern needs them), head_dim 32, vocab 512 (the reference tests' shrink), windows of 8
under a 16-token prompt (so they bind), 8 generated tokens; and a cell whose facts, less
its sizes and names, equal an earlier cell's is skipped as a duplicate ("same facts as
X"): the kernels see the same switches. The key (`facts_key`) keeps what selects a code
path: head grouping, head_dim, odd head counts, biases, norms, windows and their layer
pattern, softcaps, multipliers (as "not 1"), rope type and partial rotary, experts,
fused projections, a tied head. Measured: 37 to 90 s for the file (59 to 66 runs of
124 cells) on 2 cores shared with other builds (load 6 to 9).
"""
import json
import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

import compare
import gen_checkpoint
import hf_facts
import falcon_h1_ref
import hybrid_ref
import mamba_ref
import mla_ref
import qwen3next_ref
import test_reference
import test_reference_baichuan
import test_reference_classic
import test_reference_cohere2
import test_reference_falcon_h1
import test_reference_families
import test_reference_hybrid
import test_reference_moe
import test_reference_qwen3next
from test_vulkan import compare_runs, need_vulkan  # noqa: F401  (need_vulkan: autouse)

REPO = pathlib.Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "configs"
os.environ.setdefault("LP_NUM_THREADS", "2")
N_PROMPT, N_GEN = 16, 8
WINDOW = 8  # under the 16-token prompt: the window binds in prefill and slides in decode
EXACT = ["--weights", "f32", "--kv-cache", "f32", "--no-cache"]


# ------------------------------------------------------------------ the cells

def _gc_writer(**kw):
    """gen_checkpoint's writer (the reference tests' make_checkpoint without the shrink,
    which the cell has done)."""
    return lambda cfg, out: gen_checkpoint.write_checkpoint(cfg, out, dtype="f32", **kw)


def _gc(src, shrink, **kw):
    """A cell of gen_checkpoint's shrink: the reference test's own shrink, a window of
    WINDOW where it sets one."""
    shrink = dict(shrink)
    if shrink.get("sliding_window"):
        shrink["sliding_window"] = WINDOW
    return (lambda: gen_checkpoint.shrink_config(gen_checkpoint.text_only_config(src), **shrink),
            _gc_writer(**kw))


def _own(shrink, write):
    """A cell of a reference module with its own shrink and writer (state spaces, latent
    attention, hybrids)."""
    return (shrink, lambda cfg, out: write(cfg, out, "f32"))


def _corpus_cell(path):
    cfg = gen_checkpoint.load_config(str(path))
    mt = hf_facts.text_config(cfg).get("model_type")
    if mt == "mamba":
        return _own(lambda: mamba_ref.shrink(cfg), mamba_ref.write)
    if mt == "mamba2":
        return _own(lambda: mamba_ref.shrink2(cfg), mamba_ref.write)
    if mt in ("deepseek_v2", "deepseek_v3", "kimi_k2"):
        return _own(lambda: mla_ref.shrink(cfg, experts=32, first_k_dense_replace=1), mla_ref.write)
    shrink, kw = {}, {}
    if (cfg.get("quantization_config") or {}).get("quant_method") == "mxfp4":
        shrink.update(hidden_size=128, intermediate_size=128)  # whole 4-bit blocks
        kw["gain"] = 1.0
    if hf_facts.text_config(cfg).get("sliding_window"):
        shrink["sliding_window"] = WINDOW
    return _gc(str(path), shrink, **kw)


def cells():
    """name -> (config(): the shrunk config dict, write(cfg, out_dir) -> checkpoint dir),
    in the order duplicates are judged (the first of equal facts runs)."""
    out = {}
    for fam in sorted(test_reference.CONFIGS):
        out["ref:" + fam] = _gc(test_reference.config_path(fam), test_reference.SHRINK)
    for fam, (src, shrink) in sorted(test_reference_families.FAMILIES.items()):
        out["families:" + fam] = _gc(src, shrink)
    for name, (src, shrink) in sorted(test_reference_classic.CLASSES.items()):
        out["classic:" + name] = _gc(src, shrink)
    for name, (src, shrink) in sorted(test_reference_baichuan.CELLS.items()):
        out["alibi:" + name] = _gc(src, shrink)
    for name, (src, shrink) in sorted(test_reference_cohere2.CASES.items()):
        out["cohere2:" + name] = _gc(src, shrink)
    for name, (src, shrink, layout) in sorted(test_reference_moe.CELLS.items()):
        out["moe:" + name] = _gc(src(REPO), shrink, experts_layout=layout)
    for v, over in sorted(test_reference_hybrid.VARIANTS.items()):
        out["granite-hybrid:" + v] = _own(
            lambda over=over: hybrid_ref.shrink(hybrid_ref.GRANITE_4_H_TINY, **over), hybrid_ref.write)
    for v, over in sorted(test_reference_hybrid.LFM2_VARIANTS.items()):
        out["lfm2:" + v] = _own(
            lambda over=over: hybrid_ref.lfm2_shrink(hybrid_ref.LFM2_1_2B, **over), hybrid_ref.lfm2_write)
    for v, over in sorted(test_reference_hybrid.NEMOTRON_VARIANTS.items()):
        out["nemotron-h:" + v] = _own(
            lambda over=over: hybrid_ref.nemotron_shrink(hybrid_ref.NEMOTRON_H_8B, **over),
            hybrid_ref.nemotron_write)
    out["nemotron-h:nano"] = _own(
        lambda: hybrid_ref.nemotron_shrink(hybrid_ref.NEMOTRON_3_NANO, pattern=test_reference_hybrid.NANO_PATTERN,
                                           n_routed_experts=16, num_experts_per_tok=4),
        hybrid_ref.nemotron_write)
    for v, over in sorted(test_reference_hybrid.BAMBA_VARIANTS.items()):
        out["bamba:" + v] = _own(
            lambda over=over: hybrid_ref.bamba_shrink(hybrid_ref.BAMBA_9B, **over), hybrid_ref.bamba_write)
    for v, over in (("v0.1", {}), ("dense", {"num_experts": 1})):
        out["jamba:" + v] = _own(
            lambda over=over: hybrid_ref.jamba_shrink(hybrid_ref.JAMBA_V0_1, **over), hybrid_ref.jamba_write)
    for v, over in sorted(test_reference_falcon_h1.VARIANTS.items()):
        out["falcon-h1:" + v] = _own(
            lambda over=over: falcon_h1_ref.shrink(falcon_h1_ref.FALCON_H1_0_5B, **over), falcon_h1_ref.write)
    for v, over in sorted(test_reference_qwen3next.VARIANTS.items()):
        out["qwen3-next:" + v] = _own(
            lambda over=over: qwen3next_ref.shrink(qwen3next_ref.QWEN3_NEXT_80B_A3B, **over),
            qwen3next_ref.write)
    out["mamba:130m"] = _own(lambda: mamba_ref.shrink(mamba_ref.MAMBA_130M), mamba_ref.write)
    out["mamba2:codestral"] = _own(lambda: mamba_ref.shrink2(mamba_ref.MAMBA2_CODESTRAL), mamba_ref.write)
    for name, cfg in (("deepseek-v2", mla_ref.DEEPSEEK_V2), ("deepseek-v2-lite", mla_ref.DEEPSEEK_V2_LITE)):
        out["mla:" + name] = _own(lambda cfg=cfg: mla_ref.shrink(cfg), mla_ref.write)
    out["mla:kimi-k2"] = _own(lambda: mla_ref.shrink(mla_ref.KIMI_K2, experts=24), mla_ref.write)
    for d in sorted(CORPUS.iterdir()):
        if (d / "config.json").is_file():
            out["corpus:" + d.name] = _corpus_cell(d)
    return out


CELLS = cells()

# facts that only size or name the model: equal facts but for these run the same kernels
SIZES = {"model_type", "architecture", "family_known", "hidden_size", "intermediate_size",
         "num_hidden_layers", "vocab_size", "max_position_embeddings", "bos_token_id",
         "eos_token_id", "notes", "probed", "moe_intermediate_size", "rope_theta",
         "rope_local_base_freq", "rms_norm_eps", "shared_expert_intermediate_size",
         "num_attention_heads", "num_key_value_heads", "num_experts", "num_experts_per_tok",
         "n_sparse_layers", "n_sliding_layers", "sliding_window", "attn_scale", "layer_sliding",
         "rope_factor", "embedding_multiplier", "residual_multiplier", "logits_scaling",
         "attn_logit_softcapping", "final_logit_softcapping", "partial_rotary_factor",
         "head_dim_explicit", "window_inert", "weight_bytes"}
NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?")


def _pow2(n):
    return n > 0 and n & (n - 1) == 0


def facts_key(f, text):
    """What of conform's facts (the JSON object `f` and the facts:/plan: lines of its
    `text`) selects a code path: the JSON's switches, head grouping as MHA / a power-of-two
    group / an odd group, one KV head, a head count not a power of two (ALiBi's
    interleaved slopes, odd tilings), head_dim; windows and their layer pattern; softcaps
    and multipliers as present or not; and the words of the facts and plan lines with the
    numbers and the class's names taken out (no_rope layers, interleaved or partial
    rotary, norms and activations the JSON does not carry)."""
    key = {k: v for k, v in f.items() if k not in SIZES}
    heads, kv = f.get("num_attention_heads", 0), f.get("num_key_value_heads", 0)
    group = heads // kv if kv else 0
    key["heads"] = ("mha" if group == 1 else "pow2" if _pow2(group) else "odd", kv == 1,
                    _pow2(heads))
    sl = [bool(f.get("sliding_window")) and x for x in f.get("layer_sliding") or []]
    key["window"] = (any(sl), all(sl))
    for k in ("embedding_multiplier", "residual_multiplier", "logits_scaling"):
        key[k] = f.get(k, 1.0) != 1.0
    for k in ("attn_logit_softcapping", "final_logit_softcapping"):
        key[k] = bool(f.get(k))
    key["partial_rotary"] = f.get("partial_rotary_factor", 1.0) != 1.0
    key["experts"] = (f.get("num_experts", 0) > 0,
                      f.get("n_sparse_layers", 0) < f.get("num_hidden_layers", 0))
    lines = []
    for line in text.splitlines():
        if line.startswith("facts:"):
            line = re.sub(r"^facts: \S+ \(\S+\):", "facts:", line)
        elif not line.startswith("plan:"):
            continue
        line = re.sub(r"window=\S+ \(inert\)", "window=none", line)
        line = re.sub(r" eos=\S+|\(derived\)", "", line)
        lines.append(re.sub(r"#(,#)*( (B|KiB|MiB|GiB)\b)?", "#", NUMBER.sub("#", line)))
    key["text"] = lines
    return json.dumps(key, sort_keys=True, default=str)


# the loader finds no driver: conform gives the table's vulkan verdict without opening the
# device (0.03 s a call, not lavapipe's 0.2 s)
NO_DEVICE = {"VK_DRIVER_FILES": "/nonexistent.json", "VK_ICD_FILENAMES": "/nonexistent.json"}


def _conform(facet_bin, path, js):
    env = dict(os.environ, **NO_DEVICE)
    p = subprocess.run([str(facet_bin), "conform", str(path), "--backend", "vulkan", "--json",
                        str(js)], capture_output=True, text=True, timeout=60, env=env)
    if not js.is_file():  # the config itself refused (a typed error): say so
        return None, ["conform exit %d: %s" % (p.returncode, p.stderr.strip()[-300:])], p.stdout
    obj = json.loads(js.read_text())
    refusals = [r["text"] for r in obj["verdict"].get("refusals", [])]
    if obj["verdict"].get("status") == "refused" and not refusals:
        refusals = ["refused: %s" % obj["verdict"]]
    return obj, refusals, p.stdout


@pytest.fixture(scope="module")
def verdicts(facet_bin, tmp_path_factory):
    """name -> (checkpoint dir or None, why it is not run or None, conform's facts of the
    checkpoint or None): `facet conform
    --backend vulkan --json` on each shrunk config.json alone, then, where the column
    admits it, on the written checkpoint (the tensor probe's facts: fused or per-head
    fused projections, biases, a tied head), both without opening the device (the run
    judges the device's limits: a refusal there skips the cell with its line); a cell
    whose facts_key equals an earlier cell's is not run again."""
    root = tmp_path_factory.mktemp("sweep")
    out, seen = {}, {}
    for i, (name, (config, write)) in enumerate(CELLS.items()):
        cfg = config()
        d = root / ("c%03d" % i)
        d.mkdir()
        (d / "config.json").write_text(json.dumps(cfg))
        obj, refusals, text = _conform(facet_bin, d, d / "conform.json")
        if refusals:
            out[name] = (None, "%s refused on vulkan: %s" % (name, " | ".join(refusals)), None)
            continue
        path = write(cfg, str(d / "ck"))
        obj, refusals, text = _conform(facet_bin, path, d / "probed.json")
        if refusals:
            out[name] = (None, "%s refused on vulkan once its tensors were probed: %s"
                         % (name, " | ".join(refusals)), None)
            continue
        key = facts_key(obj["facts"], text)
        out[name] = (path, "%s: same facts as %s" % (name, seen[key]) if key in seen else None,
                     obj["facts"])
        seen.setdefault(key, name)
    return out


def generate(facet_bin, path, prompt, n, vocab, dump, extra=()):
    """conftest's facet_generate, the logits rows read with the vocab_size facet read
    (ChatGLM's config names it padded_vocab_size)."""
    args = [str(facet_bin), "run", str(path), "--prompt-ids", ",".join(map(str, prompt)), "-n",
            str(n), "--json", "--ignore-eos", "--dump-logits", str(dump)] + EXACT + list(extra)
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, "%s exited %d: %s" % (" ".join(args), p.returncode, p.stderr[-2000:])
    return {"json": json.loads(p.stdout), "logits": compare.read_logits(str(dump), vocab)}


# the config classes (model_type) of cells that ran here: docs/SUPPORT.md's Validated
# evidence on vulkan (test_validated_classes_ran keeps the list honest)
VALIDATED_CLASSES = ["llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi3",
                     "olmo2", "smollm3", "granite", "gpt_neox", "phi", "gpt2", "olmo", "starcoder2",
                     "stablelm", "stablelm_epoch", "falcon", "bloom", "mpt", "gptj", "cohere",
                     "cohere2", "internlm2", "minicpm", "qwen", "chatglm", "exaone", "baichuan",
                     "mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "granitemoe", "granitemoeshared",
                     "gpt_oss"]


@pytest.mark.parametrize("name", list(CELLS))
@pytest.mark.evidence(config_classes=VALIDATED_CLASSES, backend="vulkan", weights=["f32"],
                      oracle="the CPU exact path, on Mesa lavapipe only")
def test_family_on_vulkan_matches_cpu_exact_path(name, verdicts, facet_bin, tmp_path):
    path, why, facts = verdicts[name]
    if why:
        pytest.skip(why)
    vocab = facts["vocab_size"]
    seed = sum(map(ord, name))
    prompt = [int(x) for x in np.random.default_rng(seed).integers(3, vocab, N_PROMPT)]
    try:
        vk = generate(facet_bin, path, prompt, N_GEN, vocab, tmp_path / "vk.f32", ["--backend", "vulkan"])
    except AssertionError as e:  # the device's limits, judged when the device is opened
        refused = [line for line in str(e).splitlines() if "REFUSED:" in line]
        if " exited 2: " in str(e) and refused:
            pytest.skip("%s refused on this vulkan device: %s" % (name, " | ".join(refused)))
        raise
    cpu = generate(facet_bin, path, prompt, N_GEN, vocab, tmp_path / "cpu.f32")
    assert vk["json"]["prompt_ids"] == prompt
    rows = compare_runs(cpu, vk, N_PROMPT, N_GEN)
    assert rows >= N_PROMPT, rows


def test_validated_classes_ran(verdicts):
    """Each class the evidence marker above names has a cell that runs (neither refused
    nor a duplicate): a class the vulkan column stops serving fails here rather than
    staying Validated in docs/SUPPORT.md."""
    ran = {facts["model_type"] for path, why, facts in verdicts.values() if not why}
    assert set(VALIDATED_CLASSES) <= ran, sorted(set(VALIDATED_CLASSES) - ran)
