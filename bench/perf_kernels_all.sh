#!/usr/bin/env bash
# Repeat bench/kernel_bench.sh over shapes and formats (the machine is shared: repeat,
# then take medians). Usage: bench/perf_kernels_all.sh BUILD_DIR [ROUNDS=3] > log
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?build dir}; rounds=${2:-3}
for r in $(seq "$rounds"); do
  echo "# round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
  THREADS=2 bench/kernel_bench.sh "$build" qwen3-0.6b bf16 int8 f32
  THREADS=2 bench/kernel_bench.sh "$build" llama-1b bf16 int8
done
