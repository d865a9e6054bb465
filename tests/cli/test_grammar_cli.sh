#!/usr/bin/env bash
# `strux compile` and `strux check` from the outside: exit statuses, the
# error line naming the keyword and its JSON Pointer, and the layouts
# (--max-ws 0 compact, --indent N as JSON.stringify(v, null, N)) and
# --property-order.
# Needs $STRUX_BUILD (absolute build dir holding strux) and $STRUX_SHARED.
set -u
S="$STRUX_BUILD/strux"
T=$(mktemp -d /tmp/strux-cli-grammar.XXXXXX)
trap 'rm -rf "$T"' EXIT
n=0 failed=0
check() { # check WHAT COMMAND...: the command's status is the verdict
    local what=$1
    shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $what"; else echo "not ok $n - $what"; failed=$((failed + 1)); fi
}
tok=(--tokenizer "${STRUX_SHARED:-../shared}/qwen3-tokenizer/tokenizer.json")
printf '%s' '{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}},"required":["a"],"additionalProperties":false}' >"$T/s.json"
printf '{\n  "a": [\n    1,\n    2\n  ]\n}' >"$T/ind2.json"
printf '{"a":[1,2]}' >"$T/compact.json"
printf '{"a": [1, 2]}' >"$T/spaced.json"

check "compile: exit 0 and a size line" sh -c "'$S' compile ${tok[*]} --schema '$T/s.json' | grep -q 'compile:'"
check "check: flexible layout accepts spaced JSON" "$S" check "${tok[@]}" --schema "$T/s.json" "$T/spaced.json"
check "check --max-ws 0: compact accepted" "$S" check "${tok[@]}" --max-ws 0 --schema "$T/s.json" "$T/compact.json"
"$S" check "${tok[@]}" --max-ws 0 --schema "$T/s.json" "$T/spaced.json" >"$T/out" 2>&1
check "check --max-ws 0: spaced JSON refused, exit 1, says where" \
    sh -c "[ $? -eq 1 ] && grep -q 'matcher: *rejects token' '$T/out'"
check "check --indent 2: JSON.stringify(v, null, 2) accepted" \
    "$S" check "${tok[@]}" --indent 2 --schema "$T/s.json" "$T/ind2.json"
"$S" check "${tok[@]}" --indent 4 --schema "$T/s.json" "$T/ind2.json" >/dev/null 2>&1
check "check --indent 4: a 2-space layout refused (exit 1)" [ $? -eq 1 ]
"$S" check "${tok[@]}" --indent 2 --schema "$T/s.json" "$T/compact.json" >/dev/null 2>&1
check "check --indent 2: compact JSON refused (exit 1)" [ $? -eq 1 ]
"$S" check "${tok[@]}" --indent 0 --schema "$T/s.json" "$T/ind2.json" >"$T/out" 2>&1
check "check --indent 0: usage error (exit 2)" sh -c "[ $? -eq 2 ] && grep -q 'indent: .0. is not an integer from 1 to 16' '$T/out'"
# a refusal at whitespace names the layout rule and the option that accepts the text
printf '{\n    "a": [\n        1\n    ]\n}' >"$T/ind4.json"
"$S" check "${tok[@]}" --schema "$T/s.json" "$T/ind4.json" >"$T/out" 2>&1
check "check: a 4-space layout under --max-ws 4 is named as such" sh -c "[ $? -eq 1 ] &&
    grep -qx 'layout: *whitespace run of 5 > --max-ws 4 at byte 1; use --indent 4 or --max-ws 9' '$T/out'"
"$S" check "${tok[@]}" --indent 4 --schema "$T/s.json" "$T/ind2.json" >"$T/out" 2>&1
check "check --indent 4: a 2-space layout is named as such" sh -c "[ $? -eq 1 ] &&
    grep -q '^layout: *whitespace run of 3 at byte 1 is not the --indent 4 layout.*; use --indent 2 or --max-ws 5' '$T/out'"
