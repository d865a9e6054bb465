#!/usr/bin/env bash
# Every CPU kernel path this machine has, through the product: the rest of
# the suite runs the fastest path (amx > avx512 > avx2 > scalar), so an AMX
# machine would never run its AVX-512 or AVX2 kernels end to end.  Here each
# path below the fastest is forced with STRUX_CPU and checked as
# tests/cli/test_perplexity.sh checks the fastest one:
#   - bf16 perplexity of the fixture text equals transformers' (1e-4);
#   - --int8 and --q4 with --kl-to bf16: perplexity and KL within the bands
#     test_perplexity.sh states (the same numbers, one place to read them);
#   - the AWQ/FP8 reference logits (build/tests/test_model_quant) on that path;
#   - on avx512 where the CPU has AVX512-BF16: --bf16-act within 1% (an AMX
#     machine otherwise keeps its own tile products and never runs it).
# scalar is checked on the first 40 tokens only (bf16, against the fastest
# path; ~20x slower, and its int8/q4 kernels are test_cpu_kernels.c's).
# A path the CPU lacks is a TAP skip.  Skipped as a whole under STRUX_LIGHT
# (make asan: ~10x slower there; the plain test stage runs it).
# Needs $STRUX_BUILD (absolute build dir: strux, tests/test_model_quant),
# $STRUX_SHARED and python3 (standard library only).
set -u
S="${STRUX_BUILD:?}/strux"
REF=tests/fixtures/model_ref/small_gqa_tied.json
TEXT=tests/fixtures/model_ref/ppl_text.txt
n=0 failed=0
if [ -n "${STRUX_LIGHT:-}" ]; then
    echo "ok 1 - every CPU path below the fastest # SKIP under STRUX_LIGHT (the plain test stage runs it)"
    exit 0
fi
T=$(mktemp -d /tmp/strux-cli-paths.XXXXXX)
trap 'rm -rf "$T"' EXIT

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
# run NAME PATH ARGS...: strux perplexity on path PATH ("" = the default)
run() {
    local name=$1 path=$2
    shift 2
    env ${path:+STRUX_CPU=$path} timeout 300 "$S" perplexity --model "$T/m" "$@" </dev/null \
        >"$T/$name.out" 2>"$T/$name.err"
    echo $? >"$T/$name.rc"
}
rc() { cat "$T/$1.rc"; }
field() { sed -n "s/^$2: *//p" "$T/$1.out"; }
ref() { python3 -c "import json,sys; d=json.load(open('$REF')); print($1)"; }
# within A LO HI: LO <= A <= HI (numbers as strux prints them)
within() {
    python3 -c 'import sys; a, lo, hi = map(float, sys.argv[1:]); sys.exit(not lo <= a <= hi)' \
        "$1" "$2" "$3" 2>/dev/null || { echo "# $1 is not within [$2, $3]"; return 1; }
}
# rel A B: |A / B - 1|
rel() { python3 -c 'import sys; a, b = map(float, sys.argv[1:]); print(abs(a / b - 1))' "$1" "$2"; }

[ -x "$S" ] || { echo "not ok 1 - $S is not built"; exit 1; }
mapfile -t args < <(ref "'\n'.join(d['strux_model_random'])")
"$S" model random "${args[@]}" --no-tokenizer --out "$T/m" >/dev/null 2>"$T/model.err"
check "fixture model written" test -s "$T/m/model.safetensors"

# the fastest path, as every other test runs it: its name and the first 40 tokens' perplexity
run best "" --window 64 --stride 32 --max-tokens 40 "$TEXT"
best=$(field best activations | sed -n 's/.*(path \(.*\))$/\1/p')
check "the default path names itself" sh -c "[ $(rc best) = 0 ] && [ -n '$best' ]"
echo "# path $best (the default: the rest of the suite runs it)"
ppl_ref=$(ref "d['ppl'][0]['ppl']")
w=$(ref "d['ppl'][0]['window']")
s=$(ref "d['ppl'][0]['stride']")

