import Foundation
import OTACore

/// The app side of Lumen: begin, every chunk written with response, end with the CRC-32.
///
/// Deliberately simple (stop-and-wait): slow, but it needs no flow control of its own, because
/// each write waits for the bulb's ATT acknowledgement.
public struct LumenClient: UpdateProtocol {
    /// Creates a client.
    public init() {}

    /// Each data write carries Lumen's data header and is written with response.
    public var dataWrites: DataWriteShape { DataWriteShape(headerLength: LumenCommand.dataHeaderLength, kind: .withResponse) }

    /// The one Lumen OTA characteristic (write, notify).
    public var requirements: [CharacteristicRequirement] {
        [CharacteristicRequirement("Lumen OTA", LumenProtocol.characteristic, properties: [.write, .notify])]
    }

    /// Sends `image`: begin, the chunks, end.
    public func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
        guard let size = UInt32(exactly: image.count) else { throw OTAError(.imageTooLarge, "Lumen carries at most 4 GiB") }
        let characteristic = LumenProtocol.characteristic
        let plan = context.chunkPlan
        try await context.withNotifications(from: characteristic) { (inbox) throws(OTAError) in
            try await context.write(LumenCommand.begin(size: size).encoded, to: characteristic, kind: .withResponse, purpose: "begin")
            try Self.check(try await inbox.next(awaiting: "begin reply"), expecting: "b", step: "begin")
            context.enter(.transferring)
            try await context.withStallWatchdog {
                var offset = 0
                while offset < image.count {
                    let chunk = plan.chunk(at: offset, in: image.count)
                    try await context.writeData(LumenCommand.data(image[chunk]).encoded, to: characteristic, covering: chunk)
                    offset = chunk.upperBound
                }
            }
            context.enter(.verifying)
            try await context.write(LumenCommand.end(crc: image.crc32).encoded, to: characteristic, kind: .withResponse, purpose: "end")
            try Self.check(try await inbox.next(timeout: context.configuration.verifyTimeout, awaiting: "end reply"), expecting: "e", step: "end")
        }
        return .accepted
    }

    private static func check(_ reply: Data, expecting code: Character, step: String) throws(OTAError) {
        let bytes = [UInt8](reply)
        guard bytes.count == 2, bytes[0] == code.asciiValue else {
            throw OTAError(.malformedResponse, "Lumen bulb sent a malformed \(step) reply (\(bytes.count) bytes)")
        }
        switch LumenStatus(rawValue: bytes[1]) {
        case .ok: return
        case .badCRC: throw OTAError(.verificationFailed, "Lumen bulb rejected \(step): CRC mismatch")
        case .badSize: throw OTAError(.verificationFailed, "Lumen bulb rejected \(step): size mismatch")
        case .tooLarge: throw OTAError(.imageTooLarge, "Lumen bulb rejected \(step): image too large for its slot")
        case nil: throw OTAError(.deviceRejected, "Lumen bulb rejected \(step): status 0x\(String(bytes[1], radix: 16))")
        }
    }
}
