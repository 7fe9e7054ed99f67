#!/bin/bash
# Third-party SMP clients against our MCUmgr device model served over UDP:
#   1. the Swift suite "Third-party SMP clients over UDP" (smpclient in-process against the model:
#      imgtool image uploaded byte-identically, image state read and written, reset into a test boot);
#   2. smpmgr (the CLI) against `ota-peripheral --protocol mcumgr --smp-udp 1337` (smpmgr always
#      uses Zephyr's port 1337): upgrade (upload + reset), image state-read, state-write (test),
#      os reset, state-read (the image runs, unconfirmed), state-write --confirm; and slot 1's bytes
#      compared with the image (--image-out) after an upload without reset;
#   3. smpclient's serial transport against `ota-peripheral --protocol mcumgr --smp-pty` (Zephyr's
#      console framing on a pseudo-terminal): upload byte-identical, image state, test mark; and
#      smpmgr over the same transport (`--port PTY`): image upload byte-identical, image state-read;
#   4. mcumgr-toolkit over UDP and over the pseudo-terminal: echo, upload byte-identical, image
#      state, test mark.
# Needs PyPI once (Tests/ThirdParty/setup-venv.sh). Prints "N passed, N failed" last; exit 1 on a failure.
#
#   Tests/ThirdParty/smp-udp.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export OTA_THIRD_PARTY_VENV=${OTA_THIRD_PARTY_VENV:-$root/.build/third-party-venv}
Tests/ThirdParty/setup-venv.sh "$OTA_THIRD_PARTY_VENV" || exit 1
venv=$OTA_THIRD_PARTY_VENV
passed=0 failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
fail() { echo "FAILED: $1"; failed=$((failed + 1)); }

swift build --build-tests >/dev/null 2>&1 || { swift build --build-tests 2>&1 | tail -20; exit 1; }
if swift test --skip-build --filter ThirdPartyClientTests > /tmp/ota-third-party-swift.log 2>&1 \
    && grep -q 'Suite "Third-party SMP clients over UDP" passed' /tmp/ota-third-party-swift.log \
    && ! grep -q 'skipped' /tmp/ota-third-party-swift.log; then
    ok "swift suite: smpclient against the device model (see /tmp/ota-third-party-swift.log)"
else
    grep -E '✘|skipped|error' /tmp/ota-third-party-swift.log | head -20
    fail "swift suite: smpclient against the device model"
fi

