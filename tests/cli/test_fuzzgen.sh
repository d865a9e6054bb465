#!/usr/bin/env bash
# The guarantee from the generating side: `strux fuzzgen` samples documents
# from the masks of every schema in schemas/, of every schema of the JSON
# Schema Test Suite that compiles (draft 2020-12 and draft-07) and of the
# fixed MaskBench sample, in every mode, and strux's validator must accept
# every one; Python jsonschema (tools/oracle_jsonschema.py, format
# assertion on, exact decimals) must agree on every one but the documented
# departures (docs/ORACLE.md).
# Env: STRUX_FUZZGEN_DOCS documents per schema (default 40; `make asan`
# passes fewer).
set -u
B=${STRUX_BUILD:?}; S=${STRUX_SHARED:?}
PY=.venv/bin/python
N=${STRUX_FUZZGEN_DOCS:-40}
T=$(mktemp -d /tmp/strux-fuzzgen.XXXXXX)
trap 'rm -rf "$T"' EXIT
n=0; fail=0
check() { n=$((n+1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fail=1; fi; }
tok=(--tokenizer "$S/qwen3-tokenizer/tokenizer.json")
summary() { grep '^fuzzgen: [0-9]* schemas' "$1"; }
clean() { # a run's summary says every document was valid
    summary "$1" | grep -Eq ' 0 invalid, 0 not-json, 0 stuck, 0 no-completion, 0 no-verdict;'
}

# the product's own schemas, more documents each, every mode
ls schemas/*.json >"$T/own.txt"
"$B/strux" fuzzgen "${tok[@]}" --schemas "$T/own.txt" --count $((N * 5)) --out "$T/own.jsonl" \
    >"$T/own.out" 2>&1
rc=$?
echo "# schemas/: $(summary "$T/own.out")"
check "schemas/: exit 0, every document valid" '[ $rc -eq 0 ] && clean "$T/own.out"'

ls "$S"/json-schema-test-suite/tests/draft2020-12/*.json \
   "$S"/json-schema-test-suite/tests/draft2020-12/optional/format/*.json >"$T/s20.txt"
"$B/strux" fuzzgen "${tok[@]}" --schemas "$T/s20.txt" --count "$N" --out "$T/s20.jsonl" \
    >"$T/s20.out" 2>&1
rc=$?
echo "# Test Suite 2020-12: $(summary "$T/s20.out")"
check "Test Suite 2020-12: exit 0, every document valid" '[ $rc -eq 0 ] && clean "$T/s20.out"'
compiled() { # at least 60% of the run's schemas compiled
    local all dec
    all=$(summary "$1" | sed -E 's/.*fuzzgen: ([0-9]+) schemas.*/\1/')
    dec=$(summary "$1" | sed -E 's/.*schemas \(([0-9]+) declined.*/\1/')
    [ $(( (all - dec) * 10 )) -ge $(( all * 6 )) ]
}
check "Test Suite 2020-12: most schemas compile" 'compiled "$T/s20.out"'

ls "$S"/json-schema-test-suite/tests/draft7/*.json \
   "$S"/json-schema-test-suite/tests/draft7/optional/format/*.json >"$T/s7.txt"
"$B/strux" fuzzgen "${tok[@]}" --draft7 --schemas "$T/s7.txt" --count "$N" --out "$T/s7.jsonl" \
    >"$T/s7.out" 2>&1
rc=$?
echo "# Test Suite draft-07: $(summary "$T/s7.out")"
check "Test Suite draft-07: exit 0, every document valid" '[ $rc -eq 0 ] && clean "$T/s7.out"'

sed "s|^|$S/maskbench/|" tests/fixtures/maskbench_ci_sample.txt >"$T/mb.txt"
"$B/strux" fuzzgen "${tok[@]}" --schemas "$T/mb.txt" --count $((N / 2)) --time-limit 3 \
    --out "$T/mb.jsonl" >"$T/mb.out" 2>&1
rc=$?
echo "# MaskBench sample: $(summary "$T/mb.out")"
check "MaskBench sample: exit 0, every document valid" '[ $rc -eq 0 ] && clean "$T/mb.out"'

# schemas where fuzzgen once found a bug (tests/fixtures/fuzzgen_regress)
ls tests/fixtures/fuzzgen_regress/*.json >"$T/reg.txt"
"$B/strux" fuzzgen "${tok[@]}" --schemas "$T/reg.txt" --count $((N * 10)) --out "$T/reg.jsonl" \
    >"$T/reg.out" 2>&1
rc=$?
"$B/strux" fuzzgen "${tok[@]}" --schemas "$T/reg.txt" --mode edge --max-tokens 48 --count $((N * 10)) \
    >"$T/reg-edge.out" 2>&1
rc2=$?
echo "# regressions: $(summary "$T/reg.out")"
check "fuzzgen regressions: every document valid, every mode and cut short" \
    '[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && clean "$T/reg.out" && clean "$T/reg-edge.out"'

# tight budgets: the shortest completion closes nearly every document
"$B/strux" fuzzgen "${tok[@]}" --schemas "$T/own.txt" --mode edge --max-tokens 8 --count "$N" \
    >"$T/edge.out" 2>&1
rc=$?
check "edge mode at 8 tokens: every document valid, closed by the shortest completion" \
    '[ $rc -eq 0 ] && clean "$T/edge.out" && summary "$T/edge.out" | grep -q "; [1-9][0-9]* closed"'

# the third oracle: Python agrees on every document strux accepted
for part in own s20 mb reg; do
    $PY tools/oracle_jsonschema.py "$T/$part.jsonl" >"$T/$part.py" 2>&1
    rc=$?
    echo "# $(tail -1 "$T/$part.py")"
    check "Python jsonschema agrees ($part)" '[ $rc -eq 0 ] && grep -q "\"disagreements\": 0" "$T/$part.py"'
done
$PY tools/oracle_jsonschema.py --draft7 "$T/s7.jsonl" >"$T/s7.py" 2>&1
rc=$?
echo "# $(tail -1 "$T/s7.py")"
check "Python jsonschema agrees (draft-07)" '[ $rc -eq 0 ] && grep -q "\"disagreements\": 0" "$T/s7.py"'

# the oracle can disagree: a year-0000 date that a validator let through
printf '%s\n' '{"type":"string","format":"date"}' >"$T/date.json"
printf '{"schema":"%s","index":0,"mode":"uniform","verdict":"valid","doc":"\\"0000-01-01\\""}\n' \
    "$T/date.json" >"$T/bad.jsonl"
$PY tools/oracle_jsonschema.py "$T/bad.jsonl" >"$T/bad.py" 2>&1
rc=$?
check "the oracle flags a document Python refuses (exit 1, DISAGREE)" \
    '[ $rc -eq 1 ] && grep -q "^DISAGREE" "$T/bad.py"'
# every error is judged: a documented departure (a pattern Python's re
# cannot compile, a U+FEFF that ECMA-262's \s matches) excuses its own
# error only, never another error of the same document
printf '%s\n' '{"properties":{"a":{"type":"string","pattern":"\\p{Lu}"},"c":{"pattern":"^\\s*x$"},"b":{"type":"integer"}}}' \
    >"$T/dep.json"
for d in '{"a":"X"}' '{"c":"\ufeffx"}' '{"a":"X","b":"one"}' '{"c":"\ufeffx","b":1.5}'; do
    "$PY" -c 'import json, sys; print(json.dumps({"schema": sys.argv[1], "index": 0, "mode": "uniform",
        "verdict": "valid", "doc": sys.argv[2]}))' "$T/dep.json" "$d"
done >"$T/dep.jsonl"
$PY tools/oracle_jsonschema.py "$T/dep.jsonl" >"$T/dep.py" 2>&1
rc=$?
check "a departure excuses only its own error (2 departures, 2 disagreements)" \
    '[ $rc -eq 1 ] && [ "$(grep -c "^DISAGREE" "$T/dep.py")" = 2 ] &&
     grep -q "\"agree\": 0, \"departures\": {\"python-re-syntax\": 1, \"python-re-whitespace\": 1}, \"disagreements\": 2" "$T/dep.py" ||
     { sed "s/^/# /" "$T/dep.py"; false; }'

# usage
"$B/strux" fuzzgen --mode nope --schema "$T/date.json" >"$T/u.out" 2>&1
rc=$?
check "unknown --mode: exit 2 with the choices" '[ $rc -eq 2 ] && grep -q -- "--mode: \"nope\" is not a mode (uniform, long, deep, wide, edge or mixed)" "$T/u.out"'
"$B/strux" fuzzgen "${tok[@]}" --schema "$T/missing.json" --count 1 >"$T/u.out" 2>&1
rc=$?
check "a missing schema file: exit 1, named" '[ $rc -eq 1 ] && grep -q "missing.json" "$T/u.out"'
"$B/strux" fuzzgen --help >"$T/u.out" 2>&1
rc=$?
check "--help: exit 0, explains the modes" '[ $rc -eq 0 ] && grep -q "uniform | long | deep" "$T/u.out"'
exit $fail
