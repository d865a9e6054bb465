#!/usr/bin/env bash
# struxd's /v1/chat/completions as OpenAI and vLLM clients use it, on the
# tiny random-weight model, with the official `openai` Python client (its
# documented usage, only base_url changed):
#   - nothing that changes the answer is ignored: typos, unknown members of
#     the `strux` object, logit_bias, tools, functions, best_of,
#     reasoning_effort, guided_grammar are 400 naming the member;
#   - vLLM's guided_json / guided_regex / guided_choice and
#     structured_outputs (sent through extra_body, as vLLM documents), and
#     response_format regex / choice: constrained, every answer re-checked
#     here (jsonschema, re.fullmatch, label membership, label scores);
#   - tools with tool_choice "required" / a named function: the answer is
#     OpenAI's tool_calls whose arguments validate against the tool's
#     parameters (jsonschema; the SDK's pydantic_function_tool parsing);
#     streamed, the arguments come in fragments that the SDK's streaming
#     helper (chat.completions.stream) accumulates, parses and validates;
#   - logit_bias (-100 on the greedy token changes the answer) and the
#     penalties, on both routes;
#   - chat.completions.parse with a Pydantic model; stop with a constraint;
#     the request's model echoed; usage.prompt_tokens_details.cached_tokens;
#   - /v1/completions with a raw prompt (regex and schema constrained);
#   - unknown routes and methods answer JSON (404 / 405), not HTML;
#   - HTTP: --api-key-file (Bearer, 401 otherwise, /health open), bodies
#     that are not JSON refused (415), chunked bodies read, Expect:
#     100-continue answered at once, a body over the limit a JSON 413;
#     pipelined requests answered in order or closed explicitly, never silence.
# Needs $STRUX_BUILD and the repo venv (.venv) with jsonschema, openai, pydantic.
set -u
B=${STRUX_BUILD:?}
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
T=$(mktemp -d /tmp/strux-oai.XXXXXX)
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
"$PY" -c "import jsonschema, openai, pydantic" 2>/dev/null ||
    bail "$PY lacks jsonschema/openai/pydantic"
"$B/strux" model random --shape tiny --seed 1 --out "$T/model" >"$T/model.log" 2>&1 ||
    bail "strux model random --shape tiny"
KEY=k-$RANDOM$RANDOM
printf '%s\n' "$KEY" >"$T/key"
"$B/struxd" --model "$T/model" --threads 2 --http 127.0.0.1:0 --default-max-tokens 48 \
    --max-tokens 512 --timeout 300 --max-request-bytes 65536 --api-key-file "$T/key" \
    2>"$T/d.log" &
SPID=$!
for _ in $(seq 1 600); do
    grep -q '^struxd: ready' "$T/d.log" && break
    kill -0 "$SPID" 2>/dev/null || bail "struxd exited at start-up"
    sleep 0.1
done
HPORT=$(sed -n 's|^struxd: listening on.* http://[^:]*:\([0-9]*\).*|\1|p' "$T/d.log")
[ -n "$HPORT" ] || bail "struxd reported no HTTP port"
URL="http://127.0.0.1:$HPORT"

# The client checks run in one Python process (its imports cost seconds);
# it prints their TAP lines, numbered after the ones before.
cat >"$T/clients.py" <<'PY'
import sys, traceback
URL, KEY, START = sys.argv[1], sys.argv[2], int(sys.argv[3])
V1 = URL + "/v1"

