#if os(Linux)
import Foundation
import OTACore
import Synchronization
import Testing

@testable import OTATransportBlueZ

/// Delivery receipts through a scripted org.bluez: writes without response wait while the window
/// is unconfirmed, a receipt's answer lets them go on, and a device that cannot answer receipts
/// or a lost link never leaves a write waiting.
@Suite(.needsLibDBus) struct BlueZReceiptTests {
    static func image(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
    }

    /// The bytes whose writes returned.
    final class Returned: Sendable {
        let bytes = Mutex(0)
    }

    /// Writes `image` in `chunk`-byte writes without response on a task, counting the writes
    /// that returned.
    static func writeAll(
        _ image: [UInt8], chunk: Int, to transport: any Transport, counting returned: Returned = Returned()
    ) -> Task<Void, any Error> {
        Task {
            var offset = 0
            while offset < image.count {
                let end = min(offset + chunk, image.count)
                try await transport.write(Data(image[offset..<end]), to: FakeBlueZ.data, kind: .withoutResponse)
                returned.bytes.withLock { $0 += end - offset }
                offset = end
            }
        }
    }

    @Test func writesWaitForAReceiptOnceTheWindowIsUnconfirmed() async throws {
        var script = FakeBlueZ.Script()
        script.receiptDescriptor = .heldUntilReleased
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus) { $0.deliveryWindow = 4096 }.connectTransport()
            #expect(transport.link.summary?.contains("progress at most 4096 bytes ahead of the device") == true)
            let image = Self.image(20 * 510)
            let returned = Returned()
            let writer = Self.writeAll(image, chunk: 510, to: transport, counting: returned)

            // Eight writes (4080 bytes) fit in the window; the ninth waits for the receipt,
            // which the device holds.
            #expect(await eventually { fake.socketBytes == 8 * 510 && !fake.receiptReads.isEmpty })
            try await Task.sleep(for: .milliseconds(200))
            #expect(returned.bytes.withLock { $0 } == 8 * 510)
            #expect(fake.socketBytes == 8 * 510)
            #expect(transport.statistics.receiptWaits >= 1)

            fake.releaseReceipts()
            try await writer.value
            #expect(await eventually { fake.socketBytes == image.count })
            #expect(fake.datagrams.flatMap { $0 } == image)
            let statistics = transport.statistics
            #expect(statistics.deliveryWindow == 4096)
            #expect(statistics.receipts >= 2)
            #expect(statistics.largestUnconfirmed <= 4096)
            #expect(statistics.receiptsStopped == nil)
            await transport.disconnect()
        }
    }

    @Test func receiptsAnsweredAtOnceCostNoBytes() async throws {
        var script = FakeBlueZ.Script()
        script.receiptDescriptor = .answers
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus) { $0.deliveryWindow = 2048 }.connectTransport()
            let image = Self.image(100_000)
            try await Self.writeAll(image, chunk: 510, to: transport).value
            #expect(await eventually { fake.socketBytes == image.count })
            #expect(fake.datagrams.flatMap { $0 } == image)
            #expect(transport.statistics.receipts >= 1)
            #expect(transport.statistics.largestUnconfirmed <= 2048)
            await transport.disconnect()
        }
    }

    @Test func aDeviceThatRefusesReceiptsIsWrittenWithoutThem() async throws {
        var script = FakeBlueZ.Script()
        script.receiptDescriptor = .fails
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus) { $0.deliveryWindow = 2048 }.connectTransport()
            let image = Self.image(30_000)
            try await Self.writeAll(image, chunk: 510, to: transport).value
            #expect(await eventually { fake.socketBytes == image.count })
            #expect(fake.datagrams.flatMap { $0 } == image)
            #expect(transport.statistics.receiptsStopped?.contains("Read not permitted") == true)
            await transport.disconnect()
        }
    }

    @Test func aLostLinkFailsAWriteWaitingForAReceipt() async throws {
        var script = FakeBlueZ.Script()
        script.receiptDescriptor = .heldUntilReleased
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus) { $0.deliveryWindow = 2048 }.connectTransport()
            let writer = Self.writeAll(Self.image(20 * 510), chunk: 510, to: transport)
            #expect(await eventually { fake.socketBytes == 4 * 510 && !fake.receiptReads.isEmpty })
            try await fake.disconnectDevice()
            await #expect {
                try await writer.value
            } throws: { error in
                guard let error = error as? TransportError, case .disconnected = error.kind else { return false }
                return true
            }
            fake.releaseReceipts()
        }
    }

    @Test func withoutADescriptorOrWhenTurnedOffTheSummarySaysProgressCountsTheQueue() async throws {
        try await FakeBlueZ.with { bus, _ in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            #expect(transport.link.summary?.contains("no delivery receipts (the device has no Client Characteristic") == true)
            await transport.disconnect()
        }
        var script = FakeBlueZ.Script()
        script.receiptDescriptor = .answers
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus) { $0.deliveryWindow = nil }.connectTransport()
            #expect(transport.link.summary?.contains("no delivery receipts (turned off)") == true)
            try await transport.write(Data(Self.image(510)), to: FakeBlueZ.data, kind: .withoutResponse)
            #expect(fake.receiptReads.isEmpty)
            await transport.disconnect()
        }
    }

    /// A request the app writes itself (a Nordic Control Point request) travels behind the
    /// write commands before it, so its answer lets held-back writes go on although the receipt
    /// read is never answered (issue 18: a protocol that asks something every object needs no
    /// receipt reads, which queue in front of its requests).
    @Test func anAnsweredWriteRequestConfirmsTheWritesBeforeIt() async throws {
        var script = FakeBlueZ.Script()
        script.receiptDescriptor = .heldUntilReleased
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus) { $0.deliveryWindow = 4096 }.connectTransport()
            let image = Self.image(16 * 510)
            let returned = Returned()
            let writer = Self.writeAll(image, chunk: 510, to: transport, counting: returned)
            // Eight writes fit in the window; the ninth waits for the held receipt.
            #expect(await eventually { returned.bytes.withLock { $0 } == 8 * 510 && !fake.receiptReads.isEmpty })
            try await transport.write(Data([0x03]), to: FakeBlueZ.control, kind: .withResponse)
            // The request's answer confirmed the 4080 bytes: the rest goes while the receipt is
            // still held. (Without that, only the held read's 5 s timeout would let them go, by
            // stopping receipts, which the next line catches.)
            #expect(await eventually { fake.socketBytes == image.count })
            try await writer.value
            #expect(transport.statistics.receiptsStopped == nil)
            #expect(fake.datagrams.flatMap { $0 } == image)
            #expect(transport.statistics.requestReceipts == 1)
            #expect(transport.statistics.receipts == 0)
            fake.releaseReceipts()
            await transport.disconnect()
        }
    }

    @Test func writeRequestsNeedNoReceipts() async throws {
        var script = FakeBlueZ.Script()
        script.receiptDescriptor = .answers
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus) { $0.writeOrdering = .requests }.connectTransport()
            for _ in 0..<10 {
                try await transport.write(Data(Self.image(510)), to: FakeBlueZ.data, kind: .withoutResponse)
            }
            #expect(fake.receiptReads.isEmpty)
            #expect(transport.link.summary?.contains("delivery receipts") == false)
            await transport.disconnect()
        }
    }
}
#endif
