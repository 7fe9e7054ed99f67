import Foundation
import OTACore

/// The image upload as a value type: requests sized to fill the device's SMP buffer, each cut into
/// ATT writes, a window of them in flight, offsets re-synchronised from every response's `off`.
///
/// One method per input — ``start()``, ``sent()``, ``received(_:)``, ``delayElapsed()`` — each
/// returning the next ``Action``. No I/O: the driver (``MCUmgrClient``) writes, waits and sleeps.
///
/// - The first request (offset 0) carries `len`, `image` (when not 0) and `sha` (the file's
///   SHA-256), and goes alone: the device erases the slot before answering it, so its answer is
///   awaited with the long erase timeout. A device that already holds part of this file answers
///   it with its offset, and the upload continues from there.
/// - Later requests fill the window: each is sent at the offset the previous one ends at, and
///   its response is expected to report that end as `off`.
/// - A response with another `off` (a lost or refused request, a device that started over)
///   invalidates everything in flight: the machine waits until every request in flight is
///   answered, then continues from the last `off` the device reported. `rc` 10 (busy) does the
///   same after a pause.
/// - The last response's `"match": false` (the device's SHA-256 of what it stored is not `sha`:
///   damaged writes left valid requests with other bytes) starts the upload over from byte 0,
///   up to ``Settings/maximumRestarts`` times in a row: ``Action/startOver(reason:)``, then a
///   new first request with `len` and `sha`, which a device that finished an upload (Zephyr's
///   `img_mgmt` resets its upload state then) takes as a new one, erasing its slot again.
public struct MCUmgrUploadStateMachine: Sendable {
    /// How requests are sized and paced.
    public struct Settings: Sendable, Hashable {
        /// The largest SMP frame, header included, the device takes (its `buf_size`).
        public var frameLimit: Int
        /// Requests in flight at most.
        public var window: Int
        /// Data lengths end on multiples of this (flash write alignment), so the device accepts
        /// exactly what the client predicts.
        public var alignment: Int
        /// Bytes per ATT write (the engine's chunk plan).
        public var writeLength: Int
        /// How long the first response (after the slot erase) may take.
        public var eraseTimeout: Duration
        /// Pause before sending again after `rc` 10 (busy).
        public var busyDelay: Duration
        /// Busy answers in a row, without progress, before giving up.
        public var maximumBusyRetries: Int
        /// Re-synchronisations in a row that brought no progress before giving up (a device
        /// that keeps answering the same offset without taking the data).
        public var maximumResyncsWithoutProgress = 8
        /// Uploads started over from byte 0 after the device's SHA-256 check failed (`"match":
        /// false`) before the upload fails. 0 (default): the first mismatch fails it. The client
        /// takes the engine's ``ResumePolicy/maximumAttempts``, which bounds restarts from byte 0.
        public var maximumRestarts = 0

        /// The frame size requests aim at. Pipelined, the link is the bottleneck: ``frameLimit`` is
        /// rounded down to whole ATT writes when it spans several, since a short last write costs
        /// a whole radio packet (2475 bytes in 244-byte writes are ten full writes and one of 35;
        /// 2440 are ten full ones). With one request in flight the round trip is the bottleneck,
        /// and the whole buffer is used.
        public var frameSize: Int {
            window > 1 && frameLimit > writeLength ? frameLimit - frameLimit % writeLength : frameLimit
        }

        /// Settings.
        public init(
            frameLimit: Int, window: Int, alignment: Int = 4, writeLength: Int, eraseTimeout: Duration = .seconds(30),
            busyDelay: Duration = .milliseconds(100), maximumBusyRetries: Int = 20
        ) {
            precondition(window > 0 && alignment > 0 && writeLength > 0)
            self.frameLimit = frameLimit
            self.window = window
            self.alignment = alignment
            self.writeLength = writeLength
            self.eraseTimeout = eraseTimeout
            self.busyDelay = busyDelay
            self.maximumBusyRetries = maximumBusyRetries
        }
    }

    /// One ATT write of a request: its bytes and the image bytes among them.
    public struct Write: Sendable, Hashable {
        /// What to write.
        public var bytes: Data
        /// The image bytes it carries (empty for a write of header and fields only).
        public var covering: Range<Int>
    }

    /// One upload request on its way.
    public struct Outbound: Sendable, Hashable {
        /// Its sequence number.
        public var sequence: UInt8
        /// The image bytes it carries.
        public var range: Range<Int>
        /// The whole SMP frame.
        public var frame: Data
        /// Bytes per ATT write.
        public var writeLength: Int

