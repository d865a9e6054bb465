#!/usr/bin/env bash
# --device from the outside.
#
# Always (CI): the CPU-only binaries ($STRUX_BUILD) answer `--device cuda`
# with one line saying they were built without CUDA (exit 1, before the
# model loads), and a malformed device with a usage error (exit 2).
#
# With STRUX_EMU set (`make test-emu` sets it to build-emu: the CUDA backend
# on the CPU emulation of tests/gpu/emu, built by `make emu`): on the tiny
# random model, `strux generate --device cuda` gives the CPU backend's greedy
# ids over two schemas, `strux chat --reply` and `strux demo --model` (greedy)
# the CPU's reply, `strux model info --device cuda` the pages of --kv-gb, and
# perplexity agrees within 1%.  (The server,
# `struxd --device cuda`, is checked by tests/gpu/emu/device_check.py, also
# from `make test-emu`; `make test` skips this part so that CI pays for the
# emulator once.)  The GPU engine
# rounds GEMM inputs and the KV cache to bf16, so its logits are not the
# CPU's bit for bit: ids may differ only where the CPU's top two logits at
# the first differing position are within GAP_TOL = 0.05 (logit units, the
# same as log-prob units) and the GPU took the CPU's runner-up; that
# position and gap are printed either way.
# On the device the tokens are drawn by the device sampler (greedy too: only
# ids come back), which must give the host sampler's draws on the same
# logits (STRUX_CUDA_SAMPLER=host, temperature 1); against the CPU backend a
# temperature-1 draw that lands within bf16 rounding of a token's boundary
# in the cumulative weights moves to the neighbour, so those replies are
# compared for validity and their first difference printed.
# About 60 s of CPU with the emulator (a loaded 2-core box); skipped (TAP SKIP) without STRUX_EMU.  Needs $STRUX_BUILD and $STRUX_SHARED.
set -u
S="$STRUX_BUILD/strux"
D="$STRUX_BUILD/struxd"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
EMU=${STRUX_EMU:-}
GAP_TOL=0.05
T=$(mktemp -d /tmp/strux-cli-device.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
n=0 failed=0

check() { # check WHAT COMMAND...: the command's status is the verdict
    local what=$1
    shift
    n=$((n + 1))
    if "$@"; then
        echo "ok $n - $what"
    else
        echo "not ok $n - $what"
        failed=$((failed + 1))
    fi
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
# fails_well STATUS PREFIX CMD...: exits STATUS with one stderr line holding PREFIX, no stdout
fails_well() {
    local want=$1 text=$2
    shift 2
    timeout 60 "$@" >"$T/fw.out" 2>"$T/fw.err" </dev/null
    local rc=$?
    [ "$rc" = "$want" ] && [ "$(wc -l <"$T/fw.err")" = 1 ] && grep -q -- "$text" "$T/fw.err" &&
        [ ! -s "$T/fw.out" ] || {
        echo "# status $rc, stderr: $(head -c 300 "$T/fw.err")"
        return 1
    }
}

[ -x "$S" ] && [ -x "$D" ] || { echo "not ok 1 - $S or $D is not built"; exit 1; }
"$S" model random --shape tiny --seed 5 --out "$T/m" >/dev/null 2>"$T/model.err"
check "tiny model written" test -s "$T/m/model.safetensors"
M=(--model "$T/m")

NOCUDA="built without CUDA"
check "generate --device cuda: one line, built without CUDA" \
    fails_well 1 "$NOCUDA" "$S" generate "${M[@]}" --prompt hi --device cuda
check "generate --device cuda:1: the same" \
    fails_well 1 "$NOCUDA" "$S" generate "${M[@]}" --prompt hi --device cuda:1
check "perplexity --device cuda: the same" \
    fails_well 1 "$NOCUDA" "$S" perplexity "${M[@]}" --device cuda "$ROOT/README.md"
check "struxd --device cuda: the same, before loading the model" \
    fails_well 1 "$NOCUDA" "$D" --model "$T/no-such-model" --device cuda
echo '[{"role":"user","content":"Extract the invoice: ACME Corp, invoice 17, total 42.50 EUR"}]' \
    >"$T/conv.json"
check "chat --reply --device cuda: the same" \
    fails_well 1 "$NOCUDA" "$S" chat --reply "${M[@]}" --device cuda "$T/conv.json"
check "demo --model --device cuda: the same" \
    fails_well 1 "$NOCUDA" "$S" demo "${M[@]}" --device cuda --schema "$ROOT/schemas/invoice.json"
check "model info --device cuda: the same, before loading the model" \
    fails_well 1 "$NOCUDA" "$S" model info "$T/no-such-model" --device cuda
check "chat --device without --reply: a usage error" \
    fails_well 2 "go with --reply" "$S" chat --device cpu "$T/conv.json"
# 0.25 GiB of f32 cache at 4096 bytes a token: 65536 tokens, 4096 pages of
# 16; 1000 tokens take 63 pages, so 65 sequences fit
"$S" model info "$T/m" --device cpu --kv-gb 0.25 --context 1000 >"$T/info_cpu.out" 2>&1
check "model info --device cpu: the pages of --kv-gb and the sequences that fit" \
    grep -q "4096 pages of 16 tokens, 65536 tokens.*sequences:  65 of 1000 tokens" \
    <(tr '\n' ' ' <"$T/info_cpu.out")
check "generate --device tpu: a usage error" \
    fails_well 2 "want cpu, cuda or cuda:N" "$S" generate "${M[@]}" --prompt hi --device tpu
check "struxd --device cuda:x: a usage error" \
    fails_well 2 "want cuda:N" "$D" --model "$T/m" --device cuda:x

if [ -z "$EMU" ] || [ ! -x "$EMU/strux" ]; then
    skip "the CUDA backend on the emulator" "${EMU:+no $EMU/strux; }opt-in: make test-emu"
    [ "$failed" = 0 ]
    exit
fi

# gen NAME BIN DEVICE ARGS...: greedy unless ARGS say otherwise; ids kept, and on
# the CPU the top-2 log-probs (that explain a difference); on the device no
# log-probs are asked for, so its draws are the device sampler's
gen() {
    local name=$1 bin=$2 dev=$3 lp=()
    shift 3
    [ "$dev" = cpu ] && lp=(--top-logprobs 2)
    timeout 300 "$bin" generate "${M[@]}" --device "$dev" --print-ids "${lp[@]}" "$@" \
        </dev/null >"$T/$name.out" 2>"$T/$name.err"
    echo $? >"$T/$name.rc"
}
# drawn_on NAME WHERE: every draw of the run was made on WHERE (device|host)
drawn_on() {
    local line
    line=$(grep -a '^draws: ' "$T/$1.err")
    case $2 in
    device) [[ $line =~ ^draws:\ [1-9][0-9]*\ on\ the\ device,\ 0\ on ]] ;;
    host) [[ $line =~ ^draws:\ 0\ on\ the\ device,\ [1-9] ]] ;;
    esac || { echo "# $1: ${line:-no draws line}"; return 1; }
}
ids() { grep -av '^logprob ' "$T/$1.out" | tail -1; }
# same_ids CPU CUDA: equal, or differing first where the CPU's top-2 gap is within GAP_TOL
same_ids() {
    [ "$(cat "$T/$1.rc")" = 0 ] && [ "$(cat "$T/$2.rc")" = 0 ] || {
        echo "# status $(cat "$T/$1.rc") / $(cat "$T/$2.rc"): $(tail -1 "$T/$2.err")"
        return 1
    }
    python3 - "$T/$1.out" "$T/$2.out" "$GAP_TOL" <<'EOF'
import sys
def load(p):
    lines = open(p, encoding="utf-8", errors="replace").read().split("\n")
    lp = {}
    for l in lines:
        if l.startswith("logprob "):
            f = l.split(" ")
            lp[int(f[1])] = l
    ids = [l for l in lines if l and not l.startswith("logprob ")][-1].split()
    return ids, lp
a, lpa = load(sys.argv[1])
b, lpb = load(sys.argv[2])
tol = float(sys.argv[3])
k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), None)
if k is None and len(a) == len(b):
    print("# %d ids, all equal" % len(a))
    sys.exit(0)
