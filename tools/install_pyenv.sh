#!/usr/bin/env bash
# Creates the repo's dev/test Python venv (.venv) and installs
# tests/requirements-test.txt into it.  Idempotent: reinstalls only when the
# pins changed.  The product never needs Python; the tests use it for an
# independent validator and real client libraries.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
req="$root/tests/requirements-test.txt"
stamp="$venv/.strux-test-req"
if [ ! -x "$venv/bin/python" ]; then
    echo "pyenv: creating $venv"
    python3 -m venv "$venv"
fi
if cmp -s "$req" "$stamp" 2>/dev/null && "$venv/bin/python" -c "import strux_client" 2>/dev/null; then
    echo "pyenv: $venv up to date"
    exit 0
fi
echo "pyenv: installing $(grep -cv '^#' "$req") packages into $venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
# the Python client package, editable: its tests run against this tree
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -e "$root/clients/python"
cp "$req" "$stamp"
echo "pyenv: done"
