"""The unsigned Nordic init packet the real-stack tier's packages carry.

The same bytes as the project's InitPacketBuilder.unsignedApplication: fw 1, hw 52, sd_req 0x0100,
an application of the image's size, its SHA-256 byte-reversed, wrapped as an unsigned packet.
"""
import hashlib


def varint(value):
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number, value):
    return varint(number << 3) + varint(value)


def delimited(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def unsigned_init_packet(image):
    """The .dat file's bytes for `image` (bytes)."""
    init = field(1, 1) + field(2, 52) + delimited(3, varint(0x0100)) + field(4, 0) + field(7, len(image))
    init += delimited(8, field(1, 3) + delimited(2, hashlib.sha256(image).digest()[::-1]))
    return delimited(1, field(1, 1) + delimited(2, init))