        /// How many ATT writes the frame is cut into.
        public var writeCount: Int { (frame.count + writeLength - 1) / writeLength }

        /// The frame's `index`-th ATT write (of ``writeCount``): a slice of ``frame``, and the
        /// image bytes among it (the image bytes are the frame's tail). Made as the driver sends
        /// it, so a request allocates no array of writes.
        public func write(_ index: Int) -> Write {
            let start = frame.startIndex + index * writeLength
            let end = min(start + writeLength, frame.endIndex)
            let dataStart = frame.endIndex - range.count
            let lower = max(start, dataStart) - dataStart
            let upper = max(end, dataStart) - dataStart
            return Write(bytes: frame[start..<end], covering: (range.lowerBound + lower)..<(range.lowerBound + upper))
        }

        /// The frame cut into ATT writes, in order.
        public var writes: [Write] { (0..<writeCount).map(write) }
    }

    /// What the driver does next.
    public enum Action: Sendable {
        /// Write these requests, each write in order (`rewoundTo`: the transfer moved back to
        /// this offset first), then call ``sent()``.
        case send([Outbound], rewoundTo: Int?)
        /// Wait for the next whole SMP frame (`timeout` `nil`: the engine's response timeout),
        /// then call ``received(_:)``; ``acknowledged`` may have changed.
        case awaitResponse(timeout: Duration?, awaiting: Awaited)
        /// Sleep, then call ``delayElapsed()``.
        case wait(Duration, purpose: String)
        /// The device's SHA-256 check of the finished upload failed: report `reason`, move the
        /// progress back to byte 0 (the device holds nothing usable), then call ``restart()``.
        case startOver(reason: String)
        /// The device holds the whole image; `match` is its check of `sha`, when it made one.
        case finished(match: Bool?)
        /// The upload failed.
        case fail(OTAError)
    }

    /// The answer an ``Action/awaitResponse(timeout:awaiting:)`` waits for; its description
    /// names it in a timeout's message, and is made only then.
    public enum Awaited: Sendable, Hashable, CustomStringConvertible {
        /// The first request's answer, which comes after the device erased its slot.
        case firstAfterErase
        /// The answer to the upload request with this sequence number.
        case upload(sequence: UInt8)

        /// What is awaited, in words.
        public var description: String {
            switch self {
            case .firstAfterErase: "first image upload response (the device erases its slot first)"
            case .upload(let sequence): "image upload response (sequence \(sequence))"
            }
        }
    }

    private struct InFlight: Sendable, Hashable {
        var sequence: UInt8
        var range: Range<Int>
    }

    private let image: FirmwareImage
    private let sha: Data
    private let imageNumber: Int
    /// The settings.
    public let settings: Settings
    private var inFlight: [InFlight] = []
    private var nextOffset: Int
    private var draining = false
    private var reportedOffset: Int
    private var busyPending = false
    private var busyInARow = 0
    private var lastMatch: Bool?
    private var failed = false
    private var resyncsWithoutProgress = 0

    /// The bytes the device holds, from its last answer.
    public private(set) var acknowledged: Int
    /// The sequence number of the next request.
    public private(set) var nextSequence: UInt8
    /// Times the device reported an unexpected offset (and the window was resent from it).
    public private(set) var resyncs = 0
    /// Busy answers received.
    public private(set) var busyAnswers = 0
    /// Times the upload started over from byte 0 after a failed SHA-256 check (with the
    /// initialiser's `restartedBefore`).
    public private(set) var restarts = 0

    /// An upload of `image` whose file SHA-256 is `sha`, continuing at `offset` (0: from the
    /// first request); `restartedBefore` counts the restarts from byte 0 this update already made
    /// (on earlier connections), towards ``Settings/maximumRestarts``.
    public init(
        image: FirmwareImage, sha: Data, imageNumber: Int = 0, settings: Settings, startingAt offset: Int = 0, firstSequence: UInt8 = 0,
        restartedBefore: Int = 0
    ) {
        restarts = restartedBefore
        self.image = image
        self.sha = sha
        self.imageNumber = imageNumber
        self.settings = settings
        nextOffset = offset
        reportedOffset = offset
        acknowledged = offset
        nextSequence = firstSequence
    }

    /// Whether the only request in flight is the first, whose answer waits on the slot erase.
    public var isAwaitingErase: Bool { inFlight.first?.range.lowerBound == 0 }

    /// The sequence numbers in flight, oldest first.
    public var sequencesInFlight: [UInt8] { inFlight.map(\.sequence) }

