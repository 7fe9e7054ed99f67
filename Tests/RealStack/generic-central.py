#!/usr/bin/python3
"""A minimal central for the generic protocol, in Python over BlueZ's D-Bus API, independent of
the Swift central: proves that `ota-peripheral --protocol generic` serves a working GATT server.

On ADAPTER (hci0) it scans for the generic OTA service, connects, resolves services, then
  1. writes an unknown command to Control (write request): the model answers ATT "invalid PDU",
     which the peripheral maps to org.bluez.Error.Failed -> the central sees an ATT error;
  2. StartNotify(Control); START(size, crc) -> expects notification 81 00;
  3. the image through WriteValue(type=command) on Data, min(MTU-3, 510) bytes each;
  4. COMMIT(crc) -> expects notification 82 00; the device reboots and drops the link.
Prints RESULT lines; exit 0 = all steps passed.
Usage: generic-central.py IMAGE [--adapter hci0] [--address 00:AA:01:01:00:01]
"""
import argparse, struct, sys, time, zlib
import dbus, dbus.mainloop.glib
from gi.repository import GLib

BLUEZ, OM, PROPS = 'org.bluez', 'org.freedesktop.DBus.ObjectManager', 'org.freedesktop.DBus.Properties'
CHRC = 'org.bluez.GattCharacteristic1'
SVC = '4f544100-8a2e-4c1b-9f3d-2b7e5c6a0001'
DATA = '4f544101-8a2e-4c1b-9f3d-2b7e5c6a0001'
CTRL = '4f544102-8a2e-4c1b-9f3d-2b7e5c6a0001'

ap = argparse.ArgumentParser()
ap.add_argument('image')
ap.add_argument('--adapter', default='hci0')
ap.add_argument('--address', default=None)
args = ap.parse_args()

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SystemBus()
ctx = GLib.MainContext.default()
GLib.timeout_add(20, lambda: True)
om = dbus.Interface(bus.get_object(BLUEZ, '/'), OM)
T0 = time.monotonic()


def log(*a):
    print('central[%6.2fs]:' % (time.monotonic() - T0), *a, flush=True)


def fail(msg):
    print('RESULT generic_central=FAIL', msg, flush=True)
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


image = open(args.image, 'rb').read()
crc = zlib.crc32(image) & 0xffffffff
central = '/org/bluez/' + args.adapter
adapter = dbus.Interface(bus.get_object(BLUEZ, central), 'org.bluez.Adapter1')
adapter.SetDiscoveryFilter({'Transport': 'le', 'UUIDs': dbus.Array([SVC], 's')})
adapter.StartDiscovery()


def find_dev():
    for p, ifs in om.GetManagedObjects().items():
        d = ifs.get('org.bluez.Device1')
        if not d or not p.startswith(central + '/'):
            continue
        if args.address and str(d.get('Address', '')).upper() != args.address.upper():
            continue
        if SVC in [str(u) for u in d.get('UUIDs', [])]:
            return p
    time.sleep(0.1)


dev_path = pump(find_dev, 60, 'the advertisement of ' + SVC)
name = ''
try:
    name = str(prop(dev_path, 'org.bluez.Device1', 'Name'))
except dbus.DBusException:
    pass
log('found', dev_path, 'name', repr(name))
print('RESULT advertised_name=%s' % name, flush=True)
adapter.StopDiscovery()
dev = dbus.Interface(bus.get_object(BLUEZ, dev_path), 'org.bluez.Device1')
dev.Connect(timeout=60)
pump(lambda: prop(dev_path, 'org.bluez.Device1', 'ServicesResolved') or time.sleep(0.05), 60, 'ServicesResolved')
chars = {str(i[CHRC]['UUID']): p for p, i in om.GetManagedObjects().items()
         if CHRC in i and p.startswith(dev_path + '/')}
if DATA not in chars or CTRL not in chars:
    fail('characteristics missing: %s' % sorted(chars))
data_p, ctrl_p = chars[DATA], chars[CTRL]
data = dbus.Interface(bus.get_object(BLUEZ, data_p), CHRC)
ctrl = dbus.Interface(bus.get_object(BLUEZ, ctrl_p), CHRC)
flags = ([str(f) for f in prop(data_p, CHRC, 'Flags')], [str(f) for f in prop(ctrl_p, CHRC, 'Flags')])
log('flags data', flags[0], 'control', flags[1])
if flags != (['write-without-response'], ['write', 'notify']):
    fail('unexpected flags %s' % (flags,))
try:
    mtu = int(prop(ctrl_p, CHRC, 'MTU'))
except dbus.DBusException:
    mtu = 23
print('RESULT att_mtu=%d' % mtu, flush=True)

# 1. an invalid command is refused with an ATT error
try:
    ctrl.WriteValue(dbus.ByteArray(b'\x09'), {'type': 'request'})
    fail('an invalid command was accepted')
except dbus.DBusException as e:
    log('invalid command refused:', e.get_dbus_name(), e.get_dbus_message())
    print('RESULT invalid_command_error=%s %s' % (e.get_dbus_name(), e.get_dbus_message()), flush=True)

# 2. START
notes = []
bus.add_signal_receiver(lambda iface, ch, inv: 'Value' in ch and notes.append(bytes(ch['Value'])),
                        'PropertiesChanged', PROPS, BLUEZ, ctrl_p)
ctrl.StartNotify()
pump(lambda: prop(ctrl_p, CHRC, 'Notifying'), 10, 'Notifying')


def request(payload, timeout=30):
    del notes[:]
    ctrl.WriteValue(dbus.ByteArray(payload), {'type': 'request'})
    return pump(lambda: notes and notes[0], timeout, 'notification after %r' % payload)


reply = request(struct.pack('<BII', 1, len(image), crc))
if reply != b'\x81\x00':
    fail('START answered %r' % reply)
log('START ok')

# 3. data
chunk = min(mtu - 3, 510)
t = time.monotonic()
for off in range(0, len(image), chunk):
    data.WriteValue(dbus.ByteArray(image[off:off + chunk]), {'type': 'command'})
log('%d bytes written in %.2fs' % (len(image), time.monotonic() - t))

# 4. COMMIT
reply = request(struct.pack('<BI', 2, crc), timeout=60)
if reply != b'\x82\x00':
    fail('COMMIT answered %r' % reply)
log('COMMIT ok; waiting for the device to reboot (link drop)')
pump(lambda: not prop(dev_path, 'org.bluez.Device1', 'Connected') or time.sleep(0.05), 30, 'the reboot disconnect')
print('RESULT generic_central=PASS bytes=%d crc=%08x secs=%.2f' % (len(image), crc, time.monotonic() - t), flush=True)
