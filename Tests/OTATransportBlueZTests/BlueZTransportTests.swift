#if os(Linux)
import Dispatch
import Foundation
import OTACore
import Synchronization
import Testing

@testable import OTATransportBlueZ

/// The GATT link through a scripted org.bluez: writes, reads, notifications, back-pressure on the
/// AcquireWrite socket, the fallback to WriteValue(command), and losing the link.
@Suite(.needsLibDBus) struct BlueZTransportTests {
    static func image(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
    }

    @Test func writeWithResponseAndNotificationsRoundTrip() async throws {
        try await FakeBlueZ.with { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            var notifications: AsyncStream<Data>? = try await transport.notifications(from: FakeBlueZ.control)
            #expect(fake.calls.last == "GattCharacteristic1.StartNotify")
            var iterator = notifications?.makeAsyncIterator()

            try await transport.write(Data("hello-ota".utf8), to: FakeBlueZ.control, kind: .withResponse)
            #expect(await iterator?.next() == Data("echo:hello-ota".utf8))
            try await transport.write(Data([0x01, 0x02]), to: FakeBlueZ.control, kind: .withResponse)
            #expect(await iterator?.next() == Data("echo:".utf8) + Data([0x01, 0x02]))
            #expect(
                fake.writes == [
                    .init(path: FakeBlueZ.controlPath, value: Array("hello-ota".utf8), type: "request"),
                    .init(path: FakeBlueZ.controlPath, value: [0x01, 0x02], type: "request"),
                ])
            #expect(try await transport.read(FakeBlueZ.status) == Data([0x01, 0x02, 0x03]))
            #expect(transport.statistics.requestWrites == 2)
            #expect(transport.statistics.notifications == 2)

            // Ending the stream disables notifications.
            iterator = nil
            notifications = nil
            #expect(await eventually { fake.calls.last == "GattCharacteristic1.StopNotify" })
            await transport.disconnect()
        }
    }

    /// Pushed notifications (decision 0066): each echo handed to the receiver in order, a second
    /// subscription finishing the first, cancelling the current one sending StopNotify, and a
    /// lost link finishing the receiver.
    @Test func pushedNotificationsRoundTripAndCancellingDisablesThem() async throws {
        try await FakeBlueZ.with { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            let log = Mutex<[String]>([])
            let receiver = { @Sendable (name: String) in
                NotificationReceiver(
                    receive: { value in log.withLock { $0.append("\(name) " + String(decoding: value, as: UTF8.self)) } },
                    finished: { log.withLock { $0.append("\(name) finished") } })
            }
            let first = try await transport.pushNotifications(from: FakeBlueZ.control, to: receiver("a"))
            #expect(fake.calls.last == "GattCharacteristic1.StartNotify")
            try await transport.write(Data("one".utf8), to: FakeBlueZ.control, kind: .withResponse)
            try await transport.write(Data("two".utf8), to: FakeBlueZ.control, kind: .withResponse)
            #expect(await eventually { log.withLock { $0.count } == 2 })
            let second = try await transport.pushNotifications(from: FakeBlueZ.control, to: receiver("b"))
            first.cancel()  // replaced already: ends nothing
            try await transport.write(Data("three".utf8), to: FakeBlueZ.control, kind: .withResponse)
            #expect(await eventually { log.withLock { $0.count } == 4 })
            #expect(log.withLock { $0 } == ["a echo:one", "a echo:two", "a finished", "b echo:three"])
            #expect(!fake.calls.contains("GattCharacteristic1.StopNotify"))
            second.cancel()
            #expect(await eventually { fake.calls.last == "GattCharacteristic1.StopNotify" })
            try await transport.write(Data("four".utf8), to: FakeBlueZ.control, kind: .withResponse)
            let third = try await transport.pushNotifications(from: FakeBlueZ.control, to: receiver("c"))
            await transport.disconnect()
            #expect(await eventually { log.withLock { $0.last } == "c finished" })
            third.cancel()
            #expect(log.withLock { $0 } == ["a echo:one", "a echo:two", "a finished", "b echo:three", "c finished"])
        }
    }

    @Test func aSecondSubscriptionReplacesTheFirst() async throws {
        try await FakeBlueZ.with { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            let first = try await transport.notifications(from: FakeBlueZ.control)
            let second = try await transport.notifications(from: FakeBlueZ.control)
            for await _ in first { Issue.record("the replaced stream should just finish") }
            try await transport.write(Data("x".utf8), to: FakeBlueZ.control, kind: .withResponse)
            var iterator = second.makeAsyncIterator()
            #expect(await iterator.next() == Data("echo:x".utf8))
            #expect(fake.calls.filter { $0 == "GattCharacteristic1.StartNotify" }.count == 1)
            #expect(!fake.calls.contains("GattCharacteristic1.StopNotify"))
            await transport.disconnect()
        }
    }

    @Test func acquiredSocketDeliversEveryByteInOrderUnderBackPressure() async throws {
        var script = FakeBlueZ.Script()
        script.readerStartsPaused = true
        // Mid-transfer the reader stops again, so the writer must meet a full socket a second
        // time whatever the machine's load (a slow reader alone may keep up with a loaded writer).
        script.readerPausesAfter = 200
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            let chunk = transport.link.maximumWriteWithoutResponse
            #expect(chunk == 510)
            let image = Self.image(300_000)
            let writer = Task {
                for start in stride(from: 0, to: image.count, by: chunk) {
                    try await transport.write(
                        Data(image[start..<min(start + chunk, image.count)]), to: FakeBlueZ.data, kind: .withoutResponse
                    )
                }
            }
            // The reader is paused: the socket fills up and the writer waits for room.
            #expect(await eventually { transport.statistics.socketWaits > 0 })
            #expect(fake.datagrams.isEmpty)
            let queuedWhileFull = transport.statistics.socketWrites
            #expect(queuedWhileFull > 0 && queuedWhileFull < image.count / chunk)

            // The send buffer is small, so only a few datagrams wait in the socket.
            let limit = try #require(transport.statistics.socketQueueLimit)
            #expect(limit <= 16_384)
            #expect(queuedWhileFull * chunk < limit)

            // A slow peer that stops once more: the writer finds the socket full again.
            let waitsWhilePaused = transport.statistics.socketWaits
            fake.startReading(delayMicroseconds: 200)
            #expect(await eventually { fake.datagrams.count == 200 && transport.statistics.socketWaits > waitsWhilePaused })
            #expect(transport.statistics.socketBytes - fake.socketBytes < limit)
            fake.startReading(delayMicroseconds: 200)
            try await writer.value
            #expect(await eventually(within: .seconds(20)) { fake.socketBytes == image.count })
            let datagrams = fake.datagrams
            #expect(datagrams.count == (image.count + chunk - 1) / chunk)
            #expect(datagrams.allSatisfy { $0.count <= 510 })
            #expect(datagrams.dropLast().allSatisfy { $0.count == 510 })
            #expect(datagrams.flatMap { $0 } == image)
            let statistics = transport.statistics
            #expect(statistics.socketWrites == datagrams.count)
            #expect(statistics.socketBytes == image.count)
            #expect(statistics.socketWaits > 1)
            #expect(fake.writes.isEmpty)
            await transport.disconnect()
        }
    }

    @Test func capsWritesWithoutResponseAt510WithMTU517() async throws {
        try await FakeBlueZ.with { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            #expect(transport.link.attMTU == 517)
            let error = await #expect(throws: TransportError.self) {
                try await transport.write(Data(count: 511), to: FakeBlueZ.data, kind: .withoutResponse)
            }
            #expect(error?.kind == .valueTooLong(length: 511, maximum: 510))
            try await transport.write(Data(repeating: 7, count: 510), to: FakeBlueZ.data, kind: .withoutResponse)
            #expect(await eventually { fake.datagrams == [[UInt8](repeating: 7, count: 510)] })
            await #expect(throws: TransportError.self) {
                try await transport.write(Data(count: 513), to: FakeBlueZ.control, kind: .withResponse)
            }
            await transport.disconnect()
        }
    }

    @Test func aLargerCapCanBeConfiguredForOtherPeers() async throws {
        try await FakeBlueZ.with { bus, _ in
            let transport = try await FakeBlueZ.connector(on: bus) {
                $0.writeWithoutResponseCap = BlueZ.attributeValueCap
            }.connectTransport()
            #expect(transport.link.maximumWriteWithoutResponse == 512)
            await transport.disconnect()
        }
    }

    @Test func usesTheMTUOfAcquireWriteWhenNoMTUPropertyIsReported() async throws {
        var script = FakeBlueZ.Script()
        script.reportsMTU = false
        script.mtu = 247
        try await FakeBlueZ.with(script) { bus, _ in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            #expect(transport.link.attMTU == 247)
            #expect(transport.link.maximumWriteWithoutResponse == 244)
            await transport.disconnect()
        }
    }

    @Test(arguments: [FakeBlueZ.AcquireWrite.notSupported, .absent])
    func fallsBackToWriteValueCommandWhenAcquireWriteIsUnavailable(behaviour: FakeBlueZ.AcquireWrite) async throws {
        var script = FakeBlueZ.Script()
        script.acquireWrite = behaviour
        script.receiptDescriptor = .answers
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            let reason =
                behaviour == .absent
                ? "BlueZ offers no AcquireWrite for it (no WriteAcquired property)" : "AcquireWrite is not supported"
            #expect(transport.writePaths == [FakeBlueZ.data: .writeValueCommand(reason: reason)])
            #expect(
                transport.link.summary
                    == "BlueZ hci0, write without response to \(FakeBlueZ.data.characteristic) via WriteValue(command): \(reason), "
                    + "progress at most 16384 bytes ahead of the device (receipts: reads of \(FakeBlueZ.control.characteristic)'s CCC descriptor behind the writes)"
            )
            #expect(fake.calls.contains("GattCharacteristic1.AcquireWrite") == (behaviour == .notSupported))

            let image = Self.image(3_000)
            for start in stride(from: 0, to: image.count, by: 510) {
                try await transport.write(
                    Data(image[start..<min(start + 510, image.count)]), to: FakeBlueZ.data, kind: .withoutResponse)
            }
            #expect(fake.writes.map(\.type) == Array(repeating: "command", count: 6))
            #expect(fake.writes.allSatisfy { $0.path == FakeBlueZ.dataPath })
            #expect(fake.writes.flatMap(\.value) == image)
            #expect(transport.statistics.commandWrites == 6)
            await transport.disconnect()
        }
    }

    @Test func acquireWriteCanBeTurnedOff() async throws {
        try await FakeBlueZ.with { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus) { $0.usesAcquireWrite = false }.connectTransport()
            #expect(
                transport.writePaths[FakeBlueZ.data]
                    == .writeValueCommand(reason: "AcquireWrite is turned off in the configuration"))
            try await transport.write(Data([1]), to: FakeBlueZ.data, kind: .withoutResponse)
            #expect(fake.writes == [.init(path: FakeBlueZ.dataPath, value: [1], type: "command")])
            #expect(!fake.calls.contains("GattCharacteristic1.AcquireWrite"))
            await transport.disconnect()
        }
    }

    @Test func refusesUnknownCharacteristicsAndForbiddenOperations() async throws {
        try await FakeBlueZ.with { bus, _ in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            let missing = CharacteristicID(service: FakeBlueZ.serviceUUID, characteristic: GATTUUID("2A19")!)
            let unknown = await #expect(throws: TransportError.self) {
                try await transport.write(Data([1]), to: missing, kind: .withResponse)
            }
            #expect(unknown?.kind == .unknownCharacteristic(missing))
            #expect(unknown?.message == "device has no characteristic \(missing)")
            await #expect(throws: TransportError.self) { _ = try await transport.notifications(from: missing) }
            let forbidden = await #expect(throws: TransportError.self) { _ = try await transport.read(FakeBlueZ.data) }
            #expect(forbidden?.kind == .notPermitted)
            await #expect(throws: TransportError.self) { _ = try await transport.notifications(from: FakeBlueZ.status) }
            await transport.disconnect()
        }
    }

    @Test func losingTheLinkEndsStreamsAndFailsWrites() async throws {
        var script = FakeBlueZ.Script()
        script.readerStartsPaused = true
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            let notifications = try await transport.notifications(from: FakeBlueZ.control)
            let disconnections = transport.disconnections
            // Fill the socket so that a write is waiting for room when the link goes.
            let writer = Task {
                for _ in 0..<100_000 {
                    try await transport.write(Data(count: 510), to: FakeBlueZ.data, kind: .withoutResponse)
                }
            }
            #expect(await eventually { transport.statistics.socketWaits > 0 })

            try await fake.disconnectDevice()

            for await _ in notifications { Issue.record("no notification expected") }
            var reasons = disconnections.makeAsyncIterator()
            let reason = try #require(await reasons.next())
            #expect(!reason.isLocal)
            #expect(await reasons.next() == nil)
            let writeError = await #expect(throws: TransportError.self) { try await writer.value }
            #expect(writeError.map { if case .disconnected = $0.kind { true } else { false } } == true)
            #expect(!transport.isConnected)

            let later = await #expect(throws: TransportError.self) {
                try await transport.write(Data([1]), to: FakeBlueZ.control, kind: .withResponse)
            }
            #expect(later?.kind == .disconnected(reason))
            await #expect(throws: TransportError.self) {
                _ = try await transport.notifications(from: FakeBlueZ.control)
            }
            // A late subscriber still learns why.
            var late = transport.disconnections.makeAsyncIterator()
            #expect(await late.next() == reason)
            await transport.disconnect()
            #expect(!fake.calls.contains("Device1.Disconnect"))
        }
    }

    @Test func aLinkDroppedBeforeAnyDataSuggestsPairing() async throws {
        // What a device that needs an encrypted link does when bluetoothd's security raise fails.
        try await FakeBlueZ.with { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            try await fake.disconnectDevice()
            var reasons = transport.disconnections.makeAsyncIterator()
            #expect(
                await reasons.next()
                    == DisconnectReason(
                        "00:AA:01:01:00:01 disconnected before taking any data; if it needs a paired link, pass --pairing first (or --passkey NNNNNN)"
                    ))
        }
    }

    @Test func connectedFalseFromBlueZEndsTheLink() async throws {
        // No socket in the way: only the Device1 property tells.
        var script = FakeBlueZ.Script()
        script.acquireWrite = .absent
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            let notifications = try await transport.notifications(from: FakeBlueZ.control)
            try await transport.write(Data([0]), to: FakeBlueZ.data, kind: .withoutResponse)
            try await fake.disconnectDevice()
            for await _ in notifications {}
            var reasons = transport.disconnections.makeAsyncIterator()
            #expect(await reasons.next() == DisconnectReason("00:AA:01:01:00:01 disconnected"))
            await #expect(throws: TransportError.disconnected(DisconnectReason("00:AA:01:01:00:01 disconnected"))) {
                try await transport.write(Data([1]), to: FakeBlueZ.data, kind: .withoutResponse)
            }
        }
    }

    @Test func bluetoothdLeavingTheBusEndsTheLink() async throws {
        try await FakeBlueZ.with { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            let notifications = try await transport.notifications(from: FakeBlueZ.control)
            await fake.stop()
            for await _ in notifications {}
            var reasons = transport.disconnections.makeAsyncIterator()
            let reason = await reasons.next()
            #expect(
                reason == DisconnectReason("bluetoothd stopped (org.bluez left the bus)")
                    || reason?.description.contains("AcquireWrite") == true)
        }
    }

    @Test func anAppDisconnectIsLocal() async throws {
        try await FakeBlueZ.with { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            let notifications = try await transport.notifications(from: FakeBlueZ.control)
            let disconnections = transport.disconnections
            await transport.disconnect()
            for await _ in notifications {}
            var reasons = disconnections.makeAsyncIterator()
            #expect(await reasons.next() == .closedByApp)
            #expect(fake.calls.last == "Device1.Disconnect")
            await #expect(throws: TransportError.disconnected(.closedByApp)) {
                try await transport.write(Data([1]), to: FakeBlueZ.data, kind: .withoutResponse)
            }
        }
    }
}