"$S" check "${tok[@]}" --max-ws 0 --schema "$T/s.json" "$T/spaced.json" >"$T/out" 2>&1
check "check --max-ws 0: a space after the colon is named as such" sh -c "[ $? -eq 1 ] &&
    grep -qx 'layout: *whitespace run of 1 > --max-ws 0 at byte 5; use --max-ws 1' '$T/out'"
printf '%s' '{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"integer"}},"required":["a"]}' >"$T/po.json"
printf '{"b": 2, "a": 1}' >"$T/po_in.json"
printf '{"a": 1, "b": 2}' >"$T/po_out.json"
check "check --property-order: members in the listed order accepted" \
    "$S" check "${tok[@]}" --property-order --schema "$T/po.json" "$T/po_in.json"
"$S" check "${tok[@]}" --property-order --schema "$T/po.json" "$T/po_out.json" >/dev/null 2>&1
check "check --property-order: another order refused (exit 1)" [ $? -eq 1 ]
"$S" check "${tok[@]}" --property-order --schema "$T/po.json" "$T/po_out.json" >"$T/out" 2>&1
check "check: a refusal that is not whitespace has no layout line" sh -c "! grep -q '^layout:' '$T/out'"
check "check without --property-order: any order" "$S" check "${tok[@]}" --schema "$T/po.json" "$T/po_out.json"
# escape spellings (sx_gr_esc): check reads a document someone wrote, so it
# takes every spelling unless asked for the canonical ones generation writes
printf '%s' '{"enum":["rejected","ok"]}' >"$T/en.json"
printf '%s' '"reje\u0063ted"' >"$T/en_u.json"
check "check: a \\u spelling of an enum value accepted (escapes any by default)" \
    "$S" check "${tok[@]}" --schema "$T/en.json" "$T/en_u.json"
"$S" check "${tok[@]}" --escapes canonical --schema "$T/en.json" "$T/en_u.json" >/dev/null 2>&1
check "check --escapes canonical: the \\u spelling refused (exit 1)" [ $? -eq 1 ]
printf '%s' '{"type":"array","items":{"type":"integer"},"contains":{"minimum":5},"uniqueItems":true}' >"$T/bad.json"
"$S" compile "${tok[@]}" --schema "$T/bad.json" >"$T/out" 2>&1
check "compile: unsupported keyword is exit 1 with keyword and pointer" \
    sh -c "[ $? -eq 1 ] && grep -q \"unsupported: 'contains' at /contains\" '$T/out' && grep -q 'JSON Pointer: /contains' '$T/out'"
printf '%s' '{"type":"strin"}' >"$T/inv.json"
"$S" compile "${tok[@]}" --schema "$T/inv.json" >"$T/out" 2>&1
check "compile: invalid schema is exit 1 with the pointer" sh -c "[ $? -eq 1 ] && grep -q 'at /type' '$T/out'"
printf '{"type": "object",' >"$T/broken.json"
"$S" compile "${tok[@]}" --schema "$T/broken.json" >"$T/out" 2>&1
check "compile: malformed JSON is exit 1 with a line number" sh -c "[ $? -eq 1 ] && grep -qi 'line' '$T/out'"
# numbers of any length: both the matcher and the validator read the digits
printf '%s' '{"type":"integer"}' >"$T/int.json"
printf '%s' '123456789012345678901234567890' >"$T/big.json"
check "check: a 30-digit integer passes matcher and validator" \
    "$S" check "${tok[@]}" --schema "$T/int.json" "$T/big.json"
# an integer is any number whose value is one: check takes every spelling
# (escapes any), generation's canonical layout the plain ones only
for v in 1e2 1.5e1 10E+1 -2.50e2 0e5 100e-2; do
    printf '%s' "$v" >"$T/ispell.json"
    check "check: integer spelled $v passes matcher and validator" \
        "$S" check "${tok[@]}" --schema "$T/int.json" "$T/ispell.json"
