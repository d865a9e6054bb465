#!/usr/bin/env python3
"""Peer benchmark: Hugging Face `tokenizers` encode throughput, one thread.

Encodes every text of tests/fixtures/tokenizer_cases.jsonl one call at a time
with the full Qwen3 tokenizer (added tokens recognised, add_special_tokens=False),
RUNS times, and prints one JSON line:
  {"peer": "hf-tokenizers", "version": ..., "mb_per_s_median": ...,
   "runs": [MB/s, ...], "batch_mb_per_s_median": ..., "batch_runs": [...], ...}
MB/s is UTF-8 input bytes / 1e6 / wall seconds. The encode_batch figures are
for reference only: rayon is pinned to one thread, so batching buys no
parallelism, only less per-call overhead.
"""

import os

# Must be set before tokenizers is imported, or rayon sizes its pool first.
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import tokenizers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    shared = os.environ.get("STRUX_SHARED", os.path.join(ROOT, "..", "shared"))
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", default=os.path.join(shared, "qwen3-tokenizer", "tokenizer.json"))
    ap.add_argument("--cases", default=os.path.join(ROOT, "tests", "fixtures", "tokenizer_cases.jsonl"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()

    with open(args.cases, encoding="utf-8") as fh:
        texts = [json.loads(line)["text"] for line in fh if line.strip()]
    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    tok = Tokenizer.from_file(args.tokenizer)

    # warm-up: first calls pay for lazy cache fills
    ntok = sum(len(tok.encode(t, add_special_tokens=False).ids) for t in texts)

    runs = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        for t in texts:
            tok.encode(t, add_special_tokens=False)
        runs.append(nbytes / 1e6 / (time.perf_counter() - t0))

    batch_runs = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        tok.encode_batch(texts, add_special_tokens=False)
        batch_runs.append(nbytes / 1e6 / (time.perf_counter() - t0))

    print(json.dumps({
        "peer": "hf-tokenizers",
        "version": tokenizers.__version__,
        "mb_per_s_median": round(statistics.median(runs), 3),
        "runs": [round(x, 3) for x in runs],
        "batch_mb_per_s_median": round(statistics.median(batch_runs), 3),
        "batch_runs": [round(x, 3) for x in batch_runs],
        "threads": 1,
        "texts": len(texts),
        "bytes": nbytes,
        "tokens": ntok,
    }))


if __name__ == "__main__":
    main()
