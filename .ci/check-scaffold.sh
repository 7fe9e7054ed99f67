#!/usr/bin/env bash
# Proves the bar of issue 9 with the ScaffoldProtocol plugin, in a throwaway copy of the package:
# a scaffolded protocol (Acme), added to Package.swift with the entries the plugin prints and
# registered in the ota tool with the one line it prints (plus its import), builds with no
# warnings; `ota protocols` lists it; `ota scan` shows its demo device with its family and
# protocol (from its own descriptor); `ota update --dry-run` picks it; and its generated tests run
# with the wire, state-machine and end-to-end tests passing and only the deliberate to-do test
# failing. Nothing else outside the new target changes. One scratch build serves every step.
set -euo pipefail
source_dir="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "scaffold: FAILED: $*" >&2; exit 1; }
# expect LABEL FILE PATTERN...: every extended-regex pattern occurs in FILE, or the check fails
# showing FILE.
expect() {
    local label="$1" file="$2"
    shift 2
    for pattern in "$@"; do
        grep -Eq -- "$pattern" "$file" || { cat "$file" >&2; fail "$label: no line matches '$pattern'"; }
    done
    echo "scaffold: ok: $label"
}

name=Acme
lower=acme
target="OTAProtocol$name"
git clone -q "$source_dir" "$work/package"
cd "$work/package"

# 1. Scaffold.
swift package --allow-writing-to-package-directory scaffold-protocol "$name" > "$work/scaffold.txt" 2>&1 \
    || { cat "$work/scaffold.txt" >&2; fail "the plugin failed"; }
expect "the plugin created the shared layout" "$work/scaffold.txt" \
    "created Sources/$target/${name}Protocol.swift" \
    "created Sources/$target/${name}GATTProfile.swift" \
    "created Sources/$target/Client/${name}Client.swift" \
    "created Sources/$target/Client/${name}UpdateStateMachine.swift" \
    "created Sources/$target/Wire/${name}Command.swift" \
    "created Sources/$target/Wire/${name}Reply.swift" \
    "created Sources/$target/Device/${name}DeviceModel.swift" \
    "created Tests/${target}Tests/${name}StateMachineTests.swift" \
    "created Tests/${target}Tests/${name}EndToEndTests.swift"

# 2. Apply what the plugin printed, verbatim: its target entries before Package.swift's
#    "// Tests." marker, the target among OTACommandLine's dependencies, and its import and
#    registration line in BuiltInProtocols.swift.
sed -n "/^        \.target(name: \"$target\"/,/^        ),\$/p" "$work/scaffold.txt" > "$work/targets.txt"
grep -A2 "BuiltInProtocols.swift:" "$work/scaffold.txt" | tail -2 | sed 's/^ *//' > "$work/registration.txt"
[ -s "$work/targets.txt" ] || fail "the plugin printed no target entries"
[ "$(wc -l < "$work/registration.txt")" -eq 2 ] || fail "the plugin printed no import and registration line"
python3 - "$work/targets.txt" "$work/registration.txt" "$target" <<'PY'
import sys
targets = open(sys.argv[1]).read()
import_line, registration = open(sys.argv[2]).read().splitlines()
target = sys.argv[3]

text = open("Package.swift").read()
marker = "        // Tests."
assert marker in text, "Package.swift lost its '// Tests.' marker"
text = text.replace(marker, targets + "\n" + marker, 1)
# The target, not the library product of the same name (which the fuzz package imports).
import re
start = re.search(r'\.target\(\s*name: "OTACommandLine"', text).start()
deps = text.index("dependencies: [", start) + len("dependencies: [")
text = text[:deps] + '"%s", ' % target + text[deps:]
open("Package.swift", "w").write(text)

