#!/usr/bin/python3
"""bench/vulkan_gpu_summary.py — the table of bench/vulkan_gpu.sh: `facet bench --json`
files of the Vulkan backend on one device, as Markdown, with decode as a fraction of the
card's memory bandwidth and the seed system's published H100 CUDA figures beside.

    vulkan_gpu_summary.py --card TEXT --peak-bw BYTES_PER_S [--device device.txt] BENCH.json...

Decode's bandwidth fraction: a decode step of c sequences reads the weights once
(decode_bytes, what `facet plan` counts per decoded token) and gives each sequence one
token, so the weights stream at decode_bytes x (tok/s per sequence) bytes per second,
divided by the card's bandwidth. KV-cache reads are not counted (small at these
contexts), so the fraction is a lower bound on the bandwidth used.
"""

import argparse
import json
import os
import re
import sys

# the seed system's published H100 CUDA figures for Llama-3.2-1B (issue 24)
H100 = {"ttft_ms": "50.8 / 55.7 / 149.5", "decode": "176 / 136 / 81", "c8": "5.16x"}


def device_name(path):
    try:
        text = open(path).read()
    except OSError:
        return "unknown device"
    m = re.search(r"device: (vulkan device \d+: .+?, [\d.]+ GiB)", text)
    lim = re.search(r"limits: .*", text)
    return (m.group(1) if m else "no Vulkan device") + ("\n\n" + lim.group(0) if lim else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--card", required=True)
    ap.add_argument("--peak-bw", type=float, required=True)
    ap.add_argument("--device", default="")
    ap.add_argument("bench", nargs="*")
    a = ap.parse_args()
    print("# facet --backend vulkan on %s\n" % a.card)
    print(device_name(a.device) + "\n")
    print("| checkpoint (random, bf16) | TTFT ms at prompt tokens | decode tok/s c=1 | c=8 per seq / aggregate | c=8 / c=1 | decode bytes/token | of bandwidth c=1 | c=8 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = 0
    for path in a.bench:
        try:
            b = json.load(open(path))
        except (OSError, ValueError) as e:
            print("| %s | unreadable: %s | | | | | | |" % (os.path.basename(path), e))
            continue
        name = os.path.basename(path)[len("bench-"):-len(".json")]
        ttft = " / ".join("%d: %.1f" % (p["tokens"], p["ttft_ms"]) for p in b.get("prefill", []))
        dec = {d["concurrency"]: d for d in b.get("decode", [])}
        db = b.get("decode_bytes", 0)
        c1, c8 = dec.get(1), dec.get(8)

        def frac(d):
            return "%.1f%%" % (100.0 * db * d["tok_s_per_seq"] / a.peak_bw) if d else "-"

        print("| %s | %s | %s | %s | %s | %.1f MB | %s | %s |" % (
            name, ttft or "-", "%.1f" % c1["aggregate_tok_s"] if c1 else "-",
            "%.1f / %.1f" % (c8["tok_s_per_seq"], c8["aggregate_tok_s"]) if c8 else "-",
            "%.2fx" % (c8["aggregate_tok_s"] / c1["aggregate_tok_s"]) if c1 and c8 else "-",
            db / 1e6, frac(c1), frac(c8)))
        rows += 1
    print("| seed system, H100 CUDA, Llama-3.2-1B (published) | %s | %s | | %s | | | |" % (
        H100["ttft_ms"], H100["decode"], H100["c8"]))
    print("\nTTFT: `facet bench` prefill rows (median of --reps); decode: its concurrency rows "
          "(tok/s per sequence and summed over the batch); bandwidth fraction = decode_bytes x "
          "tok/s per sequence / %.3g B/s (weights only)." % a.peak_bw)
    return 0 if rows == len(a.bench) else 1


if __name__ == "__main__":
    sys.exit(main())
