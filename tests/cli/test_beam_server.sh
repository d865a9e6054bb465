#!/usr/bin/env bash
# Beam search through struxd, on the tiny random-weight model (seed 1):
# the native protocol (nng and POST /v1/strux) with num_beams,
# length_penalty, num_return_sequences and early_stopping answers `choices`
# best first, each with its score and a schema-valid output (Python
# jsonschema), the same sequences and scores as `strux generate --beams` on
# the same model; the OpenAI route takes them in its `strux` extension;
# sampling, n, logprobs, choices and stray beam options are bad requests.
# Needs $STRUX_BUILD, $STRUX_SHARED and the repo venv (.venv) with
# jsonschema and pynng.
set -u
B=${STRUX_BUILD:?}
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
T=$(mktemp -d /tmp/strux-beam-srv.XXXXXX)
SPID=
cleanup() {
    [ -n "$SPID" ] && kill -9 "$SPID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
"$B/strux" model random --shape tiny --seed 1 --out "$T/model" >/dev/null 2>&1
"$B/struxd" --model "$T/model" --threads 2 --listen "ipc://$T/s.ipc" --http 127.0.0.1:0 \
    2>"$T/log" &
SPID=$!
for _ in $(seq 1 600); do
    grep -q '^struxd: ready' "$T/log" && break
    sleep 0.1
done
if ! grep -q '^struxd: ready' "$T/log"; then
    echo "not ok 1 - struxd started"; tail -5 "$T/log"; exit 1
fi
HPORT=$(sed -n 's|^struxd: listening on.* http://[^:]*:\([0-9]*\).*|\1|p' "$T/log")
cat >"$T/s.json" <<'J'
{"type":"object","properties":{"ok":{"type":"boolean"},"n":{"type":"integer","minimum":0,"maximum":99}},
 "required":["ok","n"],"additionalProperties":false}
J
# the CLI's answer for the same chat prompt (the default document prompt is
# not the CLI's, so the request gives its messages)
"$B/strux" generate --model "$T/model" --threads 2 --system "Reply in JSON." --prompt "Beams." \
    --schema "$T/s.json" --beams 3 --return 3 --max-tokens 40 --early-stopping true \
    >"$T/cli.out" 2>/dev/null
cat >"$T/t.py" <<'PY'
import json, re, sys, urllib.request, urllib.error
import jsonschema, pynng
addr, url, sfile, cli = sys.argv[1:5]
schema = json.load(open(sfile))
n = bad = 0
def ok(what, cond):
    global n, bad
    n += 1
    bad += not cond
    print(("ok" if cond else "not ok"), n, "-", what)
def call(body):
    with pynng.Req0(dial=addr, resend_time=-1, recv_timeout=300000) as s:
        s.send(json.dumps(body).encode())
        return json.loads(s.recv())
def post(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        return 200, json.loads(urllib.request.urlopen(req, timeout=300).read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
msgs = [{"role": "system", "content": "Reply in JSON."}, {"role": "user", "content": "Beams."}]
base = {"schema": schema, "messages": msgs, "max_tokens": 40, "num_beams": 3,
        "num_return_sequences": 3, "early_stopping": True}
r = call(dict(base, id="b"))
cs = r.get("choices", [])
ok("native: 3 sequences", r.get("ok") and len(cs) == 3)
valid = True
for c in cs:
    try:
        jsonschema.validate(c["output"], schema)
        valid &= json.loads(c["text"]) == c["output"]
    except Exception as e:
        print("#", e); valid = False
ok("native: every sequence validates (jsonschema)", valid and cs)
ok("native: best first, with scores", cs and all(isinstance(c.get("score"), float) for c in cs)
   and [c["score"] for c in cs] == sorted([c["score"] for c in cs], reverse=True))
ok("native: output is the best sequence's", cs and r["output"] == cs[0]["output"])
heads = re.findall(r"^--- beam \d+ \(score ([-0-9.]+),", open(cli, newline="").read(), re.M)
# each text is followed by one newline; texts may hold newlines themselves
texts = [t[:-1] for t in re.split(r"^--- beam .*\n", open(cli, newline="").read(), flags=re.M)[1:]]
ok("native: the CLI's sequences and scores",
   len(heads) == 3 and [c["text"] for c in cs] == texts and
   all(abs(float(h) - c["score"]) < 1e-5 * abs(c["score"]) + 1e-6 for h, c in zip(heads, cs)))
code, h = post("/v1/strux", dict(base, id="h"))
ok("POST /v1/strux: the same answer", code == 200 and [c["text"] for c in h["choices"]] ==
   [c["text"] for c in cs])
r1 = call(dict(base, num_return_sequences=1, length_penalty=2.0, early_stopping="never"))
ok("num_return_sequences 1: one choice with its score", r1.get("ok") and len(r1["choices"]) == 1
   and "score" in r1["choices"][0])
code, o = post("/v1/chat/completions", {"model": "m", "messages": msgs, "max_tokens": 40,
               "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}},
               "strux": {"num_beams": 3, "num_return_sequences": 3, "early_stopping": True}})
ok("openai: strux.num_beams gives the same 3 sequences and beam_scores",
   code == 200 and [c["message"]["content"] for c in o["choices"]] == [c["text"] for c in cs]
   and len(o["strux"]["beam_scores"]) == 3)
for what, extra, at in [("sampling", {"temperature": 0.7}, "/num_beams"),
                        ("n", {"n": 2}, "/num_beams"),
                        ("logprobs", {"logprobs": True}, "/num_beams"),
                        ("num_return_sequences > num_beams", {"num_return_sequences": 4},
                         "/num_return_sequences"),
                        ("bad early_stopping", {"early_stopping": "maybe"}, "/early_stopping"),
                        ("num_beams 0", {"num_beams": 0}, "/num_beams")]:
    e = call(dict(base, **extra))
    ok(f"refuses {what}", not e["ok"] and e["error"]["code"] == "bad_request"
       and e["error"].get("pointer") == at)
e = call({"schema": schema, "document": "x", "length_penalty": 2.0})
ok("refuses length_penalty without num_beams", not e["ok"] and e["error"]["pointer"] == "/length_penalty")
code, o = post("/v1/chat/completions", {"model": "m", "messages": msgs, "stream": True,
               "strux": {"num_beams": 2}})
ok("openai: refuses a streamed beam search", code == 400)
# tight budgets: beams keep their documents closable, so every answer is ok
# and complete (or `incomplete` when even the shortest document cannot fit,
# never a cut or invalid one); the invoice schema's shortest is long
inv = json.load(open("schemas/invoice.json"))
all_good = True
seen_ok = False
for mt in (8, 24, 40, 64):
    for nb in (2, 4):
        a = call({"schema": inv, "messages": msgs, "max_tokens": mt, "num_beams": nb,
                  "num_return_sequences": nb, "early_stopping": True})
        if a.get("ok"):
            seen_ok = True
            for c in a["choices"]:
                try:
                    jsonschema.validate(c["output"], inv)
                    all_good &= c["finish_reason"] == "stop" and json.loads(c["text"]) == c["output"]
                except Exception as e:
                    print("#", mt, nb, e); all_good = False
        elif a["error"]["code"] != "incomplete":
            print("#", mt, nb, a["error"]); all_good = False
ok("tight max_tokens: beams answer complete, valid documents (invoice, 8..64 tokens)",
   seen_ok and all_good)
sys.exit(1 if bad else 0)
PY
"$PY" "$T/t.py" "ipc://$T/s.ipc" "http://127.0.0.1:$HPORT" "$T/s.json" "$T/cli.out"
rc=$?
kill -TERM "$SPID"
wait "$SPID"
st=$?
SPID=
# exit status 0 after SIGTERM (under ASan: no leak either)
if [ "$st" = 0 ]; then echo "ok 99 - struxd exits 0 on SIGTERM"; else
    echo "not ok 99 - struxd exits 0 on SIGTERM (status $st)"; tail -20 "$T/log"; rc=1; fi
exit $rc
