#!/bin/bash
# gguf_blocks_bench.sh — interleaved rounds (bench/RESULTS.md, issue 18): facet (default:
# Q4_0/Q8_0 repacked), facet with FACET_GGUF_BLOCKS=1, and llama.cpp (llama-bench from
# LLAMA_BIN, default /work/llama/build/bin) on the Qwen3-0.6B-shaped GGUF files in MODELS.
F=${FACET_BIN:-build/facet}
IDS=$(seq -s, 1 128)
for M in ${MODELS:-/work/benchtmp}/qwen3-0.6b-Q4_0.gguf ${MODELS:-/work/benchtmp}/qwen3-0.6b-Q8_0.gguf; do
 for i in 1 2 3; do
  date -u +%H:%M:%S; uptime | sed 's/.*load/load/'
  for mode in default blocks; do
   if [ $mode = blocks ]; then export FACET_GGUF_BLOCKS=1; else unset FACET_GGUF_BLOCKS; fi
   echo -n "$(basename $M) round $i facet-$mode: "
   $F run $M --prompt-ids $IDS -n 32 --ignore-eos --json --threads 2 2>/dev/null | /usr/bin/python3 -c "import json,sys; t=json.load(sys.stdin)['timings']; print('prefill128 %.1f tok/s decode %.2f tok/s'%(t['prefill_tok_s'],t['decode_tok_s']))"
  done
  unset FACET_GGUF_BLOCKS
  echo -n "$(basename $M) round $i llama.cpp: "
  OMP_WAIT_POLICY=passive LD_LIBRARY_PATH=${LLAMA_BIN:-/work/llama/build/bin} ${LLAMA_BIN:-/work/llama/build/bin}/llama-bench -m $M -p 128 -n 32 -t 2 -r 1 2>/dev/null | grep -E "pp128|tg32" | awk -F'|' '{printf "%s %s  ", $(NF-2), $(NF-1)}'; echo
 done
done
