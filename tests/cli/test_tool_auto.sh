#!/usr/bin/env bash
# struxd's free-prefix answers on /v1/chat/completions, on the tiny random
# model (seconds: short requests, max_tokens small):
#   - tool_choice "auto" (and the default with tools): free text, or tool
#     calls constrained from their <tool_call> on.  A random model rarely
#     opens a call by itself, so logit_bias +100 on <tool_call> forces the
#     constrained path; every call's arguments must validate against its
#     tool's parameters (Python jsonschema), at temperature 1 and greedy;
#     parallel_tool_calls false gives one call; without the bias the answer
#     is free text (finish stop/length, no tool_calls);
#   - tool_choice "none": the tag is never written, even with the bias;
#   - streamed calls arrive as delta.tool_calls in OpenAI's shape: a first
#     chunk with index, id, type, name and arguments "", then the arguments
#     in fragments (index and function.arguments only), as they are written;
#   - thinking (chat_template_kwargs.enable_thinking, strux.thinking with a
#     budget): reasoning_content, then a constrained answer that validates;
#     the budget bounds the reasoning; streamed as delta.reasoning_content;
#     thinking before a forced tool call; thinking with tool_choice auto:
#     reasoning, then free text or calls (streamed too);
#   - what does not combine is a 400 naming the member.
# Needs $STRUX_BUILD and the repo venv (.venv) with jsonschema.
set -u
B=${STRUX_BUILD:?}
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
T=$(mktemp -d /tmp/strux-tauto.XXXXXX)
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
"$PY" -c "import jsonschema" 2>/dev/null || bail "$PY lacks jsonschema"
"$B/strux" model random --shape tiny --seed 1 --out "$T/model" >"$T/model.log" 2>&1 ||
    bail "strux model random --shape tiny"
"$B/struxd" --model "$T/model" --threads 2 --http 127.0.0.1:0 --default-max-tokens 40 \
    --max-tokens 256 --timeout 120 2>"$T/d.log" &
SPID=$!
for _ in $(seq 1 600); do
    grep -q '^struxd: ready' "$T/d.log" && break
    kill -0 "$SPID" 2>/dev/null || bail "struxd exited at start-up"
    sleep 0.1
done
HPORT=$(sed -n 's|^struxd: listening on.* http://[^:]*:\([0-9]*\).*|\1|p' "$T/d.log")
[ -n "$HPORT" ] || bail "struxd reported no HTTP port"

cat >"$T/t.py" <<'PY'
import json, sys, urllib.request, urllib.error
import jsonschema
URL = "http://127.0.0.1:%s/v1/chat/completions" % sys.argv[1]
TOK = json.load(open(sys.argv[2]))
ID = {a["content"]: a["id"] for a in TOK["added_tokens"]}
OPEN = str(ID["<tool_call>"])

def post(body):
    req = urllib.request.Request(URL, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()

def events(txt):
    out = []
    for line in txt.split("\n"):
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[6:]))
    return out

W = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8},
     "days": {"type": "integer", "minimum": 1, "maximum": 7},
     "units": {"enum": ["c", "f"]}}, "required": ["city", "days"], "additionalProperties": False}
