#!/usr/bin/env bash
# `strux generate` from the outside, on a tiny random-weight Qwen3 written
# here (the real tokenizer, the full vocabulary): seeded sampling repeats,
# schema-constrained replies validate (Python jsonschema, independent of
# strux) at roomy and tight budgets and with non-ASCII text, the token ids,
# per-token log-probs and timings are printed as documented, sampler options
# act, and bad arguments are one-line errors with exit status 2 (usage) or
# 1 (files).  Needs $STRUX_BUILD, $STRUX_SHARED and the repo venv (.venv)
# with jsonschema.
set -u
S="$STRUX_BUILD/strux"
PY=${STRUX_PYTHON:-$PWD/.venv/bin/python}
T=$(mktemp -d /tmp/strux-cli-gen.XXXXXX)
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
run() { # run NAME ARGS...: strux generate on the model; keeps out/err/status
    local name=$1
    shift
    timeout 300 "$S" generate "$@" </dev/null >"$T/$name.out" 2>"$T/$name.err"
    echo $? >"$T/$name.rc"
}
rc() { cat "$T/$1.rc"; }
# fails_well NAME PREFIX STATUS: exit STATUS, first stderr line starts with PREFIX, no stdout
fails_well() {
    [ "$(rc "$1")" = "$3" ] && head -1 "$T/$1.err" | grep -q -- "^$2" && [ ! -s "$T/$1.out" ] || {
        echo "# $1: status $(rc "$1"), stderr: $(head -c 300 "$T/$1.err")"
        return 1
    }
}
# the --print-ids line: the last before the log-prob lines (random-weight
# replies may hold newlines themselves)
ids() { grep -av '^logprob ' "$T/$1.out" | tail -1; }
completion() { sed -n 's/.*completion \([0-9]*\) tokens.*/\1/p' "$T/$1.err"; }
# valid NAME SCHEMA: the reply (all of stdout, without --print-ids) validates
# under Python jsonschema
valid() {
    "$PY" -c 'import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' "$T/$1.out" "$2" 2>"$T/$1.pyerr" || {
        echo "# $1: $(head -c 300 "$T/$1.out") / $(tail -1 "$T/$1.pyerr")"
        return 1
    }
}

[ -x "$S" ] || { echo "not ok 1 - $S is not built"; exit 1; }
"$PY" -c "import jsonschema" 2>/dev/null || { echo "not ok 1 - $PY lacks jsonschema (make deps)"; exit 1; }
"$S" model random --shape tiny --seed 5 --out "$T/m" >/dev/null 2>"$T/model.err"
check "tiny model written" test -s "$T/m/model.safetensors"
M=(--model "$T/m")

"$S" generate --help >"$T/help.out" 2>&1
check "--help names every option" sh -c "for o in --model --prompt --prompt-file --system --schema \
    --choices --regex --json-object --max-tokens --temperature --top-p --top-k --min-p \
    --repetition-penalty --no-repeat-ngram --seed --n --stream --print-ids --top-logprobs --threads \
    --int8 --q4 --bf16-act --kv-bf16 --dense-logits; do grep -q -- \"\$o\" '$T/help.out' || exit 1; done"

# --- plain generation -------------------------------------------------------
run g1 "${M[@]}" --prompt "Say hello." --max-tokens 12 --print-ids
run g2 "${M[@]}" --prompt "Say hello." --max-tokens 12 --print-ids
check "greedy: exit 0, 12 ids, timings on stderr" sh -c "[ $(rc g1) = 0 ] && \
    [ \$(echo '$(ids g1)' | wc -w) = 12 ] && grep -q '^TTFT .* ms; prefill .* tokens/s; decode .* tokens/s; total [0-9.]* ms$' '$T/g1.err'"
check "greedy twice: the same ids" test "$(ids g1)" = "$(ids g2)"
check "bf16 weights are announced" grep -q "loaded .*(weights bf16, cpu path" "$T/g1.err"
run gq "${M[@]}" --prompt "Say hello." --max-tokens 12 --print-ids --q4
check "--q4: exit 0, 12 ids, and says so" sh -c "[ $(rc gq) = 0 ] && \
    [ \$(echo '$(ids gq)' | wc -w) = 12 ] && grep -q 'loaded .*(weights q4, cpu path' '$T/gq.err'"