/// The `AcquireWrite` socket on its own, over a socket pair: what its send buffer lets wait.
@Suite struct BlueZWriteSocketTests {
    /// What a slow reader saw, datagram by datagram.
    private final class Reader: Sendable {
        struct Seen: Sendable {
            var datagrams = 0
            var bytes: [UInt8] = []
            /// The most payload sent and not read yet, just before a read.
            var largestWaiting = 0
            /// The most the kernel counted unread (`SIOCOUTQ`), just before a read.
            var largestQueued = 0
            var finished = false
        }
        let seen = Mutex(Seen())
    }

    @Test(arguments: [2048, 4096, 8192])
    func aSlowReaderNeverFindsMoreThanTheSendBufferWaiting(requested: Int) async throws {
        let (writerEnd, readerEnd) = try #require(SocketCalls.seqpacketPair(nonBlocking: false))
        let socket = try BlueZWriteSocket(taking: writerEnd, mtu: 517, label: "test", sendBuffer: requested)
        let limit = try #require(socket.statistics.queueLimit)
        // Linux doubles the request, with a floor of about 4.6 kB.
        #expect(limit >= 2 * requested && limit <= max(2 * requested, 8192))

        let reader = Reader()
        let start = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            start.wait()
            while true {
                let waiting = socket.statistics.bytes - reader.seen.withLock { $0.bytes.count }
                let queued = SocketCalls.queuedBytes(writerEnd) ?? 0
                guard let datagram = SocketCalls.readDatagram(readerEnd, maximumLength: 4096) else { break }
                reader.seen.withLock { seen in
                    seen.datagrams += 1
                    seen.bytes += datagram
                    seen.largestWaiting = max(seen.largestWaiting, waiting)
                    seen.largestQueued = max(seen.largestQueued, queued)
                }
                usleep(300)
            }
            reader.seen.withLock { $0.finished = true }
            SocketCalls.close(readerEnd)
        }

