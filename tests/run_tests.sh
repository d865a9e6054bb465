#!/usr/bin/env bash
# Runs every test given on the command line -- cmocka binaries and CLI test
# scripts (tests/cli/test_*.sh, which print TAP "ok"/"not ok" lines) -- then
# prints one closing line "tests: N passed, N failed, N skipped".
#
# A skip is not a pass: a TAP line "ok N - what # SKIP why" (any case of
# "# skip") counts as skipped, and so does a cmocka test that called skip()
# (its "[  SKIPPED ] N test(s)" summary).  Lines starting "# path" or
# "# skipped" (the CPU branch a test took, or why it did not run) are shown
# beside the verdicts so a green run says what it checked.
set -u
pass=0; fail=0; skipped=0; failed=(); times=()
for t in "$@"; do
    name=$(basename "$t")
    t0=$(date +%s%N)
    if [[ "$t" == *.sh ]]; then
        out=$(bash "$t" 2>&1); rc=$?
        s=$(echo "$out" | grep -ciE '^ok .*# *skip')
        p=$(( $(echo "$out" | grep -c '^ok ') - s ))
        f=$(echo "$out" | grep -c '^not ok ')
        echo "$out" | grep -E '^(not )?ok |^# (path|skipped)' | sed "s|^|$name: |"
    else
        out=$("$t" 2>&1); rc=$?
        echo "$out" | grep -E '^\[  (FAILED|PASSED|  ERROR|SKIPPED) |^\[==========\] .*ran|^ *# (path|skipped)' |
            awk '!seen[$0]++' | sed "s|^ *|$name: |"   # cmocka lists skips twice
        p=$(echo "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
        f=$(echo "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
        s=$(echo "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -1)
    fi
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0})); skipped=$((skipped + ${s:-0}))
    # each test's wall time, so CI's budget can be spent where it matters
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    times+=("$ms $name")
    echo "# time $name $(( ms / 1000 )).$(( ms % 1000 / 100 ))s"
    if [ $rc -ne 0 ]; then
        failed+=("$name")
        [ "${f:-0}" -eq 0 ] && fail=$((fail + 1))
        echo "---- last output of $name (exit $rc) ----"; echo "$out" | tail -40
    fi
done
echo "slowest:" $(printf '%s\n' "${times[@]}" | sort -rn | head -8 |
    awk '{ printf "%s%s %.1fs", (NR > 1 ? ", " : ""), $2, $1 / 1000 }')
[ ${#failed[@]} -gt 0 ] && echo "failing: ${failed[*]}"
echo "tests: $pass passed, $fail failed, $skipped skipped"
[ $fail -eq 0 ] && [ ${#failed[@]} -eq 0 ]
