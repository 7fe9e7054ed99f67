#!/usr/bin/env python3
"""Attributes a `perf record -g` profile of `ota benchmark` to engine, client, simulator and runtime.

Usage:
    perf record -F 15000 -g -o P.data -- ota benchmark --protocol P --profile X --size N --json
    perf script -i P.data -F comm,tid,period,ip,sym,dso | host-cost.py --writes W [--top 25]

W is the number of data writes the run sent (the benchmark's `dataWrites` in its --json
rows, summed). Each sample's CPU time (its period, in ns of cpu-clock) goes to one share:

- device: the stack holds a frame of the simulated link's connection events or deliveries, or
  of a device model (the simulated peripheral's work), split in two by the first frame from the
  leaf outside OTACore: a protocol module's (*device model*: what a real device computes,
  with the OTACore helpers it calls) or the simulator's (*device link and flash*);
- OTACore code the simulated transport calls for its own writes (requireFits, the link's
  parameters) -> simulated transport, as the transport's own cost;
- otherwise the first project frame from the leaf: OTACore -> engine; OTAProtocol* -> client
  (its module); OTATransportSimulator -> simulated transport API and the virtual-time executor;
  OTACommandLine -> benchmark harness; none -> async runtime / libc / kernel (no project frame).

A runtime call (retain, release, malloc, swift_task_switch) counts for the project frame that
made it. "image hashes" splits out the samples under a whole-image hash or CRC (SHA-256, CRC-32 of
the image, MCUboot image parsing, the ESP-IDF app image's segment checksum), which happen once per
update, not per write.
"""
import argparse
import collections
import re
import sys

DEVICE = re.compile(
    r"connectionEvent|deliverToDevice|deliverToCentral|runEvent|scheduleEvent|DeviceModel|BootloaderModel|"
    r"ApplicationModel|ReceiveBufferPool|FramedJournal|NORFlash|SimulatedFlash|SimulatedPeripheral"
)
IMAGE_HASH = re.compile(
    r"7OTACore6SHA256V|FirmwareImageV6sha256|FirmwareImageV5crc32|MCUbootImageV7reading|SHA256Cache|CRC32Cache|AppImageV11xorChecksum"
)
# A frame of the concurrency runtime running a task's next partial function: above it is the
# executor, not a caller.
RESUMED = re.compile(r"swift_job_run|runJobInEstablishedExecutorContext|swift_task_switch")
MODULE = re.compile(r"^\$s(\d+)([A-Za-z_][A-Za-z0-9_]*)")


def module_of(symbol):
    m = MODULE.match(symbol)
    if not m:
        return None
    length = int(m.group(1))
    name = m.group(2)[:length]
    if name == "OTACore" or name.startswith("OTAProtocol") or name in ("OTATransportSimulator", "OTACommandLine"):
        return name
    return None


def share(frames):
    if any(DEVICE.search(f) for f in frames):
        # The device model's own work (a protocol module's frame, with the OTACore helpers it
        # calls) apart from the link and the flash it calls back into (the simulator's frames).
        for f in frames:
            mod = module_of(f)
            if mod is None or mod == "OTACore":
                continue
            return "device model" if mod.startswith("OTAProtocol") else "device link and flash"
        return "device link and flash"
    # A synchronous call from the benchmark itself: making and wrapping the image, not the update.
    if any(module_of(f) == "OTACommandLine" for f in frames):
        return "benchmark harness"
    # zlib is built without frame pointers, so its stacks end in it: a whole-image CRC-32 (the
    # benchmark's image, a device's commit check), per update, caller unknown.
    if frames and frames[0].startswith("crc32") and not any(module_of(f) for f in frames):
        return "zlib CRC-32, caller unknown"
    # OTACore helpers the simulated transport calls for its own writes (requireFits,
    # requireCharacteristic, the link's parameters) are the transport's cost, not the engine's: the
    # first non-OTACore project frame above them, reached without an executor resuming a task in
    # between, is the simulator's.
    leaf = next((module_of(f) for f in frames if module_of(f)), None)
    if leaf == "OTACore":
        for f in frames:
            if RESUMED.search(f):
                break
            mod = module_of(f)
            if mod is not None and mod != "OTACore":
                if mod == "OTATransportSimulator":
                    return "simulator transport + executor"
                break
    for f in frames:
        mod = module_of(f)
        if mod is None:
            continue
        if mod == "OTACore":
            return "engine"
        if mod.startswith("OTAProtocol"):
            return "client"
        if mod == "OTATransportSimulator":
            return "simulator transport + executor"
        return "benchmark harness"
    return "async runtime, libc, kernel"


def samples(stream):
    period, frames = None, []
    for line in stream:
        if not line.strip():
            if period is not None:
                yield period, frames
            period, frames = None, []
            continue
        if not line[0].isspace():
            fields = line.split()
            period = int(fields[-1])
            frames = []
        else:
            parts = line.split(None, 1)
            if len(parts) == 2:
                frames.append(parts[1].rsplit(" (", 1)[0].split("+0x")[0])
    if period is not None:
        yield period, frames


SHARES = (
    "engine", "client", "simulator transport + executor", "benchmark harness", "zlib CRC-32, caller unknown",
    "async runtime, libc, kernel", "device link and flash", "device model",
)


def attribute(stream, top=False):
    """CPU time (ns) per share, the whole-image hashes' part of each, and (with `top`) engine +
    client time by leaf-most project function."""
    totals = collections.Counter()
    hashes = collections.Counter()
    leaves = collections.Counter()
    for period, frames in samples(stream):
        s = share(frames)
        totals[s] += period
        if s in ("engine", "client") and any(IMAGE_HASH.search(f) for f in frames):
            hashes[s] += period
        if top and s in ("engine", "client"):
            first = next((f for f in frames if module_of(f)), "?")
            leaves[first] += period
    return totals, hashes, leaves


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, required=True, help="data writes the profiled run sent")
    parser.add_argument("--top", type=int, default=0, help="also list the leaf-most project functions of engine + client")
    args = parser.parse_args()
    totals, hashes, top = attribute(sys.stdin, top=args.top > 0)
    per = lambda ns: ns / 1000 / args.writes
    print(f"{args.writes} data writes; µs per write (CPU time of the samples / writes)")
    for name in SHARES:
        extra = f"  (of which whole-image hashes {per(hashes[name]):.3f})" if hashes[name] else ""
        print(f"  {name:32s} {per(totals[name]):7.3f}{extra}")
    ec = totals["engine"] + totals["client"]
    print(f"  {'engine + client':32s} {per(ec):7.3f}  without whole-image hashes {per(ec - hashes['engine'] - hashes['client']):.3f}")
    print(f"  {'whole process':32s} {per(sum(totals.values())):7.3f}")
    for f, ns in top.most_common(args.top):
        print(f"    {per(ns):7.3f}  {f[:160]}")


if __name__ == "__main__":
    main()
