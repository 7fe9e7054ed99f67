/// What a finished update did.
public struct UpdateReport: Sendable, Hashable {
    /// Bytes in the image.
    public var imageSize: Int
    /// CRC-32 of the image.
    public var imageCRC32: UInt32
    /// The link the update ran over.
    public var link: LinkParameters
    /// Payload bytes per data write.
    public var chunkSize: Int
    /// From the start of the connection to the device's verdict, on the engine's clock.
    public var duration: Duration
    /// Time spent connecting (link setup, discovery, MTU exchange), part of ``duration``.
    public var connectDuration: Duration
    /// Bytes written to the link in all, including any re-sent.
    public var bytesSent: Int
    /// Times the engine reconnected and resumed.
    public var resumes: Int
    /// Times the engine reconnected and started over from byte 0, for a protocol that cannot
    /// resume.
    public var restarts: Int = 0

    /// Time from the link being up to the device's verdict: what the protocol itself took.
    public var protocolDuration: Duration { duration - connectDuration }

    /// Image bytes per second over ``protocolDuration``: every command round trip, flash wait
    /// and retransmission counts, connection setup does not.
    public var goodput: Double {
        protocolDuration > .zero ? Double(imageSize) / protocolDuration.seconds : 0
    }
}
