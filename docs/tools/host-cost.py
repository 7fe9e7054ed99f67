#!/usr/bin/env python3
"""Attributes a `perf record -g` profile of `ota benchmark` to engine, client, simulator and runtime.

Usage:
    perf record -F 15000 -g -o P.data -- ota benchmark --protocol P --profile X --size N --json
    perf script -i P.data -F comm,tid,period,ip,sym,dso | host-cost.py --writes W [--top 25]

W is the number of data writes the run sent (the benchmark's `dataWrites` in its --json
rows, summed). Each sample's CPU time (its period, in ns of cpu-clock) goes to one share:

- device: the stack holds a frame of the simulated link's connection events or deliveries, or
  of a device model (the simulated peripheral's work), split in two by the first frame from the
  leaf that is either a device model's (a protocol module's: *device model*, what a real device
  computes, with the OTACore helpers and flash reads it calls) or the link's own work or a call
  back into it (flash writes, erases, settling, notifications: *device link and flash*);
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
# The simulator's side of a device's work: the link's events and deliveries, and what a model
# calls back into (flash writes, erases and settling, notifications).
LINK_WORK = re.compile(
    r"SimulatedConnectionC(8runEvent|15connectionEvent|15deliverToDevice|20deliverNextToCentral|16deliverToCentral|6notify)|"
    r"SimulatedFlashC(5write|5erase|6settle)|NORFlashSectorsV(5write|5erase)|SimulatedDeviceC"
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
        # The device model's own work (a protocol module's frame, with what it calls: OTACore
        # helpers, flash reads and the CRCs over them) apart from the link and the flash writes,
        # erases, settling and notifications it calls back into: whichever comes first from the
        # leaf decides, as instructions-per-write.py splits them.
        for f in frames:
            if LINK_WORK.search(f):
                return "device link and flash"
            mod = module_of(f)
            if mod is not None and mod.startswith("OTAProtocol"):
                return "device model"
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


def samples(stream, kernel=None):
    """(period, frames) per sample, frames from the leaf; with a list as `kernel`, also appends
    to it whether each sample's leaf is in the kernel."""
    period, frames, leaf_in_kernel = None, [], False
    for line in stream:
        if not line.strip():
            if period is not None:
                if kernel is not None:
                    kernel.append(leaf_in_kernel)
                yield period, frames
            period, frames, leaf_in_kernel = None, [], False
            continue
        if not line[0].isspace():
            fields = line.split()
            period = int(fields[-1])
            frames = []
        else:
            parts = line.split(None, 1)
            if len(parts) == 2:
                if not frames:
                    leaf_in_kernel = "[kernel" in parts[1].rsplit(" (", 1)[-1]
                frames.append(parts[1].rsplit(" (", 1)[0].split("+0x")[0])
    if period is not None:
        if kernel is not None:
            kernel.append(leaf_in_kernel)
        yield period, frames


SHARES = (
    "engine", "client", "simulator transport + executor", "benchmark harness", "zlib CRC-32, caller unknown",
    "async runtime, libc, kernel", "device link and flash", "device model",
)


def attribute(stream, top=False, user_only=False):
    """CPU time (ns) per share, the whole-image hashes' part of each, and (with `top`) engine +
    client time by leaf-most project function. With `user_only`, samples whose leaf is in the
    kernel are left out (the profiler's own interrupts land there, and on a VM the host's)."""
    totals = collections.Counter()
    hashes = collections.Counter()
    leaves = collections.Counter()
    kernel = []
    for period, frames in samples(stream, kernel):
        if user_only and kernel[-1]:
            continue
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
