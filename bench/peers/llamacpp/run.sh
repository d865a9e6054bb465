#!/usr/bin/env bash
# llama.cpp (llama-cpp-python, built from source) measured beside strux on the
# same random Qwen3-0.6B-shape model, same machine, same run.  Bench-only.
#
# usage: bench/peers/llamacpp/run.sh setup|speed|ppl|grammar|summary|all|server
#   setup    the venv bench/peers/llamacpp/.venv (llama-cpp-python compiled
#            natively for this CPU), the converter's deps in the repo .venv,
#            build/strux and build/bench_decode, the model
#            (strux model random --shape 0.6b --seed 1) and its GGUF files:
#            bf16 (convert_hf_to_gguf.py from the sdist), Q8_0, Q4_0, Q4_K_M
#            (llama_model_quantize from the bf16 file)
#   speed    ROUNDS rounds (default 3), each strux bench_decode (bf16, int8,
#            q4) beside llama.cpp (bf16, Q8_0, Q4_0, Q4_K_M): prefill 512
#            tokens, decode after 16 tokens, batched decode B = 1/4/16
#   ppl      perplexity, bits per byte, KL to bf16 on one text, window 512,
#            stride 256, the first PPL_TOKENS tokens, both engines
#   grammar  accept, then gen:
#   accept   JSON Schema acceptance over schemas/ and the MaskBench sample,
#            both engines (llama.cpp: GBNF built and parsed on the vocabulary;
#            strux: strux compile)
#   gen      greedy schema-constrained generation on schemas/ and every
#            MB_EVERY-th (15) MaskBench sample schema, both engines, bf16,
#            at most MAXT tokens, replies validated by Python jsonschema
#   summary  the markdown tables (bench/peers/llamacpp/summarize.py)
#   server   struxd beside llama.cpp's llama-server on the extraction job
#            (server_bench.py): builds llama-server and llama-quantize from the
#            sdist's llama.cpp ($WORK/llama-build, native, Release), the model
#            and its bf16 GGUF (gguf_from_hf.py when the repo venv has no torch
#            for convert_hf_to_gguf.py) and Q8_0, then SERVER_ARGS are passed
#            to server_bench.py (default: --threads 2); not part of `all`
# Environment: THREADS (default 1: fairest on a shared box -- neither engine
# gets a core the other's helper threads compete for), ROUNDS, MAXT (96), MB_EVERY,
# GEN_ENGINES ("llamacpp strux"), SPEED_TOGETHER (1), REPS (3), PPL_TOKENS (2048),
# WORK (default bench/peers/llamacpp/work; results in $WORK/results), SERVER_ARGS.
set -euo pipefail
SELF=$(realpath "$0")
cd "$(dirname "$0")/../../.."
HERE=bench/peers/llamacpp
WORK=${WORK:-$HERE/work}
RES=$WORK/results
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-3}
MAXT=${MAXT:-96}
PPL_TOKENS=${PPL_TOKENS:-2048}
SPEED_TOGETHER=${SPEED_TOGETHER:-1}
REPS=${REPS:-3}
MB_EVERY=${MB_EVERY:-15}
GEN_ENGINES=${GEN_ENGINES:-llamacpp strux}
VER=0.3.36
PYL=$HERE/.venv/bin/python
PYR=${STRUX_PYTHON:-.venv/bin/python}
SRC=$HERE/.cache/llama_cpp_python-$VER/vendor/llama.cpp
MODEL=$WORK/random-0.6b
G=$WORK/gguf/random-0.6b
SHARED=${STRUX_SHARED:-../shared}
PROMPT="Extract the fields as JSON from this message: Invoice 4411 from ACME GmbH, 3 x 12.50 EUR and 1 x 99.00 EUR, total 136.50 EUR, already paid by card. Customer asks why shipping is late."
MB_PROMPT="Write one JSON document that satisfies the schema."
# Native build of ggml for this CPU; the llama.cpp tools, tests, server and
# multimodal library are not needed (the Python API drives everything).
export CMAKE_ARGS=${CMAKE_ARGS:-"-DGGML_NATIVE=ON -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_BLAS=OFF -DGGML_OPENMP=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF"}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
export OMP_NUM_THREADS=$THREADS
# see llamacpp_peer.py: the AMX / repacked weight buffers crash this build on AMX CPUs
export LLAMACPP_EXTRA_BUFTS=${LLAMACPP_EXTRA_BUFTS:-0}

