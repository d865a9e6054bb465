#!/usr/bin/env bash
# Instructor (modes TOOLS, JSON_SCHEMA, JSON) and LangChain's
# ChatOpenAI.with_structured_output (json_schema, function_calling,
# json_mode), installed from PyPI (tests/requirements-test.txt), against
# struxd on the tiny random-weight model, each used as its docs show with
# only base_url and api_key changed: every parsed result re-validated with
# jsonschema against the Pydantic model's schema, and options strux does not
# act on surfacing as the client's own exception (HTTP 400 naming the
# member; the Responses API a JSON 404).  tests/cli/client_libs.py holds the
# checks.  One struxd start, seven short requests.
# Needs $STRUX_BUILD and the repo venv (make deps).
set -u
B=${STRUX_BUILD:?}
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
T=$(mktemp -d /tmp/strux-clib.XXXXXX)
SPID=
cleanup() {
    [ -n "$SPID" ] && { kill -9 "$SPID" && wait "$SPID"; } 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
bail() {
    echo "not ok 1 - $1"
    [ -f "$T/d.log" ] && tail -20 "$T/d.log" | sed 's/^/# /'
    exit 1
}

[ -x "$B/struxd" ] && [ -x "$B/strux" ] || bail "$B/struxd and $B/strux must be built"
"$PY" -c "import instructor, langchain_openai, jsonschema" 2>/dev/null ||
    bail "$PY lacks instructor / langchain_openai / jsonschema (make deps)"
"$B/strux" model random --shape tiny --seed 1 --out "$T/model" >"$T/model.log" 2>&1 ||
    bail "strux model random --shape tiny"
KEY=k-$RANDOM$RANDOM
printf '%s\n' "$KEY" >"$T/key"
"$B/struxd" --model "$T/model" --threads 2 --http 127.0.0.1:0 --max-tokens 128 \
    --timeout 300 --api-key-file "$T/key" 2>"$T/d.log" &
SPID=$!
for _ in $(seq 1 600); do
    grep -q '^struxd: ready' "$T/d.log" && break
    kill -0 "$SPID" 2>/dev/null || bail "struxd exited at start-up"
    sleep 0.1
done
HPORT=$(sed -n 's|^struxd: listening on.* http://[^:]*:\([0-9]*\).*|\1|p' "$T/d.log")
[ -n "$HPORT" ] || bail "struxd reported no HTTP port"

# the clients log the refusals they retry on stderr: kept for a failure only
"$PY" tests/cli/client_libs.py "http://127.0.0.1:$HPORT/v1" "$KEY" >"$T/tap" 2>"$T/err"
rc=$?
cat "$T/tap"
if [ $rc -ne 0 ] || grep -q '^not ok' "$T/tap" || ! grep -q '^1\.\.' "$T/tap"; then
    tail -20 "$T/err" | sed 's/^/# /'
    exit 1
fi
