import Foundation
import OTACore
import Testing

@Suite struct TransportWriteCheckTests {
    private static let service = GATTUUID("0000fff0-0000-1000-8000-00805f9b34fb")!
    private static let data = CharacteristicID(service: service, characteristic: GATTUUID("0000fff1-0000-1000-8000-00805f9b34fb")!)
    private static let control = CharacteristicID(service: service, characteristic: GATTUUID("0000fff2-0000-1000-8000-00805f9b34fb")!)

    /// A link of 20-byte writes without response and 40-byte writes with response, whose data
    /// characteristic takes only writes without response.
    private final class Link: Transport {
        let link = LinkParameters(attMTU: 23, maximumWriteWithoutResponse: 20, maximumWriteWithResponse: 40)
        let characteristics: [CharacteristicID: CharacteristicProperties] = [
            TransportWriteCheckTests.data: [.writeWithoutResponse], TransportWriteCheckTests.control: [.write, .notify],
        ]
        func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {}
        func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data { Data() }
        func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> { AsyncStream { $0.finish() } }
        var disconnections: AsyncStream<DisconnectReason> { AsyncStream { _ in } }
        func disconnect() async {}
    }

    @Test func aWriteThatFitsAnAllowedCharacteristicPasses() throws {
        let link = Link()
        try link.requireWritable(Data(count: 20), to: Self.data, kind: .withoutResponse)
        try link.requireWritable(Data(count: 40), to: Self.control, kind: .withResponse)
    }

    @Test func aValueLongerThanOneWriteOfItsKindIsRefusedWithBothLengths() throws {
        let link = Link()
        let error = try #require(throws: TransportError.self) { try link.requireWritable(Data(count: 21), to: Self.data, kind: .withoutResponse) }
        #expect(error.kind == .valueTooLong(length: 21, maximum: 20))
        #expect(error.message == "a 21-byte write without response exceeds the link's maximum of 20 bytes (ATT MTU 23)")
        #expect(throws: TransportError.self) { try link.requireFits(Data(count: 41), in: .withResponse) }
    }

    @Test func aKindTheCharacteristicDoesNotAllowIsRefusedBeforeTheLength() throws {
        let link = Link()
        let error = try #require(throws: TransportError.self) { try link.requireWritable(Data(count: 99), to: Self.data, kind: .withResponse) }
        #expect(error.kind == .notPermitted)
        let unknown = CharacteristicID(service: Self.service, characteristic: GATTUUID("0000fff9-0000-1000-8000-00805f9b34fb")!)
        let missing = try #require(throws: TransportError.self) { try link.requireWritable(Data(), to: unknown, kind: .withoutResponse) }
        #expect(missing.kind == .unknownCharacteristic(unknown))
    }
}
