#!/usr/bin/env bash
# MaskBench ratchet: a fixed sample of ../shared/maskbench runs through
# `strux maskbench` (the published method, real Qwen3 tokenizer).  Never an
# invalidation error, a crash, a timeout, an untokenizable instance or a
# matcher inconsistency; passing never below the committed baseline (raise
# the baseline when it improves).
set -u
B=${STRUX_BUILD:?}; S=${STRUX_SHARED:?}
n=0; fail=0
check() { n=$((n+1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fail=1; fi; }
files=$(sed "s|^|$S/maskbench/|" tests/fixtures/maskbench_ci_sample.txt)
T=$(mktemp -d /tmp/strux-mb-sample.XXXXXX)
trap 'rm -rf "$T"' EXIT
out=$("$B/strux" maskbench --threads 2 --timeout-ms 120000 --quiet --out "$T/mb.jsonl" $files | tail -1)
echo "# $out"
get() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$out" "$1"; }
base=$(python3 -c "import json; print(json.load(open('tests/fixtures/maskbench_ci_baseline.json'))['passing'])")
check "summary is one JSON line" '[ -n "$(get schemas 2>/dev/null)" ]'
check "all $(wc -l < tests/fixtures/maskbench_ci_sample.txt) schemas ran" '[ "$(get schemas)" -eq "$(wc -l < tests/fixtures/maskbench_ci_sample.txt)" ]'
check "zero invalidation errors (soundness)" '[ "$(get invalidation_error)" -eq 0 ]'
check "zero crashes" '[ "$(get crash)" -eq 0 ]'
check "zero timeouts" '[ "$(get timeout)" -eq 0 ]'
# an instance left out because the tokenizer cannot encode it, or a token the
# mask allowed and the matcher then refused, would otherwise hide in the counts
check "every one of $(get instances) instances tokenized (untokenizable 0)" \
    '[ "$(get instances)" -gt 0 ] && [ "$(get untokenizable)" -eq 0 ]'
check "zero matcher inconsistencies (mask allowed, matcher refused)" '[ "$(get inconsistent)" -eq 0 ]'
check "passing $(get passing) >= baseline $base" '[ "$(get passing)" -ge "$base" ]'
# per schema: each one the baseline lists as passing still passes (a count
# alone would let a regression hide behind an improvement)
lost=$(python3 - "$T/mb.jsonl" <<'PY'
import json, sys
base = set(json.load(open("tests/fixtures/maskbench_ci_baseline.json"))["passing_files"])
now = {json.loads(l)["file"].rsplit("/", 1)[-1]: json.loads(l)["status"] for l in open(sys.argv[1])}
lost = sorted(f for f in base if now.get(f) != "passing")
gained = sorted(f for f, st in now.items() if st == "passing" and f not in base)
for f in gained:
    print("# improved: %s now passes (add it to the baseline)" % f, file=sys.stderr)
for f in lost:
    print("# regressed: %s is %s" % (f, now.get(f, "missing")), file=sys.stderr)
print(len(lost))
PY
)
check "every schema of the baseline's passing_files still passes ($lost regressed)" '[ "$lost" = 0 ]'
# integers past 64 bits: instances tokenized with their digits (both ways
# judged right), a schema number strux cannot hold refused with its pointer
bo=$("$B/strux" maskbench --quiet --out "$T/big.jsonl" tests/fixtures/maskbench_big/bigint.json \
     tests/fixtures/maskbench_big/bigbound.json | tail -1)
bget() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$bo" "$1"; }
check "an instance past int64 is read with its digits: bigint.json passes (4 instances)" \
  '[ "$(bget passing)" = 1 ] && [ "$(bget instances)" = 4 ] && grep bigint.json "$T/big.jsonl" | grep -q "\"status\":\"passing\""'
check "a schema number past a double's digits is a compile error at /enum/0, not 'cannot read'" \
  'grep "bigbound.json" "$T/big.jsonl" | grep -q "significant digits.*at /enum/0"'
exit $fail
