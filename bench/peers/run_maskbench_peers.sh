#!/usr/bin/env bash
# Runs MaskBench on peer engines (llguidance, XGrammar, outlines-core) the way
# `strux maskbench` runs strux.  Creates bench/peers/.venv from
# requirements-maskbench.txt when it is missing or the pins changed.
#
#   bench/peers/run_maskbench_peers.sh [--engine E[,E]] [--timeout-ms N]
#       [--out results.jsonl] [--list FILE] [FILE...]
#
# --list names are relative to $STRUX_SHARED/maskbench (default ../shared).
# MASKBENCH_LIGHT=1 installs without XGrammar (no torch download).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=$here/.venv
req=$here/requirements-maskbench.txt
want=$(mktemp)
trap 'rm -f "$want"' EXIT
if [ "${MASKBENCH_LIGHT:-0}" = 1 ]; then
    grep -v '# heavy' "$req" > "$want"
else
    cp "$req" "$want"
fi
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! cmp -s "$want" "$venv/.maskbench-requirements"; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$want"
    cp "$want" "$venv/.maskbench-requirements"
fi
# One thread everywhere (the script sets these too, before importing engines).
export RAYON_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
    TOKENIZERS_PARALLELISM=false
exec "$venv/bin/python" "$here/maskbench_peers.py" "$@"
