#!/usr/bin/env bash
# clients/python (strux_client) with pytest against real struxd replicas on
# the tiny random model (clients/python/tests/conftest.py starts them): sync,
# threads and asyncio, errors as exceptions with code and pointer, batches in
# order with pandas/Arrow columns, a replica SIGKILLed and restarted, a hung
# replica (SIGSTOP), a draining one (SIGTERM).  One "ok N" line per pytest test.
# Needs $STRUX_BUILD and the repo venv with strux_client installed (make deps).
set -u
B=${STRUX_BUILD:?}
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
if ! "$PY" -c "import strux_client, pytest" 2>/dev/null; then
    echo "not ok 1 - $PY lacks strux_client or pytest (make deps)"
    exit 1
fi
out=$(STRUX_BUILD="$B" "$PY" -m pytest -v -p no:cacheprovider clients/python/tests 2>&1)
rc=$?
n=0
# a pytest skip is a TAP skip with pytest's reason (tests/run_tests.sh counts it as skipped)
while read -r name verdict why; do
    n=$((n + 1))
    case $verdict in
        PASSED) echo "ok $n - ${name#clients/python/tests/}" ;;
        SKIPPED) echo "ok $n - ${name#clients/python/tests/} # SKIP ${why:-(pytest gave no reason)}" ;;
        *) echo "not ok $n - ${name#clients/python/tests/} ($verdict)" ;;
    esac
done < <(echo "$out" | sed -n 's/^\(clients\/python\/tests\/[^ ]*\) \([A-Z]*\) *\(([^)]*)\)\{0,1\}.*/\1 \2 \3/p')
[ $n -gt 0 ] || { echo "not ok 1 - pytest ran no tests"; rc=1; }
[ $rc -eq 0 ] || echo "$out" | tail -30 | sed 's/^/# /'
exit $rc