        let image = BlueZTransportTests.image(150_000)
        let writer = Task {
            for offset in stride(from: 0, to: image.count, by: 510) {
                try await socket.write(Data(image[offset..<min(offset + 510, image.count)]))
                // A returned write leaves less than one buffer's payload waiting, plus at most
                // the one datagram the reader may have taken from the socket and not counted yet
                // (its write may have gone into the room that read made).
                #expect(socket.statistics.bytes - reader.seen.withLock { $0.bytes.count } < limit + 510)
            }
        }
        // Nothing is read yet: the socket fills up, below the buffer, and the writer waits.
        #expect(await eventually { socket.statistics.waits > 0 })
        let full = socket.statistics.bytes
        #expect(full >= 510 && full < limit)
        start.signal()
        try await writer.value
        #expect(await eventually { reader.seen.withLock { $0.bytes.count } == image.count })
        socket.close(failing: TransportError(.other, "done"))
        #expect(await eventually { reader.seen.withLock { $0.finished } })

        let seen = reader.seen.withLock { $0 }
        #expect(seen.bytes == image)
        #expect(seen.largestWaiting < limit)
        #expect(seen.largestWaiting >= 510)
        let statistics = socket.statistics
        // The kernel's count adds each datagram's overhead: below the buffer plus one datagram.
        #expect(statistics.largestQueue > 510)
        #expect(statistics.largestQueue < limit + 4096)
        #expect(seen.largestQueued < limit + 4096)
    }

    @Test func withoutALimitTheSocketKeepsItsOwnBuffer() throws {
        let (writerEnd, readerEnd) = try #require(SocketCalls.seqpacketPair(nonBlocking: false))
        defer { SocketCalls.close(readerEnd) }
        let own = try #require(SocketCalls.sendBufferSize(writerEnd))
        let socket = try BlueZWriteSocket(taking: writerEnd, mtu: 517, label: "test")
        #expect(socket.statistics.queueLimit == own)
        socket.close(failing: TransportError(.other, "done"))
    }
}
#endif
