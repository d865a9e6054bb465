#!/usr/bin/env python3
"""Replays proven strux mask errors (bench/peers/mask_disagreements.jsonl, or
what mask_compare.py --repros wrote) against the current build.

    bench/peers/.venv/bin/python bench/peers/recheck_disagreements.py [FILE]

Each line: {"kind": "strux_over"|"strux_under", "schema": S, "prefix": TEXT,
"token": ID, "doc": TEXT, ...}.  The prefix is tokenized as plain text (Qwen3)
and fed to strux (compact layout and every escape spelling, as mask_compare
runs it; "property_order": true in the record for that mode, "escapes":
"canonical" for strux's generation default); then
  strux_over   reproduces if strux refuses the token (or the prefix) while the
               oracle judges doc -- which starts with prefix + token -- valid
  strux_under  reproduces if strux allows the token and doc, strux's own
               completion, is judged invalid (and strux still accepts doc)
Prints one line per record and a summary; exit 1 while any reproduces.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mask_compare as mc  # noqa: E402


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(mc.HERE, "mask_disagreements.jsonl")
    from tokenizers import Tokenizer

    tok_path = os.path.join(mc.default_shared(), "qwen3-tokenizer", "tokenizer.json")
    hf = Tokenizer.from_file(tok_path)
    hf.encode_special_tokens = True
    judge = mc.Judge(os.path.join(mc.ROOT, ".venv", "bin", "python"))
    still = fixed = bad = 0
    strux = {}
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if not line.strip():
            continue
        r = json.loads(line)
        po = bool(r.get("property_order"))
        esc = r.get("escapes", "any")
        if (po, esc) not in strux:
            strux[(po, esc)] = mc.Strux(os.path.join(mc.ROOT, "build", "bench_mask_peer"), po, esc)
        s = strux[(po, esc)]
        schema_text = json.dumps(r["schema"])
        doc = r["doc"].encode("utf-8")
        ids = hf.encode(r["prefix"], add_special_tokens=False).ids
        c = s.compile(r["schema"])
        verdict, why = judge(schema_text, doc)
        if not c.get("ok"):
            state = "strux declines the schema now (%s)" % c.get("error", "")[:80]
            reproduces = False
        else:
            acc, masks = s.masks(ids, [len(ids)])
            allowed = bool(masks and masks[0][r["token"]])
            if r["kind"] == "strux_over":
                reproduces = verdict == "valid" and (acc < len(ids) or not allowed)
                state = "refuses" if reproduces else ("allows" if verdict == "valid" else
                                                     "oracle says %s: %s" % (verdict, why[:80]))
            else:
                reproduces = allowed and verdict == "invalid"
                state = "allows, doc %s" % verdict
        if reproduces:
            still += 1
        elif c.get("ok") and (r["kind"] != "strux_over" or verdict == "valid"):
            fixed += 1
        else:
            bad += 1
        print("%s %d %s %s: %s" % ("STILL" if reproduces else "ok   ", n, r["kind"],
                                   r.get("class", r.get("file", "")), state))
    print(json.dumps({"records": still + fixed + bad, "reproduce": still, "fixed": fixed,
                      "unclear": bad}))
    return 1 if still else 0


if __name__ == "__main__":
    sys.exit(main())
