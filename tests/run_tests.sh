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
#
# STRUX_TEST_JOBS=N runs N tests at a time (default 1).  Most tests use one
# core, so on CI's two cores two at a time nearly halve the wall time.  A
# test's lines are printed together when it ends; tests named in
# tests/slow_first.txt start first, so the longest ones do not end the run
# alone.  Tests never share files (each makes its own temporary folder and
# server port), which is what makes this safe.
set -u
jobs=${STRUX_TEST_JOBS:-1}
case $jobs in ''|*[!0-9]*|0) echo "run_tests: STRUX_TEST_JOBS must be a positive integer (got '$jobs')" >&2; exit 2 ;; esac
here=$(dirname "$0")
work=$(mktemp -d /tmp/strux-run.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# the order: names in slow_first.txt (in its order) that were given, then the rest as given
order=()
if [ "$jobs" -gt 1 ] && [ -f "$here/slow_first.txt" ]; then
    while read -r slow _; do
        case $slow in ''|'#'*) continue ;; esac
        for t in "$@"; do [ "$(basename "$t")" = "$slow" ] && order+=("$t"); done
    done <"$here/slow_first.txt"
fi
for t in "$@"; do
    seen=0
    for o in "${order[@]+"${order[@]}"}"; do [ "$o" = "$t" ] && seen=1 && break; done
    [ $seen = 1 ] || order+=("$t")
done

# one test: its output, exit status and wall time in $work/I.{out,rc,ms}
run_one() {
    local i=$1 t=$2 t0 rc
    t0=$(date +%s%N)
    if [[ "$t" == *.sh ]]; then bash "$t" >"$work/$i.out" 2>&1; else "$t" >"$work/$i.out" 2>&1; fi
    rc=$?
    echo $(( ($(date +%s%N) - t0) / 1000000 )) >"$work/$i.ms"
    echo $rc >"$work/$i.rc.tmp" && mv "$work/$i.rc.tmp" "$work/$i.rc"
}

pass=0; fail=0; skipped=0; failed=(); times=()
# counts and prints the lines of test I, which has ended
report() {
    local i=$1 t=${order[$1]} name out rc ms p f s
    name=$(basename "$t"); out=$(cat "$work/$i.out"); rc=$(cat "$work/$i.rc"); ms=$(cat "$work/$i.ms")
    if [[ "$t" == *.sh ]]; then
        s=$(echo "$out" | grep -ciE '^ok .*# *skip')
        p=$(( $(echo "$out" | grep -c '^ok ') - s ))
        f=$(echo "$out" | grep -c '^not ok ')
        echo "$out" | grep -E '^(not )?ok |^# (path|skipped)' | sed "s|^|$name: |"
    else
        echo "$out" | grep -E '^\[  (FAILED|PASSED|  ERROR|SKIPPED) |^\[==========\] .*ran|^ *# (path|skipped)' |
            awk '!seen[$0]++' | sed "s|^ *|$name: |"   # cmocka lists skips twice
        p=$(echo "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
        f=$(echo "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
        s=$(echo "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -1)
    fi
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0})); skipped=$((skipped + ${s:-0}))
    # each test's wall time, so CI's budget can be spent where it matters
    times+=("$ms $name")
    echo "# time $name $(( ms / 1000 )).$(( ms % 1000 / 100 ))s"
    if [ "$rc" -ne 0 ]; then
        failed+=("$name")
        [ "${f:-0}" -eq 0 ] && fail=$((fail + 1))
        echo "---- last output of $name (exit $rc) ----"; echo "$out" | tail -40
    fi
}

t_start=$(date +%s)
next=0; running=(); total=${#order[@]}
while [ $next -lt $total ] || [ ${#running[@]} -gt 0 ]; do
    while [ $next -lt $total ] && [ ${#running[@]} -lt "$jobs" ]; do
        run_one $next "${order[$next]}" &
        running+=($next); next=$((next + 1))
    done
    if [ "$jobs" -gt 1 ]; then wait -n 2>/dev/null; else wait; fi
    still=()
    for i in "${running[@]}"; do
        if [ -f "$work/$i.rc" ]; then report "$i"; else still+=("$i"); fi
    done
    running=("${still[@]+"${still[@]}"}")
done
echo "slowest:" $(printf '%s\n' "${times[@]+"${times[@]}"}" | sort -rn | head -8 |
    awk '{ printf "%s%s %.1fs", (NR > 1 ? ", " : ""), $2, $1 / 1000 }')
[ "$jobs" -gt 1 ] && echo "# $total tests, $jobs at a time, in $(( $(date +%s) - t_start ))s"
[ ${#failed[@]} -gt 0 ] && echo "failing: ${failed[*]}"
echo "tests: $pass passed, $fail failed, $skipped skipped"
[ $fail -eq 0 ] && [ ${#failed[@]} -eq 0 ]
