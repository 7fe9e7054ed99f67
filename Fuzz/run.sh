#!/usr/bin/env bash
# Fuzzes every parser of outside input: builds the targets (build.sh), then runs each for
# SECONDS (default 60) from its seeds in Corpus/<target>/, one after the other, and prints the
# executions each reached. Exits non-zero when any input crashed a parser, leaked, took more than
# 5 s or more than 512 MB; the input is saved in Fuzz/crashes/<target>/. See docs/fuzzing.md.
#
#   Fuzz/run.sh [SECONDS] [TARGET...]     e.g. Fuzz/run.sh 10, Fuzz/run.sh 600 cbor smp
#
# FUZZ_RUNS=N also stops a target after N executions (the long run: FUZZ_RUNS=10000000).
# FUZZ_REPORT=FILE appends the table's rows to FILE as Markdown.
# FUZZ_BIN=DIR runs the binaries in DIR instead of building (a long run from a copy, while the
# tree changes).
set -euo pipefail
cd "$(dirname "$0")"

seconds=${1:-60}
shift || true
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "usage: Fuzz/run.sh [SECONDS] [TARGET...]" >&2; exit 64; }

all=(dfu-zip init-packet dfu-manifest package-manifest device-catalog device-information generic-wire framed-wire nordic-wire cbor smp smp-serial mcuboot-image trace esp-app-image espressif-wire trusted-key
    sim-journal sim-device-state campaign-window target-list target-pattern cli-arguments)
targets=("${@:-${all[@]}}")
for target in "${targets[@]}"; do
    [[ -d Corpus/$target ]] || { echo "run.sh: no target '$target' (targets: ${all[*]})" >&2; exit 64; }
done

bin=${FUZZ_BIN:-$(bash build.sh)}

# Swift's backtracer would take over a crashing target (and can wait for a terminal); libFuzzer
# reports crashes itself. Leaks are checked (LeakSanitizer) after every input that looks like one;
# a 64 MB quarantine (not 256) keeps the RSS limit about the parsers, not about AddressSanitizer.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:quarantine_size_mb=64:allocator_may_return_null=1}

failed=0
printf '%-20s %14s %8s %10s %9s  %s\n' target executions seconds exec/s "peak RSS" result
for target in "${targets[@]}"; do
    work=.work/$target
    crashes=crashes/$target
    mkdir -p "$work" "$crashes"
    log=.work/$target.log
    # The first folder receives what the fuzzer finds (kept between runs, not checked in); the
    # seeds folder is only read.
    options=(-max_total_time="$seconds" -rss_limit_mb=512 -timeout=5 -print_final_stats=1
        -artifact_prefix="$crashes/")
    [[ -n ${FUZZ_RUNS:-} ]] && options+=(-runs="$FUZZ_RUNS")
    # What a device sends in one notification or read is at most 512 bytes (an attribute value's
    # limit); SMP and CBOR reassemble longer messages, and files are longer still (4096, the default).
    # A trace's seeds are longer, but 4096 bytes hold its header and a dozen records. A window
    # is a date and a dozen characters; a pattern and the names it is matched against are short; a
    # command line is a few dozen words.
    case $target in
        generic-wire | framed-wire | nordic-wire | espressif-wire | device-information | target-pattern) options+=(-max_len=512) ;;
        campaign-window) options+=(-max_len=64) ;;
        cli-arguments) options+=(-max_len=1024) ;;
        trace) options+=(-max_len=4096) ;;
    esac
    start=$(date +%s)
    status=0
    timeout $((seconds + 300)) "$bin/fuzz-$target" "${options[@]}" "$work" "Corpus/$target" > "$log" 2>&1 || status=$?
    elapsed=$(($(date +%s) - start))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
    if [[ $status -eq 0 ]]; then
        result=ok
    else
        failed=1
        result=$(grep -m1 -oE "ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer): [a-z-]+( [a-z-]+)*|Fatal error: .*" "$log" || echo "exit $status")
        result="FAILED ($result; input in Fuzz/$crashes/, log in Fuzz/$log)"
    fi
    rate=$(( ${runs:-0} / (elapsed > 0 ? elapsed : 1) ))
    printf '%-20s %14s %8s %10s %6s MB  %s\n' "$target" "${runs:-?}" "$elapsed" "$rate" "${rss:-?}" "$result"
    if [[ -n ${FUZZ_REPORT:-} ]]; then
        printf '| %s | %s | %s | %s | %s MB | %s |\n' "$target" "${runs:-?}" "$elapsed" "$rate" "${rss:-?}" "$result" >> "$FUZZ_REPORT"
    fi
done
exit $failed
