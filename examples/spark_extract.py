#!/usr/bin/env python3
"""A Spark job that sends every document of a folder to strux replicas (strux_client.spark).

Run (replicas first; pyspark, pyarrow and java installed: `make deps`):
    build/struxd --model MODEL_DIR --listen tcp://127.0.0.1:7400 &
    build/struxd --model MODEL_DIR --listen tcp://127.0.0.1:7401 &
    PYTHONPATH=clients/python PYSPARK_PYTHON=.venv/bin/python .venv/bin/python \\
        examples/spark_extract.py --addr tcp://127.0.0.1:7400 --addr tcp://127.0.0.1:7401 \\
        --schema schemas/invoice.json --out /tmp/invoices 'schemas/samples/*.txt'
    # label classification with the label scores, labels from a schema's enum:
    ...  examples/spark_extract.py --addr ... --labels schemas/sentiment_labels.json \\
        --out /tmp/sentiment 'schemas/samples/*.txt'

Each file is one document (one row: `path`, `text`).  The result, one JSON
line per document, goes to OUT (Spark's part files): `path`, `output` (a
struct derived from the schema; `--string`: the JSON text exactly as
generated) or `label` + `scores`, and `error_code`/`error_message`/
`error_pointer` on a row whose request failed -- a failed row never fails the
job.  On a cluster, give `--master` and addresses every executor can reach;
each Python worker holds one client dialled to all replicas.
"""
import argparse
import json
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from strux_client.spark import classify, extract


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("docs", help="files to read, one document each (a path or a glob)")
    ap.add_argument("--addr", action="append", required=True, help="a struxd replica (repeat)")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--schema", help="JSON Schema file: extraction")
    what.add_argument("--labels", help="file of a JSON list of labels, or a schema with an enum")
    ap.add_argument("--string", action="store_true", help="output as JSON text, not a struct")
    ap.add_argument("--out", required=True, help="output folder (JSON lines)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--concurrency", type=int, default=16, help="requests in flight per worker")
    args = ap.parse_args()

    spark = (SparkSession.builder.master(args.master).appName("strux-extract")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    docs = (spark.read.text(args.docs, wholetext=True).withColumnRenamed("value", "text")
            .withColumn("path", F.input_file_name()))
    common = dict(addrs=args.addr, keep=["path"], concurrency=args.concurrency,
                  options={"max_tokens": args.max_tokens})
    if args.schema:
        with open(args.schema, encoding="utf-8") as f:
            schema = json.load(f)
        result = extract(docs, "text", schema, output="string" if args.string else "struct",
                         **common)
    else:
        with open(args.labels, encoding="utf-8") as f:
            labels = json.load(f)
        result = classify(docs, "text", labels["enum"] if isinstance(labels, dict) else labels,
                          **common)
    result = result.cache()
    result.write.mode("overwrite").json(args.out)
    counts = result.groupBy("error_code").count().collect()
    for row in sorted(counts, key=lambda r: r["error_code"] or ""):
        print(f"{row['error_code'] or 'answered'}: {row['count']}")
    for row in result.where("error_code IS NULL").limit(3).collect():
        print(json.dumps(row.asDict(recursive=True), ensure_ascii=False)[:300])
    print(f"results in {args.out}", file=sys.stderr)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
