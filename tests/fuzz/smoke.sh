#!/usr/bin/env bash
# Runs each libFuzzer binary briefly over its seed corpus plus the committed
# regression inputs (tests/fuzz/regress/<name>/), which must not crash.
set -euo pipefail
# A fixed seed and run count keep CI reproducible; the time cap bounds it.
secs=${FUZZ_SECONDS:-25}
runs=${FUZZ_RUNS:-20000}
seed=${FUZZ_SEED:-1}
for bin in "$@"; do
    name=$(basename "$bin")
    seeds=tests/fuzz/corpus/$name regress=tests/fuzz/regress/$name
    work=$(mktemp -d)
    [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/ 2>/dev/null || true
    if [ -d "$regress" ] && [ -n "$(ls -A "$regress")" ]; then
        echo "fuzz $name: replaying $(ls "$regress" | wc -l) regression inputs"
        "$bin" -runs=0 "$regress"/* >/dev/null 2>&1 || { echo "fuzz $name: regression input crashed"; "$bin" -runs=0 "$regress"/*; exit 1; }
    fi
    echo "fuzz $name: seed $seed, $runs runs (at most ${secs}s)"
    "$bin" -seed="$seed" -runs="$runs" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$work/" "$work" >"$work/log" 2>&1 || {
        tail -30 "$work/log"; echo "fuzz $name: FAILED (artifact in $work)"; exit 1; }
    # the last status line (libFuzzer prints DONE only when time runs out)
    grep -E '^#[0-9]+' "$work/log" | tail -1 || true
    rm -rf "$work"
done
