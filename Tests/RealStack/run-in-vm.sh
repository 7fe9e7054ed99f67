#!/bin/bash
# run-in-vm.sh 'COMMAND' - boots the real-stack VM (Debian's kernel in QEMU, the host's / shared
# read-only with a tmpfs overlay, so host binaries run unchanged inside), brings up dbus,
# bluetoothd and two virtual LE controllers (hci0 00:AA:01:00:00:00, hci1 00:AA:01:01:00:01), runs
# COMMAND with bash in the caller's working directory, prints its output live and exits with its
# status. Run vm-setup.sh once first.
#
# Exit status: COMMAND's; 124 the VM timed out; 125 the VM or the stack failed before COMMAND
# ended (logs kept, path on stderr); 126 the VM cannot start here (reason on stderr: no qemu, no
# kernel or initramfs in the cache).
#
# Environment:
#   REAL_STACK_TIMEOUT=900   seconds before the VM is killed
#   REAL_STACK_RW=/a:/b      host directories mounted read-write at the same paths (results)
#   REAL_STACK_EATT=0        1 keeps bluetoothd's EATT (several ATT bearers; see vm-init.sh)
#   REAL_STACK_ECRED=0       1 leaves the kernel's L2CAP enhanced credit based mode on (6.12: EATT
#                            over it; see vm-init.sh)
#   REAL_STACK_BTD_ARGS=     extra bluetoothd arguments, such as -d
#   REAL_STACK_MEM=1024 REAL_STACK_SMP=2   guest RAM (MiB) and CPUs
#   REAL_STACK_KVM=auto      1 or 0; auto uses /dev/kvm only when the CPU shows vmx/svm
#   REAL_STACK_VERBOSE=1     also print the boot console
#   REAL_STACK_KEEP=1        keep the per-run directory (console.log, bluetoothd.log, ...)
#   REAL_STACK_CACHE=/var/cache/bluez-vm   where vm-setup.sh put the kernel and initramfs
#   REAL_STACK_KERNEL=backports   which of vm-setup.sh's kernels boots: backports
#                            (bookworm-backports' 6.12) or stable (bookworm's 6.1)
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 'COMMAND'" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${REAL_STACK_CACHE:-/var/cache/bluez-vm}
cannot() { echo "run-in-vm: cannot start the VM: $*" >&2; exit 126; }

command -v qemu-system-x86_64 >/dev/null || cannot "qemu-system-x86_64 is not installed (run Tests/RealStack/vm-setup.sh)"
case ${REAL_STACK_KERNEL:-backports} in
  stable) KV_FILE="$CACHE/kernel-version" ;;
  backports) KV_FILE="$CACHE/kernel-version-backports" ;;
  *) cannot "REAL_STACK_KERNEL=$REAL_STACK_KERNEL: use stable or backports" ;;
esac
KV=$(cat "$KV_FILE" 2>/dev/null) || cannot "no ${REAL_STACK_KERNEL:-backports} kernel in $CACHE (run Tests/RealStack/vm-setup.sh)"
KERNEL="$CACHE/kernel/boot/vmlinuz-$KV"
INITRD="$CACHE/realstack-initramfs-$KV.cpio.gz"
[ -r "$KERNEL" ] || cannot "$KERNEL is missing or unreadable (run Tests/RealStack/vm-setup.sh)"
[ -r "$INITRD" ] || cannot "$INITRD is missing (run Tests/RealStack/vm-setup.sh)"

RES=$(mktemp -d /tmp/realstack-vm.XXXXXX)       # per-run directory, shared read-write with the VM
printf '%s' "$1" > "$RES/cmd"
pwd > "$RES/cwd"
: > "$RES/env"
for v in REAL_STACK_RW REAL_STACK_EATT REAL_STACK_ECRED REAL_STACK_BTD_ARGS; do
  [ -n "${!v:-}" ] && printf '%s=%q\n' "$v" "${!v}" >> "$RES/env"
done

# KVM only with real VMX/SVM: a /dev/kvm without them (PVM) hangs a stock kernel at boot.
ACCEL=(-accel tcg,thread=multi -cpu max)
KVM=${REAL_STACK_KVM:-auto}
if [ "$KVM" = auto ]; then
  if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then KVM=1; else KVM=0; fi
fi
[ "$KVM" = 1 ] && ACCEL=(-enable-kvm -cpu host)

FS=(-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap
    -device virtio-9p-pci,fsdev=root,mount_tag=hostroot
    -fsdev local,id=res,path="$RES",security_model=none
    -device virtio-9p-pci,fsdev=res,mount_tag=result)
i=0; IFS=: read -ra RW <<< "${REAL_STACK_RW:-}"
for d in "${RW[@]}"; do
  [ -n "$d" ] || continue; i=$((i+1))
  FS+=(-fsdev "local,id=rw$i,path=$d,security_model=none" -device "virtio-9p-pci,fsdev=rw$i,mount_tag=rw$i")
done

APPEND="console=ttyS0 quiet loglevel=2 panic=-1 rdinit=/init stage2=$HERE/vm-init.sh result=$RES cache=$CACHE"
[ "${REAL_STACK_VERBOSE:-0}" = 1 ] && APPEND=${APPEND/loglevel=2/loglevel=6}

# The serial console goes to console.log; only what COMMAND prints (between the markers) goes to
# stdout, unless REAL_STACK_VERBOSE=1.
timeout -k 5 "${REAL_STACK_TIMEOUT:-900}" qemu-system-x86_64 "${ACCEL[@]}" \
  -machine q35 -smp "${REAL_STACK_SMP:-2}" -m "${REAL_STACK_MEM:-1024}" \
  -nographic -no-reboot -nic none -monitor none \
  -kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND" "${FS[@]}" </dev/null 2>&1 \
| tee "$RES/console.log" \
| awk -v v="${REAL_STACK_VERBOSE:-0}" '/=== realstack-vm: running/{on=1; next}
                                      /=== realstack-vm: done/{on=0}
                                      on||v==1{sub(/\r$/,""); print; fflush()}'
QRC=${PIPESTATUS[0]}

if [ -f "$RES/rc" ]; then
  RC=$(cat "$RES/rc")
else
  RC=125; [ "$QRC" = 124 ] && RC=124
  echo "run-in-vm: the VM ended without a result (qemu exit $QRC); console tail:" >&2
  tail -n 20 "$RES/console.log" >&2
fi
if [ "${REAL_STACK_KEEP:-0}" = 1 ] || [ "$RC" = 125 ] || [ "$RC" = 124 ]; then
  echo "run-in-vm: logs in $RES" >&2
else
  rm -rf "$RES"
fi
exit "$RC"
