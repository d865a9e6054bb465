#!/usr/bin/env bash
# `strux generate --beams` from the outside, on the tiny random-weight Qwen3
# (seed 1, the real tokenizer): every returned sequence under a schema
# validates (Python jsonschema, independent of strux) and under a regex
# matches it, sequences come best first with their scores, --return and
# --early-stopping act, the search repeats exactly, and sampling options or
# bad values are refused with exit status 2.  Needs $STRUX_BUILD,
# $STRUX_SHARED and the repo venv (.venv) with jsonschema.
set -u
S="$STRUX_BUILD/strux"
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
T=$(mktemp -d /tmp/strux-cli-beam.XXXXXX)
trap 'rm -rf "$T"' EXIT
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
run() { # run NAME ARGS...: strux generate on the model; keeps out/err/status
    local name=$1
    shift
    timeout 300 "$S" generate --model "$T/m" --prompt "Reply in JSON." --threads 2 "$@" \
        </dev/null >"$T/$name.out" 2>"$T/$name.err"
    echo $? >"$T/$name.rc"
}
rc() { cat "$T/$1.rc"; }
refused() { # refused NAME TEXT: exit 2, TEXT on stderr, nothing on stdout
    [ "$(rc "$1")" = 2 ] && grep -q -- "$2" "$T/$1.err" && [ ! -s "$T/$1.out" ] || {
        echo "# $1: status $(rc "$1"), stderr: $(head -c 300 "$T/$1.err")"
        return 1
    }
}
# sequences NAME: the texts, one a line (--compact keeps each on one line)
texts() { awk '/^--- beam /{getline; print}' "$T/$1.out"; }
scores() { sed -n 's/^--- beam [0-9]* (score \([-0-9.]*\),.*/\1/p' "$T/$1.out"; }
nbeams() { grep -c '^--- beam ' "$T/$1.out"; }
sorted() { scores "$1" | "$PY" -c 'import sys; s=[float(x) for x in sys.stdin]; sys.exit(s != sorted(s, reverse=True))'; }
valid_all() { # valid_all NAME SCHEMA: every text validates
    texts "$1" | "$PY" -c 'import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
lines = sys.stdin.read().splitlines()
assert lines, "no sequences"
for t in lines:
    jsonschema.validate(json.loads(t), schema)' "$2" 2>"$T/$1.pyerr" || {
        echo "# $1: $(tail -3 "$T/$1.pyerr")"
        return 1
    }
}

"$S" model random --shape tiny --seed 1 --out "$T/m" >/dev/null 2>&1
check "the model is written" test -s "$T/m/model.safetensors"

cat >"$T/obj.json" <<'J'
{"type":"object","properties":{"ok":{"type":"boolean"},"n":{"type":"integer","minimum":0,"maximum":99},
 "tag":{"enum":["x","y","z"]}},"required":["ok","n","tag"],"additionalProperties":false}
J
cat >"$T/arr.json" <<'J'
{"type":"array","items":{"type":"string","maxLength":4},"minItems":1,"maxItems":3}
J

run obj --schema "$T/obj.json" --compact --beams 4 --return 4 --max-tokens 60 --early-stopping true
check "object schema: exit 0" [ "$(rc obj)" = 0 ]
check "object schema: 4 sequences" [ "$(nbeams obj)" = 4 ]
check "object schema: every sequence validates (jsonschema)" valid_all obj "$T/obj.json"
check "object schema: best first" sorted obj
check "strux's validator agrees" [ "$(grep -c 'validator: valid' "$T/obj.err")" = 4 ]
check "stderr says the prompt ran once" grep -q 'the model ran .* (prompt once' "$T/obj.err"

run arr --schema "$T/arr.json" --compact --beams 3 --return 2 --max-tokens 60 --length-penalty 2
check "array schema: 2 of 3 beams returned, all valid" \
    eval '[ "$(rc arr)" = 0 ] && [ "$(nbeams arr)" = 2 ] && valid_all arr "$T/arr.json"'

run re --regex '[0-9]{3}-[a-z]{2}' --beams 3 --return 3 --max-tokens 20
check "regex: every sequence matches" eval '[ "$(rc re)" = 0 ] && [ "$(nbeams re)" = 3 ] &&
    [ "$(texts re | grep -cE "^[0-9]{3}-[a-z]{2}$")" = 3 ]'

run free --beams 4 --return 3 --max-tokens 6 --early-stopping never --print-ids
check "unconstrained: 3 sequences of 6 ids" eval '[ "$(rc free)" = 0 ] && [ "$(nbeams free)" = 3 ] &&
    [ "$(grep -c "6 tokens, finish length" "$T/free.out")" = 3 ]'
run free2 --beams 4 --return 3 --max-tokens 6 --early-stopping never --print-ids
check "the search repeats exactly" cmp -s "$T/free.out" "$T/free2.out"

run t --beams 2 --temperature 0.7
check "refuses sampling with beams" refused t "deterministic search"
run tp --beams 2 --top-p 0.9
check "refuses --top-p with beams" refused tp "deterministic search"
run nn --beams 2 --n 2
check "refuses --n with beams" refused nn "takes no --n"
run r3 --beams 2 --return 3
check "refuses --return above --beams" refused r3 "N <= B"
run es --beams 2 --early-stopping maybe
check "refuses a bad --early-stopping" refused es "true, false or never"
run b0 --beams 0
check "refuses --beams 0" eval '[ "$(rc b0)" = 2 ]'
run t0 --beams 2 --temperature 0 --max-tokens 3
check "--temperature 0 is greedy, not sampling: accepted" [ "$(rc t0)" = 0 ]
check "--help documents the beam options" eval '"$S" generate --help | grep -q -- "--beams B" &&
    "$S" generate --help | grep -q -- "--length-penalty" && "$S" generate --help | grep -q -- "--early-stopping"'

echo "# $n checks, $failed failed"
[ "$failed" -eq 0 ]
