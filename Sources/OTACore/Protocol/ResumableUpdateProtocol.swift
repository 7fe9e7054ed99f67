/// A protocol whose device keeps what it received across disconnects, so the engine can
/// reconnect and continue instead of failing.
///
/// After a lost link (or a stall or timeout) the engine reconnects with bounded backoff
/// (``ResumePolicy``), calls ``resumePoint(for:context:)`` to report where the device stands, and
/// runs ``UpdateProtocol/run(_:context:)`` again; `run` continues from the device's offset.
public protocol ResumableUpdateProtocol: UpdateProtocol {
    /// Asks the device how much of `image` it already holds. Returns `nil` when it holds none of
    /// it (no session, or a session for another image).
    func resumePoint(for image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> ResumePoint?
}

/// Where a device stands in an interrupted update.
public struct ResumePoint: Sendable, Hashable {
    /// Bytes of the image the device holds durably, from the start.
    public var offset: Int
    /// A short description for the log ("device holds 120000 of 200000 bytes").
    public var detail: String

    /// Creates a resume point.
    public init(offset: Int, detail: String) {
        self.offset = offset
        self.detail = detail
    }
}

/// A protocol that can tell the device to discard an update in progress.
///
/// Aborting is never automatic: only an explicit user request (`ota abort`) does it. A lost
/// link or Ctrl-C pauses instead.
public protocol AbortableUpdateProtocol: UpdateProtocol {
    /// Tells the device to discard its update session.
    func abort(context: UpdateContext) async throws(OTAError)
}
