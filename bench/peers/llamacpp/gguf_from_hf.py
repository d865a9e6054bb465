#!/usr/bin/env python3
"""A Qwen3 Hugging Face directory (bf16 safetensors) -> a bf16 GGUF file, numpy only.

    PYTHONPATH=$SRC/gguf-py python gguf_from_hf.py MODEL_DIR OUT.gguf

Used by `run.sh server` when the sdist's convert_hf_to_gguf.py cannot run: that
script imports torch (and transformers for the vocabulary), which a fresh
machine without a CPU torch wheel reachable does not have.  This writes what
convert_hf_to_gguf.py writes for Qwen3ForCausalLM (conversion/qwen.py,
conversion/base.py of llama.cpp's sdist 0.3.36) with the gguf-py of the same
sdist: the same metadata keys, the gpt2 vocabulary with pre-tokenizer "qwen2"
(tokens by id, added special tokens and <|...|> as CONTROL, other added tokens
USER_DEFINED, unused ids as [PADi]), merges and special ids through
gguf.SpecialVocab, the chat template of tokenizer_config.json, the weight
matrices as bf16 bytes unchanged (no permutation for Qwen: NEOX rope), the
one-dimensional norm weights widened to f32 as the converter does, and no
output.weight when the embeddings are tied.
"""
import json
import struct
import sys
from pathlib import Path

import numpy as np

import gguf


def read_safetensors(path):
    """{name: (dtype, shape, memoryview of bytes)} of one safetensors file."""
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    mv = memoryview(data)
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = (info["dtype"], info["shape"], mv[base + a:base + b])
    return out


def gguf_name(hf):
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    parts = hf.split(".")
    assert parts[0] == "model" and parts[1] == "layers", hf
    bid = parts[2]
    rest = ".".join(parts[3:])
    m = {
        "input_layernorm.weight": "attn_norm.weight",
        "self_attn.q_proj.weight": "attn_q.weight",
        "self_attn.k_proj.weight": "attn_k.weight",
        "self_attn.v_proj.weight": "attn_v.weight",
        "self_attn.o_proj.weight": "attn_output.weight",
        "self_attn.q_norm.weight": "attn_q_norm.weight",
        "self_attn.k_norm.weight": "attn_k_norm.weight",
        "post_attention_layernorm.weight": "ffn_norm.weight",
        "mlp.gate_proj.weight": "ffn_gate.weight",
        "mlp.up_proj.weight": "ffn_up.weight",
        "mlp.down_proj.weight": "ffn_down.weight",
    }
    return f"blk.{bid}.{m[rest]}"


def vocab(model_dir, vocab_size):
    tj = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    rev = {i: t for t, i in tj["model"]["vocab"].items()}
    added = {a["id"]: a for a in tj.get("added_tokens", [])}
    tokens, types = [], []
    for i in range(vocab_size):
        if i in added:
            t = added[i]["content"]
            special = added[i]["special"] or (t.startswith("<|") and t.endswith("|>"))
            tokens.append(t)
            types.append(gguf.TokenType.CONTROL if special else gguf.TokenType.USER_DEFINED)
        elif i in rev:
            tokens.append(rev[i])
            types.append(gguf.TokenType.NORMAL)
        else:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
    return tokens, types


def main():
    model_dir, out = Path(sys.argv[1]), sys.argv[2]
    hp = json.loads((model_dir / "config.json").read_text())
    assert hp["architectures"][0] == "Qwen3ForCausalLM", hp["architectures"]
    w = gguf.GGUFWriter(out, "qwen3")
    w.add_name(model_dir.name)
    w.add_block_count(hp["num_hidden_layers"])
    w.add_context_length(hp["max_position_embeddings"])
    w.add_embedding_length(hp["hidden_size"])
    w.add_feed_forward_length(hp["intermediate_size"])
    w.add_head_count(hp["num_attention_heads"])
    w.add_head_count_kv(hp["num_key_value_heads"])
    w.add_rope_freq_base(hp["rope_theta"])
    w.add_layer_norm_rms_eps(hp["rms_norm_eps"])
    head_dim = hp.get("head_dim", hp["hidden_size"] // hp["num_attention_heads"])
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    tokens, types = vocab(model_dir, hp["vocab_size"])
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    gguf.SpecialVocab(model_dir, load_merges=True).add_to_gguf(w)

    tensors = read_safetensors(model_dir / "model.safetensors")
    for hf, (dt, shape, buf) in tensors.items():
        if hf == "lm_head.weight" and hp.get("tie_word_embeddings"):
            continue
        assert dt == "BF16", (hf, dt)
        raw = np.frombuffer(buf, dtype=np.uint16).reshape(shape)
        name = gguf_name(hf)
        if len(shape) == 1:
            # the converter keeps 1-D tensors (norm weights) in f32
            w.add_tensor(name, (raw.astype(np.uint32) << 16).view(np.float32))
        else:
            w.add_tensor(name, raw.view(np.uint8).reshape(shape[0], shape[1] * 2),
                         raw_dtype=gguf.GGMLQuantizationType.BF16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
