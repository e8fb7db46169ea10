#!/usr/bin/env bash
# bench/vulkan_gpu.sh — the Vulkan backend on a lent GPU (issue 24): one prepared script
# for the device machine (an NVIDIA H200 here; /work/.library/device/README.md), dry-run
# on Mesa's lavapipe first. See bench/README.md, "The Vulkan backend on a GPU".
#
#   bench/vulkan_gpu.sh --prepare    here: build facet for the GPU machine into build-gpu/
#                                    (no -march=native, no MPI) and bundle it with the
#                                    shared libraries it needs into .gpu/ (git-ignored)
#   bench/vulkan_gpu.sh --dry-run    here, on lavapipe: the whole sequence with tiny shapes
#   bench/vulkan_gpu.sh              there: device run(command="bash bench/vulkan_gpu.sh",
#                                    carry=[".gpu"], timeout_s=390)
#
# The device machine has no package registry, and may lack glslc, the Vulkan headers and
# loader, jansson, pcre2, utf8proc, libmicrohttpd, xxhash: nothing is built there. The
# binary built here (x86-64, SPIR-V embedded at build time) travels in .gpu/ with those
# libraries (copied from this machine's packages, not downloaded) and Debian's Vulkan
# loader; NVIDIA's Vulkan driver is the machine's own (its ICD file under
# /usr/local/nvidia when the loader finds none, VK_DRIVER_FILES then).
#
# What it does, each step bounded by `timeout` and the whole by BUDGET seconds (a step
# that fails is logged and the next runs), writing to $OUT:
#   device.txt     nvidia-smi, the loader's device, its limits (facet conform)
#   ops.txt        tests/unit/test_vulkan_ops.c: every shader against the CPU kernel
#   identity.txt   tests/e2e/test_vulkan.py + test_vulkan_device.py on the GPU: the bundled
#                  model's published ids, shrunk reference checkpoints (Llama, Qwen3,
#                  Gemma 2 window/softcaps, f16, Baichuan 2) greedy-identical to the CPU
#                  exact path, logits within 1e-3, batched serve = alone, the --device paths
#   bench-llama32-1b.json, bench-qwen3-0.6b.json   facet bench --backend vulkan on random
#                  bf16 checkpoints of Llama-3.2-1B's and Qwen3-0.6B's published shapes:
#                  TTFT at 160 / 256 / 550 prompt tokens, decode at concurrency 1 and 8
#   summary.md     the table (bench/vulkan_gpu_summary.py), decode as a fraction of the
#                  card's memory bandwidth (H200: 4.8 TB/s), beside the seed system's
#                  published H100 CUDA figures for Llama-3.2-1B
#   log.txt        everything (7 files: the device tool returns at most 8)
set -u
shopt -s nullglob
cd "$(dirname "$0")/.."
REPO=$PWD
MODE=gpu
case "${1:-}" in
--prepare) MODE=prepare ;;
--dry-run) MODE=dry ;;
"") ;;
*) echo "usage: bench/vulkan_gpu.sh [--prepare | --dry-run]" >&2; exit 1 ;;
esac

# ---------------------------------------------------------------- prepare (here)
if [ "$MODE" = prepare ]; then
    set -e
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DFACET_NATIVE=OFF -DFACET_MPI=OFF \
        -DFACET_VULKAN=ON >/dev/null
    cmake --build build-gpu -j2 --target facet test_vulkan_ops
    rm -rf .gpu && mkdir -p .gpu/lib
    cp build-gpu/facet build-gpu/test_vulkan_ops .gpu/
    # every library the two binaries load but glibc's own, and the Vulkan loader
    for lib in $( (ldd build-gpu/facet; ldd build-gpu/test_vulkan_ops) | awk '/=> \//{print $3}' | sort -u); do
        case "$(basename "$lib")" in
        libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
        *) cp -L "$lib" .gpu/lib/ ;;
        esac
    done
    # libglvnd's dispatch libraries, which NVIDIA's Vulkan driver (libGLX_nvidia) loads,
    # where this machine has them (the device README's .gl/ packages are the other way)
    for lib in libGLdispatch.so.0 libGLX.so.0 libEGL.so.1 libOpenGL.so.0 libGL.so.1; do
        [ -e "/usr/lib/x86_64-linux-gnu/$lib" ] && cp -L "/usr/lib/x86_64-linux-gnu/$lib" .gpu/lib/
    done
    du -sh .gpu
    echo "prepared .gpu/ (git-ignored): run on the device with carry=[\".gpu\"]"
    exit 0
fi

# ---------------------------------------------------------------- run (there, or dry here)
OUT=${OUT:-/tmp/vulkan_gpu_out}
mkdir -p "$OUT"
BUDGET=${BUDGET:-330} # seconds for everything: with timeout_s=390 and a machine's start,
                      # a rerun still fits in the 15 minutes of device time
LOG=$OUT/log.txt
: >"$LOG"
say() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$LOG"; }
left() { echo $((BUDGET - SECONDS)); }
# step SECONDS NAME command...: bounded by its own limit and what is left of the budget
step() {
    local lim=$1 name=$2
    shift 2
    local l
    l=$(left)
    [ "$lim" -gt "$l" ] && lim=$l
    if [ "$lim" -le 5 ]; then
        say "SKIPPED $name: the budget is spent"
        return 1
    fi
    say "$name (limit ${lim}s)"
    timeout -k 5 "$lim" "$@" >>"$LOG" 2>&1
    local rc=$?
    say "$name: exit $rc"
    return $rc
}

