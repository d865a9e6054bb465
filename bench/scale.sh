#!/usr/bin/env bash
# Scaling out: one client (strux call --batch) over 1, 2 and 3 local struxd
# replicas of the tiny random model on ipc sockets, then over 3 with one
# replica SIGKILLed midway (and restarted).  Prints requests/s, p50/p99
# latency, and for every run the lost and duplicated answers (both must be 0).
#   bench/scale.sh [N_REQUESTS] [THREADS_PER_REPLICA]     (defaults 600 1)
# Needs build/ (make CUDA=0 all) and .venv (make deps).
set -eu
B=${STRUX_BUILD:-$PWD/build}
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
N=${1:-600}
TH=${2:-1}
T=$(mktemp -d /tmp/strux-scale.XXXXXX)
declare -A PID
cleanup() { for p in "${PID[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$T"; }
trap cleanup EXIT
"$B/strux" model random --shape tiny --seed 1 --out "$T/model" >/dev/null 2>&1
start() {
    "$B/struxd" --model "$T/model" --threads "$TH" --listen "ipc://$T/$1.ipc" 2>"$T/$1.log" &
    PID[$1]=$!
    until grep -q '^struxd: ready' "$T/$1.log"; do sleep 0.1; done
}
"$PY" - "$T/in.jsonl" "$N" <<'PY'
import json, sys
item = {"type": "object", "additionalProperties": False, "required": ["name", "n", "tag"],
        "properties": {"name": {"type": "string", "maxLength": 12}, "n": {"type": "integer"},
                       "tag": {"enum": ["a", "b", "c"]}}}
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write(json.dumps({"id": i, "schema": item, "document": f"Item {i}: name x{i}, n {i * 7}",
                            "seed": i, "temperature": 1.0, "max_tokens": 40}) + "\n")
PY
count() { # lost and duplicated answers, from the ids in the output
    "$PY" -c '
import json, sys
ids = [json.loads(l)["id"] for l in open(sys.argv[1])]
n = int(sys.argv[2]); ok = sum(json.loads(l)["ok"] for l in open(sys.argv[1]))
print(f"lost={n - len(set(ids))} duplicated={len(ids) - len(set(ids))} ok={ok}")' "$1" "$N"
}
run() { # NAME REPLICAS...
    local name=$1
    shift
    local a=()
    for r in "$@"; do a+=(--addr "ipc://$T/$r.ipc"); done
    "$B/strux" call "${a[@]}" --batch "$T/in.jsonl" --out "$T/$name.jsonl" --concurrency 32 \
        --no-progress 2>"$T/$name.call" &
    CALL=$!
}
report() {
    local line
    line=$(tail -1 "$T/$1.call")
    echo "$1: $(echo "$line" | sed -n 's/.* in \([0-9.]* s\) (\([0-9.]* req\/s\)).*p50 \([0-9.]* ms\) p99 \([0-9.]* ms\).*retries \([0-9]*\), overloaded retries \([0-9]*\).*/\2, \1, p50 \3, p99 \4, retries \5/p') $(count "$T/$1.jsonl")"
}
echo "# $(date -u +%F) $(nproc) CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), $N requests, concurrency 32, $TH thread(s) per replica"
start r1
run one r1; wait $CALL; report one
start r2
run two r1 r2; wait $CALL; report two
start r3
run three r1 r2 r3; wait $CALL; report three
run kill r1 r2 r3
until [ -f "$T/kill.jsonl" ] && [ "$(wc -l <"$T/kill.jsonl")" -ge $((N / 3)) ]; do sleep 0.05; done
kill -9 "${PID[r2]}"
start r2
wait $CALL; report "kill"
