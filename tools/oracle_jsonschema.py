#!/usr/bin/env python3
"""The third oracle: Python `jsonschema` judges the documents `strux fuzzgen` sampled.

    .venv/bin/python tools/oracle_jsonschema.py [--draft7] [--show N] DOCS.jsonl [...]

DOCS.jsonl is what `strux fuzzgen --out` writes: one line per document with
the schema file it came from ("path" or "path#index" for a group of a JSON
Schema Test Suite file), the document text and strux's own verdict.  Every
document strux's validator accepted is validated again here with the
validator class its $schema names (draft 2020-12 by default, draft-07 with
--draft7), format assertion on (jsonschema's FORMAT_CHECKER with the
format-nongpl extras), and numbers read as exact decimals so that
multipleOf is judged exactly rather than in binary floating point.

Every error Python's checker reports is judged (all of iter_errors, not
only the best match): each must be one of the documented departures of
Python's checkers from the specification (docs/ORACLE.md, DEPARTURES
below), matched to that error alone, or the document is a disagreement,
which fails the run (exit 1).  A pattern Python's re cannot compile is
reported as that keyword's own error (python-re-syntax), so the other
keywords of the document are still judged; any other exception from the
checker is a disagreement too.
"""
import argparse
import decimal
import json
import re
import sys
import warnings
from collections import Counter

import jsonschema
from jsonschema import validators

decimal.getcontext().prec = 400  # multipleOf over long decimals stays exact
# Python's re warns about ECMA-262 class syntax it may read differently one day
warnings.filterwarnings("ignore", category=FutureWarning)


def _is_integer(checker, instance):
    # the specification: a number with a zero fractional part is an integer
    if isinstance(instance, bool):
        return False
    if isinstance(instance, decimal.Decimal):
        return instance.is_finite() and instance == instance.to_integral_value()
    return isinstance(instance, int)


# Keywords that call Python's re on the schema's patterns.  Guarded, a
# pattern re cannot compile becomes one error of that keyword (its cause the
# re.error) instead of an exception that ends the whole validation and so
# hides every other error of the document.  A nested keyword is guarded on
# its own, so an outer guard only sees its own keyword's re.error.
RE_KEYWORDS = ("pattern", "patternProperties", "additionalProperties", "unevaluatedProperties")


def _guard(keyword_fn):
    def guarded(validator, value, instance, schema):
        try:
            yield from keyword_fn(validator, value, instance, schema)
        except re.error as exc:
            yield jsonschema.ValidationError(
                "Python's re cannot compile a pattern here: %s" % exc, cause=exc)
    return guarded


def guard_patterns(cls, type_checker=None):
    """cls extended so that a pattern Python's re cannot compile is an error
    with an re.error cause (python-re-syntax), never an exception."""
    kws = {k: _guard(cls.VALIDATORS[k]) for k in RE_KEYWORDS if k in cls.VALIDATORS}
    if type_checker is None:
        return validators.extend(cls, validators=kws)
    return validators.extend(cls, validators=kws, type_checker=type_checker)


def _validator_class(schema, draft7):
    default = jsonschema.Draft7Validator if draft7 else jsonschema.Draft202012Validator
    cls = validators.validator_for(schema, default=default)
    checker = cls.TYPE_CHECKER.redefine("integer", _is_integer)
    return guard_patterns(cls, checker), cls.FORMAT_CHECKER


def _load_schema(label, cache):
    path, _, index = label.partition("#")
    if path not in cache:
        with open(path, encoding="utf-8") as fh:
            cache[path] = json.load(fh, parse_float=decimal.Decimal)
    doc = cache[path]
    if index:
        return doc[int(index)]["schema"]
    if isinstance(doc, dict) and "schema" in doc and "tests" in doc:
        return doc["schema"]  # a MaskBench record
    return doc


def _walk(schema, pointer):
    node = schema
    for part in pointer:
        node = node[part]
    return node


# Where Python's checkers depart from the specification.  Each entry: a name,
# and a test on the jsonschema error that says whether this departure explains
# it.  docs/ORACLE.md gives the reasons.
def _pattern_unsupported(err, schema):
    return err.validator in RE_KEYWORDS and isinstance(err.cause, re.error)


# ECMA-262's \s is WhiteSpace and LineTerminator, which include U+FEFF
# (ZERO WIDTH NO-BREAK SPACE); Python's \s (str.isspace) does not.  A string
# that matches once its U+FEFFs are read as spaces is Python's departure.
ECMA_ONLY_SPACE = "\ufeff"


def _ecma_whitespace(err, schema):
    if err.validator != "pattern" or not isinstance(err.instance, str):
        return False
    if ECMA_ONLY_SPACE not in err.instance:
        return False
    return re.search(err.validator_value, err.instance.replace(ECMA_ONLY_SPACE, " ")) is not None


