#!/bin/sh
# Makes the MCUboot image fixtures with the real imgtool (MCUboot's own tool, from PyPI), so the
# parser is tested against images nobody in this project wrote. Run from anywhere:
#
#   Tests/OTAProtocolMCUmgrTests/Fixtures/make-fixtures.sh
#
# Needs python3; installs imgtool into a throw-away virtual environment. The keys here are test
# keys made for these fixtures, never used for anything else. ECDSA signatures are randomised, so
# a re-run changes the signed images' bytes (and nothing a test relies on).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv=${IMGTOOL_VENV:-/tmp/imgtool-venv}
[ -x "$venv/bin/imgtool" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q 'imgtool==2.5.0'; }
imgtool="$venv/bin/imgtool"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$here"

[ -f test-ecdsa-p256.pem ] || "$imgtool" keygen -k test-ecdsa-p256.pem -t ecdsa-p256
[ -f test-ed25519.pem ] || "$imgtool" keygen -k test-ed25519.pem -t ed25519
"$imgtool" getpub -k test-ecdsa-p256.pem --encoding pem > test-ecdsa-p256.pub.pem
"$imgtool" getpub -k test-ed25519.pem --encoding pem > test-ed25519.pub.pem
# Keys that signed nothing ("key B" of the signature tests): public halves only.
[ -f other-ecdsa-p256.pub.pem ] || openssl ecparam -name prime256v1 -genkey -noout | openssl pkey -pubout > other-ecdsa-p256.pub.pem
[ -f other-ed25519.pub.pem ] || openssl genpkey -algorithm ed25519 | openssl pkey -pubout > other-ed25519.pub.pem

# Payloads: a deterministic pattern (a 32-bit counter), so git stores them compactly.
python3 - "$work" <<'PY'
import struct, sys
out = sys.argv[1]
def pattern(n):
    words = (n + 3) // 4
    return b"".join(struct.pack("<I", i * 2654435761 & 0xFFFFFFFF) for i in range(words))[:n]
for name, size in [("1B", 1), ("4KB", 4093), ("200KB", 200 * 1024), ("1MB", 1024 * 1024)]:
    open(f"{out}/payload-{name}.bin", "wb").write(pattern(size))
PY

slot=0x120000   # larger than the 1 MB image plus header and trailer
create() { "$imgtool" create --header-size 0x200 --pad-header --slot-size $slot --align 4 "$@"; }
create --version 1.0.0 "$work/payload-1B.bin" unsigned-1B.bin
create --version 1.2.3+4 "$work/payload-4KB.bin" unsigned-4KB.bin
create --version 2.0.0 "$work/payload-200KB.bin" unsigned-200KB.bin
create --version 2.1.0 "$work/payload-1MB.bin" unsigned-1MB.bin
create --version 1.2.3 --key test-ecdsa-p256.pem "$work/payload-4KB.bin" ecdsa-p256-4KB.bin
create --version 1.2.3 --key test-ed25519.pem "$work/payload-4KB.bin" ed25519-4KB.bin
create --version 3.0.0+7 --security-counter 5 --key test-ecdsa-p256.pem "$work/payload-4KB.bin" security-counter-4KB.bin
# Padded to a (small) slot and marked confirmed: the trailer follows the TLVs.
"$imgtool" create --header-size 0x200 --pad-header --slot-size 0x2000 --align 4 --version 1.0.1 --pad --confirm \
    "$work/payload-4KB.bin" padded-confirmed-4KB.bin
# What each fixture's SHA-256 TLV and file digest are, from imgtool's own verify.
for image in *.bin; do
    printf '%s\t%s\n' "$image" "$(sha256sum "$image" | cut -d' ' -f1)"
done > file-sha256.txt
for image in unsigned-*.bin padded-confirmed-4KB.bin; do
    printf '%s\t%s\n' "$image" "$("$imgtool" verify "$image" 2>&1 | tr '\n' ' ')"
done > imgtool-verify.txt
echo "made $(ls *.bin | wc -l) images in $here"
