import Foundation
import OTACore
import Synchronization

/// What ``MCUmgrClient/resumePoint(for:context:)`` read: where the upload stands, or, when the
/// upload is behind, the image state the flow continues from.
public enum MCUmgrCheckpoint: Sendable, Hashable {
    /// The device answered an upload request at offset 0 (with this file's `len` and `sha`)
    /// with `offset`: it continues there.
    case upload(offset: Int)
    /// Slot 1 (or slot 0) already holds the image: the flow goes on from this state.
    case imageState(ImageStateResponse)
}

/// The client side of MCUmgr image management over SMP: MCUmgr parameters, a pipelined upload
/// into slot 1, the image state checked, then (by ``MCUmgrConfiguration/mode``) test or confirm,
/// reset, reconnect and check what runs. Resumable from the device's upload offset.
///
/// A thin driver: the upload is an ``MCUmgrUploadStateMachine``, the flow an
/// ``MCUmgrImageFlow``; SMP frames are reassembled from notifications by their header.
public struct MCUmgrClient: ResumableUpdateProtocol, RunningVersionReporting {
    /// Settings.
    public var configuration: MCUmgrConfiguration
    /// Which images this client reset the device for: MCUboot's state after a revert looks like
    /// a plain upload, so the flow remembers (for the life of the client, one `ota update`).
    private let record = ResetRecord()
    /// SMP sequence numbers across this client's connections (see ``SMPSequences``).
    private let sequences = SMPSequences()

    /// Creates a client.
    public init(configuration: MCUmgrConfiguration = MCUmgrConfiguration()) {
        self.configuration = configuration
    }

    private var smp: CharacteristicID { configuration.profile.smp }

    /// The SMP characteristic, written without response and notifying.
    public var requirements: [CharacteristicRequirement] {
        [CharacteristicRequirement("SMP", smp, properties: [.writeWithoutResponse, .notify])]
    }

    /// Refuses, before connecting, a file that is not a valid MCUboot image.
    public func check(_ image: FirmwareImage) throws(OTAError) {
        _ = try Self.mcuboot(image)
    }

    static func mcuboot(_ image: FirmwareImage) throws(OTAError) -> MCUbootImage {
        do {
            return try MCUbootImage(reading: image)
        } catch {
            if case .unreadable(let message) = error { throw OTAError(.invalidImage, message) }
            throw OTAError(.invalidImage, "\(MessageText.name(image.name)) is not a valid MCUboot image: \(error)", underlying: error)
        }
    }

    private func flow(for image: MCUbootImage) -> MCUmgrImageFlow {
        var flow = MCUmgrImageFlow(mode: configuration.mode, hash: image.hash, version: image.version.description)
        flow.resetIssued = record.contains(image.hash)
        return flow
    }

    // MARK: - Resume

