#!/bin/sh
# Issues 27 and 25's speed acceptance: facet against llama.cpp on the same full-size
# random-weight Q4_0 GGUF (bench/gguf_random.py), 2 threads, interleaved rounds.
#
#   bench/moe_gguf_bench.sh qwen3moe|deepseek2 [ROUNDS]     (default 3 rounds)
#
# Per round, in alternating order: `facet run M --prompt-ids <512 ids> -n 32
# --ignore-eos --json --threads 2` (prefill 512 and decode tokens/s, peak RSS by
# /usr/bin/time) and `llama-bench -m M -p 512 -n 32 -t 2 -r 1` (pp512 and tg32). Prints
# each round's figures, the ratios facet / llama.cpp and their medians; `facet plan`
# first (memory, and for deepseek2 the KV cache at 32k context). Every timed run holds
# $LOCK so no two benchmarks on the machine overlap.
# Environment: FACET (build/facet), LLAMA_BIN (/work/llama/build/bin), DIR
# (/work/benchtmp/moe: the GGUF is written there if absent, ~17 GB for qwen3moe, ~9 GB
# for deepseek2; delete it when done), LOCK (/work/notes/bench.lock), OMP_WAIT_POLICY
# (passive: llama.cpp's OpenMP threads otherwise spin against other load), LLAMA_ARGS
# (-mmp 0: with its default mmap llama.cpp keeps the file's pages mapped beside its
# repacked copy, 23 GB resident for qwen3moe on this 23 GiB machine, and decodes
# while evicting its own pages: 2.5-8 tok/s), FIRST (facet or llama: who runs first in
# round 1; the order alternates).
# Run time on the 2-core machine (bench/RESULTS.md): a round ~4.5 min for qwen3moe, ~3 min
# for deepseek2, much of it the two engines loading the file; writing it 1-3 min once.
set -eu
ARCH=${1:?usage: moe_gguf_bench.sh qwen3moe|deepseek2 [ROUNDS]}
ROUNDS=${2:-3}
FACET=${FACET:-build/facet}
LLAMA_BIN=${LLAMA_BIN:-/work/llama/build/bin}
DIR=${DIR:-/work/benchtmp/moe}
LOCK=${LOCK:-/work/notes/bench.lock}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
LLAMA_ARGS=${LLAMA_ARGS--mmp 0}
FIRST=${FIRST:-facet}
off=0; [ "$FIRST" = llama ] && off=1
case $ARCH in
qwen3moe) M=$DIR/qwen3-30b-a3b-Q4_0.gguf; VOCAB=151936 ;;
deepseek2) M=$DIR/deepseek-v2-lite-Q4_0.gguf; VOCAB=102400 ;;
*) echo "unknown arch $ARCH" >&2; exit 2 ;;
esac
HERE=$(dirname "$0")
mkdir -p "$DIR"
if [ ! -f "$M" ]; then
    start=$(date +%s)
    /usr/bin/python3 "$HERE/gguf_random.py" "$ARCH" "$M"
    echo "generated $M in $(( $(date +%s) - start )) s"
fi
# 512 prompt ids spread over the vocabulary (above the 259 special and byte pieces)
IDS=$(/usr/bin/python3 -c "print(','.join(str(259 + (i * 7919) % ($VOCAB - 259)) for i in range(512)))")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

echo "== facet plan $M --ctx 32768"
"$FACET" plan "$M" --ctx 32768 | grep -E '^(parameters|memory|KV cache|  per token|free RAM)'

run_facet() {
    flock "$LOCK" /usr/bin/time -f '%M' -o "$T/rss" "$FACET" run "$M" --prompt-ids "$IDS" \
        -n 32 --ignore-eos --json --threads 2 --no-cache >"$T/facet.json" 2>"$T/facet.err" ||
        { cat "$T/facet.err" >&2; exit 1; }
    /usr/bin/python3 -c "
import json, sys
t = json.load(open('$T/facet.json'))['timings']
rss = int(open('$T/rss').read().split()[-1]) / 2**20
print(f\"{t['prefill_tok_s']:.2f} {t['decode_tok_s']:.2f} {t['load_s']:.1f} {rss:.2f}\")" >"$T/f.$1"
}

run_llama() {
    # shellcheck disable=SC2086
    flock "$LOCK" "$LLAMA_BIN/llama-bench" -m "$M" -p 512 -n 32 -t 2 -r 1 -o csv $LLAMA_ARGS \
        >"$T/llama.csv" 2>"$T/llama.err" || { cat "$T/llama.err" >&2; exit 1; }
    /usr/bin/python3 -c "
import csv
rows = {(r['n_prompt'], r['n_gen']): float(r['avg_ts']) for r in csv.DictReader(open('$T/llama.csv'))}
print(f\"{rows[('512', '0')]:.2f} {rows[('0', '32')]:.2f}\")" >"$T/l.$1"
}

echo "== $ROUNDS rounds, 2 threads: facet run (512-token prompt, 32 decoded) vs llama-bench -p 512 -n 32 $LLAMA_ARGS"
echo "round order | facet prefill decode (tok/s) load_s peak_RSS_GiB | llama.cpp pp512 tg32 | ratio prefill decode"
r=1
while [ "$r" -le "$ROUNDS" ]; do
    if [ $(((r + off) % 2)) -eq 1 ]; then run_facet $r; run_llama $r; o=facet-first
    else run_llama $r; run_facet $r; o=llama-first; fi
    set -- $(cat "$T/f.$r") $(cat "$T/l.$r")
    echo "$r $o | $1 $2 $3 $4 | $5 $6 | $(/usr/bin/python3 -c "print(f'{$1/$5:.2f} {$2/$6:.2f}')")"
    echo "$1 $2 $5 $6" >>"$T/all"
    r=$((r + 1))
done
/usr/bin/python3 -c "
import statistics as s
rows = [list(map(float, l.split())) for l in open('$T/all')]
pf = s.median(r[0] / r[2] for r in rows); dc = s.median(r[1] / r[3] for r in rows)
print(f'median ratio facet / llama.cpp: prefill 512 {pf:.2f}x, decode {dc:.2f}x')"
