"""Uploads an MCUboot image with mcumgr-toolkit (a Python API over a Rust MCUmgr client, from
PyPI) to an SMP server over UDP or a serial line, checks the image state and marks the image for
a test boot.

    python mcumgr_toolkit_check.py udp HOST PORT IMAGE
    python mcumgr_toolkit_check.py serial PATH IMAGE

Prints one line per check; exits 0 when all pass, 1 otherwise.
"""

import sys

import mcumgr_toolkit as toolkit

failures = 0


def check(condition: bool, what: str) -> None:
    global failures
    print(("ok: " if condition else "FAILED: ") + what, flush=True)
    if not condition:
        failures += 1


def slot(states, number):
    return next((s for s in states if s.slot == number and (s.image or 0) == 0), None)


def main(arguments: list[str]) -> int:
    if arguments[0] == "udp":
        client = toolkit.MCUmgrClient.udp(arguments[1], int(arguments[2]), timeout_ms=5000)
        path = arguments[3]
    else:
        client = toolkit.MCUmgrClient.serial(arguments[1], timeout_ms=5000)
        path = arguments[2]
    image = open(path, "rb").read()
    expected = bytes(toolkit.mcuboot_get_image_info(image).hash)
    check(client.os_echo("mcumgr-toolkit") == "mcumgr-toolkit", "os echo")
    client.use_auto_frame_size()
    before = client.image_get_state()
    check(slot(before, 0) is not None and slot(before, 0).active, "image state: slot 0 active before the upload")
    client.image_upload(image)
    after = client.image_get_state()
    secondary = slot(after, 1)
    check(secondary is not None and bytes(secondary.hash) == expected, f"slot 1 holds the image, hash {expected.hex()[:16]}...")
    marked = client.image_set_state(expected, False)
    secondary = slot(marked, 1)
    check(secondary is not None and secondary.pending and not secondary.permanent, "image set state (test): slot 1 pending")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
