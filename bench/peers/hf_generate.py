"""Hugging Face transformers on the CPU, the peer of bench/bench_decode.c.

Loads the same model directory strux loads (a Hugging Face Qwen3 folder; a
random one from `strux model random --shape 0.6b` works, since speed depends
on shapes, not values), in bf16, and measures with the same method:

  - prefill: one forward pass over a --prompt token prompt (TTFT, tok/s);
  - decode through `model.generate` (greedy, KV cache, exactly --decode new
    tokens): TPOT = (t(generate N) - t(generate 1)) / (N - 1), so the prefill
    and set-up cost drop out;
  - decode step by step with the KV cache (forward + argmax per token), the
    floor of what generate's loop costs.

Medians over --runs.  Prints one JSON line.  Dev-time only: needs torch and
transformers (tests/fixtures/requirements.txt, in the repo's .venv).

usage: python bench/peers/hf_generate.py --model DIR [--threads N] [--prompt 512]
                                         [--decode 24] [--runs 3] [--dtype bf16|f32]
"""
import argparse
import json
import os
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="Hugging Face Qwen3 directory")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--prompt", type=int, default=512, help="prompt tokens for the prefill")
    ap.add_argument("--decode", type=int, default=24, help="new tokens per decode run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dtype", choices=["bf16", "f32"], default="bf16")
    a = ap.parse_args()
    if a.prompt < 1 or a.decode < 2 or a.runs < 1:
        sys.exit("hf_generate: --prompt >= 1, --decode >= 2, --runs >= 1")

    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(a.threads)
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    t0 = time.perf_counter()
    try:
        model = AutoModelForCausalLM.from_pretrained(a.model, dtype=dtype)
    except TypeError:  # older transformers
        model = AutoModelForCausalLM.from_pretrained(a.model, torch_dtype=dtype)
    model.eval()
    load_s = time.perf_counter() - t0
    vocab = model.config.vocab_size
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(1000, min(vocab, 150000), (1, a.prompt), generator=g)
    short = prompt[:, :32]
    res = {"peer": "transformers", "version": transformers.__version__,
           "torch": torch.__version__, "dtype": a.dtype, "threads": a.threads,
           "model": a.model, "load_s": round(load_s, 2)}

    with torch.inference_mode():
        # warm-up: one pass of each kind
        model(short, use_cache=True)
        ttft = []
        for _ in range(a.runs):
            t = time.perf_counter()
            model(prompt, use_cache=True)
            ttft.append(time.perf_counter() - t)
        res["prefill_tokens"] = a.prompt
        res["ttft_ms_median"] = round(statistics.median(ttft) * 1e3, 1)
        res["prefill_tok_s"] = round(a.prompt / statistics.median(ttft), 1)

        def gen(n):
            t = time.perf_counter()
            out = model.generate(short, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                                 pad_token_id=0)
            dt = time.perf_counter() - t
            assert out.shape[1] == short.shape[1] + n, out.shape
            return dt

        gen(2)
        t1 = [gen(1) for _ in range(a.runs)]
        tn = [gen(a.decode) for _ in range(a.runs)]
        tpot = (statistics.median(tn) - statistics.median(t1)) / (a.decode - 1)
        res["generate_tpot_ms"] = round(tpot * 1e3, 2)
        res["generate_decode_tok_s"] = round(1.0 / tpot, 2)

        steps = []
        for _ in range(a.runs):
            out = model(short, use_cache=True)
            past = out.past_key_values
            tok = out.logits[:, -1:].argmax(-1)
            for _ in range(a.decode):
                t = time.perf_counter()
                out = model(tok, past_key_values=past, use_cache=True)
                past = out.past_key_values
                tok = out.logits[:, -1:].argmax(-1)
                steps.append(time.perf_counter() - t)
        res["step_tpot_ms_median"] = round(statistics.median(steps) * 1e3, 2)
        res["step_decode_tok_s"] = round(1.0 / statistics.median(steps), 2)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