stamp() { echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC') $*" >&2; }

setup() {
    mkdir -p "$HERE/.cache" "$WORK/gguf" "$RES"
    if ! "$PYL" -c "import llama_cpp, jsonschema, numpy" 2>/dev/null; then
        [ -x "$PYL" ] || python3 -m venv "$HERE/.venv"
        stamp "building llama-cpp-python $VER from source (CMAKE_ARGS=$CMAKE_ARGS); 20-60 min on 2 cores"
        nice "$PYL" -m pip install -r "$HERE/requirements.txt"
    fi
    if [ ! -f "$SRC/convert_hf_to_gguf.py" ]; then
        # the converter that ships with this llama.cpp: from the same sdist
        "$PYL" -m pip download -q "llama-cpp-python==$VER" --no-deps --no-binary :all: -d "$HERE/.cache"
        tar xzf "$HERE/.cache/llama_cpp_python-$VER.tar.gz" -C "$HERE/.cache" \
            "llama_cpp_python-$VER/vendor/llama.cpp/convert_hf_to_gguf.py" \
            "llama_cpp_python-$VER/vendor/llama.cpp/conversion" \
            "llama_cpp_python-$VER/vendor/llama.cpp/gguf-py"
    fi
    # the converter runs in the repo venv: torch and transformers come with the
    # fixture tools (tests/fixtures/requirements.txt), which `make deps` does not
    # install, so a fresh machine needs them here
    "$PYR" -c "import torch, transformers, sentencepiece" 2>/dev/null ||
        "$PYR" -m pip install -r tests/fixtures/requirements.txt -r "$HERE/requirements-convert.txt"
    nice make CUDA=0 build/strux build/bench_decode
    [ -f "$MODEL/model.safetensors" ] ||
        build/strux model random --shape 0.6b --seed 1 --out "$MODEL" --tokenizer "$SHARED/qwen3-tokenizer/tokenizer.json"
    [ -f "$G-bf16.gguf" ] ||
        nice env PYTHONPATH="$SRC/gguf-py" "$PYR" "$SRC/convert_hf_to_gguf.py" "$MODEL" \
            --outtype bf16 --outfile "$G-bf16.gguf" >"$WORK/convert.log" 2>&1
    for q in q8_0 q4_0 q4_k_m; do
        [ -f "$G-$q.gguf" ] ||
            nice "$PYL" "$HERE/llamacpp_peer.py" quantize --src "$G-bf16.gguf" --out "$G-$q.gguf" --type "$q" \
                >>"$RES/quantize.jsonl"
    done
    ls -l "$WORK/gguf"
}

versions() {
    {
        echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) CPUs"
        echo "llama_cpp_python: $("$PYL" -c 'import llama_cpp; print(llama_cpp.__version__)')"
        echo "llama_cpp_system_info: $("$PYL" -c 'import llama_cpp; print(llama_cpp.llama_print_system_info().decode())')"
        echo "strux: $(git rev-parse --short HEAD)"
        echo "threads: $THREADS"
    } >"$RES/versions.txt"
}

speed() {
    mkdir -p "$RES"
    # the binaries measured are this tree's: a bench_decode linked before the
    # last merge would measure old kernels (plain `make` does not relink it)
    nice make CUDA=0 build/strux build/bench_decode >/dev/null
    versions
    : >"$RES/speed-llamacpp.jsonl"
    : >"$RES/speed-strux.txt"
    local r sx ll
    for r in $(seq 1 "$ROUNDS"); do
        # SPEED_TOGETHER=1 (default): both engines at once, so a shared machine's load falls on
        # both alike (each has its own thread); 0: strux, then llama.cpp
        stamp "speed round $r of $ROUNDS (together: $SPEED_TOGETHER)"
        sx=$WORK/speed-strux-r$r.txt ll=$WORK/speed-llamacpp-r$r.jsonl
        echo "== round $r" >"$sx"
        build/bench_decode --model "$MODEL" --threads "$THREADS" --prompt 512 --decode 24 \
            --decode-context 16 --modes bf16,int8,q4 --rounds 1 --bw-mib 1024 >>"$sx" &
        [ "$SPEED_TOGETHER" = 1 ] || wait
        "$PYL" "$HERE/llamacpp_peer.py" speed --threads "$THREADS" --prompt 512 --decode 24 \
            --decode-context 16 --reps "$REPS" --gguf "$G-bf16.gguf" --gguf "$G-q8_0.gguf" \
            --gguf "$G-q4_0.gguf" --gguf "$G-q4_k_m.gguf" | sed "s/^{/{\"round\": $r, /" >"$ll"
        wait
        cat "$sx" >>"$RES/speed-strux.txt"
        cat "$ll" >>"$RES/speed-llamacpp.jsonl"
    done
}

