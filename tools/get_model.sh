#!/usr/bin/env bash
# Prints the path of a Qwen3 model directory for the main job, making one if
# needed (progress and notes go to stderr):
#   1. $STRUX_MODEL if set (a Hugging Face Qwen3 directory);
#   2. models/Qwen3-0.6B if already downloaded;
#   3. a download of Qwen/Qwen3-0.6B from huggingface.co when it is reachable;
#   4. otherwise a RANDOM-WEIGHT stand-in of the same shape, written by
#      `strux model random` with the real tokenizer (the output says so).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${STRUX_BUILD:-build}
SHAPE=${STRUX_RANDOM_SHAPE:-0.6b}
if [ -n "${STRUX_MODEL:-}" ]; then
    echo "$STRUX_MODEL"; exit 0
fi
real=models/Qwen3-0.6B
if [ -f "$real/model.safetensors" ] && [ -f "$real/config.json" ]; then
    echo "$real"; exit 0
fi
hf=https://huggingface.co/Qwen/Qwen3-0.6B/resolve/main
if [ -z "${STRUX_OFFLINE:-}" ] && curl -sfI --max-time 5 "$hf/config.json" >/dev/null 2>&1; then
    echo "get_model: downloading Qwen/Qwen3-0.6B (1.5 GB) into $real" >&2
    mkdir -p "$real.part"
    for f in config.json tokenizer.json tokenizer_config.json generation_config.json model.safetensors; do
        curl -fL --retry 3 --progress-bar -o "$real.part/$f" "$hf/$f" >&2
    done
    rm -rf "$real" && mv "$real.part" "$real"
    echo "$real"; exit 0
fi
dir=models/random-$SHAPE
if [ ! -f "$dir/model.safetensors" ]; then
    echo "get_model: huggingface.co is not reachable: writing a RANDOM-WEIGHT Qwen3 ($SHAPE shape)" >&2
    echo "get_model: stand-in with the real tokenizer into $dir" >&2
    "$B/strux" model random --shape "$SHAPE" --seed 1 --out "$dir" >&2
fi
echo "$dir"