if [ "$MODE" = gpu ]; then
    G=$REPO/.gpu
    [ -x "$G/facet" ] || { say "no .gpu/facet: run bench/vulkan_gpu.sh --prepare here and carry .gpu"; exit 1; }
    # the device README's packages, when carried instead
    if [ -d .gl ]; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
    export LD_LIBRARY_PATH="$G/lib:/usr/local/nvidia/lib64:/usr/local/nvidia/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    have_icd=0
    for d in /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/share/vulkan/icd.d; do
        ls "$d"/*nvidia* >/dev/null 2>&1 && have_icd=1
    done
    if [ $have_icd = 0 ] && [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
        export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
        export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
    fi
    FACET=$G/facet OPS=$G/test_vulkan_ops PY=python3
    THREADS=$(nproc)
    SHAPES=160,256,550 CONC=1,8 NGEN=64 REPS=3
    SHRINK=()
    PEAK_BW=4.8e12 CARD="NVIDIA H200 (4.8 TB/s, the vendor's datasheet)"
else # dry: lavapipe, tiny shapes, the build here
    export LP_NUM_THREADS=2
    FACET=$REPO/build/facet OPS=$REPO/build/test_vulkan_ops PY=/usr/bin/python3
    [ -x "$REPO/.gpu/facet" ] && FACET=$REPO/.gpu/facet OPS=$REPO/.gpu/test_vulkan_ops &&
        export LD_LIBRARY_PATH="$REPO/.gpu/lib"
    THREADS=2
    SHAPES=16,32,64 CONC=1,8 NGEN=8 REPS=1
    SHRINK=(--shrink --layers 2 --hidden 256 --heads 4 --kv-heads 2 --head-dim 64 --intermediate 512 --vocab 2048)
    PEAK_BW=${PEAK_BW:-16e9} CARD="lavapipe (dry run; bandwidth fraction against ${PEAK_BW} B/s, a nominal figure)"
fi
export FACET_BIN=$FACET
CK=${CK:-/tmp/vulkan_gpu_ck_$MODE}
mkdir -p "$CK"

say "mode $MODE, facet $FACET, out $OUT, budget ${BUDGET}s"
{
    uname -a
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv
    echo "missing libraries:"; ldd "$FACET" | grep "not found" || echo "  none"
    echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"
} >"$OUT/device.txt" 2>&1
timeout -k 5 60 "$FACET" conform models/stories260k --backend vulkan >>"$OUT/device.txt" 2>&1
say "device: exit $?"
cat "$OUT/device.txt" >>"$LOG"

# the random checkpoints, written while the checks run (numpy, on the host's cores)
gen() { # NAME CONFIG
    [ -e "$CK/$1/config.json" ] && return 0
    "$PY" tests/ref/gen_checkpoint.py "$2" "$CK/$1" --dtype bf16 "${SHRINK[@]}"
}
( gen llama32-1b tests/data/ref/configs/meta-llama__Llama-3.2-1B-Instruct__resaved >"$CK/gen-llama.txt" 2>&1 ) &
GEN1=$!
( gen qwen3-0.6b tests/data/ref/configs/Qwen__Qwen3-0.6B__dims >"$CK/gen-qwen.txt" 2>&1 ) &
GEN2=$!
# the writers never outlive the script (here in a dry run, there within the budget)
trap 'for p in $GEN1 $GEN2; do pkill -P "$p"; kill "$p"; done 2>/dev/null' EXIT
# wait_for PID: its exit status, or 124 once the budget is spent
wait_for() {
    while kill -0 "$1" 2>/dev/null; do
        [ "$(left)" -le 10 ] && return 124
        sleep 1
    done
    wait "$1"
}

step 60 "ops: test_vulkan_ops (every shader against the CPU kernel)" "$OPS"
grep -E "^\[ *(OK|FAILED|PASSED|ERROR|SKIPPED)|on vulkan device" "$LOG" >"$OUT/ops.txt"
step 150 "identity: test_vulkan.py, test_vulkan_device.py on the device" \
    "$PY" -m pytest -q -rA --tb=short -p no:cacheprovider tests/e2e/test_vulkan.py \
    tests/e2e/test_vulkan_device.py
awk '/identity: test_vulkan.py/,/identity: .*exit/' "$LOG" |
    grep -E "^(PASSED|FAILED|SKIPPED|ERROR|XFAIL)|passed|failed|error|identity" >"$OUT/identity.txt"

# each checkpoint benched as soon as it is written (Llama-3.2-1B first: the published
# H100 figures are for it)
for pair in "llama32-1b:$GEN1" "qwen3-0.6b:$GEN2"; do
    name=${pair%%:*}
    say "waiting for checkpoint $name"
    wait_for "${pair##*:}"
    rc=$?
    say "checkpoint $name: exit $rc ($(du -sh "$CK/$name" 2>/dev/null | cut -f1))"
    [ $rc = 0 ] || continue
    step 120 "bench $name" "$FACET" bench "$CK/$name" --backend vulkan --weights bf16 \
        --shapes "$SHAPES" --reps "$REPS" --concurrency "$CONC" -n "$NGEN" --threads "$THREADS" \
        --json "$OUT/bench-$name.json"
done
cat "$CK"/gen-*.txt >>"$LOG" 2>/dev/null

"$PY" bench/vulkan_gpu_summary.py --card "$CARD" --peak-bw "$PEAK_BW" --device "$OUT/device.txt" \
    "$OUT"/bench-*.json >"$OUT/summary.md" 2>>"$LOG"
cat "$OUT/summary.md" | tee -a "$LOG"
say "done in ${SECONDS}s"
