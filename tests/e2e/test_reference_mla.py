"""Multi-head latent attention and DeepSeek's routing (issue 25) against the float64
reference.

Shrunk checkpoints (hidden 64, 4 heads, latent 32, rope 8, 16-32 experts, 3 layers) of
DeepSeek-V3 (the corpus config: noaux_tc sigmoid routing with e_score_correction_bias over
8 groups, a dense first layer, a shared expert, yarn with mscale_all_dim), DeepSeek-V2
(q_lora_rank, group_limited_greedy, routed_scaling_factor 16) and DeepSeek-V2-Lite (no
q_lora_rank: a plain q_proj, greedy routing, 2 shared experts) and Kimi K2 (model_type
kimi_k2, DeepSeek-V3's class: noaux_tc in one group, routed_scaling_factor 2.827, yarn
factor 32 with beta_fast 1 over rope_theta 50000), inline in tests/ref/mla_ref.py. Oracle: tests/ref/mla_ref.py (transformers' DeepseekV2/V3 semantics
with DeepSeek's softmax scale, attention in the plain expanded form, one token at a time),
independent of src/engine/mixer_mla.c, which runs the absorbed form over a latent cache.
"""

import base64
import json
import os

import numpy as np
import pytest

import compare
import mla_ref

N_PROMPT = 64
N_GEN = 32


def v3_config(repo_root):
    p = repo_root / "tests" / "data" / "configs" / "deepseek-ai__DeepSeek-V3" / "config.json"
    if not p.exists():
        pytest.skip("no corpus config at %s" % p)
    return mla_ref.shrink(json.loads(p.read_text()), experts=32, first_k_dense_replace=1)


SOURCES = {"deepseek-v3": v3_config,
           "deepseek-v2": lambda r: mla_ref.shrink(mla_ref.DEEPSEEK_V2),
           "deepseek-v2-lite": lambda r: mla_ref.shrink(mla_ref.DEEPSEEK_V2_LITE),
           # Kimi K2 (model_type kimi_k2: DeepSeek-V3's class): one expert group, one
           # dense layer, scaling 2.827, yarn factor 32 / beta 1 over rope_theta 50000
           "kimi-k2": lambda r: mla_ref.shrink(mla_ref.KIMI_K2, experts=24)}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory, repo_root):
    out = {}
    for name, src in SOURCES.items():
        for dtype in ("f32", "bf16"):
            d = tmp_path_factory.mktemp("%s-%s" % (name, dtype))
            out[name, dtype] = mla_ref.write(src(repo_root), str(d), dtype)
    # DeepSeek-V3's FP8 release layout: e4m3 matrices with 16 x 16 block scales (many
    # blocks, partial ones at the 40-row kv_a_proj), the rest bf16
    d = tmp_path_factory.mktemp("deepseek-v3-fp8")
    out["deepseek-v3", "fp8"] = mla_ref.write(v3_config(repo_root), str(d), "fp8")
    return out


def prompt(seed, n=N_PROMPT):
    return [int(x) for x in np.random.default_rng(seed).integers(0, 510, n)]


def run(run_facet, path, p, n_gen, tmp_path, extra):
    dump = tmp_path / "logits.f32"
    proc = run_facet(["run", path, "--prompt-ids", ",".join(map(str, p)), "-n", str(n_gen),
                      "--json", "--ignore-eos", "--no-cache", "--dump-logits", dump] + extra,
                     timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout), compare.read_logits(str(dump), 512)


@pytest.mark.parametrize("cell", [(n, "f32") for n in sorted(SOURCES)] + [("deepseek-v3", "fp8")],
                         ids=lambda c: "%s-%s" % c)
@pytest.mark.evidence(config_classes=["deepseek_v2", "deepseek_v3", "kimi_k2"], backend="cpu", weights=["f32"],
                      oracle="float64 reference (tests/ref/mla_ref.py), F32 and FP8-block files")
