#!/usr/bin/env bash
# Installs the Debian packages strux needs to build and test.  Idempotent:
# when everything is present it only checks and returns.
set -euo pipefail
PKGS=(build-essential pkg-config clang libclang-rt-14-dev
      libnng-dev libjansson-dev libpcre2-dev libutf8proc-dev libcmocka-dev
      python3 python3-venv curl systemd default-jre-headless)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "deps: all ${#PKGS[@]} packages present"
    exit 0
fi
echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
