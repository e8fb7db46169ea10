#!/bin/sh
# lfm2_bench.sh — issue 26's performance row on the full-size LFM2-1.2B shape (random
# weights of its published config, tests/ref/hybrid_ref.py LFM2_1_2B): decode against
# the read-bandwidth ceiling in bf16 and int8, and prefill at 512 tokens against
# llama.cpp on the same weights. bench/RESULTS.md has the figures and how to read them.
#
#   bench/lfm2_bench.sh [ROUNDS]            (default 3)
#
# Environment: FACET (default build/facet), LLAMA_BIN (default /work/llama/build/bin:
# llama-bench and llama-quantize, built by hand outside the repository), DIR (default
# /work/benchtmp/lfm2), LOCK (default /work/notes/bench.lock: no two benchmarks overlap),
# CELLS (default "bf16 int8": the decode formats), PREFILL (default "bf16 int8 gguf": the
# prefill cells, see below), FIRST (facet or llama: who runs first in round 1 of each
# prefill pair; the order alternates by round).
#
# Files, written when missing (~7 min on the loaded 2-core machine):
#   DIR/lfm2-1.2b                 random BF16 checkpoint (hybrid_ref.lfm2_write, 2.3 GB)
#   DIR/vocab65536.gguf           a synthetic SentencePiece vocabulary of 65,536 pieces
#                                 (bench/gguf_random.py spm_vocab; ids carry no meaning)
#   DIR/lfm2-1.2b-BF16.gguf       the same weights, matrices BF16 (tests/ref/ssm_to_gguf.py
#                                 --bf16: the checkpoint's bits), norms and conv F32
#   DIR/lfm2-1.2b-Q8_0.gguf       llama-quantize of the BF16 file (Q8_0)
# and one untimed `facet run` per format writes its weight cache.
#
# Per round, every timed run under flock:
#   decode (classic_bw.sh's method), per format F in CELLS:
#     facet bench DIR/lfm2-1.2b --weights F --threads 2 --shapes 64 --reps 1 \
#         --concurrency 1 -n 128 --no-cold --json RES/decode-F-rR.json
#   (8 chunks of 16 greedy steps, each after its own 128 MiB read probe; "of ceiling" =
#   the chunks' median of tok/s over probe GB/s / GB read per decoded token);
#   prefill 512, per cell, facet and llama.cpp back to back in alternating order:
#     bf16: facet run DIR/lfm2-1.2b --weights bf16 --prompt-ids <512 ids> -n 1 --json
#           --threads 2   vs  llama-bench -m lfm2-1.2b-BF16.gguf -p 512 -n 0 -t 2 -r 1
#     int8: the same with --weights int8  vs  llama-bench on lfm2-1.2b-Q8_0.gguf
#     gguf: facet run lfm2-1.2b-BF16.gguf --weights bf16 (the very file) vs the BF16 run
#   llama-bench at its defaults (mmap, spinning OpenMP waits), as the GGUF section of
#   bench/RESULTS.md ran it.
# Run time, files and caches present: 3 rounds took 30 min on the loaded machine, most of
# it waiting on the lock; a round's runs themselves ~3 min (facet converts the GGUF at
# each load, ~30 s, not timed).
set -eu
ROUNDS=${1:-3}
REPO=$(cd "$(dirname "$0")/.." && pwd)
FACET=${FACET:-$REPO/build/facet}
LLAMA_BIN=${LLAMA_BIN:-/work/llama/build/bin}
DIR=${DIR:-/work/benchtmp/lfm2}
LOCK=${LOCK:-/work/notes/bench.lock}
CELLS=${CELLS-"bf16 int8"}
PREFILL=${PREFILL-"bf16 int8 gguf"}
FIRST=${FIRST:-facet}
RES=${RES:-$DIR/results}
M=$DIR/lfm2-1.2b
G=$DIR/lfm2-1.2b-BF16.gguf
Q=$DIR/lfm2-1.2b-Q8_0.gguf
mkdir -p "$RES"
t0=$(date +%s)

if [ ! -f "$M/model.safetensors" ]; then
    echo "== writing $M (random bf16 weights of LiquidAI/LFM2-1.2B's config)"
    nice /usr/bin/python3 -c "
import sys; sys.path.insert(0, '$REPO/tests/ref')
import hybrid_ref
hybrid_ref.lfm2_write(hybrid_ref.LFM2_1_2B, '$M', 'bf16')"
fi
if [ ! -f "$DIR/vocab65536.gguf" ]; then
    /usr/bin/python3 - "$REPO/bench" "$DIR/vocab65536.gguf" <<'EOF'
import struct, sys
sys.path.insert(0, sys.argv[1])
import gguf_random as g
kv = g.spm_vocab(65536)
head = [b"GGUF", struct.pack("<IQQ", 3, 0, len(kv))]
for k, vt, v in kv:
    head += [g.gstr(k), struct.pack("<I", vt), g.gval(vt, v)]
