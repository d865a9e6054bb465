#!/usr/bin/env bash
# `strux model random` and `strux model info` from the outside: the files a
# random model consists of, determinism, the sizes info prints (checked
# against arithmetic done here), and one-line errors with the right exit
# status for bad arguments and broken models.  That Hugging Face loads the
# models is a dev-time check (tests/fixtures/check_hf_load.sh, needs torch).
# Needs $STRUX_BUILD (absolute build dir holding strux) and $STRUX_SHARED.
set -u
S="$STRUX_BUILD/strux"
SHARED="${STRUX_SHARED:-../shared}"
T=$(mktemp -d /tmp/strux-cli-model.XXXXXX)
trap 'rm -rf "$T"' EXIT
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

# run NAME ARGS...: runs strux, keeps stdout/stderr/status in $T/NAME.*
run() {
    local name=$1
    shift
    "$S" "$@" </dev/null >"$T/$name.out" 2>"$T/$name.err"
    echo $? >"$T/$name.rc"
}
rc() { cat "$T/$1.rc"; }
has() { grep -q -- "$2" "$T/$1.out"; } # has NAME REGEX: stdout matches
# fails_well NAME PREFIX STATUS: exit STATUS, first stderr line starts with PREFIX, no stdout
fails_well() {
    [ "$(rc "$1")" = "$3" ] && head -1 "$T/$1.err" | grep -q "^$2" && [ ! -s "$T/$1.out" ] || {
        echo "# $1: status $(rc "$1"), stderr: $(head -c 300 "$T/$1.err")"
        return 1
    }
}

[ -x "$S" ] || { echo "not ok 1 - $S is not built"; exit 1; }

run help model --help
check "model --help explains both subcommands" sh -c \
    "[ $(rc help) = 0 ] && grep -q 'strux model random' '$T/help.out' && grep -q 'strux model info' '$T/help.out' && grep -q -- '--memory-gib' '$T/help.out'"
run bare model
check "model without a subcommand: exit 2" [ "$(rc bare)" = 2 ]
run sub model frobnicate
check "unknown subcommand: exit 2" fails_well sub "strux model: unknown subcommand 'frobnicate'" 2

# --- random ------------------------------------------------------------------
run tiny model random --shape tiny --seed 5 --out "$T/tiny"
check "random tiny: exit 0 and says what it wrote" sh -c \
    "[ $(rc tiny) = 0 ] && grep -q '^wrote $T/tiny: shape tiny, seed 5, 20137088 parameters' '$T/tiny.out'"
check "random tiny: config, weights and tokenizer files" \
    test -s "$T/tiny/config.json" -a -s "$T/tiny/model.safetensors" -a -s "$T/tiny/tokenizer_config.json"
check "random tiny: tokenizer.json is the shared one" cmp -s "$T/tiny/tokenizer.json" "$SHARED/qwen3-tokenizer/tokenizer.json"
# 8-byte length + header + 20137088 bf16 weights
hlen=$(od -An -t u8 -N 8 "$T/tiny/model.safetensors" | tr -d ' ')
size=$(stat -c %s "$T/tiny/model.safetensors")
check "random tiny: file is length + header + 2 bytes per parameter" [ "$size" = $((8 + hlen + 2 * 20137088)) ]
check "random tiny: config.json says Qwen3, bf16, tied" sh -c \
    "grep -q '\"Qwen3ForCausalLM\"' '$T/tiny/config.json' && grep -q '\"torch_dtype\": \"bfloat16\"' '$T/tiny/config.json' && grep -q '\"tie_word_embeddings\": true' '$T/tiny/config.json'"
run tiny2 model random --seed 5 --out "$T/tiny2" --no-tokenizer
check "same seed, same bytes (tiny is the default shape)" cmp -s "$T/tiny/model.safetensors" "$T/tiny2/model.safetensors"
check "--no-tokenizer writes no tokenizer" test ! -e "$T/tiny2/tokenizer.json"
run tiny3 model random --seed 6 --out "$T/tiny3" --no-tokenizer
check "another seed, other bytes" sh -c "! cmp -s '$T/tiny/model.safetensors' '$T/tiny3/model.safetensors'"

run custom model random --shape tiny --hidden 64 --layers 1 --heads 8 --kv-heads 4 --head-dim 16 \
    --intermediate 96 --no-tie --no-tokenizer --out "$T/custom"
check "custom shape writes" [ "$(rc custom)" = 0 ]
run custom_info model info "$T/custom"
# embed + lm_head 2*151936*64, q 64*128, k,v 2*64*64, o 128*64, mlp 3*64*96, norms 2*64+2*16, final 64
want=$((2 * 151936 * 64 + 64 * 128 + 2 * 64 * 64 + 128 * 64 + 3 * 64 * 96 + 2 * 64 + 2 * 16 + 64))
check "custom shape: info counts its parameters" has custom_info "^parameters: *$want "
check "custom shape: untied, 1 layer, head_dim 16" has custom_info "layers 1, heads 8 (kv 4), head_dim 16, vocab 151936, separate lm_head"

