#!/usr/bin/python3
"""Latent attention (MLA) at long context: the KV memory a long prompt takes against
`facet plan`, and the prefill speed (bench/RESULTS.md, "Latent KV memory measured").

The model is DeepSeek-V2-Lite's attention geometry (kv_lora_rank 512, qk_rope_head_dim
64, qk_nope_head_dim 128, v_head_dim 128, yarn) on 2 layers of hidden 256 with 2 heads,
both layers dense, vocab 512, f32 weights, written by tests/ref/mla_ref.py's writer
(random weights), so the latent cache (2 layers x 576 values a position) dominates what
grows with the context.

rss: for each CTX, the growth of the peak RSS between a 16-token prompt and a
(CTX - 768)-token prompt in the same CTX context (`facet run DIR --ctx CTX -n 8
--weights f32 --kv-cache bf16 --no-cache --threads T --prompt-ids ...`, peak RSS from
wait4), against `facet plan DIR --ctx CTX --json`'s kv_bytes_per_sequence minus the same
at 64 (the cache grows by doubling from 64 positions), as tests/e2e/test_long_context.py
measures the GQA cache. Prints the table row and the long run's prefill tok/s.

speed: prefill tok/s of an N-token prompt and the decode tok/s of 16 tokens after it
(context N + 64), for timing one build against another (--bin).

usage: bench/mla_kv_rss.py rss [--ctx 8192 16384 32768] [--bin build/facet]
       bench/mla_kv_rss.py speed [--n 2048 8192 16384] [--bin build/facet]
Time under the bench lock: flock /work/notes/bench.lock bench/mla_kv_rss.py ...
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "ref"))


def make_model(path):
    if os.path.exists(os.path.join(path, "model.safetensors")):
        return path
    import mla_ref
    cfg = dict(mla_ref.DEEPSEEK_V2_LITE, num_hidden_layers=2, first_k_dense_replace=2,
               hidden_size=256, num_attention_heads=2, num_key_value_heads=2,
               vocab_size=512, intermediate_size=512, bos_token_id=1, eos_token_id=2)
    return mla_ref.write(cfg, path, "f32")


def ids(n):
    return ",".join(str(3 + (i * 7919) % 500) for i in range(n))


def run_peak(args):
    """Run args; (return code, peak RSS bytes, stdout, stderr) from wait4."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(args, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return p.returncode, ru.ru_maxrss * 1024, out.read().decode(), err.read().decode()


def rates(stderr):
    """(prompt tokens, prefill seconds, prefill tok/s, decode tok/s) from facet run's stats"""
    m = re.search(r"prefill (\d+) tokens, TTFT ([0-9.]+) ms, ([0-9.]+) tok/s \| decode \d+ "
                  r"tokens, ([0-9.]+) tok/s", stderr)
    if not m:
        sys.exit("no stats line in: " + stderr)
    return int(m.group(1)), float(m.group(2)) / 1e3, float(m.group(3)), float(m.group(4))


def facet_run(a, model, ctx, n_prompt, n_gen=8):
    args = [a.bin, "run", model, "--ctx", str(ctx), "-n", str(n_gen), "--ignore-eos",
            "--weights", "f32", "--kv-cache", a.kv_cache, "--no-cache", "--threads",
            str(a.threads), "--prompt-ids", ids(n_prompt)]
    rc, rss, out, err = run_peak(args)
    if rc != 0:
        sys.exit("facet run failed (%d): %s" % (rc, err))
    return rss, rates(err)


def kv_plan(a, model, ctx):
    p = subprocess.run([a.bin, "plan", model, "--ctx", str(ctx), "--weights", "f32",
                        "--kv-cache", a.kv_cache, "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("facet plan failed: " + p.stderr)
    return json.loads(p.stdout)["kv_bytes_per_sequence"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["rss", "speed"])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "facet"))
    ap.add_argument("--model", default="/work/benchtmp/mla_kv/v2lite-geom-2l")
    ap.add_argument("--ctx", type=int, nargs="+", default=[8192, 16384, 32768])
    ap.add_argument("--n", type=int, nargs="+", default=[2048, 8192, 16384])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kv-cache", default="bf16")
    a = ap.parse_args()
    model = make_model(a.model)
    if a.mode == "speed":
        print("| prompt tokens | prefill s | prefill tok/s | decode tok/s |")
        print("|---|---|---|---|")
        for n in a.n:
            _, (np_, secs, rate, dec) = facet_run(a, model, n + 64, n, n_gen=16)
            print("| %d | %.2f | %.1f | %.1f |" % (np_, secs, rate, dec), flush=True)
        return
    print("| CTX | peak RSS, 16 tokens | peak RSS, CTX - 768 tokens | RSS grew | plan predicts "
          "| excess | prefill tok/s |")
    print("|---|---|---|---|---|---|---|")
    longs = []
    for ctx in a.ctx:
        rss_short, _ = facet_run(a, model, ctx, 16)
        rss_long, pre = facet_run(a, model, ctx, ctx - 768)
        plan_ctx = kv_plan(a, model, ctx)
        grew, plan = rss_long - rss_short, plan_ctx - kv_plan(a, model, 64)
        longs.append((ctx, rss_long, plan_ctx))
        print("| %d | %s | %s | %s B | %s B | %+.1f%% (%.2f MB) | %.1f |" % (
            ctx, format(rss_short, ","), format(rss_long, ","), format(grew, ","),
            format(plan, ","), 100.0 * (grew - plan) / plan, (grew - plan) / 1e6, pre[2]),
            flush=True)
    # between two long runs both hold a full forward chunk's scratch: what is left of
    # the growth is the cache and whatever grows per position
    for (c0, r0, p0), (c1, r1, p1) in zip(longs, longs[1:]):
        print("long run %d -> %d: peak RSS grew %s B, plan's KV %s B (%+.2f%%, %+.1f B a "
              "position)" % (c0, c1, format(r1 - r0, ","), format(p1 - p0, ","),
                             100.0 * (r1 - r0 - (p1 - p0)) / (p1 - p0),
                             (r1 - r0 - (p1 - p0)) / (c1 - c0)))

if __name__ == "__main__":
    main()