below=0
for p in amx avx512 avx2 scalar; do
    [ "$p" = "$best" ] && { below=1; continue; }
    [ $below = 1 ] || continue
    run "probe_$p" "$p" --window 64 --stride 32 --max-tokens 40 "$TEXT"
    if [ "$(rc "probe_$p")" != 0 ]; then
        # a lower path every x86-64 CPU with the faster one has; say so if not
        if grep -q "STRUX_CPU=$p: this CPU does not support it" "$T/probe_$p.err"; then
            skip "path $p" "this CPU lacks $p"
        else
            check "path $p: strux perplexity runs" false
            sed 's/^/# /' "$T/probe_$p.err" | tail -3
        fi
        continue
    fi
    echo "# path $p (forced with STRUX_CPU)"
    act=$(field "probe_$p" activations)
    check "path $p: runs and names itself" [ "$act" = "f32 in matrix products (path $p)" ]
    # f32-accurate paths (AMX's split-bf16 tiles too) differ only in
    # summation order: ~1e-8 measured avx2 vs scalar; 1e-4 is the bound each
    # is held to against transformers
    check "path $p: first 40 tokens' perplexity as the $best path's (1e-4)" \
        within "$(rel "$(field "probe_$p" perplexity)" "$(field best perplexity)")" 0 1e-4
    [ "$p" = scalar ] && continue
    run "bf16_$p" "$p" --window "$w" --stride "$s" "$TEXT"
    check "path $p: bf16 perplexity equals transformers' (1e-4)" \
        within "$(rel "$(field "bf16_$p" perplexity)" "$ppl_ref")" 0 1e-4
    # bands: see tests/cli/test_perplexity.sh (int8 and q4 with --kl-to bf16)
    run "int8_$p" "$p" --window "$w" --stride "$s" --int8 --kl-to bf16 "$TEXT"
    check "path $p: --int8 perplexity within 0.5% of bf16, KL in [2e-6, 1e-4]" sh -c \
        "[ $(rc "int8_$p") = 0 ] &&
         python3 -c 'import sys; a, b, k = map(float, sys.argv[1:]); sys.exit(not (abs(a / b - 1) <= 0.005 and 2e-6 <= k <= 1e-4))' \
             '$(field "int8_$p" perplexity)' '$(field "int8_$p" bf16_perplexity)' '$(field "int8_$p" kl_to_bf16)'"
    echo "# path $p int8: KL $(field "int8_$p" kl_to_bf16), activations $(field "int8_$p" activations)"
    run "q4_$p" "$p" --window "$w" --stride "$s" --q4 --kl-to bf16 "$TEXT"
    check "path $p: --q4 perplexity within 1% of bf16, KL in [1.5e-3, 6e-3]" sh -c \
        "[ $(rc "q4_$p") = 0 ] &&
         python3 -c 'import sys; a, b, k = map(float, sys.argv[1:]); sys.exit(not (abs(a / b - 1) <= 0.01 and 1.5e-3 <= k <= 6e-3))' \
             '$(field "q4_$p" perplexity)' '$(field "q4_$p" bf16_perplexity)' '$(field "q4_$p" kl_to_bf16)'"
    echo "# path $p q4: KL $(field "q4_$p" kl_to_bf16)"
    STRUX_CPU=$p timeout 120 "$STRUX_BUILD/tests/test_model_quant" >"$T/quant_$p.out" 2>&1
    qrc=$?
    check "path $p: AWQ/FP8 logits against transformers' (test_model_quant)" sh -c \
        "[ $qrc = 0 ] && grep -q '# path $p ' '$T/quant_$p.out' || { tail -5 '$T/quant_$p.out' | sed 's/^/# /'; false; }"
    if [ "$p" = avx512 ]; then
        run "bact_$p" "$p" --window "$w" --stride "$s" --bf16-act "$TEXT"
        if [ "$(rc "bact_$p")" = 0 ]; then
            check "path avx512: --bf16-act rounds to bf16 and stays within 1% of f32" sh -c \
                "[ '$(field "bact_$p" activations)' = 'bf16 in matrix products (path avx512-bf16act)' ] &&
                 python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a / b - 1) > 0.01)' \
                     '$(field "bact_$p" perplexity)' '$(field "bf16_$p" perplexity)'"
        else
            skip "path avx512: --bf16-act within 1% of f32" "no AVX512-BF16 on this CPU"
        fi
    fi
done
[ $below = 1 ] || check "the default path '$best' is one of amx, avx512, avx2, scalar" false
[ "$best" = scalar ] && skip "paths below the default" "scalar is the only path here"
echo "# $n checks, $failed failed"
[ $failed -eq 0 ]
