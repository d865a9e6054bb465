#!/usr/bin/env bash
# Schema-constrained generation on the CPU, alternated round by round:
#   strux          strux generate --schema (the LM head computes only the
#                  32-row panels the grammar's mask allows);
#   strux dense    the same with --dense-logits (every logit computed): the
#                  reply must be the same token ids, only the speed differs;
#   peer           Hugging Face transformers + XGrammar's logits processor
#                  (bench/peers/hf_xgrammar.py), same model files, same chat
#                  prompt, greedy, same token budget.
# One line per round and schema, then the medians.  Decode tok/s counts
# output tokens after the first (strux's include the tokens the grammar
# forced, which ride along with the next step); total ms is the whole
# request after loading (prefill, decode, grammar); "json" says whether
# the peer's reply parses (strux's always validates: generate checks it).  Whitespace is off
# (--compact; XGrammar any_whitespace=False) so random weights give short
# documents rather than runs of blanks.
#
# usage: bench/constrained_alternate.sh [--model DIR] [--rounds 5] [--threads 2]
#                                       [--max-tokens 96] [--schemas "invoice ticket summary"]
#                                       [--no-peer]
# Schemas are bench/schemas/NAME.json.  Needs build/strux; the peer needs
# torch, transformers and xgrammar in the repo's .venv.  Dev-time only.
set -euo pipefail
MODEL=models/random-0.6b ROUNDS=5 THREADS=2 MAXT=96 SCHEMAS="invoice ticket summary" PEER=1
while [ $# -gt 0 ]; do
    case "$1" in
    --model) MODEL=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --max-tokens) MAXT=$2; shift 2 ;;
    --schemas) SCHEMAS=$2; shift 2 ;;
    --no-peer) PEER=0; shift ;;
    -h|--help) sed -n 2,22p "$0"; exit 0 ;;
    *) echo "constrained_alternate: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
BUILD=${STRUX_BUILD:-build}
PY=${STRUX_PYTHON:-.venv/bin/python}
[ -x "$BUILD/strux" ] || { echo "constrained_alternate: $BUILD/strux missing (make)" >&2; exit 1; }
[ -f "$MODEL/config.json" ] || { echo "constrained_alternate: no model at $MODEL (strux model random --shape 0.6b --seed 1 --out $MODEL)" >&2; exit 1; }
for s in $SCHEMAS; do
    [ -f "bench/schemas/$s.json" ] || { echo "constrained_alternate: no bench/schemas/$s.json" >&2; exit 1; }
done
if [ "$PEER" = 1 ] && ! "$PY" -c "import torch, transformers, xgrammar" 2>/dev/null; then
    echo "constrained_alternate: $PY lacks torch, transformers (tests/fixtures/requirements.txt) or xgrammar (pip install xgrammar==0.2.9); or pass --no-peer" >&2
    exit 1
fi
PROMPT="Extract the fields as JSON from this message: Invoice 4411 from ACME GmbH, 3 x 12.50 EUR and 1 x 99.00 EUR, total 136.50 EUR, already paid by card. Customer asks why shipping is late."
T=$(mktemp -d /tmp/strux-calt.XXXXXX)
trap 'rm -rf "$T"' EXIT

sx_run() { # schema, extra flag, out prefix
    "$BUILD/strux" generate --model "$MODEL" --threads "$THREADS" --prompt "$PROMPT" \
        --schema "bench/schemas/$1.json" --compact --max-tokens "$MAXT" --print-ids $2 \
        >"$3.out" 2>"$3.err" || { echo "constrained_alternate: strux failed:" >&2; cat "$3.err" >&2; exit 1; }
}
field() { sed -n "s|.*$1 \([0-9.]*\) $2.*|\1|p" "$3"; }

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p'), $THREADS threads, $MODEL, max tokens $MAXT, greedy, compact JSON"
printf '%-8s %5s %7s %7s %7s %7s %6s %9s %9s %9s %8s %5s\n' schema round tokens forced "tok/s" dense "x" "total ms" "peer tok" "peer t/s" "peer ms" "json"
for r in $(seq 1 "$ROUNDS"); do
    for s in $SCHEMAS; do
        sx_run "$s" "" "$T/a"
        sx_run "$s" --dense-logits "$T/b"
        cmp -s <(tail -1 "$T/a.out") <(tail -1 "$T/b.out") ||
            { echo "constrained_alternate: $s: --dense-logits gave different tokens" >&2; exit 1; }
        n=$(sed -n 's/.*completion \([0-9]*\) tokens (\([0-9]*\) forced.*/\1/p' "$T/a.err")
        f=$(sed -n 's/.*completion \([0-9]*\) tokens (\([0-9]*\) forced.*/\2/p' "$T/a.err")
        sa=$(field decode tokens/s "$T/a.err"); sb=$(field decode tokens/s "$T/b.err")
        ms=$(field total ms "$T/a.err")
        pn=- pt=- pm=- pj=-
        if [ "$PEER" = 1 ]; then
            "$PY" bench/peers/hf_xgrammar.py --model "$MODEL" --schema "bench/schemas/$s.json" \
                --prompt "$PROMPT" --max-tokens "$MAXT" --threads "$THREADS" --compact 2>/dev/null | tail -1 >"$T/p.json"
            read -r pn pt pm pj < <("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["completion_tokens"], d["decode_tok_s"], d["total_ms"], "yes" if d["parses"] else "no")' "$T/p.json")
        fi
        x=$(awk -v a="$sa" -v b="$sb" 'BEGIN { printf "%.2f", a / b }')
        printf '%-8s %5s %7s %7s %7s %7s %6s %9s %9s %9s %8s %5s\n' "$s" "$r" "$n" "$f" "$sa" "$sb" "${x}x" "$ms" "$pn" "$pt" "$pm" "$pj"
        echo "$s $sa $sb $x $ms $pt $pm" >>"$T/rows"
    done
done
for s in $SCHEMAS; do
    awk -v s="$s" '$1 == s { n++; a[n] = $2; b[n] = $3; x[n] = $4; m[n] = $5; pt[n] = $6; pm[n] = $7 }
         function med(v, k,   i, j, t) { for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
             if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
             return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2 }
         END { printf "median %-8s strux %.1f tok/s, dense %.1f tok/s, ratio %.2fx; total %.0f ms", s, med(a, n), med(b, n), med(x, n), med(m, n)
               if (pt[1] != "-") printf "; peer %.1f tok/s, %.0f ms", med(pt, n), med(pm, n)
               printf " (rounds %d)\n", n }' "$T/rows"
done
