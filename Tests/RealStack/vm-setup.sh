#!/bin/bash
# vm-setup.sh - prepares what the real-stack tests need to boot a throw-away Linux VM with a real
# BlueZ stack (see README.md here). Idempotent: only what is missing is installed or built, so a
# second run does nothing and needs neither root nor the network.
#
#   1. host packages: qemu (runs the VM), and bluez, bluez-test-tools (btvirt), dbus,
#      python3-dbus and python3-gi, which run *inside* the VM from the host's filesystem;
#      busybox-static, kmod, cpio and xz-utils build the initramfs.
#   2. the Debian kernel that linux-image-amd64 points to, downloaded with apt-get download and
#      unpacked into the cache (never installed into the host's /boot): bookworm's own (6.1) with
#      REAL_STACK_KERNEL=stable, bookworm-backports' (6.12) with REAL_STACK_KERNEL=backports,
#      through apt lists of its own in the cache (the host's apt sources are left as they are).
#   3. a small busybox initramfs that mounts the host's / read-only over 9p with a tmpfs overlay
#      and hands over to vm-init.sh.
#
# Cache (outside the repository): $REAL_STACK_CACHE, default /var/cache/bluez-vm (the same cache as
# the shared bluez-vm scripts, so the kernel is downloaded once per machine):
#   linux-image-*.deb, kernel/ (boot/vmlinuz-*, lib/modules/*: both kernels side by side),
#   kernel-version (stable's), kernel-version-backports, apt-backports/ (that source's lists),
#   realstack-initramfs-<kver>.cpio.gz
#
# REAL_STACK_KERNEL=backports  which kernel: backports (bookworm-backports, the default) or stable;
#                              run-in-vm.sh boots the one its own REAL_STACK_KERNEL names
#
# Needs Debian 12 (bookworm) amd64 apt sources, and root when something is missing.
# Exit status: 0 ready; 1 something could not be set up (the reason is the last line).
set -euo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export DEBIAN_FRONTEND=noninteractive
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${REAL_STACK_CACHE:-/var/cache/bluez-vm}

die() { echo "vm-setup: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root (run: sudo $0)"; }

# 1. Host packages.
PKGS="qemu-system-x86 bluez bluez-test-tools dbus python3-dbus python3-gi busybox-static kmod cpio xz-utils"
missing=$(for p in $PKGS; do
            dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
          done)
if [ -n "$missing" ]; then
  need_root "installing $(echo $missing)"
  command -v apt-get >/dev/null || die "apt-get not found: a Debian 12 host is needed"
  apt-get update -q || die "apt-get update failed"
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing || die "apt-get install $(echo $missing) failed"
fi

# 2. The kernel, unpacked into the cache beside any other one (each in its own boot/vmlinuz-KV and
#    lib/modules/KV), its version in kernel-version (stable) or kernel-version-backports.
KERNEL_CHOICE=${REAL_STACK_KERNEL:-backports}
case $KERNEL_CHOICE in
  stable) KV_FILE="$CACHE/kernel-version"; APT=() ;;
  backports)
    KV_FILE="$CACHE/kernel-version-backports"
    BPO="$CACHE/apt-backports"
    APT=(-o "Dir::Etc::sourcelist=$BPO/sources.list" -o "Dir::Etc::sourceparts=$BPO/sources.list.d"
         -o "Dir::State::Lists=$BPO/lists" -o "Dir::Cache=$BPO/cache" -o "Dir::State::status=/dev/null"
         -o "APT::Sandbox::User=root") ;;
  *) die "REAL_STACK_KERNEL=$KERNEL_CHOICE: use stable or backports" ;;
esac
KV=$(cat "$KV_FILE" 2>/dev/null || true)
if [ -z "$KV" ] || [ ! -f "$CACHE/kernel/boot/vmlinuz-$KV" ]; then
  need_root "downloading the $KERNEL_CHOICE kernel into $CACHE"
  mkdir -p "$CACHE"
  if [ "$KERNEL_CHOICE" = backports ]; then
    mkdir -p "$BPO/lists/partial" "$BPO/cache/archives/partial" "$BPO/sources.list.d"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-backports main" \
      > "$BPO/sources.list"
  fi
  kpkg() { apt-cache "${APT[@]}" depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}'; }
  KPKG=$(kpkg || true)
  [ -n "$KPKG" ] || { apt-get "${APT[@]}" update -q; KPKG=$(kpkg || true); }
  [ -n "$KPKG" ] || die "apt-cache cannot resolve linux-image-amd64 ($KERNEL_CHOICE)"
  KV=${KPKG#linux-image-}
  ( cd "$CACHE"
    ls "$KPKG"_*.deb >/dev/null 2>&1 || apt-get "${APT[@]}" download "$KPKG" ) || die "apt-get download $KPKG failed"
  rm -rf "$CACHE/kernel/lib/modules/$KV"
  dpkg -x "$CACHE/$KPKG"_*.deb "$CACHE/kernel" || die "cannot unpack $KPKG"
  depmod -b "$CACHE/kernel" "$KV" || die "depmod failed"      # the .deb ships no modules.dep
  echo "$KV" > "$KV_FILE"
fi

# 3. Stage-1 initramfs: busybox, the modules that reach the 9p root, and an init that mounts the
#    host's / read-only with a tmpfs overlay and execs stage 2 (vm-init.sh, named on the kernel
#    command line, read from the host's filesystem so it can change without a rebuild).
INITRD="$CACHE/realstack-initramfs-$KV.cpio.gz"
if [ ! -f "$INITRD" ] || [ "$HERE/vm-setup.sh" -nt "$INITRD" ]; then
  need_root "building $INITRD"
  R=$(mktemp -d)
  trap 'rm -rf "$R"' EXIT
  mkdir -p "$R"/{bin,dev,proc,sys,mnt/lower,mnt/rw,newroot,lib/modules}
  cp /bin/busybox "$R/bin/busybox"
  : > "$R/lib/modules/order"
  for k in $(for m in virtio_pci 9pnet_virtio 9p overlay; do
               modprobe -d "$CACHE/kernel" -S "$KV" --show-depends "$m"
             done | awk '$1 == "insmod" {print $2}' | awk '!seen[$0]++'); do
    m=$(basename "$k" .xz)                # 6.12's are .ko.xz: stored unpacked for busybox's insmod
    case $k in *.xz) xz -dc "$k" > "$R/lib/modules/$m" ;; *) cp "$k" "$R/lib/modules/$m" ;; esac
    echo "$m" >> "$R/lib/modules/order"
  done
  cat > "$R/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /lib/modules/order); do insmod /lib/modules/$m || echo "realstack: insmod $m failed"; done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro hostroot /mnt/lower \
  || { echo "realstack: 9p mount failed"; echo o > /proc/sysrq-trigger; }
mount -t tmpfs -o size=2g tmpfs /mnt/rw; mkdir -p /mnt/rw/upper /mnt/rw/work
mount -t overlay overlay -o lowerdir=/mnt/lower,upperdir=/mnt/rw/upper,workdir=/mnt/rw/work /newroot \
  || { echo "realstack: overlay mount failed"; echo o > /proc/sysrq-trigger; }
S2=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^stage2=//p')
umount /proc /sys /dev 2>/dev/null
exec switch_root /newroot /bin/bash "$S2"
EOF
  chmod +x "$R/init"
  (cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) > "$INITRD.tmp" || die "cannot build the initramfs"
  mv "$INITRD.tmp" "$INITRD"
fi
echo "vm-setup: ready ($KERNEL_CHOICE kernel $KV, cache $CACHE)"
