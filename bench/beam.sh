#!/usr/bin/env bash
# Constrained beam search beside greedy decoding, same model, schemas and
# prompt, alternated round by round:
#   greedy   strux generate --schema S --compact (one sequence)
#   beams B  strux generate --schema S --compact --beams B --return B
#            --early-stopping true (B sequences, every one validated)
# Per schema, the medians over rounds of: total ms after loading (prefill,
# decode, grammar; strux's own stderr figure), tokens generated (greedy: its
# completion; beams: one per beam per step, what the model ran after the
# prompt) and tokens/s, and the beam/greedy time ratio.
# --peer adds, per round, unconstrained beam search against the peer:
#   strux    strux generate --beams B --max-tokens P --early-stopping never
#   peer     transformers generate(num_beams=B, early_stopping="never"), same
#            model (float32, as strux computes), prompt, B and P steps, no
#            end token (bench/peers/hf_beam.py); both report total ms after
#            loading and B * (P - 1) / total as beam tokens/s, and the best
#            sequence's score (they must agree).
#
# usage: bench/beam.sh [--model DIR] [--rounds 3] [--threads 2] [--beams 4]
#                      [--max-tokens 96] [--schemas "ticket person"] [--peer] [--peer-tokens 32]
# Schemas are bench/schemas/NAME.json.  Needs build/strux.  Dev-time only.
set -euo pipefail
MODEL=models/random-0.6b ROUNDS=3 THREADS=2 BEAMS=4 MAXT=96 SCHEMAS="ticket person" PEER=0 PTOK=32
while [ $# -gt 0 ]; do
    case "$1" in
    --model) MODEL=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --beams) BEAMS=$2; shift 2 ;;
    --max-tokens) MAXT=$2; shift 2 ;;
    --schemas) SCHEMAS=$2; shift 2 ;;
    --peer) PEER=1; shift ;;
    --peer-tokens) PTOK=$2; shift 2 ;;
    -h|--help) sed -n 2,22p "$0"; exit 0 ;;
    *) echo "beam: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
BUILD=${STRUX_BUILD:-build}
[ -x "$BUILD/strux" ] || { echo "beam: $BUILD/strux missing (make)" >&2; exit 1; }
[ -f "$MODEL/config.json" ] || { echo "beam: no model at $MODEL (strux model random --shape 0.6b --seed 1 --out $MODEL)" >&2; exit 1; }
T=$(mktemp -d /tmp/strux-bench-beam.XXXXXX)
trap 'rm -rf "$T"' EXIT
PROMPT="Fill in the JSON for: invoice 2024-117 from Müller & Söhne, two items, total 1234.50 EUR, ticket about a broken login."
med() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "model $MODEL, threads $THREADS, beams $BEAMS, max_tokens $MAXT, rounds $ROUNDS"
printf '%-8s %-7s %5s %9s %7s %9s %6s\n' schema mode round total_ms tokens tok_per_s valid
for s in $SCHEMAS; do
    for r in $(seq "$ROUNDS"); do
        "$BUILD/strux" generate --model "$MODEL" --threads "$THREADS" --prompt "$PROMPT" \
            --schema "bench/schemas/$s.json" --compact --max-tokens "$MAXT" >"$T/g.out" 2>"$T/g.err" || true
        ms=$(sed -n 's/.*total \([0-9.]*\) ms.*/\1/p' "$T/g.err")
        tok=$(sed -n 's/.*completion \([0-9]*\) tokens.*/\1/p' "$T/g.err")
        ok=$(grep -c 'validator: valid' "$T/g.err" || true)
        echo "$s greedy $r $ms $tok" >>"$T/rows"
        printf '%-8s %-7s %5s %9s %7s %9.1f %6s\n' "$s" greedy "$r" "$ms" "$tok" \
            "$(echo "$tok $ms" | awk '{print ($2 > 0 ? $1 / ($2 / 1000) : 0)}')" "$ok/1"
        "$BUILD/strux" generate --model "$MODEL" --threads "$THREADS" --prompt "$PROMPT" \
            --schema "bench/schemas/$s.json" --compact --max-tokens "$MAXT" --beams "$BEAMS" \
            --return "$BEAMS" --early-stopping true >"$T/b.out" 2>"$T/b.err" || true
        ms=$(sed -n 's/^total \([0-9.]*\) ms.*/\1/p' "$T/b.err")
        tok=$(sed -n 's/.*prompt once, \([0-9]*\) for the beams.*/\1/p' "$T/b.err")
        ok=$(grep -c 'validator: valid' "$T/b.err" || true)
        n=$(grep -c '^--- beam ' "$T/b.out" || true)
        echo "$s beams $r $ms $tok" >>"$T/rows"
        printf '%-8s %-7s %5s %9s %7s %9.1f %6s\n' "$s" "beams$BEAMS" "$r" "$ms" "$tok" \
            "$(echo "$tok $ms" | awk '{print ($2 > 0 ? $1 / ($2 / 1000) : 0)}')" "$ok/$n"
    done
