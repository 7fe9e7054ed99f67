import Foundation
import OTACore

/// The client's side of Nordic Secure DFU as a value-type state machine: one method per input,
/// each returning what to do next. No I/O; ``NordicDFUClient`` performs the actions.
///
/// ```
/// start ─┬─ checkpoint: this init packet whole, and a prefix of this image ──────────────▶ PRN n (below)
///        ├─ checkpoint: another init packet, or none ──▶ Create(command) (below, no Select)
///        └─▶ Select(command) ─┬─ none held ───▶ Create(command) ─▶ PRN 0 ─▶ write .dat ─▶ Checksum ─┐
///                             ├─ a prefix held ──────────────────▶ PRN 0 ─▶ write rest ─▶ Checksum ─┤
///                             └─ all held ──────────────────────────────────────────────────────────┤
///                                                                                      Execute ◀───┘
///   ┌──────────────────────────────────────────────────────────────────────────────────────┘
///   ▼
/// PRN n ─▶ Select(data)*, or the checkpoint ─┬─ whole objects held, maybe not executed ─▶ Execute ─┐
///                                           ├─ part of an object held ─▶ stream the rest ─────────┤
///                                           └─ nothing (or bytes that differ) ────────────────────┤
///   ┌─────────────────────────────────────────────────────────────────────────────────────────────┘
///   ▼  per object
/// Create(data) ─▶ [first object: sleep] ─▶ stream (receipt every n packets) ─▶ Checksum ─▶ Execute ─▶ next
///        ▲                                        │ receipt or checksum differs                 │ last
///        └── sleep 0.5 s, 1 s, 2 s… ◀─ up to objectAttempts ┤                                    ▼ finished
///                                                         │ the last attempt failed too
///                                                         ▼
///                     sleep ≥ 3 s ─▶ Select(data) ─▶ answered: fail ("drops packets", advice for the settings)
///                                                    (a dying link fails the request: the engine resumes)
/// ```
///
/// With `pipeline=on` (decision 0024) every object but the last ends differently:
///
/// ```
/// stream its last packets ─▶ Execute, [Set PRN], Create(next) written back to back
///   ─▶ answers (and the receipt that ends the object, else a queued Checksum) in any order
///        ├─ all well ──────────────────────────────▶ stream the next object
///        ├─ bytes differ, Execute refused (0x08) ──▶ send the object again (as above)
///        ├─ Execute refused, bytes all there, or an answer not asked ─▶ Select(data), strict from then on
///        └─ bytes differ, Execute accepted ──────────▶ fail (the bootloader will refuse the image)
/// ```
///
/// With `prn=auto` the interval starts at one receipt per object, halves after a loss (never
/// back to an interval that lost packets) and doubles after ``adaptiveRaiseAfter`` clean objects.
///
/// A resume whose bytes differ from this image asks Calculate Checksum right after
/// its Create, which rewinds to the last executed object: an executed object with other bytes (a
/// pipelined Execute goes before its receipt is read), or a Create refused 0x08 because one past
/// it was executed, starts over from the init packet (decision 0046).
///
/// A receipt that lands on the object's end stands for the Checksum. (*) After a Create(command)
/// the data is always selected again: creating the command object discards the bootloader's data,
/// so a checkpoint's data selection no longer holds.
///
/// Inputs: ``start()``, ``received(_:)-(Data)`` (every Control Point notification), ``streamed()``
/// (the bytes of a ``Action/writeInitPacket(_:)`` or ``Action/stream(_:receipt:)`` without receipt
/// are written), ``receiptMissing()``, ``delayElapsed()`` and ``proceed()`` (after an action that
/// expects no answer).
public struct NordicDFUStateMachine: Sendable {
    /// How long the driver waits for an answer.
    public enum Wait: Sendable, Hashable {
        /// The engine's response timeout.
        case response
        /// The engine's verify timeout: the bootloader validates the whole image before it answers.
        case verification
        /// A packet receipt: ``NordicDFUStateMachine/receiptWait``, then ``receiptMissing()``.
        case receipt
    }

    /// What the driver must do next.
    public enum Action: Sendable, Equatable {
        /// Write the request to the Control Point with response, wait (as `wait` says) for a
        /// notification and pass it to ``received(_:)-(Data)``.
        case send(DFURequest, wait: Wait = .response)
        /// Write these bytes of the image to DFU Packet as data, then these requests to the
        /// Control Point with response, one after another, without waiting for a notification
        /// between them (the bootloader queues packets and requests FIFO); then wait for a
        /// notification and pass it to ``received(_:)-(Data)``. The answers (and the packet
        /// receipt that ends the object, when one is due) are matched by op code, in whichever
        /// order they come; the machine asks (``listen(awaiting:wait:)``) for each further one.
        case streamThenQueue(Range<Int>, [DFURequest])
        /// The last notification was a stray packet receipt: wait (as `wait` says) for the next
        /// one and pass it to ``received(_:)-(Data)``. `awaiting` names what is awaited.
        case listen(awaiting: Awaited, wait: Wait)
        /// Write these bytes of the init packet to DFU Packet without response (not image
        /// data: no progress), then call ``streamed()``.
        case writeInitPacket(Range<Int>)
        /// Write these bytes of the image to DFU Packet as data. With `receipt`, the bootloader
        /// sends a packet receipt notification after the last one: wait for it and pass it to
        /// ``received(_:)-(Data)``; without, call ``streamed()``.
        case stream(Range<Int>, receipt: Bool)
        /// Wait this long on the engine clock, then call ``delayElapsed()``.
        case sleep(Duration, purpose: String)
        /// Report a phase change, then call ``proceed()``.
        case enter(UpdateState)
        /// The bootloader holds the first this many bytes of the image durably; report it, then
        /// call ``proceed()``.
        case acknowledged(Int)
        /// Add a line to the log, then call ``proceed()``.
        case note(String)
        /// The bootloader accepted the image (and restarts into it).
        case finished
        /// The update failed.
        case fail(OTAError)

        /// Errors compare by code and message.
        public static func == (lhs: Action, rhs: Action) -> Bool {
            switch (lhs, rhs) {
            case (.send(let a, let x), .send(let b, let y)): a == b && x == y
            case (.streamThenQueue(let a, let x), .streamThenQueue(let b, let y)): a == b && x == y
            case (.listen(let a, let x), .listen(let b, let y)): a == b && x == y
            case (.writeInitPacket(let a), .writeInitPacket(let b)): a == b
            case (.stream(let a, let x), .stream(let b, let y)): a == b && x == y
            case (.sleep(let a, let x), .sleep(let b, let y)): a == b && x == y
            case (.enter(let a), .enter(let b)): a == b
            case (.acknowledged(let a), .acknowledged(let b)): a == b
            case (.note(let a), .note(let b)): a == b
            case (.finished, .finished): true
            case (.fail(let a), .fail(let b)): a.code == b.code && a.message == b.message
            default: false
            }
        }
    }