L = {"type": "object", "properties": {"q": {"type": "string", "pattern": "^[a-z]{1,5}$"},
     "n": {"type": "array", "items": {"type": "number"}, "maxItems": 2}},
     "required": ["q"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": W}},
         {"type": "function", "function": {"name": "lookup", "parameters": L, "strict": True}},
         {"type": "function", "function": {"name": "noop"}}]
PARAMS = {"get_weather": W, "lookup": L,
          "noop": {"type": "object", "properties": {}, "additionalProperties": False}}
MSGS = [{"role": "user", "content": "What is the weather in Oslo?"}]
n = 0

def check(what, ok, info=""):
    global n
    n += 1
    print(("ok %d - %s" if ok else "not ok %d - %s") % (n, what))
    if not ok and info:
        print("# " + str(info)[:800].replace("\n", "\n# "))

def valid_calls(calls):
    for c in calls:
        assert c["type"] == "function" and c["id"].startswith("call_"), c
        jsonschema.validate(json.loads(c["function"]["arguments"]), PARAMS[c["function"]["name"]])
    return True

def accumulate(ev):
    """delta.tool_calls chunks joined as OpenAI's clients join them; checks
    the shape: the first chunk of a call opens it, later ones only add."""
    calls = {}
    for e in ev:
        for t in (e["choices"][0]["delta"].get("tool_calls") or []) if e["choices"] else []:
            k = t["index"]
            if k not in calls:
                assert set(t) == {"index", "id", "type", "function"}, t
                assert t["function"]["arguments"] == "" or not t["function"]["arguments"] is None
                calls[k] = {"id": t["id"], "type": t["type"],
                            "function": {"name": t["function"]["name"],
                                         "arguments": t["function"]["arguments"]}}
            else:
                assert set(t) == {"index", "function"} and set(t["function"]) == {"arguments"}, t
                calls[k]["function"]["arguments"] += t["function"]["arguments"]
    return [calls[k] for k in sorted(calls)], sum(
        len(e["choices"][0]["delta"].get("tool_calls") or []) for e in ev if e["choices"])

def same_calls(a, b):
    # the ids name the request, which differs; the arguments' spacing may
    # differ (streamed as written, unstreamed re-serialised)
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in a] == \
           [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in b]

def req(**kw):
    b = {"messages": MSGS, "tools": TOOLS, "max_tokens": 40}
    b.update(kw)
    return {k: v for k, v in b.items() if v is not None}

# auto without the bias: free text (a random model does not open calls)
bad = []
for seed in range(3):
    st, txt = post(req(seed=seed, max_tokens=12))
    c = json.loads(txt)["choices"][0] if st == 200 else None
    if not (c and isinstance(c["message"]["content"], str) and "tool_calls" not in c["message"]
            and c["finish_reason"] in ("stop", "length") and "<tool_call>" not in c["message"]["content"]):
        bad.append((st, txt))
check("tool_choice auto (default) without a call: free text, finish stop/length", not bad, bad)

# the call forced open by logit_bias: every call validates, temperature 1 and greedy
bad, ncalls = [], 0
for seed in range(3):
    for temp in (1, 0):
        st, txt = post(req(seed=seed, temperature=temp, logit_bias={OPEN: 100}, max_tokens=30,
                           tool_choice="auto" if seed % 2 else None))
        try:
            c = json.loads(txt)["choices"][0]
            calls = c["message"]["tool_calls"]
            assert st == 200 and c["finish_reason"] == "tool_calls" and calls and valid_calls(calls)
            assert c["message"]["content"] is None
            ncalls += len(calls)
        except Exception as e:
            bad.append((seed, temp, repr(e), txt))
check("auto with <tool_call> opened: %d calls, every call's arguments validate" % ncalls, not bad, bad)

# several calls in one answer: "\n" (the separator) biased too
NL = "198"
st, txt = post(req(seed=5, logit_bias={OPEN: 100, NL: 30}, max_tokens=120))
try:
    calls = json.loads(txt)["choices"][0]["message"]["tool_calls"]
    ok = len(calls) >= 2 and valid_calls(calls) and len({c["id"] for c in calls}) == len(calls)
except Exception as e:
    ok, txt = False, repr(e) + txt
check("parallel calls: two or more, each valid, distinct ids", ok, txt)
st, txt = post(req(seed=5, logit_bias={OPEN: 100, NL: 30}, max_tokens=120, parallel_tool_calls=False))
try:
    calls = json.loads(txt)["choices"][0]["message"]["tool_calls"]
    ok = len(calls) == 1 and valid_calls(calls)
except Exception as e:
    ok, txt = False, repr(e) + txt
check("parallel_tool_calls false: exactly one call", ok, txt)

# tool_choice none: the tag is banned, even with the bias
st, txt = post(req(seed=1, max_tokens=10, tool_choice="none", logit_bias={OPEN: 100}, logprobs=True))
try:
    c = json.loads(txt)["choices"][0]
    ok = st == 200 and "tool_calls" not in c["message"] and isinstance(c["message"]["content"], str) \
        and all(e["token"] != "<tool_call>" for e in c["logprobs"]["content"])
except Exception as e:
    ok, txt = False, repr(e) + txt
check("tool_choice none: no call even with <tool_call> biased", ok, txt)