done
echo "medians:"
printf '%-8s %12s %12s %14s %14s %8s\n' schema greedy_ms beams_ms greedy_tok/s beams_tok/s ratio
for s in $SCHEMAS; do
    gm=$(awk -v s="$s" '$1 == s && $2 == "greedy" {print $4}' "$T/rows" | med)
    bm=$(awk -v s="$s" '$1 == s && $2 == "beams" {print $4}' "$T/rows" | med)
    gt=$(awk -v s="$s" '$1 == s && $2 == "greedy" && $4 > 0 {print $5 / ($4 / 1000)}' "$T/rows" | med)
    bt=$(awk -v s="$s" '$1 == s && $2 == "beams" && $4 > 0 {print $5 / ($4 / 1000)}' "$T/rows" | med)
    printf '%-8s %12.1f %12.1f %14.1f %14.1f %7.2fx\n' "$s" "$gm" "$bm" "$gt" "$bt" \
        "$(echo "$bm $gm" | awk '{print ($2 > 0 ? $1 / $2 : 0)}')"
done
[ "$PEER" = 1 ] || exit 0
PY=${STRUX_PYTHON:-.venv/bin/python}
echo "unconstrained, $PTOK steps of $BEAMS beams, against transformers:"
printf '%-6s %5s %9s %11s %12s\n' who round total_ms beam_tok/s best_score
for r in $(seq "$ROUNDS"); do
    "$BUILD/strux" generate --model "$MODEL" --threads "$THREADS" --prompt "$PROMPT" --beams "$BEAMS" \
        --max-tokens "$PTOK" --early-stopping never >"$T/u.out" 2>"$T/u.err" || true
    ms=$(sed -n 's/^total \([0-9.]*\) ms.*/\1/p' "$T/u.err")
    sc=$(sed -n 's/^--- beam 0 (score \([-0-9.]*\),.*/\1/p' "$T/u.out")
    echo "strux $r $ms" >>"$T/peer"
    printf '%-6s %5s %9s %11.1f %12s\n' strux "$r" "$ms" \
        "$(echo "$ms" | awk -v b="$BEAMS" -v p="$PTOK" '{print ($1 > 0 ? b * (p - 1) / ($1 / 1000) : 0)}')" "$sc"
    "$PY" bench/peers/hf_beam.py --model "$MODEL" --prompt "$PROMPT" --beams "$BEAMS" \
        --max-tokens "$PTOK" --threads "$THREADS" >"$T/p.out" 2>"$T/p.err" || true
    ms=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["total_ms"])' "$T/p.out" 2>/dev/null || echo 0)
    sc=$("$PY" -c 'import json,sys; print("%.6f" % json.load(open(sys.argv[1]))["score"])' "$T/p.out" 2>/dev/null || echo -)
    echo "peer $r $ms" >>"$T/peer"
    printf '%-6s %5s %9s %11.1f %12s\n' peer "$r" "$ms" \
        "$(echo "$ms" | awk -v b="$BEAMS" -v p="$PTOK" '{print ($1 > 0 ? b * (p - 1) / ($1 / 1000) : 0)}')" "$sc"
done
sm=$(awk '$1 == "strux" {print $3}' "$T/peer" | med)
pm=$(awk '$1 == "peer" {print $3}' "$T/peer" | med)
printf 'medians: strux %.1f ms, transformers %.1f ms: strux %.2fx faster\n' "$sm" "$pm" \
    "$(echo "$pm $sm" | awk '{print ($2 > 0 ? $1 / $2 : 0)}')"