open(sys.argv[2], "wb").write(b"".join(head))
EOF
fi
if [ ! -f "$G" ]; then
    echo "== writing $G"
    nice /usr/bin/python3 "$REPO/tests/ref/ssm_to_gguf.py" "$M" "$G" --vocab-from "$DIR/vocab65536.gguf" --bf16
fi
case " $PREFILL " in *" int8 "*)
    [ -f "$Q" ] || "$LLAMA_BIN/llama-quantize" "$G" "$Q" Q8_0 2 >"$DIR/quantize.log" 2>&1 ;;
esac
for f in $CELLS bf16 int8; do
    "$FACET" run "$M" --weights "$f" --prompt-ids 1,2,3 -n 1 --json --threads 2 >/dev/null
done
echo "== files and caches ready after $(($(date +%s) - t0)) s"

# 512 prompt ids spread over the vocabulary (above the 259 special and byte pieces)
IDS=$(/usr/bin/python3 -c "print(','.join(str(259 + (i * 7919) % (65536 - 259)) for i in range(512)))")

facet_prefill() { # cell round
    case $1 in
    bf16) src=$M w=bf16 ;; int8) src=$M w=int8 ;; gguf) src=$G w=bf16 ;;
    esac
    flock "$LOCK" "$FACET" run "$src" --weights "$w" --prompt-ids "$IDS" -n 1 --json \
        --threads 2 >"$RES/prefill-$1-facet-r$2.json"
}
llama_prefill() { # cell round
    case $1 in int8) file=$Q ;; *) file=$G ;; esac
    flock "$LOCK" "$LLAMA_BIN/llama-bench" -m "$file" -p 512 -n 0 -t 2 -r 1 -o json \
        >"$RES/prefill-$1-llama-r$2.json" 2>/dev/null
}

off=0; [ "$FIRST" = llama ] && off=1
for r in $(seq 1 "$ROUNDS"); do
    for f in $CELLS; do
        echo "== round $r: decode $f ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))"
        flock "$LOCK" "$FACET" bench "$M" --weights "$f" --threads 2 --shapes 64 --reps 1 \
            --concurrency 1 -n 128 --no-cold --json "$RES/decode-$f-r$r.json" |
            grep -E "^1 |bandwidth"
    done
    for c in $PREFILL; do
        echo "== round $r: prefill 512 $c ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))"
        if [ $(((r + off) % 2)) -eq 1 ]; then facet_prefill "$c" "$r"; llama_prefill "$c" "$r"
        else llama_prefill "$c" "$r"; facet_prefill "$c" "$r"; fi
    done
done
echo "== rounds done after $(($(date +%s) - t0)) s"

/usr/bin/python3 - "$RES" "$ROUNDS" "$CELLS" "$PREFILL" <<'EOF'
import json, statistics, sys
res, rounds, cells, prefill = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
def load(name):
    try:
        return json.load(open("%s/%s" % (res, name)))
    except (OSError, ValueError):
        return None
print("| weights | GB read / token | decode tok/s per round (median) | probe GB/s | "
      "of ceiling per round (median) |")
print("| --- | --- | --- | --- | --- |")
for f in cells:
    runs = [j for j in (load("decode-%s-r%d.json" % (f, r)) for r in range(1, rounds + 1)) if j]
    if not runs:
        continue
    d = [j["decode"][0] for j in runs]
    tok = [x["tok_s_per_seq"] for x in d]
    print("| %s | %.3f | %s (%.1f) | %s | %s (%.0f%%) |" % (
        f, runs[0]["decode_bytes"] / 1e9, ", ".join("%.1f" % t for t in tok),
        statistics.median(tok), ", ".join("%.1f" % x["bandwidth_gb_s"] for x in d),
        ", ".join("%.0f%%" % (100 * x["of_ceiling"]) for x in d),
        100 * statistics.median(x["of_ceiling"] for x in d)))
print()
print("| prefill cell | facet tok/s per round | llama.cpp pp512 per round | ratio per round (median) |")
print("| --- | --- | --- | --- |")
for c in prefill:
    fa, ll = [], []
    for r in range(1, rounds + 1):
        a, b = load("prefill-%s-facet-r%d.json" % (c, r)), load("prefill-%s-llama-r%d.json" % (c, r))
        if a and b:
            fa.append(a["timings"]["prefill_tok_s"])
            ll.append([x for x in b if x["n_prompt"] == 512][0]["avg_ts"])
    if not fa:
        continue
    ratio = [x / y for x, y in zip(fa, ll)]
    print("| %s | %s | %s | %s (%.2fx) |" % (
        c, ", ".join("%.1f" % x for x in fa), ", ".join("%.1f" % x for x in ll),
        ", ".join("%.2f" % x for x in ratio), statistics.median(ratio)))
EOF
