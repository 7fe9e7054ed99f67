import Foundation
import OTACore
import Synchronization

/// The sequence numbers of one client's conversation, across the channels of its connections
/// and calls: the next to hand out, and the last ones answered (at most
/// ``SMPChannel/answeredMemory``). Shared, so a second answer still on its way when the next
/// channel opens is recognised as one rather than taken for an answer to a new request.
final class SMPSequences: Sendable {
    private struct State {
        var next: UInt8 = 0
        var answered: [UInt8] = []
    }

    private let state = Mutex(State())

    init() {}

    /// The next sequence number to use.
    var next: UInt8 {
        get { state.withLock { $0.next } }
        set { state.withLock { $0.next = newValue } }
    }

    /// Hands out the next sequence number.
    func take() -> UInt8 {
        state.withLock { state in
            defer { state.next &+= 1 }
            return state.next
        }
    }

    /// Records that the request with `sequence` was answered.
    func answered(_ sequence: UInt8) {
        state.withLock { state in
            state.answered.removeAll { $0 == sequence }
            state.answered.append(sequence)
            if state.answered.count > SMPChannel.answeredMemory { state.answered.removeFirst() }
        }
    }

    /// Whether `sequence` was answered lately.
    func wasAnswered(_ sequence: UInt8) -> Bool { state.withLock { $0.answered.contains(sequence) } }
}

/// One run's SMP conversation over the characteristic: requests cut into ATT writes, responses
/// reassembled from notifications by their header's length, sequence numbers handed out in
/// order (from the client's ``SMPSequences``). Used by the driver only; the exchange logic is in
/// the state machines.
final class SMPChannel: Sendable {
    private struct State {
        var reassembler = SMPReassembler()
        var frames: [Data] = []
    }

    /// How many answered sequence numbers a client remembers, to recognise a second answer to
    /// one of them (a request that reached the device twice) and skip it.
    static let answeredMemory = 16

    let context: UpdateContext
    let inbox: NotificationInbox
    let characteristic: CharacteristicID
    let sequences: SMPSequences
    private let state = Mutex(State())

    init(context: UpdateContext, inbox: NotificationInbox, characteristic: CharacteristicID, sequences: SMPSequences = SMPSequences()) {
        self.context = context
        self.inbox = inbox
        self.characteristic = characteristic
        self.sequences = sequences
    }

    /// Bytes per ATT write: the engine's chunk plan.
    var writeLength: Int { context.chunkPlan.payloadSize }

    /// The next sequence number to use.
    var sequence: UInt8 {
        get { sequences.next }
        set { sequences.next = newValue }
    }

    /// The next whole frame.
    /// `purpose` is made only when an error names it.
    func nextFrame(timeout: Duration?, awaiting purpose: @autoclosure @Sendable () -> String) async throws(OTAError) -> Data {
        while true {
            if let frame = state.withLock({ $0.frames.isEmpty ? nil : $0.frames.removeFirst() }) { return frame }
            let fragment = try await inbox.next(timeout: timeout, awaiting: purpose())
            let result: Result<Data?, SMPFrameError> = state.withLock { state in
                // A whole answer in one notification, nothing queued or partly received: the
                // frame itself (what `append` would return alone, without its array).
                if state.frames.isEmpty, state.reassembler.isWholeMessage(fragment) { return .success(fragment) }
                do throws(SMPFrameError) {
                    state.frames += try state.reassembler.append(fragment)
                    return .success(nil)
                } catch {
                    return .failure(error)
                }
            }
            switch result {
            case .success(let frame?): return frame
            case .success(nil): continue
            case .failure(let error): throw MCUmgrWireError.frame(error).otaError
            }
        }
    }

    /// Records that the request with `sequence` was answered.
    func answered(_ sequence: UInt8) { sequences.answered(sequence) }

    /// The next whole frame that is not a second answer to a request already answered: a write
    /// that reached the device twice makes it answer twice. `awaits` says which sequence numbers
    /// are awaited (never skipped); the frame comes with its sequence number (`nil` for a frame
    /// shorter than a header), read once.
    func nextAnswer(
        timeout: Duration?, awaiting purpose: @autoclosure @Sendable () -> String, awaits: (UInt8) -> Bool
    ) async throws(OTAError) -> (frame: Data, sequence: UInt8?) {
        while true {
            let frame = try await nextFrame(timeout: timeout, awaiting: purpose())
            guard let sequence = SMPHeader.sequence(of: frame) else { return (frame, nil) }
            guard !awaits(sequence), sequences.wasAnswered(sequence) else { return (frame, sequence) }
            context.note("skipped a second answer to SMP request \(sequence), which reached the device twice")
        }
    }

    /// Writes a command frame, cut into ATT writes (no image progress counted).
    func write(_ frame: Data, purpose: String) async throws(OTAError) {
        var position = 0
        while position < frame.count {
            let end = min(position + writeLength, frame.count)
            try await context.write(frame[position..<end], to: characteristic, kind: .withoutResponse, purpose: purpose)
            position = end
        }
    }

    /// Sends `request` and returns its response's payload, errors in either form thrown with
    /// their meaning.
    func exchange(_ request: MCUmgrRequest, timeout: Duration? = nil) async throws(OTAError) -> CBOR {
        let sequence = sequences.take()
        try await write(request.encoded(sequence: sequence), purpose: "the \(request)")
        let (frame, _) = try await nextAnswer(timeout: timeout, awaiting: "response to the \(request)", awaits: { $0 == sequence })
        answered(sequence)
        do throws(MCUmgrWireError) {
            let message: SMPMessage
            do {
                message = try SMPMessage(decoding: frame)
            } catch {
                throw .frame(error)
            }
            return try message.payload(answering: request, sequence: sequence)
        } catch {
            throw error.otaError
        }
    }

    /// Sends `request` and decodes its response's payload with `decode`.
    func exchange<T>(
        _ request: MCUmgrRequest, timeout: Duration? = nil, as decode: (CBOR) throws(MCUmgrWireError) -> T
    ) async throws(OTAError) -> T {
        let payload = try await exchange(request, timeout: timeout)
        do throws(MCUmgrWireError) {
            return try decode(payload)
        } catch {
            throw error.otaError
        }
    }
}