run gboth "${M[@]}" --prompt "Say hello." --int8 --q4
check "--int8 with --q4: usage error" sh -c "[ $(rc gboth) = 2 ] && grep -q 'at most one of --int8, --q4' '$T/gboth.err'"
check "random weights are announced" grep -q "RANDOM weights" "$T/g1.err"
run s1 "${M[@]}" --prompt "Say hello." --max-tokens 12 --print-ids --temperature 1 --seed 11
run s2 "${M[@]}" --prompt "Say hello." --max-tokens 12 --print-ids --temperature 1 --seed 11
run s3 "${M[@]}" --prompt "Say hello." --max-tokens 12 --print-ids --temperature 1 --seed 12
check "same seed, same ids" test "$(ids s1)" = "$(ids s2)"
check "another seed, other ids" test "$(ids s1)" != "$(ids s3)"
# --n: replies from one prefill; reply i is the reply of --seed (seed + i)
run n3 "${M[@]}" --prompt "Say hello." --max-tokens 12 --print-ids --temperature 1 --seed 11 --n 3
reply_ids() { # reply_ids NAME K: the ids line of reply K
    "$PY" -c 'import sys
blocks = open(sys.argv[1], errors="replace").read().split("--- reply ")[1:]
print(blocks[int(sys.argv[2])].rstrip("\n").split("\n")[-1])' "$T/$1.out" "$2"
}
check "--n 3: reply 0 is --seed 11's, reply 1 is --seed 12's" sh -c "[ $(rc n3) = 0 ] &&
    [ '$(reply_ids n3 0)' = '$(ids s1)' ] && [ '$(reply_ids n3 1)' = '$(ids s3)' ] &&
    [ \$(grep -c '^--- reply [0-2] (seed 1[1-3])$' '$T/n3.out') = 3 ]"
check "--n 3: the model ran the prompt once" sh -c "grep -q '^3 replies: the model ran [0-9]* tokens' '$T/n3.err' &&
    p=\$(sed -n 's/^reply 0: .*prompt \([0-9]*\) tokens.*/\1/p' '$T/n3.err') &&
    r=\$(sed -n 's/^3 replies: the model ran \([0-9]*\) tokens.*/\1/p' '$T/n3.err') &&
    [ \$r -le \$((p + 2 + 36)) ]"
run sys "${M[@]}" --system "You are terse." --prompt "Say hello." --max-tokens 2
check "--system adds a turn to the prompt" sh -c "[ \$(sed -n 's/.*prompt \([0-9]*\) tokens.*/\1/p' '$T/sys.err') -gt \
    \$(sed -n 's/.*prompt \([0-9]*\) tokens.*/\1/p' '$T/g1.err') ]"
printf 'Say hello.' >"$T/prompt.txt"
run pf "${M[@]}" --prompt-file "$T/prompt.txt" --max-tokens 12 --print-ids
check "--prompt-file reads the prompt" test "$(ids pf)" = "$(ids g1)"
run st "${M[@]}" --prompt "Say hello." --max-tokens 12 --stream
check "--stream prints the same reply" sh -c "head -n -1 '$T/g1.out' | cmp -s - '$T/st.out'"

# --- sampler options --------------------------------------------------------
run ng "${M[@]}" --prompt "Count." --max-tokens 40 --no-repeat-ngram 1 --print-ids
check "--no-repeat-ngram 1: no id twice in 40" sh -c \
    "[ \$(echo '$(ids ng)' | tr ' ' '\n' | sort | uniq -d | wc -l) = 0 ] && [ \$(echo '$(ids ng)' | wc -w) = 40 ]"
run tk "${M[@]}" --prompt "Count." --max-tokens 8 --top-logprobs 3 --print-ids
check "--top-logprobs 3: a line per token, chosen = most likely at greedy" "$PY" -c '
import sys
text = open(sys.argv[1], errors="replace").read().split("\n")
lines = [l.split() for l in text if l.startswith("logprob ")]
ids = [l for l in text if l and not l.startswith("logprob ")][-1].split()
assert len(lines) == 8 == len(ids), (len(lines), len(ids))
for i, l in enumerate(lines):
    assert l[1] == str(i) and l[2] == ids[i], l
    top = " ".join(l[l.index("top:") + 1:]).split(",")
    assert len(top) == 3, l
    assert top[0].split()[0] == ids[i], l          # greedy picks the first
    lps = [float(t.split()[-1]) for t in top]
    assert lps == sorted(lps, reverse=True) and all(x <= 0 for x in lps), l
' "$T/tk.out"
run tk0 "${M[@]}" --prompt "Count." --max-tokens 8 --top-logprobs 0 --print-ids
check "--top-logprobs 0 prints none" sh -c "! grep -q '^logprob ' '$T/tk0.out'"

