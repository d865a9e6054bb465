#!/usr/bin/env python3
"""Extract JSON from every document in a folder, many requests in flight.

Run (server first):
    build/struxd --model MODEL_DIR --listen tcp://127.0.0.1:7400 &
    .venv/bin/python examples/extract_folder.py --addr tcp://127.0.0.1:7400 \
        --schema schemas/receipt.json --glob '*.txt' --out /tmp/receipts  DOCS_DIR

For each DOCS_DIR/NAME.txt this writes OUT/NAME.json (the extracted value)
or OUT/NAME.error.json (the server's error), then prints a summary.  Uses one
pynng REQ socket with a context per worker thread, so --concurrency requests
share one connection and the server batches them together.
"""
import argparse
import concurrent.futures as cf
import json
import pathlib
import sys
import threading
import time

import pynng


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--addr", default="tcp://127.0.0.1:7400")
    ap.add_argument("--schema", required=True)
    ap.add_argument("--glob", default="*.txt")
    ap.add_argument("--out", required=True)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=512)
    args = ap.parse_args()

    schema = json.loads(pathlib.Path(args.schema).read_text(encoding="utf-8"))
    docs = sorted(pathlib.Path(args.folder).glob(args.glob))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sock = pynng.Req0(dial=args.addr, resend_time=-1, recv_timeout=600_000)
    local = threading.local()

    def one(path):
        if not hasattr(local, "ctx"):
            local.ctx = sock.new_context()
        req = {"id": path.name, "schema": schema, "max_tokens": args.max_tokens,
               "document": path.read_text(encoding="utf-8", errors="replace")}
        local.ctx.send(json.dumps(req).encode())
        resp = json.loads(local.ctx.recv())
        if resp["ok"]:
            (out / (path.stem + ".json")).write_text(
                json.dumps(resp["output"], indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        else:
            (out / (path.stem + ".error.json")).write_text(json.dumps(resp) + "\n")
        return resp

    t0 = time.time()
    ok = 0
    with cf.ThreadPoolExecutor(args.concurrency) as pool:
        for i, resp in enumerate(pool.map(one, docs), 1):
            ok += resp["ok"]
            print(f"\r{i}/{len(docs)} done, {ok} ok", end="", file=sys.stderr)
    sock.close()
    dt = time.time() - t0
    print(f"\n{len(docs)} documents in {dt:.1f} s ({len(docs) / max(dt, 1e-9):.1f}/s), "
          f"{ok} extracted, {len(docs) - ok} errors -> {out}", file=sys.stderr)
    sys.exit(0 if ok == len(docs) else 1)


if __name__ == "__main__":
    main()
