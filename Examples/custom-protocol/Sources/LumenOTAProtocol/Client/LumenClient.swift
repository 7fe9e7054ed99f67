import Foundation
import OTACore

/// The app side of Lumen: begin, every chunk written with response, end with the CRC-32.
///
/// A thin driver over ``LumenUpdateStateMachine``, through the ``UpdateContext`` only.
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
        var machine = LumenUpdateStateMachine(size: size, crc: image.crc32)
        return try await context.withNotifications(from: characteristic) { (inbox) throws(OTAError) -> UpdateOutcome in
            var action = machine.start()
            while true {
                switch action {
                case .sendAndAwaitReply(let command):
                    let isEnd = if case .end = command { true } else { false }
                    if isEnd { context.enter(.verifying) }
                    try await context.write(command.encoded, to: characteristic, kind: .withResponse, purpose: command.description)
                    let reply = try await inbox.next(
                        timeout: isEnd ? context.configuration.verifyTimeout : nil,
                        awaiting: "\(command) reply"
                    )
                    action = machine.receive(reply)
                case .sendImage:
                    context.enter(.transferring)
                    // The plan's chunks leave room for the data header; each goes with response.
                    try await context.stream(image, range: 0..<image.count, to: characteristic) { _, chunk in
                        LumenCommand.data(chunk).encoded
                    }
                    action = machine.imageSent()
                case .finished:
                    return .accepted
                case .fail(let error):
                    throw error
                }
            }
        }
    }
}
