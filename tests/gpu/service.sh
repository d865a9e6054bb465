#!/usr/bin/env bash
# The service on the GPU: struxd --device cuda on a random model of
# Qwen3-0.6B's shapes, schema requests (grammar masks on) from
# schemas/samples/ at concurrency 1, 8 and 64 (256 with LEVELS), through
# nng over ipc with `strux call --batch --verify`.  Per level: requests,
# wall time, completion tokens/s in aggregate, decode tokens/s per sequence
# (1000 / mean tpot), TTFT p50/p99, and the GPU's time idle waiting on
# grammar masks (struxd's /metrics before and after the level: ms and % of
# GPU step time; goal < 5%); every answer validated on the client.
# Prints one `service:` line per level and writes service.json to $OUT.
#
# usage: tests/gpu/service.sh TOOLS_DIR MODELS_DIR [SECONDS]
#   TOOLS_DIR holds strux and struxd built with CUDA (make cuda: build/cuda;
#   make emu: build-emu, to try the script without a GPU -- slow).
# Env: LEVELS (default "1 8 64"), DEVICE (default cuda), MAX_TOKENS (64),
#   KV_TOKENS (default 262144), MAX_BATCH (struxd's, default 256), SHAPE (default 0.6b; tiny to try it on the
#   emulator), N (requests per level; default max(16, 2 x concurrency)).
set -uo pipefail
cd "$(dirname "$0")/../.."
TOOLS=${1:?tools dir}
MODELS=${2:?models dir}
LIMIT=${3:-240}
LEVELS=${LEVELS:-1 8 64}
DEV=${DEVICE:-cuda}
MAXT=${MAX_TOKENS:-64}
start=$(date +%s)
work=$(mktemp -d /tmp/strux-gpu-svc.XXXXXX)
spid=""
cleanup() {
    [ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

SHAPE=${SHAPE:-0.6b}
M="$MODELS/random-$SHAPE"
[ -f "$M/model.safetensors" ] || "$TOOLS/strux" model random --shape "$SHAPE" --seed 1 --out "$M" >/dev/null ||
    { echo "FAIL: cannot write $M"; exit 1; }
"$TOOLS/struxd" --model "$M" --device "$DEV" --listen "ipc://$work/s.ipc" --max-batch "${MAX_BATCH:-256}" \
    --max-queue 4096 --kv-tokens "${KV_TOKENS:-262144}" --http 127.0.0.1:0 --quiet 2>"$work/struxd.log" &
spid=$!
for _ in $(seq 1 1800); do
    grep -q '^struxd: ready' "$work/struxd.log" && break
    kill -0 "$spid" 2>/dev/null || { echo "FAIL: struxd exited:"; cat "$work/struxd.log"; exit 1; }
    sleep 0.1
done
grep -q '^struxd: ready' "$work/struxd.log" || { echo "FAIL: struxd not ready"; exit 1; }
grep '^struxd: model' "$work/struxd.log"
# /metrics for the time the GPU waits on grammar masks (engine/cuda/backend_cuda.cu)
http_port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/struxd.log" | head -1)
mask_wait() { # host_s gpu_idle_s gpu_busy_s masked_steps, from /metrics
    python3 - "$http_port" <<'PY'
import re, sys, urllib.request
try:
    t = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode()
except Exception:
    t = ""
g = lambda pat: float((re.search(pat, t) or [None, "0"])[1])
print(g(r'strux_mask_wait_seconds_total\{kind="host"\} (\S+)'),
      g(r'strux_mask_wait_seconds_total\{kind="gpu_idle"\} (\S+)'),
      g(r'strux_mask_wait_seconds_total\{kind="gpu_busy"\} (\S+)'),
      g(r'strux_masked_steps_total (\S+)'))
PY
}

fail=0
: >"$work/levels.jsonl"
for c in $LEVELS; do
    left=$(( LIMIT - ($(date +%s) - start) ))
    [ "$left" -lt 20 ] && { echo "service: c=$c SKIPPED (time)"; fail=1; continue; }
    n=${N:-$(( c * 2 < 16 ? 16 : c * 2 ))}
    python3 - "$n" "$MAXT" "$work/in.jsonl" <<'PY'
import glob, json, os, sys
n, max_tokens, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
docs = sorted(glob.glob("schemas/samples/*.txt"))
with open(out, "w") as f:
    for i in range(n):
        d = docs[i % len(docs)]
        schema = json.load(open("schemas/%s.json" % os.path.basename(d)[:-4]))
        f.write(json.dumps({"id": i, "schema": schema, "document": open(d).read(),
                            "max_tokens": max_tokens}) + "\n")
PY
    mw0=$(mask_wait)
    t0=$(date +%s.%N)
    timeout "$left" "$TOOLS/strux" call --addr "ipc://$work/s.ipc" --batch "$work/in.jsonl" \
        --out "$work/out.jsonl" --concurrency "$c" --no-progress --verify >"$work/call.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    mw1=$(mask_wait)
    [ $rc -ne 0 ] && { fail=1; tail -3 "$work/call.log"; }
    line=$(python3 - "$work/out.jsonl" "$c" "$t0" "$t1" "$rc" "$mw0" "$mw1" <<'PY'
import json, sys
try:
    rs = [json.loads(l) for l in open(sys.argv[1])]
except OSError:
    rs = []
c, wall, rc = int(sys.argv[2]), float(sys.argv[4]) - float(sys.argv[3]), int(sys.argv[5])
ok = [r for r in rs if r.get("ok")]
comp = sum(r.get("usage", {}).get("completion_tokens", 0) for r in ok)
tpot = [r["timing"]["tpot_ms"] for r in ok if r.get("timing", {}).get("tpot_ms")]
ttft = sorted(r["timing"]["ttft_ms"] for r in ok if "timing" in r)
pct = lambda v, q: v[min(len(v) - 1, int(q * len(v)))] if v else 0.0
d = {"concurrency": c, "requests": len(rs), "ok": len(ok), "rc": rc, "wall_s": round(wall, 2),
     "completion_tok_s": round(comp / wall, 1) if wall > 0 else 0,
     "decode_tok_s_per_seq": round(1000.0 / (sum(tpot) / len(tpot)), 1) if tpot else 0,
     "ttft_p50_ms": round(pct(ttft, 0.5), 1), "ttft_p99_ms": round(pct(ttft, 0.99), 1)}
# GPU waiting on masks over this level (goal: idle < 5% of step time)
m0, m1 = ([float(x) for x in a.split()] for a in sys.argv[6:8])
host, idle, busy, steps = (b - a for a, b in zip(m0, m1))
d.update({"masked_steps": int(steps), "mask_wait_host_ms": round(host * 1e3, 1),
          "gpu_idle_on_masks_ms": round(idle * 1e3, 1),
          "gpu_idle_on_masks_pct": round(100 * idle / (idle + busy), 2) if idle + busy > 0 else 0})
print(json.dumps(d))
PY
)
    echo "service: $line"
    echo "$line" >>"$work/levels.jsonl"
done
python3 -c 'import json, sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))' \
    "$work/levels.jsonl" >"$work/service.json"
[ -n "${OUT:-}" ] && cp "$work/service.json" "$OUT/service.json" && cp "$work/struxd.log" "$OUT/gpu_service_struxd.log"
cat "$work/service.json"
exit $fail