# streamed: delta.tool_calls in OpenAI's shape, arguments in fragments as
# written, the same calls as unstreamed (two calls: "\n" biased too).  The
# members in schema order, name first as Qwen3 writes it; in free order (the
# random model may write the arguments first) they wait for the name.
for lay in ({"property_order": "schema"}, {"property_order": "any"}):
    b = req(seed=2, logit_bias={OPEN: 100, NL: 30}, max_tokens=90, tools=TOOLS[:2],
            strux={"layout": lay})
    st, txt = post(dict(b, stream=True))
    st2, txt2 = post(b)
    try:
        ev = events(txt)
        tcs, nchunks = accumulate(ev)
        content = "".join(e["choices"][0]["delta"].get("content") or "" for e in ev if e["choices"])
        fin = [e["choices"][0]["finish_reason"] for e in ev if e["choices"] and e["choices"][0]["finish_reason"]]
        ok = (len(tcs) >= (2 if lay["property_order"] == "schema" else 1) and valid_calls(tcs)
              and nchunks >= 2 * len(tcs)
              and (nchunks > 3 * len(tcs) or lay["property_order"] == "any")
              and fin == ["tool_calls"] and content == ""
              and same_calls(tcs, json.loads(txt2)["choices"][0]["message"]["tool_calls"]))
    except Exception as e:
        ok, txt = False, repr(e) + txt
    check("streamed calls (%s order): opened with id, type, name, then arguments in fragments; "
          "equal to unstreamed" % lay["property_order"], ok, txt)

# a forced call, streamed: its arguments in fragments too
b = req(seed=3, tool_choice={"type": "function", "function": {"name": "get_weather"}},
        strux={"layout": {"property_order": "schema"}})
st, txt = post(dict(b, stream=True))
st2, txt2 = post(b)
try:
    tcs, nchunks = accumulate(events(txt))
    ok = len(tcs) == 1 and valid_calls(tcs) and nchunks > 3 and \
        same_calls(tcs, json.loads(txt2)["choices"][0]["message"]["tool_calls"])
except Exception as e:
    ok, txt = False, repr(e) + txt
check("a named tool_choice, streamed: arguments in fragments, they validate", ok, txt)

# thinking, then a constrained answer
S = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}, "b": {"enum": ["x", "y"]}},
     "required": ["a", "b"], "additionalProperties": False}
RF = {"type": "json_schema", "json_schema": {"name": "s", "schema": S, "strict": True}}
bad = []
for seed in range(2):
    for temp in (1, 0):
        for think in ({"chat_template_kwargs": {"enable_thinking": True}}, {"strux": {"thinking": {"budget": 6}}}):
            b = {"messages": MSGS, "response_format": RF, "max_tokens": 24, "seed": seed,
                 "temperature": temp, "logprobs": True}
            b.update(think)
            st, txt = post(b)
            try:
                c = json.loads(txt)["choices"][0]
                m = c["message"]
                jsonschema.validate(json.loads(m["content"]), S)
                assert isinstance(m["reasoning_content"], str) and c["finish_reason"] == "stop"
                toks = [e["token"] for e in c["logprobs"]["content"]]
                assert "</think>" in toks
                if "strux" in think:
                    assert toks.index("</think>") <= 6, toks
            except Exception as e:
                bad.append((seed, temp, think, repr(e), txt))
check("thinking then a schema answer: every answer validates, budget bounds the reasoning", not bad, bad)

b = {"messages": MSGS, "response_format": RF, "max_tokens": 30, "seed": 7, "strux": {"thinking": {"budget": 5}}}
st, txt = post(dict(b, stream=True))
st2, txt2 = post(b)
try:
    ev = events(txt)
    rs = "".join(e["choices"][0]["delta"].get("reasoning_content") or "" for e in ev if e["choices"])
    ct = "".join(e["choices"][0]["delta"].get("content") or "" for e in ev if e["choices"])
    m = json.loads(txt2)["choices"][0]["message"]
    jsonschema.validate(json.loads(ct), S)
    ok = rs == m["reasoning_content"] and ct == m["content"] and rs != ""
except Exception as e:
    ok, txt = False, repr(e) + txt
check("thinking streamed: delta.reasoning_content then content, equal to unstreamed", ok, txt)

