#!/usr/bin/python3
"""int8 vs bf16 fidelity on a (generated) checkpoint, issue 7.

1. Greedy decode N steps with --weights bf16 from a seeded random prompt.
2. Teacher-forced: run the same token sequence (prompt + bf16's generated ids) through
   both formats with --dump-logits, so every position is compared on the same context.
3. Report top-1 agreement over the N generated positions and, at each disagreement, the
   bf16 top-1 minus top-2 margin next to the int8 quantization noise at that position
   (RMS and max |logit_int8 - logit_bf16| over the vocabulary).

Usage: bench/fidelity_int8.py FACET_BIN MODEL [N=256] [PROMPT_LEN=32] [THREADS=2]
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def run(facet, model, ids, n, weights, threads, dump=None):
    args = [facet, "run", model, "--json", "--ignore-eos", "--threads", str(threads),
            "--prompt-ids", ",".join(map(str, ids)), "-n", str(n), "--weights", weights]
    if dump:
        args += ["--dump-logits", dump]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("facet failed: %s" % p.stderr[-2000:])
    return json.loads(p.stdout)["generated_ids"]


def main():
    facet, model = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 256
    plen = int(sys.argv[4]) if len(sys.argv) > 4 else 32
    threads = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    vocab = json.load(open(os.path.join(model, "config.json")))["vocab_size"]
    rng = np.random.default_rng(7)
    prompt = [int(x) for x in rng.integers(0, vocab, plen)]
    gen = run(facet, model, prompt, n, "bf16", threads)
    seq = prompt + gen
    with tempfile.TemporaryDirectory() as d:
        logits = {}
        for w in ("bf16", "int8") + (("f32",) if os.environ.get("FIDELITY_F32") else ()):
            f = os.path.join(d, w + ".bin")
            run(facet, model, seq, 1, w, threads, dump=f)
            logits[w] = np.fromfile(f, dtype="<f4").reshape(-1, vocab)[plen - 1:plen - 1 + n]
    b, q = logits["bf16"].astype(np.float64), logits["int8"].astype(np.float64)
    top_b, top_q = b.argmax(1), q.argmax(1)
    assert list(top_b) == gen, "bf16 teacher-forced argmax differs from its own greedy run"
    srt = np.sort(b, 1)
    margin = srt[:, -1] - srt[:, -2]
    diff = q - b
    rms, mx = np.sqrt((diff ** 2).mean(1)), np.abs(diff).max(1)
    dis = np.nonzero(top_b != top_q)[0]
    print("model %s: %d positions, top-1 agreement %d/%d (%.1f%%)" %
          (model, n, n - len(dis), n, 100.0 * (n - len(dis)) / n))
    print("bf16 logits: median std over the vocabulary %.4f; top-2 margin median %.4f" %
          (np.median(b.std(1)), np.median(margin)))
    print("int8-bf16 logit noise over all positions: median RMS %.4f, median max %.4f" %
          (np.median(rms), np.median(mx)))
    if "f32" in logits:
        f = logits["f32"].astype(np.float64)
        for name, x in (("bf16", b), ("int8", q)):
            d = x - f
            agree = int((x.argmax(1) == f.argmax(1)).sum())
            print("%s vs f32: top-1 agreement %d/%d, noise median RMS %.4f, median max %.4f" %
                  (name, agree, n, np.median(np.sqrt((d ** 2).mean(1))), np.median(np.abs(d).max(1))))
    if len(dis):
        below = int((margin[dis] < mx[dis]).sum())
        print("disagreements: %d; bf16 margin there max %.4f, median %.4f; margin below that "
              "position's max |int8-bf16| logit difference at %d of %d; margin/RMS max %.2f" %
              (len(dis), margin[dis].max(), np.median(margin[dis]), below, len(dis),
               (margin[dis] / rms[dis]).max()))
    for i in dis:
        print("  step %d: bf16 top-1 %d margin %.4f | int8 picks %d | noise RMS %.4f max %.4f | "
              "margin/RMS %.2f" % (i, top_b[i], margin[i], top_q[i], rms[i], mx[i], margin[i] / rms[i]))


if __name__ == "__main__":
    main()
