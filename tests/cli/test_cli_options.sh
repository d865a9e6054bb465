#!/usr/bin/env bash
# The option tables of the strux subcommands (tools/strux/cli_opts.c): strict
# numbers, unknown options and missing values as one-line usage errors (exit
# 2, nothing on stdout), the shared grammar options spelled the same by every
# command that compiles a schema, --name=VALUE, and --help listing every
# option of each table.  Almost every case stops at the parser (no tokenizer
# or model is loaded), so the whole script takes about a second.
# struxd's options go through the same tables (the same errors, --help from
# its table, --version).
# Needs $STRUX_BUILD (absolute build dir holding strux and struxd) and $STRUX_SHARED.
set -u
S="$STRUX_BUILD/strux"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/strux-cli-options.XXXXXX)
trap 'rm -rf "$T"' EXIT
n=0 failed=0
check() { # check WHAT COMMAND...: the command's status is the verdict
    local what=$1
    shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $what"; else echo "not ok $n - $what"; failed=$((failed + 1)); fi
}
# usage_err WANT ARGS...: exit 2, stdout empty, stderr exactly one line that
# starts with WANT (a grep -E pattern) and points at --help
usage_err() {
    local want=$1
    shift
    "$S" "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    [ $rc -eq 2 ] && [ ! -s "$T/out" ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
        grep -qE -- "^$want" "$T/err" &&
        grep -q -- "(see $(sed 's/: .*//' "$T/err") --help)\$" "$T/err" || {
        echo "# strux $*: status $rc, stderr: $(head -c 300 "$T/err")"
        return 1
    }
}

# --- bad numbers, named with the option and the value -----------------------
check "compile --max-ws 12x" usage_err 'strux compile: --max-ws: "12x" is not an integer from 0 to 64' \
    compile --schema x.json --max-ws 12x
check "check --max-ws 65: out of range" usage_err 'strux check: --max-ws: "65" is not an integer from 0 to 64' \
    check --schema x.json --max-ws 65 i.json
check "fuzzgen --indent 0" usage_err 'strux fuzzgen: --indent: "0" is not an integer from 1 to 16' \
    fuzzgen --schema x.json --indent 0
check "maskbench --max-ws ' 3' (leading blank)" usage_err 'strux maskbench: --max-ws: " 3" is not an integer' \
    maskbench --max-ws " 3" f.json
check "generate --max-tokens 12x" usage_err 'strux generate: --max-tokens: "12x" is not an integer' \
    generate --model m --prompt p --max-tokens 12x
check "generate --temperature abc" usage_err 'strux generate: --temperature: "abc" is not a number' \
    generate --model m --prompt p --temperature abc
check "generate --temperature=nan" usage_err 'strux generate: --temperature: "nan" is not a number' \
    generate --model m --prompt p --temperature=nan
check "generate --seed -1 (no wrap-around to 2^64-1)" usage_err 'strux generate: --seed: "-1" is not an integer' \
    generate --model m --prompt p --seed -1
check "demo --max-tokens 12x (was atoi: 12)" usage_err 'strux demo: --max-tokens: "12x" is not an integer' \
    demo --schema x.json --max-tokens 12x
check "call --max-tokens 12x (was atol: 12)" usage_err 'strux call: --max-tokens: "12x" is not an integer' \
    call --addr ipc:///nowhere --max-tokens 12x
check "call --concurrency 99999999999999999999 (overflow)" usage_err 'strux call: --concurrency: "99999999999999999999" is not an integer' \
    call --addr ipc:///nowhere --concurrency 99999999999999999999
check "call --temperature 1e999 (overflow)" usage_err 'strux call: --temperature: "1e999" is not a number' \
    call --addr ipc:///nowhere --temperature 1e999
check "fuzzschema --size 9" usage_err 'strux fuzzschema: --size: "9" is not an integer from 1 to 8' \
    fuzzschema --size 9
check "perplexity --kl-to f16: not one of the choices" usage_err 'strux perplexity: --kl-to: "f16" is not one of bf16' \
    perplexity --model m --kl-to f16 f.txt
check "extract --batch 0" usage_err 'strux extract: --batch: "0" is not an integer from 1 to 1024' \
    extract --batch 0
check "fuzzgen --shard 2/2" usage_err 'strux fuzzgen: --shard: "2/2" is not K/N' \
    fuzzgen --schema x.json --shard 2/2
check "fuzzgen --mode nope" usage_err 'strux fuzzgen: --mode: "nope" is not a mode' \
    fuzzgen --schema x.json --mode nope

# --- unknown options, missing values, flags given a value --------------------
for c in check compile maskbench fuzzgen demo generate extract call fuzzschema perplexity \
    tokenize detokenize chat; do
    check "$c: unknown option" usage_err "strux $c: unknown option '--bogus'" $c --bogus
    check "$c: --bogus=1 named without its value" usage_err "strux $c: unknown option '--bogus'" $c --bogus=1
