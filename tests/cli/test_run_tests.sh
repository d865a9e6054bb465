#!/usr/bin/env bash
# tests/run_tests.sh counts what it is told: TAP "ok" lines as passed,
# "ok ... # SKIP" (any case) as skipped, "not ok" as failed; cmocka's
# PASSED / FAILED / SKIPPED summaries likewise; a test that exits non-zero
# without a failing line is one failure; the "# path" / "# skipped" notes
# are shown.  Fed made-up tests (a TAP script and a cmocka-like program).
set -u
T=$(mktemp -d /tmp/strux-run-tests.XXXXXX)
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

cat >"$T/test_tap.sh" <<'EOF'
echo "ok 1 - runs"
echo "ok 2 - needs a CPU it lacks # SKIP no AVX-512"
echo "ok 3 - lower case # skip no torch"
echo "# path avx2"
echo "ok 4 - a SKIP in the text is no skip"
EOF
cat >"$T/test_cmocka" <<'EOF'
#!/bin/sh
echo "[==========] Running 4 test(s)."
echo "# path scalar"
echo "# skipped: no amx path on this CPU"
echo "[  SKIPPED ] amx_path"
echo "[==========] 4 test(s) run."
echo "[  PASSED  ] 2 test(s)."
echo "[  SKIPPED ] 2 test(s), listed below:"
echo "[  SKIPPED ] amx_path"
echo "[  SKIPPED ] avx512_path"
EOF
chmod +x "$T/test_cmocka"
cat >"$T/test_fail.sh" <<'EOF'
echo "ok 1 - fine"
echo "not ok 2 - broken"
exit 1
EOF
cat >"$T/test_crash.sh" <<'EOF'
echo "ok 1 - fine until it died"
exit 3
EOF

bash tests/run_tests.sh "$T/test_tap.sh" "$T/test_cmocka" >"$T/ok.out" 2>&1
rc=$?
check "passes, skips and cmocka counts apart: 4 passed, 0 failed, 4 skipped" sh -c \
    "[ $rc = 0 ] && tail -1 '$T/ok.out' | grep -qx 'tests: 4 passed, 0 failed, 4 skipped' ||
     { sed 's/^/# /' '$T/ok.out'; false; }"
check "the branch notes are shown" sh -c \
    "grep -q '^test_tap.sh: # path avx2' '$T/ok.out' && grep -q '^test_cmocka: # skipped: no amx path' '$T/ok.out'"
check "cmocka's skipped list is shown once" \
    [ "$(grep -c '^test_cmocka: \[  SKIPPED \] amx_path' "$T/ok.out")" = 1 ]
bash tests/run_tests.sh "$T/test_tap.sh" "$T/test_fail.sh" "$T/test_crash.sh" >"$T/bad.out" 2>&1
rc=$?
check "a not ok and a crash: 4 passed, 2 failed, 2 skipped, exit 1, both named" sh -c \
    "[ $rc = 1 ] && tail -1 '$T/bad.out' | grep -qx 'tests: 4 passed, 2 failed, 2 skipped' &&
     grep -qx 'failing: test_fail.sh test_crash.sh' '$T/bad.out' || { sed 's/^/# /' '$T/bad.out'; false; }"
check "each test's wall time, and the slowest named" sh -c \
    "grep -qE '^# time test_cmocka [0-9]+\\.[0-9]s$' '$T/ok.out' &&
     grep -qE '^slowest: test_(tap.sh|cmocka) [0-9.]+s, test_(tap.sh|cmocka) [0-9.]+s$' '$T/ok.out'"

# two at a time: the same counts; and the two really overlap -- test_wait
# waits (at most 20 s) for a file that test_mark, started beside it, writes,
# so run one at a time it fails
STRUX_TEST_JOBS=2 bash tests/run_tests.sh "$T/test_tap.sh" "$T/test_fail.sh" "$T/test_crash.sh" \
    "$T/test_cmocka" >"$T/par.out" 2>&1
rc=$?
check "STRUX_TEST_JOBS=2: the same counts (6 passed, 2 failed, 4 skipped), both failures named" sh -c \
    "[ $rc = 1 ] && tail -1 '$T/par.out' | grep -qx 'tests: 6 passed, 2 failed, 4 skipped' &&
     grep -q '^failing: .*test_fail.sh' '$T/par.out' && grep -q '^failing: .*test_crash.sh' '$T/par.out' &&
     [ \"\$(grep -c '^# time ' '$T/par.out')\" = 4 ] || { sed 's/^/# /' '$T/par.out'; false; }"
cat >"$T/test_wait.sh" <<EOF2
for i in \$(seq 200); do [ -f "$T/mark" ] && { echo "ok 1 - saw the mark"; exit 0; }; sleep 0.1; done
echo "not ok 1 - no mark"
EOF2
cat >"$T/test_mark.sh" <<EOF2
touch "$T/mark"; echo "ok 1 - marked"
EOF2
STRUX_TEST_JOBS=2 bash tests/run_tests.sh "$T/test_wait.sh" "$T/test_mark.sh" >"$T/overlap.out" 2>&1
rc=$?
check "STRUX_TEST_JOBS=2 runs two tests at once" sh -c \
    "[ $rc = 0 ] && tail -1 '$T/overlap.out' | grep -qx 'tests: 2 passed, 0 failed, 0 skipped' ||
     { sed 's/^/# /' '$T/overlap.out'; false; }"
STRUX_TEST_JOBS=x bash tests/run_tests.sh "$T/test_tap.sh" >"$T/badjobs.out" 2>&1
rc=$?
check "a bad STRUX_TEST_JOBS is a usage error (exit 2), not a silent serial run" sh -c \
    "[ $rc = 2 ] && grep -q 'STRUX_TEST_JOBS must be a positive integer' '$T/badjobs.out'"
[ $failed -eq 0 ]
