#!/usr/bin/env bash
# Runs every test given on the command line -- cmocka binaries and CLI test
# scripts (tests/cli/test_*.sh, which print "ok"/"not ok" lines) -- then
# prints one closing line "tests: N passed, N failed".
set -u
pass=0; fail=0; failed=()
for t in "$@"; do
    name=$(basename "$t")
    if [[ "$t" == *.sh ]]; then
        out=$(bash "$t" 2>&1); rc=$?
        p=$(echo "$out" | grep -c '^ok ')
        f=$(echo "$out" | grep -c '^not ok ')
        echo "$out" | grep -E '^(not )?ok ' | sed "s|^|$name: |"
    else
        out=$("$t" 2>&1); rc=$?
        echo "$out" | grep -E '^\[  (FAILED|PASSED|  ERROR) |^\[==========\] .*ran' | sed "s|^|$name: |"
        p=$(echo "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
        f=$(echo "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    fi
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0}))
    if [ $rc -ne 0 ]; then
        failed+=("$name")
        [ "${f:-0}" -eq 0 ] && fail=$((fail + 1))
        echo "---- last output of $name (exit $rc) ----"; echo "$out" | tail -40
    fi
done
[ ${#failed[@]} -gt 0 ] && echo "failing: ${failed[*]}"
echo "tests: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ ${#failed[@]} -eq 0 ]
