#!/usr/bin/env bash
# struxd with speculative decoding, on tiny random-weight models written
# here: a server started with --speculate draft (a draft model with other
# weights) answers every request -- native protocol over HTTP and the
# OpenAI route, greedy and sampled, under schemas -- with the same output
# whether the request speculates with the draft model, with prompt lookup,
# or not at all ("speculate": false); outputs validate (Python jsonschema);
# /metrics counts drafted and accepted tokens; a server started without
# --speculate refuses requests that ask for it; bad flags are usage errors.
# Needs $STRUX_BUILD, $STRUX_SHARED and the repo venv (.venv) with jsonschema.
set -u
B=${STRUX_BUILD:?}
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
T=$(mktemp -d /tmp/strux-spec-srv.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
n=0 failed=0
check() {
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
"$PY" -c "import jsonschema" 2>/dev/null || bail "$PY lacks jsonschema"
"$B/strux" model random --shape tiny --seed 1 --out "$T/model" >/dev/null 2>&1 || bail "model"
"$B/strux" model random --shape tiny --seed 2 --out "$T/draft" >/dev/null 2>&1 || bail "draft model"

start() { # start NAME ARGS...: struxd in the background; sets HPORT
    local name=$1
    shift
    "$B/struxd" --model "$T/model" --threads 2 --http 127.0.0.1:0 --quiet "$@" 2>"$T/$name.log" &
    pids+=("$!")
    for _ in $(seq 1 600); do
        grep -q '^struxd: ready' "$T/$name.log" && break
        kill -0 "$!" 2>/dev/null || bail "struxd ($name) exited at start-up"
        sleep 0.1
    done
    grep -q '^struxd: ready' "$T/$name.log" || bail "struxd ($name) not ready"
    HPORT=$(sed -n 's|^struxd: listening on.* http://[^:]*:\([0-9]*\).*|\1|p' "$T/$name.log")
}

"$B/struxd" --model "$T/model" --speculate draft >"$T/bad1.out" 2>&1; r1=$?
"$B/struxd" --model "$T/model" --speculate eagle >"$T/bad2.out" 2>&1; r2=$?
check "struxd: draft without --draft-model, unknown mode: exit 2" sh -c \
    "[ $r1 = 2 ] && [ $r2 = 2 ] && grep -q -- '--draft-model' '$T/bad1.out'"
"$B/struxd" --help | grep -q -- "--speculate MODE" && "$B/struxd" --help | grep -q -- "--draft-k"
check "struxd --help names --speculate and --draft-k" [ $? = 0 ]
# a flag without a value leaves the next argument alone
"$B/struxd" --no-batch-invariant --help | grep -q -- "--no-batch-invariant"
check "struxd --no-batch-invariant takes no value (--help after it still answers)" [ $? = 0 ]

start spec --speculate draft --draft-model "$T/draft" --draft-k 3
SPEC=$HPORT
start plain
PLAIN=$HPORT

cat >"$T/run.py" <<'PY'
import json, sys, urllib.request, urllib.error
import jsonschema
spec, plain = sys.argv[1], sys.argv[2]

def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)

schemas = ["schemas/contact_card.json", "schemas/invoice.json", "schemas/support_ticket.json"]
doc = ("Contact: Ada Lovelace, ada@example.com, +44 20 7946 0958. Contact: Ada Lovelace, "
       "ada@example.com. Invoice INV-2024-001 from Acme for 3 widgets at 9.99.")
bad = 0
compared = 0
for si, path in enumerate(schemas):
    schema = json.load(open(path))
    for temp in (0, 0.8):
        base = {"schema": schema, "document": doc, "max_tokens": 48, "temperature": temp, "seed": si}
        outs = {}
        for mode in (False, "draft", "ngram", None):
            body = dict(base)
            if mode is not None:
                body["speculate"] = mode
            st, r = post(spec, "/v1/strux", body)
            if st != 200 or r.get("error"):
                print(f"# {path} T={temp} {mode}: {st} {r}"); bad += 1; continue
            jsonschema.validate(r["output"], schema)
            outs[str(mode)] = r["text"]
        # the OpenAI route, speculating by default
        st, r = post(spec, "/v1/chat/completions", {
            "messages": [{"role": "user", "content": doc}], "temperature": temp, "seed": si,
            "max_tokens": 48, "speculate": "ngram",
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}})
        st2, r2 = post(spec, "/v1/chat/completions", {
            "messages": [{"role": "user", "content": doc}], "temperature": temp, "seed": si,
            "max_tokens": 48, "speculate": False,
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}})
        if st != 200 or st2 != 200:
            print(f"# openai: {st} {r} / {st2} {r2}"); bad += 1
        else:
            a = r["choices"][0]["message"]["content"]; b = r2["choices"][0]["message"]["content"]
            jsonschema.validate(json.loads(a), schema)
            if a != b:
                print(f"# openai {path} T={temp}: {a!r} != {b!r}"); bad += 1
        if len(set(outs.values())) != 1 or len(outs) != 4:
            print(f"# {path} T={temp}: {outs}"); bad += 1
        compared += 1
# a server without --speculate: requests may not ask for it, but may say off
st, r = post(plain, "/v1/strux", {"document": doc, "schema": json.load(open(schemas[0])),
                                  "max_tokens": 16, "speculate": "ngram"})
if st != 400 or r.get("error", {}).get("code") != "bad_request":
    print(f"# plain server, speculate ngram: {st} {r}"); bad += 1
st, r = post(plain, "/v1/strux", {"document": doc, "max_tokens": 8, "speculate": False})
if st != 200:
    print(f"# plain server, speculate false: {st} {r}"); bad += 1
st, r = post(spec, "/v1/strux", {"document": doc, "max_tokens": 8, "speculate": "medusa"})
if st != 400:
    print(f"# speculate medusa: {st} {r}"); bad += 1
print(f"# {compared} groups compared")
sys.exit(1 if bad else 0)
PY
check "same outputs with draft, lookup and no speculation; valid; refusals" \
    "$PY" "$T/run.py" "$SPEC" "$PLAIN"

M=$(curl -sS "http://127.0.0.1:$SPEC/metrics")
d=$(echo "$M" | sed -n 's/^strux_spec_drafted_tokens_total \([0-9]*\)$/\1/p')
a=$(echo "$M" | sed -n 's/^strux_spec_accepted_tokens_total \([0-9]*\)$/\1/p')
echo "# drafted $d accepted $a"
check "/metrics counts drafted and accepted tokens" sh -c "[ -n '$d' ] && [ -n '$a' ] && [ '$d' -gt 0 ] && [ '$a' -le '$d' ]"
exit $((failed > 0))
