#!/usr/bin/env bash
# Tokenizer load time and encode throughput (bench/tokenizer_bench.c) for the Qwen3,
# Llama 3.1 and Gemma 3 tokenizers of the shared corpus, against a built library.
# Usage: bench/tokenizer_bench.sh [BUILD_DIR (default build)] [TOKENIZER_DIR...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
shared=${FACET_SHARED:-$(pwd)/../shared}
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  dirs=("$shared/corpus/tokenizers/qwen3" "$shared/corpus/tokenizers/llama3.1" "$shared/corpus/tokenizers/gemma3")
fi
[ -f "$build/libfacet.a" ] || { echo "no $build/libfacet.a: run scripts/build $build first" >&2; exit 1; }
out="$build/tokenizer_bench"
cc -O3 -march=native -std=c11 -D_GNU_SOURCE -Iinclude -Isrc bench/tokenizer_bench.c "$build/libfacet.a" \
  $(pkg-config --libs jansson libpcre2-8 libutf8proc) -lpthread -lm -o "$out"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$out" "${dirs[@]}"
