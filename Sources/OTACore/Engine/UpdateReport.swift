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
    /// Bytes written to the link in all, including any re-sent.
    public var bytesSent: Int

    /// Image bytes per second over the whole update.
    public var goodput: Double {
        duration > .zero ? Double(imageSize) / duration.seconds : 0
    }
}
