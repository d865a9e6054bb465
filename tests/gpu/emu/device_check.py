#!/usr/bin/env python3
"""CI's device check: the CUDA backend, on the CPU emulation of tests/gpu/emu,
served by `struxd --device cuda`, against the CPU backend's server.

    device_check.py CPU_STRUXD EMU_STRUXD STRUX ROOT

Starts both servers on the tiny random model (written with STRUX) over HTTP,
and checks over every schema in ROOT/schemas:
  - greedy: ids (from `logprobs`) equal the CPU server's.  The GPU engine
    rounds GEMM inputs and the KV cache to bf16 (engine/cuda/engine_cuda.h),
    so its logits are not the CPU's bit for bit: ids may differ only at a
    position where the CPU's top two log-probs are within GAP_TOL of each
    other and the GPU took the CPU's runner-up.  The first differing
    position and the gap are printed either way;
  - temperature 1 under T1_SCHEMAS: every answer validates (Python
    jsonschema, on top of the server's own re-check);
  - labels: the same label and every score within SCORE_TOL;
  - beams (2, both returned): the CPU server's sequences, scores within
    SCORE_TOL;
  - n = 2 at temperature 1: both choices validate;
  - streaming (/v1/chat/completions, stream): several deltas that join to a
    document that validates.
Prints TAP (`ok N - ...`); exits 1 on any failure.  Requests go one at a
time to each server: on the emulator a step of one sequence costs ~0.3 s of
CPU, and batched steps cost far more than that per sequence (measured:
14 requests at once ran ~6 s of CPU a step), so batching only slows it.
"""
import concurrent.futures as cf
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

import jsonschema

GAP_TOL = 0.05     # log-prob units: bf16 rounding moves logits by ~1e-3 of their scale
SCORE_TOL = 0.02   # label probabilities and beam scores
MAX_TOKENS = 48    # enough for every schema's shortest document
T1_SCHEMAS = ("contact_card", "invoice", "topic_labels")
# CI's default (about a minute of CPU): greedy over two schemas, temperature 1
# through n = 2, labels, beams, streaming.  DEVICE_CHECK_FULL=1: greedy over
# every schema and temperature 1 over T1_SCHEMAS too (several minutes).
FULL = os.environ.get("DEVICE_CHECK_FULL") == "1"
QUICK_GREEDY = ("invoice", "sentiment_labels")
DOC = "ACME Corp, invoice 17 of 2026-01-05, total 42.50 EUR, due 2026-01-31. Contact Ada Lovelace."

# the prompt as messages: a `document` request puts the schema in the prompt, and a
# prefill of ~400 tokens costs more than the rest of a request on the emulator
MSG = [{"role": "user", "content": "Extract: " + DOC}]

n_checks = 0
n_failed = 0


def check(what, ok, note=None):
    global n_checks, n_failed
    n_checks += 1
    if note:
        for line in str(note).splitlines():
            print("# " + line)
    print("%s %d - %s" % ("ok" if ok else "not ok", n_checks, what))
    if not ok:
        n_failed += 1
    sys.stdout.flush()