if k is None:
    k = min(len(a), len(b))
line = lpa.get(k, "")
gap, top_ids = None, []
if "top:" in line and line.split(" ")[2] == a[k]:  # the log-prob line of that very token
    tops = line.split("top: ")[1].split(", ")
    top_ids = [t.split(" ")[0] for t in tops]
    if len(tops) >= 2:
        gap = float(tops[0].split(" ")[-1]) - float(tops[1].split(" ")[-1])
print("# first difference at position %d of %d: cpu %s, cuda %s; cpu top-2 %s, gap %s (tolerance %g)"
      % (k, len(a), a[k] if k < len(a) else "-", b[k] if k < len(b) else "-", top_ids,
         "%.4f" % gap if gap is not None else "n/a", tol))
# a near-tie, and the GPU took the CPU's runner-up
sys.exit(0 if gap is not None and gap <= tol and k < len(b) and b[k] in top_ids[:2] else 1)
EOF
}
P=(--prompt "Extract the invoice: ACME Corp, invoice 17, total 42.50 EUR" --max-tokens 48)
for sc in invoice contact_card; do
    gen "cpu_$sc" "$S" cpu "${P[@]}" --schema "$ROOT/schemas/$sc.json"
    gen "cuda_$sc" "$EMU/strux" cuda "${P[@]}" --schema "$ROOT/schemas/$sc.json"
    check "emulated cuda: greedy ids under $sc.json (argmax on the device) equal the CPU backend's" \
        same_ids "cpu_$sc" "cuda_$sc"
    check "emulated cuda: the $sc reply validates, every choice drawn on the device" \
        eval 'grep -q "^validator: valid" "$T/cuda_$sc.err" && drawn_on "cuda_$sc" device'
