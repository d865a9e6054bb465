#!/usr/bin/env python3
"""llama.cpp (through llama-cpp-python) measured the way strux is measured.

Subcommands (each prints one JSON object per line on stdout; progress on stderr):

  quantize --src BF16.gguf --out OUT.gguf --type q8_0|q4_0|q4_k_m
      llama_model_quantize from the bf16 GGUF (what llama-quantize does).
  speed --gguf F.gguf [--gguf ...] --threads 1 --prompt 512 --decode 24 --decode-context 16 --reps 3
      prefill tok/s of one --prompt token batch (median of --reps after a warm-up), single-sequence
      decode tok/s after --decode-context tokens (median step of --decode steps), batched decode
      B = 1 / 4 / 16 (total tok/s, median step) through llama_batch with one seq_id per sequence --
      the figures bench_decode prints for strux.
  ppl --ref BF16.gguf --gguf Q.gguf [...] --text FILE --window 512 --stride 256 --max-tokens 2048
      sliding-window perplexity and bits per byte as `strux perplexity` computes them (first window
      scores all tokens but its first, each later window the tokens past the previous window's end),
      from log-probs of every position (logits_all), and KL(bf16 || quant) per scored token.
  accept --gguf F.gguf SCHEMA.json [...]
      JSON Schema -> GBNF (LlamaGrammar.from_json_schema) and the grammar sampler built on the
      model's vocabulary: does llama.cpp accept the schema?
  generate --gguf F.gguf --schema S.json --prompt P --max-tokens 96 --threads 1
      greedy completion under the schema's grammar, streamed: TTFT, decode tok/s of the tokens after
      the first, the text, and whether it validates (Python jsonschema).
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

import numpy as np

import llama_cpp
from llama_cpp import Llama, LlamaGrammar

# llama.cpp's "extra buffer types" (weights repacked for the CPU's AMX / AVX512 kernels) crash
# this native build on this CPU (Xeon with AMX) for Q8_0: SIGILL on a `tileloadd` in the AMX
# buffer type's matrix kernel (ggml-cpu/amx/mmq.cpp) under llama_decode, although the process
# has the kernel's AMX permission; bf16 runs.  LLAMACPP_EXTRA_BUFTS=0 (run.sh's default)
# (the default) loads every model without them (model param use_extra_bufts = false,
# what llama.cpp's --no-repack sets); Llama() has no argument for it, so the default params are
# wrapped.
if os.environ.get("LLAMACPP_EXTRA_BUFTS", "0") == "0":
    import llama_cpp.llama_cpp as _llc  # the module llama.py calls through
    _default_params = _llc.llama_model_default_params

    def _no_extra_bufts():
        p = _default_params()
        p.use_extra_bufts = False
        return p
    _llc.llama_model_default_params = _no_extra_bufts

FTYPES = {
    "q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0,
    "q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0,
    "q4_k_m": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M,
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def emit(obj):
    print(json.dumps(obj), flush=True)


def cmd_quantize(a):
    p = llama_cpp.llama_model_quantize_default_params()
    p.ftype = FTYPES[a.type]
    p.nthread = a.threads
    t = time.time()
    rc = llama_cpp.llama_model_quantize(a.src.encode(), a.out.encode(), ctypes.byref(p))
    if rc != 0:
        sys.exit(f"llama_model_quantize failed ({rc})")
    emit({"quantize": a.type, "out": a.out, "bytes": os.path.getsize(a.out),
          "seconds": round(time.time() - t, 2)})


def load(path, threads, n_ctx, n_batch, logits_all=False):
    return Llama(model_path=path, n_ctx=n_ctx, n_batch=n_batch, n_ubatch=n_batch,
                 n_threads=threads, n_threads_batch=threads, logits_all=logits_all,
                 verbose=False)


def rand_tokens(n, vocab, seed):
    rng = np.random.default_rng(seed)
    # ordinary tokens only: ids below the added (special) tokens
    return [int(x) for x in rng.integers(1000, min(vocab, 150000), size=n)]


def batched(llm, threads, B, ctx_tokens, steps, vocab):
    """Total tok/s of B sequences decoding in lockstep (one llama_decode per step)."""
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx = B * (ctx_tokens + steps + 8)
    cp.n_batch = max(B * ctx_tokens, B)
    cp.n_ubatch = cp.n_batch
    cp.n_seq_max = B
    cp.n_threads = threads
    cp.n_threads_batch = threads
    cp.kv_unified = True
    ctx = llama_cpp.llama_init_from_model(llm._model.model, cp)
    if not ctx:
        raise RuntimeError("llama_init_from_model failed")
    batch = llama_cpp.llama_batch_init(B * ctx_tokens, 0, B)
    try:
        def fill(items):  # items: (token, pos, seq, want_logits)
            batch.n_tokens = len(items)
            for i, (t, pos, s, lg) in enumerate(items):
                batch.token[i] = t
                batch.pos[i] = pos
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = s
                batch.logits[i] = 1 if lg else 0
        toks = rand_tokens(B * (ctx_tokens + steps), vocab, 7 + B)
        items = []
        for s in range(B):
            for p in range(ctx_tokens):
                items.append((toks[s * ctx_tokens + p], p, s, p == ctx_tokens - 1))
        fill(items)
        if llama_cpp.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode (prompt) failed")
        times = []
        k = B * ctx_tokens
        for st in range(steps):
            fill([(toks[k + st * B + s], ctx_tokens + st, s, True) for s in range(B)])
            t = time.perf_counter()
            if llama_cpp.llama_decode(ctx, batch) != 0:
                raise RuntimeError("llama_decode (step) failed")
            times.append(time.perf_counter() - t)
        return B / statistics.median(times)
    finally:
        llama_cpp.llama_batch_free(batch)
        llama_cpp.llama_free(ctx)


def cmd_speed(a):
    for path in a.gguf:
        llm = load(path, a.threads, n_ctx=a.prompt + 64, n_batch=a.prompt)
        vocab = llm.n_vocab()
        name = os.path.basename(path)
        toks = rand_tokens(a.prompt, vocab, 1)
        pre, pre_cpu = [], []
        for r in range(a.reps + 1):  # first is a warm-up (page-in, repack)
            llm.reset()
            t, c = time.perf_counter(), time.process_time()
            llm.eval(toks)
            dt, dc = time.perf_counter() - t, time.process_time() - c
            if r:
                pre.append(dt)
                pre_cpu.append(dc / dt / a.threads)
        ctx = rand_tokens(a.decode_context + a.decode, vocab, 2)
        llm.reset()
        llm.eval(ctx[:a.decode_context])
        steps = []
        c0, w0 = time.process_time(), time.perf_counter()
        for t_id in ctx[a.decode_context:]:
            t = time.perf_counter()
            llm.eval([t_id])
            steps.append(time.perf_counter() - t)
        dec_cpu = (time.process_time() - c0) / (time.perf_counter() - w0) / a.threads
        row = {"engine": "llama.cpp", "model": name, "threads": a.threads,
               "bytes": os.path.getsize(path),
               "prefill_tokens": a.prompt, "prefill_tok_s": a.prompt / statistics.median(pre),
               "decode_tok_s": 1.0 / statistics.median(steps),
               "tpot_ms_median": 1e3 * statistics.median(steps),
               # CPU time / wall time / threads: how much of its threads' time the
               # process got on a shared machine (bench_decode's "cpu share")
               "prefill_cpu_share": statistics.median(pre_cpu), "decode_cpu_share": dec_cpu}
        for B in a.batch:
            try:
                row[f"batched_B{B}_tok_s"] = batched(llm, a.threads, B, a.decode_context,
                                                     a.batch_steps, vocab)
            except Exception as e:  # noqa: BLE001 -- report and keep going
                row[f"batched_B{B}_error"] = str(e)
        llm.close()
        emit(row)
        log(f"speed {name}: prefill {row['prefill_tok_s']:.1f} tok/s, decode {row['decode_tok_s']:.2f} tok/s")


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def window_logprobs(llm, toks):
    llm.reset()
    llm.eval(toks)
    return log_softmax(np.array(llm.scores[:len(toks)], copy=True))


def cmd_ppl(a):
    models = [("bf16-ref", a.ref)] + [(os.path.basename(g), g) for g in a.gguf]
    llms = {n: load(p, a.threads, n_ctx=a.window, n_batch=a.window, logits_all=True)
            for n, p in models}
    ref = llms["bf16-ref"]
    data = open(a.text, "rb").read()
    toks = ref.tokenize(data, add_bos=False, special=False)
    if a.max_tokens:
        toks = toks[:a.max_tokens]
    n = len(toks)
    tok_bytes = [len(ref.detokenize([t])) for t in toks]
    st = {name: {"nll": 0.0, "kl": 0.0, "kl_max": 0.0, "top1": 0} for name, _ in models}
    n_scored = n_bytes = n_windows = 0
    prev_end = 0
    t0 = time.time()
    for begin in range(0, n, a.stride):
        end = min(begin + a.window, n)
        first = max(prev_end, begin + 1)  # positions scored: [first, end)
        if first >= end:
            break
        w = toks[begin:end]
        idx = np.arange(first - begin - 1, end - begin - 1)  # logits rows predicting them
        tgt = np.array(w[first - begin:], dtype=np.int64)
        lp_ref = window_logprobs(ref, w)[idx]
        p_ref = np.exp(lp_ref)
        for name, _ in models:
            lp = lp_ref if name == "bf16-ref" else window_logprobs(llms[name], w)[idx]
            s = st[name]
            s["nll"] -= float(lp[np.arange(len(tgt)), tgt].sum())
            if name != "bf16-ref":
                kl = (p_ref * (lp_ref - lp)).sum(axis=-1)
                s["kl"] += float(kl.sum())
                s["kl_max"] = max(s["kl_max"], float(kl.max()))
                s["top1"] += int((lp_ref.argmax(-1) == lp.argmax(-1)).sum())
        n_scored += len(tgt)
        n_bytes += sum(tok_bytes[first:end])
        n_windows += 1
        prev_end = end
        log(f"ppl: window {n_windows}, {n_scored} tokens scored, {time.time() - t0:.0f} s")
        if end == n:
            break
    for name, path in models:
        s = st[name]
        row = {"engine": "llama.cpp", "model": os.path.basename(path), "role": name,
               "perplexity": math.exp(s["nll"] / n_scored),
               "bits_per_byte": s["nll"] / math.log(2) / n_bytes,
               "tokens_scored": n_scored, "bytes_scored": n_bytes, "window": a.window,
               "stride": a.stride, "windows": n_windows, "tokens_in_text": n}
        if name != "bf16-ref":
            row.update(kl_to_bf16=s["kl"] / n_scored, kl_to_bf16_max=s["kl_max"],
                       top1_same=s["top1"] / n_scored)
        emit(row)


def schema_grammar(schema_text):
    return LlamaGrammar.from_json_schema(schema_text, verbose=False)


def cmd_accept(a):
    llm = Llama(model_path=a.gguf, vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(llm._model.model)
    for f in a.schemas:
        # each schema in a forked child: llama.cpp's grammar code can crash the process
        # (a segfault on some MaskBench schemas), which counts as not accepted
        sys.stdout.flush()
        pid = os.fork()
        if pid:
            _, status = os.waitpid(pid, 0)
            if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
                sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
                emit({"schema": f, "accepted": False, "crash": True,
                      "error": f"child died (signal {sig}, status {status})"})
            continue
        row = {"schema": f}
        try:
            text = open(f, encoding="utf-8").read()
            g = schema_grammar(text)
            smpl = llama_cpp.llama_sampler_init_grammar(vocab, g._grammar.encode(), b"root")
            if not smpl:
                raise ValueError("llama_sampler_init_grammar returned NULL (grammar not parsed)")
            llama_cpp.llama_sampler_free(smpl)
            row["accepted"] = True
        except Exception as e:  # noqa: BLE001 -- the outcome is the measurement
            row["accepted"] = False
            row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
        emit(row)
        os._exit(0)


def qwen3_chat(prompt):
    # Qwen3's chat template with thinking off, as bench/peers/hf_xgrammar.py renders it
    return (f"<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"
            "<think>\n\n</think>\n\n")


def cmd_generate(a):
    import jsonschema
    text = open(a.schema, encoding="utf-8").read()
    schema = json.loads(text)
    row = {"engine": "llama.cpp", "schema": a.schema}
    try:
        g = schema_grammar(text)
    except Exception as e:  # noqa: BLE001
        row.update(accepted=False, error=f"{type(e).__name__}: {str(e)[:200]}")
        emit(row)
        return
    llm = load(a.gguf, a.threads, n_ctx=2048, n_batch=512)
    ptoks = llm.tokenize(qwen3_chat(a.prompt).encode(), add_bos=False, special=True)
    t0 = time.perf_counter()
    stamps, out = [], []
    for ch in llm.create_completion(ptoks, grammar=g, max_tokens=a.max_tokens, temperature=0.0,
                                    stream=True):
        stamps.append(time.perf_counter())
        out.append(ch["choices"][0]["text"])
        fin = ch["choices"][0].get("finish_reason")
    reply = "".join(out)
    n = len(stamps)
    row.update(accepted=True, prompt_tokens=len(ptoks), completion_chunks=n,
               completion_tokens=len(llm.tokenize(reply.encode(), add_bos=False, special=False))
               if reply else 0,
               ttft_ms=1e3 * (stamps[0] - t0) if n else None,
               decode_tok_s=(n - 1) / (stamps[-1] - stamps[0]) if n > 1 else None,
               total_ms=1e3 * (stamps[-1] - t0) if n else None,
               finish_reason=fin if n else None, reply=reply)
    try:
        jsonschema.validate(json.loads(reply), schema)
        row["valid"] = True
    except Exception as e:  # noqa: BLE001
        row["valid"] = False
        row["invalid_why"] = f"{type(e).__name__}: {str(e)[:160]}"
    emit(row)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("quantize")
    q.add_argument("--src", required=True)
    q.add_argument("--out", required=True)
    q.add_argument("--type", required=True, choices=sorted(FTYPES))
    q.add_argument("--threads", type=int, default=2)
    s = sub.add_parser("speed")
    s.add_argument("--gguf", action="append", required=True)
    s.add_argument("--threads", type=int, default=1)
    s.add_argument("--prompt", type=int, default=512)
    s.add_argument("--decode", type=int, default=24)
    s.add_argument("--decode-context", type=int, default=16)
    s.add_argument("--reps", type=int, default=3)
    s.add_argument("--batch", type=lambda v: [int(x) for x in v.split(",") if x], default=[1, 4, 16])
    s.add_argument("--batch-steps", type=int, default=8)
    p = sub.add_parser("ppl")
    p.add_argument("--ref", required=True)
    p.add_argument("--gguf", action="append", default=[])
    p.add_argument("--text", required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--window", type=int, default=512)
    p.add_argument("--stride", type=int, default=256)
    p.add_argument("--max-tokens", type=int, default=2048)
    c = sub.add_parser("accept")
    c.add_argument("--gguf", required=True)
    c.add_argument("schemas", nargs="+")
    g = sub.add_parser("generate")
    g.add_argument("--gguf", required=True)
    g.add_argument("--schema", required=True)
    g.add_argument("--prompt", required=True)
    g.add_argument("--max-tokens", type=int, default=96)
    g.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    {"quantize": cmd_quantize, "speed": cmd_speed, "ppl": cmd_ppl, "accept": cmd_accept,
     "generate": cmd_generate}[a.cmd](a)


if __name__ == "__main__":
    main()
