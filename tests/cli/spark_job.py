"""The Spark side of tests/cli/test_spark.sh: jobs over strux_client.spark, then their checks.

    spark_job.py STATE_DIR FIRST_TEST_NUMBER ADDR...

Runs, in one local Spark session (local[2]):
  1. extract(): N rows (STRUX_SPARK_ROWS, default 2000) into a struct column;
     the shell kills and restarts a replica while this runs (it waits for
     STATE_DIR/extract.started);
  2. classify(): N/4 rows, label + scores;
  3. extract(output="string"): N/10 rows, the JSON text validated as is;
  4. error rows: a schema struxd refuses, and null documents: the job
     completes with error rows; raise_on_error=True fails it.
Prints one TAP line per check ("ok K - ..."), numbered from FIRST_TEST_NUMBER,
and the rows/s of job 1 as "# extract: ...".  Exit 1 when a check failed.
"""
import json
import os
import sys
import time
import warnings

import jsonschema

warnings.filterwarnings("ignore", category=FutureWarning)  # pyspark on pandas 3

from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from strux_client.spark import classify, extract, spark_type  # noqa: E402

STATE, FIRST, ADDRS = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
N = int(os.environ.get("STRUX_SPARK_ROWS", "2000"))

ITEM = {"type": "object", "additionalProperties": False, "required": ["name", "n", "tag"],
        "properties": {"name": {"type": "string", "maxLength": 10},
                       "n": {"type": "integer", "minimum": 0, "maximum": 1000000},
                       "tag": {"enum": ["a", "b", "c"]},
                       "nums": {"type": "array", "items": {"type": "integer", "minimum": 0,
                                                            "maximum": 999}, "maxItems": 2}}}
LABELS = ["red", "green", "blue"]

num = FIRST - 1
failed = 0


def check(what, cond):
    global num, failed
    num += 1
    print(f"{'ok' if cond else 'not ok'} {num} - {what}", flush=True)
    failed += 0 if cond else 1


def valid(value, schema):
    try:
        jsonschema.validate(value, schema)
        return True
    except jsonschema.ValidationError as e:
        print(f"# invalid: {value!r}: {e.message}", file=sys.stderr)
        return False


def from_struct(row):
    """The JSON value of a struct row: absent optional members come back as nulls."""
    return {k: v for k, v in row.asDict(recursive=True).items() if v is not None}


def answered_once(rows, n):
    ids = [r["id"] for r in rows]
    return len(ids) == n and sorted(ids) == list(range(n))


