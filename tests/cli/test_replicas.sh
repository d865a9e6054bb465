#!/usr/bin/env bash
# One client, several struxd replicas (tiny random-weight model, ipc sockets):
#   - a batch spread over three replicas: every line answered once, in order,
#     all ok, outputs valid under Python jsonschema; this run is the reference;
#   - the same batch while one replica is SIGKILLed and restarted mid-batch:
#     nothing lost, nothing doubled, and every answer equal to the reference
#     (a retried request carries the same id and seed); the restarted replica
#     rejoins by itself;
#   - the same kill with --retries 0 loses answers (the control: it is the
#     client's retry that saves the batch), and --resume completes that output;
#   - --resume from an output cut in the middle of a line sends only the
#     missing lines; --resume refuses another batch's output;
#   - a replica drained with SIGTERM mid-batch: its `overloaded` answers are
#     moved to the other replicas, not counted as failures (--addr-file).
# STRUX_LIGHT=1 (make asan, where a request is ~10x slower): 40 requests, and
# no hung-replica part (it is about timing, not memory).
# Needs $STRUX_BUILD, $STRUX_SHARED and the repo venv (.venv) with jsonschema.
set -u
NREQ=300
[ -n "${STRUX_LIGHT:-}" ] && NREQ=40
CUT=$((NREQ * 2 / 5)) SPREAD=$((NREQ / 15))
B=${STRUX_BUILD:?}
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
T=$(mktemp -d /tmp/strux-replicas.XXXXXX)
declare -A PID GEN HTTP
cleanup() {
    for p in "${PID[@]}"; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
n=0 failed=0
check() { # check WHAT COMMAND...
    local what=$1
    shift
    n=$((n + 1))
    if "$@"; then
        echo "ok $n - $what"
    else
        echo "not ok $n - $what"
        failed=$((failed + 1))
    fi
}
bail() {
    echo "not ok $((n + 1)) - $1"
    for f in "$T"/*.log; do [ -f "$f" ] && { echo "# --- $f"; tail -20 "$f" | sed 's/^/# /'; }; done
    exit 1
}

[ -x "$B/struxd" ] && [ -x "$B/strux" ] || bail "$B/struxd and $B/strux must be built"
"$PY" -c "import jsonschema" 2>/dev/null || bail "$PY lacks jsonschema (make deps)"
"$B/strux" model random --shape tiny --seed 1 --out "$T/model" >"$T/model.log" 2>&1 ||
    bail "strux model random --shape tiny"

# start NAME [ARGS]: struxd on ipc://$T/NAME.ipc, waits for "ready";
# PID[NAME]; each (re)start logs to $T/NAME.GEN.log
start() {
    local name=$1
    shift
    GEN[$name]=$((${GEN[$name]:-0} + 1))
    local log="$T/$name.${GEN[$name]}.log"
    "$B/struxd" --model "$T/model" --threads 1 --listen "ipc://$T/$name.ipc" \
        --http 127.0.0.1:0 --default-max-tokens 48 "$@" 2>"$log" &
    PID[$name]=$!
    for _ in $(seq 1 600); do
        grep -q '^struxd: ready' "$log" && break
        kill -0 "${PID[$name]}" 2>/dev/null || bail "struxd $name exited at start-up"
        sleep 0.1
    done
    grep -q '^struxd: ready' "$log" || bail "struxd $name not ready after 60 s"
    HTTP[$name]=$(sed -n 's|^struxd: listening on.* http://\([^ ]*\).*|\1|p' "$log")
}
# wait_inflight NAME N: until replica NAME holds N requests (or 30 s), so a
# kill is sure to hit requests in flight
wait_inflight() {
    for _ in $(seq 1 600); do
        [ "$(curl -sS "http://${HTTP[$1]}/metrics" | sed -n 's/^strux_inflight //p')" -ge "$2" ] 2>/dev/null &&
            return 0
        sleep 0.05
    done
    return 1
}
start r1
start r2
start r3
ADDRS=(--addr "ipc://$T/r1.ipc" --addr "ipc://$T/r2.ipc" --addr "ipc://$T/r3.ipc")

"$PY" - "$T/in.jsonl" "$NREQ" <<'PY'
import json, sys
item = {"type": "object", "additionalProperties": False, "required": ["name", "n", "tag"],
        "properties": {"name": {"type": "string", "maxLength": 12}, "n": {"type": "integer"},
                       "tag": {"enum": ["a", "b", "c"]}}}
nums = {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": 4}
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        q = {"id": f"q{i}", "document": f"Item {i}: name x{i}, n {i * 7}", "seed": i,
             "temperature": [0, 0.9, 1.0][i % 3], "max_tokens": 40}
        if i % 10 == 9:
            q["choices"] = ["red", "green", "blue"]
        else:
            q["schema"] = item if i % 2 else nums
        f.write(json.dumps(q) + "\n")
PY

cat >"$T/judge.py" <<'PY'
# judge.py IN OUT [REF]: one answer per request, in order, all ok and valid;
# with REF, every answer equal to the reference run's: the CPU forward pass
# is batch-invariant (sx_engine_opts.batch_variant, docs/PROTOCOL.md), so a
# request's answer depends on its id, seed and input alone, not on which
# replica ran it or what shared its batches.  Differences are listed on
# stderr.
import json, sys
import jsonschema
reqs = [json.loads(l) for l in open(sys.argv[1])]
lines = open(sys.argv[2]).read().split("\n")
assert lines[-1] == "", "the output ends with a newline"
resps = [json.loads(l) for l in lines[:-1]]
assert len(resps) == len(reqs), f"{len(resps)} answers for {len(reqs)} requests"
ids = [r["id"] for r in resps]
assert ids == [q["id"] for q in reqs], "answers in input order, each id exactly once"
for q, r in zip(reqs, resps):
    assert r["ok"], (q["id"], r.get("error"))
    if "schema" in q:
        jsonschema.validate(r["output"], q["schema"])
        assert json.loads(r["text"]) == r["output"]
    else:
        assert r["output"] in q["choices"]
if len(sys.argv) > 3:
    ref = [json.loads(l) for l in open(sys.argv[3])]
    diff = [q["id"] for q, a, b in zip(reqs, resps, ref)
            if (a["output"], a["text"]) != (b["output"], b["text"])]
    if diff:
        print(f"{len(diff)} answers differ from the reference: {diff[:10]}", file=sys.stderr)
    assert not diff, f"{len(diff)} answers differ from the reference"
PY
judge() { "$PY" "$T/judge.py" "$T/in.jsonl" "$@" 2>>"$T/judge.log"; }
summary() { sed -n 's/.*\(requests in .*\)/\1/p' "$1" | tail -1; }
field() { sed -n "s/.*, $2 \([0-9]*\).*/\1/p" "$1" | tail -1; }
# wait_lines FILE N: until FILE has N lines (or 60 s)
wait_lines() {
    for _ in $(seq 1 1200); do
        [ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ] && return 0
        sleep 0.05
    done
    return 1
}
reqs_in_log() { cat "$T/$1".*.log | grep -c '^struxd: req=.*status=ok'; }

# ---- the reference: three replicas, nothing goes wrong -------------------------------
"$B/strux" call "${ADDRS[@]}" --batch "$T/in.jsonl" --out "$T/ref.jsonl" --concurrency 16 \
    --no-progress 2>"$T/ref.log"
rc=$?
echo "# reference: $(summary "$T/ref.log")"
check "batch over 3 replicas: exit 0, 3 of 3 connected" \
    sh -c "[ $rc -eq 0 ] && grep -q 'replicas 3 of 3 connected' '$T/ref.log'"
check "every line answered once, in order, ok, valid under jsonschema" judge "$T/ref.jsonl"
check "requests spread over all three ($(reqs_in_log r1)/$(reqs_in_log r2)/$(reqs_in_log r3))" \
    sh -c "[ $(reqs_in_log r1) -ge $SPREAD ] && [ $(reqs_in_log r2) -ge $SPREAD ] && [ $(reqs_in_log r3) -ge $SPREAD ]"

# ---- SIGKILL one replica mid-batch, restart it ------------------------------------------
before_r2=$(reqs_in_log r2)
# As in the control below: a kill that lands while r2 holds nothing (its
# requests answered between the metrics poll and the signal, or the batch
# already past r2 on a loaded machine) retries nothing and proves nothing,
# so the kill is tried up to 3 times; a run that never retries still fails.
for attempt in 1 2 3; do
    rm -f "$T/kill.jsonl"
    "$B/strux" call "${ADDRS[@]}" --batch "$T/in.jsonl" --out "$T/kill.jsonl" --concurrency 16 \
        --no-progress 2>"$T/kill.log" &
    CALL=$!
    wait_lines "$T/kill.jsonl" $((NREQ / 10))
    wait_inflight r2 2 || echo "# attempt $attempt: r2 never had 2 requests in flight"
    kill -9 "${PID[r2]}"
    wait "${PID[r2]}" 2>/dev/null
    sleep 0.3
    start r2
    wait "$CALL"
    rc=$?
    [ "$(field "$T/kill.log" retries)" -ge 1 ] 2>/dev/null && break
    echo "# attempt $attempt: the kill retried nothing (exit $rc); again"
done
echo "# SIGKILL + restart: $(summary "$T/kill.log")"
check "SIGKILL + restart of a replica mid-batch: exit 0, no errors" \
    sh -c "[ $rc -eq 0 ] && grep -q 'errors 0,' '$T/kill.log'"
check "killed requests were retried on other replicas ($(field "$T/kill.log" retries) retries)" \
    [ "$(field "$T/kill.log" retries)" -ge 1 ]
check "nothing lost, nothing doubled, every answer identical to the reference (same id and seed)" \
    judge "$T/kill.jsonl" "$T/ref.jsonl"
# the restarted replica rejoins the client's socket by itself
"$B/strux" call "${ADDRS[@]}" --batch "$T/in.jsonl" --out "$T/again.jsonl" --concurrency 16 \
    --no-progress 2>"$T/again.log"
check "the restarted replica rejoins (3 of 3 connected, it serves requests)" \
    sh -c "grep -q 'replicas 3 of 3 connected' '$T/again.log' &&
           [ $(reqs_in_log r2) -gt $((before_r2 + SPREAD)) ]"

# ---- the control: no retries loses answers; --resume completes them ---------------------
# A kill that lands while r1 holds nothing (its requests answered between
# the metrics poll and the signal, as under ASan's slow clock) loses
# nothing and proves nothing: the control is run again, up to 3 times.
for attempt in 1 2 3; do
    rm -f "$T/noretry.jsonl"
    "$B/strux" call "${ADDRS[@]}" --retries 0 --batch "$T/in.jsonl" --out "$T/noretry.jsonl" \
        --concurrency 16 --no-progress 2>"$T/noretry.log" &
    CALL=$!
    wait_lines "$T/noretry.jsonl" $((NREQ / 10))
    wait_inflight r1 2 || echo "# attempt $attempt: r1 never had 2 requests in flight"
    kill -9 "${PID[r1]}"
    wait "${PID[r1]}" 2>/dev/null
    sleep 0.3
    start r1
    wait "$CALL"
    rc=$?
    lost=$(grep -c '"code":"transport"' "$T/noretry.jsonl")
    [ "$lost" -ge 1 ] && break
    echo "# attempt $attempt: the kill lost nothing (exit $rc); again"
done
echo "# --retries 0: $(summary "$T/noretry.log")"
check "control: with --retries 0 the kill loses answers ($lost transport errors, exit $rc)" \
    [ "$rc" -ne 0 -a "$lost" -ge 1 ]
"$B/strux" call "${ADDRS[@]}" --resume --batch "$T/in.jsonl" --out "$T/noretry.jsonl" \
    --concurrency 16 --no-progress 2>"$T/resume1.log"
rc=$?
check "--resume sends the failed lines again and completes the batch like the reference" \
    sh -c "[ $rc -eq 0 ] && grep -q 'resumed after' '$T/resume1.log' &&
           \"$PY\" \"$T/judge.py\" \"$T/in.jsonl\" \"$T/noretry.jsonl\" \"$T/ref.jsonl\""

# ---- --resume from a file cut mid-line ------------------------------------------------------
head -n $CUT "$T/ref.jsonl" >"$T/cut.jsonl"
sed -n $((CUT + 1))p "$T/ref.jsonl" | head -c 57 >>"$T/cut.jsonl"
"$B/strux" call "${ADDRS[@]}" --resume --batch "$T/in.jsonl" --out "$T/cut.jsonl" \
    --concurrency 16 --no-progress 2>"$T/resume2.log"
rc=$?
echo "# --resume: $(summary "$T/resume2.log")"
check "--resume after a partial last line: only the $((NREQ - CUT)) missing lines sent" \
    sh -c "[ $rc -eq 0 ] && grep -q '^strux call: $((NREQ - CUT)) requests in' '$T/resume2.log' &&
           grep -q 'resumed after $CUT answered lines' '$T/resume2.log'"
check "the resumed output is whole and equals the reference" judge "$T/cut.jsonl" "$T/ref.jsonl"
sed 's/"q\([0-9]*\)"/"other\1"/' "$T/in.jsonl" >"$T/other.jsonl"
cp "$T/cut.jsonl" "$T/cut2.jsonl"
"$B/strux" call "${ADDRS[@]}" --resume --batch "$T/other.jsonl" --out "$T/cut2.jsonl" \
    --no-progress 2>"$T/resume3.log"
rc=$?
check "--resume refuses another batch's output and leaves it as it was" \
    sh -c "[ $rc -ne 0 ] && grep -q 'ids differ' '$T/resume3.log' && cmp -s '$T/cut.jsonl' '$T/cut2.jsonl'"

if [ -z "${STRUX_LIGHT:-}" ]; then
# ---- a hung replica (SIGSTOP) mid-batch: its requests time out and go elsewhere -----------
head -n 60 "$T/in.jsonl" >"$T/in60.jsonl"
"$B/strux" call "${ADDRS[@]}" --timeout 3 --retries 8 --batch "$T/in60.jsonl" --out "$T/hung.jsonl" \
    --concurrency 8 --no-progress 2>"$T/hung.log" &
CALL=$!
wait_lines "$T/hung.jsonl" 5
kill -STOP "${PID[r3]}"
wait "$CALL"
rc=$?
kill -CONT "${PID[r3]}"
echo "# hung replica: $(summary "$T/hung.log")"
check "a hung replica: timed-out requests retried elsewhere ($(field "$T/hung.log" retries) retries), all 60 answered once, in order, valid" \
    sh -c "[ $rc -eq 0 ] && [ '$(field "$T/hung.log" retries)' -ge 1 ] &&
           \"$PY\" \"$T/judge.py\" \"$T/in60.jsonl\" \"$T/hung.jsonl\" 2>>'$T/judge.log'"
fi

# ---- a replica drains (SIGTERM) mid-batch ---------------------------------------------
printf '# the service\nipc://%s/r1.ipc\n\n  ipc://%s/r2.ipc   # second\nipc://%s/r3.ipc\n' \
    "$T" "$T" "$T" >"$T/addrs.txt"
# long free-text requests keep r3 draining for a few seconds, while the batch
# keeps sending to it
for k in 1 2 3; do
    "$B/strux" call --addr "ipc://$T/r3.ipc" --retries 0 --timeout 60 --id "long$k" \
        --max-tokens $([ -n "${STRUX_LIGHT:-}" ] && echo 80 || echo 300) --temperature 1 --seed "$k" \
        --messages <(echo '[{"role":"user","content":"go on"}]') >"$T/long$k.out" 2>/dev/null &
    LONG[$k]=$!
done
# SIGTERM must find them running (a connection made after it is refused)
for _ in $(seq 1 200); do
    inflight=$(curl -sS "http://${HTTP[r3]}/metrics" | sed -n 's/^strux_inflight //p')
    [ "${inflight:-0}" -ge 3 ] && break
    sleep 0.05
done
"$B/strux" call --addr-file "$T/addrs.txt" --batch "$T/in.jsonl" --out "$T/drain.jsonl" \
    --concurrency 16 --no-progress 2>"$T/drain.log" &
CALL=$!
wait_lines "$T/drain.jsonl" $((NREQ >= 100 ? NREQ / 10 : 1))
kill -TERM "${PID[r3]}"
wait "${PID[r3]}"
st=$?
wait "$CALL"
rc=$?
longok=0
for k in 1 2 3; do wait "${LONG[$k]}" && grep -q '"ok":true' "$T/long$k.out" && longok=$((longok + 1)); done
refused=$(cat "$T"/r3.*.log | grep -c '^struxd: req=.*status=overloaded')
echo "# drain: $(summary "$T/drain.log"); r3 answered $refused requests overloaded"
check "drained replica exits 0 after answering its in-flight requests ($longok of 3)" \
    [ "$st" -eq 0 -a "$longok" -eq 3 ]
check "the batch (from --addr-file) completes: exit 0, no errors" \
    sh -c "[ $rc -eq 0 ] && grep -q 'errors 0,' '$T/drain.log' && grep -q 'of 3 connected' '$T/drain.log'"
check "overloaded answers moved to other replicas ($(field "$T/drain.log" 'overloaded retries') retries = $refused refusals)" \
    sh -c "[ $refused -ge 1 ] && [ '$(field "$T/drain.log" 'overloaded retries')' = $refused ]"
check "drained batch: nothing lost or doubled, same answers as the reference" \
    judge "$T/drain.jsonl" "$T/ref.jsonl"

[ $failed -eq 0 ] || { for f in "$T"/*.log; do echo "# --- $f"; tail -5 "$f" | sed 's/^/# /'; done; }
exit $((failed > 0))