def test_mla_exact_matches_reference(cell, checkpoints, run_facet, tmp_path):
    """F32 weights and cache: logits of the prompt within 1e-4 relative of the expanded
    float64 reference, 32 greedy steps identical where the top-2 margin exceeds 1e-3. The
    FP8 file's e4m3 blocks are widened at load (q x its block's scale_inv), as the
    reference reads them."""
    path = checkpoints[cell]
    ref = mla_ref.Reference(path)
    p = prompt(7)
    obj, rows = run(run_facet, path, p, N_GEN, tmp_path, ["--weights", "f32", "--kv-cache", "f32"])
    want = ref.generate(p, N_GEN)
    assert rows.shape == want["logits"].shape
    errs = compare.relative_errors(rows[:N_PROMPT], want["logits"][:N_PROMPT])
    assert errs.max() < 1e-4, "prompt position %d: %.3g" % (int(errs.argmax()), errs.max())
    g = compare.greedy_agreement(obj["generated_ids"], want, 1e-3)
    assert g["mismatch"] is None, compare.describe(g)
    assert g["decisive"] >= 16, compare.describe(g)
    k = g["comparable_rows"]
    if k:
        e2 = compare.relative_errors(rows[N_PROMPT:N_PROMPT + k], want["logits"][N_PROMPT:N_PROMPT + k])
        assert e2.max() < 1e-4, "generated position %d: %.3g" % (int(e2.argmax()), e2.max())


@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-v2-lite"])
def test_mla_16bit_cache_matches_rounded_reference(name, checkpoints, run_facet, tmp_path):
    """A BF16 file (float32 weights of its values, as test_kv_cache.py runs the other
    families) with a bf16 latent cache: close to the reference that rounds the cached
    latent and rope key (median 1e-4, worst 2e-3: a latent element within float32 noise
    of a rounding boundary lands one bf16 step apart), and 10x farther from the reference
    that does not (the cache is really 16-bit, rounded where the reference says). The
    defaults (bf16 weights, bf16 cache) run the same file to a greedy continuation."""
    path = checkpoints[name, "bf16"]
    p = prompt(8, 48)
    obj, rows = run(run_facet, path, p, 16, tmp_path, ["--weights", "f32", "--kv-cache", "bf16"])
    seq = p + obj["generated_ids"][:-1]
    r = compare.relative_errors(rows, mla_ref.Reference(path, kv_round="bf16").logits(seq))
    u = compare.relative_errors(rows, mla_ref.Reference(path).logits(seq))
    assert np.median(r) < 1e-4 and r.max() < 2e-3, (np.median(r), r.max())
    assert np.median(u) > 10 * np.median(r), (np.median(u), np.median(r))
    default, _ = run(run_facet, path, p, 4, tmp_path, [])
    assert len(default["generated_ids"]) == 4