st, txt = post(req(seed=1, tool_choice="required", strux={"thinking": {"budget": 4}}))
try:
    m = json.loads(txt)["choices"][0]["message"]
    ok = valid_calls(m["tool_calls"]) and m["content"] is None and isinstance(m["reasoning_content"], str)
except Exception as e:
    ok, txt = False, repr(e) + txt
check("thinking then a forced tool call that validates", ok, txt)

# thinking with tool_choice auto: reasoning (the budget bounds it), then a
# call opened by the bias, or free text without it
bad = []
for seed in range(2):
    for temp in (1, 0):
        for think in ({"chat_template_kwargs": {"enable_thinking": True}}, {"strux": {"thinking": {"budget": 6}}}):
            st, txt = post(req(seed=seed, temperature=temp, logit_bias={OPEN: 100}, max_tokens=50,
                               logprobs=True, **think))
            try:
                c = json.loads(txt)["choices"][0]
                m = c["message"]
                assert st == 200 and c["finish_reason"] == "tool_calls" and valid_calls(m["tool_calls"])
                assert isinstance(m["reasoning_content"], str) and m["content"] is None
                toks = [e["token"] for e in c["logprobs"]["content"]]
                assert toks.count("</think>") == 1 and toks.index("</think>") < toks.index("<tool_call>")
                if "strux" in think:
                    assert toks.index("</think>") <= 6, toks
            except Exception as e:
                bad.append((seed, temp, think, repr(e), txt))
check("thinking with tool_choice auto: reasoning, then calls that validate; budget bounds it", not bad, bad)
st, txt = post(req(seed=4, max_tokens=20, strux={"thinking": {"budget": 5}}))
try:
    c = json.loads(txt)["choices"][0]
    m = c["message"]
    ok = st == 200 and "tool_calls" not in m and isinstance(m["content"], str) and \
        isinstance(m["reasoning_content"], str) and "</think>" not in m["content"] and \
        "<tool_call>" not in m["content"] and c["finish_reason"] in ("stop", "length")
except Exception as e:
    ok, txt = False, repr(e) + txt
check("thinking with tool_choice auto, no call: reasoning_content and free content", ok, txt)
b = req(seed=6, logit_bias={OPEN: 100}, max_tokens=50, strux={"thinking": {"budget": 4}})
st, txt = post(dict(b, stream=True))
st2, txt2 = post(b)
try:
    ev = events(txt)
    rs = "".join(e["choices"][0]["delta"].get("reasoning_content") or "" for e in ev if e["choices"])
    ct = "".join(e["choices"][0]["delta"].get("content") or "" for e in ev if e["choices"])
    tcs, nchunks = accumulate(ev)
    m = json.loads(txt2)["choices"][0]["message"]
    ok = rs == m["reasoning_content"] and rs != "" and ct == "" and valid_calls(tcs) and \
        same_calls(tcs, m["tool_calls"])
except Exception as e:
    ok, txt = False, repr(e) + txt
check("thinking with tool_choice auto, streamed: reasoning_content, then the calls in fragments", ok, txt)

# what does not combine, or is misspelt, is refused naming it
for what, body, ptr in [
        ("thinking with choices", {"messages": MSGS, "response_format": {"type": "choice", "choice": ["a", "b"]},
                                   "chat_template_kwargs": {"enable_thinking": True}}, "/chat_template_kwargs/enable_thinking"),
        ("a thinking budget on free text", {"messages": MSGS, "strux": {"thinking": {"budget": 3}}}, "/strux/thinking/budget"),
        ("an unknown chat_template_kwargs member", {"messages": MSGS, "chat_template_kwargs": {"enable_thinkin": True}}, "/chat_template_kwargs"),
        ("a response_format beside tool_choice auto", req(response_format=RF), None)]:
    st, txt = post(body)
    try:
        err = json.loads(txt)["error"]
        ok = st == 400 and (ptr is None or (err["param"] or "").startswith(ptr))
    except Exception as e:
        ok, txt = False, repr(e) + txt
    check("400: " + what, ok, txt)
print("1..%d" % n)
PY
"$PY" "$T/t.py" "$HPORT" "${STRUX_SHARED:-/work/shared}/qwen3-tokenizer/tokenizer.json"
