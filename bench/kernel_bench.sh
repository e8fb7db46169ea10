#!/usr/bin/env bash
# Build bench/kernel_bench.c against a facet build and run it for each format.
# Usage: bench/kernel_bench.sh BUILD_DIR SHAPE [FORMATS...]   (SHAPE: qwen3-0.6b | llama-1b)
# Env: THREADS (2), REPS (5), MODE (all; multi: q/k/v + gate/up separate vs facet_matmul_multi).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?build dir}; shape=${2:?shape}; shift 2
formats=${*:-"bf16 int8 f32"}
gcc -std=c11 -O2 -D_GNU_SOURCE -Iinclude -Isrc bench/kernel_bench.c "$build/libfacet.a" \
    -lpthread -lm -o "$build/kernel_bench"
for f in $formats; do "$build/kernel_bench" "$shape" "$f" "${THREADS:-2}" "${REPS:-5}" "${MODE:-all}"; done