def t1():
    import sys
    from openai import OpenAI, BadRequestError
    c = OpenAI(base_url=V1, api_key=KEY, max_retries=0)
    msgs = [{"role": "user", "content": "hi"}]
    cases = [
        (dict(extra_body={"temprature": 0}), "/temprature"),
        (dict(extra_body={"strux": {"num_beam": 3}}), "/strux/num_beam"),
        (dict(logit_bias={"999999999": -100}), "/logit_bias/999999999"),
        (dict(tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}],
              tool_choice="sometimes"), "/tool_choice"),
        (dict(functions=[{"name": "f", "parameters": {}}]), "/functions"),
        (dict(extra_body={"best_of": 3}), "/best_of"),
        (dict(reasoning_effort="low"), "/reasoning_effort"),
        (dict(presence_penalty=2.5), "/presence_penalty"),
        (dict(extra_body={"guided_grammar": 'root ::= "a"'}), "/guided_grammar"),
        (dict(extra_body={"structured_outputs": {"choise": ["a"]}}), "/structured_outputs/choise"),
        (dict(stop=["\n"]), "/stop"),
        (dict(response_format={"type": "json_schema",
                               "json_schema": {"name": "x", "schema": {}, "strcit": True}}),
         "/response_format/json_schema/strcit"),
    ]
    for kw, ptr in cases:
        try:
            c.chat.completions.create(model="m", messages=msgs, max_tokens=4, **kw)
        except BadRequestError as e:
            err = e.body if isinstance(e.body, dict) and "param" in e.body else e.body.get("error", {})
            assert e.status_code == 400 and err["param"] == ptr and err["code"] == "bad_request", (kw, e.body)
            continue
        raise AssertionError(f"{kw} was accepted")
    # the documented harmless members pass
    r = c.chat.completions.create(model="m", messages=msgs, max_tokens=4, user="u", store=False,
                                  metadata={"k": "v"}, extra_body={"guided_decoding_backend": "xgrammar"})
    assert r.choices[0].message.content is not None

def t2():
    import json, math, re, sys
    import jsonschema
    from openai import OpenAI
    c = OpenAI(base_url=V1, api_key=KEY, max_retries=0)
    msgs = [{"role": "user", "content": "Ada Lovelace, 36, London"}]
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
              "age": {"type": "integer", "minimum": 0, "maximum": 150}},
              "required": ["name", "age"], "additionalProperties": False}
    for i, body in enumerate([{"guided_json": schema}, {"guided_json": json.dumps(schema)},
                              {"structured_outputs": {"json": schema}}]):
        r = c.chat.completions.create(model="qwen-test", messages=msgs, max_tokens=48, seed=i,
                                      temperature=0.7, extra_body=body)
        assert r.model == "qwen-test", r.model
        assert r.choices[0].finish_reason == "stop", r.choices[0]
        jsonschema.validate(json.loads(r.choices[0].message.content), schema)
        assert r.usage.prompt_tokens_details.cached_tokens >= 0
    labels = ["positive", "negative", "neutral"]
    for body in [{"guided_choice": labels}, {"structured_outputs": {"choice": labels}}]:
        r = c.chat.completions.create(model="m", messages=msgs, max_tokens=8, extra_body=body)
        assert r.choices[0].message.content in labels, r.choices[0].message.content
        scores = r.model_extra["strux"]["scores"]
        assert set(scores) == set(labels) and math.isclose(sum(scores.values()), 1, abs_tol=1e-6), scores
    r = c.chat.completions.create(model="m", messages=msgs, max_tokens=8,
                                  response_format={"type": "choice", "choice": labels})
    assert r.choices[0].message.content in labels
    for i, body in enumerate([{"guided_regex": r"[A-Z][a-z]{1,6} [0-9]{2}"},
                              {"structured_outputs": {"regex": r"[A-Z][a-z]{1,6} [0-9]{2}"}},
                              {"response_format": {"type": "regex", "regex": r"[A-Z][a-z]{1,6} [0-9]{2}"}}]):
        r = c.chat.completions.create(model="m", messages=msgs, max_tokens=16, seed=i, temperature=1,
                                      extra_body=body)
        assert re.fullmatch(r"[A-Z][a-z]{1,6} [0-9]{2}", r.choices[0].message.content), r.choices[0]
    # stop never cuts a document
    r = c.chat.completions.create(model="m", messages=msgs, max_tokens=48, stop=["\n", "}"],
                                  extra_body={"guided_json": schema})
    jsonschema.validate(json.loads(r.choices[0].message.content), schema)

