#!/usr/bin/env python3
"""Groups the proven strux errors that mask_compare.py --repros wrote by
cause, so that one fix can be counted once.

    python3 bench/peers/classify_disagreements.py REPROS.jsonl [...]

Classes (first match wins):
  duplicate-key   the witness repeats a key: Python keeps the last value and
                  judges it, strux refuses duplicates (not a strux error)
  u-escape-key    a \\u escape in an object key (strux takes none there)
  u-escape-value  a \\u escape in a string under pattern/format/enum/const, or
                  a surrogate pair (strux takes none there)
  exponent-digits a third exponent digit (strux's numbers stop at two)
  python-re-dot   a \r (or U+2028/9) where the schema's pattern has `.`:
                  ECMA-262's `.` takes no line terminator, Python's takes all
                  but \n -- Python is wrong, strux right (not a strux error)
  hostname-rldh   "--" in a hostname's 3rd and 4th places: the JSON Schema
                  Test Suite says invalid (RFC 5891 4.2.3.1), Python's checker
                  takes it -- strux's matcher right (not a strux error)
  other           anything else: read it
Prints one JSON line per class with its count, the schema files and one
example.
"""
import collections
import json
import re
import sys


def context(prefix):
    """'key', 'value' (inside a string) or 'structure' at the prefix's end."""
    stack, instr, esc, iskey, expect_key = [], False, False, False, False
    for ch in prefix:
        if instr:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                instr = False
            continue
        if ch == '"':
            instr, iskey = True, bool(stack) and stack[-1] == "{" and expect_key
        elif ch == "{":
            stack.append("{")
            expect_key = True
        elif ch == "[":
            stack.append("[")
            expect_key = False
        elif ch in "}]":
            if stack:
                stack.pop()
            expect_key = False
        elif ch == ":":
            expect_key = False
        elif ch == ",":
            expect_key = bool(stack) and stack[-1] == "{"
    return ("key" if iskey else "value") if instr else "structure"


def has_duplicate(doc):
    dup = []

    def hook(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            dup.append(1)
        return dict(pairs)
    try:
        json.loads(doc, object_pairs_hook=hook)
    except ValueError:
        return False
    return bool(dup)


def classify(r):
    if r["kind"] != "strux_over":
        return r["kind"]
    p, t = r["prefix"], r.get("token_text") or ""
    if r.get("doc") and has_duplicate(r["doc"]):
        return "duplicate-key"
    u = "\\u" in t or (p.endswith("\\") and not p.endswith("\\\\") and t.startswith("u"))
    c = context(p)
    if u and c == "key":
        return "u-escape-key"
    if u or (c == "value" and re.search(r"\\u[0-9a-fA-F]{0,4}$", p)):
        return "u-escape-value"
    schema = json.dumps(r.get("schema", ""))
    if c == "value" and (t.startswith("\\r") or "\u2028" in t or "\u2029" in t) and \
            '"pattern"' in schema:
        return "python-re-dot"
    if c == "value" and "--" in t and '"hostname"' in schema:
        return "hostname-rldh"
    if c == "structure" and re.search(r"[eE][+-]?[0-9]+$", p) and t[:1].isdigit():
        return "exponent-digits"
    return "other"


def main():
    groups = collections.OrderedDict()
    for path in sys.argv[1:]:
        for line in open(path, encoding="utf-8"):
            r = json.loads(line)
            groups.setdefault(classify(r), []).append(r)
    for cls, rs in groups.items():
        e = rs[0]
        print(json.dumps({"class": cls, "count": len(rs),
                          "files": sorted({r["file"] for r in rs}),
                          "example": {"file": e["file"], "prefix": e["prefix"][-80:],
                                      "token": e.get("token_text"),
                                      "doc_after_prefix": (e.get("doc") or "")[len(e["prefix"]):][:80]}},
                         ensure_ascii=False))


if __name__ == "__main__":
    main()
