#!/usr/bin/env bash
# The main job, as far as strux goes today (see README's status table):
# tokenizer + chat template for an extraction request, then constrained
# decoding of every schema in schemas/ with a random stand-in for the model,
# each output re-checked by the validator.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${STRUX_BUILD:-build}
echo "strux main job -- NOTE: the Qwen3 inference engine is not built yet, so no model"
echo "weights are used: a uniformly random stand-in picks among the tokens the schema's"
echo "mask allows.  The tokenizer is the real Qwen3 one; every output is validated."
echo
doc="Invoice INV-2024-118 from ACME GmbH to Blue Ltd: 3 x widgets at 12.50 EUR."
printf '[{"role":"system","content":"Extract the invoice as JSON."},{"role":"user","content":"%s"}]' "$doc" > /tmp/strux_msgs.json
if "$B/strux" help | grep -q '^  chat'; then
    echo "== prompt (Qwen3 chat template, thinking off) =="
    "$B/strux" chat /tmp/strux_msgs.json
    echo "== prompt token ids =="
    "$B/strux" chat --ids /tmp/strux_msgs.json | cut -c1-200
    echo
fi
status=0
for s in schemas/*.json; do
    echo "== $s =="
    "$B/strux" compile --schema "$s" | sed -n '2,4p'
    "$B/strux" demo --schema "$s" --seed 7 --max-tokens 120 || status=1
    echo
done
exit $status