def t3():
    import json, sys, urllib.request
    from openai import OpenAI
    url, key = URL, KEY
    def native(body):
        req = urllib.request.Request(url + "/v1/strux", json.dumps(body).encode(),
                                     {"Content-Type": "application/json", "Authorization": "Bearer " + key})
        return json.loads(urllib.request.urlopen(req).read())
    msgs = [{"role": "user", "content": "Say something."}]
    base = {"messages": msgs, "max_tokens": 4, "temperature": 0, "logprobs": True}
    a = native(base)
    assert a["ok"], a
    t = a["logprobs"][0]["id"]
    b = native(dict(base, logit_bias={str(t): -100}))
    assert b["ok"] and b["logprobs"][0]["id"] != t, (a, b)
    c = OpenAI(base_url=url + "/v1", api_key=key, max_retries=0)
    plain = c.chat.completions.create(model="m", messages=msgs, max_tokens=4, temperature=0)
    assert plain.choices[0].message.content == a["text"], (plain, a)
    biased = c.chat.completions.create(model="m", messages=msgs, max_tokens=4, temperature=0,
                                       logit_bias={str(t): -100})
    assert biased.choices[0].message.content == b["text"] != a["text"], (biased, b, a)
    # a penalty on the repeated token changes a greedy run that repeats
    pen = native(dict(base, max_tokens=24, frequency_penalty=2.0, presence_penalty=2.0))
    rep = native(dict(base, max_tokens=24))
    ids = [x["id"] for x in rep["logprobs"]]
    if len(set(ids)) < len(ids):
        assert [x["id"] for x in pen["logprobs"]] != ids, (pen, rep)

def t4():
    import sys
    from openai import OpenAI
    from pydantic import BaseModel, Field
    class Person(BaseModel):
        name: str = Field(max_length=10)
        age: int = Field(ge=0, le=150)
    c = OpenAI(base_url=V1, api_key=KEY, max_retries=0)
    r = c.chat.completions.parse(model="m", messages=[{"role": "user", "content": "Ada, 36"}],
                                 response_format=Person, max_tokens=48, temperature=0)
    p = r.choices[0].message.parsed
    assert isinstance(p, Person) and 0 <= p.age <= 150 and len(p.name) <= 10, r

def t5():
    import json, sys
    import jsonschema
    import openai
    from openai import OpenAI
    from pydantic import BaseModel, Field
    c = OpenAI(base_url=V1, api_key=KEY, max_retries=0)
    weather = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
               "days": {"type": "integer", "minimum": 1, "maximum": 7}},
               "required": ["city", "days"], "additionalProperties": False}
    class Lookup(BaseModel):
        """Look a word up."""
        word: str = Field(max_length=10)
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Forecast",
                                                "parameters": weather, "strict": True}},
             openai.pydantic_function_tool(Lookup)]
    params = {"get_weather": weather, "Lookup": tools[1]["function"]["parameters"]}
    msgs = [{"role": "system", "content": "Use the tools."},
            {"role": "user", "content": "Weather in Paris for 3 days?"}]
    seen = set()
    for i in range(2):
        r = c.chat.completions.create(model="m", messages=msgs, tools=tools, tool_choice="required",
                                      max_tokens=64, seed=i, temperature=1)
        ch = r.choices[0]
        assert ch.finish_reason == "tool_calls" and ch.message.content is None, ch
        (call,) = ch.message.tool_calls
        assert call.type == "function" and call.id, call
        jsonschema.validate(json.loads(call.function.arguments), params[call.function.name])
        seen.add(call.function.name)
    for name in params:
        r = c.chat.completions.create(model="m", messages=msgs, tools=tools, max_tokens=64,
                                      tool_choice={"type": "function", "function": {"name": name}})
        (call,) = r.choices[0].message.tool_calls
        assert call.function.name == name, call
        jsonschema.validate(json.loads(call.function.arguments), params[name])
    # the round trip: the answer's message and the tool's result go back in
    hist = msgs + [ch.message.model_dump(), {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]
    r = c.chat.completions.create(model="m", messages=hist, tools=tools, tool_choice="none",
                                  max_tokens=60, response_format={"type": "json_schema", "json_schema": {
                                      "name": "w", "schema": weather}})
    jsonschema.validate(json.loads(r.choices[0].message.content), weather)
    # the SDK's own parsing of strict pydantic tools
    r = c.chat.completions.parse(model="m", messages=msgs, tools=[openai.pydantic_function_tool(Lookup)],
                                 tool_choice={"type": "function", "function": {"name": "Lookup"}},
                                 max_tokens=48)
    parsed = r.choices[0].message.tool_calls[0].function.parsed_arguments
    assert isinstance(parsed, Lookup) and len(parsed.word) <= 10, r

def t6():
    import json, re, sys
    import jsonschema
    from openai import OpenAI, BadRequestError
    c = OpenAI(base_url=V1, api_key=KEY, max_retries=0)
    r = c.completions.create(model="m", prompt="<|im_start|>user\nName a day.<|im_end|>\n<|im_start|>assistant\n",
                             max_tokens=12, extra_body={"guided_regex": "(Mon|Tues|Fri)day"})
    assert r.object == "text_completion" and r.model == "m", r
    assert re.fullmatch("(Mon|Tues|Fri)day", r.choices[0].text), r
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
              "additionalProperties": False}
    r = c.completions.create(model="m", prompt="A number as JSON: ", max_tokens=30, seed=2,
                             extra_body={"guided_json": schema})
    jsonschema.validate(json.loads(r.choices[0].text), schema)
    r = c.completions.create(model="m", prompt="Once upon a time", max_tokens=5)
    assert r.choices[0].finish_reason in ("stop", "length") and r.usage.completion_tokens <= 5, r
    try:
        c.completions.create(model="m", prompt="x", max_tokens=5, echo=True)
        raise AssertionError("echo accepted")
    except BadRequestError as e:
        assert e.body["param"] == "/echo", e.body

