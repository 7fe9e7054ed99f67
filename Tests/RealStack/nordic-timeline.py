#!/usr/bin/env python3
"""nordic-timeline.py - per-object timing of a Nordic Secure DFU session, read from btmon.

Reads the btsnoop file `btmon -w FILE` recorded in the VM, keeps the central's controller (--index,
default hci0) and finds
the Control Point requests and answers and the DFU Packet writes of the data objects, whoever the
client was (ota or a third-party one): so both are measured the same way, on the air side of the
central's bluetoothd.

Prints one JSON object:
  transfer_s      first Control Point request after the connection (Set PRN or Select) to the
                  last Execute answer (the device's verdict)
  data_s          first DFU Packet write of the first data object to the last Execute answer
  objects         data objects seen (Create(data) requests)
  round_trip_ms   per data object, the time it spent on anything but data: the object's span
                  (from the previous object's Execute answer, or its own Create request for the
                  first) minus the span from its first to its last DFU Packet write. Min, median
                  and max, with the first object apart (it carries the client's first-object delay)
  first_delay_ms  the first data object's Create answer to its first DFU Packet write
  bytes           DFU Packet bytes written during the data objects

  kBps, data_kBps  --bytes BYTES (the image) over transfer_s and over data_s, in kB/s (1000 B)

Usage: nordic-timeline.py BTSNOOP_FILE [--bytes BYTES] [--index hci0] [--control-handle 0xNNNN --packet-handle 0xNNNN]
Without the handles, the Control Point is the handle that Create/Select writes go to and the DFU
Packet the one that takes Write Commands.
"""
import json
import statistics
import struct
import sys

# btmon's own btsnoop file (`btmon -w`): datalink 2001, the monitor's opcodes in each record's
# flags (controller index << 16 | opcode). 4: ACL data sent to the controller (the host's
# writes on hci0), 5: ACL data received.
MONITOR_DATALINK = 2001
ACL_TX, ACL_RX = 4, 5
ATT_CID = 4
ATT_KINDS = {0x12: 'Write Request', 0x13: 'Write Response', 0x52: 'Write Command', 0x1B: 'Handle Value Notification',
             0x0A: 'Read Request'}
EPOCH_DELTA_US = 0x00DCDDB30F2F8000  # btsnoop counts microseconds from year 0