path = "Sources/OTACommandLine/Environment/BuiltInProtocols.swift"
lines = open(path).read().split("\n")
last_import = max(i for i, line in enumerate(lines) if line.startswith("import "))
lines.insert(last_import + 1, import_line)
end = next(i for i, line in enumerate(lines) if line.strip() == "])")
lines.insert(end, "        " + registration)
open(path, "w").write("\n".join(lines))
PY
git add -A
echo "scaffold: files changed outside Sources/$target and Tests/${target}Tests:"
git diff --cached --name-only -- . ":(exclude)Sources/$target" ":(exclude)Tests/${target}Tests" | sed 's/^/    /' | tee "$work/outside.txt"
[ "$(cat "$work/outside.txt" | sed 's/^ *//' | sort | tr '\n' ' ')" = "Package.swift Sources/OTACommandLine/Environment/BuiltInProtocols.swift " ] \
    || fail "adding the protocol touched more than Package.swift and BuiltInProtocols.swift"
added="$(git diff --cached --numstat -- Sources/OTACommandLine/Environment/BuiltInProtocols.swift)"
[ "$(echo "$added" | cut -f1,2)" = "$(printf '2\t0')" ] || fail "BuiltInProtocols.swift: expected its import and one registration line, got: $added"
git diff --cached -- Sources/OTACommandLine/Environment/BuiltInProtocols.swift | grep '^+[^+]' | sed 's/^/    /'

# 3. One build of everything (the tool and the tests), with no warnings.
swift build --build-tests > "$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; fail "the build failed"; }
if grep -E "(warning|error):" "$work/build.log"; then fail "the build printed warnings or errors (above)"; fi
echo "scaffold: ok: the package builds with $target, with no warnings"

# 4. The ota tool knows it, from its descriptor alone.
swift run --skip-build ota protocols > "$work/protocols.txt" 2>&1 || { cat "$work/protocols.txt" >&2; fail "ota protocols failed"; }
expect "ota protocols lists $lower with its declared parameters" "$work/protocols.txt" \
    "^$lower\$" "^  $name \(scaffold template\)" "--param service-uuid=" "--param control-uuid="
swift run --skip-build ota scan > "$work/scan.txt" 2>&1 || { cat "$work/scan.txt" >&2; fail "ota scan failed"; }
expect "ota scan shows its demo device with its family and protocol" "$work/scan.txt" \
    "^sim:$lower-demo +\"$name-Demo-01\"" "family: $lower-ota, protocol: $lower\$"
swift run --skip-build ota update Examples/firmware/sample-app.bin --device "sim:$lower-demo" --dry-run > "$work/dry-run.txt" 2>&1 \
    || { cat "$work/dry-run.txt" >&2; fail "ota update --dry-run failed"; }
expect "ota update --dry-run picks it" "$work/dry-run.txt" \
    "^would update sim:$lower-demo" "matches family '$lower-ota'" "^protocol: $lower\$"

# 5. Its generated tests: everything passes but the deliberate to-do test.
if swift test --skip-build --filter "${target}Tests" > "$work/test.log" 2>&1; then
    fail "the generated tests all passed; replaceTheTemplateWithTheVendorProtocol must fail until the template is replaced"
fi
expect "the state-machine tests (no transport) pass" "$work/test.log" "Suite ${name}StateMachineTests passed"
expect "the wire tests pass" "$work/test.log" "Suite ${name}WireTests passed"
expect "the end-to-end tests against the device model pass" "$work/test.log" \
    "Test imageArrivesByteIdentical\(size:\) with 5 test cases passed" \
    "Test corruptedChunkIsCaughtAtEnd\(\) passed" "Test theDefaultFamilyRecognisesTheDemoDevice\(\) passed"
expect "only the to-do test fails, with its checklist" "$work/test.log" \
    "Test replaceTheTemplateWithTheVendorProtocol\(\) failed" "is still the scaffold's template protocol" \
    "Test run with [0-9]+ tests in 3 suites failed after .* with 1 issue"
echo "scaffold: the scaffolded protocol builds, registers with one line, shows in protocols/scan/--dry-run, and its tests pass but the to-do marker"
