#!/usr/bin/env bash
# Resident memory of each rank of a pipeline against `facet plan` (issue 21,
# bench/RESULTS.md). Usage: bench/mpi_rss.sh MODEL [P...]   (default P: 1 2)
# For each P runs a 900-token greedy generation (bf16 weights and KV, --ctx 1024, one
# thread per rank; P = 1 alone, else `mpirun --oversubscribe -np P`) and samples
# /proc/PID/status of every rank every 0.2 s: prints each rank's RssAnon (the process's
# own memory: weights copied out of the checkpoint, KV, scratch, stacks, MPI) during the
# generation (the median of the second half of its samples, the last two left out: the
# teardown frees) and its peak (the load's transient buffers included), and the plan's
# figure for that rank (the single process: plan's total).
set -euo pipefail
MODEL=${1:?usage: bench/mpi_rss.sh MODEL [P...]}
shift
PS=("$@"); [ ${#PS[@]} -gt 0 ] || PS=(1 2)
BIN=$(realpath "${FACET_BIN:-build/facet}")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
ARGS=(--weights bf16 --kv-cache bf16 --ctx 1024)
RUN=(--prompt-ids 1,2,3,4,5,6,7,8 -n ${N:-900} --ignore-eos --no-cache --threads 1 "${ARGS[@]}")
for P in "${PS[@]}"; do
  if [ "$P" = 1 ]; then
    "$BIN" run "$MODEL" "${RUN[@]}" >/dev/null 2>&1 &
  else
    mpirun --oversubscribe -np "$P" "$BIN" run "$MODEL" "${RUN[@]}" --pipeline-parallel "$P" \
      >/dev/null 2>&1 &
  fi
  JOB=$!
  declare -A PEAK=() LAST=()
  while kill -0 "$JOB" 2>/dev/null; do
    for pid in $(pgrep -f "^$BIN run $MODEL" || true); do
      rank=$({ tr '\0' '\n' < /proc/$pid/environ; } 2>/dev/null |
             sed -n 's/^OMPI_COMM_WORLD_RANK=//p' || true)
      rss=$({ awk '/^RssAnon/ {print $2}' < /proc/$pid/status; } 2>/dev/null || true)
      key=${rank:-0}
      [ -n "$rss" ] || continue
      [ "$rss" -gt "${PEAK[$key]:-0}" ] && PEAK[$key]=$rss
      LAST[$key]="${LAST[$key]:-} $rss"
    done
    sleep 0.2
  done
  wait "$JOB" || true
  steady() { local v; v=$(tr ' ' '\n' <<<"$1" | grep . | head -n -2)
             tail -n $(( ($(wc -l <<<"$v") + 1) / 2 )) <<<"$v" | sort -n |
             awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  for k in "${!LAST[@]}"; do LAST[$k]=$(steady "${LAST[$k]}"); done
  if [ "$P" = 1 ]; then
    plan=$("$BIN" plan "$MODEL" "${ARGS[@]}" | sed -n 's/^memory at .*(\([0-9.]* MiB\)).*/\1/p')
    printf 'P=1        RssAnon %7.1f MiB (peak %7.1f)   plan %s\n' \
      "$(echo "${LAST[0]:-0} / 1024" | bc -l)" "$(echo "${PEAK[0]:-0} / 1024" | bc -l)" "${plan:-?}"
  else
    mapfile -t plans < <("$BIN" plan "$MODEL" "${ARGS[@]}" --pipeline-parallel "$P" |
                         sed -n 's/.* = \([0-9.]* MiB\) per rank.*/\1/p')
    for ((r = 0; r < P; r++)); do
      printf 'P=%d rank %d RssAnon %7.1f MiB (peak %7.1f)   plan %s\n' "$P" "$r" \
        "$(echo "${LAST[$r]:-0} / 1024" | bc -l)" "$(echo "${PEAK[$r]:-0} / 1024" | bc -l)" \
        "${plans[$r]:-?}"
    done
  fi
  unset PEAK LAST
done
