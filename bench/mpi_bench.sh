#!/usr/bin/env bash
# Decode tokens/s of `facet run` alone and as a P-stage pipeline on this machine (issue 21,
# bench/RESULTS.md). Usage: bench/mpi_bench.sh MODEL [REPS]   (build/facet, mpirun)
# Prints per configuration the median decode tok/s of REPS runs (default 3) and rank 0's
# seconds in MPI calls per decoded token (waiting on the other stages included).
set -euo pipefail
MODEL=${1:?usage: bench/mpi_bench.sh MODEL [REPS]}
REPS=${2:-3}
BIN=${FACET_BIN:-build/facet}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
ARGS=(--prompt-ids 1,2,3,4,5,6,7,8 -n 256 --ignore-eos --weights bf16 --kv-cache bf16
      --no-cache --threads 1 --ctx 1024)
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() { # label, command prefix...
  local label=$1; shift
  local toks=() comm=()
  for _ in $(seq "$REPS"); do
    local err
    err=$("$@" "$BIN" run "$MODEL" "${ARGS[@]}" "${PAR[@]}" 2>&1 >/dev/null)
    toks+=("$(grep -o 'decode 256 tokens, [0-9.]* tok/s' <<<"$err" | awk '{print $4}')")
    comm+=("$(grep -o 'spent [0-9.]* s in MPI' <<<"$err" | awk '{print $2 / 256 * 1000}' || true)")
  done
  printf '%-40s decode %6s tok/s   rank 0 in MPI %s ms/token\n' "$label" \
    "$(printf '%s\n' "${toks[@]}" | median)" "$(printf '%s\n' "${comm[@]:-0}" | median)"
}
PAR=(); run "P=1 (one process)" env
PAR=(--pipeline-parallel 2); run "P=2 (mpirun -np 2, polling)" mpirun -np 2
PAR=(--pipeline-parallel 2); run "P=2 (mpirun --oversubscribe, yielding)" mpirun --oversubscribe -np 2
PAR=(--pipeline-parallel 4); run "P=4 (mpirun --oversubscribe -np 4)" mpirun --oversubscribe -np 4
