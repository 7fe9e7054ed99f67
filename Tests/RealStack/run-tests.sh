#!/bin/bash
# run-tests.sh - the real-stack tests: `ota` updates `ota-peripheral` over a real Linux Bluetooth
# stack (kernel L2CAP/ATT, bluetoothd 5.66, D-Bus) between two virtual controllers in one
# throw-away VM. The one command to run:
#
#     Tests/RealStack/run-tests.sh
#
# It (1) prepares the VM if needed (vm-setup.sh: packages, Debian kernel, initramfs; root and the
# Debian mirror the first time), (2) builds `ota` and `ota-peripheral` on the host, (3) boots ONE
# VM and runs vm-tests.sh inside it (about 25 s of boot, then ~10-30 s per test under TCG),
# printing a PASS or FAIL line per test, and (4) ends with the line "N passed, M failed".
#
# Exit status: 0 all passed; 1 a test failed or the build failed; 2 the VM could not start (the
# reason is printed on one line) - or 0 with REAL_STACK_OPTIONAL=1, which CI sets so that
# machines without QEMU/kernel skip the suite.
#
# Environment:
#   REAL_STACK_OPTIONAL=1      a VM that cannot start is a skip, not a failure
#   REAL_STACK_SETUP=0         do not run vm-setup.sh (expect it done)
#   REAL_STACK_TESTS="..."     a subset: ota-generic ota-framed ota-framed-resume
#                              peripheral-generic peripheral-framed-resume generic-restart
#                              generic-dying-link nordic-app nordic-sd-bl-app nordic-resume nordic-dying-link
#                              bench-acquirewrite bench-acquirewrite-system bench-acquirewrite-unreceipted bench-writevalue
#                              ota-generic-eatt ota-framed-eatt ota-unpaired-refused ota-paired-passkey
#                              ota-paired-justworks smpclient-ble ota-mcumgr (default: all); and, opt-in
#                              only, bench-nordic-140k bench-nordic-400k bench-nordic-140k-pipelined
#                              bench-nordic-400k-pipelined bench-nrfdfu-140k bench-nrfdfu-400k
#   REAL_STACK_NRFDFU=PATH     the nrfdfu binary the bench-nrfdfu-* cases run (a third-party Nordic DFU
#                              client; build it yourself, outside the repository)
#   REAL_STACK_BENCH_PACKAGES=DIR  the bench-nordic-*/bench-nrfdfu-* packages: DIR/bench-140k.zip and
#                              DIR/bench-400k.zip (say, signed by nrfutil); default: made here, unsigned
#   REAL_STACK_BUILD_ARGS="..." extra `swift build` arguments, such as --scratch-path DIR
#   REAL_STACK_BIN=DIR         use ota and ota-peripheral from DIR, do not build
#   REAL_STACK_KERNEL=backports the VM's kernel: backports (bookworm-backports' 6.12, which the
#                              ota-paired-* cases need) or stable (bookworm's 6.1); see vm-setup.sh
#   REAL_STACK_EATT=1          keep bluetoothd's EATT for every case (off by default except in the
#                              *-eatt cases; see vm-init.sh)
#   REAL_STACK_TIMEOUT=1800    seconds before the VM is killed
#   REAL_STACK_KEEP=1          keep the work directory (image, received images, logs) even on success
#   REAL_STACK_PERF=1          profile ota with the host's `perf record -g` (logs/NAME/perf.data)
# and the knobs of run-in-vm.sh (REAL_STACK_VERBOSE, REAL_STACK_KVM, REAL_STACK_BTD_ARGS, ...).
set -uo pipefail
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  sed -n '2,/^set -uo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
fi
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ALL_TESTS="ota-generic ota-framed ota-framed-resume peripheral-generic peripheral-framed-resume generic-restart generic-dying-link nordic-app nordic-sd-bl-app nordic-resume nordic-dying-link nordic-app-pipelined nordic-sd-bl-app-pipelined nordic-resume-pipelined nordic-dying-link-pipelined bench-acquirewrite bench-acquirewrite-system bench-acquirewrite-unreceipted bench-writevalue ota-generic-eatt ota-framed-eatt ota-unpaired-refused ota-paired-passkey ota-paired-justworks smpclient-ble ota-mcumgr"
TESTS=${REAL_STACK_TESTS:-$ALL_TESTS}
IMAGE_SIZE=204800

# The VM cannot start here: skip (REAL_STACK_OPTIONAL=1) or fail, with one line saying why.
cannot_start() {
  if [ "${REAL_STACK_OPTIONAL:-0}" = 1 ]; then
    echo "real-stack tests SKIPPED: $1"
    exit 0
  fi
  echo "real-stack tests cannot run: $1"
  exit 2
}