def test_fp8_release_layout(checkpoints, run_facet, tmp_path):
    """The FP8 file runs with the defaults (auto: bf16 weights); its quantization_config
    is a fact, so one that is not fp8 / e4m3 with a weight_block_size stays refused by
    name, and float8 tensors without that config are refused by dtype."""
    path = checkpoints["deepseek-v3", "fp8"]
    obj, _ = run(run_facet, path, prompt(3, 16), 4, tmp_path, [])
    assert len(obj["generated_ids"]) == 4
    cfg = json.load(open(path + "/config.json"))
    for qc, fact in (({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic"},
                      "quantization_config"),
                     ({"quant_method": "fp8", "fmt": "e5m2", "weight_block_size": [16, 16]},
                      "quantization_config"),
                     (None, "weight dtypes")):
        c = dict(cfg)
        if qc is None:
            c.pop("quantization_config")
        else:
            c["quantization_config"] = qc
        d = tmp_path / ("bad-%s" % fact.replace(" ", "_"))
        d.mkdir(exist_ok=True)
        (d / "config.json").write_text(json.dumps(c))
        (d / "model.safetensors").symlink_to(path + "/model.safetensors")
        proc = run_facet(["run", d, "--prompt-ids", "1,2", "-n", "1"])
        assert proc.returncode == 2 and "REFUSED: %s=" % fact in proc.stderr, proc.stderr
        tmp = d / "model.safetensors"
        tmp.unlink()



@pytest.mark.parametrize("bs", [[0, 16], [16], "16x16"], ids=["zero", "one-entry", "string"])
def test_fp8_bad_weight_block_size_named(bs, repo_root, run_facet, tmp_path):
    """The FP8 release's method with a malformed weight_block_size: one line naming that
    key and its value (it was the table's refusal of the whole quantization_config, its
    value cut before the block size, 'supported: absent or off')."""
    cfg = dict(v3_config(repo_root), quantization_config={
        "quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
        "weight_block_size": bs})
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    proc = run_facet(["conform", str(tmp_path)])
    assert proc.returncode == 1, proc.stderr
    assert ("quantization_config.weight_block_size is %s (%s), expected [rows, columns], two "
            "integers in [1, 65536]" % (json.dumps(bs, separators=(",", ":")),
                                       "string" if isinstance(bs, str) else "array")) in proc.stderr


@pytest.mark.parametrize("key,value", [("mscale_all_dim", 1e308), ("mscale", -10)])
def test_yarn_mscale_out_of_range_named(key, value, run_facet, tmp_path):
    """A yarn mscale whose yarn_get_mscale (0.1 m ln(factor) + 1, factor 40 here) is not
    positive, or squares past float range, ran and ended at step 0 with 'logits are not
    finite'; now one config error naming the key and value."""
    cfg = mla_ref.shrink(mla_ref.DEEPSEEK_V2_LITE)
    cfg["rope_scaling"] = dict(cfg["rope_scaling"], **{key: value})
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    proc = run_facet(["conform", str(tmp_path)])
    assert proc.returncode == 1, proc.stderr
    assert ("rope_scaling.%s is %s (%s), expected a value whose yarn_get_mscale"
            % (key, "1e308" if value == 1e308 else value,
               "number" if value == 1e308 else "integer")) in proc.stderr, proc.stderr

def test_mla_chunked_prefill_and_decode_agree(checkpoints, run_facet, tmp_path):
    """A 300-token prompt runs in two forward chunks (256 + 44 entries); feeding the
    prompt plus facet's first 6 generated ids again as one prompt gives bit for bit the
    logits that decoding them one at a time gave (each entry's latent attention depends
    on its own row and the cache only)."""
    path = checkpoints["deepseek-v3", "f32"]
    p = prompt(9, 300)
    extra = ["--weights", "f32", "--kv-cache", "f32"]
    obj, rows = run(run_facet, path, p, 8, tmp_path, extra)
    gen = obj["generated_ids"]
    again, rows2 = run(run_facet, path, p + gen[:6], 2, tmp_path, extra)
    n = len(p) + 6
    assert np.array_equal(rows2[:n], rows[:n])
    assert again["generated_ids"] == gen[6:8]
    ref = mla_ref.Reference(path)
    errs = compare.relative_errors(rows[:len(p)], ref.logits(p))
    assert errs.max() < 1e-4, errs.max()


def test_reference_routing_semantics():
    """The reference's DeepSeek routing on hand-worked logits."""
    r = mla_ref.Reference.__new__(mla_ref.Reference)
    # V3: sigmoid scores, bias in the choice only, 4 groups of 2, 2 kept by top-2 sums
    r.f = mla_ref.Facts(mla_ref.shrink(dict(mla_ref.DEEPSEEK_V2_LITE, model_type="deepseek_v3",
                                            norm_topk_prob=True, routed_scaling_factor=2.0,
                                            topk_method="noaux_tc"),
                                       experts=8, top_k=2, n_group=4, topk_group=2))
    logits = np.array([0.0, 1.0, 3.0, -2.0, 0.5, 0.5, -1.0, 2.0])
    bias = np.array([0.0, 0.0, -0.9, 0.0, 0.0, 0.0, 0.0, 0.0])
    s = 1 / (1 + np.exp(-logits))
    # group sums of s + bias: g0 .731+.5=1.231, g1 .953-.9+.119=.172, g2 1.245, g3 1.150
    ids, w = r.route(logits, bias)
    # groups 2 and 0 kept: choices .5 (0), .731 (1), .622 (4), .622 (5), the rest 0: the
    # top 2 are 1, then 4 (tied with 5: the lower index)
    assert ids.tolist() == [1, 4]
    np.testing.assert_allclose(w, 2.0 * s[[1, 4]] / (s[1] + s[4] + 1e-20), rtol=1e-15)


def test_plan_latent_cache(run_facet, repo_root):
    """`facet plan` on DeepSeek-V3's config: the latent cache per token, hand-worked:
    61 layers x (512 + 64) x 2 B = 70,272 bytes in bf16, against 61 x 128 heads x
    (128 + 64 + 128) x 2 B = 4,997,120 bytes for expanded keys and values; the weights
    671,026,419,200 parameters (DeepSeek-V3's 671B without its multi-token-prediction
    layer), 37,552,297,472 read per token (its 37B active)."""
    cfg = repo_root / "tests" / "data" / "configs" / "deepseek-ai__DeepSeek-V3"
    proc = run_facet(["plan", cfg])
    out = proc.stdout
    assert "per token, naive (layers x (kv_lora_rank + qk_rope_head_dim) x 2 B): 70272 bytes" in out, out
    assert "expanded per-head keys and values" in out and "4997120 bytes, 71.1x" in out, out
    assert "parameters: 671026419200 total, 37552297472 read per decoded token" in out, out
    assert "causal latent 128q qk=128+64 v=128 over latent 512 + rope 64" in out, out
    proc = run_facet(["plan", cfg, "--kv-cache", "f32"])
    assert "(kv_lora_rank + qk_rope_head_dim) x 4 B): 140544 bytes" in proc.stdout, proc.stdout


def test_plan_kimi_k2(run_facet, tmp_path):
    """`facet plan` and `conform` on Kimi K2's full config (mla_ref.KIMI_K2, model_type
    kimi_k2), hand-worked: the latent cache is DeepSeek-V3's, 61 x (512 + 64) x 2 B =
    70,272 bytes a token in bf16, against 61 x 64 heads x (128 + 64 + 128) x 2 B =
    2,498,560 for expanded keys and values (35.6x: half V3's heads). Parameters, no
    multi-token-prediction layer: embeddings and lm_head 2 x 163840 x 7168, final norm
    7168; a layer's attention 101,124,096 (q_a 1536 x 7168 + its norm 1536, q_b 64 x 192 x
    1536, kv_a 576 x 7168 + its norm 512, kv_b 64 x 256 x 512, o 7168 x 8192) and 2 x 7168
    norms; layer 0 dense 3 x 7168 x 18432; 60 MoE layers of router 384 x 7168 + bias 384,
    a shared expert and 384 experts of 3 x 7168 x 2048: 1,026,408,232,448 in all (Kimi
    K2's "1T"); a decoded token reads 8 experts a layer: 32,861,500,928 (its "32B
    activated"; both tables counted whole, as for DeepSeek-V3 above)."""
    (tmp_path / "config.json").write_text(json.dumps(mla_ref.KIMI_K2))
    proc = run_facet(["plan", tmp_path])
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert "per token, naive (layers x (kv_lora_rank + qk_rope_head_dim) x 2 B): 70272 bytes" in out, out
    assert "expanded per-head keys and values" in out and "2498560 bytes, 35.6x" in out, out
    assert "parameters: 1026408232448 total, 32861500928 read per decoded token" in out, out
    assert "causal latent 64q qk=128+64 v=128 over latent 512 + rope 64" in out, out
    # the config alone: supported, pending the tensor probe (exit 3), by its own profile
    proc = run_facet(["conform", tmp_path])
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "verdict: supported-pending-probe on cpu (profile kimi_k2)" in proc.stdout, proc.stdout
    assert "router=sigmoid-noaux_tc-renorm sparse_layers=60 shared_expert=2048" in proc.stdout


def test_kimi_k2_tiktoken_folder_refused_by_name(checkpoints, run_facet, tmp_path):
    """Kimi K2 ships its vocabulary as tiktoken.model (one 'base64(token bytes) rank' per
    line) read by its own tokenization_kimi.py through tiktoken, with no tokenizer.json.
    facet does not read tiktoken files: text in or out of such a folder is refused by
    name (exit 2, FACET_E_UNSUPPORTED, naming tiktoken.model), and the checkpoint still
    runs on token ids, printing ids instead of text."""
    src = checkpoints["kimi-k2", "f32"]
    d = tmp_path / "kimi"
    d.mkdir()
    for fn in ("config.json", "model.safetensors"):
        (d / fn).symlink_to(os.path.join(src, fn))
    (d / "tiktoken.model").write_text("".join(
        "%s %d\n" % (base64.b64encode(t).decode(), i)
        for i, t in enumerate([b"h", b"i", b"hi", b" ", b" hi"])))
    (d / "tokenization_kimi.py").write_text("# Moonshot's TikTokenTokenizer (stand-in)\n")
    (d / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "TikTokenTokenizer",
        "auto_map": {"AutoTokenizer": ["tokenization_kimi.TikTokenTokenizer", None]}}))
    want = "%s: a tiktoken vocabulary" % (d / "tiktoken.model")
    for args in (["tokenize", d, "hi hi"], ["run", d, "--prompt", "hi", "-n", "1"]):
        proc = run_facet(args)
        assert proc.returncode == 2 and want in proc.stderr, (args, proc.stderr)
        assert "give the prompt as token ids (--prompt-ids)" in proc.stderr, proc.stderr
    proc = run_facet(["run", d, "--prompt-ids", "1,2,3", "-n", "2", "--ignore-eos", "--no-cache"])
    assert proc.returncode == 0, proc.stderr
    assert "has no tokenizer.json: token ids are printed instead of text" in proc.stderr
    assert proc.stdout.split()[:3] == ["1", "2", "3"], proc.stdout
