import Foundation
import OTACore

/// The client side of Nordic Secure DFU over BLE, as Nordic's own apps drive an nRF5 SDK
/// bootloader: init packet as a command object, then the image as data objects of the size the
/// bootloader reports, each created, streamed, checksummed and executed, with packet receipt
/// notifications and resume from the bootloader's offset.
///
/// A thin driver: the wire logic is ``NordicDFUStateMachine`` (and ``ButtonlessEntryStateMachine``
/// for a device still running its application); this type performs their actions through the
/// ``UpdateContext``.
///
/// The image's `"init-packet"` attachment is the `.dat`; ``NordicDFUProtocol`` loads both from a
/// DFU `.zip`.
public struct NordicDFUClient: ResumableUpdateProtocol {
    /// Settings.
    public var configuration: NordicDFUConfiguration

    /// The attachment key of the init packet.
    public static let initPacketKey = "init-packet"

    /// What Select(command) and Select(data) reported while finding the resume point, handed to
    /// the run that follows.
    public typealias Checkpoint = NordicDFUCheckpoint

    /// Creates a client.
    public init(configuration: NordicDFUConfiguration = NordicDFUConfiguration()) {
        self.configuration = configuration
    }

    /// Packets are a multiple of 4 bytes, as the bootloader writes flash in words.
    public var dataWrites: DataWriteShape { DataWriteShape(alignment: 4) }

    /// The bootloader's characteristics. They are checked in ``run(_:resumingFrom:context:)``
    /// rather than by the engine, because a device running its application shows the buttonless
    /// characteristic instead and must first be switched.
    public var requirements: [CharacteristicRequirement] { [] }

    /// Refuses an image without its init packet before connecting: the bootloader takes nothing
    /// without one.
    public func check(_ image: FirmwareImage) throws(OTAError) {
        _ = try Self.initPacket(of: image)
    }

    /// The image's init packet.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` when the image has none: checked before
    ///   connecting (``check(_:)``) and again by the state machine.
    static func initPacket(of image: FirmwareImage) throws(OTAError) -> Data {
        guard let initPacket = image.attachments[initPacketKey], !initPacket.isEmpty else {
            throw OTAError(.invalidImage, "\(image.name): Nordic DFU needs an init packet (.dat); give the DFU .zip package or a .bin with its .dat")
        }
        return initPacket
    }

    private static let bootloaderRequirements = [
        CharacteristicRequirement("DFU Control Point", DFUGATTProfile.controlPoint, properties: [.write, .notify]),
        CharacteristicRequirement("DFU Packet", DFUGATTProfile.packet, properties: .writeWithoutResponse),
    ]

