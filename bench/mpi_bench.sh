#!/usr/bin/env bash
# Prefill and decode speed of `facet bench` alone and under mpirun as a P-stage pipeline,
# with and without micro-batches (issue 21, bench/RESULTS.md).
# Usage: bench/mpi_bench.sh MODEL [REPS]   (build/facet, mpirun; REPS default 3)
# Per configuration, the median over REPS rounds (configurations interleaved in each
# round, each run under flock /work/notes/bench.lock) of: prefill tok/s of a 128-token
# prompt, decode tok/s of one stream, aggregate decode tok/s of 4 concurrent streams, and
# rank 0's MPI ms per 4-stream step (waits on the other stages included).
# Micro-batches: FACET_MICRO_BATCHES unset = chosen by rows (the 128-token prompt splits
# into P, the 4-row decode steps do not); =2 forces 2 on every step of 2 or more rows;
# =1 never splits.
set -euo pipefail
MODEL=${1:?usage: bench/mpi_bench.sh MODEL [REPS]}
REPS=${2:-3}
BIN=${FACET_BIN:-build/facet}
LOCK=${BENCH_LOCK:-/work/notes/bench.lock}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
ARGS=(--weights bf16 --kv-cache bf16 --threads 1 --shapes 128 --reps 1 --concurrency 1,4 -n 64)
NAMES=("P=1 (one process)" "P=2, micro-batches by rows" "P=2, micro-batches forced (2)"
       "P=2, no micro-batches" "P=4, micro-batches by rows")
cmd() { # configuration index -> the command line
  case $1 in
    0) echo "$BIN bench $MODEL --no-cold ${ARGS[*]}" ;;
    1) echo "mpirun --oversubscribe -np 2 $BIN bench $MODEL ${ARGS[*]} --pipeline-parallel 2" ;;
    2) echo "mpirun --oversubscribe -np 2 -x FACET_MICRO_BATCHES=2 $BIN bench $MODEL ${ARGS[*]} --pipeline-parallel 2" ;;
    3) echo "mpirun --oversubscribe -np 2 -x FACET_MICRO_BATCHES=1 $BIN bench $MODEL ${ARGS[*]} --pipeline-parallel 2" ;;
    4) echo "mpirun --oversubscribe -np 4 $BIN bench $MODEL ${ARGS[*]} --pipeline-parallel 4" ;;
  esac
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for r in $(seq "$REPS"); do
  for c in "${!NAMES[@]}"; do
    # shellcheck disable=SC2046
    out=$(flock "$LOCK" $(cmd "$c") 2>/dev/null)
    awk '$1 == 128 {print $3}' <<<"$out" >>"$TMP/pre$c"
    awk '$1 == 1 && NF >= 5 {print $3}' <<<"$out" >>"$TMP/one$c"
    awk '$1 == 4 && NF >= 5 {print $3}' <<<"$out" >>"$TMP/four$c"
    awk '$1 == 4 && NF == 5 && $4 ~ /^[0-9.]+$/ && $4 < 1e4 {print $4}' <<<"$out" >>"$TMP/mpi$c"
  done
done
printf '%-32s %14s %14s %16s %14s\n' "configuration" "prefill tok/s" "decode 1 tok/s" \
  "4 streams tok/s" "MPI ms/step"
for c in "${!NAMES[@]}"; do
  mpi=$([ "$c" = 0 ] && echo - || median <"$TMP/mpi$c")
  printf '%-32s %14s %14s %16s %14s\n' "${NAMES[$c]}" "$(median <"$TMP/pre$c")" \
    "$(median <"$TMP/one$c")" "$(median <"$TMP/four$c")" "$mpi"
done