    /// What a ``Action/listen(awaiting:wait:)`` waits for; its description names it in a
    /// timeout's message, and is made only then.
    public enum Awaited: Sendable, Hashable, CustomStringConvertible {
        /// The answer to this request.
        case response(to: DFURequest)
        /// The packet receipt notification that ends a run of packets.
        case receipt
        /// The answers to these queued requests, in any order.
        case answers(to: [DFURequest])

        /// "response to Calculate Checksum", "packet receipt notification", "answers to
        /// Execute, Create data object of 4096 bytes".
        public var description: String {
            switch self {
            case .response(let request): "response to \(request)"
            case .receipt: "packet receipt notification"
            case .answers(let requests): "answers to \(NordicDFUStateMachine.list(requests))"
            }
        }
    }

    /// The request whose answer is awaited, and what it is for.
    private enum Step: Sendable, Hashable {
        case selectCommand, createCommand, disableReceipts, checkInitPacket, executeInitPacket
        case enableReceipts, selectData, executeHeldObject, createObject, checkObject, executeObject
        /// Select(data) after the last failed attempt and the pause: the link is still up.
        case probeLink
        /// Calculate Checksum in place of a packet receipt that did not come.
        case checkMissingReceipt
        /// Set PRN before a Create, when the adaptive interval changed (`prn=auto`).
        case adjustReceipts
        /// Select(data) after a surprise in the pipelined flow: where the bootloader stands.
        case resynchronize
        /// Calculate Checksum in place of the receipt that was to end a pipelined object.
        case checkQueuedObject
        /// Calculate Checksum right after a Create, on a resume whose bytes differed from this
        /// image: are the executed objects (`offset_last`, `crc_last`) this image's?
        case checkExecutedPrefix
    }

    /// What a ``Action/sleep(_:purpose:)`` leads to.
    private enum AfterDelay: Sendable, Hashable {
        /// Stream the object just created (the first-object delay).
        case streamObject
        /// Create the object again after a failed checksum (the pause between attempts).
        case resendObject
        /// Ask the bootloader something after the last failed attempt: if the link died
        /// meanwhile the request fails and the engine resumes; if it answers, the device drops
        /// packets on a healthy link.
        case probeLink
        /// Create the command object again after the init packet's checksum failed.
        case resendInitPacket
    }

    /// The pause after the `failures`-th failed checksum of an object before it is sent again:
    /// 0.5 s, doubling, at most 4 s. A link whose data path is gone while its Control Point still
    /// answers (bluetoothd keeps a dying link ~2 s) drops meanwhile, and the engine resumes.
    public static func resendDelay(afterFailures failures: Int) -> Duration {
        .milliseconds(500 * (1 << min(max(failures, 1) - 1, 3)))
    }

    /// The least pause after the last failed attempt before the device is judged: longer than
    /// bluetoothd's ~2 s disconnect timer, so a dying link has given its verdict.
    public static let linkVerdictDelay: Duration = .seconds(3)

    /// How long the driver waits for a packet receipt after the packets it follows before calling
    /// ``receiptMissing()``. The bootloader counts receipts over the packets it received, so when
    /// one was lost on the way (or found no receive buffer) the receipt never comes. Longer than
    /// bluetoothd's ~2 s disconnect timer, so a dying link drops first; shorter than the engine's
    /// default stall timeout (5 s), so the watchdog does not take the link down for a lost packet.
    public static let receiptTimeout: Duration = .seconds(3)

    /// With `prn=auto`, how long the driver waits for a receipt before ``receiptMissing()``:
    /// the interval is low where packets get lost, so a receipt is due within a few connection
    /// events, and a lost one costs this instead of ``receiptTimeout`` each time. A dying link is
    /// still judged only after ``linkVerdictDelay``.
    public static let adaptiveReceiptTimeout: Duration = .milliseconds(500)

    /// How long the driver waits for a packet receipt: ``adaptiveReceiptTimeout`` with
    /// `prn=auto`, else ``receiptTimeout``.
    public var receiptWait: Duration { adaptsReceipts ? Self.adaptiveReceiptTimeout : Self.receiptTimeout }

    private enum Phase: Sendable, Hashable {
        case idle
        case awaiting(Step, DFURequest, Wait)
        /// The answers to ``Action/streamThenQueue(_:_:)`` that have not come yet.
        case awaitingQueued([DFURequest])
        case writingInitPacket
        case streaming(Range<Int>, receipt: Bool)
        case delaying(then: AfterDelay)
        case done
        case failed
    }

    // Inputs fixed at the start.
    private let image: FirmwareImage
    private let initPacket: Data
    private let payloadSize: Int
    /// The receipt interval in force for the next object (adapts with `prn=auto`).
    private var receiptInterval: Int
    /// The interval the bootloader was last told (Set PRN), or `nil` before the data stage's.
    private var announcedInterval: Int?
    /// The interval the current object's packets were counted at (the one its last segment went
    /// out under). A pipelined queue's Set PRN changes ``announcedInterval`` for the next object
    /// before the current one is judged.
    private var countedInterval: Int?
    private let adaptsReceipts: Bool
    /// Whether Execute and the next Create are queued together; cleared for good at a surprise.
    private var pipelines: Bool
    private let firstObjectDelay: Duration
    private let objectAttempts: Int
    private let checkpoint: NordicDFUCheckpoint?

    private var phase = Phase.idle
    private var pending: [Action] = []

    // Init packet stage.
    private var initPacketFrom = 0
    private var createdCommandObject = false
    /// Sends of the init packet so far (its checksum failing sends it again).
    private var initPacketAttempt = 1
    /// Whether the link is probed after the init packet's last failed attempt (else an object's).
    private var probingInitPacket = false
    private var skippedInitPacket = false

    // Data stage: the current object is `objectStart..<objectEnd`; `position` is the next byte to
    // write and the running CRCs cover the image up to `objectStart` and up to `position`.
    private var objectSize = 0
    private var objectStart = 0
    private var objectEnd = 0
    private var position = 0
    private var crcAtObjectStart = CRC32()
    /// A read of the image that failed (its file changed), reported by the next ``emit(_:)``.
    private var unreadable: OTAError?
    private var crcAtPosition = CRC32()
    private var attempt = 1
    private var firstObject = true
    private var lastReportedOffset = 0
    /// Objects in a row that arrived whole at their first attempt (`prn=auto` raises after
    /// ``adaptiveRaiseAfter``).
    private var cleanObjects = 0
    /// What the answers to the queue behind an object said so far.
    private var queue = QueueOutcome()

