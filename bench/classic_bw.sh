#!/bin/sh
# classic_bw.sh — decode of full-size random-weight shapes against the read-bandwidth
# ceiling: GPT-2 124M and Pythia-1B in bf16 and int8 (issue 28), OLMoE-1B-7B with all 16
# layers in int8 (issue 27). bench/RESULTS.md has the figures and how to read them.
#
#   bench/classic_bw.sh [ROUNDS]            (default 3)
#
# Environment: FACET (default build/facet), DIR (default /work/benchtmp/classic),
# CELLS (default "gpt2-124m:bf16 gpt2-124m:int8 pythia-1b:bf16 pythia-1b:int8
# olmoe-1b-7b:int8"), LOCK (default /work/notes/bench.lock: no two benchmarks overlap),
# RES (default DIR/results: the bench JSON files), KEEP_OLMOE=1 keeps OLMoE's 13.8 GB
# checkpoint and 7.4 GB int8 cache at the end (deleted otherwise: disk is tight here).
#
# Checkpoints: the public config.json values below, random BF16 weights written by
# tests/ref/gen_checkpoint.py when DIR/<shape> is missing (GPT-2 0.25 GB, ~10 s;
# Pythia-1B 2.0 GB, ~1 min; OLMoE-1B-7B 13.8 GB, ~7 min), then one untimed run per
# cell writes its weight cache (OLMoE int8: ~3.5 min on a loaded machine). Each round
# then runs, per cell, under flock:
#
#   facet bench DIR/<shape> --weights F --threads 2 --shapes 64 --reps 1 \
#       --concurrency 1 -n 128 --no-cold --json DIR/results/<shape>-F-r<round>.json
#
# whose decode is 8 chunks of 16 greedy steps, each after its own 128 MiB read probe;
# "of ceiling" = median over the chunks of tok/s / (probe GB/s / GB read per decoded
# token), the bytes being `decode_bytes` (all weights but the untied embedding table's
# unread rows and the experts a token does not choose). The summary at the end prints,
# per cell, each round's decode tok/s, probe GB/s and fraction, and their medians.
# Run time, checkpoints and caches present, 3 rounds: ~6 min estimated on a quiet machine
# (here, loaded: OLMoE alone 3.4-3.9 min, GPT-2 + Pythia ~25 min waiting on the lock).
set -eu
ROUNDS=${1:-3}
REPO=$(cd "$(dirname "$0")/.." && pwd)
FACET=${FACET:-$REPO/build/facet}
DIR=${DIR:-/work/benchtmp/classic}
LOCK=${LOCK:-/work/notes/bench.lock}
CELLS=${CELLS:-"gpt2-124m:bf16 gpt2-124m:int8 pythia-1b:bf16 pythia-1b:int8 olmoe-1b-7b:int8"}
RES=${RES:-$DIR/results}
mkdir -p "$RES"

# openai-community/gpt2 (124M), EleutherAI/pythia-1b and allenai/OLMoE-1B-7B-0924
# config.json values as published (Pythia-1B and OLMoE as in tests/e2e/test_reference_
# classic.py PYTHIA_1B and tests/e2e/test_reference_moe.py OLMOE_1B_7B)
cat > "$DIR/gpt2-124m.json" <<'EOF'
{"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
 "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
 "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
 "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": null,
 "summary_first_dropout": 0.1, "summary_proj_to_labels": true, "summary_type": "cls_index",
 "summary_use_proj": true, "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
 "vocab_size": 50257}
EOF
cat > "$DIR/pythia-1b.json" <<'EOF'
{"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "bos_token_id": 0,
 "eos_token_id": 0, "hidden_act": "gelu", "hidden_size": 2048, "initializer_range": 0.02,
 "intermediate_size": 8192, "layer_norm_eps": 1e-05, "max_position_embeddings": 2048,
 "num_attention_heads": 8, "num_hidden_layers": 16, "rotary_emb_base": 10000,
 "rotary_pct": 0.25, "tie_word_embeddings": false, "torch_dtype": "float16",
 "transformers_version": "4.24.0", "use_cache": true, "use_parallel_residual": true,
 "vocab_size": 50304}
EOF
cat > "$DIR/olmoe-1b-7b.json" <<'EOF'
{"architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "hidden_size": 2048,
 "intermediate_size": 1024, "num_experts": 64, "num_experts_per_tok": 8,
 "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 16,
 "norm_topk_prob": false, "max_position_embeddings": 4096, "rope_theta": 10000.0,
 "rms_norm_eps": 1e-05, "vocab_size": 50304, "tie_word_embeddings": false,
 "attention_bias": false, "clip_qkv": null, "hidden_act": "silu", "bos_token_id": null,
 "eos_token_id": 50279, "pad_token_id": 1, "torch_dtype": "float32",
 "router_aux_loss_coef": 0.01, "output_router_logits": false}
EOF

t0=$(date +%s)
for cell in $CELLS; do
    m=${cell%%:*} f=${cell#*:}
    if [ ! -f "$DIR/$m/model.safetensors" ]; then
        echo "== writing $DIR/$m (random bf16 weights)"
        nice /usr/bin/python3 "$REPO/tests/ref/gen_checkpoint.py" --dtype bf16 "$DIR/$m.json" "$DIR/$m"
    fi
    echo "== $m $f: weight cache"
    "$FACET" run "$DIR/$m" --weights "$f" --prompt-ids 1,2,3 -n 1 --json --threads 2 >/dev/null
done
echo "== checkpoints and caches ready after $(($(date +%s) - t0)) s"

for r in $(seq 1 "$ROUNDS"); do
    for cell in $CELLS; do
        m=${cell%%:*} f=${cell#*:}
        out="$RES/$m-$f-r$r.json"
        echo "== round $r: $m $f ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))"
        flock "$LOCK" "$FACET" bench "$DIR/$m" --weights "$f" --threads 2 --shapes 64 --reps 1 \
            --concurrency 1 -n 128 --no-cold --json "$out" | grep -E "^1 |bandwidth|GB read"
    done
done
echo "== rounds done after $(($(date +%s) - t0)) s"

/usr/bin/python3 - "$RES" "$ROUNDS" $CELLS <<'EOF'
import json, statistics, sys
res, rounds, cells = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print("| shape | weights | GB read / token | decode tok/s per round (median) | probe GB/s | "
      "of ceiling per round (median) |")
print("| --- | --- | --- | --- | --- | --- |")
for cell in cells:
    m, f = cell.split(":")
    runs = []
    for r in range(1, rounds + 1):
        try:
            runs.append(json.load(open("%s/%s-%s-r%d.json" % (res, m, f, r))))
        except (OSError, ValueError):
            pass
    if not runs:
        continue
    d = [j["decode"][0] for j in runs]
    tok = [x["tok_s_per_seq"] for x in d]
    bw = [x["bandwidth_gb_s"] for x in d]
    of = [x["of_ceiling"] for x in d]
    print("| %s | %s | %.3f | %s (%.1f) | %s | %s (%.0f%%) |" % (
        m, f, runs[0]["decode_bytes"] / 1e9, ", ".join("%.1f" % t for t in tok),
        statistics.median(tok), ", ".join("%.1f" % b for b in bw),
        ", ".join("%.0f%%" % (100 * o) for o in of), 100 * statistics.median(of)))
EOF

if [ "${KEEP_OLMOE:-0}" != 1 ] && [ -d "$DIR/olmoe-1b-7b" ]; then
    echo "== deleting $DIR/olmoe-1b-7b (KEEP_OLMOE=1 keeps it)"
    rm -rf "$DIR/olmoe-1b-7b"
fi
