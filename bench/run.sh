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
echo "== mask fast paths vs the reference walk: every 20th MaskBench schema, every instance (bench_mask_ref) =="
# ~8 ms of reference walk per mask: about 15 CPU-minutes for the ~100k masks
"$B/bench_mask_ref" --every 20 "$SHARED"/maskbench/*.json | tail -5
echo "== generative soundness: every MaskBench schema, 20 documents each =="
STRUX_BUILD="$B" STRUX_SHARED="$SHARED" bench/fuzzgen.sh 20
echo "== schema fuzzer: random schemas compiled, masked and sampled (1 s compile, 50 ms mask) =="
mkdir -p "$B/fuzzschema-failures"
"$B/strux" fuzzschema --tokenizer "$SHARED/qwen3-tokenizer/tokenizer.json" --seed "${STRUX_FUZZSCHEMA_SEED:-1}" \
    --time-limit "${STRUX_FUZZSCHEMA_SECONDS:-120}" --fixtures tests/fixtures/schemagen \
    --out-dir "$B/fuzzschema-failures"
echo "== sampler, 151,936-token vocabulary: strux =="
"$B/bench_sampler"
# The engine on a random model of Qwen3-0.6B's shapes (speed depends on
# shapes, not values), and transformers on the same files, same threads.
MODEL=${STRUX_BENCH_MODEL:-models/random-0.6b}
if [ ! -f "$MODEL/model.safetensors" ]; then
    echo "(writing a random-weight Qwen3-0.6B into $MODEL for the engine figures)"
    "$B/strux" model random --shape 0.6b --seed 1 --out "$MODEL" >/dev/null
fi
T=${STRUX_THREADS:-$(nproc)}
echo "== CPU engine, $MODEL, $T threads: strux (bench_decode) =="
"$B/bench_decode" --model "$MODEL" --threads "$T" --prompt 512 --decode 24
echo "== speculative decoding, $MODEL, $T threads: verify pass vs decode step, controlled acceptance, sx_gen (bench_spec) =="
STRUX_SHARED="$SHARED" "$B/bench_spec" --model "$MODEL" --threads "$T" --k 4 --tokens 64 --rounds 3
if [ -x .venv/bin/python ] && .venv/bin/python -c "import torch, transformers" 2>/dev/null; then
    echo "== CPU engine, $MODEL, $T threads: Hugging Face transformers (generate) =="
    .venv/bin/python bench/peers/hf_generate.py --model "$MODEL" --threads "$T" --prompt 512 --decode 24
else
    echo "(transformers peer skipped: 'make fixtures' installs torch and transformers into .venv)"
fi
# Schema-constrained generation: strux (sparse LM head), strux --dense-logits
# and, when the venv has XGrammar, transformers + XGrammar on the same files.
if [ -x .venv/bin/python ] && .venv/bin/python -c "import torch, transformers, xgrammar" 2>/dev/null; then
    echo "== schema-constrained generation, $MODEL, $T threads: strux vs transformers + XGrammar =="
    STRUX_BUILD="$B" bench/constrained_alternate.sh --model "$MODEL" --threads "$T" --rounds 3
else
    echo "== schema-constrained generation, $MODEL, $T threads: strux (peer skipped: pip install xgrammar==0.2.9 into .venv) =="
    STRUX_BUILD="$B" bench/constrained_alternate.sh --model "$MODEL" --threads "$T" --rounds 3 --no-peer
fi
