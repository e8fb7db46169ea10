"""A 32k-token prompt prefills and decodes, and the KV memory it takes is what
`facet plan` predicts (within 5%), the cache having grown on demand.

The model is small (2 layers, 4 KV heads of 32: 2 KiB of float32 KV per position) so the
KV cache dominates the process's memory: 32768 positions take 64 MiB. The measured
quantity is the growth of the peak RSS between a 16-token prompt and a 32000-token prompt
in the same 32768-token context; `facet plan`'s KV bytes per sequence at those two
lengths give the prediction. The short run also shows the cache is not allocated at the
context cap up front.
"""

import json
import subprocess
import sys

import pytest

N_LONG = 32000
CTX = 32768

CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 128,
    "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 4, "head_dim": 32, "vocab_size": 512,
    "max_position_embeddings": CTX, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
    "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2,
}

# run a command and print its peak RSS (KiB): RUSAGE_CHILDREN of a fresh interpreter
# covers exactly that one child
PEAK = ("import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stderr.write(p.stderr)\n"
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "print(p.stdout)\n")


def peak_run(args, timeout=600):
    p = subprocess.run([sys.executable, "-c", PEAK] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=timeout)
    first, _, rest = p.stdout.partition("\n")
    rc, kib = (int(x) for x in first.split())
    return rc, kib * 1024, rest, p.stderr


def test_32k_prompt_memory_matches_plan(make_checkpoint, facet_bin, run_facet):
    path = make_checkpoint(CONFIG, dtype="f32")
    base = [str(facet_bin), "run", str(path), "--ctx", CTX, "-n", 8, "--json", "--ignore-eos",
            "--no-cache", "--weights", "f32", "--threads", "2"]
    long_ids = ",".join(str(3 + (i * 7919) % 500) for i in range(N_LONG))
    rc, rss_short, out_short, err = peak_run(base + ["--prompt-ids", long_ids[:long_ids.index(",", 40)]])
    assert rc == 0, err
    rc, rss_long, out_long, err = peak_run(base + ["--prompt-ids", long_ids], timeout=900)
    assert rc == 0, err
    got = json.loads(out_long)
    assert len(got["prompt_ids"]) == N_LONG and len(got["generated_ids"]) == 8
    n_short = len(json.loads(out_short)["prompt_ids"])

    def kv(ctx):
        p = run_facet(["plan", str(path), "--ctx", str(ctx), "--weights", "f32", "--json"])
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["kv_bytes_per_sequence"]

    # the cache grows by doubling from 64 positions: the long run holds 32768 (the cap),
    # the short one 64
    predicted = kv(CTX) - kv(64)
    measured = rss_long - rss_short
    print("32k context: RSS grew %d bytes, plan predicts %d (%.2f%%)" % (
        measured, predicted, 100.0 * (measured - predicted) / predicted))
    assert predicted == 2 * 4 * 32 * 2 * 4 * (CTX - 64)
    assert abs(measured - predicted) <= 0.05 * predicted, (
        "RSS grew %d bytes for %d more positions; plan predicts %d" % (
            measured, N_LONG + 8 - n_short, predicted))
    # on demand, not at the cap: the short run's peak is far below one full cache
    assert rss_short < kv(CTX) / 2
