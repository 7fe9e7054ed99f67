import Foundation
import OTACore

/// The client side of Nordic Secure DFU over BLE, as Nordic's own apps drive an nRF5 SDK
/// bootloader: init packet as a command object, then the image as data objects of the size the
/// bootloader reports, each created, streamed, checksummed and executed, with packet receipt
/// notifications and resume from the bootloader's offset.
///
/// The image's `"init-packet"` attachment is the `.dat`; ``NordicDFUProtocol`` loads both from a
/// DFU `.zip`.
public struct NordicDFUClient: ResumableUpdateProtocol {
    /// Settings.
    public var configuration: NordicDFUConfiguration

    /// The attachment key of the init packet.
    public static let initPacketKey = "init-packet"

    /// Creates a client.
    public init(configuration: NordicDFUConfiguration = NordicDFUConfiguration()) {
        self.configuration = configuration
    }

    /// Data packets are word-aligned (4-byte multiples), written without response.
    public var dataWrites: DataWriteShape { DataWriteShape(alignment: 4) }

    /// The bootloader's characteristics. They are checked in ``run(_:context:)`` rather than by
    /// the engine, because a device running its application shows the buttonless characteristic
    /// instead and must first be switched.
    public var requirements: [CharacteristicRequirement] { [] }

    private static let bootloaderRequirements = [
        CharacteristicRequirement("DFU Control Point", DFUGATTProfile.controlPoint, properties: [.write, .notify]),
        CharacteristicRequirement("DFU Packet", DFUGATTProfile.packet, properties: .writeWithoutResponse),
    ]

