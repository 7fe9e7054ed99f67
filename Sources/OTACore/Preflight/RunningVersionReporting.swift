/// The firmware version a device says it runs, and where it said so.
public struct ReportedVersion: Sendable, Hashable {
    /// The version as the device wrote it ("1.4.0").
    public var text: String
    /// Where it was read, for messages ("the SMP image list, slot 0").
    public var source: String

    /// A reported version.
    public init(text: String, source: String) {
        self.text = text
        self.source = source
    }
}

/// A protocol that can ask the device which firmware it runs, through the protocol itself (the
/// MCUmgr image list's active slot): the engine's preflight then compares this version, rather
/// than the Device Information firmware revision, with the one the update installs
/// (``PreflightPolicy/firmwareVersion``, `--allow-downgrade`).
///
/// Asked once per update, on the first connection, after the standard services are read and
/// before the protocol's first run: a downgrade is refused before any image byte is written.
public protocol RunningVersionReporting: UpdateProtocol {
    /// The version the device runs, or `nil` when it does not say.
    ///
    /// - Throws: what the exchange throws (a lost link, a timeout); the update then fails or
    ///   reconnects as after any failed run.
    func runningVersion(context: UpdateContext) async throws(OTAError) -> ReportedVersion?
}
