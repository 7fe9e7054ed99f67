#!/usr/bin/env bash
# Proves the ScaffoldProtocol plugin's output builds: scaffolds a protocol in a throwaway copy of
# the package, adds the printed targets to Package.swift, builds them, and checks that the
# generated end-to-end test fails (the device model is a stub) rather than passing vacuously.
set -euo pipefail
source_dir="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git clone -q "$source_dir" "$work/package"
cd "$work/package"
output="$(swift package --allow-writing-to-package-directory scaffold-protocol Acme)"
echo "$output" | grep -q "created Sources/OTAProtocolAcme/AcmeProtocol.swift"
# Insert the printed target lines before the "// Tests." marker of Package.swift.
echo "$output" | sed -n '/^        \.target(name: "OTAProtocolAcme"/,/^        ),$/p' > "$work/targets.txt"
[ -s "$work/targets.txt" ] || { echo "scaffold: no target lines printed"; exit 1; }
python3 - "$work/targets.txt" <<'PY'
import sys
lines = open(sys.argv[1]).read()
text = open("Package.swift").read()
marker = "        // Tests."
assert marker in text, "Package.swift lost its '// Tests.' marker"
open("Package.swift", "w").write(text.replace(marker, lines + "\n" + marker, 1))
PY
swift build --build-tests 2>&1 | tail -3
if swift test --skip-build --filter OTAProtocolAcmeTests > "$work/test.log" 2>&1; then
    echo "scaffold: the generated test passed against a stub device; it must fail until written"
    exit 1
fi
grep -q "imageArrivesByteIdentical" "$work/test.log"
echo "scaffold: generated target builds, and its test fails until the protocol is written (as intended)"
