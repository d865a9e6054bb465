"""Hugging Face transformers' beam search on the CPU: the peer of
`strux generate --beams` without a grammar (bench/beam.sh --peer).

Loads the model directory strux loads, in float32 (strux computes in f32 on
the bf16 weights), builds the same chat prompt (Qwen3's template, thinking
off) and runs generate(num_beams=B, do_sample=False,
early_stopping="never", length_penalty=1) with no end token, so both run
exactly --max-tokens steps of B beams.  Prints one JSON line: total ms
(prefill included, after a warm-up), beam tokens (B per step after the
first) per second, and the best sequence's ids.

Dev-time only: torch and transformers in the repo's .venv.

usage: python bench/peers/hf_beam.py --model DIR --prompt TEXT [--beams 4] [--max-tokens 32]
                                     [--threads N]
"""
import argparse
import json
import os
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--beams", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(a.threads)
    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32)
    model.eval()
    model.generation_config.eos_token_id = None
    text = tok.apply_chat_template([{"role": "user", "content": a.prompt}], tokenize=False,
                                   add_generation_prompt=True, enable_thinking=False)
    ids = tok(text, return_tensors="pt").input_ids
    kw = dict(num_beams=a.beams, do_sample=False, early_stopping="never", length_penalty=1.0,
              eos_token_id=None, pad_token_id=0, attention_mask=torch.ones_like(ids),
              output_scores=True, return_dict_in_generate=True)
    with torch.inference_mode():
        model.generate(ids[:, :8], max_new_tokens=2, **dict(kw, attention_mask=None))  # warm-up
        t0 = time.perf_counter()
        out = model.generate(ids, max_new_tokens=a.max_tokens, **kw)
        total_ms = (time.perf_counter() - t0) * 1e3
    best = out.sequences[0, ids.shape[1]:].tolist()
    res = {"peer": "transformers", "transformers": transformers.__version__,
           "torch": torch.__version__, "threads": a.threads, "prompt_tokens": ids.shape[1],
           "beams": a.beams, "steps": a.max_tokens, "total_ms": round(total_ms, 1),
           "beam_tok_s": round(a.beams * (a.max_tokens - 1) / (total_ms / 1e3), 1),
           "score": float(out.sequences_scores[0]), "best": best}
    print(json.dumps(res))


if __name__ == "__main__":
    main()