ppl_text() { # the text of the q4 quality section of docs/BENCHMARKS.md
    { git show f05c747:README.md; cat schemas/samples/*.txt; } >"$WORK/ppl_text.txt"
}

ppl() {
    mkdir -p "$RES"
    ppl_text
    for m in bf16 int8 q4; do
        stamp "ppl strux $m"
        flag=""; [ "$m" = bf16 ] || flag="--$m --kl-to bf16"
        # shellcheck disable=SC2086
        build/strux perplexity --model "$MODEL" --threads "$THREADS" --window 512 --stride 256 \
            --max-tokens "$PPL_TOKENS" $flag "$WORK/ppl_text.txt" >"$RES/ppl-strux-$m.txt"
    done
    stamp "ppl llama.cpp"
    "$PYL" "$HERE/llamacpp_peer.py" ppl --threads "$THREADS" --window 512 --stride 256 --max-tokens "$PPL_TOKENS" \
        --text "$WORK/ppl_text.txt" --ref "$G-bf16.gguf" --gguf "$G-q8_0.gguf" --gguf "$G-q4_0.gguf" \
        --gguf "$G-q4_k_m.gguf" >"$RES/ppl-llamacpp.jsonl"
}

grammar_lists() { # ALL: schemas/ and the MaskBench sample; GEN: schemas/ and every MB_EVERY-th of the sample
    mkdir -p "$RES" "$WORK/schemas"
    # MaskBench files hold {"schema", "tests"}: the schema alone for both engines
    "$PYR" -c '
import json, sys, os
src, dst = sys.argv[1], sys.argv[2]
for name in open("bench/maskbench_sample.txt").read().split():
    d = json.load(open(os.path.join(src, name), encoding="utf-8"))
    json.dump(d["schema"], open(os.path.join(dst, "mb_" + name), "w", encoding="utf-8"))
' "$SHARED/maskbench" "$WORK/schemas"
    ALL=() GEN=()
    for f in schemas/*.json; do ALL+=("$f"); GEN+=("$f"); done
    local i=0
    for n in $(cat bench/maskbench_sample.txt); do
        ALL+=("$WORK/schemas/mb_$n")
        [ $((i % MB_EVERY)) -eq 0 ] && GEN+=("$WORK/schemas/mb_$n")
        i=$((i + 1))
    done
}

accept() {
    grammar_lists
    stamp "grammar: acceptance, ${#ALL[@]} schemas"
    "$PYL" "$HERE/llamacpp_peer.py" accept --gguf "$G-bf16.gguf" "${ALL[@]}" >"$RES/accept-llamacpp.jsonl"
    # strux: strux compile for schemas/ (one process each), strux maskbench for the sample
    # (one process, compile_error per schema; it also runs every test instance)
    : >"$RES/accept-strux.jsonl"
    for f in schemas/*.json; do
        if build/strux compile --schema "$f" >/dev/null 2>"$WORK/compile.err"; then ok=true; else ok=false; fi
        "$PYR" -c 'import json,sys; print(json.dumps({"schema": sys.argv[1], "accepted": sys.argv[2] == "true", "error": open(sys.argv[3]).read().strip()[-200:] if sys.argv[2] != "true" else ""}))' \
            "$f" "$ok" "$WORK/compile.err" >>"$RES/accept-strux.jsonl"
    done
    # shellcheck disable=SC2046
    build/strux maskbench --quiet --out "$RES/maskbench-strux.jsonl" \
        $(sed "s|^|$SHARED/maskbench/|" bench/maskbench_sample.txt) >"$RES/maskbench-strux.summary"
}

gen() {
    grammar_lists
    stamp "grammar: generation, ${#GEN[@]} schemas"
    local e
    for e in $GEN_ENGINES; do : >"$RES/gen-$e.jsonl"; done
    for f in "${GEN[@]}"; do
        p=$PROMPT; case "$f" in */mb_*) p=$MB_PROMPT ;; esac
        case " $GEN_ENGINES " in *" llamacpp "*)
            timeout 600 "$PYL" "$HERE/llamacpp_peer.py" generate --gguf "$G-bf16.gguf" --schema "$f" \
                --prompt "$p" --max-tokens "$MAXT" --threads "$THREADS" >>"$RES/gen-llamacpp.jsonl" 2>"$WORK/gen.err" ||
                echo "{\"engine\": \"llama.cpp\", \"schema\": \"$f\", \"crash\": true}" >>"$RES/gen-llamacpp.jsonl"
        esac
        case " $GEN_ENGINES " in *" strux "*)
            rc=0
            timeout 600 build/strux generate --model "$MODEL" --threads "$THREADS" --prompt "$p" --schema "$f" \
                --compact --max-tokens "$MAXT" >"$WORK/sx.out" 2>"$WORK/sx.err" || rc=$?
            "$PYR" "$HERE/summarize.py" strux-gen "$f" "$rc" "$WORK/sx.out" "$WORK/sx.err" >>"$RES/gen-strux.jsonl"
        esac
    done
}

