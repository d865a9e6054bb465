#!/usr/bin/env bash
# strux call --openai-batch against struxd (nng) on the tiny random model
# (seconds: six short requests):
#   - OpenAI batch input lines ({custom_id, method, url, body}) to OpenAI's
#     batch output lines ({id, custom_id, response: {status_code,
#     request_id, body}, error}), in input order; chat completions with a
#     schema (the content validates, Python jsonschema), /v1/completions,
#     a tool call (arguments validate), a refused request (status 400 with
#     the error body);
#   - a malformed line is named by its line number, nothing is sent, exit 1;
#   - --resume after a stop keeps the answered lines and sends the rest,
#     matched by custom_id; an output of another batch is refused.
# Needs $STRUX_BUILD and the repo venv (.venv) with jsonschema.
set -u
B=${STRUX_BUILD:?}
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
T=$(mktemp -d /tmp/strux-obatch.XXXXXX)
SPID=
cleanup() {
    [ -n "$SPID" ] && { kill -9 "$SPID" && wait "$SPID"; } 2>/dev/null
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
    [ -f "$T/d.log" ] && tail -20 "$T/d.log" | sed 's/^/# /'
    exit 1
}
[ -x "$B/struxd" ] && [ -x "$B/strux" ] || bail "$B/struxd and $B/strux must be built"
"$PY" -c "import jsonschema" 2>/dev/null || bail "$PY lacks jsonschema"
"$B/strux" model random --shape tiny --seed 1 --out "$T/model" >"$T/model.log" 2>&1 ||
    bail "strux model random --shape tiny"
"$B/struxd" --model "$T/model" --threads 2 --listen "ipc://$T/s.ipc" --default-max-tokens 24 \
    --max-tokens 256 --timeout 120 2>"$T/d.log" &
SPID=$!
for _ in $(seq 1 600); do
    grep -q '^struxd: ready' "$T/d.log" && break
    kill -0 "$SPID" 2>/dev/null || bail "struxd exited at start-up"
    sleep 0.1
done
A="ipc://$T/s.ipc"

cat >"$T/in.jsonl" <<'EOF'
{"custom_id": "schema-1", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": [{"role": "user", "content": "Count."}], "max_tokens": 20, "seed": 1, "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 2}}, "required": ["n"], "additionalProperties": false}}}}}

{"custom_id": "raw-2", "method": "POST", "url": "/v1/completions", "body": {"prompt": "Once upon", "max_tokens": 4, "temperature": 0}}
{"custom_id": "typo-3", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": [{"role": "user", "content": "hi"}], "temprature": 0}}
{"custom_id": "tool-4", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": [{"role": "user", "content": "Call it."}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer", "maximum": 9}}, "required": ["x"], "additionalProperties": false}}}], "logit_bias": {"151657": 100}, "max_tokens": 30, "seed": 2}}
{"custom_id": "schema-5", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": [{"role": "user", "content": "Name."}], "max_tokens": 16, "temperature": 0, "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": {"type": "object", "properties": {"s": {"enum": ["a", "b"]}}, "required": ["s"]}}}}}
{"custom_id": "think-6", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": [{"role": "user", "content": "Think."}], "max_tokens": 20, "seed": 3, "strux": {"thinking": {"budget": 4}}, "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 2}}, "required": ["n"], "additionalProperties": false}}}}}
EOF

cat >"$T/judge.py" <<'PY'
import json, sys, jsonschema
lines = [json.loads(l) for l in open(sys.argv[1])]
ins = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
assert [l["custom_id"] for l in lines] == [i["custom_id"] for i in ins], "order"
for l, i in zip(lines, ins):
    assert set(l) == {"id", "custom_id", "response", "error"} and l["error"] is None, l
    r = l["response"]
    assert set(r) == {"status_code", "request_id", "body"}, r
    b = r["body"]
    if l["custom_id"].startswith("typo"):
        assert r["status_code"] == 400 and b["error"]["param"] == "/temprature", r
        continue
    assert r["status_code"] == 200 and r["request_id"] == b["id"], r
    if i["url"] == "/v1/completions":
        assert b["object"] == "text_completion" and isinstance(b["choices"][0]["text"], str)
    elif "tools" in i["body"]:
        params = i["body"]["tools"][0]["function"]["parameters"]
        calls = b["choices"][0]["message"]["tool_calls"]
        for c in calls:
            jsonschema.validate(json.loads(c["function"]["arguments"]), params)
    else:
        schema = i["body"]["response_format"]["json_schema"]["schema"]
        jsonschema.validate(json.loads(b["choices"][0]["message"]["content"]), schema)
print("judged", len(lines))
PY

"$B/strux" call --addr "$A" --openai-batch "$T/in.jsonl" --out "$T/out.jsonl" --no-progress \
    2>"$T/call.log"
rc=$?
check "an OpenAI batch runs (exit 0)" test $rc -eq 0
[ $rc -eq 0 ] || sed "s/^/# /" "$T/call.log" | head -30
check "OpenAI batch output lines, in order; schemas and tool arguments validate; 400 kept" \
    "$PY" "$T/judge.py" "$T/out.jsonl" "$T/in.jsonl"

# malformed lines: named by number (blank lines counted), nothing sent
for bad in '{"custom_id": "x", "method": "GET", "url": "/v1/chat/completions", "body": {}}' \
           '{"custom_id": "schema-1", "method": "POST", "url": "/v1/chat/completions", "body": {}}' \
           '{"custom_id": "x", "method": "POST", "url": "/v1/embeddings", "body": {}}' \
           '{"custom_id": "x", "method": "POST", "url": "/v1/chat/completions", "body": {"stream": true}}' \
           'not json'; do
    { head -2 "$T/in.jsonl"; echo "$bad"; } >"$T/bad.jsonl"
    rm -f "$T/bad.out"
    "$B/strux" call --addr "$A" --openai-batch "$T/bad.jsonl" --out "$T/bad.out" --no-progress \
        2>"$T/bad.err"
    rc=$?
    check "malformed line refused: $(echo "$bad" | cut -c1-50)" \
        eval "[ $rc -ne 0 ] && grep -q 'bad.jsonl:3:' '$T/bad.err' && [ ! -s '$T/bad.out' ]"
done

# --resume: two answered lines and a partial third are kept / cut
{ head -2 "$T/out.jsonl"; head -c 40 <(sed -n 3p "$T/out.jsonl"); } >"$T/res.jsonl"
"$B/strux" call --addr "$A" --openai-batch "$T/in.jsonl" --out "$T/res.jsonl" --resume \
    --no-progress 2>"$T/res.err"
check "--resume: exit 0, two lines kept, four sent" \
    eval "[ $? -eq 0 ] && grep -q '2 lines already answered, 4 to send' '$T/res.err'"
check "--resume: the output is whole and judged again" \
    "$PY" "$T/judge.py" "$T/res.jsonl" "$T/in.jsonl"
sed 's/"custom_id":"schema-1"/"custom_id":"other"/' "$T/out.jsonl" | head -1 >"$T/other.jsonl"
"$B/strux" call --addr "$A" --openai-batch "$T/in.jsonl" --out "$T/other.jsonl" --resume \
    --no-progress 2>"$T/other.err"
check "--resume refuses another batch's output (custom_ids differ)" \
    eval "[ $? -ne 0 ] && grep -q 'custom_ids differ' '$T/other.err'"
echo "1..$n"
[ "$failed" -eq 0 ]
