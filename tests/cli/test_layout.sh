#!/usr/bin/env bash
# tools/check_layout.py: the tree passes, and each rule fires when broken.
# Every mutation is made in a copy of the sources, never in the checkout.
set -u
cd "$(dirname "$0")/../.."
T=$(mktemp -d /tmp/strux-layout.XXXXXX)
trap 'rm -rf "$T"' EXIT
n=0
check() { # check WHAT COMMAND...: the command's status is the verdict
    local what=$1
    shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $what"; else echo "not ok $n - $what"; fi
}
python3 tools/check_layout.py . >"$T/out" 2>&1
check "the tree follows the layout rules" sh -c "[ $? -eq 0 ] || { cat '$T/out'; false; }"

fresh() { # a copy of the product and test sources
    rm -rf "$T/tree" && mkdir -p "$T/tree"
    cp -r common engine grammar kernels rpc tools tests bench "$T/tree/"
    rm -rf "$T/tree/tests/fixtures" "$T/tree/tests/fuzz/corpus"
}
breaks() { # breaks WHAT FILE LINE EXPECTED: adding LINE to FILE makes the check fail saying EXPECTED
    local what=$1 file=$2 line=$3 expect=$4
    fresh
    printf '%s\n' "$line" >>"$T/tree/$file"
    python3 tools/check_layout.py "$T/tree" >"$T/out" 2>&1
    local rc=$?
    check "$what" sh -c "[ $rc -eq 1 ] && grep -q -- '$expect' '$T/out' && grep -q '^$file:' '$T/out'"
}
breaks "grammar never includes engine" grammar/match/gr_feed.c '#include "engine/generate.h"' 'never includes'
breaks "the matcher never includes the compiler" grammar/match/gr_feed.c \
    '#include "grammar/compile/compile.h"' 'never includes'
breaks "the compiler never includes the matcher" grammar/compile/gr_schema.c \
    '#include "grammar/match/match.h"' 'never includes'
breaks "the compiled grammar includes neither part" grammar/ir/gr_object.c \
    '#include "grammar/match/match.h"' 'never includes'
breaks "grammar never includes rpc" grammar/regex/regex_api.c '#include "rpc/server.h"' 'never includes'
breaks "the validator includes no regex engine" grammar/validator/val_eval.c \
    '#include "grammar/regex/regex.h"' 'must stay independent'
breaks "the validator includes no grammar compiler" grammar/validator/validator.c \
    '#include "grammar/grammar.h"' 'must stay independent'
breaks "kernels never include grammar" kernels/mask_ref.c '#include "grammar/grammar.h"' 'never includes'
breaks "kernels never include rpc" kernels/rope_table.c '#include "rpc/protocol.h"' 'never includes'
breaks "engine never includes rpc" engine/gen.c '#include "rpc/protocol.h"' 'never includes'
breaks "product code includes only contracts" rpc/server.c \
    '#include "engine/cpu/cpu_kernels.h"' 'internal to engine/cpu/'
breaks "a test includes only contracts and named white-box headers" tests/unit/test_error.c \
    '#include "grammar/regex/regex_internal.h"' 'internal to grammar/regex/'
breaks "a part uses only what its row allows" engine/model/model_load.c \
    '#include "engine/cpu/engine.h"' 'engine/model/ may not use engine/cpu/'
breaks "common depends on nothing" common/sx_file.c '#include "grammar/grammar.h"' 'common/ may not use grammar/'
breaks "a header that does not exist" tools/strux/main.c '#include "engine/chat.h"' 'does not exist'
fresh
mkdir -p "$T/tree/engine/newpart" && printf 'int x;\n' >"$T/tree/engine/newpart/a.c"
python3 tools/check_layout.py "$T/tree" >"$T/out" 2>&1
check "a new folder must declare its contract" sh -c "[ $? -eq 1 ] && grep -q 'not a declared module' '$T/out'"
fresh
printf '#include "engine/cpu/cpu_kernels.h"\n' >>"$T/tree/tests/unit/test_error.c"
check "a named white-box header is fine in a test" sh -c "python3 tools/check_layout.py '$T/tree' >/dev/null"
