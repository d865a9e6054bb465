#!/usr/bin/env bash
# struxd end to end, on the tiny random-weight model generated here:
#   - >= 200 requests (a sample of ../shared/maskbench schemas, every schema in
#     schemas/ with its sample document, choices, regex, json_object) from 32
#     concurrent clients (`strux call --batch --concurrency 32 --verify`), with
#     max_tokens tight enough that some documents must be closed early;
#     every successful output re-checked by strux's validator (client side) and
#     by Python jsonschema;
#   - bad input: malformed JSON, wrong types, unknown fields, unsupported
#     keywords, invalid schemas and regexes, oversized requests, clients that
#     vanish mid-request -- the server stays up and answers the next request;
#   - a full queue answers `overloaded` at once (a second server, queue of 2);
#   - HTTP with curl (/health, /v1/models, /metrics, /v1/chat/completions plain
#     and streamed) and with the official `openai` client;
#   - n choices: per-choice seeded streams, one prefill, native and OpenAI;
#   - SIGTERM with requests in flight: all of them answered, exit status 0
#     (under ASan that also means no leak).
# Needs $STRUX_BUILD, $STRUX_SHARED and the repo venv (.venv) with jsonschema,
# openai and pynng (tests/fixtures/requirements.txt).
set -u
B=${STRUX_BUILD:?}
S=${STRUX_SHARED:?}
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
T=$(mktemp -d /tmp/strux-e2e.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
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
"$PY" -c "import jsonschema, openai, pynng" 2>/dev/null ||
    bail "$PY lacks jsonschema/openai/pynng (pip install -r tests/fixtures/requirements.txt)"

"$B/strux" model random --shape tiny --seed 1 --out "$T/model" >"$T/model.log" 2>&1 ||
    bail "strux model random --shape tiny"

# start NAME ARGS...: runs struxd in the background, waits for "ready";
# sets SPID (its pid) and HPORT (its HTTP port, if any)
start() {
    local name=$1
    shift
    "$B/struxd" --model "$T/model" --threads 2 "$@" 2>"$T/$name.log" &
    SPID=$!
    pids+=("$SPID")
    for _ in $(seq 1 600); do
        grep -q '^struxd: ready' "$T/$name.log" && break
        kill -0 "$SPID" 2>/dev/null || bail "struxd ($name) exited at start-up"
        sleep 0.1
    done
    grep -q '^struxd: ready' "$T/$name.log" || bail "struxd ($name) not ready after 60 s"
    HPORT=$(sed -n 's|^struxd: listening on.* http://[^:]*:\([0-9]*\).*|\1|p' "$T/$name.log")
}

ADDR="ipc://$T/struxd.ipc"
start main --listen "$ADDR" --listen tcp://127.0.0.1:0 --http 127.0.0.1:0 --max-batch 32 \
    --max-queue 256 --max-request-bytes 65536 --default-max-tokens 48 --max-tokens 2048 \
    --timeout 900
MAIN=$SPID
check "startup summary names the model, KV capacity and addresses" \
    grep -q "^struxd: model .*KV cache [0-9]* tokens (f32)" "$T/main.log"
check "startup summary names the CPU kernel path" \
    grep -Eq "CPU kernels (amx|avx512|avx2|scalar) " "$T/main.log"
check "startup warns that the weights are random" grep -q "RANDOM weights" "$T/main.log"
check "HTTP port reported" [ -n "$HPORT" ]
URL="http://127.0.0.1:$HPORT"

# ---- the batch ------------------------------------------------------------------
cat >"$T/gen.py" <<'PY'
import json, os, sys
shared, out = sys.argv[1], sys.argv[2]
names = [l.strip() for l in open("tests/fixtures/maskbench_ci_sample.txt") if l.strip()]
reqs = []
budgets = [12, 24, 48]
temps = [0, 0.8, 1.0]
for i, name in enumerate(names[::2]):
    d = json.load(open(os.path.join(shared, "maskbench", name)))
    valid = [t["data"] for t in d.get("tests", []) if t.get("valid")]
    doc = "Record:\n" + (json.dumps(valid[0])[:1500] if valid else d.get("description", name))
    reqs.append({"id": f"mb-{i}-{name}", "schema": d["schema"], "document": doc,
                 "max_tokens": budgets[i % 3], "temperature": temps[i % 3], "seed": i})
for f in sorted(os.listdir("schemas")):
    if not f.endswith(".json"):
        continue
    schema = json.load(open(os.path.join("schemas", f)))
    doc = open(os.path.join("schemas", "samples", f[:-5] + ".txt")).read()
    for k, budget in enumerate([12, 16, 24, 32, 40, 48, 64, 96]):
        reqs.append({"id": f"sc-{f}-{k}", "schema": schema, "document": doc,
                     "max_tokens": budget, "temperature": temps[k % 3], "seed": k})
    # every choice of n and every beam validates too (tight and loose budgets)
    for k, budget in enumerate([16, 48]):
        reqs.append({"id": f"sn-{f}-{k}", "schema": schema, "document": doc, "n": 3,
                     "max_tokens": budget, "temperature": 1.0, "seed": 10 + k})
        reqs.append({"id": f"sb-{f}-{k}", "schema": schema, "document": doc, "num_beams": 2,
                     "num_return_sequences": 2, "early_stopping": True, "max_tokens": budget,
                     "temperature": 0})
labels = json.load(open("schemas/sentiment_labels.json"))["enum"]
for k, f in enumerate(sorted(os.listdir("schemas/samples"))):
    if f.endswith(".txt"):
        reqs.append({"id": f"ch-{k}", "choices": labels, "seed": k,
                     "document": open(os.path.join("schemas/samples", f)).read()})
for k in range(6):
    reqs.append({"id": f"re-{k}", "regex": "[A-Z]{2}-[0-9]{3,5}( \\(urgent\\))?", "seed": k,
                 "temperature": 1.0, "messages": [{"role": "user", "content": "A ticket code?"}]})
    reqs.append({"id": f"jo-{k}", "json_object": True, "seed": k, "temperature": 1.0,
                 "max_tokens": 24, "document": "Name: Ada, age 36, city: Turin"})
# the guarantee under sampling: every format alone at temperature 1 (small
# and large budgets), and every schema of the JSON Schema Test Suite
# (those strux declines answer schema_unsupported, never internal)
fmts = ["date", "time", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "uuid",
        "uri", "uri-reference"]
for k, fm in enumerate(fmts):
    for seed in (1, 2):
        reqs.append({"id": f"fmt-{fm}-{seed}", "schema": {"type": "string", "format": fm},
                     "document": "x", "temperature": 1.0, "seed": seed,
                     "max_tokens": 128 if seed == 1 else 10})
suite = os.path.join(shared, "json-schema-test-suite", "tests", "draft2020-12")
files = sorted(os.path.join(suite, f) for f in os.listdir(suite) if f.endswith(".json"))
files += sorted(os.path.join(suite, "optional", "format", f)
                for f in os.listdir(os.path.join(suite, "optional", "format")))
k = 0
for path in files:
    for g, group in enumerate(json.load(open(path))):
        k += 1
        reqs.append({"id": f"ts-{os.path.basename(path)}-{g}", "schema": group["schema"],
                     "document": group.get("description", ""), "temperature": 1.0, "seed": k,
                     "max_tokens": [8, 24, 96][k % 3]})
# STRUX_E2E_REQUESTS=N: an evenly spread subset (the ASan run, where every
# request is ~20x slower; the full set runs in the normal build)
cap = int(os.environ.get("STRUX_E2E_REQUESTS", "0") or 0)
if 0 < cap < len(reqs):
    reqs = [reqs[i * len(reqs) // cap] for i in range(cap)]
with open(out, "w") as o:
    for r in reqs:
        o.write(json.dumps(r) + "\n")
print(len(reqs))
PY
NREQ=$("$PY" "$T/gen.py" "$S" "$T/in.jsonl")
WANT=200
[ -n "${STRUX_E2E_REQUESTS:-}" ] && WANT=$STRUX_E2E_REQUESTS && [ "$WANT" -gt 200 ] && WANT=200
check "built $NREQ requests (>= $WANT)" [ "${NREQ:-0}" -ge "$WANT" ]
"$B/strux" call --addr "$ADDR" --batch "$T/in.jsonl" --out "$T/out.jsonl" --concurrency 32 \
    --verify --no-progress 2>"$T/batch.log"
rc=$?
echo "# $(tail -1 "$T/batch.log")"
check "batch of $NREQ over 32 concurrent clients: every request answered" [ $rc -eq 0 ]
check "strux's validator accepts every successful output (client-side --verify)" \
    grep -q "verified [0-9]* outputs: 0 failed" "$T/batch.log"

cat >"$T/judge.py" <<'PY'
import json, os, sys
import jsonschema
# the fuzzgen oracle's judging: every error jsonschema reports must be a
# documented departure of its own (docs/ORACLE.md); a pattern Python's re
# cannot compile is that keyword's own error, so the rest is still judged
sys.path.insert(0, os.path.join(os.getcwd(), "tools"))
from oracle_jsonschema import guard_patterns, unexplained
reqs = [json.loads(l) for l in open(sys.argv[1])]
resps = [json.loads(l) for l in open(sys.argv[2])]
assert len(reqs) == len(resps), "one response per request"
ok = bad = closed_early = internal = python_re = declined = cached = 0
codes = {}

import re
for q, r in zip(reqs, resps):
    assert r.get("id") == q["id"], f"order/id mismatch: {q['id']} vs {r.get('id')}"
    if not r["ok"]:
        c = r["error"]["code"]
        codes[c] = codes.get(c, 0) + 1
        internal += c in ("internal", "transport")
        # Test Suite and MaskBench schemas strux declines at compile time
        declined += q["id"].startswith(("mb-", "ts-")) and c in (
            "schema_unsupported", "schema_invalid", "too_large")
        # schemas/ and the other kinds must succeed; maskbench and the Test
        # Suite may be unsupported
        if not q["id"].startswith(("mb-", "ts-")) and c != "incomplete":
            print("unexpected error", q["id"], r["error"], file=sys.stderr); bad += 1
        continue
    ok += 1
    out = r["output"]
    if "schema" in q:
        cls = jsonschema.validators.validator_for(q["schema"])
        v = guard_patterns(cls)(q["schema"], format_checker=cls.FORMAT_CHECKER)
        def judge(doc, what):
            """False (and a line on stderr) unless every error is a departure;
            an exception from the checker is a failure, never "no errors" """
            global python_re
            try:
                names, wrong = unexplained(list(v.iter_errors(doc)), v.schema)
            except Exception as exc:
                print("oracle crashed on", what, q["id"], type(exc).__name__, exc, file=sys.stderr)
                return False
            python_re += "python-re-syntax" in names
            if wrong:
                print("jsonschema rejects", what, q["id"], wrong[0].message[:200], file=sys.stderr)
            return not wrong
        bad += not judge(out, "output")
        if json.loads(r["text"]) != out:
            print("text and output differ", q["id"], file=sys.stderr); bad += 1
        for i, c in enumerate(r.get("choices", [])):   # n choices and beams: each one
            if not judge(c["output"], "choice %d of" % i) or json.loads(c["text"]) != c["output"]:
                print("choice", i, "of", q["id"], "is not valid", file=sys.stderr); bad += 1
    elif "choices" in q:
        if out not in q["choices"] or abs(sum(r["scores"].values()) - 1) > 1e-6:
            print("bad label or scores", q["id"], file=sys.stderr); bad += 1
    elif "regex" in q:
        if not re.fullmatch(r"[A-Z]{2}-[0-9]{3,5}( \(urgent\))?", out):
            print("regex output", q["id"], repr(out), file=sys.stderr); bad += 1
    elif q.get("json_object") and not isinstance(out, dict):
        print("not an object", q["id"], file=sys.stderr); bad += 1
    mt = q.get("max_tokens", 48)
    if r["usage"]["completion_tokens"] >= mt - 2:
        closed_early += 1
    if r["usage"]["cached_tokens"] > 0:   # prompt tokens from the prefix cache
        cached += 1
print(json.dumps({"ok": ok, "bad": bad, "closed_at_budget": closed_early, "internal": internal,
                  "python_re_unreadable": python_re, "declined": declined, "errors": codes,
                  "cached": cached}))
PY
J=$("$PY" "$T/judge.py" "$T/in.jsonl" "$T/out.jsonl" 2>"$T/judge.log")
echo "# $J"
jget() { "$PY" -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$J" "$1" 2>/dev/null; }
check "Python jsonschema accepts every output; no unexpected errors" [ "$(jget bad)" = 0 ]
check "no internal errors" [ "$(jget internal)" = 0 ]
check "most requests with a compiling schema succeed ($(jget ok) of $NREQ, $(jget declined) declined)" \
    [ "$(jget ok)" -ge $(( (NREQ - $(jget declined)) * 3 / 4 )) ]
check "tight budgets force documents to close at the limit ($(jget closed_at_budget))" \
    [ "$(jget closed_at_budget)" -ge 5 ]
check "answers report prompt tokens from the prefix cache (usage.cached_tokens > 0 on $(jget cached))" \
    [ "$(jget cached)" -ge 1 ]

# ---- n choices ------------------------------------------------------------------------
# n=4 at temperature 1: four schema-valid choices, choice i equal to an n=1
# request with seed + i (each choice has its own sampler stream), the prompt
# prefilled once (the prefilled-token metric and the engine's own count);
# greedy n=2 gives equal choices; the openai client with n=3, plain and
# streamed; bad n values.  Nothing else runs meanwhile, so metric deltas
# belong to these requests.
cat >"$T/n.py" <<'PY'
import json, sys, urllib.request
import jsonschema, pynng
from openai import OpenAI, BadRequestError
addr, url = sys.argv[1], sys.argv[2]
def call(body):
    with pynng.Req0(dial=addr, resend_time=-1, recv_timeout=300000) as s:
        s.send(json.dumps(body).encode())
        return json.loads(s.recv())
def metric(name):
    for l in urllib.request.urlopen(url + "/metrics").read().decode().splitlines():
        if l.startswith(name + " "):
            return int(float(l.split()[-1]))
    raise KeyError(name)
schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
          "age": {"type": "integer", "minimum": 0, "maximum": 150}},
          "required": ["name", "age"], "additionalProperties": False}
base = {"schema": schema, "document": "Ada Lovelace, 36, London", "temperature": 1.0,
        "max_tokens": 40}
r = call(dict(base, id="n4", n=4, seed=500))
assert r["ok"], r
cs = r["choices"]
assert [c["index"] for c in cs] == [0, 1, 2, 3], cs
for c in cs:
    jsonschema.validate(c["output"], schema)
    assert json.loads(c["text"]) == c["output"]
assert r["output"] == cs[0]["output"] and r["text"] == cs[0]["text"]
assert len({c["text"] for c in cs}) >= 2, "seeds 500..503 gave one document"
singles = [call(dict(base, id=f"n1-{i}", seed=500 + i)) for i in range(4)]
for i, s1 in enumerate(singles):
    assert s1["ok"] and "choices" not in s1, s1
    assert s1["text"] == cs[i]["text"], (i, s1["text"], cs[i]["text"])
    assert s1["usage"]["completion_tokens"] == cs[i]["usage"]["completion_tokens"]
assert r["usage"]["prompt_tokens"] == singles[0]["usage"]["prompt_tokens"]
assert r["usage"]["completion_tokens"] == sum(c["usage"]["completion_tokens"] for c in cs)
g = call(dict(base, id="greedy", n=2, temperature=0))
assert g["ok"] and len(g["choices"]) == 2 and g["choices"][0]["text"] == g["choices"][1]["text"], g

# one prefill: a long prompt with no system turn (nothing from the prefix cache)
# for n = 4; then the same prompt again takes all but its last token from
# the prefix cache, which keeps whole prompts
doc = "".join(open(f"schemas/samples/{f}.txt").read() for f in ("cv", "invoice", "receipt"))
long = {"messages": [{"role": "user", "content": doc}], "json_object": True,
        "temperature": 1.0, "max_tokens": 32, "seed": 7}
p0, m0 = metric('strux_tokens_total{kind="prefilled"}'), metric("strux_model_tokens_total")
b = call(dict(long, id="long4", n=4))
p1, m1 = metric('strux_tokens_total{kind="prefilled"}'), metric("strux_model_tokens_total")
a = call(dict(long, id="long1"))
p2, m2 = metric('strux_tokens_total{kind="prefilled"}'), metric("strux_model_tokens_total")
N = b["usage"]["prompt_tokens"]
c4 = b["usage"]["completion_tokens"]
assert N > 300, N
assert b["usage"]["cached_tokens"] == 0, b["usage"]
assert p1 - p0 == N + 3, ("n=4 prefilled", p1 - p0, "prompt", N)
# the engine's count: the prompt once, one token per other choice, decode
assert m1 - m0 <= N + 3 + c4, ("n=4 model tokens", m1 - m0, N, c4)
assert a["usage"]["prompt_tokens"] == N and a["usage"]["cached_tokens"] == N - 1, a["usage"]
assert p2 - p1 == 1, ("the repeated prompt prefilled", p2 - p1)
print(f"prompt {N} tokens: n=4 prefilled {p1 - p0}, the same prompt again {p2 - p1} "
      f"(model ran {m1 - m0} tokens for {c4} output tokens; 4 separate prompts: {4 * N})")

for bad in (0, 17, "2", 1.5):
    e = call({"document": "x", "json_object": True, "n": bad})
    assert not e["ok"] and e["error"]["code"] == "bad_request" and e["error"]["pointer"] == "/n", e
e = call({"document": "x", "choices": ["a", "b"], "n": 2, "temperature": 1})
assert e["error"]["pointer"] == "/n", e

client = OpenAI(base_url=url + "/v1", api_key="none", max_retries=0)
rf = {"type": "json_schema", "json_schema": {"name": "p", "schema": schema, "strict": True}}
msgs = [{"role": "user", "content": "Ada Lovelace, 36, London"}]
o = client.chat.completions.create(model="m", n=3, seed=9, max_tokens=40, messages=msgs,
                                   response_format=rf)
assert [c.index for c in o.choices] == [0, 1, 2]
for c in o.choices:
    jsonschema.validate(json.loads(c.message.content), schema)
o1 = client.chat.completions.create(model="m", seed=9, max_tokens=40, messages=msgs,
                                    response_format=rf)
assert o.usage.prompt_tokens == o1.usage.prompt_tokens
assert o.choices[0].message.content == o1.choices[0].message.content
texts, finish = ["", "", ""], [None] * 3
for ch in client.chat.completions.create(model="m", n=3, seed=9, max_tokens=40, messages=msgs,
                                         response_format=rf, stream=True):
    for c in ch.choices:
        texts[c.index] += c.delta.content or ""
        finish[c.index] = c.finish_reason or finish[c.index]
assert texts == [c.message.content for c in o.choices], (texts, o.choices)
assert finish == [c.finish_reason for c in o.choices], finish
try:
    client.chat.completions.create(model="m", n=17, messages=msgs)
    raise AssertionError("n=17 accepted")
except BadRequestError as err:
    assert err.status_code == 400
PY
NOUT=$("$PY" "$T/n.py" "$ADDR" "$URL" 2>"$T/n.log")
check "n choices: valid, per-choice seeds, prompt once, greedy equal, openai plain and streamed" \
    [ $? -eq 0 ]
echo "# n choices: ${NOUT:-$(tail -3 "$T/n.log")}"

# ---- bad input ----------------------------------------------------------------------
cat >"$T/bad.py" <<'PY'
import json, sys, time
import pynng
addr = sys.argv[1]
def call(body, timeout=60000):
    with pynng.Req0(dial=addr, resend_time=-1, recv_timeout=timeout) as s:
        s.send(body if isinstance(body, bytes) else json.dumps(body).encode())
        return json.loads(s.recv())
cases = [
    (b'{"document": "x"', "bad_request", ""),
    (b'\xff\xfe', "bad_request", ""),
    ({"document": 5}, "bad_request", "/document"),
    ({"document": "x", "colour": "red"}, "bad_request", "/colour"),
    ({"document": "x", "temperature": "hot"}, "bad_request", "/temperature"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "bad_request", "/messages/0/role"),
    ({"schema": {"type": "string", "pattern": "(a)\\1"}, "document": "x"}, "schema_unsupported", "/schema/pattern"),
    ({"schema": {"$dynamicAnchor": "node", "type": "object", "properties": {"c": {"$dynamicRef": "#node"}}}, "document": "x"}, "schema_unsupported", "/schema/properties/c/$dynamicRef"),
    ({"schema": {"type": "object", "properties": {"a": {"type": "strin"}}}, "document": "x"}, "schema_invalid", "/schema/properties/a/type"),
    ({"schema": {"$ref": "#/$defs/nope"}, "document": "x"}, None, None),
    ({"regex": "(ab", "document": "x"}, "schema_invalid", None),
    ({"document": "x" * 70000}, "too_large", ""),
    ({"document": "x", "max_tokens": 100000}, "too_large", "/max_tokens"),
    ({"choices": [], "document": "x"}, "bad_request", "/choices"),
]
bad = 0
for body, code, ptr in cases:
    r = call(body)
    e = r.get("error", {})
    good = not r["ok"] and (code is None and e.get("code") in ("schema_invalid", "schema_unsupported")
                            or e.get("code") == code) and (ptr is None or e.get("pointer", "") == ptr)
    if not good:
        print("wrong answer for", str(body)[:80], "->", json.dumps(r)[:300], file=sys.stderr); bad += 1
# clients that send and vanish
for i in range(8):
    s = pynng.Req0(dial=addr, resend_time=-1)
    s.send(json.dumps({"id": f"gone-{i}", "json_object": True, "document": "x",
                       "max_tokens": 400, "temperature": 1.0}).encode())
    time.sleep(0.02)
    s.close()
time.sleep(0.5)
r = call({"id": "after", "schema": {"type": "object", "properties": {"n": {"type": "integer"}},
                                    "required": ["n"]}, "document": "n is 4", "max_tokens": 32})
if not (r["ok"] and isinstance(r["output"].get("n"), int)):
    print("good request after bad ones failed:", r, file=sys.stderr); bad += 1
print(bad)
PY
BAD=$("$PY" "$T/bad.py" "$ADDR" 2>"$T/bad.log")
check "bad requests get the right code and pointer; the next good one works" [ "$BAD" = 0 ]
[ "$BAD" = 0 ] || sed 's/^/# /' "$T/bad.log"
check "struxd is still up" kill -0 "$MAIN"
M=$(curl -sS "$URL/metrics")
cancelled=$(echo "$M" | sed -n 's/^strux_requests_total{via="nng",code="cancelled"} //p')
check "vanished clients' requests were cancelled (${cancelled:-0} of 8)" [ "${cancelled:-0}" -ge 4 ]

# ---- HTTP: curl ----------------------------------------------------------------------
check "GET /health" sh -c "curl -sSf '$URL/health' | grep -q '\"status\":\"ok\"'"
check "GET /v1/models lists the model" sh -c "curl -sSf '$URL/v1/models' | grep -q '\"id\":\"model\"'"
# /metrics from a file: its help texts hold quotes and parentheses that must
# not meet a shell
echo "$M" >"$T/metrics.txt"
check "GET /metrics counts requests, tokens, latency, cache hits" sh -c "
    grep -q '^strux_requests_total{via=\"nng\",code=\"ok\"} [1-9]' '$T/metrics.txt' &&
    grep -q '^strux_tokens_total{kind=\"completion\"} [1-9]' '$T/metrics.txt' &&
    grep -q '^strux_tokens_total{kind=\"prefilled\"} [1-9]' '$T/metrics.txt' &&
    grep -q '^strux_model_tokens_total [1-9]' '$T/metrics.txt' &&
    grep -q '^strux_ttft_ms_bucket{le=\"+Inf\"} [1-9]' '$T/metrics.txt' &&
    grep -q '^strux_batch_size_count [1-9]' '$T/metrics.txt' &&
    grep -q '^strux_schema_cache_hits_total [1-9]' '$T/metrics.txt'"
check "GET /metrics: the prefix cache served prompt tokens (hits and cached tokens)" sh -c "
    grep -q '^strux_prefix_cache_lookups_total{result=\"hit\"} [1-9]' '$T/metrics.txt' &&
    grep -q '^strux_prefix_cache_cached_tokens_total [1-9]' '$T/metrics.txt' &&
    grep -q '^strux_prefix_cache_entries [0-9]' '$T/metrics.txt' &&
    grep -q '^strux_prefix_cache_joins_total [0-9]' '$T/metrics.txt'"
check "GET /metrics: zero re-check failures after the sampled batch" \
    grep -q '^strux_recheck_failures_total 0$' "$T/metrics.txt"
# schema requests ran masked steps: the sparse LM head read fewer panels than
# a dense head would have
LMD=$(echo "$M" | sed -n 's/^strux_lm_head_panels_total{kind="dense"} //p')
LMR=$(echo "$M" | sed -n 's/^strux_lm_head_panels_total{kind="read"} //p')
check "GET /metrics: LM-head panels read under masks (${LMR:-?} of ${LMD:-?})" sh -c "
    [ '${LMD:-0}' -gt 0 ] && [ '${LMR:-0}' -gt 0 ] && [ '${LMR:-0}' -lt '${LMD:-0}' ]"
"$PY" - "$T/chat.json" <<'PY'
import json, sys
schema = json.load(open("schemas/contact_card.json"))
json.dump({"model": "model", "max_tokens": 64, "temperature": 0,
           "messages": [{"role": "user", "content": open("schemas/samples/contact_card.txt").read()}],
           "response_format": {"type": "json_schema",
                               "json_schema": {"name": "contact", "strict": True, "schema": schema}}},
          open(sys.argv[1], "w"))
PY
curl -sS -o "$T/chat.out" -w '%{http_code}' -H 'Content-Type: application/json' -H 'Expect:' \
    --data-binary @"$T/chat.json" "$URL/v1/chat/completions" >"$T/chat.code"
check "POST /v1/chat/completions (json_schema): 200 and schema-valid content" "$PY" -c '
import json, sys, jsonschema
r = json.load(open(sys.argv[1])); assert open(sys.argv[2]).read() == "200", r
c = json.loads(r["choices"][0]["message"]["content"])
jsonschema.validate(c, json.load(open("schemas/contact_card.json")))
assert r["usage"]["completion_tokens"] > 0' "$T/chat.out" "$T/chat.code"
curl -sSN -H 'Content-Type: application/json' "$URL/v1/chat/completions" -d \
    '{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"},"max_tokens":24,"stream":true}' \
    >"$T/stream.out"
check "streamed chat completion: chunks, then data: [DONE]" "$PY" -c '
import json, sys
t = open(sys.argv[1]).read(); assert t.endswith("data: [DONE]\n\n"), t[-200:]
ev = [json.loads(l[6:]) for l in t.split("\n\n") if l.startswith("data: {")]
text = "".join(e["choices"][0]["delta"].get("content") or "" for e in ev if e["choices"])
assert isinstance(json.loads(text), dict)
assert ev[-1]["choices"][0]["finish_reason"] in ("stop", "length")' "$T/stream.out"
code=$(curl -sS -o "$T/err.out" -w '%{http_code}' -H 'Content-Type: application/json' \
    "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"string","pattern":"(a)\\1"}}}}')
check "unsupported schema over HTTP: 422, OpenAI error shape, pointer" sh -c "
    [ '$code' = 422 ] && grep -q '\"param\":\"/response_format/json_schema/schema/pattern\"' '$T/err.out' &&
    grep -q '\"code\":\"schema_unsupported\"' '$T/err.out'"

# ---- HTTP: the openai client -------------------------------------------------------------
check "the openai Python client: json_schema and streaming" "$PY" - "$URL/v1" <<'PY'
import json, sys, jsonschema
from openai import OpenAI
client = OpenAI(base_url=sys.argv[1], api_key="none", max_retries=0)
model = client.models.list().data[0].id
schema = json.load(open("schemas/invoice.json"))
r = client.chat.completions.create(
    model=model, max_tokens=200, temperature=0.5, seed=3,
    messages=[{"role": "user", "content": open("schemas/samples/invoice.txt").read()}],
    response_format={"type": "json_schema", "json_schema": {"name": "invoice", "schema": schema, "strict": True}})
c = r.choices[0]
assert c.finish_reason == "stop", c.finish_reason
jsonschema.validate(json.loads(c.message.content), schema)
parts = [ch.choices[0].delta.content or "" for ch in client.chat.completions.create(
    model=model, max_tokens=24, stream=True, messages=[{"role": "user", "content": "hi"}],
    response_format={"type": "json_object"}) if ch.choices]
assert isinstance(json.loads("".join(parts)), dict)
PY

# ---- a full queue (this server keeps its KV cache in bf16 and its weights in 4 bits) --------
start small --listen "ipc://$T/small.ipc" --max-batch 1 --max-queue 2 --default-max-tokens 64 --kv-bf16 \
    --q4
SMALL=$SPID
check "--kv-bf16: the startup summary says the cache is bf16" \
    grep -q "^struxd: model .*KV cache [0-9]* tokens (bf16)" "$T/small.log"
check "--q4: the startup summary says the weights are q4" \
    grep -q "^struxd: model .*parameters, q4)" "$T/small.log"
"$PY" - "$T/q.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(24):
        f.write(json.dumps({"id": i, "json_object": True, "document": "x", "temperature": 1.0,
                            "seed": i, "max_tokens": 64}) + "\n")
PY
"$B/strux" call --addr "ipc://$T/small.ipc" --overload-wait 0 --batch "$T/q.jsonl" --out "$T/q.out" \
    --concurrency 24 \
    --no-progress 2>"$T/q.log"
over=$(grep -c '"code":"overloaded"' "$T/q.out")
okq=$(grep -c '"ok":true' "$T/q.out")
# a random model may wander where 64 tokens cannot close the object: that
# is an `incomplete` answer, not a failure of the queue
inc=$(grep -c '"code":"incomplete"' "$T/q.out")
echo "# full queue: $okq ok, $over overloaded, $inc incomplete"
check "a full queue answers overloaded at once, the rest are served" \
    [ "$over" -ge 1 -a "$okq" -ge 1 -a $((over + okq + inc)) -eq 24 ]
kill -TERM "$SMALL"
wait "$SMALL"
check "second server exits 0 on SIGTERM" [ $? -eq 0 ]

# ---- SIGTERM with requests in flight ---------------------------------------------------------
"$PY" - "$T/t.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(16):
        f.write(json.dumps({"id": i, "schema": {"type": "array", "items": {"type": "integer"}},
                            "document": "numbers", "temperature": 1.0, "seed": i,
                            "max_tokens": 96}) + "\n")
PY
"$B/strux" call --addr "$ADDR" --batch "$T/t.jsonl" --out "$T/t.out" --concurrency 16 --no-progress \
    2>"$T/t.log" &
CALL=$!
for _ in $(seq 1 100); do
    inflight=$(curl -sS "$URL/metrics" | sed -n 's/^strux_inflight //p')
    [ "${inflight:-0}" -ge 16 ] && break
    sleep 0.05
done
kill -TERM "$MAIN"
wait "$MAIN"
st=$?
wait "$CALL"
check "SIGTERM: struxd exits 0 (after draining)" [ $st -eq 0 ]
check "SIGTERM: all 16 in-flight requests answered ok" [ "$(grep -c '"ok":true' "$T/t.out")" -eq 16 ]
check "one log line per request" [ "$(grep -c '^struxd: req=' "$T/main.log")" -ge "$NREQ" ]
check "log says it stopped" grep -q '^struxd: stopped' "$T/main.log"
[ $failed -eq 0 ] || for f in "$T"/*.log; do echo "# --- $f"; tail -5 "$f" | sed 's/^/# /'; done
exit $((failed > 0))
