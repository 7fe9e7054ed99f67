import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Testing

@testable import OTAProtocolMCUmgr

/// Random and mutated input to both sides: nothing crashes, and the client fails with a typed
/// one-line error.
@Suite struct MCUmgrHostileInputTests {
    static func mutated(_ frame: Data, _ random: inout SeededRandom) -> Data {
        var bytes = [UInt8](frame)
        switch random.next() % 4 {
        case 0:
            for _ in 0..<(1 + Int(random.next() % 4)) where !bytes.isEmpty {
                bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
            }
        case 1: bytes = Array(bytes.prefix(Int(random.next() % UInt64(bytes.count + 1))))
        case 2: bytes += (0..<Int(random.next() % 16)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        default: bytes = (0..<Int(random.next() % 64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        }
        return Data(bytes)
    }

    @Test func theUploadMachineSurvivesMutatedResponses() {
        var random = SeededRandom(seed: 12)
        let image = Data(repeating: 0x5A, count: 10_000)
        var failures: Set<OTAError.Code> = []
        for _ in 0..<3000 {
            var machine = MCUmgrUploadStateMachine(
                image: .inMemory(image), sha: Data(repeating: 1, count: 32), settings: .init(frameLimit: 512, window: 4, writeLength: 244))
            guard case .send(let requests, _) = machine.start() else { continue }
            _ = machine.sent()
            let good = SMPMessage(
                operation: .writeResponse, group: 1, command: 1, sequence: requests[0].sequence,
                payload: ImageUploadResponse(offset: requests[0].range.upperBound).payload
            ).encoded
            var reassembler = SMPReassembler()
            guard let frames = try? reassembler.append(Self.mutated(good, &random)) else { continue }
            for frame in frames {
                if case .fail(let error) = machine.received(frame) {
                    failures.insert(error.code)
                    #expect(!error.message.contains("\n"))
                }
            }
        }
        #expect(failures.isSubset(of: [.malformedResponse, .deviceRejected, .verificationFailed]))
        #expect(failures.contains(.malformedResponse))
    }

    @Test func theDeviceModelSurvivesMutatedRequests() throws {
        var random = SeededRandom(seed: 34)
        let device = DeviceUnderTest()
        let requests: [MCUmgrRequest] = [
            .readImageState, .parameters, .reset, .erase(slot: 1), .setImageState(hash: Data(repeating: 3, count: 32), confirm: true),
            .upload(ImageUploadRequest(length: 5000, offset: 0, sha: Data(repeating: 1, count: 32), data: Data(repeating: 7, count: 300))),
            .upload(ImageUploadRequest(offset: 300, data: Data(repeating: 7, count: 300))),
        ]
        for round in 0..<5000 {
            let request = requests[round % requests.count]
            let frame = request.encoded(sequence: UInt8(truncatingIfNeeded: round))
            _ = device.model.write(Self.mutated(frame, &random), to: device.model.profile.smp, kind: .withoutResponse, peripheral: device.peripheral)
            if round % 50 == 0 { device.model.disconnected() }
        }
        // Still answering.
        device.model.disconnected()
        var fresh = device
        _ = device.peripheral.takeNotifications()
        #expect(try fresh.state().slot(0)?.version == "1.0.0")
    }
}
