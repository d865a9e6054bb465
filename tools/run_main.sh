#!/usr/bin/env bash
# The main job (`make run`): serve a Qwen3 model with struxd and run the
# extraction and classification requests of schemas/samples/ through it over
# RPC, all at once (they share the server's batch), then re-check every
# output with strux's independent validator and print a summary.
#
# The model comes from tools/get_model.sh: $STRUX_MODEL, models/Qwen3-0.6B,
# a download from huggingface.co, or -- when that is unreachable, as in CI --
# a RANDOM-WEIGHT Qwen3-0.6B with the real tokenizer.  Random weights write
# nonsense, but nonsense that validates: that is what the grammar guarantees.
#
# Environment: STRUX_BUILD (default build), STRUX_MODEL (a model directory),
# STRUX_MAX_TOKENS (per request, default 128), STRUX_THREADS (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${STRUX_BUILD:-build}
MAXTOK=${STRUX_MAX_TOKENS:-128}
THREADS=${STRUX_THREADS:-$(nproc)}
for bin in "$B/strux" "$B/struxd"; do
    [ -x "$bin" ] || { echo "run_main: $bin is not built (make all)" >&2; exit 2; }
done

model=$(bash tools/get_model.sh)
random=0
grep -q '"strux_random' "$model/config.json" 2>/dev/null && random=1
echo "strux main job: $(ls schemas/samples/*.txt | wc -l) documents through struxd over nng (ipc)"
echo "model: $model"
if [ $random = 1 ]; then
    echo
    echo "  *** RANDOM WEIGHTS ***  huggingface.co is not reachable from this machine, so the"
    echo "  model is a random-weight Qwen3-0.6B (real shape, real tokenizer).  Its outputs are"
    echo "  meaningless text -- but every one of them is valid against its schema, because the"
    echo "  grammar masks the logits.  Set STRUX_MODEL=/path/to/Qwen3-0.6B for real answers."
    echo
fi

work=$(mktemp -d /tmp/strux-main.XXXXXX)
spid=""
cleanup() {
    [ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
[ -n "${STRUX_KEEP:-}" ] && trap - EXIT
addr="ipc://$work/struxd.ipc"
"$B/struxd" --model "$model" --listen "$addr" --threads "$THREADS" \
    --max-tokens 4096 --default-max-tokens "$MAXTOK" 2>"$work/struxd.log" &
spid=$!
for _ in $(seq 1 1200); do
    grep -q '^struxd: ready' "$work/struxd.log" && break
    kill -0 "$spid" 2>/dev/null || { cat "$work/struxd.log" >&2; echo "run_main: struxd exited" >&2; exit 1; }
    sleep 0.1
done
grep -q '^struxd: ready' "$work/struxd.log" || { echo "run_main: struxd not ready after 120 s" >&2; exit 1; }
grep -E '^struxd: (model|listening)' "$work/struxd.log" | sed 's/^/  /'
echo

# Every sample document at once: one strux call per document, in parallel.
t0=$(date +%s.%N)
names=() cpids=()
for doc in schemas/samples/*.txt; do
    name=$(basename "$doc" .txt)
    names+=("$name")
    args=(--schema "schemas/$name.json")
    # a schema that is one top-level enum of labels is classification:
    # sent as choices, which also returns each label's probability
    if grep -q '^  "enum": *\[' "schemas/$name.json" && ! grep -q '^  "type"' "schemas/$name.json"; then
        labels=$(sed -n 's/.*"enum": *\[\(.*\)\].*/\1/p' "schemas/$name.json" | tr -d '"' | sed 's/, */,/g')
        args=(--choices "$labels")
    fi
    "$B/strux" call --addr "$addr" "${args[@]}" --document "$doc" --id "$name" \
        --max-tokens "$MAXTOK" --timeout 600 >"$work/$name.resp" 2>"$work/$name.err" &
    cpids+=($!)
done
echo "sent ${#names[@]} requests at once (max_tokens $MAXTOK); waiting..."
for p in "${cpids[@]}"; do wait "$p" || true; done
t1=$(date +%s.%N)

ok=0 bad=0 total_tok=0
for name in "${names[@]}"; do
    resp="$work/$name.resp"
    finish=$(grep -o '"finish_reason":"[a-z]*"' "$resp" | head -1 | cut -d'"' -f4 || true)
    ntok=$(grep -o '"completion_tokens":[0-9]*' "$resp" | head -1 | cut -d: -f2 || true)
    total_tok=$((total_tok + ${ntok:-0}))
    echo "== $name: ${finish:-error}, ${ntok:-0} tokens"
    if grep -q '"ok":true' "$resp"; then
        # the output value (it precedes the top-level "text", the last
        # unescaped ,"text": in the line), then an independent re-check
        out="$work/$name.out.json"
        grep -o '"output":.*,"text":' "$resp" | sed 's/^"output"://; s/,"text":$//' >"$out" || true
        echo "   $(head -c 600 "$out")$([ "$(wc -c <"$out")" -gt 600 ] && echo ' ...')"
        schema="schemas/$name.json"
        if "$B/strux" check --schema "$schema" "$out" >"$work/$name.check" 2>&1; then
            echo "   valid against $schema (grammar and independent validator agree)"
            ok=$((ok + 1))
        else
            echo "   NOT VALID: $(cat "$work/$name.check")"
            bad=$((bad + 1))
        fi
        grep -o '"scores":{[^}]*}' "$resp" | sed 's/^/   /' || true
    else
        echo "   request failed: $(cat "$resp" "$work/$name.err" | head -3)"
        bad=$((bad + 1))
    fi
done
secs=$(echo "$t1 - $t0" | bc)
echo
echo "summary: ${#names[@]} requests, $ok valid, $bad failed, $total_tok completion tokens in ${secs%.*}.$(echo "$secs" | cut -d. -f2 | cut -c1-2) s" \
     "($(echo "scale=1; $total_tok / $secs" | bc) tok/s over the batch, $THREADS threads)"
[ $random = 1 ] && echo "summary: model weights were RANDOM (see above); outputs are valid but meaningless"
kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null || true
spid=""
grep -q '^struxd: stopped' "$work/struxd.log" && echo "summary: struxd drained and stopped cleanly"
[ $bad -eq 0 ]