    /// Asks the bootloader (Select data) how much of the image it holds.
    public func resumePoint(for image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> ResumePoint<Void>? {
        try await context.withNotifications(from: DFUGATTProfile.controlPoint) { (inbox) throws(OTAError) in
            let response = try await Self.request(.select(.data), inbox: inbox, context: context)
            guard response.values.count == 3, response.values[1] > 0 else { return nil }
            return ResumePoint(offset: Int(response.values[1]), detail: "bootloader holds \(response.values[1]) of \(image.count) bytes")
        }
    }

    /// Sends the init packet and the image; from an application with buttonless DFU, first
    /// switches it to its bootloader and asks the engine to reconnect.
    public func run(_ image: FirmwareImage, resumingFrom point: ResumePoint<Void>?, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
        guard let initPacket = image.attachments[Self.initPacketKey], !initPacket.isEmpty else {
            throw OTAError(.invalidImage, "\(image.name): Nordic DFU needs an init packet (.dat); give the DFU .zip package or a .bin with its .dat")
        }
        let characteristics = context.characteristics
        if characteristics[DFUGATTProfile.controlPoint] == nil, characteristics[DFUGATTProfile.buttonless] != nil {
            try await Self.enterBootloader(image: image, context: context)
            return .reconnect(reason: "device restarting into its DFU bootloader", after: context.configuration.resume.initialDelay)
        }
        try context.require(
            Self.bootloaderRequirements,
            hint: "is the device in its Secure DFU bootloader (or does its application offer buttonless DFU)?"
        )
        let plan = context.chunkPlan
        let configuration = self.configuration
        try await context.withNotifications(from: DFUGATTProfile.controlPoint) { (inbox) throws(OTAError) in
            try await Self.sendInitPacket(initPacket, plan: plan, inbox: inbox, context: context)
            try await Self.sendFirmware(image, plan: plan, configuration: configuration, inbox: inbox, context: context)
        }
        return .accepted
    }

    // MARK: - Buttonless

    /// Switches a device from its application to its bootloader: set the name the bootloader
    /// will advertise, then ask it to restart. The run then asks the engine to reconnect.
    private static func enterBootloader(image: FirmwareImage, context: UpdateContext) async throws(OTAError) {
        // Nordic's apps pick a random "DfuNNNNN"; deriving it from the image keeps runs reproducible.
        let name = "Dfu" + String(10_000 + image.crc32 % 90_000)
        try await context.withNotifications(from: DFUGATTProfile.buttonless) { (inbox) throws(OTAError) in
            for request in [ButtonlessRequest.setAdvertisingName(name), .enterBootloader] {
                try await context.write(request.encoded, to: DFUGATTProfile.buttonless, kind: .withResponse, purpose: "buttonless \(request)")
                let reply = [UInt8](try await inbox.next(awaiting: "buttonless DFU response"))
                guard reply.count == 3, reply[0] == 0x20, reply[1] == request.opCode else {
                    throw OTAError(.malformedResponse, "malformed buttonless DFU response (\(reply.count) bytes)")
                }
                guard reply[2] == 0x01 else {
                    throw OTAError(.deviceRejected, "the application refused to enter its bootloader: \(ButtonlessRequest.statusMeaning(reply[2]))")
                }
            }
        }
        context.note("the application restarts into its bootloader, which advertises as \(name) (address + 1 without bonds)")
    }

    // MARK: - Init packet

    private static func sendInitPacket(_ initPacket: Data, plan: ChunkPlan, inbox: NotificationInbox, context: UpdateContext) async throws(OTAError) {
        let selected = try await request(.select(.command), inbox: inbox, context: context)
        let maximum = Int(selected.values[0])
        guard initPacket.count <= maximum else {
            throw OTAError(.invalidImage, "the init packet is \(initPacket.count) bytes; this bootloader accepts at most \(maximum)")
        }
        switch DFUResumePlan.forInitPacket(initPacket, offset: Int(selected.values[1]), crc: selected.values[2]) {
        case .executeInitPacket:
            context.note("the bootloader already holds this init packet")
        case .sendRestOfInitPacket(let offset):
            context.note("resuming the init packet at byte \(offset)")
            _ = try await request(.setPRN(0), inbox: inbox, context: context)
            try await writePackets(initPacket, range: offset..<initPacket.count, plan: plan, context: context)
            try await verifyChecksum(of: initPacket, upTo: initPacket.count, what: "init packet", inbox: inbox, context: context)
        case .sendWholeInitPacket:
            _ = try await request(.create(.command, size: UInt32(initPacket.count)), inbox: inbox, context: context)
            _ = try await request(.setPRN(0), inbox: inbox, context: context)
            try await writePackets(initPacket, range: 0..<initPacket.count, plan: plan, context: context)
            try await verifyChecksum(of: initPacket, upTo: initPacket.count, what: "init packet", inbox: inbox, context: context)
        }
        let executed = try await request(.execute, inbox: inbox, context: context, allowFailure: true)
        guard executed.result == .success else {
            throw OTAError(.deviceRejected, "bootloader rejected the init packet: \(executed.failureDescription(for: "Execute"))")
        }
    }

    // MARK: - Firmware

    private static func sendFirmware(
        _ image: FirmwareImage,
        plan: ChunkPlan,
        configuration: NordicDFUConfiguration,
        inbox: NotificationInbox,
        context: UpdateContext
    ) async throws(OTAError) {
        let prn = configuration.packetReceiptInterval
        _ = try await request(.setPRN(UInt16(prn)), inbox: inbox, context: context)
        let selected = try await request(.select(.data), inbox: inbox, context: context)
        let objectSize = Int(selected.values[0])
        guard objectSize > 0, objectSize % 4 == 0 else {
            throw OTAError(.malformedResponse, "bootloader reported a data object size of \(objectSize) bytes")
        }
        let firmware = image.bytes
        var start = DFUDataResumePoint.decide(image: firmware, maximumObjectSize: objectSize, offset: Int(selected.values[1]), crc: selected.values[2])
        context.acknowledged(total: start.offset - (start.continuePartialObject ? start.offset % objectSize : 0))
        if start.executeFirst, start.offset > 0 {
            let executed = try await request(.execute, inbox: inbox, context: context, allowFailure: true)
            // SDK 15–17 answer 0x08 when the object was already executed: that is fine.
            guard executed.result == .success || executed.result == .operationNotPermitted else {
                throw OTAError(.deviceRejected, "bootloader rejected \(executed.failureDescription(for: "Execute"))")
            }
            context.note("the bootloader already holds \(start.offset) bytes; continuing")
            if start.offset == firmware.count { return }
        }
        context.enter(.transferring)
        var objectStart = start.offset - start.offset % objectSize
        var firstObject = true
        while objectStart < firmware.count {
            let objectEnd = min(objectStart + objectSize, firmware.count)
            var attempt = 1
            while true {
                var from = objectStart
                if start.continuePartialObject {
                    from = start.offset
                    start.continuePartialObject = false
                    context.note("continuing object at byte \(objectStart) from byte \(from)")
                } else {
                    _ = try await request(.create(.data, size: UInt32(objectEnd - objectStart)), inbox: inbox, context: context)
                    if firstObject, configuration.dataObjectDelay > .zero {
                        try await context.sleep(
                            for: configuration.dataObjectDelay, purpose: "waiting for the bootloader to prepare the first object"
                        )
                    }
                }
                firstObject = false
                context.rewound(to: from)
                let streamed = try await streamObject(
                    firmware, range: from..<objectEnd, plan: plan, prn: prn, inbox: inbox, context: context
                )
                let checksum = try await request(.calculateChecksum, inbox: inbox, context: context)
                let offset = Int(checksum.values[0])
                if streamed, offset == objectEnd, checksum.values[1] == CRC32.checksum(firmware.prefix(objectEnd)) {
                    break
                }
                guard attempt < configuration.objectAttempts else {
                    throw OTAError(
                        .verificationFailed,
                        "object at byte \(objectStart) failed its checksum \(attempt) times (bootloader has \(offset) bytes); the link or the bootloader drops packets, try a packet receipt interval (--param prn=12)"
                    )
                }
                attempt += 1
                context.note("object at byte \(objectStart): bootloader reports \(offset) bytes with a different CRC; sending the object again (attempt \(attempt))")
            }
            let isLast = objectEnd == firmware.count
            if isLast { context.enter(.verifying) }
            let executed = try await request(.execute, inbox: inbox, context: context, allowFailure: true, timeout: isLast ? context.configuration.verifyTimeout : nil)
            guard executed.result == .success else {
                throw OTAError(isLast ? .verificationFailed : .deviceRejected, "bootloader rejected \(executed.failureDescription(for: "Execute of the object at byte \(objectStart)"))")
            }
            context.acknowledged(total: objectEnd)
            objectStart = objectEnd
        }
    }

    /// Streams one object's bytes; with PRN on, waits for each receipt and checks its offset.
    /// Returns `false` when a receipt showed lost packets (the object must be sent again).
    private static func streamObject(
        _ firmware: Data,
        range: Range<Int>,
        plan: ChunkPlan,
        prn: Int,
        inbox: NotificationInbox,
        context: UpdateContext
    ) async throws(OTAError) -> Bool {
        try await context.withStallWatchdog {
            var offset = range.lowerBound
            var packets = 0
            while offset < range.upperBound {
                let chunk = plan.chunk(at: offset, in: range.upperBound)
                try await context.writeData(firmware[chunk], to: DFUGATTProfile.packet, covering: chunk)
                offset = chunk.upperBound
                packets += 1
                if prn > 0, packets % prn == 0 {
                    let receipt = try await awaitReceipt(inbox: inbox, context: context)
                    if receipt.offset != offset || receipt.crc != CRC32.checksum(firmware.prefix(offset)) { return false }
                }
            }
            return true
        }
    }

    private static func awaitReceipt(inbox: NotificationInbox, context: UpdateContext) async throws(OTAError) -> (offset: Int, crc: UInt32) {
        while true {
            let value = try await inbox.next(awaiting: "packet receipt notification")
            guard let response = DFUResponse(decoding: value) else {
                throw OTAError(.malformedResponse, "malformed notification on the DFU Control Point: \(value.count) bytes")
            }
            if response.opCode == DFUOpCode.calculateChecksum.rawValue, response.result == .success {
                return (Int(response.values[0]), response.values[1])
            }
        }
    }

    private static func writePackets(_ data: Data, range: Range<Int>, plan: ChunkPlan, context: UpdateContext) async throws(OTAError) {
        var offset = range.lowerBound
        while offset < range.upperBound {
            let chunk = plan.chunk(at: offset, in: range.upperBound)
            try await context.write(data[chunk], to: DFUGATTProfile.packet, kind: .withoutResponse, purpose: "the init packet")
            offset = chunk.upperBound
        }
    }

    private static func verifyChecksum(of data: Data, upTo end: Int, what: String, inbox: NotificationInbox, context: UpdateContext) async throws(OTAError) {
        let checksum = try await request(.calculateChecksum, inbox: inbox, context: context)
        guard Int(checksum.values[0]) == end, checksum.values[1] == CRC32.checksum(data.prefix(end)) else {
            throw OTAError(
                .verificationFailed,
                "the bootloader received the \(what) wrong: \(checksum.values[0]) bytes with CRC-32 0x\(String(checksum.values[1], radix: 16, uppercase: true)); run the update again"
            )
        }
    }

    // MARK: - Requests

    /// Writes a request to the Control Point and waits for its response (packet receipts that
    /// arrive meanwhile are skipped). Unless `allowFailure`, a failure result throws with Nordic's
    /// meaning.
    static func request(
        _ request: DFURequest,
        inbox: NotificationInbox,
        context: UpdateContext,
        allowFailure: Bool = false,
        timeout: Duration? = nil
    ) async throws(OTAError) -> DFUResponse {
        try await context.write(request.encoded, to: DFUGATTProfile.controlPoint, kind: .withResponse, purpose: request.description)
        while true {
            let value = try await inbox.next(timeout: timeout, awaiting: "response to \(request)")
            guard let response = DFUResponse(decoding: value) else {
                throw OTAError(.malformedResponse, "malformed notification on the DFU Control Point while waiting for the response to \(request): \(value.count) bytes")
            }
            guard response.opCode == request.opCode.rawValue else {
                if response.opCode == DFUOpCode.calculateChecksum.rawValue { continue }  // a late packet receipt
                throw OTAError(.malformedResponse, "the bootloader answered op code 0x\(String(response.opCode, radix: 16)) to \(request)")
            }
            if !allowFailure, response.result != .success {
                throw OTAError(.deviceRejected, "bootloader rejected \(response.failureDescription(for: request.description))")
            }
            return response
        }
    }
}