done
printf '%s' '1.25e1' >"$T/ispell_bad.json"
"$S" check "${tok[@]}" --schema "$T/int.json" "$T/ispell_bad.json" >"$T/out" 2>&1
check "check: 1.25e1 (12.5) is refused by both" \
    sh -c "[ $? -eq 1 ] && grep -q 'matcher:   rejects' '$T/out' && grep -q 'validator: rejects' '$T/out'"
printf '%s' '1e2' >"$T/ispell.json"
"$S" check "${tok[@]}" --escapes canonical --schema "$T/int.json" "$T/ispell.json" >/dev/null 2>&1
check "check --escapes canonical: an integer's exponent refused (exit 1)" [ $? -eq 1 ]
printf '%s' '{"type":"number","multipleOf":0.01}' >"$T/cents.json"
printf '%s' '12345678901234567890.01' >"$T/cents_ok.json"
check "check: a long decimal multiple of 0.01 passes both" \
    "$S" check "${tok[@]}" --schema "$T/cents.json" "$T/cents_ok.json"
printf '%s' '12345678901234567890.011' >"$T/cents_bad.json"
"$S" check "${tok[@]}" --schema "$T/cents.json" "$T/cents_bad.json" >"$T/out" 2>&1
check "check: a long decimal off the multiple is refused by both" \
    sh -c "[ $? -eq 1 ] && grep -q 'matcher:   rejects' '$T/out' && grep -q 'validator: rejects.*multipleOf' '$T/out'"
printf '%s' '{"type":"integer","multipleOf":7,"minimum":0}' >"$T/seven.json"
printf '%s' '700000000000000000000000000000000000007' >"$T/seven_ok.json"
check "check: a 39-digit multiple of 7 passes both" \
    "$S" check "${tok[@]}" --schema "$T/seven.json" "$T/seven_ok.json"
# Bounded work (issue 28): a recursive expression schema whose shortest
# values were found by unfolding its recursion (check ran past 60 s, and
# the smaller one below hung the compile); each now takes milliseconds.
printf '%s' '{"$defs":{"e":{"oneOf":[{"properties":{"and":{"type":"array","minItems":2,"items":{"$ref":"#/$defs/e"}}},"additionalProperties":false},{"properties":{"or":{"type":"array","minItems":2,"items":{"$ref":"#/$defs/e"}}},"additionalProperties":false},{"properties":{"not":{"$ref":"#/$defs/e"}},"additionalProperties":false},{"properties":{"field":{"type":"string"}},"additionalProperties":false}]}},"$ref":"#/$defs/e"}' >"$T/expr.json"
printf '%s' '{"and": [{"field": "a"}, {"not": {"field": "b"}}]}' >"$T/expr_in.json"
timeout 60 "$S" check "${tok[@]}" --schema "$T/expr.json" "$T/expr_in.json" >"$T/out" 2>&1
check "check: recursive and/or/not/field schema accepted by both, promptly" \
    sh -c "[ $? -eq 0 ] && grep -q 'matcher: *accepts' '$T/out' && grep -q 'validator: *accepts' '$T/out'"
printf '%s' '{"$defs":{"e":{"oneOf":[{"properties":{"a":{"type":"array","minItems":2,"items":{"$ref":"#/$defs/e"}}},"additionalProperties":false},{"properties":{"f":{"type":"string"}},"additionalProperties":false}]}},"$ref":"#/$defs/e"}' >"$T/rec2.json"
timeout 60 "$S" compile "${tok[@]}" --schema "$T/rec2.json" >"$T/out" 2>&1
check "compile: the smallest recursive schema of issue 28 compiles promptly" \
    sh -c "[ $? -eq 0 ] && grep -q 'compile:' '$T/out'"
