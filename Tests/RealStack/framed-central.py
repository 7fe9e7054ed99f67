#!/usr/bin/python3
"""A minimal central for the framed protocol (docs/protocols/framed.md), in Python over BlueZ's
D-Bus API, independent of the Swift central: proves that `ota-peripheral --protocol framed`
serves a working GATT server, including resuming after the peripheral drops the link
(`--drop-link-after`).

On ADAPTER (hci0): scan for the framed service, connect, read Status, StartNotify(Control),
BEGIN, stream chunks (offset | crc | payload) through WriteValue(type=command) with a window of
batches, follow ACKs and NAKs; on a disconnect, reconnect and BEGIN again (a resume); at the end
COMMIT and wait for the reboot disconnect.
Prints RESULT lines; exit 0 = the image was committed.
Usage: framed-central.py IMAGE [--adapter hci0] [--address 00:AA:01:01:00:01] [--min-resumes N]
"""
import argparse, struct, sys, time, zlib
import dbus, dbus.mainloop.glib
from gi.repository import GLib

BLUEZ, OM, PROPS = 'org.bluez', 'org.freedesktop.DBus.ObjectManager', 'org.freedesktop.DBus.Properties'
DEV, CHRC = 'org.bluez.Device1', 'org.bluez.GattCharacteristic1'
SVC = '4f544200-8a2e-4c1b-9f3d-2b7e5c6a0001'
DATA = '4f544201-8a2e-4c1b-9f3d-2b7e5c6a0001'
CTRL = '4f544202-8a2e-4c1b-9f3d-2b7e5c6a0001'
STATUS = '4f544203-8a2e-4c1b-9f3d-2b7e5c6a0001'
BATCH, WINDOW = 16, 3

ap = argparse.ArgumentParser()
ap.add_argument('image')
ap.add_argument('--adapter', default='hci0')
ap.add_argument('--address', default=None)
ap.add_argument('--min-resumes', type=int, default=0)
args = ap.parse_args()

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SystemBus()
ctx = GLib.MainContext.default()
GLib.timeout_add(20, lambda: True)
om = dbus.Interface(bus.get_object(BLUEZ, '/'), OM)
T0 = time.monotonic()
image = open(args.image, 'rb').read()
crc = zlib.crc32(image) & 0xffffffff


def log(*a):
    print('central[%6.2fs]:' % (time.monotonic() - T0), *a, flush=True)


def fail(msg):
    print('RESULT framed_central=FAIL', msg, flush=True)
    sys.exit(1)


def pump(cond, timeout, what):
    end = time.monotonic() + timeout
    while True:
        r = cond()
        if r:
            return r
        if time.monotonic() > end:
            for p, ifs in om.GetManagedObjects().items():
                if 'org.bluez.Device1' in ifs:
                    d = ifs['org.bluez.Device1']
                    log('device', p, 'UUIDs', [str(u) for u in d.get('UUIDs', [])], 'Connected', bool(d.get('Connected')),
                        'RSSI', d.get('RSSI'))
            fail('timeout waiting for ' + what)
        ctx.iteration(True)


def prop(path, iface, name):
    return dbus.Interface(bus.get_object(BLUEZ, path), PROPS).Get(iface, name)


central = '/org/bluez/' + args.adapter
adapter = dbus.Interface(bus.get_object(BLUEZ, central), 'org.bluez.Adapter1')


def find_device():
    adapter.SetDiscoveryFilter({'Transport': 'le', 'UUIDs': dbus.Array([SVC], 's')})
    adapter.StartDiscovery()

    def find():
        for p, ifs in om.GetManagedObjects().items():
            d = ifs.get(DEV)
            if not d or not p.startswith(central + '/'):
                continue
            if args.address and str(d.get('Address', '')).upper() != args.address.upper():
                continue
            if SVC in [str(u) for u in d.get('UUIDs', [])]:
                return p
        time.sleep(0.1)
    path = pump(find, 60, 'the advertisement of ' + SVC)
    adapter.StopDiscovery()
    return path


dev_path = find_device()
log('found', dev_path)
dev = dbus.Interface(bus.get_object(BLUEZ, dev_path), DEV)
link = {'up': False}
notes = []


def on_dev_props(iface, changed, inv):
    if 'Connected' in changed:
        link['up'] = bool(changed['Connected'])


bus.add_signal_receiver(on_dev_props, 'PropertiesChanged', PROPS, BLUEZ, dev_path)
state = {}


