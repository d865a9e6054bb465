#!/usr/bin/env bash
# A Spark job on 2 local struxd replicas (tiny random model) against the same
# requests sent by `strux call --batch` over the same replicas, side by side:
# rows/s of each, alternating, ROUNDS times; prints the medians and the ratio.
#   bench/spark.sh [ROWS] [ROUNDS]       (defaults 2000 3)
# Spark runs local[2] (2 Python workers, concurrency 16 each = 32 in flight,
# as `strux call --concurrency 32`); the timed part is the job's collect(),
# the session is started (and warmed by one small job) before.
# Needs build/ (make CUDA=0 all) and .venv with pyspark (make deps), and java.
set -eu
B=${STRUX_BUILD:-$PWD/build}
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
N=${1:-2000}
ROUNDS=${2:-3}
T=$(mktemp -d /tmp/strux-bspark.XXXXXX)
declare -A PID
cleanup() { for p in "${PID[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$T"; }
trap cleanup EXIT
export PYTHONPATH="$PWD/clients/python${PYTHONPATH:+:$PYTHONPATH}" PYSPARK_PYTHON="$PY" PYSPARK_DRIVER_PYTHON="$PY"
"$B/strux" model random --shape tiny --seed 1 --out "$T/model" >/dev/null 2>&1
start() {
    "$B/struxd" --model "$T/model" --threads 1 --listen "ipc://$T/$1.ipc" 2>"$T/$1.log" &
    PID[$1]=$!
    until grep -q "^struxd: ready" "$T/$1.log" 2>/dev/null; do sleep 0.1; done
}
start r1
start r2
cat >"$T/job.py" <<'PY'
# the same rows as tests/cli/spark_job.py's extract job, and the same requests as JSONL
import json, os, statistics, subprocess, sys, time, warnings
warnings.filterwarnings("ignore", category=FutureWarning)
from pyspark.sql import SparkSession, functions as F
from strux_client.spark import extract
T, N, ROUNDS, STRUX = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ADDRS = [f"ipc://{T}/r1.ipc", f"ipc://{T}/r2.ipc"]
ITEM = {"type": "object", "additionalProperties": False, "required": ["name", "n", "tag"],
        "properties": {"name": {"type": "string", "maxLength": 10},
                       "n": {"type": "integer", "minimum": 0, "maximum": 1000000},
                       "tag": {"enum": ["a", "b", "c"]},
                       "nums": {"type": "array", "items": {"type": "integer", "minimum": 0,
                                                            "maximum": 999}, "maxItems": 2}}}
OPTS = {"temperature": 1.0, "max_tokens": 32}
with open(f"{T}/in.jsonl", "w") as f:
    for i in range(N):
        f.write(json.dumps({"id": i, "schema": ITEM, "document": f"Item {i}: name x{i}, n {i * 7}",
                            "seed": i + 1, **OPTS}) + "\n")
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.driver.memory", "1g").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
df = (spark.range(N, numPartitions=8)
      .withColumn("doc", F.format_string("Item %d: name x%d, n %d", "id", "id", F.col("id") * 7))
      .withColumn("seed", F.col("id") + 1))
job = lambda d: extract(d, "doc", ITEM, addrs=ADDRS, keep=["id"], id_column="id",
                        seed_column="seed", options=OPTS, concurrency=16)
job(df.limit(40)).collect()  # start the Python workers, dial the replicas
sp, cl = [], []
for r in range(ROUNDS):
    t0 = time.monotonic()
    subprocess.run([STRUX, "call", "--addr", ADDRS[0], "--addr", ADDRS[1], "--batch", f"{T}/in.jsonl",
                    "--out", f"{T}/out.jsonl", "--concurrency", "32", "--no-progress"], check=True,
                   stderr=subprocess.DEVNULL)
    cl.append(N / (time.monotonic() - t0))
    t0 = time.monotonic()
    rows = job(df).collect()
    sp.append(N / (time.monotonic() - t0))
    errs = sum(r["error_code"] is not None for r in rows)
    assert len({r["id"] for r in rows}) == N == len(rows) and errs == 0, (len(rows), errs)
    print(f"round {r + 1}: strux call {cl[-1]:.1f} rows/s, spark {sp[-1]:.1f} rows/s", flush=True)
m_cl, m_sp = statistics.median(cl), statistics.median(sp)
print(f"median over {ROUNDS} rounds of {N} rows, 2 replicas: strux call --batch {m_cl:.1f} rows/s, "
      f"spark extract() {m_sp:.1f} rows/s, ratio spark/call {m_sp / m_cl:.2f}")
spark.stop()
PY
"$PY" "$T/job.py" "$T" "$N" "$ROUNDS" "$B/strux" 2>"$T/spark.log" || { tail -20 "$T/spark.log"; exit 1; }
