#!/bin/bash
# vm-init.sh - stage 2 of the real-stack VM: runs as PID 1 inside it, started by the initramfs of
# vm-setup.sh once the host's / is mounted (read-only, with a tmpfs overlay). Brings up the system
# D-Bus, bluetoothd and two virtual LE controllers (btvirt -l2: hci0 00:AA:01:00:00:00 and hci1
# 00:AA:01:01:00:01 on one virtual air), waits until both adapters are on D-Bus and powered, runs
# the command run-in-vm.sh stored, records its exit status and powers the VM off.
#
# Everything the run needs comes through the per-run directory (kernel argument result=DIR,
# shared read-write): cmd, cwd, env; the results go back there: rc, bluetoothd.log,
# controllers.log, timing.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
T0=$(cut -d' ' -f1 /proc/uptime)
RES=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^result=//p')
CACHE=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^cache=//p')
log() { echo "realstack-vm: $*"; }
finish() {   # $1 = exit status
  echo "$1" > "$RES/rc"; echo "=== realstack-vm: done rc=$1"; sync
  echo o > /proc/sysrq-trigger; sleep 5; exit "$1"; }

mount -t tmpfs tmpfs /run; mkdir -p /dev/pts /dev/shm /run/dbus /run/lock
mount -t devpts devpts /dev/pts; mount -t tmpfs tmpfs /dev/shm
mkdir -p "$RES"; mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 result "$RES" || finish 125
# shellcheck disable=SC1091
. "$RES/env"
# Host directories shared read-write at the same paths (REAL_STACK_RW=/a:/b).
i=0; IFS=: read -ra RW <<< "${REAL_STACK_RW:-}"
for d in "${RW[@]}"; do [ -n "$d" ] || continue; i=$((i+1)); mkdir -p "$d"
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 "rw$i" "$d" || { log "cannot mount $d"; finish 125; }
done
hostname realstack-vm; ip link set lo up 2>/dev/null

# Kernel modules from the unpacked .deb: bluetooth + the virtual HCI driver; AF_ALG with cmac/ecb
# for btvirt's emulated controller crypto (without them btvirt cannot open /dev/vhci).
mkdir -p /lib/modules; ln -sfn "$CACHE/kernel/lib/modules/$(uname -r)" "/lib/modules/$(uname -r)"
modprobe -a hci_vhci algif_hash algif_skcipher cmac ecb ecdh_generic || { log "modprobe failed"; finish 125; }

# bluetoothd's configuration. EATT is off unless REAL_STACK_EATT=1: with several ATT bearers,
# BlueZ 5.66's central hands consecutive write commands to whichever bearer is free, so they can
# reach the peripheral out of order (seen here: neighbouring 510-byte chunks swapped), which
# corrupts an image sent by a protocol without offsets.
BTD_ARGS=""
if [ "${REAL_STACK_EATT:-0}" != 1 ]; then
  printf '[GATT]\nChannels = 1\n' > /run/bluetooth-main.conf
  BTD_ARGS="-f /run/bluetooth-main.conf"
fi

dbus-uuidgen --ensure
dbus-daemon --system --fork --nopidfile || { log "dbus-daemon failed"; finish 125; }
# shellcheck disable=SC2086
/usr/libexec/bluetooth/bluetoothd -n $BTD_ARGS ${REAL_STACK_BTD_ARGS:-} > "$RES/bluetoothd.log" 2>&1 &
btvirt -l2 > "$RES/controllers.log" 2>&1 &

# Ready = both adapters exported by bluetoothd, then powered on. Polled for up to 90 s of guest
# uptime: under TCG on a busy host the stack can take many times its usual ~8 s.
n=0
while :; do
  n=$(dbus-send --system --print-reply --dest=org.bluez / org.freedesktop.DBus.ObjectManager.GetManagedObjects 2>/dev/null \
      | grep -cE 'object path "/org/bluez/hci[0-9]+"$')
  [ "$n" -ge 2 ] && break
  awk -v t0="$T0" '{exit !($1 - t0 > 90)}' /proc/uptime && break
  sleep 0.1
done
[ "$n" -ge 2 ] || { log "only $n of 2 adapters appeared (see controllers.log, bluetoothd.log)"; finish 125; }
for a in 0 1; do
  dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci$a org.freedesktop.DBus.Properties.Set \
    string:org.bluez.Adapter1 string:Powered variant:boolean:true > /dev/null || log "cannot power on hci$a"
done
T1=$(cut -d' ' -f1 /proc/uptime)
echo "ready_s=$T1 stack_s=$(awk "BEGIN{print $T1 - $T0}")" > "$RES/timing"

echo "=== realstack-vm: running (uptime ${T1}s, EATT $([ "${REAL_STACK_EATT:-0}" = 1 ] && echo on || echo off))"
cd "$(cat "$RES/cwd")" 2>/dev/null || cd /
export REAL_STACK_VM_DIR="$RES"    # bluetoothd.log and controllers.log are there
bash -c "$(cat "$RES/cmd")" < /dev/null
finish $?
