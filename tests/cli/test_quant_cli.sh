#!/usr/bin/env bash
# Quantised checkpoints from the outside: the AWQ and FP8 fixtures of
# tests/fixtures/quant/ (tiny models in the published layouts, with a
# tokenizer.json cut to their 264 rows) through `strux generate`,
# `strux perplexity` and struxd, with bf16, --int8 and --q4 -- and a broken
# quantization_config must be a one-line error naming the field.
# Needs $STRUX_BUILD (absolute build dir holding strux and struxd) and curl.
set -u
S="$STRUX_BUILD/strux"
D="$STRUX_BUILD/struxd"
Q=tests/fixtures/quant
T=$(mktemp -d /tmp/strux-cli-quant.XXXXXX)
SPID=
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; rm -rf "$T"' EXIT
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
run() { # run NAME ARGS...: strux with stdout/stderr/status kept in $T/NAME.*
    local name=$1
    shift
    timeout 120 "$S" "$@" </dev/null >"$T/$name.out" 2>"$T/$name.err"
    echo $? >"$T/$name.rc"
}
rc() { cat "$T/$1.rc"; }
ok_run() { # ok_run NAME: status 0, or say why
    [ "$(rc "$1")" = 0 ] || { echo "# $1: status $(rc "$1"): $(head -c 300 "$T/$1.err")"; return 1; }
}

[ -x "$S" ] && [ -x "$D" ] || { echo "not ok 1 - $S and $D must be built"; exit 1; }

# generate: greedy, 8 tokens, every weight mode; the load line names the format
for d in awq fp8; do
    for mode in bf16 int8 q4; do
        flag=
        [ $mode != bf16 ] && flag=--$mode
        run gen_${d}_$mode generate --model $Q/$d --prompt "Total: 12.50 EUR" --max-tokens 8 \
            --threads 2 --print-ids $flag
        check "generate $d $mode: 8 tokens" sh -c "$(declare -f ok_run rc); T=$T; ok_run gen_${d}_$mode &&
            grep -q 'completion 8 tokens' '$T/gen_${d}_$mode.err'"
    done
done
check "generate awq: the load line says AWQ 4-bit" grep -q "weights AWQ 4-bit, cpu" "$T/gen_awq_bf16.err"
check "generate fp8 --int8: the load line says FP8 as int8" grep -q "weights FP8 as int8" "$T/gen_fp8_int8.err"
# greedy is deterministic: the same ids twice
run gen_awq_again generate --model $Q/awq --prompt "Total: 12.50 EUR" --max-tokens 8 --threads 1 --print-ids
check "generate awq: greedy ids repeat (1 thread vs 2)" sh -c \
    "[ \"\$(sed -n 2p '$T/gen_awq_bf16.out')\" = \"\$(sed -n 2p '$T/gen_awq_again.out')\" ]"
# a grammar on the AWQ model: the sparse LM head over 4-bit layers (the
# reply is the JSON string of a label)
run gen_awq_choices generate --model $Q/awq --prompt "pick" --choices "yes,no,maybe" --threads 2
check "generate awq --choices: the reply is one of the labels" sh -c \
    "$(declare -f ok_run rc); T=$T; ok_run gen_awq_choices && grep -qx -e '\"yes\"' -e '\"no\"' -e '\"maybe\"' '$T/gen_awq_choices.out'"

# model info counts the quantised dtypes and names the method
run info_awq model info $Q/awq
check "model info awq: I32 tensors and the AWQ group" sh -c \
    "grep -q '28 I32 tensors' '$T/info_awq.out' && grep -q '^quantised: *AWQ, 4 bits, group 64' '$T/info_awq.out'"
run info_fp8 model info $Q/fp8
check "model info fp8: F8_E4M3 tensors and the blocks" sh -c \
    "grep -q '14 F8_E4M3 tensors' '$T/info_fp8.out' && grep -q '^quantised: *FP8 e4m3, blocks 128 x 128' '$T/info_fp8.out'"

# perplexity over a short text, every mode
printf 'The invoice total is 1,234.50 EUR, due on 2024-11-30. Pay to Mueller & Soehne.\n' >"$T/text.txt"
for d in awq fp8; do
    for mode in bf16 q4; do
        flag=
        [ $mode != bf16 ] && flag=--$mode
        run ppl_${d}_$mode perplexity --model $Q/$d --threads 2 --window 32 --stride 16 $flag "$T/text.txt"
        check "perplexity $d $mode: a finite perplexity" sh -c "$(declare -f ok_run rc); T=$T;
            ok_run ppl_${d}_$mode && grep -Eq '^perplexity: *[0-9.]+' '$T/ppl_${d}_$mode.out'"
    done
done

# a quantization_config strux cannot honour: one line naming the field
cp -r $Q/awq "$T/bad"
sed -i 's/"bits": 4/"bits": 3/' "$T/bad/config.json"
run bad generate --model "$T/bad" --prompt hi --max-tokens 2
check "bits 3: exit 1, the message names quantization_config.bits" sh -c \
    "[ $(rc bad) = 1 ] && head -1 '$T/bad.err' | grep -q 'quantization_config.bits' && [ ! -s '$T/bad.out' ]"
run bad_ppl perplexity --model "$T/bad" "$T/text.txt"
check "perplexity says the same" sh -c \
    "[ $(rc bad_ppl) != 0 ] && grep -q 'quantization_config.bits' '$T/bad_ppl.err'"

# struxd on the AWQ model (--q4 as well): one OpenAI-style request
"$D" --model $Q/awq --threads 2 --q4 --http 127.0.0.1:0 --listen "ipc://$T/d.ipc" 2>"$T/d.log" &
SPID=$!
for _ in $(seq 1 300); do
    grep -q '^struxd: ready' "$T/d.log" && break
    kill -0 "$SPID" 2>/dev/null || break
    sleep 0.2
done
check "struxd: ready, the model line says AWQ 4-bit, q4" grep -q "^struxd: model .*AWQ 4-bit, q4)" "$T/d.log"
HPORT=$(sed -n 's|^struxd: listening on.* http://[^:]*:\([0-9]*\).*|\1|p' "$T/d.log")
code=$(curl -sS -o "$T/chat.out" -w '%{http_code}' -H 'Content-Type: application/json' \
    "http://127.0.0.1:$HPORT/v1/chat/completions" -d '{"model": "model", "max_tokens": 24,
    "messages": [{"role": "user", "content": "pick one"}],
    "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema":
    {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}}}' 2>&1)
check "struxd: a json_schema request answers 200 with a choice" sh -c \
    "[ '$code' = 200 ] && grep -q '\"choices\"' '$T/chat.out'"
kill "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null
SPID=

echo "1..$n"
[ "$failed" = 0 ]
