"""Uploads an MCUboot image with smpclient (Intercreate's SMP client, from PyPI) over UDP (or a
serial line) to an SMP server, checks the image state, marks the image for a test boot and
checks it is pending.

    python smpclient_udp.py HOST PORT IMAGE [--reset]
    python smpclient_udp.py serial PATH IMAGE [--reset]     (smpclient's serial transport)
    python smpclient_udp.py ble ADDRESS IMAGE [--reset]     (smpclient's BLE transport, bleak on BlueZ;
                                                             scanning on $SMPCLIENT_BLE_ADAPTER if set)

With --reset it then resets the server and checks that the image runs in slot 0, unconfirmed
(a test boot). Prints one line per check and exits 0 when all pass, 1 otherwise. The MCUboot
hash it expects is read from the image's SHA-256 TLV here, independently of the Swift code.
"""

import asyncio
import contextlib
import os
import struct
import sys
import time

from smpclient import SMPClient
from smpclient.generics import error, success
from smpclient.requests.image_management import ImageStatesRead, ImageStatesWrite
from smpclient.requests.os_management import ResetWrite
from smpclient.transport.ble import SMPBLETransport
from smpclient.transport.serial import SMPSerialTransport
from smpclient.transport.udp import SMPUDPTransport


class PortUDPTransport(SMPUDPTransport):
    """smpclient's UDP transport on a port other than Zephyr's default 1337."""

    def __init__(self, port: int, mtu: int = 1500) -> None:
        super().__init__(mtu=mtu)
        self._port = port

    async def connect(self, address: str, timeout_s: float, port: int = 1337) -> None:  # noqa: ARG002
        await super().connect(address, timeout_s, port=self._port)


def mcuboot_hash(image: bytes) -> bytes:
    """The SHA-256 TLV (type 0x10) of an MCUboot image."""
    magic, _load, header_size, protected_size, image_size = struct.unpack_from("<IIHHI", image, 0)
    assert magic == 0x96F3B83D, f"not an MCUboot image (magic {magic:#x})"
    offset = header_size + image_size + protected_size
    info_magic, total = struct.unpack_from("<HH", image, offset)
    assert info_magic == 0x6907, f"no TLV area at {offset} ({info_magic:#x})"
    end, offset = offset + total, offset + 4
    while offset < end:
        kind, length = struct.unpack_from("<HH", image, offset)
        if kind == 0x10:
            return image[offset + 4 : offset + 4 + length]
        offset += 4 + length
    raise AssertionError("the image has no SHA-256 TLV")


failures = 0


def check(condition: bool, what: str) -> None:
    global failures
    print(("ok: " if condition else "FAILED: ") + what, flush=True)
    if not condition:
        failures += 1


def slot(states, number):
    return next((s for s in states.images if s.slot == number and (s.image or 0) == 0), None)


def scan_on(adapter: str) -> None:
    """Makes bleak scan on `adapter` (hci0), not on the adapter it picks by itself.

    Without an adapter bleak takes the first one in BlueZ's object list. The real-stack VM has
    two, the central's (hci0) and the peripheral's (hci1), and that list's order varies: in about
    one run of three bleak scanned on hci1, the peripheral's own adapter, and never found it.
    smpclient passes no scanner arguments, so bleak's lookup is wrapped here; the client then
    connects through the adapter the device was found on."""
    from bleak import BleakScanner

    find = BleakScanner.find_device_by_address.__func__

    async def find_on_adapter(cls, device_identifier, timeout=10.0, **kwargs):
        kwargs.setdefault("adapter", adapter)
        return await find(cls, device_identifier, timeout, **kwargs)

    BleakScanner.find_device_by_address = classmethod(find_on_adapter)


class BlueZPeerBLETransport(SMPBLETransport):
    """smpclient's BLE transport with writes of at most 510 bytes: a BlueZ 5.66 peripheral (the
    real-stack tier's ota-peripheral) silently loses write commands of 512 and 514 bytes at ATT
    MTU 517 (see docs/transports/bluez.md, "Chunk cap"), which bleak would send."""

    async def connect(self, address: str, timeout_s: float) -> None:
        await super().connect(address, timeout_s)
        self._max_write_without_response_size = min(self._max_write_without_response_size, 510)


def make_client(host: str, port: str) -> SMPClient:
    if host == "ble":
        if os.environ.get("SMPCLIENT_BLE_ADAPTER"):
            scan_on(os.environ["SMPCLIENT_BLE_ADAPTER"])
        return SMPClient(BlueZPeerBLETransport(), port, timeout_s=10.0)
    if host == "serial":
        return SMPClient(SMPSerialTransport(), port, timeout_s=5.0)
    return SMPClient(PortUDPTransport(int(port)), host, timeout_s=5.0)


# How long a connection may take. Over BLE that is bleak's scan for the address, the connection and
# GATT discovery, which in the real-stack VM (TCG, its guest CPU following the host's load) takes
# 5-15 s: smpclient's default (the request timeout, 10 s) failed there on a loaded host.
CONNECT_TIMEOUT_S = {"ble": 60.0, "serial": 5.0}


@contextlib.asynccontextmanager
async def connect(host: str, port: str):
    client = make_client(host, port)
    started = time.monotonic()
    limit = CONNECT_TIMEOUT_S.get(host, 5.0)
    try:
        await client.connect(limit)
    except (TimeoutError, asyncio.TimeoutError):
        print(f"FAILED: no connection to {port} within {limit:.0f} s (scan, connect, discovery)", flush=True)
        raise
    print(f"connected in {time.monotonic() - started:.2f} s", flush=True)
    try:
        yield client
    finally:
        await client.disconnect()


async def main(host: str, port: str, path: str, reset: bool) -> int:
    image = open(path, "rb").read()
    expected = mcuboot_hash(image)
    async with connect(host, port) as client:
        before = await client.request(ImageStatesRead())
        check(success(before) and slot(before, 0) is not None and slot(before, 0).active, "image state read: slot 0 active before the upload")

        started = time.monotonic()
        last = 0
        async for offset in client.upload(image):
            last = offset
        elapsed = time.monotonic() - started
        check(last == len(image), f"smpclient uploaded {len(image)} bytes (last offset {last}) in {elapsed:.2f} s")

        after = await client.request(ImageStatesRead())
        secondary = slot(after, 1) if success(after) else None
        check(secondary is not None and secondary.hash == expected, f"slot 1 holds the image, hash {expected.hex()[:16]}...")
        check(secondary is not None and not secondary.pending, "slot 1 not pending before the test mark")

        marked = await client.request(ImageStatesWrite(hash=expected, confirm=False))
        secondary = slot(marked, 1) if success(marked) else None
        check(secondary is not None and secondary.pending and not secondary.permanent, "image state write (test): slot 1 pending")

        unknown = await client.request(ImageStatesWrite(hash=bytes(32), confirm=False))
        check(error(unknown), f"image state write of an unknown hash refused: {unknown}")

        if reset:
            await client.request(ResetWrite())
    if reset:
        await asyncio.sleep(1.0)
        async with connect(host, port) as client:
            booted = await client.request(ImageStatesRead())
            primary = slot(booted, 0) if success(booted) else None
            check(
                primary is not None and primary.hash == expected and primary.active and not primary.confirmed,
                "after the reset slot 0 runs the image on a test boot (active, not confirmed)",
            )
    return 1 if failures else 0


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(arguments) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(asyncio.run(main(arguments[0], arguments[1], arguments[2], "--reset" in sys.argv)))
