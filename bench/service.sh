#!/usr/bin/env bash
# Service figures for struxd (docs/BENCHMARKS.md): requests/s, completion
# tokens/s and latency p50/p99 at concurrency 1, 8, 32 and 128, on the tiny
# random model and on a random model of Qwen3-0.6B's shapes, through nng
# over ipc with `strux call --batch`; and the RPC overhead of one request on
# loopback TCP (a request the server refuses before any model work, sent
# one at a time: parse, validate, answer, round trip).
#
# The requests are the sample documents of schemas/samples/ with their
# schemas, repeated; max_tokens is fixed so every level does the same work.
#
# usage: bench/service.sh [--quick]   (--quick: tiny model only)
# Environment: STRUX_BUILD (default build), STRUX_THREADS (default: all CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${STRUX_BUILD:-build}
T=${STRUX_THREADS:-$(nproc)}
quick=0
[ "${1:-}" = "--quick" ] && quick=1
work=$(mktemp -d /tmp/strux-svc.XXXXXX)
spid=""
cleanup() {
    [ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# requests.jsonl: N requests cycling over the sample documents
make_requests() { # N MAX_TOKENS OUT
    python3 - "$1" "$2" "$3" <<'PY'
import glob, json, os, sys
n, max_tokens, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
docs = sorted(glob.glob("schemas/samples/*.txt"))
with open(out, "w") as f:
    for i in range(n):
        d = docs[i % len(docs)]
        name = os.path.basename(d)[:-4]
        schema = json.load(open(f"schemas/{name}.json"))
        f.write(json.dumps({"id": i, "schema": schema, "document": open(d).read(),
                            "max_tokens": max_tokens}) + "\n")
PY
}

serve() { # MODEL_DIR
    "$B/struxd" --model "$1" --listen "ipc://$work/s.ipc" --listen tcp://127.0.0.1:0 \
        --threads "$T" --max-batch 128 --max-queue 4096 --quiet 2>"$work/struxd.log" &
    spid=$!
    for _ in $(seq 1 1200); do
        grep -q '^struxd: ready' "$work/struxd.log" && break
        kill -0 "$spid" 2>/dev/null || { cat "$work/struxd.log"; exit 1; }
        sleep 0.1
    done
    TCP=$(grep -o 'tcp://127.0.0.1:[0-9]*' "$work/struxd.log" | head -1)
}

stop() {
    kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null || true
    spid=""
}

levels() { # LABEL N_PER_LEVEL MAX_TOKENS
    for c in 1 8 32 128; do
        local n=$2
        [ "$n" -lt "$c" ] && n=$c
        make_requests "$n" "$3" "$work/in.jsonl"
        "$B/strux" call --addr "ipc://$work/s.ipc" --batch "$work/in.jsonl" --out "$work/out.jsonl" \
            --concurrency "$c" --no-progress --verify 2>&1 | grep '^strux call:' |
            sed "s/^strux call:/$1 c=$c:/"
        # the prompts are most of the work: their tokens, per second of the run
        python3 - "$work/out.jsonl" <<'PY'
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
p = sum(r.get("usage", {}).get("prompt_tokens", 0) for r in rs)
t = [r["timing"]["total_ms"] for r in rs if "timing" in r]
print(f"   prompt tokens {p} ({p / len(rs):.0f} per request)")
PY
    done
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); struxd --threads $T"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
"$B/strux" model random --shape tiny --seed 1 --out "$work/tiny" >/dev/null
serve "$work/tiny"
echo "== RPC overhead, loopback TCP, 2000 refused requests one at a time =="
python3 - <<'PY' >"$work/bad.jsonl"
for i in range(2000):
    print('{"id": %d, "document": "x", "max_tokens": 0}' % i)
PY
"$B/strux" call --addr "$TCP" --batch "$work/bad.jsonl" --out "$work/bad.out" --concurrency 1 \
    --no-progress 2>&1 | grep '^strux call:' | sed 's/^strux call:/rpc overhead:/' || true
echo "== tiny random model (20M parameters, full 151,936-row vocabulary), max_tokens 64 =="
levels tiny 256 64
stop
if [ $quick = 0 ]; then
    M=${STRUX_BENCH_MODEL:-models/random-0.6b}
    [ -f "$M/model.safetensors" ] || "$B/strux" model random --shape 0.6b --seed 1 --out "$M" >/dev/null
    serve "$M"
    echo "== random Qwen3-0.6B shapes ($M), max_tokens 32 =="
    levels 0.6b 16 32
    stop
fi
