#!/bin/bash
# gguf_depth_bench.sh — facet against llama.cpp decode at the SAME KV depth (issue 18,
# bench/RESULTS.md). `facet run --prompt-ids 1..512 -n 64` decodes its 64 tokens after a
# 512-token prompt (KV depth 512..575), while `llama-bench -p 512 -n 64` runs tg64 as a
# separate test from an empty cache (depth 0..63): on Qwen3-0.6B (28 layers x 8 KV heads x
# 128, 112 KiB of bf16/f16 KV per position) that is ~60 MB more read per facet token.
# This script measures both engines at both depths, interleaved per file and round:
#   d512: facet run --prompt-ids 1..512 -n 64      vs llama-bench -p 0 -n 64 -d 512 (tg64 @ d512)
#   d0:   facet run --prompt-ids 1 -n 64           vs llama-bench -p 0 -n 64 (its tg64 default)
# Env: FACET_BIN, LLAMA_BIN (folder holding llama-bench), MODELS (folder of the .gguf
# files), ROUNDS (default 3), FILES (default the Qwen3-0.6B Q4_0 and Q4_K_M files),
# THREADS (default 2). About 1.5 min per file and round on a quiet 2-core machine.
F=${FACET_BIN:?}; L=${LLAMA_BIN:?}; D=${MODELS:?}; R=${ROUNDS:-3}; T=${THREADS:-2}
FILES=${FILES:-"qwen3-0.6b-Q4_0 qwen3-0.6b-Q4_K_M"}
IDS=$(seq -s, 1 512)
fac() { # file prompt-ids
  "$F" run "$1" --prompt-ids "$2" -n 64 --ignore-eos --json --threads "$T" 2>/dev/null |
    /usr/bin/python3 -c "import json,sys; t=json.load(sys.stdin)['timings']; print('pp %.1f tg64 %.2f' % (t['prefill_tok_s'], t['decode_tok_s']))"
}
lcp() { # file llama-bench-args...: each result row as 'test value'
  local m=$1; shift
  LD_LIBRARY_PATH=$L "$L/llama-bench" -m "$m" "$@" -t "$T" -r 1 2>/dev/null |
    grep -E "pp512|tg64" | awk -F'|' '{t=$(NF-2); gsub(/^ +| +$/,"",t); gsub(/ /,"",t); v=$(NF-1); gsub(/ /,"",v); split(v,a,"±"); printf "%s %s  ", t, a[1]}'; echo
}
for i in $(seq 1 "$R"); do
  for f in $FILES; do
    m=$D/$f.gguf
    echo "$(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
    echo "$f round $i d512 facet: $(fac "$m" "$IDS")"
    echo "$f round $i d512 llama.cpp: $(lcp "$m" -p 0 -n 64 -d 512)"
    echo "$f round $i d0 facet: $(fac "$m" 1)"
    echo "$f round $i d0 llama.cpp: $(lcp "$m" -p 0 -n 64)"
  done
done