done

# temperature 1, same seed.  On the device the draws are the device sampler's
# (kernels/sampler.cu, the CPU sampler's arithmetic): with
# STRUX_CUDA_SAMPLER=host the same logits go to the CPU sampler instead, and
# the two runs must agree token for token.  Against the CPU backend the
# draws part where bf16 logits move a cumulative boundary past the draw
# (the random model's distribution is nearly flat): the first differing
# position is printed, with the ids on each side (neighbours in id order,
# the order of the draw, when that is the cause); that every such
# difference lies within the logits' bound is strux_gpu_tests sampled
# (make test-emu), which compares the draws position by position with the
# logits in hand.  n = 2 draws two choices in each step.
first_diff() { # first_diff WHAT CPU CUDA: prints the first differing position of each reply
    python3 - "$1" "$T/$2.out" "$T/$3.out" <<'EOF'
import sys
def replies(p):  # each reply's ids: its block's last line that is not a log-prob
    text = open(p, encoding="utf-8", errors="replace").read()
    out = []
    for block in text.split("\n--- reply ") if "--- reply " in text else [text]:
        lines = [l for l in block.split("\n") if l.strip() and not l.startswith("logprob ")]
        if lines and all(w.isdigit() for w in lines[-1].split()):
            out.append(lines[-1].split())
    return out
a, b = replies(sys.argv[2]), replies(sys.argv[3])
for r, (x, y) in enumerate(zip(a, b)):
    k = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), None)
    print("# %s, reply %d: " % (sys.argv[1], r) + ("%d ids, all equal to the CPU's" % len(x)
          if k is None and len(x) == len(y) else "first difference at position %s of %d: cpu %s, "
          "cuda %s" % (k, len(x), x[k] if k is not None else "-", y[k] if k is not None else "-")))
sys.exit(0 if len(a) == len(b) and a else 1)
EOF
}
T1=(--prompt "Extract the invoice: ACME Corp, invoice 17, total 42.50 EUR" --temperature 1)
gen cpu_t1 "$S" cpu "${T1[@]}" --max-tokens 48 --schema "$ROOT/schemas/invoice.json" --seed 3
gen cuda_t1 "$EMU/strux" cuda "${T1[@]}" --max-tokens 48 --schema "$ROOT/schemas/invoice.json" --seed 3
STRUX_CUDA_SAMPLER=host gen cuda_t1_host "$EMU/strux" cuda "${T1[@]}" --max-tokens 48 \
    --schema "$ROOT/schemas/invoice.json" --seed 3