    /// The answers to ``Action/streamThenQueue(_:_:)``.
    private struct QueueOutcome: Sendable, Hashable {
        /// Offset and CRC from the receipt (or Calculate Checksum) that ended the object.
        var reported: Reported?
        /// The Execute answered 0x08: the object was not complete.
        var executeRefused = false
        /// Why the pipelined flow is being left; the rest of the queue is drained first.
        var surprise: String?
        /// The receipt did not come; Calculate Checksum was asked instead.
        var receiptMissing = false
        /// Calculate Checksum was queued before the Execute: no receipt falls on the object's end
        /// at the interval its packets were counted at.
        var askedChecksum = false
        /// The queued Create failed. Behind a refused Execute that is expected (it rewound to
        /// the object's start, where the next object's size may not fit); otherwise it fails
        /// the update, as in the strict flow.
        var createFailure: DFUResponse?

        struct Reported: Sendable, Hashable {
            var offset: Int
            var crc: UInt32
        }
    }

    /// Objects that arrived wrong in a row (the pauses between resends grow with it).
    private var failuresInARow = 0

    /// Restarts from the init packet after an object was executed with other bytes.
    private var restartsAfterDamage = 0

    /// On a resume whose bytes differ from this image (from byte 0 or later): the next Create is
    /// followed by Calculate Checksum, which reports the executed objects. A pipelined Execute is
    /// written before its object's receipt is read, so a link lost then can leave an object
    /// executed with other bytes (this run's or an earlier one's), past the point resumed from.
    private var checksExecutedPrefix = false

    /// The highest interval `prn=auto` may raise to again: one below each interval at which
    /// packets were lost (`nil` before any loss).
    private var receiptCeiling: Int?

    /// The clean objects in a row after which `prn=auto` doubles its interval.
    public static let adaptiveRaiseAfter = 4

    /// Receipt intervals the machine went through with `prn=auto`, first to last (for the log
    /// and tests).
    public private(set) var receiptIntervals: [Int] = []

    /// Objects sent again because their bytes did not all arrive.
    public private(set) var objectsResent = 0

    /// Prepares an update of `image`.
    ///
    /// - Parameters:
    ///   - payloadSize: bytes per packet (the engine's chunk plan); packet receipts are counted in
    ///     packets of this size from the first byte of each stream.
    ///   - configuration: packet receipt interval, first-object delay, attempts per object.
    ///   - checkpoint: what Select(command) and Select(data) reported while the engine looked for
    ///     the resume point. When the command object holds this init packet whole and the data a
    ///     prefix of this image, the run skips the init packet stage; when it holds another init
    ///     packet (or none), the run creates this one without selecting first. The data selection
    ///     is used only while no command object was created: creating one discards the data.
    /// - Throws: ``OTAError/Code/invalidImage`` when the image has no init packet.
    public init(
        image: FirmwareImage,
        payloadSize: Int,
        configuration: NordicDFUConfiguration,
        resumingFrom checkpoint: NordicDFUCheckpoint? = nil
    ) throws(OTAError) {
        let initPacket = try NordicDFUClient.initPacket(of: image)
        precondition(payloadSize > 0, "payload size must be positive")
        self.image = image
        self.initPacket = initPacket
        self.payloadSize = payloadSize
        adaptsReceipts = configuration.adaptsReceiptInterval
        pipelines = configuration.pipelinesObjects
        receiptInterval = max(0, configuration.packetReceiptInterval)
        if adaptsReceipts {
            // One receipt per object, at its end, where it stands for Calculate Checksum: the
            // object size is known for sure only after Select(data); 4096 is the SDK's.
            receiptInterval = Self.packets(in: checkpoint?.data.maximumSize ?? 4096, payloadSize: payloadSize)
        }
        firstObjectDelay = configuration.dataObjectDelay
        objectAttempts = max(1, configuration.objectAttempts)
        self.checkpoint = checkpoint
    }

    // MARK: - Inputs

    /// Begins. Without a checkpoint: Select the command object. With one:
    /// - the command object holds this init packet whole (offset and CRC-32) and the data a
    ///   prefix of this image: go straight to the data objects. The bootloader keeps data only
    ///   under an executed init packet, and Select(data) was the last request, so the data object
    ///   is current: an Execute or the rest of a partial object applies to it. Touching the
    ///   command object would make it current instead, and the data would have to be selected
    ///   again;
    /// - it holds another init packet, or none: create this one, as a fresh update does after
    ///   Select(command); the data it held is discarded and selected again after the Execute;
    /// - otherwise (a prefix of this init packet, or all of it without data of this image):
    ///   Select the command object, which makes it current for the rest or the Execute.
    public mutating func start() -> Action {
        precondition(phase == .idle, "start() called twice")
        guard let checkpoint else { return emit(ask(.selectCommand, .select(.command))) }
        if checkpoint.holdsWhole(initPacket: initPacket), holdsPrefixOfImage(checkpoint.data) {
            skippedInitPacket = true
            return emit(
                [
                    .note(
                        "the bootloader holds this init packet, executed, and \(checkpoint.data.offset) bytes of this image; continuing without sending it again"
                    )
                ]
                    + announceReceipts()
            )
        }
        let command = checkpoint.command
        guard DFUResumePlan.forInitPacket(initPacket, offset: command.offset, crc: command.crc) == .sendWholeInitPacket else {
            return emit(ask(.selectCommand, .select(.command)))
        }
        var actions: [Action] = []
        if command.offset > 0 {
            let discarded = checkpoint.data.offset > 0 ? ", discarding the \(checkpoint.data.offset) bytes of data received under it" : ""
            actions.append(
                .note("the bootloader holds another init packet (\(command.offset) bytes, CRC-32 \(Hex.number(command.crc))); sending this one\(discarded)"))
        }
        return emit(actions + initPacketStage(command))
    }