bin=$(swift build --show-bin-path)
work=$(mktemp -d)
server=""
stop() { [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null; server=""; }
trap 'stop; rm -rf "$work"' EXIT
python3 -c "import sys; open(sys.argv[1], 'wb').write(bytes((i * 197 + 3) & 255 for i in range(150000)))" "$work/payload.bin"
"$venv/bin/imgtool" create --header-size 0x200 --pad-header --slot-size 0x80000 --align 4 --version 4.5.6 "$work/payload.bin" "$work/app.bin" >/dev/null
size=$(stat -c %s "$work/app.bin")
hash=$("$bin/ota" inspect "$work/app.bin" | sed -n 's/.*hash (SHA-256 TLV[^:]*: \([0-9a-f]*\).*/\1/p')
smpmgr() { timeout 120 "$venv/bin/smpmgr" --ip 127.0.0.1 --timeout 5 "$@" 2>&1; }
serve() {
    "$bin/ota-peripheral" --protocol mcumgr --smp-udp 1337 "$@" > "$work/ready" 2> "$work/server.log" &
    server=$!
    for _ in $(seq 50); do grep -q '^ready' "$work/ready" && return 0; sleep 0.1; done
    cat "$work/server.log"
    return 1
}
has() { grep -qi -- "$1" <<< "$2"; }

if ! serve --image-out "$work/slot1.bin" --image-size "$size"; then
    fail "ota-peripheral --smp-udp 1337 did not start (is port 1337 in use?)"
else
    out=$(smpmgr image upload "$work/app.bin") && ok "smpmgr image upload ($size bytes)" || { echo "$out" | tail -5; fail "smpmgr image upload"; }
    out=$(smpmgr image state-read)
    has "${hash^^}" "$out" && ok "smpmgr image state-read lists the image's hash ${hash:0:16}..." || { echo "$out"; fail "smpmgr image state-read"; }
    stop
    cmp -s "$work/slot1.bin" "$work/app.bin" && ok "slot 1 holds smpmgr's upload byte-identically" || fail "slot 1 differs from the uploaded image"

    serve
    out=$(smpmgr upgrade "$work/app.bin") && has "Upgrade complete" "$out" && ok "smpmgr upgrade (upload and reset)" || { echo "$out" | tail -5; fail "smpmgr upgrade"; }
    sleep 1
    smpmgr image state-write "$hash" >/dev/null
    out=$(smpmgr image state-read)
    has "pending=True" "$out" && ok "smpmgr image state-write HASH, then state-read: slot 1 pending" || { echo "$out"; fail "smpmgr image state-write HASH"; }
    smpmgr os reset >/dev/null && ok "smpmgr os reset" || fail "smpmgr os reset"
    sleep 1.5
    out=$("$bin/ota" image list --device udp:127.0.0.1:1337 --json)
    slot0() {
        python3 -c "import json, sys
s = {i['slot']: i for i in json.loads(sys.argv[1])['images']}
sys.exit(0 if s[0]['hash'] == sys.argv[2] and s[0]['active'] and s[0]['confirmed'] == (sys.argv[3] == 'confirmed') else 1)" "$@"
    }
    slot0 "$out" "$hash" unconfirmed && ok "after smpmgr's reset the image runs unconfirmed (ota image list --device udp:)" \
        || { echo "$out"; fail "test boot after smpmgr's reset"; }
    smpmgr image state-write --confirm >/dev/null
    out=$("$bin/ota" image list --device udp:127.0.0.1:1337 --json)
    slot0 "$out" "$hash" confirmed && ok "smpmgr image state-write --confirm confirms the running image" || { echo "$out"; fail "smpmgr confirm"; }
    stop
fi

# smpclient's serial transport (Zephyr's console framing) against the model on a pseudo-terminal.
"$bin/ota-peripheral" --protocol mcumgr --smp-pty --image-out "$work/serial-slot1.bin" --image-size "$size" > "$work/ready" 2> "$work/server.log" &
server=$!
for _ in $(seq 50); do grep -q '^ready' "$work/ready" && break; sleep 0.1; done
pty=$(sed -n 's/^ready serial://p' "$work/ready")
if [ -z "$pty" ]; then
    cat "$work/server.log"
    fail "ota-peripheral --smp-pty did not start"
else
    out=$(timeout 300 "$venv/bin/python" Tests/ThirdParty/smpclient_udp.py serial "$pty" "$work/app.bin" 2>&1)
    echo "$out" | sed 's/^/  serial: /'
    grep -q FAILED <<< "$out" || ! grep -q "ok: slot 1 holds the image" <<< "$out" \
        && fail "smpclient over serial (upload, image state, test mark)" || ok "smpclient over serial: upload, image state, test mark"
    stop
    cmp -s "$work/serial-slot1.bin" "$work/app.bin" && ok "slot 1 holds smpclient's serial upload byte-identically" || fail "slot 1 differs after the serial upload"
fi
# smpmgr over serial (`--port`, smpclient's serial transport) against the model on a pseudo-terminal.
"$bin/ota-peripheral" --protocol mcumgr --smp-pty --image-out "$work/smpmgr-serial-slot1.bin" --image-size "$size" > "$work/ready" 2> "$work/server.log" &
server=$!
for _ in $(seq 50); do grep -q '^ready' "$work/ready" && break; sleep 0.1; done
pty=$(sed -n 's/^ready serial://p' "$work/ready")
if [ -z "$pty" ]; then
    cat "$work/server.log"
    fail "ota-peripheral --smp-pty for smpmgr did not start"
else
    smpmgr_serial() { timeout 300 "$venv/bin/smpmgr" --port "$pty" --timeout 5 "$@" 2>&1; }
    out=$(smpmgr_serial image upload "$work/app.bin") && ok "smpmgr --port $pty image upload ($size bytes)" \
        || { echo "$out" | tail -5; fail "smpmgr image upload over serial"; }
    out=$(smpmgr_serial image state-read)
    has "${hash^^}" "$out" && ok "smpmgr image state-read over serial lists the image's hash ${hash:0:16}..." \
        || { echo "$out"; fail "smpmgr image state-read over serial"; }
    stop
    cmp -s "$work/smpmgr-serial-slot1.bin" "$work/app.bin" && ok "slot 1 holds smpmgr's serial upload byte-identically" \
        || fail "slot 1 differs after smpmgr's serial upload"
fi
# mcumgr-toolkit, over UDP and over a pseudo-terminal.
for transport in udp serial; do
    if [ "$transport" = udp ]; then
        "$bin/ota-peripheral" --protocol mcumgr --smp-udp 0 --image-out "$work/toolkit-slot1.bin" --image-size "$size" > "$work/ready" 2> "$work/server.log" &
    else
        "$bin/ota-peripheral" --protocol mcumgr --smp-pty --image-out "$work/toolkit-slot1.bin" --image-size "$size" > "$work/ready" 2> "$work/server.log" &
    fi
    server=$!
    for _ in $(seq 50); do grep -q '^ready' "$work/ready" && break; sleep 0.1; done
    address=$(sed -n 's/^ready //p' "$work/ready")
    case $address in
        udp:*) target=(udp 127.0.0.1 "${address##*:}") ;;
        serial:*) target=(serial "${address#serial:}") ;;
        *) cat "$work/server.log"; fail "ota-peripheral for mcumgr-toolkit over $transport did not start"; stop; continue ;;
    esac
    out=$(timeout 300 "$venv/bin/python" Tests/ThirdParty/mcumgr_toolkit_check.py "${target[@]}" "$work/app.bin" 2>&1)
    echo "$out" | sed "s/^/  mcumgr-toolkit $transport: /"
    grep -q "ok: image set state (test): slot 1 pending" <<< "$out" && ! grep -q FAILED <<< "$out" \
        && ok "mcumgr-toolkit over $transport: echo, upload, image state, test mark" || fail "mcumgr-toolkit over $transport"
    stop
    cmp -s "$work/toolkit-slot1.bin" "$work/app.bin" && ok "slot 1 holds mcumgr-toolkit's $transport upload byte-identically" \
        || fail "slot 1 differs after mcumgr-toolkit's $transport upload"
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
