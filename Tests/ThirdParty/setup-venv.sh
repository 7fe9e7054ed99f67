#!/bin/sh
# Makes (once) the Python virtual environment the third-party SMP tests use: smpclient and smpmgr
# (Intercreate's SMP client and CLI), mcumgr-toolkit (a Python API over a Rust MCUmgr client)
# and imgtool (MCUboot's image tool), pinned, from PyPI, with smpclient's BLE stack (bleak, dbus-fast)
# pinned too, so that a new release cannot change what the real-stack tier measures.
# Idempotent: a venv that already has these versions is left as it is. Works on a fresh Debian
# machine with PyPI reachable (installs python3-venv with apt-get when it is missing and we are root).
#
#   Tests/ThirdParty/setup-venv.sh [VENV]      default VENV: $OTA_THIRD_PARTY_VENV or .build/third-party-venv
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=${1:-${OTA_THIRD_PARTY_VENV:-$root/.build/third-party-venv}}
packages="smpclient==7.3.0 smpmgr==0.19.1 mcumgr-toolkit==0.20.0 imgtool==2.5.0 bleak==3.1.0 dbus-fast==5.2.0"

if "$venv/bin/python" -c 'import importlib.metadata as m, sys
want = dict(p.split("==") for p in sys.argv[1:])
sys.exit(0 if all(m.version(n) == v for n, v in want.items()) else 1)' $packages 2>/dev/null; then
    echo "setup-venv: $venv already has $packages"
    exit 0
fi
command -v python3 >/dev/null || { echo "setup-venv: python3 is missing (apt-get install -y python3 python3-venv)" >&2; exit 1; }
if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y python3-venv >/dev/null || { apt-get update >/dev/null && apt-get install -y python3-venv >/dev/null; }
    else
        echo "setup-venv: python3's venv module is missing (apt-get install -y python3-venv)" >&2
        exit 1
    fi
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check $packages
echo "setup-venv: installed $packages into $venv"