    /// The bootloader notified `notification` on the Control Point.
    public mutating func received(_ notification: Data) -> Action {
        precondition(pending.isEmpty, "received(_:) while actions are pending; call proceed()")
        switch phase {
        case .awaiting(let step, let request, let wait):
            switch DFUAnswer(notification, to: request) {
            case .malformed(let error): return fail(error)
            case .lateReceipt: return .listen(awaiting: .response(to: request), wait: wait)
            case .response(let response): return emit(answer(response, to: step, request: request))
            }
        case .awaitingQueued(let remaining):
            guard let response = DFUResponse(decoding: notification) else {
                return fail(
                    OTAError(
                        .malformedResponse,
                        "malformed notification on the DFU Control Point while waiting for the answers to \(remaining): \(notification.count) bytes"))
            }
            return emit(queuedAnswer(response, remaining: remaining))
        case .streaming(let segment, receipt: true):
            guard let response = DFUResponse(decoding: notification) else {
                return fail(OTAError(.malformedResponse, "malformed notification on the DFU Control Point: \(notification.count) bytes"))
            }
            guard response.opCode == DFUOpCode.calculateChecksum.rawValue, response.result == .success else {
                // A receipt for a packet the bootloader refused carries no offset, and restarts
                // its count: the next one may never come, so it is waited for as a receipt.
                return .listen(awaiting: .receipt, wait: .receipt)
            }
            return emit(receipt(offset: Int(response.values[0]), crc: response.values[1], after: segment))
        default:
            return fail(OTAError(.malformedResponse, "unexpected notification on the DFU Control Point (\(notification.count) bytes) while \(activity)"))
        }
    }

    /// The bootloader notified `response` on the Control Point.
    public mutating func received(_ response: DFUResponse) -> Action {
        received(response.encoded)
    }

    /// The bytes of the last ``Action/writeInitPacket(_:)``, or of a ``Action/stream(_:receipt:)``
    /// without receipt, are written.
    public mutating func streamed() -> Action {
        precondition(pending.isEmpty, "streamed() while actions are pending; call proceed()")
        switch phase {
        case .writingInitPacket:
            return emit(ask(.checkInitPacket, .calculateChecksum))
        case .streaming(let segment, receipt: false):
            advance(to: segment.upperBound)
            return emit(position < objectEnd ? nextSegment() : ask(.checkObject, .calculateChecksum))
        default:
            preconditionFailure("streamed() while \(activity)")
        }
    }

    /// The packet receipt the last ``Action/stream(_:receipt:)`` asked for did not come within
    /// ``receiptWait``: the bootloader counted fewer packets than were sent. Asks Calculate
    /// Checksum, whose answer says what the receipt would have: the object is sent again when it
    /// differs, as after a wrong receipt.
    public mutating func receiptMissing() -> Action {
        precondition(pending.isEmpty, "receiptMissing() while actions are pending; call proceed()")
        if case .awaitingQueued = phase {
            // The answers are in, the receipt is not: ask for what it would have said.
            return emit(
                [.note("no packet receipt \(receiptWait.humanReadable) after byte \(objectEnd); asking the bootloader for its offset")]
                    + ask(.checkQueuedObject, .calculateChecksum))
        }
        guard case .streaming(let segment, receipt: true) = phase else { preconditionFailure("receiptMissing() while \(activity)") }
        advance(to: segment.upperBound)
        return emit(
            [.note("no packet receipt \(receiptWait.humanReadable) after byte \(segment.upperBound); asking the bootloader for its offset")]
                + ask(.checkMissingReceipt, .calculateChecksum))
    }

    /// The ``Action/sleep(_:purpose:)`` is over.
    public mutating func delayElapsed() -> Action {
        guard case .delaying(let next) = phase, pending.isEmpty else { preconditionFailure("delayElapsed() while \(activity)") }
        switch next {
        case .streamObject: return emit(nextSegment())
        case .resendObject: return emit(createObject())
        case .probeLink: return emit(ask(.probeLink, .select(.data)))
        case .resendInitPacket:
            initPacketFrom = 0
            createdCommandObject = true
            return emit(ask(.createCommand, .create(.command, size: UInt32(initPacket.count))))
        }
    }

    /// The last ``Action/enter(_:)``, ``Action/acknowledged(_:)`` or ``Action/note(_:)`` is done.
    public mutating func proceed() -> Action {
        precondition(!pending.isEmpty, "proceed() with no action pending")
        return pending.removeFirst()
    }

    // MARK: - Answers

    private mutating func answer(_ response: DFUResponse, to step: Step, request: DFURequest) -> [Action] {
        if step == .probeLink { return droppingPackets(probe: response) }
        if step == .createObject, checksExecutedPrefix, response.result == .operationNotPermitted {
            // Create rewinds to the last executed object: it refuses when that is past this
            // object's end (or the image's), so an object past the resume point was executed.
            checksExecutedPrefix = false
            return restartFromInitPacket(
                "after a resume whose bytes differ, the bootloader refused to create the object at byte \(objectStart) (0x08): it executed one past it, with bytes not this image's"
            )
        }
        let executes: Set<Step> = [.executeInitPacket, .executeHeldObject, .executeObject]
        if !executes.contains(step), response.result != .success {
            // SDK 15.3 answers Create(data) with 0x05 when erasing the object's pages fails: the
            // code's usual meaning (the init packet) would send the reader the wrong way.
            let erase =
                step == .createObject && response.result == .invalidObject
                ? "; for a data object this means the bootloader could not erase its flash (worn or protected flash?)" : ""
            return failing(.deviceRejected, "bootloader rejected \(response.failureDescription(for: request.description))\(erase)")
        }
        switch step {
        case .selectCommand:
            guard let selection = DFUObjectSelection(response) else { return failing(.malformedResponse, "malformed Select response") }
            return initPacketStage(selection)
        case .createCommand:
            return ask(.disableReceipts, .setPRN(0))
        case .disableReceipts:
            phase = .writingInitPacket
            return [.writeInitPacket(initPacketFrom..<initPacket.count)]
        case .checkInitPacket:
            let (offset, crc) = (response.values[0], response.values[1])
            guard Int(offset) == initPacket.count, crc == CRC32.checksum(initPacket) else {
                return initPacketArrivedWrong(offset: Int(offset), crc: crc)
            }
            return ask(.executeInitPacket, .execute)
        case .executeInitPacket:
            guard response.result == .success else {
                return failing(.deviceRejected, "bootloader rejected the init packet: \(response.failureDescription(for: "Execute"))")
            }
            return announceReceipts()
        case .enableReceipts:
            // Creating the command object discarded the bootloader's data: the checkpoint's data
            // selection is stale, select again. Otherwise it still holds, and what it leads to
            // here starts with Create(data), which makes the data object current.
            if let checkpoint, skippedInitPacket || !createdCommandObject { return dataStage(checkpoint.data) }
            return ask(.selectData, .select(.data))
        case .probeLink:
            return droppingPackets(probe: response)
        case .adjustReceipts:
            return ask(.createObject, .create(.data, size: UInt32(objectEnd - objectStart)))
        case .checkQueuedObject:
            queue.reported = .init(offset: Int(response.values[0]), crc: response.values[1])
            queue.receiptMissing = true
            return queueAnswered()
        case .resynchronize:
            guard let selection = DFUObjectSelection(response) else { return failing(.malformedResponse, "malformed Select response") }
            return dataStage(selection)
        case .selectData:
            guard let selection = DFUObjectSelection(response) else { return failing(.malformedResponse, "malformed Select response") }
            return dataStage(selection)
        case .executeHeldObject:
            // SDK 15–17 answer 0x08 when the object was already executed: that is fine.
            guard response.result == .success || response.result == .operationNotPermitted else {
                let code: OTAError.Code = objectStart == image.count ? .verificationFailed : .deviceRejected
                return failing(code, "bootloader rejected \(response.failureDescription(for: "Execute"))")
            }
            let note = Action.note("the bootloader already holds \(objectStart) bytes; continuing")
            if objectStart == image.count { return finish([note]) }
            return [note, .enter(.transferring)] + createObject()
        case .createObject:
            if checksExecutedPrefix {
                checksExecutedPrefix = false
                return ask(.checkExecutedPrefix, .calculateChecksum)
            }
            if firstObject, firstObjectDelay > .zero {
                firstObject = false
                phase = .delaying(then: .streamObject)
                return [.sleep(firstObjectDelay, purpose: "waiting for the bootloader to prepare the first object")]
            }
            firstObject = false
            return nextSegment()
        case .checkExecutedPrefix:
            // Right after Create the bootloader reports where its executed objects end, and their
            // CRC-32: the Create rewound there, not to where this machine asked.
            let (offset, crc) = (Int(response.values[0]), response.values[1])
            guard offset == objectStart, crc == crcAtObjectStart.value else {
                return restartFromInitPacket(
                    "after a resume whose bytes differ, the bootloader's executed objects end at byte \(offset) with CRC-32 \(Hex.number(crc)) (expected \(objectStart) bytes, \(Hex.number(crcAtObjectStart.value))): one was executed with bytes not this image's"
                )
            }
            return answer(.success(.create), to: .createObject, request: .create(.data, size: UInt32(objectEnd - objectStart)))
        case .checkObject:
            let (offset, crc) = (Int(response.values[0]), response.values[1])
            guard offset == objectEnd, crc == crcAtPosition.value else { return objectArrivedWrong(reportedOffset: offset) }
            return executeObject()
        case .checkMissingReceipt:
            // The answer stands for the receipt: the same checks, the same next step.
            let (offset, crc) = (Int(response.values[0]), response.values[1])
            guard offset == position, crc == crcAtPosition.value else { return objectArrivedWrong(reportedOffset: offset) }
            // The bytes are there, but the bootloader's count of packets was not the machine's.
            let adapted = packetsLost()
            return adapted + (position < objectEnd ? nextSegment() : executeObject())
        case .executeObject:
            let isLast = objectEnd == image.count
            guard response.result == .success else {
                return failing(
                    isLast ? .verificationFailed : .deviceRejected,
                    "bootloader rejected \(response.failureDescription(for: "Execute of the object at byte \(objectStart)"))"
                )
            }
            if isLast { return finish([.acknowledged(objectEnd)]) }
            objectStart = objectEnd
            crcAtObjectStart = crcAtPosition
            attempt = 1
            return [.acknowledged(objectStart)] + createObject()
        }
    }

