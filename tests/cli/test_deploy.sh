#!/usr/bin/env bash
# deploy/: the systemd unit passes `systemd-analyze verify` with no complaint
# (ExecStart pointed at the built struxd), the Kubernetes manifests validate
# strictly against the Kubernetes 1.30 and 1.37 OpenAPI schemas
# (kubernetes-validate), each with a broken copy that must fail; every struxd
# option the three recipes pass is one struxd --help lists.
# Needs $STRUX_BUILD and the repo venv (kubernetes-validate).
set -u
B=${STRUX_BUILD:?}
V=${STRUX_VENV:-$PWD/.venv}
T=$(mktemp -d /tmp/strux-deploy.XXXXXX)
trap 'rm -rf "$T"' EXIT
n=0 failed=0
check() {
    local what=$1
    shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $what"; else echo "not ok $n - $what"; failed=$((failed + 1)); fi
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

# ---- systemd ------------------------------------------------------------------------
verify_unit() { # FILE: exit 0 and nothing said
    local out
    out=$(systemd-analyze verify "$1" 2>&1) && [ -z "$out" ] || { echo "$out" | sed 's/^/# /'; return 1; }
}
if command -v systemd-analyze >/dev/null; then
    sed "s|/usr/local/bin/struxd|$B/struxd|" deploy/struxd.service >"$T/struxd.service"
    check "systemd-analyze verify deploy/struxd.service" verify_unit "$T/struxd.service"
    mkdir -p "$T/bad"
    sed 's/^ProtectHome=yes/ProtectHomes=yes/' "$T/struxd.service" >"$T/bad/struxd.service"
    check "systemd-analyze catches a misspelt directive" sh -c "! systemd-analyze verify '$T/bad/struxd.service' 2>&1 | grep -q ProtectHomes && exit 1 || exit 0"
else
    skip "systemd-analyze verify deploy/struxd.service" "systemd-analyze not installed"
    skip "systemd-analyze catches a misspelt directive" "systemd-analyze not installed"
fi

# ---- Kubernetes -----------------------------------------------------------------------
if [ -x "$V/bin/kubernetes-validate" ]; then
    for k in 1.30.0 1.37.0; do
        check "deploy/k8s/strux.yaml validates strictly against Kubernetes $k" \
            "$V/bin/kubernetes-validate" --strict --quiet -k "$k" deploy/k8s/strux.yaml
    done
    sed 's/readinessProbe:/readinesProbe:/' deploy/k8s/strux.yaml >"$T/bad.yaml"
    check "a misspelt field fails validation" sh -c "! '$V/bin/kubernetes-validate' --strict --quiet '$T/bad.yaml' >/dev/null 2>&1"
    check "probes on /health, preStop, Prometheus annotations for /metrics, several replicas" sh -c "
        grep -q 'path: /health' deploy/k8s/strux.yaml && grep -q 'preStop:' deploy/k8s/strux.yaml &&
        grep -q 'prometheus.io/path: /metrics' deploy/k8s/strux.yaml &&
        grep -Eq '^  replicas: ([2-9]|[1-9][0-9])' deploy/k8s/strux.yaml"
else
    echo "not ok $((n + 1)) - $V lacks kubernetes-validate (make deps)"
    exit 1
fi

# ---- the options the recipes pass exist ------------------------------------------------------
"$B/struxd" --help >"$T/help" 2>&1
opts=$(cat deploy/struxd.service deploy/Containerfile deploy/k8s/strux.yaml | grep -v '^ *#' |
       grep -o -- '--[a-z][a-z-]*' |
       grep -v -- '--no-install-recommends\|--system\|--uid\|--no-create-home\|--from' | sort -u)
missing=""
for o in $opts; do grep -q -- "$o" "$T/help" || missing="$missing $o"; done
check "every struxd option in deploy/ is one struxd knows (${opts//$'\n'/ })" [ -z "$missing" ]
exit $((failed > 0))
