#!/usr/bin/env bash
# Builds the fuzz targets (release, libFuzzer and AddressSanitizer) and prints the folder holding
# the binaries. Used by run.sh and make-corpus.sh; see docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")"
flags=(-c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -use-ld=lld)
swift build "${flags[@]}" >&2
swift build "${flags[@]}" --show-bin-path
