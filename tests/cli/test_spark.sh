#!/usr/bin/env bash
# Apache Spark over strux replicas (clients/python/strux_client/spark.py): a
# local Spark session (local[2], Java from Debian, pyspark from the venv) runs
# tests/cli/spark_job.py against two struxd replicas on the tiny random model:
#   - extract() over 2,000 rows into a struct column while one replica is
#     SIGKILLed and restarted mid-job: every row answered exactly once (ids),
#     no error rows, every output valid under Python jsonschema, and the
#     restarted replica serves the job again (the workers' clients re-dial);
#   - classify() with label scores, extract(output="string"), error rows
#     (a refused schema, null documents) and raise_on_error.
# Skipped under STRUX_LIGHT (make asan: each request is ~10x slower there and
# Spark has no memory errors of strux's to find).
# Needs $STRUX_BUILD, the repo venv (.venv) with pyspark, pyarrow, jsonschema, and java.
set -u
B=${STRUX_BUILD:?}
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
if [ -n "${STRUX_LIGHT:-}" ]; then
    echo "ok 1 - spark job over replicas # SKIP under STRUX_LIGHT"
    exit 0
fi
T=$(mktemp -d /tmp/strux-spark.XXXXXX)
declare -A PID GEN HTTP
JOB=
cleanup() {
    [ -n "$JOB" ] && kill "$JOB" 2>/dev/null
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
command -v java >/dev/null || bail "no java (make deps installs default-jre-headless)"
# the package of this tree, whatever the venv has installed
export PYTHONPATH="$PWD/clients/python${PYTHONPATH:+:$PYTHONPATH}"
# Spark's Python workers: the venv's Python, not the system's
export PYSPARK_PYTHON="$PY" PYSPARK_DRIVER_PYTHON="$PY"
"$PY" -c "import pyspark, pyarrow, jsonschema, strux_client.spark" 2>"$T/import.log" ||
    bail "$PY lacks pyspark, pyarrow or jsonschema (make deps)"
"$B/strux" model random --shape tiny --seed 1 --out "$T/model" >"$T/model.log" 2>&1 ||
    bail "strux model random --shape tiny"

# start NAME: struxd on ipc://$T/NAME.ipc, waits for "ready"; each (re)start logs to $T/NAME.GEN.log
start() {
    local name=$1
    GEN[$name]=$((${GEN[$name]:-0} + 1))
    local log="$T/$name.${GEN[$name]}.log"
    "$B/struxd" --model "$T/model" --threads 1 --listen "ipc://$T/$name.ipc" \
        --http 127.0.0.1:0 --default-max-tokens 48 2>"$log" &
    PID[$name]=$!
    for _ in $(seq 1 600); do
        grep -q '^struxd: ready' "$log" && break
        kill -0 "${PID[$name]}" 2>/dev/null || bail "struxd $name exited at start-up"
        sleep 0.1
    done
    grep -q '^struxd: ready' "$log" || bail "struxd $name not ready after 60 s"
    HTTP[$name]=$(sed -n 's|^struxd: listening on.* http://\([^ ]*\).*|\1|p' "$log")
}
served() { cat "$T"/*.*.log | grep -c '^struxd: req=.*status=ok'; }
start r1
start r2

"$PY" tests/cli/spark_job.py "$T" 2 "ipc://$T/r1.ipc" "ipc://$T/r2.ipc" >"$T/job.out" 2>"$T/spark.log" &
JOB=$!
# the kill: once the extract job has answered ~1/5 of its rows, with requests
# in flight on r2
for _ in $(seq 1 3000); do
    [ -f "$T/extract.started" ] && [ "$(served)" -ge 400 ] && break
    kill -0 $JOB 2>/dev/null || break
    sleep 0.05
done
for _ in $(seq 1 200); do
    [ "$(curl -sS "http://${HTTP[r2]}/metrics" | sed -n 's/^strux_inflight //p')" -ge 2 ] 2>/dev/null && break
    sleep 0.02
done
inflight=$(curl -sS "http://${HTTP[r2]}/metrics" | sed -n 's/^strux_inflight //p')
killed_at=$(served)
kill -9 "${PID[r2]}"
wait "${PID[r2]}" 2>/dev/null
check "r2 SIGKILLed mid-job (after $killed_at answers, $inflight requests in flight on it)" \
    sh -c "[ ! -f '$T/extract.done' ] && [ '${inflight:-0}' -ge 1 ]"
sleep 0.3
start r2
wait $JOB
rc=$?
JOB=
sed -n '/^ok \|^not ok \|^# /p' "$T/job.out"
n=$((n + $(grep -c '^\(not \)\?ok ' "$T/job.out")))
after=$(grep -c '^struxd: req=.*status=ok' "$T/r2.2.log")
check "the restarted r2 served the job again ($after requests): the workers' clients re-dialled" \
    [ "$after" -ge 20 ]
check "the killed r2 had served its share before the kill ($(grep -c 'status=ok' "$T/r2.1.log") requests)" \
    [ "$(grep -c 'status=ok' "$T/r2.1.log")" -ge 100 ]
if [ $rc -ne 0 ] || [ "$(grep -c '^ok ' "$T/job.out")" -lt 13 ]; then
    echo "not ok $((n + 1)) - spark_job.py exit $rc"
    failed=$((failed + 1))
    tail -30 "$T/spark.log" | sed 's/^/# /'
fi
[ $failed -eq 0 ] || { for f in "$T"/*.log; do echo "# --- $f"; tail -5 "$f" | sed 's/^/# /'; done; }
exit $((failed > 0))