    /// A packet receipt after `segment`: the bootloader's offset and CRC must match what was sent.
    private mutating func receipt(offset: Int, crc: UInt32, after segment: Range<Int>) -> [Action] {
        advance(to: segment.upperBound)
        guard offset == position, crc == crcAtPosition.value else { return objectArrivedWrong(reportedOffset: offset) }
        // A receipt at the object's end says what Calculate Checksum would: execute at once.
        return position < objectEnd ? nextSegment() : executeObject()
    }

    // MARK: - Init packet

    private mutating func initPacketStage(_ selection: DFUObjectSelection) -> [Action] {
        guard initPacket.count <= selection.maximumSize else {
            return failing(.invalidImage, "the init packet is \(initPacket.count) bytes; this bootloader accepts at most \(selection.maximumSize)")
        }
        switch DFUResumePlan.forInitPacket(initPacket, offset: selection.offset, crc: selection.crc) {
        case .executeInitPacket:
            return [.note("the bootloader already holds this init packet")] + ask(.executeInitPacket, .execute)
        case .sendRestOfInitPacket(let offset):
            initPacketFrom = offset
            return [.note("resuming the init packet at byte \(offset)")] + ask(.disableReceipts, .setPRN(0))
        case .sendWholeInitPacket:
            initPacketFrom = 0
            createdCommandObject = true
            return ask(.createCommand, .create(.command, size: UInt32(initPacket.count)))
        }
    }

    // MARK: - Data objects

    /// Where the data stage starts, from what Select(data) reported (as Nordic's clients decide).
    private mutating func dataStage(_ selection: DFUObjectSelection) -> [Action] {
        guard selection.maximumSize > 0, selection.maximumSize % 4 == 0 else {
            return failing(.malformedResponse, "bootloader reported a data object size of \(selection.maximumSize) bytes")
        }
        objectSize = selection.maximumSize
        if adaptsReceipts { receiptInterval = min(max(1, receiptInterval), packetsPerObject) }
        let start = resumePoint(maximumObjectSize: objectSize, selection)
        let durable = start.offset - (start.continuePartialObject ? start.offset % objectSize : 0)
        var actions: [Action] = [.acknowledged(durable)]
        if selection.offset > 0, start.offset < selection.offset {
            actions.append(.note("the bootloader's \(selection.offset) bytes differ from this image; sending again from byte \(start.offset)"))
            // From byte 0 too: Create rewinds to the last executed object, wherever it ends.
            checksExecutedPrefix = true
        }
        if start.executeFirst, start.offset > 0 {
            // The object ending at the offset may not have been executed: Execute it first.
            objectStart = start.offset
            crcAtObjectStart = prefixCRC(upTo: objectStart)
            if objectStart == image.count {
                return actions + [.enter(.verifying)] + ask(.executeHeldObject, .execute, wait: .verification)
            }
            return actions + ask(.executeHeldObject, .execute)
        }
        actions.append(.enter(.transferring))
        objectStart = start.offset - start.offset % objectSize
        crcAtObjectStart = prefixCRC(upTo: objectStart)
        guard start.continuePartialObject else { return actions + createObject() }
        // Part of this object arrived: no Create (it would rewind), stream the rest.
        objectEnd = min(objectStart + objectSize, image.count)
        position = objectStart
        crcAtPosition = crcAtObjectStart
        advance(to: start.offset)
        firstObject = false
        return actions + [.note("continuing object at byte \(objectStart) from byte \(start.offset)")] + nextSegment()
    }

