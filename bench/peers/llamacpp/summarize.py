#!/usr/bin/env python3
"""Tables for bench/peers/llamacpp/run.sh.

  summarize.py tables RESULTS_DIR
      markdown tables (speed medians over rounds with per-round ratios, perplexity/KL, grammar)
  summarize.py strux-gen SCHEMA RC STDOUT STDERR
      one JSON line for a `strux generate --schema` run (its stderr timings; the reply checked
      with Python jsonschema here, as llama.cpp's replies are)
"""
import glob
import json
import os
import re
import statistics
import sys

STRUX_MODES = ["bf16", "int8", "q4"]
LLAMA_MODELS = ["bf16", "q8_0", "q4_0", "q4_k_m"]
# strux mode <-> llama.cpp type at the matching precision
PAIRS = [("bf16", "bf16"), ("int8", "q8_0"), ("q4", "q4_0"), ("q4", "q4_k_m")]


def strux_gen(schema, rc, out, err):
    import jsonschema
    e = open(err, encoding="utf-8", errors="replace").read()
    reply = open(out, encoding="utf-8", errors="replace").read().strip()
    row = {"engine": "strux", "schema": schema, "rc": int(rc)}

    def num(pat):
        m = re.search(pat, e)
        return float(m.group(1)) if m else None
    row["completion_tokens"] = num(r"completion (\d+) tokens")
    row["forced_tokens"] = num(r"\((\d+) forced")
    row["ttft_ms"] = num(r"TTFT ([0-9.]+) ms")
    row["decode_tok_s"] = num(r"decode ([0-9.]+) tokens/s")
    row["total_ms"] = num(r"total ([0-9.]+) ms")
    row["accepted"] = row["completion_tokens"] is not None
    if not row["accepted"]:
        row["error"] = e.strip().splitlines()[-1][:200] if e.strip() else "no output"
    row["reply"] = reply
    try:
        schema_obj = json.load(open(schema, encoding="utf-8"))
        jsonschema.validate(json.loads(reply), schema_obj)
        row["valid"] = True
    except Exception as ex:  # noqa: BLE001 -- the outcome is the measurement
        row["valid"] = False
        row["invalid_why"] = f"{type(ex).__name__}: {str(ex)[:160]}"
    print(json.dumps(row))


def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def fmt(x, d=1):
    return "—" if x is None else f"{x:,.{d}f}"


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    rows = []
    for line in open(path, encoding="utf-8"):
        try:
            rows.append(json.loads(line))
        except ValueError:  # a line cut by a run still writing, or not JSON
            pass
    return rows


def strux_speed(path):
    """{round: {mode: {key: value}}} from bench_decode's text output."""
    rounds, r = {}, 0
    if not os.path.exists(path):
        return rounds
    for line in open(path):
        if line.startswith("== round"):
            r = int(line.split()[2])
            continue
        m = re.match(r"(bf16|int8|q4) (prefill_tok_s|decode_tok_s|batched_decode_B\d+_tok_s): ([0-9.]+)",
                     line)
        if m:
            rounds.setdefault(r, {}).setdefault(m.group(1), {})[m.group(2)] = float(m.group(3))
        m = re.match(r"(bf16|int8|q4) (prefill_tok_s|decode_tok_s): [0-9.]+ \(cpu share (\d+)%\)", line)
        if m:
            rounds[r][m.group(1)][m.group(2) + "_cpu"] = float(m.group(3))
    return rounds


def llama_key(model):
    for k in LLAMA_MODELS:
        if model.endswith(f"-{k}.gguf"):
            return k
    return model


