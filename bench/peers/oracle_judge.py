#!/usr/bin/env python3
"""The project's oracle (tools/oracle_jsonschema.py) as a line server for
bench/peers/mask_compare.py.  Runs in the repo's .venv (jsonschema with the
format-nongpl extras), so the judge is the one the rest of the project uses.

Each request line: {"schema": TEXT, "doc": HEX} (the schema as JSON text,
the document's bytes in hex).  Each answer line: {"verdict": V, "why": ...}
with V one of
  valid      Python jsonschema reports no error
  invalid    not UTF-8, not JSON, or an error no documented departure explains
  unknown    every error is a documented departure of Python's checker
             (docs/ORACLE.md), Python cannot read the schema, or an object
             repeats a key (Python keeps the last value; strux refuses
             duplicate keys, docs/ORACLE.md): not judged
"""
import decimal
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import oracle_jsonschema as oracle  # noqa: E402


class DuplicateKey(Exception):
    pass


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise DuplicateKey(json.dumps(k))
        out[k] = v
    return out


def judge(checker, doc_hex):
    try:
        text = bytes.fromhex(doc_hex).decode("utf-8")
    except UnicodeDecodeError as exc:
        return "invalid", "not UTF-8: %s" % exc
    try:
        inst = json.loads(text, parse_float=decimal.Decimal, object_pairs_hook=_no_duplicates)
    except DuplicateKey as exc:
        return "unknown", "duplicate key %s" % exc
    except (decimal.InvalidOperation, decimal.Overflow) as exc:  # an exponent past Decimal's
        return "unknown", "Python's Decimal cannot hold a number: %r" % exc
    except ValueError as exc:
        return "invalid", "not JSON: %s" % exc
    try:
        errs = list(checker.iter_errors(inst))
    except Exception as exc:  # noqa: BLE001  a checker that crashed judges nothing
        return "unknown", "checker raised %s: %s" % (type(exc).__name__, exc)
    if not errs:
        return "valid", ""
    names, bad = oracle.unexplained(errs, checker.schema)
    if not bad:
        return "unknown", "departures: %s" % ",".join(sorted(set(names)))
    err = oracle.jsonschema.exceptions.best_match(bad)
    return "invalid", "%s at /%s (schema /%s)" % (
        err.message[:300], "/".join(map(str, err.absolute_path)),
        "/".join(map(str, err.absolute_schema_path)))


def main():
    checkers = {}
    for line in sys.stdin:
        req = json.loads(line)
        key = req["schema"]
        if key not in checkers:
            try:
                schema = json.loads(key, parse_float=decimal.Decimal)
                cls, fmt = oracle._validator_class(schema, False)
                checkers[key] = cls(schema, format_checker=fmt)
            except Exception as exc:  # noqa: BLE001  Python cannot read the schema
                checkers[key] = exc
            if len(checkers) > 64:
                checkers.pop(next(iter(checkers)))
        c = checkers.get(key)
        if isinstance(c, Exception):
            verdict, why = "unknown", "schema unreadable by Python: %s" % c
        else:
            verdict, why = judge(c, req["doc"])
        sys.stdout.write(json.dumps({"verdict": verdict, "why": why}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
