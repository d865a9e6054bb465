#!/usr/bin/env bash
# A request's own layout (`layout` on POST /v1/strux, `strux.layout` on
# /v1/chat/completions) on the tiny random model, temperature 1, several
# seeds, one server (so the schema cache must tell the layouts apart):
#   - the server's default layout first, then "indent" 2 and 4: every text is
#     laid out exactly as JSON.stringify(value, null, N) (compared with
#     Python's json.dumps(indent=N) after strings and numbers are blanked);
#   - "compact": no whitespace outside strings;
#   - property_order "schema": members in the order `properties` lists them;
#   - every output validates (Python jsonschema);
#   - contradictions, unknown members, bad values and a layout on free text
#     are a 400 naming the member's JSON Pointer.
# Needs $STRUX_BUILD and the repo venv (.venv) with jsonschema.
set -u
B=${STRUX_BUILD:?}
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
T=$(mktemp -d /tmp/strux-rlayout.XXXXXX)
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
"$B/struxd" --model "$T/model" --threads 2 --http 127.0.0.1:0 --default-max-tokens 160 \
    --max-tokens 256 --timeout 120 2>"$T/d.log" &
SPID=$!
for _ in $(seq 1 600); do
    grep -q '^struxd: ready' "$T/d.log" && break
    kill -0 "$SPID" 2>/dev/null || bail "struxd exited at start-up"
    sleep 0.1
done
HPORT=$(sed -n 's|^struxd: listening on.* http://[^:]*:\([0-9]*\).*|\1|p' "$T/d.log")
[ -n "$HPORT" ] || bail "struxd reported no HTTP port"

cat >"$T/t.py" <<'EOF'
import json, re, sys, urllib.request, urllib.error
import jsonschema

URL = "http://127.0.0.1:%s" % sys.argv[1]
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["b", "a", "c"],
          "properties": {
              "b": {"type": "integer", "minimum": -99, "maximum": 99},
              "a": {"type": "object", "additionalProperties": False, "required": ["x"],
                    "properties": {"x": {"type": "array", "maxItems": 3,
                                         "items": {"type": "string", "maxLength": 4}}}},
              "c": {"type": "boolean"}}}
SEEDS = range(1, 6)
n = 0
failed = 0

def check(what, ok, detail=""):
    global n, failed
    n += 1
    print(("ok %d - %s" if ok else "not ok %d - %s") % (n, what))
    if not ok:
        failed += 1
        for line in str(detail).splitlines()[:12]:
            print("# " + line)

def post(path, body):
    req = urllib.request.Request(URL + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())

def native(seed, layout=None):
    body = {"schema": SCHEMA, "document": "b is 3, x holds ab and cd, c is true",
            "temperature": 1, "seed": seed}
    if layout is not None:
        body["layout"] = layout
    return post("/v1/strux", body)

STR = re.compile(r'"(?:[^"\\]|\\.)*"')
NUM = re.compile(r'-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?')

def blank(text):
    return NUM.sub("0", STR.sub('"s"', text))

def judge(texts, what, layout_ok):
    bad = []
    for t in texts:
        try:
            v = json.loads(t)
            jsonschema.validate(v, SCHEMA)
        except Exception as e:
            bad.append("%r: %s" % (t, e))
            continue
        why = layout_ok(t, v)
        if why:
            bad.append("%r: %s" % (t, why))
    check("%s: %d outputs valid and laid out so" % (what, len(texts)), not bad and texts,
          "\n".join(bad))

def indent_ok(n):
    def ok(t, v):
        want = json.dumps(v, indent=n, ensure_ascii=False)
        return None if blank(t) == blank(want) else "not JSON.stringify(v, null, %d)" % n
    return ok

def compact_ok(t, v):
    return "whitespace outside strings" if re.search(r"\s", STR.sub("", t)) else None

def order_ok(t, v):
    keys = list(v.keys())
    return None if keys == ["b", "a", "c"] else "members in order %s" % keys

def texts(layout):
    out = []
    for s in SEEDS:
        code, r = native(s, layout)
        if code != 200 or not r.get("ok"):
            check("native request with layout %s answers 200" % layout, False, r)
            return []
        out.append(r["text"])
    return out

default = texts(None)
judge(default, "the server's default layout", lambda t, v: None)
judge(texts({"whitespace": "indent", "indent": 2}), "layout indent 2 (after the default)",
      indent_ok(2))
judge(texts({"indent": 4}), "layout {indent: 4} alone means indent", indent_ok(4))
judge(texts({"whitespace": "compact"}), "layout compact", compact_ok)
judge(texts({"property_order": "schema", "max_ws": 0}), "property_order schema, max_ws 0",
      lambda t, v: order_ok(t, v) or compact_ok(t, v))

# the OpenAI route's strux.layout
oa = []
for s in SEEDS:
    code, r = post("/v1/chat/completions", {
        "messages": [{"role": "user", "content": "b is 3, x holds ab, c is false"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": SCHEMA}},
        "temperature": 1, "seed": s, "max_tokens": 160,
        "strux": {"layout": {"whitespace": "indent", "indent": 3, "property_order": "schema"}}})
    if code != 200:
        check("chat completion with strux.layout answers 200", False, r)
        break
    oa.append(r["choices"][0]["message"]["content"])
judge(oa, "/v1/chat/completions strux.layout indent 3, schema order",
      lambda t, v: indent_ok(3)(t, v) or order_ok(t, v))

def refused(path, body, pointer, what):
    code, r = post(path, body)
    err = r.get("error", {}) if isinstance(r, dict) else {}
    got = err.get("pointer") or err.get("param")
    check("%s: 400 at %s" % (what, pointer), code == 400 and got == pointer, (code, r))

base = {"schema": SCHEMA, "document": "x", "max_tokens": 8}
refused("/v1/strux", dict(base, layout={"whitespace": "compact", "indent": 2}), "/layout/indent",
        "indent with compact whitespace")
refused("/v1/strux", dict(base, layout={"whitespace": "indent", "max_ws": 2}), "/layout/max_ws",
        "max_ws with indent")
refused("/v1/strux", dict(base, layout={"spaces": 2}), "/layout/spaces", "an unknown member")
refused("/v1/strux", dict(base, layout={"indent": 40}), "/layout/indent", "indent out of range")
refused("/v1/strux", dict(base, layout={"whitespace": "pretty"}), "/layout/whitespace",
        "an unknown whitespace")
refused("/v1/strux", dict(base, layout="compact"), "/layout", "a layout that is no object")
refused("/v1/strux", {"document": "x", "max_tokens": 8, "layout": {"indent": 2}}, "/layout",
        "a layout on free text")
refused("/v1/chat/completions", {
    "messages": [{"role": "user", "content": "x"}], "max_tokens": 8,
    "response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": SCHEMA}},
    "strux": {"layout": {"property_order": "alphabetical"}}}, "/strux/layout/property_order",
    "strux.layout with a bad property_order")
sys.exit(1 if failed else 0)
EOF
"$PY" "$T/t.py" "$HPORT"
