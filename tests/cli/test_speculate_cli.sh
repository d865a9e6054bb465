#!/usr/bin/env bash
# `strux generate --speculate` from the outside, on tiny random-weight
# Qwen3 models written here: prompt lookup and a draft model give the same
# token ids as plain decoding (greedy and seeded sampling, with a schema
# the replies validate under Python jsonschema), the acceptance line is
# printed, a draft equal to the target is nearly always accepted, and bad
# arguments are usage errors (exit 2).  Needs $STRUX_BUILD, $STRUX_SHARED
# and the repo venv (.venv) with jsonschema.
set -u
S="$STRUX_BUILD/strux"
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
T=$(mktemp -d /tmp/strux-cli-spec.XXXXXX)
trap 'rm -rf "$T"' EXIT
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
run() { # run NAME ARGS...: strux generate; keeps out/err/status
    local name=$1
    shift
    timeout 300 "$S" generate "$@" </dev/null >"$T/$name.out" 2>"$T/$name.err"
    echo $? >"$T/$name.rc"
}
rc() { cat "$T/$1.rc"; }
ids() { tail -1 "$T/$1.out"; }
reply() { head -n -1 "$T/$1.out"; }
valid() {
    reply "$1" >"$T/$1.json"
    "$PY" -c 'import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' "$T/$1.json" "$2" \
        2>"$T/$1.pyerr" || { echo "# $1: $(head -c 300 "$T/$1.json") / $(tail -1 "$T/$1.pyerr")"; return 1; }
}
same() { # same A B: equal ids, both exit 0
    [ "$(rc "$1")" = 0 ] && [ "$(rc "$2")" = 0 ] && [ -n "$(ids "$1")" ] && [ "$(ids "$1")" = "$(ids "$2")" ] || {
        echo "# $1: $(rc "$1") $(ids "$1") / $2: $(rc "$2") $(ids "$2") / $(tail -2 "$T/$2.err")"
        return 1
    }
}

[ -x "$S" ] || { echo "not ok 1 - $S is not built"; exit 1; }
"$PY" -c "import jsonschema" 2>/dev/null || { echo "not ok 1 - $PY lacks jsonschema (make deps)"; exit 1; }
"$S" model random --shape tiny --seed 5 --out "$T/m" >/dev/null 2>&1
"$S" model random --shape tiny --seed 6 --out "$T/d" >/dev/null 2>&1
check "tiny models written" test -s "$T/d/model.safetensors"
M=(--model "$T/m" --threads 2)

"$S" generate --help >"$T/help.out" 2>&1
check "--help names the speculation options" sh -c "for o in --speculate --draft-k --draft-model; do \
    grep -q -- \"\$o\" '$T/help.out' || exit 1; done"

P="Copy this: the quick brown fox jumps over the lazy dog; the quick brown fox jumps again."
SCH=schemas/contact_card.json
run plain "${M[@]}" --prompt "$P" --schema $SCH --max-tokens 60 --print-ids
run ngram "${M[@]}" --prompt "$P" --schema $SCH --max-tokens 60 --print-ids --speculate ngram
run same "${M[@]}" --prompt "$P" --schema $SCH --max-tokens 60 --print-ids --speculate draft \
    --draft-model "$T/m" --draft-k 5
run other "${M[@]}" --prompt "$P" --schema $SCH --max-tokens 60 --print-ids --speculate draft \
    --draft-model "$T/d" --draft-k 2
check "schema, greedy: plain reply validates" valid plain $SCH
check "prompt lookup: the same ids as plain" same plain ngram
check "draft = target: the same ids" same plain same
check "other draft weights: the same ids" same plain other
check "acceptance is reported" grep -q '^speculation: [0-9]* of [0-9]* drafted tokens accepted' "$T/same.err"
check "draft = target: at least 90% accepted" sh -c "sed -n 's/^speculation: \([0-9]*\) of \([0-9]*\) .*/\1 \2/p' \
    '$T/same.err' | awk '{ exit !(\$2 > 0 && \$1 * 10 >= \$2 * 9) }'"

run splain "${M[@]}" --prompt "$P" --max-tokens 30 --print-ids --temperature 0.8 --seed 3
run sngram "${M[@]}" --prompt "$P" --max-tokens 30 --print-ids --temperature 0.8 --seed 3 --speculate ngram --draft-k 8
run sdraft "${M[@]}" --prompt "$P" --max-tokens 30 --print-ids --temperature 0.8 --seed 3 --speculate draft \
    --draft-model "$T/d"
check "sampled, unconstrained: lookup gives the same ids" same splain sngram
check "sampled, unconstrained: a draft model gives the same ids" same splain sdraft

run bad1 "${M[@]}" --prompt x --speculate medusa
run bad2 "${M[@]}" --prompt x --speculate draft
run bad3 "${M[@]}" --prompt x --speculate ngram --draft-k 17
check "bad --speculate, draft without a model, --draft-k 17: exit 2" sh -c \
    "[ $(rc bad1) = 2 ] && [ $(rc bad2) = 2 ] && [ $(rc bad3) = 2 ] && grep -q 'off, ngram or draft' '$T/bad1.err' \
     && grep -q -- '--draft-model' '$T/bad2.err'"
exit $((failed > 0))