def t7():
    import json, sys, urllib.error, urllib.request
    for path, method, code in [("/v1/nope", "GET", 404), ("/v1/completions/x", "POST", 404),
                               ("/v1/chat/completions", "GET", 405)]:
        req = urllib.request.Request(URL + path, method=method,
                                     data=b"{}" if method == "POST" else None)
        try:
            urllib.request.urlopen(req)
            raise AssertionError(path)
        except urllib.error.HTTPError as e:
            assert e.code == code, (path, e.code)
            assert e.headers["Content-Type"] == "application/json", e.headers
            assert json.loads(e.read())["error"]["message"], path
    # OpenAI's batch API through the SDK: a 404 naming what does the job
    import io
    import openai
    from openai import OpenAI
    c = OpenAI(base_url=V1, api_key=KEY, max_retries=0)
    for call in (lambda: c.files.create(file=("in.jsonl", io.BytesIO(b"{}\n")), purpose="batch"),
                 lambda: c.batches.create(input_file_id="file-1", endpoint="/v1/chat/completions",
                                          completion_window="24h")):
        try:
            call()
            raise AssertionError("served")
        except openai.NotFoundError as e:
            assert "strux call" in str(e) and "--openai-batch" in str(e), e

def t8():
    # the SDK's streaming helper with tools: calls open with id and name, the
    # arguments come in fragments as they are written (the members in schema
    # order, name first as Qwen3 writes it), the helper's accumulation parses
    # and validates, strict pydantic tools come back parsed
    import json
    import jsonschema
    import openai
    from openai import OpenAI
    from pydantic import BaseModel, Field
    c = OpenAI(base_url=V1, api_key=KEY, max_retries=0)
    class Lookup(BaseModel):
        """Look a word up."""
        word: str = Field(max_length=10)
        count: int = Field(ge=1, le=9)
    weather = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
               "days": {"type": "integer", "minimum": 1, "maximum": 7}},
               "required": ["city", "days"], "additionalProperties": False}
    tools = [openai.pydantic_function_tool(Lookup),
             {"type": "function", "function": {"name": "get_weather", "parameters": weather,
                                               "strict": True}}]
    params = {"Lookup": tools[0]["function"]["parameters"], "get_weather": weather}
    msgs = [{"role": "user", "content": "Look up 'cat'."}]
    lay = {"strux": {"layout": {"property_order": "schema"}}}
    for choice in ({"type": "function", "function": {"name": "Lookup"}}, "required"):
        with c.chat.completions.stream(model="m", messages=msgs, tools=tools, tool_choice=choice,
                                       max_tokens=64, seed=1, extra_body=lay) as st:
            deltas, done = [], []
            for ev in st:
                if ev.type == "tool_calls.function.arguments.delta":
                    deltas.append(ev.arguments_delta)
                elif ev.type == "tool_calls.function.arguments.done":
                    done.append(ev)
            final = st.get_final_completion()
        (call,) = final.choices[0].message.tool_calls
        assert final.choices[0].finish_reason == "tool_calls", final
        assert len(deltas) > 3 and "".join(deltas) == call.function.arguments, deltas
        args = json.loads(call.function.arguments)
        jsonschema.validate(args, params[call.function.name])
        assert len(done) == 1 and done[0].name == call.function.name, done
        if call.function.name == "Lookup":
            assert isinstance(call.function.parsed_arguments, Lookup), call
            assert isinstance(done[0].parsed_arguments, Lookup), done
    # the raw chunks, as OpenAI sends them: the first with index, id, type and
    # name (arguments ""), the later ones index and an arguments fragment; with
    # tool_choice auto (a call opened by logit_bias) and free member order too
    for extra in (dict(lay, logit_bias={"151657": 100}), {"logit_bias": {"151657": 100}}):
        chunks = list(c.chat.completions.create(model="m", messages=msgs, tools=tools, max_tokens=64,
                                                seed=2, stream=True, extra_body=extra))
        calls = {}
        for ch in chunks:
            for t in (ch.choices[0].delta.tool_calls or []) if ch.choices else []:
                if t.index not in calls:
                    assert t.id and t.type == "function" and t.function.name and t.function.arguments == "", t
                    calls[t.index] = [t.function.name, ""]
                else:
                    assert t.id is None and t.type is None and t.function.name is None, t
                    calls[t.index][1] += t.function.arguments
        assert calls and chunks[-1].choices[0].finish_reason == "tool_calls", chunks[-1]
        for name, a in calls.values():
            jsonschema.validate(json.loads(a), params[name])
    # thinking (vLLM's chat_template_kwargs) with tool_choice auto: the reasoning, then a call
    r = c.chat.completions.create(model="m", messages=msgs, tools=tools, max_tokens=64, seed=3,
                                  logit_bias={"151657": 100},
                                  extra_body={"chat_template_kwargs": {"enable_thinking": True}})
    m = r.choices[0].message
    assert isinstance(m.model_extra.get("reasoning_content"), str) and m.tool_calls, r
    for call in m.tool_calls:
        jsonschema.validate(json.loads(call.function.arguments), params[call.function.name])

