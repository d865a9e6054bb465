#!/usr/bin/env bash
# `strux extract` from the outside, on a tiny random-weight Qwen3 written
# here: text files under two schemas make one row per document x schema,
# every output validates under Python jsonschema (independent of strux),
# rows are written in input order although they finish in any order,
# the prefix cache serves the schemas' system turns, --resume runs only the
# rows not yet written (cutting a torn last line), JSONL and CSV inputs with
# a text column work, a failed row is written, listed and makes the exit
# status 1, --out - writes stdout, --review-below adds confidence per field
# and marks rows, and usage errors exit 2.  Needs
# $STRUX_BUILD, $STRUX_SHARED and the repo venv (.venv) with jsonschema.
set -u
S="$STRUX_BUILD/strux"
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
T=$(mktemp -d /tmp/strux-cli-extract.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$T"' EXIT
n=0 failed=0

check() { # check WHAT COMMAND...: the command's status is the verdict
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
run() { # run NAME ARGS...: strux extract; keeps err/status (stdout in NAME.stdout)
    local name=$1
    shift
    timeout 300 "$S" extract "$@" </dev/null >"$T/$name.stdout" 2>"$T/$name.err"
    echo $? >"$T/$name.rc"
}
rc() { cat "$T/$1.rc"; }
say() { echo "# $*"; return 1; }
# valid FILE N: N rows, unique (input, schema) keys, every ok row's output
# validates against its schema under Python jsonschema
valid() {
    "$PY" - "$1" "$2" <<'EOF' || return 1
import json, sys, jsonschema
rows = [json.loads(l) for l in open(sys.argv[1])]
want = int(sys.argv[2])
assert len(rows) == want, f"{len(rows)} rows, want {want}"
keys = {(r["input"], r["schema"]) for r in rows}
assert len(keys) == len(rows), "duplicate (input, schema) rows"
for r in rows:
    if r["ok"]:
        jsonschema.validate(r["output"], json.load(open(r["schema"])))
        assert set(r["usage"]) == {"prompt_tokens", "completion_tokens", "forced_tokens",
                                   "cached_tokens"}, r["usage"]
EOF
}
okrows() { grep -c '"ok":true' "$1"; }

[ -x "$S" ] || { echo "not ok 1 - $S is not built"; exit 1; }
"$PY" -c "import jsonschema" 2>/dev/null || { echo "not ok 1 - $PY lacks jsonschema (make deps)"; exit 1; }
"$S" model random --shape tiny --seed 5 --out "$T/m" >/dev/null 2>"$T/model.err"
check "tiny model written" test -s "$T/m/model.safetensors"
M=(--model "$T/m" --max-tokens 48 --batch 4)

# two small schemas (short documents keep the test fast) and three documents
cat >"$T/person.json" <<'EOF'
{"type":"object","properties":{"name":{"type":"string","maxLength":12},
 "age":{"type":"integer","minimum":0,"maximum":150}},"required":["name","age"],
 "additionalProperties":false}
EOF
cat >"$T/mood.json" <<'EOF'
{"type":"object","properties":{"mood":{"enum":["happy","sad","neutral"]},
 "score":{"type":"number","minimum":0,"maximum":1}},"required":["mood"],
 "additionalProperties":false}
EOF
mkdir "$T/docs"
printf 'Ada Lovelace, 36, was delighted with the engine.\n' >"$T/docs/a.txt"
printf 'Grace Hopper (85) felt neutral about the bug.\n' >"$T/docs/b.txt"
printf 'Née Zoë, 29 ans, était triste.\n' >"$T/docs/c.txt"
SCH=(--schema "$T/person.json" --schema "$T/mood.json")

run help --help
check "--help explains the command and exits 0" \
    eval '[ "$(rc help)" = 0 ] && grep -q -- "--resume" "$T/help.stdout" && grep -q -- "--text-column" "$T/help.stdout"'

run files "${M[@]}" "${SCH[@]}" "$T"/docs/*.txt --out "$T/files.jsonl"
check "3 documents x 2 schemas: exit 0, 6 rows" eval '[ "$(rc files)" = 0 ] && [ "$(okrows "$T/files.jsonl")" = 6 ] || say "status $(rc files): $(tail -3 "$T/files.err")"'
check "every output validates under Python jsonschema" valid "$T/files.jsonl" 6
# rows finish in any order (their outputs differ in length); they are written
# in input order: documents as given, each one's rows in --schema order
in_order() { # in_order FILE INPUT:SCHEMA...
    local f=$1
    shift
    [ "$("$PY" -c 'import json, sys
print(" ".join(r["input"] + ":" + r["schema"] for r in map(json.loads, open(sys.argv[1]))))' "$f")" = "$*" ] ||
        say "order: $(cut -c1-60 "$f" | tr '\n' ' ')"
}
check "rows are written in input order (document, then schema)" in_order "$T/files.jsonl" \
    "$T/docs/a.txt:$T/person.json" "$T/docs/a.txt:$T/mood.json" "$T/docs/b.txt:$T/person.json" \
    "$T/docs/b.txt:$T/mood.json" "$T/docs/c.txt:$T/person.json" "$T/docs/c.txt:$T/mood.json"
check "a random model is said to give meaningless outputs" grep -q "RANDOM weights.*meaningless" "$T/files.err"
check "progress with a rate, and a summary" \
    eval 'grep -q "rows/s" "$T/files.err" && grep -q "6 rows in .*6 ok, 0 failed" "$T/files.err"'
check "each schema's system turn is prefilled once (prefix cache)" \
    eval 'grep -q "from the prefix cache" "$T/files.err" && ! grep -q "(0 from the prefix cache)" "$T/files.err"'
# --resume: drop two rows, leave a torn line; only the missing rows run
head -4 "$T/files.jsonl" >"$T/res.jsonl"
printf '{"input":"torn' >>"$T/res.jsonl"
run resume "${M[@]}" "${SCH[@]}" "$T"/docs/*.txt --out "$T/res.jsonl" --resume
check "--resume runs only the 2 missing rows" \
    eval '[ "$(rc resume)" = 0 ] && grep -q "2 rows in .*2 ok, 0 failed, 4 skipped" "$T/resume.err" || say "$(tail -3 "$T/resume.err")"'
check "--resume cut the torn line: 6 valid rows, no duplicates" valid "$T/res.jsonl" 6
# the resumed rows ran in a batch of 2, the first run's in one of 6: the
# same outputs (greedy; a row does not depend on its batch)
same_outputs() {
    "$PY" - "$1" "$2" <<'EOF' || return 1
import json, sys
a, b = ({(r["input"], r["schema"]): r["output"] for r in map(json.loads, open(f))} for f in sys.argv[1:3])
assert a == b, "outputs differ"
EOF
}
check "resumed rows equal the first run's (batch composition does not matter)" same_outputs "$T/files.jsonl" "$T/res.jsonl"
run resume2 "${M[@]}" "${SCH[@]}" "$T"/docs/*.txt --out "$T/res.jsonl" --resume
check "--resume on a finished file runs nothing" \
    eval '[ "$(rc resume2)" = 0 ] && grep -q "0 rows in .*6 skipped" "$T/resume2.err" && valid "$T/res.jsonl" 6'

# tables: JSONL (one bad row) and CSV (quoted, multi-line field), --out -
cat >"$T/in.jsonl" <<'EOF'
{"doc": "Alan Turing, 41, was happy.", "id": "t1"}

{"doc": 7, "id": "t2"}
{"doc": "Marie Curie, 66, felt sad.", "id": 3}
EOF
run jsonl "${M[@]}" --schema "$T/person.json" --input "$T/in.jsonl" --text-column doc --id-column id --out "$T/jsonl.jsonl"
check "JSONL: a row without a string text column fails; exit 1" \
    eval '[ "$(rc jsonl)" = 1 ] && [ "$(okrows "$T/jsonl.jsonl")" = 2 ] && valid "$T/jsonl.jsonl" 3'
check "JSONL: rows keyed PATH:LINE with their id; the failure is written and listed" \
    eval 'grep -q "\"input\":\"$T/in.jsonl:1\",.*\"id\":\"t1\"" "$T/jsonl.jsonl" &&
          grep -q "\"input\":\"$T/in.jsonl:4\",.*\"id\":3" "$T/jsonl.jsonl" &&
          grep -q "\"input\":\"$T/in.jsonl:3\",.*\"ok\":false,.*\"message\":\"column .doc. is not a string\"" "$T/jsonl.jsonl" &&
          grep -q "1 failed" "$T/jsonl.err" && grep -q "in.jsonl:3 with .*not a string" "$T/jsonl.err"'
printf 'id,text\n1,"Bob, 40, is ""fine"".\nHe is happy."\r\n2,Eve is 22.\n' >"$T/in.csv"
run csv "${M[@]}" --schema "$T/mood.json" --input "$T/in.csv" --out - --review-below 0.999999
check "CSV to stdout: 2 rows keyed PATH:RECORD, all valid" \
    eval '[ "$(rc csv)" = 0 ] && valid "$T/csv.stdout" 2 && grep -q "in.csv:2" "$T/csv.stdout"'
# --review-below: field confidence on every row, one entry per leaf value
fields_ok() {
    "$PY" - "$1" "$2" <<'EOF' || return 1
import json, math, sys
def leaves(v, p=""):
    if isinstance(v, dict) and v:
        for k, c in v.items():
            yield from leaves(c, p + "/" + k.replace("~", "~0").replace("/", "~1"))
    elif isinstance(v, list) and v:
        for i, c in enumerate(v):
            yield from leaves(c, p + "/" + str(i))
    else:
        yield p
below = float(sys.argv[2])
for r in map(json.loads, open(sys.argv[1])):
    fc = r["field_confidence"]
    assert sorted(f["pointer"] for f in fc) == sorted(leaves(r["output"])), (fc, r["output"])
    for f in fc:
        assert f["logprob"] <= 0 and 0 <= f["alternatives"] <= 1 and f["tokens"] >= 0, f
    assert r["review"] == any(math.exp(f["logprob"]) < below for f in fc), r
EOF
}
check "--review-below: field_confidence names every leaf; review marks rows below P" \
    eval 'fields_ok "$T/csv.stdout" 0.999999 && grep -q "to review (a field below" "$T/csv.err"'

# a budget below the schema's shortest document: every row fails, named
run tight --model "$T/m" --max-tokens 4 --schema "$T/person.json" "$T/docs/a.txt" --out "$T/tight.jsonl"
check "max_tokens below the shortest document: row failed as incomplete, exit 1" \
    eval '[ "$(rc tight)" = 1 ] && grep -q "\"code\":\"incomplete\"" "$T/tight.jsonl" && grep -q "0 ok, 1 failed" "$T/tight.err"'

run nomodel --schema "$T/person.json" "$T/docs/a.txt" --out "$T/x.jsonl"
run both "${M[@]}" --schema "$T/person.json" "$T/docs/a.txt" --input "$T/in.jsonl" --out "$T/x.jsonl"
run resstdout "${M[@]}" --schema "$T/person.json" "$T/docs/a.txt" --out - --resume
run badreview "${M[@]}" --schema "$T/person.json" "$T/docs/a.txt" --out - --review-below 2
check "usage errors exit 2" eval '[ "$(rc nomodel)$(rc both)$(rc resstdout)$(rc badreview)" = 2222 ]'
echo '{"type":"object","properties":{"a":{"pattern":"("}}}' >"$T/bad.json"
run badschema "${M[@]}" --schema "$T/bad.json" "$T/docs/a.txt" --out "$T/x.jsonl"
check "a schema that cannot compile stops the job (exit 1, named)" \
    eval '[ "$(rc badschema)" = 1 ] && grep -q "bad.json: cannot compile" "$T/badschema.err"'

[ $failed -eq 0 ]