    /// Create the current object (again, after a failed attempt) and stream it from its start.
    private mutating func createObject() -> [Action] {
        objectEnd = min(objectStart + objectSize, image.count)
        position = objectStart
        crcAtPosition = crcAtObjectStart
        if adaptsReceipts, announcedInterval != receiptInterval {
            announcedInterval = receiptInterval
            return ask(.adjustReceipts, .setPRN(UInt16(clamping: receiptInterval)))
        }
        return ask(.createObject, .create(.data, size: UInt32(objectEnd - objectStart)))
    }

    /// The next run of packets up to a receipt (or to the object's end).
    private mutating func nextSegment() -> [Action] {
        let end: Int
        let receipt: Bool
        // What the bootloader counts: the interval it was told.
        let interval = announcedInterval ?? receiptInterval
        countedInterval = interval
        if interval > 0 {
            end = min(position + interval * payloadSize, objectEnd)
            // A receipt follows every n-th packet, the last one short or not.
            receipt = objectEnd > position + (interval - 1) * payloadSize
        } else {
            end = objectEnd
            receipt = false
        }
        if pipelines, end == objectEnd, objectEnd < image.count { return streamAndQueue(position..<end, receipt: receipt) }
        phase = .streaming(position..<end, receipt: receipt)
        return [.stream(position..<end, receipt: receipt)]
    }

    /// The current object arrived whole: execute it.
    private mutating func executeObject() -> [Action] {
        let adapted = objectVerified()
        guard objectEnd == image.count else { return adapted + ask(.executeObject, .execute) }
        return adapted + [.enter(.verifying)] + ask(.executeObject, .execute, wait: .verification)
    }

    /// The end of an object that is not the last, pipelined: its last packets, then Execute of
    /// it, Set PRN when the adaptive interval changed, and Create of the next, back to back.
    ///
    /// The SDK handles packets and requests FIFO: Execute checks that the object is complete
    /// (0x08 when a packet was lost), moves `offset_last` to its end at once, and answers when
    /// flash is idle (it re-queues itself behind the Create meanwhile, so its answer may come
    /// second); the Create that follows rewinds to `offset_last` and erases. The receipt at the
    /// object's end (or Calculate Checksum, queued first when no receipt falls there) reports
    /// the bytes; nothing of the next object is sent before every answer is in.
    private mutating func streamAndQueue(_ segment: Range<Int>, receipt: Bool) -> [Action] {
        var requests: [DFURequest] = receipt ? [] : [.calculateChecksum]
        requests.append(.execute)
        if adaptsReceipts, announcedInterval != receiptInterval {
            announcedInterval = receiptInterval
            requests.append(.setPRN(UInt16(clamping: receiptInterval)))
        }
        let nextEnd = min(objectEnd + objectSize, image.count)
        requests.append(.create(.data, size: UInt32(nextEnd - objectEnd)))
        queue = QueueOutcome(askedChecksum: !receipt)
        advance(to: segment.upperBound)
        phase = .awaitingQueued(receipt ? [.calculateChecksum] + requests : requests)
        return [.streamThenQueue(segment, requests)]
    }

    /// One answer to the queue behind an object, matched by op code.
    private mutating func queuedAnswer(_ response: DFUResponse, remaining: [DFURequest]) -> [Action] {
        guard let index = remaining.firstIndex(where: { $0.opCode.rawValue == response.opCode }) else {
            // A receipt for a refused packet, or one that came late, is a Calculate Checksum
            // response: skip it.
            if response.opCode != DFUOpCode.calculateChecksum.rawValue {
                queue.surprise = queue.surprise ?? "the bootloader answered op code 0x\(Hex.digits(response.opCode, uppercase: false)), which was not asked"
            }
            return awaitQueue(remaining)
        }
        var remaining = remaining
        let request = remaining[index]
        switch request {
        case .calculateChecksum:
            // A receipt for a packet the bootloader refused carries no offset: not this one.
            guard response.result == .success else { return awaitQueue(remaining) }
            queue.reported = .init(offset: Int(response.values[0]), crc: response.values[1])
        case .execute:
            if response.result == .operationNotPermitted {
                queue.executeRefused = true
            } else if response.result != .success {
                return failing(.deviceRejected, "bootloader rejected \(response.failureDescription(for: "Execute of the object at byte \(objectStart)"))")
            }
        case .create:
            if response.result != .success { queue.createFailure = response }
        default:
            guard response.result == .success else {
                return failing(.deviceRejected, "bootloader rejected \(response.failureDescription(for: request.description))")
            }
        }
        remaining.remove(at: index)
        if remaining == [.calculateChecksum], queue.executeRefused, !queueAskedChecksum {
            // The object is short: the receipt counted over its packets will not come. Ask.
            return [.note("the bootloader refused to execute the object at byte \(objectStart) (0x08): it is short; asking for its offset")]
                + ask(.checkQueuedObject, .calculateChecksum)
        }
        guard remaining.isEmpty else { return awaitQueue(remaining) }
        return queueAnswered()
    }

    /// Waits for the next answer to the queue: the receipt alone (no request asked for it) is
    /// waited for as a receipt, which may never come when a packet was lost.
    private mutating func awaitQueue(_ remaining: [DFURequest]) -> [Action] {
        phase = .awaitingQueued(remaining)
        let receiptOnly = remaining == [.calculateChecksum] && !queueAskedChecksum
        return [receiptOnly ? .listen(awaiting: .receipt, wait: .receipt) : .listen(awaiting: .answers(to: remaining), wait: .response)]
    }

    /// Whether the queue behind the current object asked Calculate Checksum (no receipt due).
    ///
    /// Decided when the queue was written, from the interval the object's packets were counted
    /// at: a Set PRN in the same queue (`prn=auto`) announces the next object's interval, and
    /// judging by it took a receipt that was due for one that was not (or the reverse), so a
    /// short object waited the response timeout for an answer never asked (campaign seed 12045).
    private var queueAskedChecksum: Bool { queue.askedChecksum }