TESTS = [
    ('nothing ignored: unknown and unused members are 400 naming them', t1),
    ('vLLM fields and response_format regex/choice: constrained and re-checked', t2),
    ('logit_bias -100 on the greedy token changes the answer (both routes)', t3),
    ('chat.completions.parse with a Pydantic model', t4),
    ("tool calls: required and named, arguments valid, OpenAI's shape", t5),
    ('/v1/completions: a raw prompt, constrained, text_completion', t6),
    ('unknown routes and methods: JSON 404 / 405; /v1/files, /v1/batches name strux call --openai-batch', t7),
    ('streamed tool calls: the SDK helper accumulates arguments sent in fragments; thinking with tool_choice auto', t8),
]
for i, (name, fn) in enumerate(TESTS):
    try:
        fn()
        print(f"ok {START + i + 1} - {name}", flush=True)
    except Exception:
        print(f"not ok {START + i + 1} - {name}")
        print("".join("# " + l + "\n" for l in traceback.format_exc().splitlines()), end="", flush=True)
PY
"$PY" "$T/clients.py" "$URL" "$KEY" "$n" >"$T/clients.tap" 2>&1
cat "$T/clients.tap"
got=$(grep -c '^\(not \)\?ok ' "$T/clients.tap")
n=$((n + 8))
failed=$((failed + $(grep -c '^not ok ' "$T/clients.tap")))
if [ "$got" -ne 8 ]; then
    echo "not ok $((n + 1)) - the client checks stopped early"
    n=$((n + 1)) failed=$((failed + 1))
fi

# Instructor and LangChain: tests/cli/test_client_libs.sh.