# 1. The VM's prerequisites.
if [ "${REAL_STACK_SETUP:-1}" != 0 ]; then
  setup_log=$(mktemp)
  if ! "$HERE/vm-setup.sh" > "$setup_log" 2>&1; then
    reason=$(grep -v '^\s*$' "$setup_log" | tail -n1)
    rm -f "$setup_log"
    cannot_start "setup failed: ${reason:-vm-setup.sh failed}"
  fi
  rm -f "$setup_log"
fi
command -v qemu-system-x86_64 > /dev/null || cannot_start "qemu-system-x86_64 is not installed (Tests/RealStack/vm-setup.sh installs it)"

# 2. The tools, built on the host (building inside the VM would be very slow under TCG).
if [ -n "${REAL_STACK_BIN:-}" ]; then
  BIN=$REAL_STACK_BIN
else
  # shellcheck disable=SC2086
  for product in ota ota-peripheral; do
    echo "real-stack: swift build --product $product ${REAL_STACK_BUILD_ARGS:-}"
    if ! (cd "$ROOT" && swift build --product "$product" ${REAL_STACK_BUILD_ARGS:-} 2>&1 | tail -n 20); then
      echo "FAIL build: swift build --product $product failed"
      echo "0 passed, $(wc -w <<< "$TESTS") failed"
      exit 1
    fi
  done
  # shellcheck disable=SC2086
  BIN=$(cd "$ROOT" && swift build --show-bin-path ${REAL_STACK_BUILD_ARGS:-})
fi
for tool in ota ota-peripheral; do
  if [ ! -x "$BIN/$tool" ]; then
    echo "FAIL build: $BIN/$tool was not built"
    echo "0 passed, $(wc -w <<< "$TESTS") failed"
    exit 1
  fi
done

# 3. A 200 KB image (the same bytes every run) in a work directory the VM shares read-write.
WORK=$(mktemp -d /tmp/realstack.XXXXXX)
# smpclient-ble: the third-party venv (smpclient, bleak, imgtool from PyPI; idempotent) and an
# imgtool-made MCUboot image of 150 000 bytes.
if grep -qwE "smpclient-ble|ota-mcumgr" <<< "$TESTS"; then
  venv=${REAL_STACK_THIRD_PARTY_VENV:-$ROOT/.build/third-party-venv}
  if "$ROOT/Tests/ThirdParty/setup-venv.sh" "$venv" > "$WORK/setup-venv.log" 2>&1; then
    /usr/bin/python3 -c "import sys; open(sys.argv[1], 'wb').write(bytes((i * 197 + 3) & 255 for i in range(150000)))" "$WORK/mcuboot-payload.bin"
    "$venv/bin/imgtool" create --header-size 0x200 --pad-header --slot-size 0x80000 --align 4 --version 4.5.6 \
      "$WORK/mcuboot-payload.bin" "$WORK/mcuboot-app.bin" > /dev/null || echo "real-stack: imgtool failed; smpclient-ble will fail"
  else
    echo "real-stack: the third-party venv could not be made ($(tail -n1 "$WORK/setup-venv.log")); smpclient-ble will fail"
  fi
fi
/usr/bin/python3 -c "import random, sys; random.seed(20240601); open(sys.argv[1], 'wb').write(random.randbytes($IMAGE_SIZE))" \
  "$WORK/image.bin" || { echo "real-stack: cannot write $WORK/image.bin"; exit 1; }
# The Nordic packages (nrfutil's, from the unit tests' fixtures) and what the bootloader model's
# flash holds after each: app.bin; after SoftDevice+bootloader (6144 bytes) then the application
# (3072), each written from byte 0 and each object's pages erased first, the application, the rest
# of its page erased, then sd_bl.bin from its second page on (NordicDFUEndToEndTests pins this).
/usr/bin/python3 - "$ROOT/Tests/OTAProtocolNordicDFUTests/Fixtures" "$WORK" "$HERE" <<'EOF' || { echo "real-stack: cannot prepare the Nordic packages"; exit 1; }
import shutil, sys, zipfile
fixtures, work = sys.argv[1], sys.argv[2]
shutil.copy(f"{fixtures}/app-unsigned.zip", f"{work}/nordic-app.zip")
open(f"{work}/nordic-app.expect", "wb").write(zipfile.ZipFile(f"{work}/nordic-app.zip").read("app.bin"))
shutil.copy(f"{fixtures}/sd-bl-app.zip", f"{work}/nordic-sd-bl-app.zip")
package = zipfile.ZipFile(f"{work}/nordic-sd-bl-app.zip")
app, sd_bl = package.read("app.bin"), package.read("sd_bl.bin")
assert len(app) == 3072 and len(sd_bl) == 6144
open(f"{work}/nordic-sd-bl-app.expect", "wb").write(app + b"\xff" * 1024 + sd_bl[4096:])
# image.bin as a Nordic .bin with its .dat beside it: the unsigned init packet the project's own
# InitPacketBuilder.unsignedApplication makes (nordic_init_packet.py).
sys.path.insert(0, sys.argv[3])
from nordic_init_packet import unsigned_init_packet
image = open(f"{work}/image.bin", "rb").read()
shutil.copy(f"{work}/image.bin", f"{work}/nordic-image.bin")
open(f"{work}/nordic-image.dat", "wb").write(unsigned_init_packet(image))
EOF

