/// How far an update has come, with rates and an estimate of the time left.
public struct UpdateProgress: Sendable, Hashable {
    /// Total bytes of the image.
    public var totalBytes: Int
    /// Bytes written to the link so far, including any sent again after a rewind or a resume.
    public var bytesSent: Int
    /// Where the transfer stands in the image: the offset after the last chunk written. It moves
    /// back when a protocol rewinds or resumes from the device's offset.
    public var position: Int
    /// Bytes the device has confirmed as received. Protocols without per-chunk acknowledgements
    /// only confirm at the end.
    public var bytesAcknowledged: Int
    /// Bytes per second over the last second or so.
    public var currentRate: Double
    /// Bytes per second since the transfer started.
    public var averageRate: Double
    /// Time elapsed since the update started.
    public var elapsed: Duration
    /// Estimated time until all bytes are sent, when a rate is known.
    public var estimatedTimeRemaining: Duration?

    /// Creates a progress value.
    public init(
        totalBytes: Int,
        bytesSent: Int = 0,
        position: Int = 0,
        bytesAcknowledged: Int = 0,
        currentRate: Double = 0,
        averageRate: Double = 0,
        elapsed: Duration = .zero,
        estimatedTimeRemaining: Duration? = nil
    ) {
        self.totalBytes = totalBytes
        self.bytesSent = bytesSent
        self.position = position
        self.bytesAcknowledged = bytesAcknowledged
        self.currentRate = currentRate
        self.averageRate = averageRate
        self.elapsed = elapsed
        self.estimatedTimeRemaining = estimatedTimeRemaining
    }

    /// How far through the image the transfer is, from 0 to 1 (by ``position``, or by
    /// ``bytesAcknowledged`` when that is further).
    public var fraction: Double {
        totalBytes == 0 ? 0 : min(1, Double(max(position, bytesAcknowledged)) / Double(totalBytes))
    }
}