    /// Every answer to the queue is in: go on, resend, or leave the pipelined flow.
    private mutating func queueAnswered() -> [Action] {
        if let failure = queue.createFailure, !queue.executeRefused {
            let create = DFURequest.create(.data, size: UInt32(min(objectEnd + objectSize, image.count) - objectEnd))
            let erase =
                failure.result == .invalidObject ? "; for a data object this means the bootloader could not erase its flash (worn or protected flash?)" : ""
            return failing(.deviceRejected, "bootloader rejected \(failure.failureDescription(for: create.description))\(erase)")
        }
        if let surprise = queue.surprise { return leavePipeline(surprise) }
        guard let reported = queue.reported else { return leavePipeline("no receipt ended the object at byte \(objectStart)") }
        let arrived = reported.offset == objectEnd && reported.crc == crcAtPosition.value
        switch (arrived, queue.executeRefused) {
        case (false, true):
            // A packet was lost: the object was not executed, and the Create that followed
            // rewound the bootloader to its start. Send it again.
            return objectArrivedWrong(reportedOffset: reported.offset)
        case (false, false):
            // The right number of bytes, not the right bytes (a write duplicated or reordered on
            // the way): executed, and no Create rewinds past an executed object. Start over from
            // the init packet (its Create resets all progress), one request at a time.
            return restartFromInitPacket(
                "the bootloader executed the object at byte \(objectStart) although it reports \(reported.offset) bytes with CRC-32 \(Hex.number(reported.crc)) (expected \(objectEnd) bytes, \(Hex.number(crcAtPosition.value)))"
            )
        case (true, true):
            return leavePipeline("the bootloader refused to execute the object at byte \(objectStart) (0x08) although all its bytes arrived")
        case (true, false):
            // All there, but the bootloader's count of packets was not the machine's.
            let adapted = (queue.receiptMissing ? packetsLost() : []) + objectVerified()
            objectStart = objectEnd
            crcAtObjectStart = crcAtPosition
            attempt = 1
            objectEnd = min(objectStart + objectSize, image.count)
            position = objectStart
            return adapted + [.acknowledged(objectStart)] + nextSegment()
        }
    }

    /// An object was executed with bytes not this image's, and no Create rewinds past an executed
    /// object: start over from the init packet (its Create resets all progress), one request at a
    /// time, up to `objectAttempts` times in all.
    private mutating func restartFromInitPacket(_ damage: String) -> [Action] {
        guard restartsAfterDamage < objectAttempts - 1 else {
            return failing(.verificationFailed, "\(damage), \(restartsAfterDamage + 1) times; run the update again")
        }
        restartsAfterDamage += 1
        pipelines = false
        initPacketFrom = 0
        createdCommandObject = true
        skippedInitPacket = false
        return [.note("\(damage); starting over from the init packet, one request at a time")]
            + ask(.createCommand, .create(.command, size: UInt32(initPacket.count)))
    }

    /// Back to one request at a time, from where the bootloader stands (as after a resume).
    private mutating func leavePipeline(_ reason: String) -> [Action] {
        pipelines = false
        return [.note("\(reason); leaving the pipelined flow and asking the bootloader where it stands")] + ask(.resynchronize, .select(.data))
    }

    /// The current object's bytes were verified: `prn=auto` counts a clean object, and after
    /// ``adaptiveRaiseAfter`` in a row doubles its interval (at most one receipt per object).
    private mutating func objectVerified() -> [Action] {
        failuresInARow = 0
        guard adaptsReceipts else { return [] }
        guard attempt == 1 else {
            cleanObjects = 0
            return []
        }
        cleanObjects += 1
        let top = min(packetsPerObject, receiptCeiling ?? packetsPerObject)
        guard cleanObjects >= Self.adaptiveRaiseAfter, receiptInterval < top else { return [] }
        cleanObjects = 0
        let raised = min(top, receiptInterval * 2)
        receiptInterval = raised
        receiptIntervals.append(raised)
        return [.note("prn=auto: \(Self.adaptiveRaiseAfter) objects arrived whole; raising the receipt interval to \(raised) packets")]
    }

    /// The link lost packets (a receipt or checksum differs, or a receipt did not come):
    /// `prn=auto` halves its interval, from the next Create.
    private mutating func packetsLost() -> [Action] {
        cleanObjects = 0
        guard adaptsReceipts else { return [] }
        // Packets were lost at the interval the bootloader counted: never go back up to it. An
        // interval longer than the object (a short last one) counted only its packets: lowering
        // from above them would leave its next attempt as it was (campaign seed 4207).
        let counted = Self.packets(in: max(1, objectEnd - objectStart), payloadSize: payloadSize)
        let lostAt = min(countedInterval ?? announcedInterval ?? receiptInterval, counted)
        receiptCeiling = max(1, min(receiptCeiling ?? lostAt, lostAt - 1))
        let lowered = max(1, min(receiptInterval, lostAt) / 2)
        guard lowered < receiptInterval || lowered < lostAt else { return [] }
        receiptInterval = lowered
        receiptIntervals.append(receiptInterval)
        return [.note("prn=auto: packets were lost; lowering the receipt interval to \(receiptInterval) packets")]
    }

    /// Set PRN for the data objects (the first, or after the init packet).
    private mutating func announceReceipts() -> [Action] {
        announcedInterval = receiptInterval
        if adaptsReceipts, receiptIntervals.isEmpty { receiptIntervals.append(receiptInterval) }
        return ask(.enableReceipts, .setPRN(UInt16(clamping: receiptInterval)))
    }

    /// Packets in a full data object.
    private var packetsPerObject: Int { Self.packets(in: objectSize, payloadSize: payloadSize) }

    private static func packets(in objectSize: Int, payloadSize: Int) -> Int {
        max(1, (objectSize + payloadSize - 1) / payloadSize)
    }

    static func list(_ requests: [DFURequest]) -> String {
        requests.map(\.description).joined(separator: ", ")
    }

    /// The bootloader holds other bytes than were sent for the current object: send it again,
    /// up to `objectAttempts` times in all, paced on the clock.
    ///
    /// This is the one place that decides about an object that arrived wrong. A link problem is
    /// assumed first: when the data path is gone but the Control Point still answers (a link in
    /// bluetoothd's disconnect timer), every resend fails at once, and the bootloader's progress
    /// is intact. So each resend waits ``resendDelay(afterFailures:)`` first, and after the last
    /// failed attempt the machine waits at least ``linkVerdictDelay`` and then asks Select(data):
    /// a link that died meanwhile fails that request, and the engine reconnects and resumes from
    /// Select. Only a bootloader that answers it, on a link that stayed up, is reported as
    /// dropping packets, with advice for the settings in force.
    private mutating func objectArrivedWrong(reportedOffset offset: Int) -> [Action] {
        let adapted = packetsLost()
        failuresInARow += 1
        if !adapted.isEmpty {
            // prn=auto lowered the interval: the object gets its attempts at the new one, after
            // the same pauses (a dying link fails the lower intervals too, and must drop first).
            objectsResent += 1
            phase = .delaying(then: .resendObject)
            let delay = Self.resendDelay(afterFailures: failuresInARow)
            return adapted + [
                .note(
                    "object at byte \(objectStart): bootloader reports \(offset) bytes with a different CRC; sending the object again in \(delay.humanReadable) with a receipt every \(receiptInterval) packets"
                ),
                .sleep(delay, purpose: "pausing before sending the object at byte \(objectStart) again"),
            ]
        }
        let delay = Self.resendDelay(afterFailures: attempt)
        guard attempt < objectAttempts else {
            let wait = max(delay, Self.linkVerdictDelay)
            lastReportedOffset = offset
            phase = .delaying(then: .probeLink)
            return adapted + [
                .note(
                    "object at byte \(objectStart): bootloader reports \(offset) bytes with a different CRC, \(attempt) times; waiting \(wait.humanReadable) for the link before giving up"
                ),
                .sleep(wait, purpose: "waiting for the link's verdict after repeated checksum failures"),
            ]
        }
        attempt += 1
        objectsResent += 1
        phase = .delaying(then: .resendObject)
        return adapted + [
            .note(
                "object at byte \(objectStart): bootloader reports \(offset) bytes with a different CRC; sending the object again in \(delay.humanReadable) (attempt \(attempt))"
            ),
            .sleep(delay, purpose: "pausing before sending the object at byte \(objectStart) again"),
        ]
    }