def connect():
    """Connects, resolves, reads Status, subscribes; returns (data, ctrl, mtu)."""
    for attempt in range(20):
        try:
            dev.Connect(timeout=60)
            break
        except dbus.DBusException as e:
            log('connect failed (%s), retrying' % e.get_dbus_name())
            time.sleep(0.5)
    else:
        fail('cannot connect')
    link['up'] = True
    log('connected')
    pump(lambda: prop(dev_path, DEV, 'ServicesResolved') or time.sleep(0.05), 60, 'ServicesResolved')
    chars = {str(i[CHRC]['UUID']): p for p, i in om.GetManagedObjects().items()
             if CHRC in i and p.startswith(dev_path + '/')}
    status = bytes(dbus.Interface(bus.get_object(BLUEZ, chars[STATUS]), CHRC).ReadValue({}))
    ver, st, off, rcrc = struct.unpack_from('<BBII', status)
    log('status: version %d state %d offset %d' % (ver, st, off))
    ctrl_p = chars[CTRL]
    if state.get('ctrl_p') != ctrl_p:
        bus.add_signal_receiver(lambda iface, ch, inv: 'Value' in ch and notes.append(bytes(ch['Value'])),
                                'PropertiesChanged', PROPS, BLUEZ, ctrl_p)
        state['ctrl_p'] = ctrl_p
    ctrl = dbus.Interface(bus.get_object(BLUEZ, ctrl_p), CHRC)
    ctrl.StartNotify()
    pump(lambda: prop(ctrl_p, CHRC, 'Notifying'), 10, 'Notifying')
    try:
        mtu = int(prop(ctrl_p, CHRC, 'MTU'))
    except dbus.DBusException:
        mtu = 23
    return dbus.Interface(bus.get_object(BLUEZ, chars[DATA]), CHRC), ctrl, mtu


def command(ctrl, payload, opcode, timeout=30):
    del notes[:]
    ctrl.WriteValue(dbus.ByteArray(payload), {'type': 'request'})
    return pump(lambda: next((n for n in notes if n[0] == opcode), None), timeout, 'reply 0x%02x' % opcode)


resumes = 0
first = True
while True:
    data, ctrl, mtu = connect()
    reply = command(ctrl, struct.pack('<BBIIIH', 0x10, 1, len(image), crc, 0, BATCH), 0x90)
    _, status, st, offset, batch = struct.unpack('<BBBIH', reply)
    if status != 0:
        fail('BEGIN status %d' % status)
    if not first:
        resumes += 1
    first = False
    log('BEGIN: state %d offset %d batch %d (resumes %d)' % (st, offset, batch, resumes))
    payload = min(mtu - 3, 510) - 8
    acked, sent, dropped = offset, offset, False
    last_progress = time.monotonic()
    del notes[:]
    while acked < len(image):
        if not link['up']:
            dropped = True
            break
        while notes:
            n = notes.pop(0)
            if n[0] == 0xA0:
                acked = max(acked, struct.unpack_from('<I', n, 1)[0])
                last_progress = time.monotonic()
            elif n[0] == 0xA1:
                reason, off = struct.unpack_from('<BI', n, 1)
                log('NAK reason %d offset %d' % (reason, off))
                acked, sent = max(acked, off), off
        if sent < len(image) and sent < acked + WINDOW * batch * payload:
            chunk = image[sent:sent + payload]
            try:
                data.WriteValue(dbus.ByteArray(struct.pack('<II', sent, zlib.crc32(chunk) & 0xffffffff) + chunk),
                                {'type': 'command'})
            except dbus.DBusException as e:
                log('write failed:', e.get_dbus_name())
                dropped = True
                break
            sent += len(chunk)
            ctx.iteration(False)
        else:
            ctx.iteration(True)
            if time.monotonic() - last_progress > 5:
                log('no ACK for 5 s; resending from', acked)
                sent, last_progress = acked, time.monotonic()
    if dropped:
        log('link lost at acked=%d sent=%d; reconnecting' % (acked, sent))
        pump(lambda: not prop(dev_path, DEV, 'Connected') or time.sleep(0.05), 30, 'the disconnect')
        continue
    break

reply = command(ctrl, b'\x11', 0x91, timeout=60)
if reply[1] != 0:
    fail('COMMIT status %d' % reply[1])
log('COMMIT ok; waiting for the reboot disconnect')
pump(lambda: not prop(dev_path, DEV, 'Connected') or time.sleep(0.05), 30, 'the reboot disconnect')
if resumes < args.min_resumes:
    fail('only %d resumes, expected at least %d' % (resumes, args.min_resumes))
print('RESULT framed_central=PASS bytes=%d crc=%08x resumes=%d secs=%.2f' % (len(image), crc, resumes, time.monotonic() - T0),
      flush=True)
