"""Hugging Face transformers + XGrammar on the CPU: the peer of strux's
schema-constrained generation (bench/constrained_alternate.sh).

Loads the same model directory strux loads, in bf16, builds the same chat
prompt (Qwen3's template, thinking off), compiles the JSON Schema with
XGrammar and runs greedy `model.generate` with XGrammar's logits processor
for at most --max-tokens new tokens.  A second processor after it stamps
the time of each step, so decode output tokens/s = (steps - 1) / (time of
the last step - time of the first): prefill and set-up drop out, the
grammar's per-step mask cost stays in.  Prints one JSON line with the
reply, its token count and whether it parses as JSON.

Dev-time only: torch, transformers and xgrammar in the repo's .venv.

usage: python bench/peers/hf_xgrammar.py --model DIR --schema FILE --prompt TEXT
                                         [--max-tokens 96] [--threads N] [--compact]
"""
import argparse
import json
import os
import sys
import time
from importlib.metadata import version


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--compact", action="store_true",
                    help="no whitespace between JSON tokens (strux generate --compact)")
    a = ap.parse_args()
    if a.max_tokens < 2:
        sys.exit("hf_xgrammar: --max-tokens >= 2")

    import torch
    import transformers
    import xgrammar as xgr
    from transformers import AutoModelForCausalLM, AutoTokenizer, LogitsProcessor

    torch.set_num_threads(a.threads)
    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.bfloat16)
    model.eval()
    schema = open(a.schema).read()
    t0 = time.perf_counter()
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=model.config.vocab_size)
    compiled = xgr.GrammarCompiler(info).compile_json_schema(schema, any_whitespace=not a.compact)
    compile_ms = (time.perf_counter() - t0) * 1e3

    class Stamp(LogitsProcessor):
        def __init__(self):
            self.t = []

        def __call__(self, input_ids, scores):
            self.t.append(time.perf_counter())
            return scores

    text = tok.apply_chat_template([{"role": "user", "content": a.prompt}], tokenize=False,
                                   add_generation_prompt=True, enable_thinking=False)
    ids = tok(text, return_tensors="pt").input_ids
    with torch.inference_mode():
        model.generate(ids[:, :8], max_new_tokens=2, do_sample=False, pad_token_id=0)  # warm-up
        stamp = Stamp()
        t_gen = time.perf_counter()
        out = model.generate(ids, max_new_tokens=a.max_tokens, do_sample=False, pad_token_id=0,
                             logits_processor=[xgr.contrib.hf.LogitsProcessor(compiled), stamp])
        total_ms = (time.perf_counter() - t_gen) * 1e3
    new = out[0, ids.shape[1]:].tolist()
    eos = {tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>")}
    n = len([t for t in new if t not in eos])
    reply = tok.decode([t for t in new if t not in eos])
    steps = len(stamp.t)
    try:
        json.loads(reply)
        parses = True
    except ValueError:
        parses = False
    res = {"peer": "transformers+xgrammar", "transformers": transformers.__version__,
           "xgrammar": version("xgrammar"), "torch": torch.__version__, "threads": a.threads,
           "prompt_tokens": ids.shape[1], "completion_tokens": n, "steps": steps,
           "compile_ms": round(compile_ms, 1), "total_ms": round(total_ms, 1),
           "decode_tok_s": round((steps - 1) / (stamp.t[-1] - stamp.t[0]), 2) if steps > 1 else 0,
           "parses": parses, "reply": reply}
    print(json.dumps(res, ensure_ascii=False))


if __name__ == "__main__":
    main()
