#!/usr/bin/env python3
"""struxd beside llama.cpp's llama-server on the extraction job (issue 31 item 5).

    server_bench.py --struxd build/struxd --model DIR --llama-server BIN --gguf FILE \
        [--threads 2] [--concurrency 1,4,16] [--gen 9] [--max-tokens 128] [--out DIR]

Both servers are driven through their OpenAI-compatible /v1/chat/completions
with the same request bodies: the same messages, `response_format`
`{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}`,
temperature 0, `max_tokens`, and `chat_template_kwargs {"enable_thinking":
false}` (Qwen3's template without thinking, which is how strux renders it).
Each answer's `message.content` is parsed and checked by Python `jsonschema`
(the validator the schema's `$schema` names, draft 2020-12 by default); an
HTTP error, a cut answer or an invalid one counts as not valid.

Jobs
  extract   the nine sample documents of schemas/samples/ with their schemas
            plus GEN generated ones (a sample with every digit redrawn and a
            reference line first, seeded: same texts every run), each once,
            at concurrency C: C client threads take the next request as soon
            as their previous one is answered.  Prompt as strux's `document`
            request: a system turn with strux's extraction instruction and the
            schema, the document as the user turn.
  multi     "one document, several schemas": three sample documents (invoice,
            cv, meeting) under four schemas (invoice, contact_card, receipt,
            meeting), documents outer, one request at a time, in document-
            first order (instruction as the system turn, the document then the
            schema in the user turn), so that each document's later schemas
            can reuse its KV.  Run on strux with its prefix cache and with
            `--prefix-cache-gb 0`, and on llama-server (its prompt cache on).

Every (server, job, concurrency) gets a freshly started server (no cache
carried over from the previous level) and one warm-up request that shares no
prompt with the job.  llama-server runs with `--parallel C --cont-batching`
(C = the level's concurrency, at least 1), `-c 1024 * slots`, its default prompt cache
(`--cache-ram` 8192 MiB, `cache_prompt` on) and `--threads/--threads-batch`
as strux's `--threads`.  The order alternates per level (strux first at
levels 1 and 16, llama-server first at 4) so that a drift in the machine's
load falls on both.  Output: one JSON line per request in DIR/requests.jsonl,
one summary line per level in DIR/summary.jsonl (also printed).
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import jsonschema

INSTRUCTION = ("Extract the information in the user's document into one JSON value that conforms "
               "to the JSON Schema below. Use only facts stated in the document; where the "
               "document gives no value, use null if the schema allows it or leave an optional "
               "field out. Reply with the JSON value only.")
DOC_FIRST = ("Extract the information in the user's document into one JSON value that conforms "
             "to the JSON Schema given after it. Use only facts stated in the document; where the "
             "document gives no value, use null if the schema allows it or leave an optional "
             "field out. Reply with the JSON value only.")
MULTI_DOCS = ["invoice", "cv", "meeting"]
MULTI_SCHEMAS = ["invoice", "contact_card", "receipt", "meeting"]


def compact(s):
    return json.dumps(s, separators=(",", ":"), sort_keys=True)


def body(messages, schema, max_tokens):
    return {"model": "m", "messages": messages, "temperature": 0, "max_tokens": max_tokens,
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "extract", "schema": schema, "strict": True}},
            "chat_template_kwargs": {"enable_thinking": False}}


def samples(root):
    names = sorted(f[:-4] for f in os.listdir(os.path.join(root, "schemas/samples")) if f.endswith(".txt"))
    docs = {n: open(os.path.join(root, "schemas/samples", n + ".txt"), encoding="utf-8").read() for n in names}
    schemas = {n: json.load(open(os.path.join(root, "schemas", n + ".json"), encoding="utf-8"))
               for n in set(names) | set(MULTI_SCHEMAS)}
    return names, docs, schemas


def extract_job(names, docs, schemas, gen, max_tokens):
    rng = random.Random(31)
    items = [(n, n, docs[n]) for n in names]
    for i in range(gen):
        n = names[i % len(names)]
        text = re.sub(r"[0-9]", lambda m: str(rng.randrange(10)), docs[n])
        items.append((f"gen{i:03d}-{n}", n, f"Reference G-{i:05d}\n{text}"))
    return [(ident, sname, body([{"role": "system", "content": INSTRUCTION + "\n\nJSON Schema: " +
                                  compact(schemas[sname])},
                                 {"role": "user", "content": text}], schemas[sname], max_tokens))
            for ident, sname, text in items]


def multi_job(docs, schemas, max_tokens):
    return [(f"{d}/{s}", s, body([{"role": "system", "content": DOC_FIRST},
                                  {"role": "user", "content": docs[d] + "\n\nJSON Schema: " +
                                   compact(schemas[s])}], schemas[s], max_tokens))
            for d in MULTI_DOCS for s in MULTI_SCHEMAS]


def post(url, obj, timeout=1800):
    req = urllib.request.Request(url, data=json.dumps(obj).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read())
        except ValueError:
            return e.code, {}


def check(schema, content):
    try:
        v = json.loads(content)
    except (TypeError, ValueError):
        return False, "not JSON"
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    err = next(iter(cls(schema).iter_errors(v)), None)
    return err is None, (err.message[:160] if err else "")


def one(url, schemas, item):
    ident, sname, b = item
    t0 = time.monotonic()
    status, a = post(url + "/v1/chat/completions", b)
    ms = (time.monotonic() - t0) * 1000
    rec = {"id": ident, "schema": sname, "http": status, "ms": round(ms, 1)}
    if status != 200:
        rec.update(valid=False, error=json.dumps(a)[:300])
        return rec
    ch = a["choices"][0]
    u = a.get("usage", {})
    rec.update(finish=ch.get("finish_reason"), content=ch["message"].get("content"),
               prompt_tokens=u.get("prompt_tokens", 0), completion_tokens=u.get("completion_tokens", 0),
               cached_tokens=(u.get("prompt_tokens_details") or {}).get("cached_tokens", 0))
    if "timings" in a:  # llama-server: prompt_n = prompt tokens computed, cache_n = reused
        t = a["timings"]
        rec.update(prompt_n=t.get("prompt_n"), cache_n=t.get("cache_n"),
                   prompt_ms=t.get("prompt_ms"), predicted_ms=t.get("predicted_ms"))
    if isinstance(a.get("strux"), dict):  # strux's timing: queue, compile, ttft, tpot, total
        rec["timing"] = {k: v for k, v in a["strux"].items() if k.endswith("_ms")}
    rec["valid"], rec["why"] = check(schemas[sname], rec["content"])
    return rec


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def run_level(url, schemas, items, conc):
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=conc) as ex:
        recs = list(ex.map(lambda it: one(url, schemas, it), items))
    return recs, time.monotonic() - t0


def wait_ready(url, proc, log, limit=900):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if proc.poll() is not None:
            sys.exit(f"server exited ({proc.returncode}); see {log}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                if r.status == 200:
                    return time.monotonic() - t0
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.5)
    sys.exit(f"server not ready after {limit} s; see {log}")


def start(kind, a, conc, port, out, tag, prefix_cache=True):
    log = os.path.join(out, f"{tag}.log")
    if kind == "strux":
        cmd = [a.struxd, "--model", a.model, "--http", f"127.0.0.1:{port}", "--threads", str(a.threads),
               "--max-tokens", "4096", "--default-max-tokens", str(a.max_tokens), "--quiet",
               "--timeout", "600"]
        if a.int8:
            cmd.append("--int8")
        if not prefix_cache:
            cmd += ["--prefix-cache-gb", "0"]
    else:
        slots = max(conc, 1)
        cmd = [a.llama_server, "-m", a.gguf, "--host", "127.0.0.1", "--port", str(port),
               "-t", str(a.threads), "-tb", str(a.threads), "--parallel", str(slots), "--cont-batching",
               "-c", str(1024 * slots), "--metrics", "--no-webui"]
    f = open(log, "w")
    proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    load_s = wait_ready(url, proc, log)
    return proc, url, cmd, load_s


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def warm(url, max_tokens):
    s = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    post(url + "/v1/chat/completions", body([{"role": "user", "content": "Warm-up: say ok."}], s, 8))


def summarize(server, job, conc, recs, wall, extra):
    ok = [r for r in recs if r["valid"]]
    lat = [r["ms"] for r in recs]
    pt = sum(r.get("prompt_tokens", 0) for r in recs)
    cached = sum(r.get("cached_tokens", 0) for r in recs)
    computed = sum(r["prompt_n"] for r in recs if r.get("prompt_n") is not None) if server.startswith("llama") \
        else pt - cached
    s = {"server": server, "job": job, "concurrency": conc, "requests": len(recs), "valid": len(ok),
         "valid_share": round(len(ok) / len(recs), 4), "wall_s": round(wall, 2),
         "valid_docs_per_s": round(len(ok) / wall, 4),
         "p50_ms": round(pct(lat, 50)), "p99_ms": round(pct(lat, 99)),
         "prompt_tokens": pt, "cached_tokens": cached, "prompt_tokens_computed": computed,
         "completion_tokens": sum(r.get("completion_tokens", 0) for r in recs),
         "finish": {k: sum(1 for r in recs if r.get("finish") == k) for k in
                    sorted({str(r.get("finish")) for r in recs})},
         "http_errors": sum(1 for r in recs if r["http"] != 200)}
    if server.startswith("strux"):
        tm = [r["timing"] for r in recs if r.get("timing")]
        for k in ("queue_ms", "ttft_ms", "tpot_ms", "compile_ms"):
            v = [t[k] for t in tm if k in t]
            if v:
                s[k + "_p50"] = round(pct(v, 50), 1)
    s.update(extra)
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--struxd", default="build/struxd")
    ap.add_argument("--model", required=True)
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--int8", action="store_true", help="struxd --int8 (pair with a Q8_0 --gguf)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--gen", type=int, default=9)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--jobs", default="extract,multi")
    ap.add_argument("--servers", default="strux,llama", help="which servers to run (a subset for trials)")
    ap.add_argument("--port", type=int, default=18431)
    ap.add_argument("--out", default="bench/peers/llamacpp/work/server")
    ap.add_argument("--root", default=".")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    names, docs, schemas = samples(a.root)
    reqf = open(os.path.join(a.out, "requests.jsonl"), "a")
    sumf = open(os.path.join(a.out, "summary.jsonl"), "a")
    prec = "int8/Q8_0" if a.int8 else "bf16"

    def level(kind, job, items, conc, prefix_cache=True):
        if kind not in a.servers.split(","):
            return
        name = "strux" if kind == "strux" else "llama-server"
        if kind == "strux" and not prefix_cache:
            name = "strux (no prefix cache)"
        tag = f"{kind}-{job}-c{conc}" + ("" if prefix_cache else "-nopc")
        proc, url, cmd, load_s = start(kind, a, conc, a.port, a.out, tag, prefix_cache)
        try:
            warm(url, a.max_tokens)
            t = time.strftime("%H:%M:%S", time.gmtime())
            recs, wall = run_level(url, schemas, items, conc)
        finally:
            stop(proc)
        for r in recs:
            reqf.write(json.dumps({"server": name, "job": job, "concurrency": conc, **r}) + "\n")
        s = summarize(name, job, conc, recs, wall, {"precision": prec, "started_utc": t,
                                                     "load_s": round(load_s, 1), "cmd": " ".join(cmd)})
        line = json.dumps(s)
        print(line, flush=True)
        sumf.write(line + "\n")
        sumf.flush()
        reqf.flush()

    jobs = a.jobs.split(",")
    if "extract" in jobs:
        items = extract_job(names, docs, schemas, a.gen, a.max_tokens)
        for i, c in enumerate(int(x) for x in a.concurrency.split(",")):
            order = ("strux", "llama") if i % 2 == 0 else ("llama", "strux")
            for kind in order:
                level(kind, "extract", items, c)
    if "multi" in jobs:
        items = multi_job(docs, schemas, a.max_tokens)
        level("strux", "multi", items, 1)
        level("strux", "multi", items, 1, prefix_cache=False)
        level("llama", "multi", items, 1)


if __name__ == "__main__":
    main()
