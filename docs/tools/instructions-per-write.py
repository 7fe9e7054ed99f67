#!/usr/bin/env python3
"""Instructions per data write of `ota benchmark`, counted by callgrind: the measure issue 18's
rounds compare (docs/benchmarks.md), because it does not move with the host's load.

Usage:
    docs/tools/instructions-per-write.py OTA_BINARY PROTOCOL [--profile P] [--sizes 1M 2M] [-- ARGS...]

For each of two image sizes it runs `ota benchmark --protocol PROTOCOL --profile P --size S
--json ARGS` twice under valgrind's callgrind: once for the whole process, once collecting only
while the simulated link's connection events and deliveries to the central run (its
`connectionEvent()` and `deliverNextToCentral()`, whoever calls them: the link's timers, or a
request that runs its first event at once). It prints, per data write and *marginal* (the larger run minus the smaller, divided by
the extra writes, so start-up and everything done once per update drops out):

- whole: the whole process, the SHA-256 compression taken out (valgrind hides the CPU's SHA
  extensions, so the portable code runs there and would dominate);
- link closures: what runs under those two functions, SHA-256 out (link, timers, executor,
  flash, device model);
- model: the device model's `write`/`read` less its calls back into the simulator (flash
  writes, erases and settling, `notify`): what a real device computes too;
- simulator: link closures less model;
- outside: whole less link closures (engine, client, the simulated transport's API, the
  executor's job loop, the concurrency runtime, the benchmark's image generator).

Needs valgrind, nm, gcc (for a preloaded `sigsuspend` that valgrind 3.19 needs: libdispatch hands
`rt_sigsuspend` a read-only mask that valgrind writes into) and objcopy (valgrind 3.19 cannot
read the toolchain's DWARF, so a copy of the binary without debug sections is what runs).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

SHIM = r"""
#define _GNU_SOURCE
#include <signal.h>
#include <unistd.h>
#include <sys/syscall.h>
int sigsuspend(const sigset_t *mask) { sigset_t copy = *mask; return syscall(SYS_rt_sigsuspend, &copy, 8); }
"""
# SimulatedConnection's connection event and delivery to the central: every event and every
# delivery runs under one of them. (Until 2026-12-06 the tool toggled the link's two timer
# closures, its init's closures #1 and #2, which called nothing else; a request now runs its
# first event without a timer, so the functions themselves are toggled.)
CLOSURE = re.compile(r"SimulatedConnectionC(15connectionEvent|20deliverNextToCentral)33_[0-9A-F]+LLyyF$")
SHA = re.compile(r"SHA256V16compressPortably")
MODEL = re.compile(r"AadEP5write_2to4kind10peripheral.*PeripheralContext_ptFTW|AadEP4read_10peripheral.*TW")
CALLBACK = re.compile(r"SimulatedFlashC7OTACore0D7StorageAadEP(5write|5erase|6settle).*TW|SimulatedConnectionC6notify_2on.*tF$")


def inclusive(path):
    """Inclusive instruction counts by symbol, and the program total."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", path], capture_output=True, text=True, check=True).stdout
    counts, total = {}, 0
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)", line)
        if not m:
            continue
        value = int(m.group(1).replace(",", ""))
        if "PROGRAM TOTALS" in m.group(2):
            total = value
            continue
        symbol = m.group(2).split(":", 1)[-1].split(" [")[0]
        counts[symbol] = counts.get(symbol, 0) + value
    return counts, total


def measure(binary, shim, args, size, workdir):
    """One size: writes, and (total, sha, model, callbacks) for the whole run and the closures."""
    base = [binary, "benchmark", "--size", size, "--json"] + args
    env = dict(os.environ, LD_PRELOAD=shim)
    whole_out = os.path.join(workdir, f"whole-{size}.out")
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={whole_out}"] + base,
        capture_output=True, text=True, env=env, check=True,
    )
    writes = sum(json.loads(line).get("dataWrites", 0) for line in run.stdout.splitlines() if line.startswith("{"))
    whole, whole_total = inclusive(whole_out)
    # From the binary's symbols: a closure that never ran (no reply in a run) is not in the profile.
    symbols = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout.split()
    toggles = [f"--toggle-collect={name}" for name in sorted(set(symbols)) if CLOSURE.search(name)]
    if len(toggles) != 2:
        sys.exit(f"instructions-per-write: expected the link's connectionEvent and deliverNextToCentral, found {len(toggles)}")
    closures_out = os.path.join(workdir, f"closures-{size}.out")
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--callgrind-out-file={closures_out}"] + toggles + base,
        capture_output=True, text=True, env=env, check=True,
    )
    closures, closures_total = inclusive(closures_out)

    def parts(counts, total):
        pick = lambda pattern: sum(v for k, v in counts.items() if pattern.search(k))
        return total, pick(SHA), pick(MODEL), pick(CALLBACK)

    return writes, parts(whole, whole_total), parts(closures, closures_total)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("protocol")
    parser.add_argument("--profile", default="esp32s3-mtu244-2m")
    parser.add_argument("--sizes", nargs=2, default=["1M", "2M"])
    # Everything after `--` goes to `ota benchmark`; options before it are this tool's, on
    # either side of the positional arguments. (An `argparse.REMAINDER` positional took the
    # options written after PROTOCOL as more `ota benchmark` arguments: `--profile P` there ran
    # the profile twice, making the image once for two rows, until 2026-12-06.)
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    options = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    args = ["--protocol", options.protocol, "--profile", options.profile] + extra
    with tempfile.TemporaryDirectory() as workdir:
        source = os.path.join(workdir, "shim.c")
        shim = os.path.join(workdir, "shim.so")
        open(source, "w").write(SHIM)
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", shim, source], check=True)
        binary = os.path.join(workdir, "ota")
        subprocess.run(["objcopy", "--strip-debug", options.binary, binary], check=True)
        small, large = (measure(binary, shim, args, size, workdir) for size in options.sizes)
    extra_writes = large[0] - small[0]
    if extra_writes <= 0:
        sys.exit("instructions-per-write: the larger size sent no more writes")

    def per_write(index, field):
        return (large[index][field] - small[index][field]) / extra_writes

    whole = per_write(1, 0) - per_write(1, 1)
    closures = per_write(2, 0) - per_write(2, 1)
    model = per_write(2, 2) - per_write(2, 3) - per_write(2, 1)
    print(f"{options.protocol} on {options.profile} {' '.join(extra)}".rstrip())
    print(f"  extra writes ({options.sizes[1]} - {options.sizes[0]}): {extra_writes}")
    print(f"  whole          {whole:9.0f} instructions per write (SHA-256 out)")
    print(f"  link closures  {closures:9.0f}")
    print(f"    model        {model:9.0f}")
    print(f"    simulator    {closures - model:9.0f}")
    print(f"  outside        {whole - closures:9.0f}")


main()
