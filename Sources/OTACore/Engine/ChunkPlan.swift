/// How an image is cut into writes: payload per write derived from the link's maximum write
/// length, less a protocol's per-chunk header, rounded down to the protocol's alignment.
public struct ChunkPlan: Sendable, Hashable {
    /// Payload bytes per write.
    public let payloadSize: Int
    /// How the data writes go: without response, or with response (each waits for the device).
    public let writeKind: WriteKind

    /// Plans chunks for writes of at most `maximumWriteLength` bytes.
    ///
    /// - Parameters:
    ///   - headerLength: bytes the protocol adds to each write.
    ///   - alignment: payload sizes are a multiple of this (Nordic DFU uses 4).
    ///   - cap: an optional upper bound on the payload.
    ///   - writeKind: how the data writes go.
    /// - Throws: ``OTAError/Code/invalidParameter`` when no payload fits.
    public init(
        maximumWriteLength: Int,
        headerLength: Int = 0,
        alignment: Int = 1,
        cap: Int? = nil,
        writeKind: WriteKind = .withoutResponse
    ) throws(OTAError) {
        precondition(alignment > 0 && headerLength >= 0)
        var payload = maximumWriteLength - headerLength
        if let cap { payload = min(payload, cap) }
        payload -= payload % alignment
        guard payload > 0 else {
            throw OTAError(
                .invalidParameter,
                "the link carries at most \(maximumWriteLength) bytes per write, too few for a \(headerLength)-byte header"
            )
        }
        payloadSize = payload
        self.writeKind = writeKind
    }

    /// Plans the data writes of a protocol shaped as `shape` over `link`: the maximum write length
    /// of the shape's write kind, less its header, capped by `cap`, rounded down to its alignment.
    public init(link: LinkParameters, shape: DataWriteShape, cap: Int? = nil) throws(OTAError) {
        try self.init(
            maximumWriteLength: link.maximumWriteLength(for: shape.kind),
            headerLength: shape.headerLength,
            alignment: shape.alignment,
            cap: cap,
            writeKind: shape.kind
        )
    }

    /// The chunk that starts at `offset` in an image of `count` bytes.
    public func chunk(at offset: Int, in count: Int) -> Range<Int> {
        offset..<min(offset + payloadSize, count)
    }

    /// Number of writes needed for `count` bytes.
    public func chunkCount(for count: Int) -> Int {
        (count + payloadSize - 1) / payloadSize
    }
}