    /// Whether the request with `sequence` is in flight (awaiting its answer).
    public func isInFlight(_ sequence: UInt8) -> Bool { inFlight.contains { $0.sequence == sequence } }

    /// Starts: the first request (or, resuming, a window of requests).
    public mutating func start() -> Action {
        fill(rewoundTo: nil)
    }

    /// The last ``Action/send(_:rewoundTo:)`` was written.
    public mutating func sent() -> Action {
        awaitOrFinish()
    }

    /// The upload starts over after ``Action/startOver(reason:)``: the first request again.
    public mutating func restart() -> Action {
        fill(rewoundTo: 0)
    }

    /// The pause after a busy answer is over.
    public mutating func delayElapsed() -> Action {
        busyPending = false
        return fill(rewoundTo: nextOffset)
    }

    /// A whole SMP frame arrived.
    public mutating func received(_ frame: Data) -> Action {
        guard !failed else { return .fail(OTAError(.internal, "the upload state machine received a frame after failing")) }
        // Nearly every answer is `{"off": n}`: read in place; anything else decoded in full.
        if let answer = ImageUploadAnswer(frame: frame) {
            guard let index = inFlight.firstIndex(where: { $0.sequence == answer.sequence }) else {
                return fail(MCUmgrWireError.unknownSequence(answer.sequence, awaiting: sequencesInFlight).otaError)
            }
            return accept(answer.response, to: inFlight.remove(at: index))
        }
        let message: SMPMessage
        do {
            message = try SMPMessage(decoding: frame)
        } catch {
            return fail(MCUmgrWireError.frame(error).otaError)
        }
        guard let index = inFlight.firstIndex(where: { $0.sequence == message.header.sequence }) else {
            return fail(MCUmgrWireError.unknownSequence(message.header.sequence, awaiting: sequencesInFlight).otaError)
        }
        let request = inFlight.remove(at: index)
        let uploadRequest = MCUmgrRequest.upload(ImageUploadRequest(offset: request.range.lowerBound, data: Data()))
        let response: ImageUploadResponse
        do {
            response = try ImageUploadResponse(payload: message.payload(answering: uploadRequest, sequence: request.sequence))
        } catch {
            if case .device(let deviceError, _) = error, deviceError.isBusy {
                busyAnswers += 1
                busyInARow += 1
                guard busyInARow <= settings.maximumBusyRetries else {
                    return fail(
                        OTAError(
                            .deviceRejected, "device stayed busy for \(busyInARow) upload requests in a row at byte \(request.range.lowerBound): \(deviceError)"
                        ))
                }
                busyPending = true
                resynchronise(to: request.range.lowerBound)
                return awaitOrResume()
            }
            return fail(error.otaError)
        }
        return accept(response, to: request)
    }

    /// Takes the device's answer to `request`.
    private mutating func accept(_ response: ImageUploadResponse, to request: InFlight) -> Action {
        guard response.offset <= image.count else {
            return fail(MCUmgrWireError.offsetBeyondImage(offset: response.offset, length: image.count).otaError)
        }
        if response.offset > acknowledged {
            busyInARow = 0
            resyncsWithoutProgress = 0
        }
        lastMatch = response.match ?? lastMatch
        if response.offset == request.range.upperBound, !draining {
            acknowledged = response.offset
            reportedOffset = response.offset
            return awaitOrFill()
        }
        resynchronise(to: response.offset)
        return awaitOrResume()
    }

    // MARK: - Steps

    private mutating func resynchronise(to offset: Int) {
        if !draining, inFlight.isEmpty == false || offset != nextOffset {
            resyncs += 1
            resyncsWithoutProgress += 1
        }
        draining = true
        reportedOffset = offset
        acknowledged = offset
    }

    /// While draining: wait for the rest in flight; once none is, continue from the device's
    /// offset (after the busy pause, if one is due).
    private mutating func awaitOrResume() -> Action {
        guard inFlight.isEmpty else { return awaitResponse() }
        guard resyncsWithoutProgress <= settings.maximumResyncsWithoutProgress else {
            return fail(
                OTAError(
                    .deviceRejected,
                    "device asked for byte \(reportedOffset) again \(resyncsWithoutProgress) times in a row without taking data; it refuses the upload there"
                ))
        }
        draining = false
        nextOffset = reportedOffset
        if reportedOffset == image.count { return finish() }
        if busyPending { return .wait(settings.busyDelay, purpose: "the device said it is busy; waiting before sending byte \(nextOffset) again") }
        return fill(rewoundTo: nextOffset)
    }

