#!/usr/bin/env bash
# make bench: strux's figures and the peers' side by side, same machine,
# same run.  Results are printed; docs/BENCHMARKS.md records them by hand
# with the date and the machine.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${STRUX_BUILD:-build}
SHARED=${STRUX_SHARED:-../shared}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
if [ -x "$B/bench_tokenizer" ]; then
    echo "== tokenizer encode, single thread: strux =="
    "$B/bench_tokenizer" --cases tests/fixtures/tokenizer_cases.jsonl --tokenizer "$SHARED/qwen3-tokenizer/tokenizer.json"
fi
if [ -x .venv/bin/python ]; then
    echo "== tokenizer encode, single thread: Hugging Face tokenizers =="
    .venv/bin/python bench/peers/tokenizer_peer.py
else
    echo "(peer tokenizer skipped: run 'make fixtures' once to create .venv)"
fi
echo "== MaskBench sample (bench/maskbench_sample.txt), single thread: strux =="
sed "s|^|$SHARED/maskbench/|" bench/maskbench_sample.txt | xargs "$B/strux" maskbench --threads 1 --quiet --timeout-ms 60000