# Schema files are read as the server reads a request's schema (issue 28):
# numbers of any length read; where a double cannot hold one, a refusal
# naming it and its JSON Pointer -- never jansson's "too big integer".
printf '%s' '{"enum": [12000000000000000000000, 1]}' >"$T/big_enum.json"
"$S" compile "${tok[@]}" --schema "$T/big_enum.json" >"$T/out" 2>&1
check "compile: an enum of 12000000000000000000000 (held exactly by a double) is read" \
    sh -c "[ $? -eq 0 ] && grep -q 'compile:' '$T/out'"
printf '%s' '{"const": 123456789012345678901234567890}' >"$T/big_const.json"
printf '%s' '1' >"$T/one.json"
"$S" check "${tok[@]}" --schema "$T/big_const.json" "$T/one.json" >"$T/out" 2>&1
check "check: a 30-digit const is refused naming /const, not 'too big integer'" \
    sh -c "[ $? -eq 1 ] && grep -q '123456789012345678901234567890.* at /const' '$T/out' && ! grep -q 'too big integer' '$T/out'"
printf '%s' '{"type": "number", "minimum": 1.2e400}' >"$T/big_min.json"
"$S" compile "${tok[@]}" --schema "$T/big_min.json" >"$T/out" 2>&1
check "compile: minimum 1.2e400 is refused as beyond a double's range, at /minimum" \
    sh -c "[ $? -eq 1 ] && grep -q 'beyond the range.* at /minimum' '$T/out'"
# Big numbers in the schema are compared exactly (issue 28): the matcher
# took only the double's spelling of an enum's 1.2e22, refused integer
# minimum 1.2e22 as empty, and cut 23-digit numbers under number minimum
# 1.2e22 at the 18th digit while the validator accepted them.
printf '%s' '12000000000000000000000' >"$T/b23.json"
printf '%s' '13000000000000000000000' >"$T/c23.json"
printf '%s' '11999999999999999999999' >"$T/a23.json"
"$S" check "${tok[@]}" --schema "$T/big_enum.json" "$T/b23.json" >"$T/out" 2>&1
check "check: enum 12000000000000000000000 takes the 23 digits (matcher and validator)" \
    sh -c "[ $? -eq 0 ] && grep -q 'matcher: *accepts' '$T/out'"
"$S" check "${tok[@]}" --schema "$T/big_enum.json" "$T/c23.json" >/dev/null 2>&1
check "check: another 23-digit number is refused by that enum" [ $? -eq 1 ]
printf '%s' '{"type": "integer", "minimum": 1.2e22}' >"$T/big_imin.json"
printf '%s' '{"type": "number", "minimum": 1.2e22}' >"$T/big_nmin.json"
for k in imin nmin; do
    "$S" check "${tok[@]}" --schema "$T/big_$k.json" "$T/c23.json" >"$T/out" 2>&1
    check "check: 13000000000000000000000 under $k 1.2e22 accepted by both" \
        sh -c "[ $? -eq 0 ] && grep -q 'matcher: *accepts' '$T/out' && grep -q 'validator: *accepts' '$T/out'"
    "$S" check "${tok[@]}" --schema "$T/big_$k.json" "$T/a23.json" >"$T/out" 2>&1
    check "check: 11999999999999999999999 under $k 1.2e22 refused by both" \
        sh -c "[ $? -eq 1 ] && grep -q 'matcher: *rejects' '$T/out' && grep -q 'validator: *rejects' '$T/out'"
done
# every command that reads a schema file reads big numbers (demo stands for
# chat, generate and extract: the same reader)
printf '{"type":"object","properties":{"n":{"type":"integer","maximum":9223372036854776000}},"required":["n"]}' >"$T/big_demo.json"
check "demo: a schema bound past int64 is read (was 'too big integer')" \
    sh -c "'$S' demo ${tok[*]} --schema '$T/big_demo.json' --seed 3 2>&1 | grep -q 'validator: valid'"
exit $((failed > 0))
