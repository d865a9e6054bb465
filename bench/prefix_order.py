#!/usr/bin/env python3
"""Which prompt order lets "one document, several schemas" share more KV?

    bench/prefix_order.py --addr ipc:///tmp/s.ipc DOC.txt ... --schema A.json --schema B.json ...

Sends every document under every schema to a running struxd (native route,
greedy, max_tokens 96) twice, in two prompt orders, and sums usage
cached_tokens against prompt_tokens:

  schema-first  strux's default `document` request: the system turn holds
                the instruction and the schema, the user turn the document
  doc-first     `messages`: the same instruction as a system turn, then the
                document, then the schema in the user turn after it

Requests go one at a time, documents outer and schemas inner, so each
schema's request finds the earlier ones in the prefix cache.  Uses pynng
(tests/requirements-test.txt).  Dev-time only: the figure depends on the
documents' and schemas' lengths, not on the model's weights.
"""
import argparse
import json

import pynng

INSTRUCTION = ("Extract the information in the user's document into one JSON value that conforms "
               "to the JSON Schema given after it. Use only facts stated in the document; where the "
               "document gives no value, use null if the schema allows it or leave an optional "
               "field out. Reply with the JSON value only.")


def run(sock, reqs):
    prompt = cached = 0
    for r in reqs:
        sock.send(json.dumps(r).encode())
        a = json.loads(sock.recv())
        assert a.get("ok"), a
        prompt += a["usage"]["prompt_tokens"]
        cached += a["usage"].get("cached_tokens", 0)
    return prompt, cached


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", required=True)
    ap.add_argument("--schema", action="append", required=True)
    ap.add_argument("docs", nargs="+")
    a = ap.parse_args()
    schemas = [json.load(open(s)) for s in a.schema]
    docs = [open(d).read() for d in a.docs]
    with pynng.Req0(dial=a.addr, recv_timeout=600000) as sock:
        first = [{"schema": s, "document": d, "max_tokens": 96} for d in docs for s in schemas]
        doc_first = [{"schema": s, "max_tokens": 96, "messages": [
            {"role": "system", "content": INSTRUCTION},
            {"role": "user", "content": d + "\n\nJSON Schema: " +
             json.dumps(s, separators=(",", ":"), sort_keys=True)}]}
            for d in docs for s in schemas]
        for name, reqs in (("schema-first", first), ("doc-first", doc_first)):
            p, c = run(sock, reqs)
            print(f"{name:13s} {len(reqs)} requests: prompt {p} tokens, {c} from the prefix cache "
                  f"({100.0 * c / p:.1f}%), {p - c} prefilled")


if __name__ == "__main__":
    main()