def tables(res):
    out = []
    vers = os.path.join(res, "versions.txt")
    if os.path.exists(vers):
        out.append("```\n" + open(vers).read().strip() + "\n```\n")
    sx = strux_speed(os.path.join(res, "speed-strux.txt"))
    ll = {}
    for row in read_jsonl(os.path.join(res, "speed-llamacpp.jsonl")):
        ll.setdefault(row.get("round", 1), {})[llama_key(row["model"])] = row
    for r in sx.values():  # per CPU-second figures: tok/s / the share of its thread it got
        for d in r.values():
            for k in ("prefill_tok_s", "decode_tok_s"):
                if d.get(k) and d.get(k + "_cpu"):
                    d[k + "_per_cpu"] = d[k] / (d[k + "_cpu"] / 100)
    for r in ll.values():
        for d in r.values():
            for k, c in (("prefill_tok_s", "prefill_cpu_share"), ("decode_tok_s", "decode_cpu_share")):
                if d.get(k) and d.get(c):
                    d[k + "_per_cpu"] = d[k] / d[c]
    if sx or ll:
        figs = [("prefill 512 tokens, tok/s", "prefill_tok_s", "prefill_tok_s"),
                ("decode tok/s, one sequence", "decode_tok_s", "decode_tok_s"),
                ("batched decode B = 4, total tok/s", "batched_decode_B4_tok_s", "batched_B4_tok_s"),
                ("batched decode B = 16, total tok/s", "batched_decode_B16_tok_s", "batched_B16_tok_s"),
                ("prefill tok/s per CPU-second", "prefill_tok_s_per_cpu", "prefill_tok_s_per_cpu"),
                ("decode tok/s per CPU-second", "decode_tok_s_per_cpu", "decode_tok_s_per_cpu")]
        out.append(f"Speed, medians of {len(set(sx) | set(ll))} rounds "
                   "(strux then llama.cpp in each round, or both at once; the text says which):\n")
        hdr = "| figure | " + " | ".join(f"strux {m}" for m in STRUX_MODES) + " | " + \
            " | ".join(f"llama.cpp {m.upper()}" for m in LLAMA_MODELS) + " |"
        out.append(hdr)
        out.append("|---|" + "---:|" * (len(STRUX_MODES) + len(LLAMA_MODELS)))
        for label, sk, lk in figs:
            cells = [fmt(med([sx[r].get(m, {}).get(sk) for r in sx])) for m in STRUX_MODES]
            cells += [fmt(med([ll[r].get(m, {}).get(lk) for r in ll])) for m in LLAMA_MODELS]
            out.append(f"| {label} | " + " | ".join(cells) + " |")
        out.append("")
        out.append("strux / llama.cpp at matching precision (median of the per-round ratios; "
                   "the rounds' ratios in brackets):\n")
        out.append("| pair | prefill | decode | batched B = 4 | batched B = 16 | prefill per CPU-s | "
                   "decode per CPU-s |")
        out.append("|---|---:|---:|---:|---:|---:|---:|")
        for sm, lm in PAIRS:
            cells = []
            for _, sk, lk in figs:
                rs = []
                for r in sorted(set(sx) & set(ll)):
                    a, b = sx[r].get(sm, {}).get(sk), ll[r].get(lm, {}).get(lk)
                    if a and b:
                        rs.append(a / b)
                cells.append("—" if not rs else
                             f"**{med(rs):.2f}×** ({', '.join(f'{x:.2f}' for x in rs)})")
            out.append(f"| strux {sm} / llama.cpp {lm.upper()} | " + " | ".join(cells) + " |")
        out.append("")
        cpu = [(m, med([sx[r].get(m, {}).get("decode_tok_s_cpu") for r in sx])) for m in STRUX_MODES]
        out.append("strux decode CPU share (bench_decode): " +
                   ", ".join(f"{m} {fmt(c, 0)}%" for m, c in cpu) + "\n")
    # perplexity
    prow = []
    for m in STRUX_MODES:
        p = os.path.join(res, f"ppl-strux-{m}.txt")
        if os.path.exists(p):
            kv = dict(line.split(":", 1) for line in open(p) if ":" in line)
            kv = {k.strip(): v.strip() for k, v in kv.items()}
            prow.append((f"strux {m}", kv.get("perplexity"), kv.get("bits_per_byte"),
                         kv.get("kl_to_bf16", "—"), kv.get("top1_same", "—"),
                         kv.get("tokens_scored"), kv.get("bytes_scored")))
    for row in read_jsonl(os.path.join(res, "ppl-llamacpp.jsonl")):
        name = "llama.cpp " + llama_key(row["model"]).upper()
        prow.append((name, f"{row['perplexity']:.4f}", f"{row['bits_per_byte']:.5f}",
                     f"{row['kl_to_bf16']:.4g}" if "kl_to_bf16" in row else "—",
                     f"{row['top1_same']:.4f}" if "top1_same" in row else "—",
                     row["tokens_scored"], row["bytes_scored"]))
    if prow:
        out.append("Perplexity (window 512, stride 256; tokens and bytes scored in the table):\n")
        out.append("| weights | perplexity | bits per byte | mean KL to own bf16 | top-1 same | "
                   "tokens scored | bytes scored |")
        out.append("|---|---:|---:|---:|---:|---:|---:|")
        for r in prow:
            out.append("| " + " | ".join(str(x) for x in r) + " |")
        out.append("")
    # grammar
    acc = {e: read_jsonl(os.path.join(res, f"accept-{e}.jsonl")) for e in ("strux", "llamacpp")}
    # strux on the MaskBench sample: `strux maskbench --out` (a schema is accepted unless its
    # grammar did not compile, or the child crashed or timed out)
    for r in read_jsonl(os.path.join(res, "maskbench-strux.jsonl")):
        acc["strux"].append({"schema": "/mb_" + os.path.basename(r["file"]),
                             "accepted": r["status"] not in ("compile_error", "crash", "timeout"),
                             "status": r["status"]})
    gen = {e: read_jsonl(os.path.join(res, f"gen-{e}.jsonl")) for e in ("strux", "llamacpp")}
    if any(acc.values()) or any(gen.values()):
        out.append("Constrained output:\n")
        out.append("| figure | strux | llama.cpp |")
        out.append("|---|---:|---:|")
        for label, pred in [("schemas/ accepted", lambda r: r["schema"].startswith("schemas/")),
                            ("MaskBench sample accepted", lambda r: "/mb_" in r["schema"])]:
            cells = []
            for e in ("strux", "llamacpp"):
                rows = [r for r in acc[e] if pred(r)]
                ok = sum(1 for r in rows if r.get("accepted"))
                cells.append(f"{ok} / {len(rows)}" if rows else "—")
            out.append(f"| {label} | " + " | ".join(cells) + " |")
        for label, pred in [("schemas/", lambda r: r["schema"].startswith("schemas/")),
                            ("MaskBench subset", lambda r: "/mb_" in r["schema"])]:
            cells_v, cells_t, cells_n = [], [], []
            for e in ("strux", "llamacpp"):
                rows = [r for r in gen[e] if pred(r)]
                ran = [r for r in rows if r.get("accepted")]
                ok = sum(1 for r in ran if r.get("valid"))
                cells_v.append(f"{ok} / {len(rows)}" if rows else "—")
                cells_t.append(fmt(med([r.get("decode_tok_s") for r in ran]), 2))
                cells_n.append(fmt(med([r.get("completion_tokens") for r in ran]), 0))
            out.append(f"| {label}: replies valid (jsonschema) / schemas | " + " | ".join(cells_v) + " |")
            out.append(f"| {label}: decode tok/s under the grammar, median | " + " | ".join(cells_t) + " |")
            out.append(f"| {label}: completion tokens, median | " + " | ".join(cells_n) + " |")
        out.append("")
        errs = [r for r in acc["llamacpp"] if not r.get("accepted")]
        if errs:
            out.append("llama.cpp refusals (first 5): " +
                       "; ".join(f"{os.path.basename(r['schema'])}: {r.get('error', '')[:90]}" for r in errs[:5]))
            out.append("")
    print("\n".join(out))


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "strux-gen" and len(sys.argv) == 6:
        strux_gen(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "tables":
        tables(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
