#!/usr/bin/env bash
# strux's masks against llguidance's, each difference proven with a witness
# judged by the project's oracle (bench/peers/mask_compare.py; issue 28).
# Needs build/bench_mask_peer (make CUDA=0 build/bench_mask_peer), the repo's
# .venv (the oracle: jsonschema) and bench/peers/.venv (llguidance; created
# here like run_maskbench_peers.sh does, without XGrammar's torch).
#
#   bench/peers/run_mask_compare.sh [--every N] [--pos-every K] [--out F] [--repros F] ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=$here/.venv
want=$(mktemp)
trap 'rm -f "$want"' EXIT
grep -v '# heavy' "$here/requirements-maskbench.txt" > "$want"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import llguidance, tokenizers, numpy' 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$want"
fi
export RAYON_NUM_THREADS=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
exec "$venv/bin/python" "$here/mask_compare.py" "$@"
