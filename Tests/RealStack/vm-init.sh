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
export REAL_STACK_EATT REAL_STACK_BTD_ARGS REAL_STACK_ECRED   # for vm-tests.sh and realstack-bluetoothd.sh
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
# L2CAP Enhanced Credit Based mode (the kernel's enable_ecred): 6.1 has none, so bluetoothd opens
# its EATT bearers in LE Credit Based mode; 6.12 turns it on. With it on, the *-eatt cases were
# unreliable here (a first notification lost, a link dropped three times; docs/decisions/0039).
# Off unless REAL_STACK_ECRED=1, so every kernel runs EATT as 6.1 did.
P=/sys/module/bluetooth/parameters/enable_ecred
if [ -w $P ]; then
  if [ "${REAL_STACK_ECRED:-0}" = 1 ]; then echo Y > $P; else echo N > $P; fi
fi

# bluetoothd's configuration. EATT is off unless REAL_STACK_EATT=1: with several ATT bearers,
# BlueZ 5.66's central hands consecutive write commands to whichever bearer is free, so they can
# reach the peripheral out of order (seen here: neighbouring 510-byte chunks swapped), which
# corrupts an image sent by a protocol without offsets unless ota sends write requests (it does
# by itself when it sees EATT; docs/decisions/0020-eatt-ordering.md). The *-eatt cases of
# vm-tests.sh restart bluetoothd with its defaults (EATT on, Channels = 3) through
# /run/realstack-bluetoothd.sh, which this writes: `realstack-bluetoothd.sh eatt|single`.
printf '[GATT]\nChannels = 1\n' > /run/bluetooth-main.conf
cat > /run/realstack-bluetoothd.sh <<'BTD'
#!/bin/bash
# realstack-bluetoothd.sh [start|ready] eatt|single - (re)starts bluetoothd with its defaults
# (EATT on) or with Channels = 1, waits for both adapters and powers them on; exit 0 when ready.
# Nothing to do when it already runs in that mode. "start" only starts it, "ready" only waits.
step=both
case $1 in start|ready) step=$1; shift ;; esac
mode=$1
current=$(cat /run/realstack-bluetoothd.mode 2>/dev/null)
pid=$(cat /run/realstack-bluetoothd.pid 2>/dev/null)
if [ $step = both ] && [ "$mode" = "$current" ] && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then exit 0; fi
if [ $step != ready ]; then
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
  fi
  args=""
  [ "$mode" = single ] && args="-f /run/bluetooth-main.conf"
  # shellcheck disable=SC2086
  /usr/libexec/bluetooth/bluetoothd -n $args ${REAL_STACK_BTD_ARGS:-} >> "$REAL_STACK_VM_DIR/bluetoothd.log" 2>&1 &
  echo $! > /run/realstack-bluetoothd.pid
  echo "$mode" > /run/realstack-bluetoothd.mode
fi
[ $step = start ] && exit 0
start=$(cut -d' ' -f1 /proc/uptime)
n=0
restarted=0
while :; do
  n=$(dbus-send --system --print-reply --dest=org.bluez / org.freedesktop.DBus.ObjectManager.GetManagedObjects 2>/dev/null \
      | grep -cE 'object path "/org/bluez/hci[0-9]+"$')
  [ "$n" -ge 2 ] && break
  # Seen on a loaded host (load average 8-10): one of btvirt's two controllers never reached
  # bluetoothd, and restarting bluetoothd alone did not bring it. After 30 s, start the virtual
  # controllers (when this script's caller recorded btvirt's PID) and bluetoothd once more.
  if [ $restarted = 0 ] && awk -v t0="$start" '{exit !($1 - t0 > 30)}' /proc/uptime; then
    restarted=1
    echo "realstack-bluetoothd: $n of 2 adapters after 30 s ($(ls /sys/class/bluetooth 2>/dev/null | tr '\n' ' ')in the kernel); restarting btvirt and bluetoothd" \
      | tee -a "$REAL_STACK_VM_DIR/bluetoothd.log" >&2
    "$0" start "$mode"
    btvirt_pid=$(cat /run/realstack-btvirt.pid 2>/dev/null)
    if [ -n "$btvirt_pid" ]; then
      kill -TERM "$btvirt_pid" 2>/dev/null
      for _ in $(seq 50); do kill -0 "$btvirt_pid" 2>/dev/null || break; sleep 0.1; done
      btvirt -l2 >> "$REAL_STACK_VM_DIR/controllers.log" 2>&1 &
      echo $! > /run/realstack-btvirt.pid
    fi
  fi
  awk -v t0="$start" '{exit !($1 - t0 > 120)}' /proc/uptime && break
  sleep 0.1
done
[ "$n" -ge 2 ] || { echo "realstack-bluetoothd: only $n of 2 adapters appeared" >&2; exit 1; }
# A bluetoothd just restarted may answer Busy while it still sets an adapter up: try for 10 s.
for a in 0 1; do
  for try in $(seq 50); do
    dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci$a org.freedesktop.DBus.Properties.Set \
      string:org.bluez.Adapter1 string:Powered variant:boolean:true > /dev/null 2> /run/realstack-power.err && break
    [ "$try" = 50 ] && { echo "cannot power on hci$a: $(cat /run/realstack-power.err)" >&2; exit 1; }
    sleep 0.2
  done
done
BTD
chmod +x /run/realstack-bluetoothd.sh
BTD_MODE=single
[ "${REAL_STACK_EATT:-0}" = 1 ] && BTD_MODE=eatt
export REAL_STACK_VM_DIR="$RES"

dbus-uuidgen --ensure
dbus-daemon --system --fork --nopidfile || { log "dbus-daemon failed"; finish 125; }
: > "$RES/bluetoothd.log"
/run/realstack-bluetoothd.sh start "$BTD_MODE"
btvirt -l2 > "$RES/controllers.log" 2>&1 &
echo $! > /run/realstack-btvirt.pid

# Ready = both adapters exported by bluetoothd, then powered on. Polled for up to 90 s: under TCG
# on a busy host the stack can take many times its usual ~8 s.
/run/realstack-bluetoothd.sh ready "$BTD_MODE" || { log "the stack did not come up (see controllers.log, bluetoothd.log)"; finish 125; }
T1=$(cut -d' ' -f1 /proc/uptime)
echo "ready_s=$T1 stack_s=$(awk "BEGIN{print $T1 - $T0}")" > "$RES/timing"

echo "=== realstack-vm: running (uptime ${T1}s, EATT $([ "$BTD_MODE" = eatt ] && echo on || echo off))"
cd "$(cat "$RES/cwd")" 2>/dev/null || cd /
# REAL_STACK_VM_DIR (exported above): bluetoothd.log and controllers.log are there.
bash -c "$(cat "$RES/cmd")" < /dev/null
finish $?
