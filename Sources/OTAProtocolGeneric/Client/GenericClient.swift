import Foundation
import OTACore

/// The client side of the generic two-characteristic protocol: START, stream, COMMIT.
///
/// Drives a ``GenericUpdateStateMachine`` over an ``UpdateContext``. The protocol cannot resume:
/// after a lost link (or a COMMIT answered with a size mismatch: bytes were lost) the engine
/// reconnects and runs it again from byte 0 — START resets the device — as often as its
/// ``ResumePolicy`` allows.
public struct GenericClient: UpdateProtocol, AbortableUpdateProtocol {
    /// The GATT layout.
    public var profile: GenericGATTProfile

    /// Creates a client.
    public init(profile: GenericGATTProfile = GenericGATTProfile()) {
        self.profile = profile
    }

    /// OTA Data (write without response) and OTA Control (write, notify).
    public var requirements: [CharacteristicRequirement] {
        [
            CharacteristicRequirement("OTA Data", profile.data, properties: .writeWithoutResponse),
            CharacteristicRequirement("OTA Control", profile.control, properties: [.write, .notify]),
        ]
    }

    /// Writes ABORT (`03`) on OTA Control. The device does not reply and has no status to read,
    /// so whether an update was in progress stays unknown.
    public func abort(context: UpdateContext) async throws(OTAError) -> AbortOutcome {
        try await context.write(GenericCommand.abort.encoded, to: profile.control, kind: .withResponse, purpose: "ABORT")
        return .unconfirmed
    }

    /// Sends `image`: START, the whole image on OTA Data, COMMIT.
    public func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
        guard let size = UInt32(exactly: image.count) else {
            throw OTAError(.imageTooLarge, "\(image.name) is \(image.count) bytes; the generic protocol carries at most 4 GiB")
        }
        var machine = GenericUpdateStateMachine(size: size, crc: image.crc32)
        let profile = self.profile
        return try await context.withNotifications(from: profile.control) { (inbox) throws(OTAError) -> UpdateOutcome in
            var action = machine.start()
            while true {
                switch action {
                case .sendAndAwaitReply(let command):
                    let isCommit = if case .commit = command { true } else { false }
                    if isCommit { context.enter(.verifying) }
                    try await context.write(command.encoded, to: profile.control, kind: .withResponse, purpose: command.description)
                    let reply = try await inbox.next(
                        timeout: isCommit ? context.configuration.verifyTimeout : nil,
                        awaiting: "\(command) reply"
                    )
                    action = machine.receive(reply)
                case .streamImage:
                    context.enter(.transferring)
                    try await context.stream(image, range: 0..<image.count, to: profile.data)
                    action = machine.streamFinished()
                case .finished:
                    return .accepted
                case .fail(let error):
                    throw error
                }
            }
        }
    }
}