run noout model random --shape tiny
check "random without --out: exit 2" fails_well noout "strux model random: --out DIR is required" 2
run badshape model random --shape 13b --out "$T/x"
check "unknown shape: exit 2" fails_well badshape "strux model random: unknown model shape '13b'" 2
run badheads model random --heads 3 --out "$T/bad"
nothing_written() { fails_well "$@" && [ ! -e "$T/bad" ]; }
check "inconsistent heads: exit 2, nothing written" \
    nothing_written badheads "strux model random: model shape: num_attention_heads 3" 2
run badnum model random --layers x --out "$T/x"
check "non-numeric override: exit 2" fails_well badnum 'strux model random: --layers: "x" is not an integer from 1' 2
run badseed model random --seed -1 --out "$T/x"
check "negative seed: exit 2" fails_well badseed "strux model random: --seed" 2
run notok model random --tokenizer "$T/none.json" --out "$T/x"
check "missing tokenizer: exit 1" fails_well notok "strux model random: no tokenizer at $T/none.json" 1

# --- info --------------------------------------------------------------------
run info model info "$T/tiny"
check "info loads the model" sh -c "[ $(rc info) = 0 ] && grep -q '^model: *$T/tiny (loaded and checked' '$T/info.out'"
check "info: the files and their dtypes" has info "^files: *1 safetensors file; 24 BF16 tensors (40274176 bytes)$"
check "info: parameters" has info "^parameters: *20137088 "
check "info: weight bytes" has info "^weights: *40274176 bytes"
# 2 (k and v) x 2 layers x 2 kv heads x 128 dims x 2 or 4 bytes
check "info: KV bytes per token" has info "^kv per token: 2048 bytes bf16, 4096 bytes f32"

run plan model info --shape 0.6b --memory-gib 80
kv=$((2 * 28 * 8 * 128 * 2))
left=$((80 * 1024 * 1024 * 1024 - 2 * 596049920))
check "info --shape 0.6b: parameters and KV/token" sh -c \
    "grep -q '^parameters: *596049920 ' '$T/plan.out' && grep -q '^kv per token: $kv bytes bf16, $((2 * kv)) bytes f32' '$T/plan.out'"
rows_ok=1
for ctx in 1024 4096 8192 32768; do
    grep -Eq "^ +$ctx +$((left / (kv * ctx))) +$((left / (2 * kv * ctx)))$" "$T/plan.out" || {
        echo "# no row for $ctx: want $((left / (kv * ctx))) $((left / (2 * kv * ctx)))"
        rows_ok=0
    }
done
check "info: sequences that fit at 1k/4k/8k/32k (bf16 and f32 cache)" [ $rows_ok = 1 ]
run plan8 model info --shape 8b --memory-gib 8
check "info: weights bigger than memory leave no sequences" sh -c \
    "[ $(rc plan8) = 0 ] && grep -Eq '^ +1024 +0 +0$' '$T/plan8.out' && grep -q 'separate lm_head' '$T/plan8.out'"
run plan_default model info --shape tiny
check "info: default budget is available RAM" has plan_default "(available RAM)"

run noarg model info
check "info without DIR or --shape: exit 2" fails_well noarg "strux model info: give a model DIR or --shape NAME" 2
run badmem model info "$T/tiny" --memory-gib -3
check "info: bad --memory-gib: exit 2" fails_well badmem 'strux model info: --memory-gib: "-3" is not a positive number' 2
run missing model info "$T/nothing"
check "info: missing directory: exit 1" fails_well missing "strux model info: cannot open $T/nothing/config.json" 1

# broken copies of the tiny model
mkdir -p "$T/trunc" "$T/arch"
cp "$T/tiny/config.json" "$T/trunc/"
head -c $((size - 100)) "$T/tiny/model.safetensors" >"$T/trunc/model.safetensors"
run trunc model info "$T/trunc"
check "info: truncated weights: exit 1, says so" fails_well trunc \
    "strux model info: $T/trunc/model.safetensors: tensor .* (.*file truncated?)" 1
sed 's/Qwen3ForCausalLM/MistralForCausalLM/' "$T/tiny/config.json" >"$T/arch/config.json"
ln -s "$T/tiny/model.safetensors" "$T/arch/model.safetensors"
run arch model info "$T/arch"
check "info: other architecture: exit 1" fails_well arch \
    "strux model info: $T/arch: config.json: architecture \"MistralForCausalLM\" is not Qwen3ForCausalLM" 1
sed 's/"hidden_size": 128/"hidden_size": 256/' "$T/tiny/config.json" >"$T/arch/config.json"
run shape model info "$T/arch"
check "info: config/weights mismatch names the tensor and both shapes" fails_well shape \
    "strux model info: model.embed_tokens.weight: shape expected \[151936, 256\] got \[151936, 128\]" 1

echo "# $n checks, $failed failed"
[ "$failed" -eq 0 ]
