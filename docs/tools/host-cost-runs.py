#!/usr/bin/env python3
"""Engine + client and simulator CPU time per data write of `ota benchmark`, from several perf
profiles, scaled to the host's quietest run: the measure issue 18's time goals use
(docs/benchmarks.md, "Round 7").

Usage:
    docs/tools/host-cost-runs.py OTA_BINARY [--baseline OTA_BEFORE] [--runs 5] [--quiet-runs 8] [--frequency 15000] SPEC...

SPEC is PROTOCOL:PROFILE:SIZE, for example `nordic-dfu:esp32s3-mtu244-2m:12M`. Take images big
enough for the profiles to hold thousands of samples of the update itself: a 4 MB image at MTU 247
is about 30 ms of work, and five profiles of it left the simulator's share a spread of about
±15 %; 12 MB at MTU 247 and 3 MB at MTU 23 (every stock slot takes them) give three times the
samples (docs/benchmarks.md, "Twelfth pass").

On a shared VM one binary's CPU time per write moves 1.5-2x from run to run, and a profiled run
takes more CPU than an unprofiled one, while the *share* of each part among the user-space samples
barely moves (the code slows together). So, per SPEC:

1. `--runs` profiles (`perf record -g`, frame pointers), the SPECs alternating round by round,
   each read by host-cost.py's attribution over the samples whose leaf is in user space (kernel
   leaves are mostly the profiler's own interrupts and the VM's; the parts below have next to
   none): the share that is engine + client (whole-image hashes out), simulator (transport API
   and executor, link and flash: the device model apart) and device model;
2. `--quiet-runs` runs of the same command without a profiler, their CPU time (the child's
   rusage): the least is the host's cost when nothing competes, the median what a run typically
   costs here; each taken at the runs' overall user share (the kernel splits one run's time into
   user and system by the few dozen ticks it sampled, so one run's split is noisy, the sum exact);
3. each part = its median share x the least (and x the median) user CPU time / data writes.

It prints, per SPEC, the whole process's CPU per write without a profiler, each part's median share
with its range, and each part in µs per write at the quietest and the median run; beside them the
profiles' own median µs, for comparison: those are inflated by the profiler (a cpu-clock sample
at 15 kHz costs this VM's guest kernel a good share of the time it measures) and the host's load. The parts assume the whole process slows evenly, which the stable shares
support; startup (loading, the image) is in the whole and in the harness/runtime shares alike.

With `--baseline`, every profile and every run without a profiler is made with both binaries in
turn (the baseline first), and each part is printed for both with their ratio: on this VM one
binary's CPU per write drifts by 1.2-1.5x over minutes, so only runs interleaved like this compare
two builds; figures from separate invocations do not.

Needs perf and host-cost.py beside this file.
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("host_cost", os.path.join(HERE, "host-cost.py"))
host_cost = importlib.util.module_from_spec(spec)
spec.loader.exec_module(host_cost)

PARTS = {
    "engine + client": lambda t, h: t["engine"] + t["client"] - h["engine"] - h["client"],
    "simulator": lambda t, h: t["simulator transport + executor"] + t["device link and flash"],
    "device model": lambda t, h: t["device model"],
}


def command(binary, protocol, profile, size):
    return [binary, "benchmark", "--protocol", protocol, "--profile", profile, "--size", size, "--json"]


def writes_of(output):
    return sum(json.loads(line).get("dataWrites", 0) for line in output.splitlines() if line.startswith("{"))


def profiled(binary, item, frequency, workdir):
    """One perf profile: (data writes, {part: ns}, whole ns)."""
    data = os.path.join(workdir, "perf.data")
    run = subprocess.run(
        ["perf", "record", "-q", "-g", "-F", str(frequency), "-o", data, "--"] + command(binary, *item),
        capture_output=True, text=True, check=True,
    )
    script = subprocess.Popen(["perf", "script", "-i", data, "-F", "comm,tid,period,ip,sym,dso"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    totals, hashes, _ = host_cost.attribute(script.stdout, user_only=True)
    script.wait()
    os.remove(data)
    return writes_of(run.stdout), {name: part(totals, hashes) for name, part in PARTS.items()}, sum(totals.values())


def quiet_cpu(binary, item):
    """(user, user + system) CPU seconds of one run without a profiler."""
    process = subprocess.Popen(command(binary, *item), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        sys.exit(f"host-cost-runs: {' '.join(command(binary, *item))} failed")
    return usage.ru_utime, usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("specs", nargs="+", metavar="PROTOCOL:PROFILE:SIZE")
    parser.add_argument("--baseline", help="another ota binary, measured interleaved with the first")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quiet-runs", type=int, default=8)
    parser.add_argument("--frequency", type=int, default=15000)
    options = parser.parse_args()
    binaries = [("before", options.baseline), ("after", options.binary)] if options.baseline else [("", options.binary)]
    items = []
    for text in options.specs:
        fields = text.split(":")
        if len(fields) != 3:
            sys.exit(f"host-cost-runs: '{text}' is not PROTOCOL:PROFILE:SIZE")
        items.append(tuple(fields))
    keys = [(item, label) for item in items for label, _ in binaries]
    path = dict(binaries)
    shares = {key: {name: [] for name in PARTS} for key in keys}
    raw = {key: {name: [] for name in PARTS} for key in keys}
    writes = {}
    with tempfile.TemporaryDirectory() as workdir:
        for _ in range(options.runs):
            for key in keys:
                item, label = key
                count, parts, whole = profiled(path[label], item, options.frequency, workdir)
                writes[key] = count
                for name, ns in parts.items():
                    shares[key][name].append(ns / whole)
                    raw[key][name].append(ns / 1000 / count)
    for item in items:
        runs = {label: [] for label, _ in binaries}
        for _ in range(options.quiet_runs):
            for label, binary in binaries:
                runs[label].append(quiet_cpu(binary, item))
        figures = {}
        for label, _ in binaries:
            key = (item, label)
            # The kernel splits a process's CPU time into user and system by the ticks it sampled,
            # a few dozen in a run this short: the split of one run is noisy, the sum is exact. So
            # the user part of the least and of the median run is taken at the runs' overall user
            # share.
            user_share = sum(user for user, _ in runs[label]) / sum(total for _, total in runs[label])
            totals = [total * 1e6 / writes[key] for _, total in runs[label]]
            least, middle = min(totals) * user_share, statistics.median(totals) * user_share
            tag = f" [{label}]" if label else ""
            print(
                f"{item[0]} on {item[1]}, {item[2]}{tag}: {writes[key]} data writes; user CPU without a profiler"
                f" {least:.3f} µs per write at the quietest run, {middle:.3f} at the median"
            )
            for name in PARTS:
                values = shares[key][name]
                share = statistics.median(values)
                figures[(label, name)] = (share * least, share * middle)
                print(
                    f"  {name:16s} {share * least:6.3f} µs quietest, {share * middle:6.3f} median  (share {share:.3f},"
                    f" {min(values):.3f}-{max(values):.3f}; the profiles' own median {statistics.median(raw[key][name]):.3f} µs)"
                )
        if options.baseline:
            for name in PARTS:
                before, after = figures[("before", name)], figures[("after", name)]
                ratios = [a / b if b else float("nan") for a, b in zip(after, before)]
                print(f"  {name:16s} after/before {ratios[0]:.2f} quietest, {ratios[1]:.2f} median")


main()