done
for c in check compile fuzzgen demo generate extract; do
    check "$c: --schema without a value" usage_err "strux $c: --schema needs a value" $c --schema
done
check "maskbench: --max-ws without a value" usage_err "strux maskbench: --max-ws needs a value" maskbench --max-ws
check "call: --addr without a value" usage_err "strux call: --addr needs a value" call --addr
check "a flag takes no value" usage_err "strux compile: --property-order takes no value" \
    compile --property-order=1
check "compile: a positional argument" usage_err "strux compile: unexpected argument 'extra'" \
    compile --schema x.json extra

# --- the grammar options: one spelling everywhere ----------------------------
# Each command gets every grammar option (both spellings) and no schema or
# file: the parser accepts them all, so the error is the missing argument.
gr=(--max-ws 2 --max-ws=0 --indent 3 --indent=2 --property-order --draft7)
check "check accepts the grammar options" usage_err "strux check: needs --schema FILE and INSTANCE.json" check "${gr[@]}"
check "compile accepts the grammar options" usage_err "strux compile: needs --schema FILE" compile "${gr[@]}"
check "maskbench accepts the grammar options" usage_err "strux maskbench: needs FILE" maskbench "${gr[@]}"
check "fuzzgen accepts the grammar options" usage_err "strux fuzzgen: needs --schema FILE or --schemas LIST" fuzzgen "${gr[@]}"
check "demo accepts the grammar options" usage_err "strux demo: needs --schema FILE" demo "${gr[@]}"
for c in check compile maskbench fuzzgen demo; do
    "$S" $c --help >"$T/help" 2>&1
    check "$c --help lists the grammar options" sh -c "grep -q -- '--max-ws N' '$T/help' &&
        grep -q -- '--indent N' '$T/help' && grep -q -- '--property-order' '$T/help' &&
        grep -q -- '--draft7' '$T/help'"
done

# --- --help: exit 0 on stdout, every option of the table ---------------------
# (detokenize shares cmd_tokenize.c; its two options are tokenize's too)
for c in check compile maskbench fuzzgen demo generate extract call fuzzschema perplexity \
    tokenize chat; do
    "$S" $c --help >"$T/help" 2>"$T/herr"
    rc=$?
    missing=""
    for o in $(grep -o '\.name = "--[a-z0-9-]*"' "$ROOT/tools/strux/cmd_$c.c" | sed 's/.*"\(--[^"]*\)"/\1/'); do
        grep -q -- "^ *\(-[a-z], \)\?$o\( \|$\)" "$T/help" || missing="$missing $o"
    done
    check "$c --help: exit 0, every option of its table${missing:+ (missing:$missing)}" \
        sh -c "[ $rc -eq 0 ] && [ ! -s '$T/herr' ] && [ -z '$missing' ] && grep -q '^usage: strux $c ' '$T/help'"
done

# --- strux model random / info ----------------------------------------------
check "model random --seed 1x" usage_err 'strux model random: --seed: "1x" is not an integer from 0 to 2147483647' \
    model random --out "$T/m" --seed 1x
check "model random --layers=0" usage_err 'strux model random: --layers: "0" is not an integer from 1' \
    model random --out "$T/m" --layers=0
check "model random: unknown option" usage_err "strux model random: unknown option '--bogus'" model random --bogus
check "model random --no-tokenizer=1" usage_err "strux model random: --no-tokenizer takes no value" \
    model random --out "$T/m" --no-tokenizer=1
check "model random: a positional argument" usage_err "strux model random: unexpected argument 'x'" \
    model random --out "$T/m" x
check "model random without --out" usage_err "strux model random: --out DIR is required" model random --seed=3
check "model info --memory-gib 0" usage_err 'strux model info: --memory-gib: "0" is not a positive number' \
    model info --shape tiny --memory-gib 0
check "model info --context 0" usage_err 'strux model info: --context: "0" is not an integer from 1 to 16777216' \
    model info some/dir --device cpu --context 0
check "model info: two directories" usage_err "strux model info: unexpected argument 'b'" model info a b
check "model info: shape options without --shape" usage_err "strux model info: the shape options go with --shape" \
    model info some/dir --layers 3
check "model: no subcommand" usage_err "strux model: needs a subcommand" model
check "model: unknown subcommand" usage_err "strux model: unknown subcommand 'x'" model x
for sub in random info; do
    "$S" model $sub --help >"$T/help" 2>"$T/herr"
    rc=$?
    missing=""
    for o in --shape --hidden --intermediate --layers --heads --kv-heads --head-dim --no-tie --tie \
        $([ $sub = random ] && echo --seed --out --tokenizer --no-tokenizer || echo --memory-gib --device --kv-gb --context); do
        grep -q -- "^ *$o\( \|$\)" "$T/help" || missing="$missing $o"
    done
    check "model $sub --help: exit 0, every option${missing:+ (missing:$missing)}" \
        sh -c "[ $rc -eq 0 ] && [ ! -s '$T/herr' ] && [ -z '$missing' ] && grep -q '^usage: strux model $sub ' '$T/help'"
