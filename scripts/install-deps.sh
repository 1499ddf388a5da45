#!/usr/bin/env bash
# Installs the system packages accountd needs to build and test, and only those
# that are missing, so that a warm machine skips apt entirely.
#
# libsystemd-dev is pinned to the version of the installed libsystemd0, so that
# apt never upgrades systemd itself as a side effect.
set -euo pipefail

missing=()
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

for pkg in libsqlite3-dev sqlite3 pkg-config socat strace; do
    installed "$pkg" || missing+=("$pkg")
done
if ! installed libsystemd-dev; then
    missing+=("libsystemd-dev=$(dpkg-query -W -f='${Version}' libsystemd0)")
fi
# Extra packages a caller asks for (the benchmarks want redis-server, for example).
for pkg in "$@"; do
    installed "$pkg" || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
echo "installing missing system packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