def start(binary, model, device, tmp, name):
    log = open(os.path.join(tmp, name + ".log"), "w+")
    p = subprocess.Popen([binary, "--model", model, "--device", device, "--http", "127.0.0.1:0",
                          "--max-batch", "16", "--kv-tokens", "8192", "--timeout", "600"],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    for _ in range(600):
        log.seek(0)
        text = log.read()
        m = re.search(r"http://127\.0\.0\.1:(\d+)", text)
        if "struxd: ready" in text and m:
            return p, "http://127.0.0.1:%s" % m.group(1)
        if p.poll() is not None:
            break
        time.sleep(0.1)
    log.seek(0)
    raise SystemExit("not ok 1 - %s did not start: %s" % (name, log.read()[-500:]))


def cpu_s(p):
    f = open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def post(base, path, body, timeout=1200):  # generous: CI machines may be shared
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.read().decode()
    except urllib.error.HTTPError as e:
        return e.read().decode()


def strux(base, body):
    return json.loads(post(base, "/v1/strux", body))


def valid(schema, value):
    try:
        jsonschema.validate(value, schema)
        return True
    except jsonschema.ValidationError:
        return False


def ids_of(ans):
    return [t["id"] for t in ans.get("logprobs") or []]


def compare_greedy(cpu, gpu):
    """(ok, note): equal ids, or a near tie at the first difference."""
    a, b = ids_of(cpu), ids_of(gpu)
    if a == b:
        return True, "%d ids, all equal" % len(a)
    k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    tops = (cpu["logprobs"][k].get("top_logprobs") or []) if k < len(a) else []
    gap = tops[0]["logprob"] - tops[1]["logprob"] if len(tops) >= 2 else None
    took = b[k] if k < len(b) else None
    note = "first difference at position %d of %d/%d: cpu %s, cuda %s; cpu top-2 %s, gap %s " \
           "(tolerance %g)" % (k, len(a), len(b), a[k] if k < len(a) else "-", took,
                               [t["id"] for t in tops[:2]],
                               "%.4f" % gap if gap is not None else "n/a", GAP_TOL)
    ok = gap is not None and gap <= GAP_TOL and len(tops) >= 2 and took == tops[1]["id"]
    return ok, note


def main():
    cpu_bin, emu_bin, strux_bin, root = sys.argv[1:5]
    tmp = tempfile.mkdtemp(prefix="strux-emu-check.")
    model = os.path.join(tmp, "m")
    subprocess.run([strux_bin, "model", "random", "--shape", "tiny", "--seed", "5", "--out", model],
                   check=True, stdout=subprocess.DEVNULL)
    procs = []
    try:
        pc, cpu = start(cpu_bin, model, "cpu", tmp, "cpu")
        procs.append(pc)
        pg, gpu = start(emu_bin, model, "cuda", tmp, "cuda")
        procs.append(pg)
        check("emulated struxd --device cuda starts", True)
        run(cpu, gpu, root)
        print("# CPU seconds: emulated cuda server %.1f, cpu server %.1f" % (cpu_s(pg), cpu_s(pc)))
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run(["rm", "-rf", tmp])
    print("# %d checks, %d failed" % (n_checks, n_failed))
    return 1 if n_failed else 0


def run(cpu, gpu, root):
    sdir = os.path.join(root, "schemas")
    schemas = {}
    for f in sorted(os.listdir(sdir)):
        if f.endswith(".json"):
            with open(os.path.join(sdir, f)) as fh:
                schemas[f[:-5]] = json.load(fh)
    labels = ["positive", "negative", "neutral"]
    beam_req = {"schema": schemas["invoice"], "messages": MSG, "max_tokens": MAX_TOKENS,
                "num_beams": 2, "num_return_sequences": 2}
    n_req = {"schema": schemas["contact_card"], "messages": MSG, "max_tokens": MAX_TOKENS,
             "temperature": 1, "seed": 7, "n": 2}
    chat = {"messages": [{"role": "user", "content": "Extract the contact: " + DOC}],
            "max_tokens": MAX_TOKENS,
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "c", "schema": schemas["contact_card"]}}}

    # every request to each server at once, 8 in flight on each
    jobs = {}
    greedy = [n for n in schemas if FULL or n in QUICK_GREEDY]
    with cf.ThreadPoolExecutor(1) as ex, cf.ThreadPoolExecutor(1) as cx:
        for name in greedy:
            sc = schemas[name]
            g = {"schema": sc, "messages": MSG, "max_tokens": MAX_TOKENS, "logprobs": 2}
            jobs[("greedy", name, "cpu")] = cx.submit(strux, cpu, g)
            jobs[("greedy", name, "gpu")] = ex.submit(strux, gpu, g)
            if FULL and name in T1_SCHEMAS:
                t = {"schema": sc, "messages": MSG, "max_tokens": MAX_TOKENS, "temperature": 1,
                     "seed": 3}
                jobs[("t1", name, "gpu")] = ex.submit(strux, gpu, t)
        lab = {"choices": labels, "messages": MSG}
        for side, base, pool in (("cpu", cpu, cx), ("gpu", gpu, ex)):
            jobs[("labels", "", side)] = pool.submit(strux, base, lab)
            jobs[("beams", "", side)] = pool.submit(strux, base, beam_req)
        jobs[("n", "", "gpu")] = ex.submit(strux, gpu, n_req)
        jobs[("stream", "", "gpu")] = ex.submit(post, gpu, "/v1/chat/completions",
                                                dict(chat, stream=True))
        res = {k: f.result() for k, f in jobs.items()}

    for name in greedy:
        sc = schemas[name]
        a, b = res[("greedy", name, "cpu")], res[("greedy", name, "gpu")]
        if not (a.get("ok") and b.get("ok")):
            check("greedy under %s.json: both answer" % name, False,
                  "cpu %s / cuda %s" % (json.dumps(a)[:300], json.dumps(b)[:300]))
            continue
        ok, note = compare_greedy(a, b)
        check("greedy under %s.json: ids equal the CPU backend's" % name,
              ok and valid(sc, b["output"]), note)
    if FULL:
        bad = [n for n in T1_SCHEMAS if not (res[("t1", n, "gpu")].get("ok") and
                                             valid(schemas[n], res[("t1", n, "gpu")]["output"]))]
        check("temperature 1 under %s: every answer validates" % ", ".join(T1_SCHEMAS), not bad,
              "failed: %s" % bad if bad else None)

    a, b = res[("labels", "", "cpu")], res[("labels", "", "gpu")]
    sa, sb = a.get("scores") or {}, b.get("scores") or {}
    check("labels: the CPU server's label, scores within %g" % SCORE_TOL,
          a.get("ok") and b.get("ok") and a.get("output") == b.get("output") and sa.keys() == sb.keys()
          and all(abs(sa[k] - sb[k]) <= SCORE_TOL for k in sa),
          "cpu %s %s / cuda %s %s" % (a.get("output"), sa, b.get("output"), sb))

    a, b = res[("beams", "", "cpu")], res[("beams", "", "gpu")]
    ca, cb = a.get("choices") or [], b.get("choices") or []
    check("beams: the CPU server's sequences, scores within %g" % SCORE_TOL,
          a.get("ok") and b.get("ok") and len(ca) == len(cb) == 2
          and all(x["text"] == y["text"] and abs(x["score"] - y["score"]) <= SCORE_TOL
                  and valid(schemas["invoice"], y["output"]) for x, y in zip(ca, cb)),
          "cpu %s / cuda %s" % ([(c.get("text"), c.get("score")) for c in ca],
                                [(c.get("text"), c.get("score")) for c in cb]))

    n = res[("n", "", "gpu")]
    ch = n.get("choices") or []
    check("n = 2 at temperature 1: both choices validate",
          n.get("ok") and len(ch) == 2
          and all(valid(schemas["contact_card"], c["output"]) for c in ch),
          "choices %s %s" % ([c.get("text") for c in ch], json.dumps(n)[:200]))

    parts = []
    for line in res[("stream", "", "gpu")].splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            for c in json.loads(line[6:]).get("choices") or []:
                parts.append((c.get("delta") or {}).get("content") or "")
    streamed = "".join(parts)
    try:
        doc_ok = valid(schemas["contact_card"], json.loads(streamed))
    except ValueError:
        doc_ok = False
    check("streaming: %d chunks join to a document that validates" % len(parts),
          len(parts) > 1 and doc_ok, "streamed %r" % streamed[:300])

    # the masked steps ran on the device path, their mask wait measured
    def metric(base, name):
        m = re.search(r"^%s (\S+)$" % re.escape(name),
                      urllib.request.urlopen(base + "/metrics", timeout=60).read().decode(), re.M)
        return float(m.group(1)) if m else None
    steps = metric(gpu, "strux_masked_steps_total")
    busy = metric(gpu, 'strux_mask_wait_seconds_total{kind="gpu_busy"}')
    check("/metrics: masked steps on the device with their mask wait measured",
          (steps or 0) > 0 and busy is not None and metric(cpu, "strux_masked_steps_total") == 0,
          "emulated cuda: %s masked steps, %s s of forward passes" % (steps, busy))


if __name__ == "__main__":
    sys.exit(main())