check "emulated cuda: temperature 1 under invoice.json: replies on both backends" \
    first_diff "invoice.json, seed 3" cpu_t1 cuda_t1
check "emulated cuda: a temperature-1 reply validates, as the CPU's does" \
    eval 'grep -q "^validator: valid" "$T/cuda_t1.err" && grep -q "^validator: valid" "$T/cpu_t1.err"'
check "emulated cuda: temperature-1 draws on the device equal the host sampler's on the same logits" \
    eval 'drawn_on cuda_t1 device && drawn_on cuda_t1_host host && cmp -s "$T/cuda_t1.out" "$T/cuda_t1_host.out"'
gen cpu_n2 "$S" cpu "${T1[@]}" --max-tokens 20 --schema "$ROOT/schemas/contact_card.json" --seed 5 --n 2
gen cuda_n2 "$EMU/strux" cuda "${T1[@]}" --max-tokens 20 --schema "$ROOT/schemas/contact_card.json" \
    --seed 5 --n 2
check "emulated cuda: n = 2 at temperature 1 under contact_card.json: two replies on both backends" \
    first_diff "contact_card.json, n = 2, seed 5" cpu_n2 cuda_n2
check "emulated cuda: both choices validate, drawn on the device" \
    eval '[ "$(grep -c "^validator: valid" "$T/cuda_n2.err")" = 2 ] && drawn_on cuda_n2 device'

# strux chat --reply and strux demo --model through the same backends
chat() { timeout 300 "$1" chat --reply "${M[@]}" --device "$2" --print-ids --max-tokens 40 \
    --schema "$ROOT/schemas/invoice.json" "$T/conv.json" >"$T/chat_$2.out" 2>"$T/chat_$2.err"
    echo $? >"$T/chat_$2.rc"; }
chat "$S" cpu
chat "$EMU/strux" cuda
check "emulated cuda: strux chat --reply gives the CPU backend's greedy ids" same_ids chat_cpu chat_cuda
check "emulated cuda: the chat reply validates" grep -q "^validator: valid" "$T/chat_cuda.err"
demo() { timeout 300 "$1" demo "${M[@]}" --device "$2" --temperature 0 --max-tokens 40 \
    --schema "$ROOT/schemas/contact_card.json" >"$T/demo_$2.out" 2>"$T/demo_$2.err"; }
demo "$S" cpu
demo "$EMU/strux" cuda
check "emulated cuda: strux demo --model (greedy) prints the CPU backend's document, valid" \
    eval 'cmp -s "$T/demo_cpu.out" "$T/demo_cuda.out" && grep -q "^validator: valid" "$T/demo_cuda.err"'
# bf16 cache on the device: 2048 bytes a token, so twice the CPU's pages
"$EMU/strux" model info "$T/m" --device cuda --kv-gb 0.25 --context 1000 >"$T/info_cuda.out" 2>&1
check "emulated cuda: model info --device cuda: its pages of --kv-gb and the sequences that fit" \
    grep -q "device: *cuda.*8192 pages of 16 tokens, 131072 tokens.*sequences:  130 of 1000 tokens" \
    <(tr '\n' ' ' <"$T/info_cuda.out")

# every scored token needs a whole logits row, slow on the emulator: a short text
head -c 400 "$ROOT/README.md" >"$T/text.txt"
ppl() { timeout 300 "$1" perplexity "${M[@]}" --device "$2" --window 16 --stride 8 \
    --max-tokens 24 "$T/text.txt" 2>"$T/ppl_$2.err" | sed -n 's/^perplexity: *//p'; }
pc=$(ppl "$S" cpu)
pg=$(ppl "$EMU/strux" cuda)
echo "# perplexity cpu $pc, emulated cuda $pg"
check "emulated cuda: perplexity within 1% of the CPU's" \
    python3 -c "import sys; a, b = float('$pc'), float('$pg'); sys.exit(abs(a - b) > 0.01 * a)"

[ "$failed" = 0 ]
