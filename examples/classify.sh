#!/usr/bin/env bash
# Label-constrained classification with `strux call --choices`: the output is
# exactly one label, and `scores` gives the model's probability of every label
# (each label's full token sequence scored after the prompt, normalised).
#
# Run (server first):
#   build/struxd --model MODEL_DIR --listen tcp://127.0.0.1:7400 &
#   examples/classify.sh tcp://127.0.0.1:7400 schemas/samples/sentiment_labels.txt
#
# The labels come from schemas/sentiment_labels.json (an enum).  Batch form:
# one JSON request per line to `strux call --batch` (see the end).
set -euo pipefail
addr=${1:-tcp://127.0.0.1:7400}
doc=${2:-schemas/samples/sentiment_labels.txt}
strux=${STRUX:-build/strux}
labels=$(python3 -c 'import json,sys; print(",".join(json.load(open("schemas/sentiment_labels.json"))["enum"]))')

"$strux" call --addr "$addr" --choices "$labels" --document "$doc" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print("label:", r["output"]);
[print(f"  {p:6.3f}  {l}") for l,p in sorted(r["scores"].items(), key=lambda x:-x[1])]'

# Many documents at once: write requests as JSONL and let strux call batch them.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in schemas/samples/*.txt; do
    python3 -c 'import json,sys; print(json.dumps({"id": sys.argv[1], "choices": sys.argv[2].split(","),
        "document": open(sys.argv[1]).read()}))' "$f" "$labels"
done >"$tmp/in.jsonl"
"$strux" call --addr "$addr" --batch "$tmp/in.jsonl" --out "$tmp/out.jsonl" --concurrency 8
python3 - "$tmp/out.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['id']:45s} {r['output'] if r['ok'] else r['error']['code']}")
PY