spark = (SparkSession.builder.master("local[2]").appName("strux-spark-test")
         .config("spark.ui.enabled", "false").config("spark.driver.memory", "1g")
         .config("spark.sql.shuffle.partitions", "4")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")


def docs(n, parts):
    return (spark.range(n, numPartitions=parts)
            .withColumn("doc", F.format_string("Item %d: name x%d, n %d", "id", "id", F.col("id") * 7))
            .withColumn("seed", F.col("id") + 1))


# ---- 1. extract into a struct column while a replica is killed and restarted ---------------
st = spark_type(ITEM)
check("spark_type: struct<name string, n bigint, tag string, nums array<bigint>>",
      st.simpleString() == "struct<name:string,n:bigint,tag:string,nums:array<bigint>>")
out = extract(docs(N, 8), "doc", ITEM, addrs=ADDRS, id_column="id", seed_column="seed",
              options={"temperature": 1.0, "max_tokens": 32}, concurrency=16,
              client_options={"timeout": 30, "retries": 5})
open(os.path.join(STATE, "extract.started"), "w").close()
t0 = time.monotonic()
rows = out.collect()
wall = time.monotonic() - t0
print(f"# extract: {N} rows in {wall:.1f} s, {N / wall:.1f} rows/s (local[2], {len(ADDRS)} replicas)",
      flush=True)
with open(os.path.join(STATE, "extract.done"), "w") as f:
    f.write(f"{N} {wall:.2f}\n")
check(f"extract: every one of {N} rows answered exactly once (ids)", answered_once(rows, N))
errs = [(r["id"], r["error_code"], r["error_message"]) for r in rows if r["error_code"] is not None]
check(f"extract: no error rows through the kill ({len(errs)}: {errs[:3]})", not errs)
check("extract: kept columns unchanged (doc, seed)",
      all(r["doc"].startswith(f"Item {r['id']}:") and r["seed"] == r["id"] + 1 for r in rows))
bad = [r["id"] for r in rows if r["output"] is None or not valid(from_struct(r["output"]), ITEM)]
check(f"extract: every output valid under jsonschema ({len(bad)} not: {bad[:5]})", not bad)

# ---- 2. classification with label scores -----------------------------------------------------
NC = max(40, N // 10)
lab = classify(docs(NC, 4), "doc", LABELS, addrs=ADDRS, keep=["id"], options={"max_tokens": 8})
check("classify: columns id, label, scores (map<string,double>), error columns",
      lab.schema.simpleString() == "struct<id:bigint,label:string,scores:map<string,double>,"
      "error_code:string,error_message:string,error_pointer:string>")
t0 = time.monotonic()
crow = lab.collect()
print(f"# classify: {NC} rows in {time.monotonic() - t0:.1f} s", flush=True)
check(f"classify: every one of {NC} rows answered exactly once, no error rows",
      answered_once(crow, NC) and all(r["error_code"] is None for r in crow))
check("classify: every label in the set; scores over all labels summing to 1 (1e-6); "
      "label = the top score at temperature 0",
      all(r["label"] in LABELS and sorted(r["scores"]) == sorted(LABELS)
          and abs(sum(r["scores"].values()) - 1) < 1e-6
          and r["scores"][r["label"]] == max(r["scores"].values()) for r in crow))

# ---- 3. the JSON text, exactly as generated --------------------------------------------------
NS = max(20, N // 10)
t0 = time.monotonic()
srows = extract(docs(NS, 2), "doc", ITEM, addrs=ADDRS, output="string", keep=["id"],
                seed_column="seed", options={"temperature": 1.0, "max_tokens": 32}).collect()
print(f"# extract(output='string'): {NS} rows in {time.monotonic() - t0:.1f} s", flush=True)
check(f"extract(output='string'): {NS} rows once each, every text valid JSON under the schema",
      answered_once(srows, NS) and all(r["error_code"] is None and valid(json.loads(r["output"]), ITEM)
                                       for r in srows))
same = {r["id"]: r for r in rows}
agree = sum(json.loads(r["output"]) == from_struct(same[r["id"]]["output"]) for r in srows)
# same seed, same answer, whatever replica and batch (batch-invariant forward pass)
check(f"string and struct outputs of the same seeded rows agree ({agree} of {NS})", agree == NS)

# ---- 4. errors are rows, not a failed job, unless asked ----------------------------------------
BAD = {"type": "string", "pattern": "(a)\\1"}
df = docs(10, 2).withColumn("doc", F.when(F.col("id") % 5 == 4, F.lit(None)).otherwise(F.col("doc")))
erows = extract(df, "doc", BAD, addrs=ADDRS, output="string", keep=["id"]).collect()
by = {r["id"]: r for r in erows}
check("a schema struxd refuses: error rows (schema_unsupported at /schema/pattern), the job completes",
      answered_once(erows, 10) and all(
          r["output"] is None and r["error_message"]
          and (r["error_code"], r["error_pointer"]) == ("schema_unsupported", "/schema/pattern")
          for i, r in by.items() if i % 5 != 4))
check("a null document: error row bad_request at /document, no request sent",
      all((by[i]["error_code"], by[i]["error_pointer"]) == ("bad_request", "/document") for i in (4, 9)))
try:
    extract(df, "doc", BAD, addrs=ADDRS, raise_on_error=True, keep=["id"]).collect()
    raised = ""
except Exception as e:  # Spark wraps the worker's StruxError
    raised = str(e)
check("raise_on_error=True fails the job with the StruxError",
      "schema_unsupported: " in raised and "/schema/pattern" in raised)

spark.stop()
sys.exit(1 if failed else 0)
