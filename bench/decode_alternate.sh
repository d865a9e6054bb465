#!/usr/bin/env bash
# Single-stream bf16 decode, strux against Hugging Face transformers,
# alternated round by round on the same model files: on a shared VM the
# memory bandwidth (what decode is bound by) drifts by 1.5x within minutes,
# so one run of each says little; the median of the per-round ratios is
# the figure to quote.  Each round measures the machine's read bandwidth
# too (bench_decode does), so every strux figure comes with its ceiling.
# Both engines decode after the same --prompt tokens of context (strux's
# ceiling then counts its KV-cache reads as well as the weights; --kv bf16
# runs strux with its opt-in bf16 cache).
#
# usage: bench/decode_alternate.sh [--model DIR] [--rounds 7] [--threads 2]
#                                  [--prompt 32] [--decode 32] [--kv f32|bf16]
# Needs build/bench_decode (make bench) and the repo venv with torch and
# transformers (tests/fixtures/requirements.txt).  Dev-time only.
set -euo pipefail
MODEL=models/random-0.6b ROUNDS=7 THREADS=2 PROMPT=32 DECODE=32 KV=f32
while [ $# -gt 0 ]; do
    case "$1" in
    --model) MODEL=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --prompt) PROMPT=$2; shift 2 ;;
    --decode) DECODE=$2; shift 2 ;;
    --kv) KV=$2; shift 2 ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) echo "decode_alternate: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
BUILD=${STRUX_BUILD:-build}
PY=${STRUX_PYTHON:-.venv/bin/python}
[ -x "$BUILD/bench_decode" ] || { echo "decode_alternate: $BUILD/bench_decode missing (make bench)" >&2; exit 1; }
[ -f "$MODEL/config.json" ] || { echo "decode_alternate: no model at $MODEL (strux model random --shape 0.6b --seed 1 --out $MODEL)" >&2; exit 1; }
"$PY" -c "import torch, transformers" 2>/dev/null ||
    { echo "decode_alternate: $PY lacks torch/transformers (pip install -r tests/fixtures/requirements.txt)" >&2; exit 1; }

T=$(mktemp -d /tmp/strux-alt.XXXXXX)
trap 'rm -rf "$T"' EXIT
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p'), $THREADS threads, $MODEL, prompt $PROMPT, decode $DECODE, strux KV cache $KV"
printf '%-6s %12s %12s %14s %16s %8s\n' round "strux tok/s" "read GB/s" "% of ceiling" "transformers" ratio
for r in $(seq 1 "$ROUNDS"); do
    "$BUILD/bench_decode" --model "$MODEL" --threads "$THREADS" --prompt "$PROMPT" \
        --decode "$DECODE" --decode-context "$PROMPT" --kv "$KV" --modes bf16 --bw-mib 1024 >"$T/sx.txt" 2>&1
    "$PY" bench/peers/hf_generate.py --model "$MODEL" --threads "$THREADS" --prompt "$PROMPT" \
        --decode "$DECODE" --runs 1 2>/dev/null | tail -1 >"$T/hf.json"
    sx=$(sed -n 's/^bf16 decode_tok_s: \([0-9.]*\).*/\1/p' "$T/sx.txt")
    bw=$(sed -n 's/^bf16 memory_read_gb_s_best: \([0-9.]*\).*/\1/p' "$T/sx.txt")
    pc=$(sed -n 's/^bf16 decode_pct_of_ceiling: \([0-9.]*\).*/\1/p' "$T/sx.txt")
    hf=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["generate_decode_tok_s"])' "$T/hf.json")
    ratio=$(awk -v a="$sx" -v b="$hf" 'BEGIN { printf "%.2f", a / b }')
    printf '%-6s %12s %12s %14s %16s %8s\n' "$r" "$sx" "$bw" "$pc%" "$hf" "${ratio}x"
    echo "$sx $hf $ratio" >>"$T/rows"
done
awk '{ s[NR] = $1; h[NR] = $2; q[NR] = $3 }
     function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
         if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
         return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
     END { n = NR; printf "median: strux %.2f tok/s, transformers %.2f tok/s, ratio %.2fx (rounds %d)\n",
           med(s, n), med(h, n), med(q, n), n }' "$T/rows"