# The Nordic benchmark packages (bench-nordic-*, bench-nrfdfu-*): 140 KiB and 400 KiB applications
# as DFU .zip packages (manifest.json, .bin, and the same unsigned init packet as above), or the
# ones REAL_STACK_BENCH_PACKAGES names; bench-SIZE.expect is the .bin the flash must then hold.
if grep -qE "bench-(nordic|nrfdfu)-" <<< "$TESTS"; then
  /usr/bin/python3 - "$WORK" "${REAL_STACK_BENCH_PACKAGES:-}" "$HERE" <<'EOF' || { echo "real-stack: cannot prepare the Nordic benchmark packages"; exit 1; }
import json, random, shutil, sys, zipfile
work, given = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from nordic_init_packet import unsigned_init_packet
for name, size in (("140k", 140 * 1024), ("400k", 400 * 1024)):
    package = f"{work}/bench-{name}.zip"
    if given:
        shutil.copy(f"{given}/bench-{name}.zip", package)
    else:
        image = random.Random(size).randbytes(size)
        dat = unsigned_init_packet(image)
        manifest = {"manifest": {"application": {"bin_file": "app.bin", "dat_file": "app.dat"}}}
        with zipfile.ZipFile(package, "w") as z:
            z.writestr("manifest.json", json.dumps(manifest, indent=4))
            z.writestr("app.bin", image)
            z.writestr("app.dat", dat)
    with zipfile.ZipFile(package) as z:
        app = json.loads(z.read("manifest.json"))["manifest"]["application"]
        open(f"{work}/bench-{name}.expect", "wb").write(z.read(app["bin_file"]))
EOF
fi

# nrfdfu connects with Adapter1.ConnectDevice, which bluetoothd offers only with -E (experimental
# interfaces); the rest of the stack is the same.
if grep -q "bench-nrfdfu-" <<< "$TESTS"; then
  export REAL_STACK_BTD_ARGS="${REAL_STACK_BTD_ARGS:-} -E"
fi

# 4. One VM for every test. The conditions first, as the bench-* figures depend on them: the
# accelerator (run-in-vm.sh's rule), the host's CPUs and load, and which build of the tools.
accel=TCG
if [ "${REAL_STACK_KVM:-auto}" = 1 ] || { [ "${REAL_STACK_KVM:-auto}" = auto ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; }; then
  accel=KVM
fi
echo "real-stack: conditions: $accel, host $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), tools from $BIN"
echo "real-stack: booting the VM (tests: $TESTS)"
REAL_STACK_RW=$WORK REAL_STACK_TESTS=$TESTS REAL_STACK_TIMEOUT=${REAL_STACK_TIMEOUT:-1800} \
  "$HERE/run-in-vm.sh" "REAL_STACK_TESTS='$TESTS' REAL_STACK_NRFDFU='${REAL_STACK_NRFDFU:-}' REAL_STACK_PERF='${REAL_STACK_PERF:-0}' '$HERE/vm-tests.sh' '$WORK' '$BIN'" 2> "$WORK/vm.err"
vm_status=$?
if [ $vm_status != 0 ] && [ ! -s "$WORK/results" ]; then
  reason=$(grep -m1 'cannot start the VM' "$WORK/vm.err" | sed 's/^run-in-vm: cannot start the VM: //')
  if [ -z "$reason" ]; then
    reason="the VM failed before running any test (exit $vm_status): $(grep -v '^\s*$' "$WORK/vm.err" | head -n1)"
    cat "$WORK/vm.err" >&2
  fi
  rm -rf "$WORK"
  cannot_start "$reason"
fi
[ -s "$WORK/vm.err" ] && cat "$WORK/vm.err" >&2

# 5. The summary: vm-tests.sh writes one line per test, in order; a test without a line did not run.
passed=0
failed=0
mapfile -t lines < <(grep -E '^(PASS|FAIL) ' "$WORK/results" 2>/dev/null)
index=0
for test in $TESTS; do
  line=${lines[$index]:-}
  index=$((index + 1))
  if [[ $line == "PASS $test" || $line == "PASS $test "* ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    [ -n "$line" ] || echo "FAIL $test: did not run (the VM ended with status $vm_status)"
  fi
done
if [ $failed != 0 ] || [ "${REAL_STACK_KEEP:-0}" = 1 ]; then
  echo "real-stack: logs, images and results kept in $WORK"
else
  rm -rf "$WORK"
fi
echo "$passed passed, $failed failed"
[ $failed = 0 ]