# ---- HTTP hygiene ------------------------------------------------------------------
BODY='{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}'
J='Content-Type: application/json'
A="Authorization: Bearer $KEY"
check "no key: 401 JSON on the API routes, /health open" sh -c "
    [ \"\$(curl -sS -o '$T/o1' -w '%{http_code}' -H '$J' '$URL/v1/chat/completions' -d '$BODY')\" = 401 ] &&
    grep -q '\"code\":\"unauthorized\"' '$T/o1' &&
    [ \"\$(curl -sS -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong' '$URL/v1/models')\" = 401 ] &&
    [ \"\$(curl -sS -o /dev/null -w '%{http_code}' '$URL/health')\" = 200 ] &&
    [ \"\$(curl -sS -o /dev/null -w '%{http_code}' -H '$A' '$URL/v1/models')\" = 200 ]"
check "with a key, a proxy's forwarded Host is fine" sh -c "
    [ \"\$(curl -sS -o /dev/null -w '%{http_code}' -H 'Host: api.example' -H '$A' '$URL/v1/models')\" = 200 ]"
check "a body that is not JSON (curl -d's form type): 415 JSON" sh -c "
    [ \"\$(curl -sS -o '$T/o2' -w '%{http_code}' -H '$A' '$URL/v1/chat/completions' -d '$BODY')\" = 415 ] &&
    grep -q unsupported_media_type '$T/o2'"
check "a chunked body is read" sh -c "
    printf '%s' '$BODY' | curl -sS -o '$T/o3' -w '%{http_code}' -H '$A' -H '$J' \
        -H 'Transfer-Encoding: chunked' --data-binary @- '$URL/v1/chat/completions' | grep -qx 200 &&
    grep -q chat.completion '$T/o3'"
check "Expect: 100-continue is answered at once" sh -c "
    t=\$(curl -sS -o '$T/o4' -w '%{http_code} %{time_pretransfer} %{time_starttransfer}' -H '$A' \
        -H '$J' -H 'Expect: 100-continue' -d '{\"document\":\"x\",\"max_tokens\":2}' '$URL/v1/strux') &&
    echo \"\$t\" | awk '{ exit !(\$1 == 200) }' && grep -q '\"ok\":true' '$T/o4' &&
    curl -sS -o /dev/null -w '%{time_total}' -H '$A' -H '$J' -H 'Expect: 100-continue' \
        -d '{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":1}' \
        '$URL/v1/chat/completions' | awk '{ exit !(\$1 < 0.9) }'"
head -c 200000 /dev/zero | tr '\0' a | sed 's/^/{"messages":"/; s/$/"}/' >"$T/big.json"
check "a body over --max-request-bytes: JSON 413 (plain and chunked)" sh -c "
    [ \"\$(curl -sS -o '$T/o5' -w '%{http_code}' -H '$A' -H '$J' --data-binary @'$T/big.json' '$URL/v1/chat/completions')\" = 413 ] &&
    grep -q '\"code\":\"too_large\"' '$T/o5' &&
    [ \"\$(curl -sS -o '$T/o6' -w '%{http_code}' -H '$A' -H '$J' -H 'Transfer-Encoding: chunked' --data-binary @'$T/big.json' '$URL/v1/strux')\" = 413 ] &&
    grep -q '\"ok\":false' '$T/o6'"

# HTTP pipelining: requests sent back to back on one keep-alive connection
# get every answer, in order, or the answers up to one that says
# "Connection: close" and then the close -- never silence (a raw socket;
# each case is a list of requests and what each answer holds)
cat >"$T/pipe.py" <<'PY'
import json, socket, sys
port, key = int(sys.argv[1]), sys.argv[2]
AUTH = "Authorization: Bearer %s\r\n" % key
def get(path, auth=AUTH):
    return ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n" % (path, auth)).encode()
def post(path, body, auth=AUTH, chunked=False):
    b = body if isinstance(body, bytes) else json.dumps(body).encode()
    h = "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n%s" % (path, auth)
    if chunked:
        return (h + "Transfer-Encoding: chunked\r\n\r\n%x\r\n" % len(b)).encode() + b + b"\r\n0\r\n\r\n"
    return (h + "Content-Length: %d\r\n\r\n" % len(b)).encode() + b
CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
CASES = [
    ("GET, GET", [(get("/health"), b'"status"'), (get("/v1/models"), b'"data"')]),
    ("GET, POST, GET", [(get("/v1/models"), b'"data"'), (post("/v1/chat/completions", CHAT), b"chat.completion"),
                        (get("/health"), b'"status"')]),
    ("POST, POST", [(post("/v1/chat/completions", CHAT), b"chat.completion"),
                    (post("/v1/chat/completions", dict(CHAT, seed=2)), b"chat.completion")]),
    ("a streamed POST, GET", [(post("/v1/chat/completions", dict(CHAT, stream=True)), b"[DONE]"),
                              (get("/health"), b'"status"')]),
    ("a chunked POST, GET", [(post("/v1/strux", {"messages": CHAT["messages"], "max_tokens": 3}, chunked=True), b'"ok":true'),
                             (get("/health"), b'"status"')]),
    ("a 400, GET", [(post("/v1/chat/completions", {"messages": 1}), b'"error"'), (get("/health"), b'"status"')]),
    ("a 401, GET", [(post("/v1/chat/completions", CHAT, auth=""), b"unauthorized"), (get("/health"), b'"status"')]),
    ("a 404, GET, GET", [(get("/nope"), b"not_found"), (get("/health"), b'"status"'), (get("/v1/models"), b'"data"')]),
]
def read_answer(f):
    line = f.readline()
    if not line:
        return None
    status, headers = line, {}
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        k, _, v = h.decode().partition(":")
        headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        body = f.read(int(headers["content-length"]))
    elif headers.get("transfer-encoding") == "chunked":
        body = b""
        while True:
            size = int(f.readline().split(b";")[0], 16)
            body += f.read(size)
            f.readline()
            if size == 0:
                break
    else:
        body = f.read()  # to the close
    return status, headers, body
bad = 0
for name, reqs in CASES:
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(b"".join(r for r, _ in reqs))
    f = s.makefile("rb")
    got, why = 0, ""
    try:
        for _, want in reqs:
            a = read_answer(f)
            if a is None:
                why = "the connection closed after %d answers without Connection: close" % got
                break
            if want not in a[2]:
                why = "answer %d lacks %r: %r" % (got, want, a[:2])
                break
            got += 1
            if a[1].get("connection", "").lower() == "close":
                if f.read(1) != b"":
                    why = "data after Connection: close"
                break
    except socket.timeout:
        why = "silence after %d answers" % got
    s.close()
    ok = not why and got >= 1
    bad += not ok
    print("# %s: %d of %d answered%s" % (name, got, len(reqs), (" -- " + why) if why else ""))
sys.exit(1 if bad else 0)
PY
check "HTTP pipelining: every answer in order, or Connection: close then the close; never silence" \
    "$PY" "$T/pipe.py" "$HPORT" "$KEY"

check "struxd still up" kill -0 "$SPID"

# without a key, a loopback server answers loopback Host names only
{ kill "$SPID" && wait "$SPID"; } 2>/dev/null
: >"$T/d.log"
"$B/struxd" --model "$T/model" --threads 2 --http 127.0.0.1:0 2>"$T/d.log" &
SPID=$!
for _ in $(seq 1 600); do
    grep -q '^struxd: ready' "$T/d.log" && break
    sleep 0.1
done
URL="http://127.0.0.1:$(sed -n 's|^struxd: listening on.* http://[^:]*:\([0-9]*\).*|\1|p' "$T/d.log")"
check "a keyless loopback server refuses other Host names (DNS rebinding): 403 JSON" sh -c "
    [ \"\$(curl -sS -o '$T/o7' -w '%{http_code}' -H 'Host: evil.example:80' -H '$J' '$URL/v1/chat/completions' -d '$BODY')\" = 403 ] &&
    grep -q forbidden_host '$T/o7' &&
    [ \"\$(curl -sS -o /dev/null -w '%{http_code}' -H 'Host: evil.example' '$URL/v1/models')\" = 403 ] &&
    [ \"\$(curl -sS -o /dev/null -w '%{http_code}' -H 'Host: localhost:1' '$URL/v1/models')\" = 200 ] &&
    [ \"\$(curl -sS -o /dev/null -w '%{http_code}' -H 'Host: evil.example' '$URL/health')\" = 200 ]"
echo "1..$n"
[ "$failed" -eq 0 ]
