#!/usr/bin/env bash
# Everything that needs a GPU, in one invocation (at most 8 minutes on an
# H200): build the CUDA library and test binary, then run, each group under
# its own time limit and all under one deadline,
#   kernels    every kernel against its CPU reference (max diffs printed)
#   mask       the grammar-mask kernel
#   refengine  the GPU engine against the kernels' references composed
#   engine     GPU engine vs CPU engine parity, tiny random model
#   service    struxd --device cuda on the 0.6B shape, schema requests at
#              concurrency 1/8/64: tok/s per sequence and in aggregate, TTFT,
#              the GPU's time idle waiting on grammar masks (ms and % of GPU
#              step time, from struxd's /metrics; goal < 5%)
#              (tests/gpu/service.sh; service.json)
#   bench      decode tokens/s (0.6B, 1.7B shapes), batched 8/64/256, TTFT 1k
#   engine-0.6b  parity on the 0.6B-shaped random model
#   sampler    the masked GPU sampler (parity, 10^6 draws, distribution)
# and write a summary (gpu_summary.txt, gpu_summary.json, one log per group)
# under $OUT when it is set.  No GPU: fails at once, before building.
#
# Env: BUILD (default build-gpu), MODELS (random models, reused between runs;
# default /tmp/strux-gpu-models), GPU_GROUPS (override the list, entries
# name:seconds), DEADLINE_S (default 470), STRUX_GPU_TESTS (a prebuilt test
# binary: skips the build; tests/gpu/emu builds one for trying this script
# without a GPU, together with a stand-in nvidia-smi on PATH), STRUX_GPU_TOOLS
# (strux and struxd with the CUDA backend for the service group; default
# $BUILD/cuda, built here; build-emu after `make emu`).
set -uo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
B=${BUILD:-build-gpu}
MODELS=${MODELS:-/tmp/strux-gpu-models}
DEADLINE=${DEADLINE_S:-470}
OUTDIR=${OUT:-}
WORK=$(mktemp -d /tmp/strux-gpu-run.XXXXXX)
[ -n "$OUTDIR" ] && mkdir -p "$OUTDIR"
elapsed() { echo $(( $(date +%s) - start )); }
say() { echo "[$(elapsed)s] $*"; }

# --- a GPU, or stop now -------------------------------------------------------
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "FATAL: no NVIDIA GPU visible (nvidia-smi missing or failing); GPU tests not run" >&2
    [ -n "$OUTDIR" ] && echo '{"ok": false, "error": "no GPU"}' > "$OUTDIR/gpu_summary.json"
    exit 1
fi
DEVICE=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)
say "GPU: $DEVICE"

# --- build --------------------------------------------------------------------
BIN=${STRUX_GPU_TESTS:-$B/strux_gpu_tests}
if [ -z "${STRUX_GPU_TESTS:-}" ]; then
NVCC_BIN=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
if [ -z "$NVCC_BIN" ]; then
    echo "FATAL: nvcc not found" >&2
    exit 1
fi
say "building ($B, $(nproc) jobs, $($NVCC_BIN --version | tail -1))"
if ! make --no-print-directory -j"$(nproc)" BUILD="$B" CUDA=1 \
        "$B/libstrux.a" "$B/libstrux_cuda.a" "$B/strux_gpu_tests" "$B/cuda/strux" "$B/cuda/struxd" \
        > "$WORK/build.log" 2>&1; then
    tail -40 "$WORK/build.log"
    echo "FATAL: CUDA build failed" >&2
    [ -n "$OUTDIR" ] && cp "$WORK/build.log" "$OUTDIR/gpu_build.log"
    exit 1
fi
say "built"
fi
mkdir -p "$MODELS"

# --- groups -------------------------------------------------------------------
# name:limit in seconds
DEFAULT_GROUPS="kernels:90 mask:20 refengine:60 engine:90 service:150 bench:200 engine-0.6b:120 sampler:150"
# strux and struxd with the CUDA backend, for the service group
TOOLS=${STRUX_GPU_TOOLS:-$B/cuda}
results=()
summary="$WORK/summary.txt"
: > "$summary"
fail=0
for entry in ${GPU_GROUPS:-$DEFAULT_GROUPS}; do
    g=${entry%%:*}
    lim=${entry#*:}
    [ "$lim" = "$entry" ] && lim=120
    left=$(( DEADLINE - $(elapsed) ))
    if [ "$left" -lt 15 ]; then
        say "SKIP $g: the deadline is reached"
        echo "$g: SKIPPED (deadline)" >> "$summary"
        results+=("\"$g\": {\"skipped\": true}")
        fail=1
        continue
    fi
    [ "$lim" -gt "$left" ] && lim=$left
    say "run $g (limit ${lim}s)"
    safe=$(printf '%s' "$g" | tr -c 'A-Za-z0-9._-' '_') # file names that travel anywhere
    json="$WORK/$safe.json"
    rm -f "$json"
    t0=$(date +%s)
    if [ "$g" = service ]; then
        OUT="$WORK" timeout -k 5 "$lim" bash tests/gpu/service.sh "$TOOLS" "$MODELS" "$lim" \
            > "$WORK/$safe.log" 2>&1
        rc=$?
        [ -s "$WORK/service.json" ] && mv "$WORK/service.json" "$json"
        sed -i 's/^service: /gpu: service /' "$WORK/$safe.log"
    else
        timeout -k 5 "$lim" "$BIN" --require-gpu --dir "$MODELS" --json "$json" "$g" \
            > "$WORK/$safe.log" 2>&1
        rc=$?
    fi
    dt=$(( $(date +%s) - t0 ))
    line=$(grep -E '^gpu: ' "$WORK/$safe.log" | tail -1)
    [ $rc -eq 124 ] && line="TIMEOUT after ${lim}s"
    say "$g: rc $rc in ${dt}s: $line"
    grep -E '^(FAIL|  |    |\||GPU|engine|kernels)' "$WORK/$safe.log" | head -60
    { echo "== $g (rc $rc, ${dt}s): $line"; grep -E '^(FAIL|  |    |\||GPU|engine|kernels|gpu: service)' "$WORK/$safe.log" | head -80; } >> "$summary"
    if [ $rc -ne 0 ]; then
        fail=1
        tail -20 "$WORK/$safe.log"
    fi
    if [ -s "$json" ]; then
        results+=("\"$g\": {\"rc\": $rc, \"seconds\": $dt, \"result\": $(cat "$json")}")
    else
        results+=("\"$g\": {\"rc\": $rc, \"seconds\": $dt, \"result\": null}")
    fi
done

total=$(elapsed)
{
    printf '{"device": "%s", "seconds": %d, "ok": %s, "groups": {' "$DEVICE" "$total" \
        "$([ $fail -eq 0 ] && echo true || echo false)"
    for i in "${!results[@]}"; do
        [ "$i" -gt 0 ] && printf ', '
        printf '%s' "${results[$i]}"
    done
    printf '}}\n'
} > "$WORK/summary.json"
{ echo "strux GPU run on $DEVICE: $([ $fail -eq 0 ] && echo PASS || echo FAIL) in ${total}s"; cat "$summary"; } \
    > "$WORK/summary.final.txt"
if [ -n "$OUTDIR" ]; then
    cp "$WORK/summary.final.txt" "$OUTDIR/gpu_summary.txt"
    cp "$WORK/summary.json" "$OUTDIR/gpu_summary.json"
    for f in "$WORK"/*.log; do cp "$f" "$OUTDIR/gpu_$(basename "$f")"; done
fi
echo
cat "$WORK/summary.final.txt" | head -5
say "done: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
rm -rf "$WORK"
exit $fail
