import Foundation
import OTACore

/// The app side of Espressif's `ble_ota`: START, the image sector by sector (each sector's
/// packets, then its ACK), STOP. A thin driver over ``EspressifUpdateStateMachine``, through the
/// ``UpdateContext`` only.
///
/// Not resumable: the component has no command that reports where a session stands, rejects
/// START while one is open, and its sector index must start at 0, so after a lost link the engine
/// runs the update again from byte 0 (a restart); the first START rejected is answered with STOP
/// and START again, which clears a session the lost connection left open.
public struct EspressifClient: UpdateProtocol {
    /// Settings.
    public var configuration: EspressifConfiguration

    /// Creates a client.
    public init(configuration: EspressifConfiguration = EspressifConfiguration()) {
        self.configuration = configuration
    }

    private var profile: EspressifGATTProfile { configuration.profile }

    /// The firmware and command characteristics: written with response (the `ble_ota` builds
    /// declare nothing else) or, on `ble_ota_raw`, the firmware one without response; both must
    /// indicate (the component declares Indicate and sends its ACKs as notifications).
    public var requirements: [CharacteristicRequirement] {
        let write: CharacteristicProperties = configuration.variant.acceptsWriteWithoutResponse ? .writeWithoutResponse : .write
        return [
            CharacteristicRequirement("ESP OTA firmware (0x8020)", profile.firmware, properties: [write, .indicate]),
            CharacteristicRequirement("ESP OTA command (0x8022)", profile.command, properties: [.write, .indicate]),
        ]
    }

    /// A 3-byte header (sector index, sequence number) on every packet; with response unless
    /// the device runs `ble_ota_raw`.
    public var dataWrites: DataWriteShape {
        DataWriteShape(
            headerLength: EspressifFirmwarePacket.headerLength, alignment: 1,
            kind: configuration.variant.acceptsWriteWithoutResponse ? .withoutResponse : .withResponse)
    }

    /// Refuses, before connecting, an image that is not an ESP-IDF app image or whose appended
    /// SHA-256 does not match (unless the `image` parameter is `none`), and one the sector index
    /// cannot address.
    public func check(_ image: FirmwareImage) throws(OTAError) {
        guard image.count <= Int(UInt16.max) * EspressifFirmwarePacket.sectorSize else {
            throw OTAError(
                .imageTooLarge, "\(MessageText.name(image.name)) is \(image.count) bytes; the sector index addresses at most 65535 sectors of 4096 bytes")
        }
        if configuration.imageCheck == .espApp { try EspressifAppImageFormat.check(image) }
    }

    /// Sends `image`. It is checked again first (``check(_:)``: the `ota` tool checks before
    /// connecting, an app driving the engine directly may not).
    public func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
        try check(image)
        let payloadSize = context.chunkPlan.payloadSize
        guard payloadSize >= EspressifFirmwarePacket.minimumPayload else {
            throw OTAError(
                .incompatible,
                "packets carry \(payloadSize) bytes at this link's write length; a 4096-byte sector needs at least \(EspressifFirmwarePacket.minimumPayload) (ATT MTU 23)"
            )
        }
        var machine = EspressifUpdateStateMachine(length: image.count, sectorRetries: configuration.sectorRetries)
        let profile = self.profile
        return try await context.withNotifications(from: profile.command) { (commands) throws(OTAError) -> UpdateOutcome in
            try await context.withNotifications(from: profile.firmware) { (acks) throws(OTAError) -> UpdateOutcome in
                var action = machine.start()
                while true {
                    switch action {
                    case .sendCommand(let command):
                        let stopping = command == .stop && machine.state == .stopping
                        if stopping { context.enter(.verifying) }
                        try await context.write(command.encoded, to: profile.command, kind: .withResponse, purpose: command.description)
                        let reply = try await commands.next(
                            timeout: stopping ? context.configuration.verifyTimeout : nil, awaiting: "the ACK of \(command)")
                        action = machine.receiveCommandAck(reply)
                    case .sendSector(let sector, let retry):
                        if let retry {
                            context.note(retry)
                            try await Self.discardStaleAcks(acks)
                            context.rewound(to: sector.range.lowerBound)
                        } else if sector.index == 0 {
                            context.enter(.transferring)
                        }
                        try await Self.send(sector, of: image, payloadSize: payloadSize, to: profile.firmware, context: context)
                        action = try await Self.awaitAck(of: sector.index, &machine, inbox: acks, context: context)
                    case .awaitSectorAck:
                        action = try await Self.awaitAck(of: nil, &machine, inbox: acks, context: context)
                    case .finished:
                        if machine.resentSectors > 0 { context.note("\(machine.resentSectors) sector(s) sent again") }
                        return .accepted
                    case .fail(let error):
                        throw error
                    }
                }
            }
        }
    }

    /// Writes one sector's packets, from packet 0, under the stall watchdog.
    private static func send(
        _ sector: EspressifUpdateStateMachine.Sector,
        of image: FirmwareImage,
        payloadSize: Int,
        to characteristic: CharacteristicID,
        context: UpdateContext
    ) async throws(OTAError) {
        let writes = EspressifFirmwarePacket.writes(sector: sector.index, data: try image[sector.range], payloadSize: payloadSize)
        let base = sector.range.lowerBound
        try await context.withStallWatchdog {
            for (bytes, range) in writes {
                try await context.writeData(bytes, to: characteristic, covering: (base + range.lowerBound)..<(base + range.upperBound))
            }
        }
    }

    /// How long the link must stay quiet before a sector is sent again.
    static let staleAckWindow = Duration.milliseconds(250)

    /// Lets the answers to packets already sent pass before a sector goes again: `ble_ota_raw`
    /// answers every packet after a gap (and NimBLE or Bluedroid a wrong index) with its own
    /// error ACK, and counting each as a fresh failure would spend the sector's retries on one
    /// fault. Reads until the firmware characteristic is quiet for ``staleAckWindow`` (on the
    /// engine's clock); a lost link still fails.
    private static func discardStaleAcks(_ inbox: NotificationInbox) async throws(OTAError) {
        while true {
            do {
                _ = try await inbox.next(timeout: staleAckWindow, awaiting: "stale sector ACKs")
            } catch {
                guard error.code == .timeout else { throw error }
                return
            }
        }
    }

    /// Waits for a sector ACK (at most the response timeout) and feeds it, or the silence, to the machine.
    private static func awaitAck(
        of sector: UInt16?,
        _ machine: inout EspressifUpdateStateMachine,
        inbox: NotificationInbox,
        context: UpdateContext
    ) async throws(OTAError) -> EspressifUpdateStateMachine.Action {
        let value: Data
        do {
            value = try await inbox.next(awaiting: sector.map { "the ACK of sector \($0)" } ?? "a sector ACK")
        } catch {
            guard error.code == .timeout else { throw error }
            return machine.sectorAckTimedOut()
        }
        let action = machine.receiveSectorAck(value)
        context.acknowledged(total: machine.acknowledgedBytes)
        return action
    }
}