    /// Selects the command object, then the data object (last, so the data object is current
    /// when the run starts): which init packet the bootloader holds, and its offset and CRC over
    /// the image.
    ///
    /// `nil` when the bootloader holds no image data, or when the device runs its application
    /// (no Control Point). When the data was received under another init packet, the point says
    /// the device holds none of this image (offset 0) but keeps the checkpoint: the run then
    /// creates this init packet without selecting the command object again.
    public func resumePoint(for image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> ResumePoint<NordicDFUCheckpoint>? {
        guard context.characteristics[DFUGATTProfile.controlPoint] != nil else { return nil }
        let checkpoint = try await context.withNotifications(from: DFUGATTProfile.controlPoint) { (inbox) throws(OTAError) in
            let command = try await Self.select(.command, inbox: inbox, context: context)
            let data = try await Self.select(.data, inbox: inbox, context: context)
            return NordicDFUCheckpoint(command: command, data: data)
        }
        let held = checkpoint.data.offset
        guard held > 0 else { return nil }
        guard let initPacket = image.attachments[Self.initPacketKey], checkpoint.holdsWhole(initPacket: initPacket) else {
            return ResumePoint(
                offset: 0,
                detail: "bootloader holds \(held) bytes under another init packet; this image's init packet replaces it, and the data starts over",
                checkpoint: checkpoint
            )
        }
        return ResumePoint(offset: held, detail: "bootloader holds \(held) of \(image.count) bytes under this init packet", checkpoint: checkpoint)
    }

    /// Writes Select(`type`) and returns its answer.
    private static func select(_ type: DFUObjectType, inbox: NotificationInbox, context: UpdateContext) async throws(OTAError) -> DFUObjectSelection {
        let request = DFURequest.select(type)
        try await context.write(request.encoded, to: DFUGATTProfile.controlPoint, kind: .withResponse, purpose: request.description)
        while true {
            switch DFUAnswer(try await inbox.next(awaiting: "response to \(request)"), to: request) {
            case .response(let response):
                guard response.result == .success else {
                    throw OTAError(.deviceRejected, "bootloader rejected \(response.failureDescription(for: request.description))")
                }
                guard let selection = DFUObjectSelection(response) else { throw OTAError(.malformedResponse, "malformed Select response") }
                return selection
            case .lateReceipt: continue
            case .malformed(let error): throw error
            }
        }
    }

    /// Sends the init packet and the image; a device running its application is first switched
    /// to its bootloader, and the run ends asking the engine to reconnect.
    public func run(
        _ image: FirmwareImage, resumingFrom point: ResumePoint<NordicDFUCheckpoint>?, context: UpdateContext
    ) async throws(OTAError) -> UpdateOutcome {
        var machine = try NordicDFUStateMachine(
            image: image, payloadSize: context.chunkPlan.payloadSize, configuration: configuration, resumingFrom: point?.checkpoint
        )
        let characteristics = context.characteristics
        if characteristics[DFUGATTProfile.controlPoint] == nil, characteristics[DFUGATTProfile.buttonless] != nil {
            let name = try await Self.enterBootloader(context: context)
            return .reconnect(
                reason: "device restarting into its DFU bootloader", after: .zero,
                expecting: BootloaderAddress.reappearance(of: context.deviceAddress, advertisedName: name)
            )
        }
        try context.require(Self.bootloaderRequirements, hint: "is the device in its Secure DFU bootloader (or does its application offer buttonless DFU)?")
        try await context.withNotifications(from: DFUGATTProfile.controlPoint) { (inbox) throws(OTAError) in
            try await Self.drive(&machine, image: image, inbox: inbox, context: context)
        }
        return .accepted
    }

    // MARK: - Driver

    /// Performs the machine's actions until it finishes or fails.
    private static func drive(
        _ machine: inout NordicDFUStateMachine, image: FirmwareImage, inbox: NotificationInbox, context: UpdateContext
    ) async throws(OTAError) {
        let plan = context.chunkPlan
        let initPacket = image.attachments[initPacketKey] ?? Data()
        var action = machine.start()
        while true {
            switch action {
            case .send(let request, let wait):
                try await context.write(request.encoded, to: DFUGATTProfile.controlPoint, kind: .withResponse, purpose: request.description)
                action = machine.received(try await inbox.next(timeout: timeout(wait, context), awaiting: "response to \(request)"))
            case .streamThenQueue(let range, let requests):
                context.rewound(to: range.lowerBound)
                try await context.withStallWatchdog { () async throws -> Void in
                    var offset = range.lowerBound
                    while offset < range.upperBound {
                        let chunk = plan.chunk(at: offset, in: range.upperBound)
                        try await context.writeData(image[chunk], to: DFUGATTProfile.packet, covering: chunk)
                        offset = chunk.upperBound
                    }
                }
                // Each write waits for its ATT response only (the SoftDevice acknowledges at
                // once and queues the request); the answers come as notifications.
                for request in requests {
                    try await context.write(request.encoded, to: DFUGATTProfile.controlPoint, kind: .withResponse, purpose: request.description)
                }
                action = machine.received(
                    try await inbox.next(
                        timeout: timeout(.response, context), awaiting: "answers to \(requests.map { $0.description }.joined(separator: ", "))"))
            case .listen(let awaited, let wait):
                guard wait == .receipt else {
                    action = machine.received(try await inbox.next(timeout: timeout(wait, context), awaiting: awaited.description))
                    continue
                }
                switch try await awaitReceipt(inbox, wait: machine.receiptWait) {
                case .receipt(let notification): action = machine.received(notification)
                default: action = machine.receiptMissing()
                }
            case .writeInitPacket(let range):
                var offset = range.lowerBound
                while offset < range.upperBound {
                    let chunk = plan.chunk(at: offset, in: range.upperBound)
                    try await context.write(initPacket[chunk], to: DFUGATTProfile.packet, kind: .withoutResponse, purpose: "the init packet")
                    offset = chunk.upperBound
                }
                action = machine.streamed()
            case .stream(let range, let receipt):
                let receiptWait = machine.receiptWait
                context.rewound(to: range.lowerBound)
                let end = try await context.withStallWatchdog { () async throws -> StreamEnd in
                    var offset = range.lowerBound
                    while offset < range.upperBound {
                        let chunk = plan.chunk(at: offset, in: range.upperBound)
                        try await context.writeData(image[chunk], to: DFUGATTProfile.packet, covering: chunk)
                        offset = chunk.upperBound
                    }
                    return receipt ? try await awaitReceipt(inbox, wait: receiptWait) : .streamed
                }
                switch end {
                case .streamed: action = machine.streamed()
                case .receipt(let notification): action = machine.received(notification)
                case .receiptMissing: action = machine.receiptMissing()
                }
            case .sleep(let duration, let purpose):
                try await context.sleep(for: duration, purpose: purpose)
                action = machine.delayElapsed()
            case .enter(let state):
                context.enter(state)
                action = machine.proceed()
            case .acknowledged(let total):
                context.acknowledged(total: total)
                action = machine.proceed()
            case .note(let text):
                context.note(text)
                action = machine.proceed()
            case .finished:
                return
            case .fail(let error):
                throw error
            }
        }
    }

    /// How a run of packets ended.
    private enum StreamEnd: Sendable {
        /// Written; no receipt was asked for.
        case streamed
        /// The packet receipt that follows them.
        case receipt(Data)
        /// No receipt within ``NordicDFUStateMachine/receiptWait``.
        case receiptMissing
    }

    /// The packet receipt after a run of packets, or ``StreamEnd/receiptMissing`` when none
    /// comes in time: a packet was lost, and the bootloader's count never reaches the receipt.
    private static func awaitReceipt(_ inbox: NotificationInbox, wait: Duration) async throws(OTAError) -> StreamEnd {
        do {
            return .receipt(try await inbox.next(timeout: wait, awaiting: "packet receipt notification"))
        } catch {
            guard error.code == .timeout else { throw error }
            return .receiptMissing
        }
    }

    private static func timeout(_ wait: NordicDFUStateMachine.Wait, _ context: UpdateContext) -> Duration? {
        switch wait {
        case .response: nil
        case .verification: context.configuration.verifyTimeout
        case .receipt: NordicDFUStateMachine.receiptTimeout
        }
    }

    // MARK: - Buttonless

    /// Switches a device from its application to its bootloader, told to advertise a name random
    /// to this update. The link drops; the caller asks the engine to reconnect to the bootloader
    /// of this device only.
    ///
    /// - Returns: the name the bootloader advertises, `nil` when the application could not set one.
    private static func enterBootloader(context: UpdateContext) async throws(OTAError) -> String? {
        var machine = ButtonlessEntryStateMachine(advertisingName: ButtonlessEntryStateMachine.advertisingName(random: context.randomNumber()))
        let name = try await context.withNotifications(from: DFUGATTProfile.buttonless) { (inbox) throws(OTAError) -> String? in
            var action = machine.start()
            while true {
                switch action {
                case .send(let request):
                    try await context.write(request.encoded, to: DFUGATTProfile.buttonless, kind: .withResponse, purpose: "buttonless \(request)")
                    action = machine.received(try await inbox.next(awaiting: "buttonless DFU response"))
                case .restarting(let name):
                    return name
                case .fail(let error):
                    throw error
                }
            }
        }
        if let name {
            context.note("the application restarts into its bootloader, which advertises as \(name) (address + 1 without bonds)")
        } else {
            context.note(
                "the application restarts into its bootloader; it cannot be told a name, so only its address (the same, or + 1 without bonds) identifies it")
        }
        return name
    }
}