    /// Reads the image state; when the flow is past the upload, that state is the checkpoint.
    /// Otherwise sends the first upload request (this file's `len` and `sha`, one aligned piece
    /// of data): a device with part of this file answers with its offset, any other starts over.
    public func resumePoint(for image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> ResumePoint<MCUmgrCheckpoint>? {
        let mcuboot = try record.parsed(image)
        let flow = flow(for: mcuboot)
        let configuration = self.configuration
        let sequences = self.sequences
        return try await context.withNotifications(from: smp) { (inbox) throws(OTAError) -> ResumePoint<MCUmgrCheckpoint>? in
            let channel = SMPChannel(context: context, inbox: inbox, characteristic: smp, sequences: sequences)
            let state = try await Self.readState(channel)
            if case .upload = flow.next(after: state) {
            } else {
                return ResumePoint(offset: image.count, detail: "the device holds image \(mcuboot.version) (\(state))", checkpoint: .imageState(state))
            }
            let probe = ImageUploadRequest(
                length: image.count, offset: 0, sha: mcuboot.fileSHA256, data: try image.prefix(configuration.alignment))
            let response = try await channel.exchange(.upload(probe), timeout: configuration.eraseTimeout, as: ImageUploadResponse.init(payload:))
            guard response.offset <= image.count else {
                throw MCUmgrWireError.offsetBeyondImage(offset: response.offset, length: image.count).otaError
            }
            let detail =
                response.offset > probe.data.count
                ? "device holds \(response.offset) of \(image.count) bytes of this file" : "device starts this file over"
            return ResumePoint(offset: response.offset, detail: detail, checkpoint: .upload(offset: response.offset))
        }
    }

    // MARK: - Run

    /// Uploads (from `point` when resuming), checks slot 1, then tests or confirms and resets
    /// as the mode says; after the reset (a reconnect the engine makes) checks what runs and
    /// confirms a test boot.
    public func run(
        _ image: FirmwareImage, resumingFrom point: ResumePoint<MCUmgrCheckpoint>?, context: UpdateContext
    ) async throws(OTAError) -> UpdateOutcome {
        let mcuboot = try record.parsed(image)
        let flow = flow(for: mcuboot)
        let smp = self.smp
        let sequences = self.sequences
        return try await context.withNotifications(from: smp) { (inbox) throws(OTAError) -> UpdateOutcome in
            let channel = SMPChannel(context: context, inbox: inbox, characteristic: smp, sequences: sequences)
            var uploadFrom: Int?
            var step: MCUmgrImageFlow.Step
            switch point?.checkpoint {
            case .upload(let offset):
                uploadFrom = offset
                step = .upload
            case .imageState(let state):
                step = flow.next(after: state)
            case nil:
                step = flow.next(after: try await Self.readState(channel))
            }
            while true {
                switch step {
                case .upload:
                    try await upload(image, mcuboot: mcuboot, from: uploadFrom ?? 0, channel: channel, context: context)
                    uploadFrom = nil
                    context.enter(.verifying)
                    let state = try await Self.readState(channel)
                    if let error = flow.verifyUploaded(state) {
                        // Slot 1 does not hold what was sent (a device that reports no `match`
                        // stored damaged bytes): start over, within the same bound as a mismatch.
                        let limit = context.configuration.resume.maximumAttempts
                        let used = record.startOvers.withLock { $0 }
                        guard used < limit else {
                            throw used == 0
                                ? error : OTAError(error.code, "\(error.message); gave up after \(used) restarts from byte 0", underlying: error)
                        }
                        record.startOvers.withLock { $0 += 1 }
                        context.enter(
                            .transferring, detail: "slot 1 does not hold the image after the upload (\(state)); starting over (\(used + 1) of \(limit))")
                        context.acknowledged(total: 0)
                        uploadFrom = 0
                        continue
                    }
                    record.startOvers.withLock { $0 = 0 }
                    context.note("slot 1 holds image \(mcuboot.version) with hash \(Hex.bytes(mcuboot.hash.prefix(8)))…")
                    step = flow.next(after: state)
                case .mark(let confirm):
                    context.enter(.committing, detail: confirm ? "confirming image \(mcuboot.version)" : "marking image \(mcuboot.version) for a test boot")
                    let state = try await channel.exchange(
                        .setImageState(hash: mcuboot.hash, confirm: confirm), as: ImageStateResponse.init(payload:))
                    if let error = flow.verifyMarked(state, confirm: confirm) { throw error }
                    step = .reset
                case .reset:
                    record.insert(mcuboot.hash)
                    do throws(OTAError) {
                        _ = try await channel.exchange(.reset)
                    } catch {
                        guard error.code == .disconnected else { throw error }
                        context.note("the link dropped before the reset response; the device is resetting")
                    }
                    return .reconnect(
                        reason: "device resets so MCUboot swaps in image \(mcuboot.version)", after: configuration.resetWait)
                case .confirmRunning:
                    context.enter(.committing, detail: "confirming image \(mcuboot.version), which runs on a test boot")
                    let state = try await channel.exchange(
                        .setImageState(hash: mcuboot.hash, confirm: true), as: ImageStateResponse.init(payload:))
                    if let error = flow.verifyConfirmed(state) { throw error }
                    step = .done(detail: "image \(mcuboot.version) runs and is confirmed (\(state))")
                case .done(let detail):
                    context.note(detail)
                    return .accepted
                case .fail(let error):
                    throw error
                }
            }
        }
    }

    // MARK: - Running version

    /// The version of the image that runs: the SMP image list's active slot (slot 0 of image 0
    /// when none is marked active), as MCUboot's header gives it; `nil` when the list has none.
    public func runningVersion(context: UpdateContext) async throws(OTAError) -> ReportedVersion? {
        let smp = self.smp
        let sequences = self.sequences
        let state = try await context.withNotifications(from: smp) { (inbox) throws(OTAError) -> ImageStateResponse in
            try await Self.readState(SMPChannel(context: context, inbox: inbox, characteristic: smp, sequences: sequences))
        }
        return Self.runningVersion(in: state)
    }

    /// The active slot's version in an image list.
    static func runningVersion(in state: ImageStateResponse) -> ReportedVersion? {
        let running = state.images.first { $0.image == 0 && $0.active } ?? state.images.first { $0.image == 0 && $0.slot == 0 }
        return running.map { ReportedVersion(text: $0.version, source: "SMP image list, slot \($0.slot)") }
    }

    static func readState(_ channel: SMPChannel) async throws(OTAError) -> ImageStateResponse {
        try await channel.exchange(.readImageState, as: ImageStateResponse.init(payload:))
    }

    // MARK: - Upload

    /// The device's buffer, or, for a device without the MCUmgr parameters command, one ATT
    /// write per request and one request in flight.
    private func parameters(_ channel: SMPChannel) async throws(OTAError) -> MCUmgrParameters {
        do throws(OTAError) {
            return try await channel.exchange(.parameters, as: MCUmgrParameters.init(payload:))
        } catch {
            guard error.code == .deviceRejected else { throw error }
            channel.context.note("the device has no MCUmgr parameters command (\(error.message)); one request of one write in flight")
            return MCUmgrParameters(bufferSize: channel.writeLength, bufferCount: 1)
        }
    }

    private func upload(
        _ image: FirmwareImage, mcuboot: MCUbootImage, from offset: Int, channel: SMPChannel, context: UpdateContext
    ) async throws(OTAError) {
        let parameters = try await parameters(channel)
        var settings = MCUmgrUploadStateMachine.Settings(
            frameLimit: parameters.bufferSize - context.link.packetOverhead, window: max(1, min(configuration.window, parameters.bufferCount)),
            alignment: configuration.alignment, writeLength: channel.writeLength, eraseTimeout: configuration.eraseTimeout
        )
        // Restarts from byte 0 after a failed SHA-256 check: the engine's bound on restarts in a
        // row, counted across this update's connections.
        settings.maximumRestarts = context.configuration.resume.maximumAttempts
        context.note(
            "device buffers: \(parameters.bufferCount) × \(parameters.bufferSize) bytes"
                + (context.link.packetOverhead > 0 ? " (\(context.link.packetOverhead) of each for the link's framing)" : "")
                + "; \(settings.window) request(s) in flight, \(channel.writeLength)-byte writes"
        )
        let record = self.record
        var machine = MCUmgrUploadStateMachine(
            image: image, sha: mcuboot.fileSHA256, settings: settings, startingAt: offset, firstSequence: channel.sequence,
            restartedBefore: record.startOvers.withLock { $0 })
        context.enter(.transferring)
        if offset > 0 { context.rewound(to: offset) }
        var action = machine.start()
        while true {
            switch action {
            case .finished(let match):
                channel.sequence = machine.nextSequence
                if machine.resyncs + machine.busyAnswers > 0 {
                    context.note("upload re-synchronised \(machine.resyncs) time(s) from the device's offset; \(machine.busyAnswers) busy answer(s)")
                }
                if match == true { context.note("the device checked the upload against its SHA-256: match") }
                return
            case .fail(let error):
                throw error
            default:
                break
            }
            // Only the wait for the first response (the slot erase) goes without the stall
            // watchdog; its writes are data like any other, and a link that stops taking them
            // must not hang the upload (campaign seed 515).
            if Self.awaitsErase(machine, action) {
                action = try await Self.perform(action, &machine, channel: channel, record: record)
            } else {
                let (current, pending) = (machine, action)
                (machine, action) = try await context.withStallWatchdog { () async throws -> (MCUmgrUploadStateMachine, MCUmgrUploadStateMachine.Action) in
                    var machine = current
                    var action = pending
                    while !Self.awaitsErase(machine, action) {
                        switch action {
                        case .finished, .fail: return (machine, action)
                        default: action = try await Self.perform(action, &machine, channel: channel, record: record)
                        }
                    }
                    return (machine, action)
                }
            }
        }
    }

    /// Whether `action` waits for the answer to the first request, which the device sends only
    /// after erasing its slot (the erase timeout, not the stall watchdog, bounds it).
    private static func awaitsErase(_ machine: MCUmgrUploadStateMachine, _ action: MCUmgrUploadStateMachine.Action) -> Bool {
        guard machine.isAwaitingErase, case .awaitResponse = action else { return false }
        return true
    }

    /// Performs one action of the upload machine and feeds it the result.
    private static func perform(
        _ action: MCUmgrUploadStateMachine.Action, _ machine: inout MCUmgrUploadStateMachine, channel: SMPChannel, record: ResetRecord
    ) async throws(OTAError) -> MCUmgrUploadStateMachine.Action {
        let context = channel.context
        switch action {
        case .send(let requests, let rewound):
            if let rewound { context.rewound(to: rewound) }
            for request in requests {
                for index in 0..<request.writeCount {
                    let write = request.write(index)
                    try await context.writeData(write.bytes, to: channel.characteristic, covering: write.covering)
                }
            }
            return machine.sent()
        case .awaitResponse(let timeout, let awaiting):
            let (frame, sequence) = try await channel.nextAnswer(timeout: timeout, awaiting: awaiting.description, awaits: { machine.isInFlight($0) })
            if let sequence, machine.isInFlight(sequence) { channel.answered(sequence) }
            let next = machine.received(frame)
            context.acknowledged(total: machine.acknowledged)
            return next
        case .wait(let duration, let purpose):
            try await context.sleep(for: duration, purpose: purpose)
            return machine.delayElapsed()
        case .startOver(let reason):
            record.startOvers.withLock { $0 = machine.restarts }
            context.enter(.transferring, detail: reason)
            context.acknowledged(total: 0)
            return machine.restart()
        case .finished, .fail:
            return action
        }
    }
}

/// The hashes of the images a client reset the device for, and the last image it parsed (each
/// run and resume would otherwise hash the whole image twice again).
private final class ResetRecord: Sendable {
    private let hashes = Mutex<Set<Data>>([])
    private let last = Mutex<(sha256: Data, count: Int, image: MCUbootImage)?>(nil)
    /// Uploads started over from byte 0 in a row (a failed SHA-256 check, slot 1 not holding the
    /// image afterwards), across the update's connections; 0 again once slot 1 holds it.
    let startOvers = Mutex(0)
    func insert(_ hash: Data) { _ = hashes.withLock { $0.insert(hash) } }
    func contains(_ hash: Data) -> Bool { hashes.withLock { $0.contains(hash) } }

    func parsed(_ image: FirmwareImage) throws(OTAError) -> MCUbootImage {
        if let cached = last.withLock({ $0 }), cached.count == image.count, cached.sha256 == image.sha256 { return cached.image }
        let parsed = try MCUmgrClient.mcuboot(image)
        last.withLock { $0 = (image.sha256, image.count, parsed) }
        return parsed
    }
}
