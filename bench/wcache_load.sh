#!/usr/bin/env bash
# Cold vs cached load time of `facet run` (issue 7: cached load >= 10x faster than the
# first load). Usage: bench/wcache_load.sh CHECKPOINT [WEIGHTS=bf16] [ROUNDS=3] [FACET=build/facet]
# The checkpoint folder gets a .facet-cache/ (removed before each round's first load).
# Per round: a conversion with the cache off, a first load (conversion + cache write),
# then two cached loads; "load" is what facet run prints (facet_model_load only),
# "wall" the whole process (load + 1 prefill token + exit).
set -euo pipefail
ckpt=${1:?checkpoint folder}
weights=${2:-bf16}
rounds=${3:-3}
facet=${4:-build/facet}
one() { # label env...
    local label=$1
    shift
    local t0 t1 out
    t0=$(date +%s.%N)
    out=$(env "$@" "$facet" run "$ckpt" --prompt-ids 1,2,3 -n 1 --weights "$weights" --threads 2 2>&1 >/dev/null)
    t1=$(date +%s.%N)
    local load
    load=$(grep -o 'load [0-9.]* s' <<<"$out" | head -1 | cut -d' ' -f2)
    printf "%-10s load %8.3f s  wall %8.3f s  %s\n" "$label" "$load" "$(echo "$t1 - $t0" | bc)" \
        "$(grep -o 'weight cache: [a-z]*' <<<"$out" | head -1)"
}
for r in $(seq "$rounds"); do
    echo "round $r"
    rm -rf "$ckpt/.facet-cache"
    one no-cache FACET_NO_CACHE=1
    one first FACET_NO_CACHE=0
    one cached FACET_NO_CACHE=0
    one cached FACET_NO_CACHE=0
done