    /// The init packet's checksum differs (a write of it was lost or damaged): create it again
    /// and send it whole, up to `objectAttempts` times in all, paced and judged as an object is
    /// (``objectArrivedWrong(reportedOffset:)``). Nordic's clients send it again too.
    private mutating func initPacketArrivedWrong(offset: Int, crc: UInt32) -> [Action] {
        let delay = Self.resendDelay(afterFailures: initPacketAttempt)
        let received = "the bootloader received the init packet wrong: \(offset) bytes with CRC-32 \(Hex.number(crc))"
        guard initPacketAttempt < objectAttempts else {
            let wait = max(delay, Self.linkVerdictDelay)
            probingInitPacket = true
            phase = .delaying(then: .probeLink)
            return [
                .note("\(received), \(initPacketAttempt) times; waiting \(wait.humanReadable) for the link before giving up"),
                .sleep(wait, purpose: "waiting for the link's verdict after repeated init packet checksum failures"),
            ]
        }
        initPacketAttempt += 1
        phase = .delaying(then: .resendInitPacket)
        return [
            .note("\(received); sending it again in \(delay.humanReadable) (attempt \(initPacketAttempt))"),
            .sleep(delay, purpose: "pausing before sending the init packet again"),
        ]
    }

    /// The bootloader answered after the last failed attempt: the link is up, and it keeps
    /// losing packets. The advice names the settings in force.
    private mutating func droppingPackets(probe response: DFUResponse) -> [Action] {
        if probingInitPacket {
            return failing(
                .verificationFailed,
                "the bootloader received the init packet wrong \(initPacketAttempt) times on a link that stayed up; run the update again"
            )
        }
        let held = (response.result == .success ? DFUObjectSelection(response)?.offset : nil) ?? lastReportedOffset
        let smaller = max(20, payloadSize / 2 / 4 * 4)
        let advice: String
        switch adaptsReceipts ? -1 : receiptInterval {
        case -1:
            advice =
                "prn=auto is set (a receipt every \(receiptInterval) packets now); try a lower --max-chunk (packets are \(payloadSize) bytes; such as \(smaller))"
        case 0: advice = "packet receipts are off; try --param prn=12, or a lower --max-chunk (such as \(smaller))"
        case 1: advice = "prn=1 is already set; try a lower --max-chunk (packets are \(payloadSize) bytes; such as \(smaller))"
        default:
            advice = "prn=\(receiptInterval) is already set; try --param prn=1 or a lower --max-chunk (packets are \(payloadSize) bytes; such as \(smaller))"
        }
        return failing(
            .verificationFailed,
            "object at byte \(objectStart) failed its checksum \(attempt) times on a link that stayed up (bootloader has \(held) bytes); the bootloader drops packets: \(advice)"
        )
    }

    private mutating func finish(_ actions: [Action]) -> [Action] {
        phase = .done
        return actions + [.finished]
    }

    // MARK: - Helpers

    private mutating func advance(to end: Int) {
        guard end > position else { return }
        do {
            try image.forEachWindow(in: position..<end) { crcAtPosition.update($0) }
        } catch {
            unreadable = unreadable ?? error
        }
        position = end
    }

    /// CRC-32 of the image's first `end` bytes (a failed read is kept for ``emit(_:)``).
    private mutating func prefixCRC(upTo end: Int) -> CRC32 {
        do {
            return CRC32(continuingFrom: try image.crc32(of: 0..<end))
        } catch {
            unreadable = unreadable ?? error
            return CRC32()
        }
    }

    /// Where Select(data)'s answer lets the data stage start (a failed read is kept for
    /// ``emit(_:)``, and the stage starts over).
    private mutating func resumePoint(maximumObjectSize: Int, _ selection: DFUObjectSelection) -> DFUDataResumePoint {
        do {
            return try DFUDataResumePoint.decide(image: image, maximumObjectSize: maximumObjectSize, offset: selection.offset, crc: selection.crc)
        } catch {
            unreadable = unreadable ?? error
            return .create(from: 0)
        }
    }

    private mutating func ask(_ step: Step, _ request: DFURequest, wait: Wait = .response) -> [Action] {
        phase = .awaiting(step, request, wait)
        return [.send(request, wait: wait)]
    }

    /// Queues `actions` and returns the first.
    ///
    /// A read of the image that failed while making them (its file changed since it was opened)
    /// fails the update instead: no action built on other bytes goes out.
    private mutating func emit(_ actions: [Action]) -> Action {
        if let error = unreadable {
            unreadable = nil
            return fail(error)
        }
        precondition(!actions.isEmpty)
        pending = Array(actions.dropFirst())
        return actions[0]
    }

    private mutating func fail(_ error: OTAError) -> Action {
        phase = .failed
        pending = []
        return .fail(error)
    }

    private mutating func failing(_ code: OTAError.Code, _ message: String) -> [Action] {
        phase = .failed
        return [.fail(OTAError(code, message))]
    }

    /// Whether `selection` shows bytes of this image to keep (an object to execute, or part of
    /// one to continue).
    private func holdsPrefixOfImage(_ selection: DFUObjectSelection) -> Bool {
        guard selection.maximumSize > 0, selection.maximumSize % 4 == 0 else { return false }
        guard
            let start = try? DFUDataResumePoint.decide(
                image: image, maximumObjectSize: selection.maximumSize, offset: selection.offset, crc: selection.crc)
        else { return false }
        return start.offset > 0 && (start.executeFirst || start.continuePartialObject)
    }

    private var activity: String {
        switch phase {
        case .idle: "idle"
        case .awaiting(_, let request, _): "waiting for the response to \(request)"
        case .awaitingQueued(let requests): "waiting for the answers to \(Self.list(requests))"
        case .writingInitPacket: "writing the init packet"
        case .streaming: "streaming data"
        case .delaying: "waiting"
        case .done: "done"
        case .failed: "failed"
        }
    }
}