done
check "model info --shape=tiny --layers=3 --memory-gib=2 --no-tie: the changed shape" \
    sh -c "'$S' model info --shape=tiny --layers=3 --memory-gib=2 --no-tie | grep -q 'shape tiny (changed)'"

# --- struxd: the same table machinery ----------------------------------------
D="$STRUX_BUILD/struxd"
# dusage_err WANT ARGS...: usage_err for struxd
dusage_err() {
    local want=$1
    shift
    "$D" "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    [ $rc -eq 2 ] && [ ! -s "$T/out" ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
        grep -qE -- "^$want" "$T/err" && grep -q -- "(see struxd --help)\$" "$T/err" || {
        echo "# struxd $*: status $rc, stderr: $(head -c 300 "$T/err")"
        return 1
    }
}
check "struxd --threads 2x" dusage_err 'struxd: --threads: "2x" is not an integer from 0 to 4096' \
    --model m --threads 2x
check "struxd --max-batch=0: out of range" dusage_err 'struxd: --max-batch: "0" is not an integer from 1 to 1024' \
    --model m --max-batch=0
check "struxd --prefix-cache-gb abc" dusage_err 'struxd: --prefix-cache-gb: "abc" is not a number' \
    --model m --prefix-cache-gb abc
check "struxd --prefix-cache-gb -1" dusage_err 'struxd: --prefix-cache-gb: "-1" is not a number from 0 to' \
    --model m --prefix-cache-gb -1
check "struxd --timeout ' 5' (leading blank)" dusage_err 'struxd: --timeout: " 5" is not an integer' \
    --model m --timeout " 5"
check "struxd --speculate maybe" dusage_err 'struxd: --speculate: "maybe" is not one of off, ngram, draft' \
    --model m --speculate maybe
check "struxd: unknown option" dusage_err "struxd: unknown option '--bogus'" --bogus
check "struxd: --bogus=1 named without its value" dusage_err "struxd: unknown option '--bogus'" --bogus=1
check "struxd: --http without a value" dusage_err "struxd: --http needs a value" --model m --http
check "struxd: a flag takes no value" dusage_err "struxd: --quiet takes no value" --model m --quiet=1
check "struxd: a positional argument" dusage_err "struxd: unexpected argument 'extra'" --model m extra
check "struxd: no --model" dusage_err "struxd: --model DIR is required" --threads 1
check "struxd: --int8 with --q4" dusage_err "struxd: give at most one of --int8, --q4" --model m --int8 --q4
check "struxd: --api-key with --api-key-file" dusage_err "struxd: give --api-key or --api-key-file, not both" \
    --model m --api-key k --api-key-file f
check "struxd: --draft-model without --speculate draft" dusage_err "struxd: --draft-model goes with --speculate draft" \
    --model m --draft-model d
ls17=()
for i in $(seq 1 17); do ls17+=(--listen "ipc:///tmp/x$i"); done
check "struxd: a 17th --listen" dusage_err 'struxd: --listen: "ipc:///tmp/x17" is one too many \(at most 16\)' \
    --model m "${ls17[@]}"
"$D" --help >"$T/help" 2>"$T/herr"
rc=$?
missing=""
for o in $(grep -o '\.name = "--[a-z0-9-]*"' "$ROOT/tools/struxd/main.c" | sed 's/.*"\(--[^"]*\)"/\1/'); do
    grep -q -- "^ *$o\( \|$\)" "$T/help" || missing="$missing $o"
done
check "struxd --help: exit 0, every option of its table${missing:+ (missing:$missing)}" \
    sh -c "[ $rc -eq 0 ] && [ ! -s '$T/herr' ] && [ -z '$missing' ] && grep -q '^usage: struxd --model DIR' '$T/help'"
check "--version on both binaries" sh -c "'$D' --version | grep -qx 'struxd [0-9.]*' &&
    '$S' --version | grep -qx 'strux [0-9.]*'"
# --name=VALUE spellings get past the parser: the model is what fails (exit 1)
"$D" --model="$T/none" --threads=1 --http=127.0.0.1:0 --max-ws=0 --prefix-cache-gb=0.5 \
    --speculate=ngram --listen=ipc://"$T/sock" >"$T/out" 2>"$T/err"
rc=$?
check "struxd --name=VALUE spellings parse (then: cannot load the model, exit 1)" \
    sh -c "[ $rc -eq 1 ] && grep -q '^struxd: cannot load the model' '$T/err'"

# --- one real compile with --name=VALUE spellings ----------------------------
printf '%s' '{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}' >"$T/s.json"
check "compile --schema=FILE --indent=2 --property-order --tokenizer=PATH: compiled" \
    sh -c "'$S' compile --schema='$T/s.json' --indent=2 --property-order \
        --tokenizer='${STRUX_SHARED:-../shared}/qwen3-tokenizer/tokenizer.json' | grep -q '^compiled '"

echo "1..$n"
[ $failed -eq 0 ]