# --- schema-constrained -----------------------------------------------------
cat >"$T/person.json" <<'EOF'
{"type":"object","properties":{"name":{"type":"string","maxLength":20},"age":{"type":"integer","minimum":0},
 "tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":3}},
 "required":["name","age","tags"],"additionalProperties":false}
EOF
cat >"$T/kanji.json" <<'EOF'
{"type":"object","properties":{"名前":{"type":"string","pattern":"^[à-ÿ一-龥]{2,12}$"},
 "都市":{"enum":["東京","大阪"]}},"required":["名前","都市"],"additionalProperties":false}
EOF
# valid_n NAME SCHEMA K: stdout holds K replies ("--- reply i (seed s)"
# lines between them), each validates under Python jsonschema
valid_n() {
    "$PY" -c 'import json, re, sys, jsonschema
parts = re.split(r"^--- reply [0-9]+ \(seed [0-9]+\)\n", open(sys.argv[1], encoding="utf-8").read(), flags=re.M)
docs = [p for p in parts if p.strip()]
assert len(docs) == int(sys.argv[3]), f"{len(docs)} replies, expected {sys.argv[3]}"
for d in docs:
    jsonschema.validate(json.loads(d), json.load(open(sys.argv[2])))' "$T/$1.out" "$2" "$3" 2>"$T/$1.pyerr" || {
        echo "# $1: $(head -c 300 "$T/$1.out") / $(tail -1 "$T/$1.pyerr")"
        return 1
    }
}
bad=0 total=0
# seed 1 alone (one reply), then --n K from seed 2 (K replies from one
# prefill: each is --seed (2 + i)'s), so a model load serves K samples; under
# the sanitizers (STRUX_LIGHT) K = 2, ~7 s a load there; the plain stage K = 6
k=$([ -n "${STRUX_LIGHT:-}" ] && echo 2 || echo 6)
for schema in person kanji; do
    for mt in 200 14 16 20; do
        run c "${M[@]}" --prompt "Extract: Jane, 41." --schema "$T/$schema.json" --max-tokens $mt \
            --temperature 1 --seed 1
        total=$((total + 1))
        if [ "$(rc c)" != 0 ] || ! grep -q '^validator: valid' "$T/c.err" ||
           ! valid c "$T/$schema.json" >/dev/null; then
            bad=$((bad + 1))
            echo "# $schema seed 1 max-tokens $mt: status $(rc c): $(tail -3 "$T/c.err" | tr '\n' ' ')"
        fi
        run cn "${M[@]}" --prompt "Extract: Jane, 41." --schema "$T/$schema.json" --max-tokens $mt \
            --temperature 1 --seed 2 --n $k
        total=$((total + k))
        nv=$(grep -c '^validator: valid' "$T/cn.err")
        if [ "$(rc cn)" != 0 ] || [ "$nv" != "$k" ] || ! valid_n cn "$T/$schema.json" $k >/dev/null; then
            bad=$((bad + k))
            echo "# $schema --seed 2 --n $k max-tokens $mt: status $(rc cn), $nv of $k valid: $(tail -3 "$T/cn.err" | tr '\n' ' ')"
        fi
    done
done
check "--schema: all $total sampled replies validate (single and --n), tight budgets included" test $bad = 0
run kv "${M[@]}" --prompt "Extract: Jane, 41." --schema "$T/kanji.json" --max-tokens 16 \
    --temperature 1 --seed 4 --kv-bf16
check "--kv-bf16: a valid reply" sh -c "[ $(rc kv) = 0 ] && grep -q '^validator: valid' '$T/kv.err'"
# the LM head skips the panels a mask rules out: the reply and its log-probs
# are those of computing every logit
for d in sp dn; do
    run $d "${M[@]}" --prompt "Extract: Jane, 41." --schema "$T/person.json" --max-tokens 40 \
        --temperature 1 --seed 9 --top-logprobs 3 --print-ids $([ $d = dn ] && echo --dense-logits)
done
check "--dense-logits: same reply, ids and log-probs" sh -c "[ $(rc sp) = 0 ] && [ $(rc dn) = 0 ] &&
    cmp -s '$T/sp.out' '$T/dn.out' && grep -q '^logprob ' '$T/sp.out'"
