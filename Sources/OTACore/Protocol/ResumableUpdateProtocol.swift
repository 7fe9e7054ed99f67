/// A protocol whose device keeps what it received across disconnects, so the engine can
/// reconnect and continue instead of failing.
///
/// After a lost link (or a stall or timeout) the engine reconnects with bounded backoff
/// (``ResumePolicy``), calls ``resumePoint(for:context:)`` to learn where the device stands, and
/// hands that point to ``run(_:resumingFrom:context:)``, which continues from it without asking
/// the device again. The same happens after the protocol asked for a reconnect
/// (``UpdateOutcome/reconnect(reason:after:)``).
public protocol ResumableUpdateProtocol: UpdateProtocol {
    /// Protocol-specific facts read while finding the resume point (framed: its Status; Nordic:
    /// the Select(command) and Select(data) responses), handed back to the run that follows so
    /// it need not ask again.
    associatedtype Checkpoint: Sendable

    /// Asks the device how much of `image` it already holds. Returns `nil` when it holds none of
    /// it (no session, or a session for another image).
    func resumePoint(for image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> ResumePoint<Checkpoint>?

    /// Sends `image`, continuing from `point` when the engine found one (`nil`: the first run, or
    /// the device holds none of the image).
    ///
    /// - Returns: as ``UpdateProtocol/run(_:context:)``.
    func run(
        _ image: FirmwareImage,
        resumingFrom point: ResumePoint<Checkpoint>?,
        context: UpdateContext
    ) async throws(OTAError) -> UpdateOutcome
}

extension ResumableUpdateProtocol {
    /// Runs from the start: ``run(_:resumingFrom:context:)`` with no resume point.
    public func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
        try await run(image, resumingFrom: nil, context: context)
    }
}

/// Where a device stands in an interrupted update.
public struct ResumePoint<Checkpoint: Sendable>: Sendable {
    /// Bytes of the image the device holds durably, from the start.
    public var offset: Int
    /// A short description for the log ("device holds 120000 of 200000 bytes").
    public var detail: String
    /// What the protocol read to find this point, for the run that follows.
    public var checkpoint: Checkpoint

    /// Creates a resume point.
    public init(offset: Int, detail: String, checkpoint: Checkpoint) {
        self.offset = offset
        self.detail = detail
        self.checkpoint = checkpoint
    }
}

extension ResumePoint where Checkpoint == Void {
    /// Creates a resume point that carries nothing but the offset.
    public init(offset: Int, detail: String) {
        self.init(offset: offset, detail: detail, checkpoint: ())
    }
}

extension ResumePoint: Equatable where Checkpoint: Equatable {}
extension ResumePoint: Hashable where Checkpoint: Hashable {}

/// A protocol that can tell the device to discard an update in progress.
///
/// Aborting is never automatic: only an explicit user request (`ota abort`) does it. A lost
/// link or Ctrl-C pauses instead.
public protocol AbortableUpdateProtocol: UpdateProtocol {
    /// Tells the device to discard its update session, and says what there was to discard as
    /// far as the protocol can tell.
    func abort(context: UpdateContext) async throws(OTAError) -> AbortOutcome
}

/// What an abort found on the device, as far as its protocol can tell.
public enum AbortOutcome: Sendable, Hashable {
    /// The device had an update in progress and discarded it; `detail` says what it held
    /// ("94400 of 200000 bytes").
    case discarded(detail: String)
    /// The device had no update in progress, so there was nothing to discard; `detail` says
    /// what it reported ("its status is idle").
    case nothingInProgress(detail: String)
    /// The device was told to discard any update in progress, but the protocol has no way to
    /// learn whether there was one (generic: ABORT has no reply and the device no status).
    case unconfirmed
}
