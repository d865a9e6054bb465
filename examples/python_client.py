#!/usr/bin/env python3
"""Extract JSON from one document with struxd over nng, from Python (pynng).

Run (server first):
    build/struxd --model MODEL_DIR --listen tcp://127.0.0.1:7400 &
    .venv/bin/pip install pynng          # already in the repo venv
    .venv/bin/python examples/python_client.py tcp://127.0.0.1:7400 \
        schemas/invoice.json schemas/samples/invoice.txt

Prints the extracted JSON (validated by the server against the schema) and
the timings.  Exit status 1 when the server answers an error.
"""
import json
import sys

import pynng


def call(addr, request, timeout_ms=120_000):
    # resend_time=-1: never let REQ resend (that would run the model twice)
    with pynng.Req0(dial=addr, resend_time=-1, recv_timeout=timeout_ms) as sock:
        sock.send(json.dumps(request).encode())
        return json.loads(sock.recv())


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    addr, schema_path, doc_path = sys.argv[1:]
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    with open(doc_path, encoding="utf-8") as f:
        document = f.read()
    resp = call(addr, {"id": doc_path, "schema": schema, "document": document, "max_tokens": 512})
    if not resp["ok"]:
        err = resp["error"]
        print(f"error {err['code']}: {err['message']} at {err.get('pointer', '')}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(resp["output"], indent=2, ensure_ascii=False))
    t = resp["timing"]
    print(f"# {resp['usage']['completion_tokens']} tokens, ttft {t['ttft_ms']} ms, "
          f"total {t['total_ms']} ms, finish {resp['finish_reason']}", file=sys.stderr)


if __name__ == "__main__":
    main()