# "LM head under grammar masks: READ of DENSE panels read": fewer by default
lm() { sed -n 's/^LM head under grammar masks: \([0-9]*\) of \([0-9]*\) panels read.*/\1 \2/p' "$T/$1.err"; }
check "the sparse head reads fewer panels; --dense-logits reads them all" sh -c "
    set -- $(lm sp) $(lm dn); [ \$# = 4 ] && [ \$1 -lt \$2 ] && [ \$3 = \$4 ] && [ \$2 = \$4 ]"
run tf "${M[@]}" --prompt "Extract." --schema "$T/person.json" --top-logprobs 2 --print-ids
check "--top-logprobs marks grammar-forced tokens" grep -q '^logprob [0-9]* [0-9]* .* forced$' "$T/tf.out"
run small "${M[@]}" --prompt "Extract." --schema "$T/person.json" --max-tokens 3
check "budget below the shortest document: exit 1 saying so" sh -c \
    "[ $(rc small) = 1 ] && grep -q 'too small' '$T/small.err'"
run ch "${M[@]}" --prompt "Pick." --choices "red,green,blue" --temperature 1 --seed 3
check "--choices: the reply is one label, as a JSON string" grep -qxE '"(red|green|blue)"' "$T/ch.out"

# --- bad arguments: one line, nothing on stdout ------------------------------
P=(--prompt hi)
run u1 "${M[@]}" "${P[@]}" --temperature abc
check "--temperature abc: exit 2" fails_well u1 "strux generate: --temperature: .abc. is not a number" 2
run u2 "${M[@]}" "${P[@]}" --top-k 1.5
check "--top-k 1.5: exit 2" fails_well u2 "strux generate: --top-k: .1.5. is not an integer" 2
run u3 "${M[@]}" "${P[@]}" --seed -1
check "--seed -1: exit 2" fails_well u3 "strux generate: --seed: .-1. is not an integer from 0" 2
run u4 "${M[@]}" "${P[@]}" --max-tokens 0
check "--max-tokens 0: exit 2" fails_well u4 "strux generate: --max-tokens: .0. is not an integer from 1" 2
run u5 "${M[@]}" "${P[@]}" --threads -3
check "--threads -3: exit 2" fails_well u5 "strux generate: --threads: .-3. is not an integer from 0" 2
run u6 --model "$T/no-such-model" "${P[@]}" --top-p 2
check "--top-p 2: exit 2 before the model is read" fails_well u6 "strux generate: top_p must be in (0, 1]" 2
run u7 "${M[@]}" "${P[@]}" --min-p 1.5
check "--min-p 1.5: exit 2" fails_well u7 "strux generate: min_p must be in" 2
run u8 "${M[@]}" "${P[@]}" --repetition-penalty 0
check "--repetition-penalty 0: exit 2" fails_well u8 "strux generate: repetition_penalty must be" 2
run u9 "${M[@]}" --prompt
check "--prompt without a value: exit 2" fails_well u9 "strux generate: --prompt needs a value" 2
run u10 "${M[@]}" "${P[@]}" --bogus 1
check "unknown option: exit 2" fails_well u10 "strux generate: unknown option '--bogus'" 2
run u11 "${M[@]}" "${P[@]}" --top-logprobs 21
check "--top-logprobs 21: exit 2" fails_well u11 "strux generate: --top-logprobs: .21. is not an integer from 0 to 20" 2
run u12 "${M[@]}" "${P[@]}" --n 17
check "--n 17: exit 2" fails_well u12 "strux generate: --n: .17. is not an integer from 1 to 16" 2
run u13 "${M[@]}" "${P[@]}" --n 2 --stream
check "--n 2 --stream: exit 2" fails_well u13 "strux generate: --stream prints one reply" 2
run f1 "${M[@]}" --prompt-file "$T"
check "--prompt-file DIR: exit 1, not a regular file" fails_well f1 "strux generate: --prompt-file: .* is not a regular file" 1
run f2 "${M[@]}" "${P[@]}" --schema "$T/no-such.json"
check "--schema missing: exit 1 with the system's reason" fails_well f2 "strux generate: --schema: cannot open .*No such file" 1
echo '{"type": ' >"$T/broken.json"
run f3 "${M[@]}" "${P[@]}" --schema "$T/broken.json"
check "--schema broken JSON: exit 1 with line and column" fails_well f3 "strux generate: .*broken.json: line [0-9]* column [0-9]*" 1
run f4 --model "$T/no-such-model" "${P[@]}"
check "missing model dir: exit 1" fails_well f4 "strux generate: " 1

[ $failed -eq 0 ]