summary() { "$PYR" "$HERE/summarize.py" tables "$RES"; }

# llama-server from the llama.cpp of the pinned sdist (the whole vendor tree,
# not only the converter setup() extracts), built for this CPU as the Python
# bindings are; 10-60 min on two cores
server_setup() {
    mkdir -p "$HERE/.cache" "$WORK/gguf"
    local tgz=$HERE/.cache/llama_cpp_python-$VER.tar.gz
    [ -f "$tgz" ] ||
        "$PYR" -m pip download -q "llama-cpp-python==$VER" --no-deps --no-binary :all: -d "$HERE/.cache"
    [ -f "$SRC/tools/server/server.cpp" ] ||
        tar xzf "$tgz" -C "$HERE/.cache" "llama_cpp_python-$VER/vendor/llama.cpp"
    local b=$WORK/llama-build
    if [ ! -x "$b/bin/llama-server" ] || [ ! -x "$b/bin/llama-quantize" ]; then
        stamp "building llama-server $VER (native, Release, -j2)"
        nice cmake -S "$SRC" -B "$b" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_CUDA=OFF \
            -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_BLAS=OFF -DGGML_OPENMP=ON -DLLAMA_BUILD_TESTS=OFF \
            -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_OPENSSL=OFF \
            -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >"$WORK/cmake.log"
        nice cmake --build "$b" --config Release -j2 --target llama-server llama-quantize >"$WORK/build.log"
    fi
    nice make CUDA=0 build/strux build/struxd >/dev/null
    [ -f "$MODEL/model.safetensors" ] ||
        build/strux model random --shape 0.6b --seed 1 --out "$MODEL" --tokenizer "$SHARED/qwen3-tokenizer/tokenizer.json"
    if [ ! -f "$G-bf16.gguf" ]; then
        if "$PYR" -c "import torch, transformers, sentencepiece" 2>/dev/null; then
            nice env PYTHONPATH="$SRC/gguf-py" "$PYR" "$SRC/convert_hf_to_gguf.py" "$MODEL" \
                --outtype bf16 --outfile "$G-bf16.gguf" >"$WORK/convert.log" 2>&1
        else
            nice env PYTHONPATH="$SRC/gguf-py" "$PYR" "$HERE/gguf_from_hf.py" "$MODEL" "$G-bf16.gguf"
        fi
    fi
    [ -f "$G-q8_0.gguf" ] || nice "$b/bin/llama-quantize" "$G-bf16.gguf" "$G-q8_0.gguf" Q8_0 >"$WORK/quantize.log" 2>&1
}

server() {
    server_setup
    mkdir -p "$RES/server"
    {
        echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) CPUs, flags: $(grep -o -w 'avx2\|avx512f\|avx512_bf16\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
        echo "llama-server: $("$WORK/llama-build/bin/llama-server" --version 2>&1 | tr '\n' ' ')"
        echo "strux: $(git rev-parse --short HEAD)"
        echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    } >"$RES/server/versions.txt"
    # shellcheck disable=SC2086
    nice "$PYR" "$HERE/server_bench.py" --struxd build/struxd --model "$MODEL" \
        --llama-server "$WORK/llama-build/bin/llama-server" --gguf "$G-bf16.gguf" --out "$RES/server" \
        ${SERVER_ARGS:---threads 2}
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$RES/server/versions.txt"
}

case "${1:-}" in
setup) setup ;;
speed) speed ;;
ppl) ppl ;;
accept) accept ;;
gen) gen ;;
grammar) accept; gen ;;
summary) summary ;;
all) setup; speed; ppl; accept; gen; summary ;;
server) server ;;
*) sed -n 2,34p "$SELF"; exit 2 ;;
esac