def events(path, index):
    """(time in s, kind, handle as 0xNNNN, value as hex) for the ATT PDUs of interest on
    controller `index` (hci0 -> 0), from a btsnoop file btmon wrote."""
    data = open(path, 'rb').read()
    if data[:8] != b'btsnoop\0':
        raise SystemExit(f'{path}: not a btsnoop file')
    version, datalink = struct.unpack('>II', data[8:16])
    if datalink != MONITOR_DATALINK:
        raise SystemExit(f'{path}: datalink {datalink}, expected btmon\'s {MONITOR_DATALINK}')
    wanted = int(index.replace('hci', ''))
    out = []
    partial = {}  # (opcode, ACL handle) -> [time, bytes of the L2CAP frame so far, its length]
    offset = 16
    first = None
    while offset + 24 <= len(data):
        original, included, flags, drops, stamp = struct.unpack('>IIIIq', data[offset:offset + 24])
        record = data[offset + 24:offset + 24 + included]
        offset += 24 + included
        opcode, controller = flags & 0xFFFF, flags >> 16
        if controller != wanted or opcode not in (ACL_TX, ACL_RX) or len(record) < 4:
            continue
        seconds = (stamp - EPOCH_DELTA_US) / 1e6
        if first is None:
            first = seconds
        header, length = struct.unpack('<HH', record[:4])
        handle, boundary = header & 0x0FFF, (header >> 12) & 0x3
        payload = record[4:4 + length]
        key = (opcode, handle)
        if boundary == 0x1:  # continuation
            if key not in partial:
                continue
            partial[key][1] += payload
        else:
            if len(payload) < 4:
                continue
            frame_length = struct.unpack('<H', payload[:2])[0]
            partial[key] = [seconds, payload, frame_length]
        started, frame, frame_length = partial[key]
        if len(frame) < 4 + frame_length:
            continue
        del partial[key]
        cid = struct.unpack('<H', frame[2:4])[0]
        pdu = frame[4:4 + frame_length]
        if cid != ATT_CID or not pdu:
            continue
        if pdu[0] == 0x23:
            # Multiple Handle Value Notification (bluetoothd sends it when the client supports it):
            # handle, length, value, repeated.
            rest = pdu[1:]
            while len(rest) >= 4:
                handle, size = struct.unpack('<HH', rest[:4])
                out.append((seconds, 'Handle Value Notification', '0x%04x' % handle, rest[4:4 + size].hex()))
                rest = rest[4 + size:]
            continue
        kind = ATT_KINDS.get(pdu[0])
        if kind is None:
            continue
        if kind == 'Write Response':
            out.append((seconds, kind, None, ''))
        elif len(pdu) >= 3:
            out.append((seconds, kind, '0x%04x' % struct.unpack('<H', pdu[1:3])[0], pdu[3:].hex()))
    return out


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    evs = events(args[0], args[args.index('--index') + 1] if '--index' in args else 'hci0')
    control = packet = None
    if '--control-handle' in args:
        control = args[args.index('--control-handle') + 1]
    if '--packet-handle' in args:
        packet = args[args.index('--packet-handle') + 1]
    if control is None:
        for t, kind, handle, data in evs:
            # Select (06 01|02) or Create (01 01|02 and a 32-bit size); not a CCC write (01 00).
            if kind == 'Write Request' and (data in ('0601', '0602') or (len(data) == 12 and data[:4] in ('0101', '0102'))):
                control = handle
                break
    if packet is None:
        for t, kind, handle, data in evs:
            if kind == 'Write Command' and handle != control:
                packet = handle
                break
    session_start = None
    objects = []  # dicts: create, create_answer, first, last, bytes, execute_answer
    current = None
    in_data = False
    last_execute = None
    for t, kind, handle, data in evs:
        if kind == 'Write Request' and handle == control:
            if session_start is None and data[:2] in ('02', '06', '01'):
                session_start = t
            if data[:4] == '0102':
                current = {'create': t, 'create_answer': None, 'first': None, 'last': None, 'bytes': 0,
                           'checksum': None, 'checksum_answer': None, 'execute': None,
                           'execute_answer': None, 'previous_end': last_execute}
                objects.append(current)
                in_data = True
            elif data[:4] == '0101':
                in_data = False
            elif data[:2] == '03' and current is not None and current['checksum'] is None:
                current['checksum'] = t
            elif data[:2] == '04' and in_data:
                for obj in objects:
                    if obj['execute'] is None and obj['first'] is not None:
                        obj['execute'] = t
                        break
        elif kind == 'Handle Value Notification' and handle == control and data[:2] == '60':
            if data[2:4] == '01' and current is not None and current['create_answer'] is None:
                current['create_answer'] = t
            elif data[2:4] == '03' and current is not None and current['first'] is not None \
                    and current['execute'] is None:
                # The answer to Calculate Checksum, or a packet receipt (same op code): the last
                # one before the Execute request counts.
                current['checksum_answer'] = t
            elif data[2:4] == '04' and in_data:
                last_execute = t
                # The Execute answers the oldest object still without one.
                for obj in objects:
                    if obj['execute_answer'] is None and obj['first'] is not None:
                        obj['execute_answer'] = t
                        break
        elif kind == 'Write Command' and handle == packet and in_data and current is not None:
            if current['first'] is None:
                current['first'] = t
            current['last'] = t
            current['bytes'] += len(data) // 2
    # btmon can lose records under load: match each object's Execute request and answer by time
    # (the first after its last packet, the first after that request), not by counting.
    requests = [(t, data) for t, kind, handle, data in evs if kind == 'Write Request' and handle == control]
    answers = [(t, data) for t, kind, handle, data in evs if kind == 'Handle Value Notification' and handle == control]
    for i, o in enumerate(objects):
        if o['first'] is None:
            continue
        horizon = objects[i + 1]['create'] if i + 1 < len(objects) else float('inf')
        # Pipelined, the next Create is written right after this Execute: look up to just past it.
        execute = next((t for t, data in requests if t >= o['last'] and data[:2] == '04'), None)
        o['execute'] = execute
        o['execute_answer'] = next((t for t, data in answers if execute is not None and t >= execute and data[:4] == '6004'), None)
        if execute is not None and execute > horizon + 1.0:
            o['execute'] = o['execute_answer'] = None
    done = [o for o in objects if o['execute_answer'] is not None and o['first'] is not None]
    if not done:
        print(json.dumps({'error': 'no data object with an Execute answer', 'events': len(evs)}))
        sys.exit(1)
    # A re-created object (checksum failed) shares its Execute answer with the retry: count
    # each Execute answer once, with the last Create before it.
    by_answer = {}
    for o in done:
        by_answer[o['execute_answer']] = o
    done = sorted(by_answer.values(), key=lambda o: o['execute_answer'])
    trips = []
    for i, o in enumerate(done):
        start = o['create'] if i == 0 else done[i - 1]['execute_answer']
        span = o['execute_answer'] - start
        trips.append(1000.0 * (span - (o['last'] - o['first'])))
    end = done[-1]['execute_answer']
    # Where each object's time went (ms, medians over the objects after the first): Create to its
    # answer, its answer to the first packet, the last packet to Calculate Checksum's request (or
    # nothing with a receipt), to its answer, to Execute's request, to its answer.
    phases = {}
    def gap(o, a, b):
        return 1000.0 * (o[b] - o[a]) if o.get(a) is not None and o.get(b) is not None else None
    for label, a, b in (('create', 'create', 'create_answer'), ('create_to_data', 'create_answer', 'first'),
                        ('data', 'first', 'last'), ('data_to_checksum', 'last', 'checksum'),
                        ('checksum', 'checksum', 'checksum_answer'), ('last_data_to_checksum_answer', 'last', 'checksum_answer'),
                        ('checksum_answer_to_execute', 'checksum_answer', 'execute'), ('execute', 'execute', 'execute_answer')):
        values = [v for v in (gap(o, a, b) for o in done[1:]) if v is not None]
        if values:
            phases[label] = round(statistics.median(values), 1)

    def summary(values):
        if not values:
            return None
        return {'min': round(min(values), 1), 'median': round(statistics.median(values), 1), 'max': round(max(values), 1)}

    first = done[0]
    image = int(args[args.index('--bytes') + 1]) if '--bytes' in args else None
    transfer = end - session_start if session_start is not None else None
    rates = {}
    if image:
        rates = {'kBps': round(image / transfer / 1000, 1) if transfer else None,
                 'data_kBps': round(image / (end - first['first']) / 1000, 1)}
    print(json.dumps({**rates,
        'transfer_s': round(end - session_start, 3) if session_start is not None else None,
        'data_s': round(end - first['first'], 3),
        'objects': len(done),
        'bytes': sum(o['bytes'] for o in objects),
        'round_trip_ms': {'first': round(trips[0], 1), 'rest': summary(trips[1:])},
        'phases_ms': phases,
        'first_delay_ms': round(1000.0 * (first['first'] - first['create_answer']), 1) if first['create_answer'] else None,
        'control_handle': control, 'packet_handle': packet,
    }))


if __name__ == '__main__':
    main()