    private mutating func awaitOrFill() -> Action {
        if nextOffset < image.count, inFlight.count < limit { return fill(rewoundTo: nil) }
        return awaitOrFinish()
    }

    private mutating func awaitOrFinish() -> Action {
        if inFlight.isEmpty, acknowledged == image.count { return finish() }
        return awaitResponse()
    }

    /// The device holds every byte: done, unless its SHA-256 check failed, which starts the
    /// upload over (or, past ``Settings/maximumRestarts``, fails it).
    private mutating func finish() -> Action {
        guard lastMatch == false else { return .finished(match: lastMatch) }
        guard restarts < settings.maximumRestarts else {
            let message =
                restarts == 0
                ? "device reports the uploaded image does not match its SHA-256; the transfer was corrupted"
                : "device reports the uploaded image does not match its SHA-256 on \(restarts + 1) uploads in a row; the transfer keeps being corrupted: check the link (distance, interference, the adapter) and run the update again"
            return fail(OTAError(.verificationFailed, message))
        }
        restarts += 1
        nextOffset = 0
        reportedOffset = 0
        acknowledged = 0
        lastMatch = nil
        draining = false
        busyPending = false
        busyInARow = 0
        resyncsWithoutProgress = 0
        return .startOver(reason: "image failed its SHA-256 on the device; starting over (\(restarts) of \(settings.maximumRestarts))")
    }

    private func awaitResponse() -> Action {
        isAwaitingErase
            ? .awaitResponse(timeout: settings.eraseTimeout, awaiting: .firstAfterErase)
            : .awaitResponse(timeout: nil, awaiting: .upload(sequence: inFlight.first?.sequence ?? 0))
    }

    /// Requests in flight allowed now: one while the first is out, the window otherwise.
    private var limit: Int { nextOffset == 0 || isAwaitingErase ? 1 : settings.window }

    private mutating func fill(rewoundTo rewind: Int?) -> Action {
        if nextOffset >= image.count, inFlight.isEmpty { return finish() }
        var requests: [Outbound] = []
        while nextOffset < image.count, inFlight.count < limit {
            let request: Outbound
            switch makeRequest(at: nextOffset) {
            case .success(let made): request = made
            case .failure(let error): return fail(error)
            }
            inFlight.append(InFlight(sequence: request.sequence, range: request.range))
            nextSequence &+= 1
            nextOffset = request.range.upperBound
            requests.append(request)
        }
        guard !requests.isEmpty else { return awaitOrFinish() }
        return .send(requests, rewoundTo: rewind)
    }

    private mutating func fail(_ error: OTAError) -> Action {
        failed = true
        return .fail(error)
    }

    // MARK: - Sizing

    /// The request at `offset`, as long as the device's buffer takes.
    private func makeRequest(at offset: Int) -> Result<Outbound, OTAError> {
        let first = offset == 0
        func request(_ data: Data) -> ImageUploadRequest {
            first
                ? ImageUploadRequest(image: imageNumber == 0 ? nil : imageNumber, length: image.count, offset: 0, sha: sha, data: data)
                : ImageUploadRequest(offset: offset, data: data)
        }
        let length = Self.dataLength(
            fitting: settings.frameSize, overhead: SMPHeader.length + request(Data()).payloadLength - 1, offset: offset,
            alignment: settings.alignment, remaining: image.count - offset
        )
        guard length > 0 else {
            return .failure(
                OTAError(
                    .deviceRejected,
                    "the device takes SMP frames of at most \(settings.frameLimit) bytes, too few for an upload request with data at byte \(offset)"
                )
            )
        }
        let range = offset..<(offset + length)
        let data: Data
        do { data = try image[range] } catch { return .failure(error) }
        let frame = MCUmgrRequest.upload(request(data)).encoded(sequence: nextSequence)
        return .success(Outbound(sequence: nextSequence, range: range, frame: frame, writeLength: settings.writeLength))
    }

    /// The most data bytes a frame of at most `limit` bytes carries when everything but the
    /// data (and the data's byte-string head) takes `overhead`, its end aligned to `alignment`,
    /// at most `remaining`.
    static func dataLength(fitting limit: Int, overhead: Int, offset: Int, alignment: Int, remaining: Int) -> Int {
        var best = 0
        for head in [1, 2, 3, 5] {
            let candidate = limit - overhead - head
            if candidate > 0, CBOR.headLength(UInt64(candidate)) <= head { best = max(best, candidate) }
        }
        guard best < remaining else { return remaining }
        let end = (offset + best) / alignment * alignment
        return max(0, end - offset)
    }
}
