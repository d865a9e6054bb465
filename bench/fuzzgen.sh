#!/usr/bin/env bash
# The generative soundness run over the whole MaskBench dev set: every
# schema strux compiles, DOCS documents each (default 20, every mode in
# turn), judged by strux's validator, then by Python jsonschema
# (tools/oracle_jsonschema.py).  Prints both summaries; docs/BENCHMARKS.md
# records them.  Runs one shard per core.
#   bench/fuzzgen.sh [DOCS]      env: STRUX_BUILD, STRUX_SHARED, JOBS
set -uo pipefail
cd "$(dirname "$0")/.."
B=${STRUX_BUILD:-build}
S=${STRUX_SHARED:-../shared}
DOCS=${1:-20}
J=${JOBS:-$(nproc)}
T=$(mktemp -d /tmp/strux-fuzzgen-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
ls "$S"/maskbench/*.json >"$T/all.txt"
echo "== fuzzgen: $(wc -l <"$T/all.txt") MaskBench schemas, $DOCS documents each, $J shards =="
start=$(date +%s)
for k in $(seq 0 $((J - 1))); do
    "$B/strux" fuzzgen --schemas "$T/all.txt" --shard "$k/$J" --count "$DOCS" --time-limit 20 \
        --show 3 --out "$T/docs.$k.jsonl" >"$T/out.$k" 2>"$T/err.$k" &
done
wait
echo "wall: $(( $(date +%s) - start )) s"
cat "$T"/err.* | head -20
python3 - "$T" <<'PY'
import glob, re, sys
tot = {}
for path in glob.glob(sys.argv[1] + "/out.*"):
    for line in open(path):
        if re.match(r"fuzzgen: \d+ schemas", line):
            for num, key in re.findall(r"(\d+) (schemas|declined|documents|valid|invalid|not-json|stuck|no-completion|no-verdict|closed|tokens)", line):
                tot[key] = tot.get(key, 0) + int(num)
            sec = float(re.search(r"in ([\d.]+) s", line).group(1))
            tot["cpu_seconds"] = tot.get("cpu_seconds", 0) + sec
print("total: %d schemas (%d declined), %d documents: %d valid, %d invalid, %d not-json, %d stuck, "
      "%d no-completion, %d no-verdict; %d closed by the shortest completion; %.0f docs per CPU-second"
      % (tot.get("schemas", 0), tot.get("declined", 0), tot.get("documents", 0), tot.get("valid", 0),
         tot.get("invalid", 0), tot.get("not-json", 0), tot.get("stuck", 0), tot.get("no-completion", 0),
         tot.get("no-verdict", 0), tot.get("closed", 0),
         tot.get("documents", 0) / max(tot.get("cpu_seconds", 1e-9), 1e-9)))
PY
grep -hv '^fuzzgen: [0-9]* schemas' "$T"/out.* | head -20
if [ -x .venv/bin/python ]; then
    echo "== Python jsonschema on the same documents =="
    .venv/bin/python tools/oracle_jsonschema.py --show 10 "$T"/docs.*.jsonl
fi