# ECMA-262's \d, \w and \b are ASCII (without the u flag, \s aside);
# Python's str patterns are Unicode-wide.  Looser alone, but a key that only
# Python's patternProperties pattern matches gets a subschema the
# specification does not apply (say "\d" and a fullwidth digit).
def _unicode_classes_key(err, schema):
    sp = list(err.absolute_schema_path)
    idx = [i for i, p in enumerate(sp) if p == "patternProperties" and i + 1 < len(sp)]
    if not idx:
        return False
    pat = sp[idx[-1] + 1]
    return any(isinstance(k, str) and re.search(pat, k) and not re.search(pat, k, re.ASCII)
               for k in err.absolute_path)


DEPARTURES = [
    ("python-re-syntax", _pattern_unsupported),
    ("python-re-whitespace", _ecma_whitespace),
    ("python-re-unicode-classes", _unicode_classes_key),
]


def unexplained(errors, schema):
    """(departure names, errors no departure explains): each error is
    judged on its own, so one documented departure cannot excuse another
    error of the same document."""
    names, bad = [], []
    for err in errors:
        why = explain(err, schema)
        if why:
            names.append(why)
        else:
            bad.append(err)
    return names, bad


def explain(err, schema):
    """The name of the documented departure that explains err, or None."""
    for name, test in DEPARTURES:
        try:
            if test(err, schema):
                return name
        except Exception:  # a test that cannot tell does not explain
            pass
    # "valid under none of" an anyOf/oneOf: explained when one branch fails
    # only by departures (its errors are in err.context, by branch index)
    if err.validator in ("anyOf", "oneOf") and err.context:
        branches = {}
        for sub in err.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        for subs in branches.values():
            names = [explain(sub, schema) for sub in subs]
            if all(names):
                return names[0]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("docs", nargs="+", help="JSONL files from strux fuzzgen --out")
    ap.add_argument("--draft7", action="store_true",
                    help="schemas without $schema are draft-07 (as fuzzgen --draft7)")
    ap.add_argument("--show", type=int, default=10, help="disagreements to print (default 10)")
    args = ap.parse_args()

    files, checkers = {}, {}
    counts = Counter()
    departures = Counter()
    shown = 0
    for path in args.docs:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                counts["documents"] += 1
                if rec.get("verdict") != "valid":
                    counts["refused by strux"] += 1
                    continue
                label = rec["schema"]
                if label not in checkers:
                    schema = _load_schema(label, files)
                    try:
                        cls, fmt = _validator_class(schema, args.draft7)
                        checkers[label] = cls(schema, format_checker=fmt)
                    except Exception as exc:  # Python cannot even read the schema
                        checkers[label] = exc
                v = checkers[label]
                if isinstance(v, Exception):
                    counts["schema unreadable by Python"] += 1
                    continue
                try:
                    inst = json.loads(rec["doc"], parse_float=decimal.Decimal)
                except ValueError as exc:
                    counts["bug: not JSON for Python"] += 1
                    print("NOT JSON %s #%s: %s\n  %s" % (label, rec["index"], exc, rec["doc"][:300]))
                    continue
                try:
                    errs = list(v.iter_errors(inst))
                except Exception as exc:  # a checker that crashed: nothing judged
                    counts["bug: Python refuses"] += 1
                    if shown < args.show:
                        shown += 1
                        print("RAISED %s #%s: %s: %s" % (label, rec["index"], type(exc).__name__, exc))
                    continue
                if not errs:
                    counts["agree"] += 1
                    continue
                names, bad = unexplained(errs, v.schema)
                if not bad:
                    for why in names:  # one count per error it explains
                        departures[why] += 1
                    counts["documented departures"] += 1
                    continue
                counts["bug: Python refuses"] += 1
                if shown < args.show:
                    shown += 1
                    err = jsonschema.exceptions.best_match(bad)
                    print("DISAGREE %s #%s (%s): Python says %s at %s (schema %s)%s\n  %s" % (
                        label, rec["index"], rec.get("mode"), err.message[:200],
                        "/" + "/".join(map(str, err.absolute_path)),
                        "/" + "/".join(map(str, err.absolute_schema_path)),
                        " and %d more unexplained" % (len(bad) - 1) if len(bad) > 1 else "",
                        rec["doc"][:400]))
    summary = {"documents": counts["documents"], "strux_valid_checked":
               counts["agree"] + counts["documented departures"] + counts["bug: Python refuses"],
               "agree": counts["agree"], "departures": dict(departures),
               "disagreements": counts["bug: Python refuses"] + counts["bug: not JSON for Python"],
               "schemas_python_cannot_read": counts["schema unreadable by Python"],
               "refused_by_strux": counts["refused by strux"]}
    print("oracle: " + json.dumps(summary, sort_keys=True))
    return 1 if summary["disagreements"] else 0


if __name__ == "__main__":
    sys.exit(main())
