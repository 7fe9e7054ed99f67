/// What the link negotiated, as far as the transport knows it.
///
/// Chunk sizes always derive from ``maximumWriteLength(for:)``, never from a constant.
public struct LinkParameters: Sendable, Hashable, CustomStringConvertible {
    /// The negotiated ATT MTU (23 when nothing was negotiated).
    public var attMTU: Int
    /// Largest value for a write without response (ATT MTU − 3, capped by what the stack
    /// really carries).
    public var maximumWriteWithoutResponse: Int
    /// Largest value for a write with response.
    public var maximumWriteWithResponse: Int
    /// A short, human-readable summary of the radio link (PHY, interval), when known.
    public var summary: String?
    /// Bytes of framing around each packet that the device's receive buffer holds besides the
    /// packet (SMP on a serial line: 4, the frame's length and CRC-16): a protocol that sizes its
    /// packets to the device's buffer leaves this much room. 0 on a GATT link.
    public var packetOverhead: Int

    /// Creates link parameters.
    public init(attMTU: Int, maximumWriteWithoutResponse: Int, maximumWriteWithResponse: Int, summary: String? = nil, packetOverhead: Int = 0) {
        self.attMTU = attMTU
        self.maximumWriteWithoutResponse = maximumWriteWithoutResponse
        self.maximumWriteWithResponse = maximumWriteWithResponse
        self.summary = summary
        self.packetOverhead = packetOverhead
    }

    /// The largest value a single write of `kind` may carry.
    public func maximumWriteLength(for kind: WriteKind) -> Int {
        switch kind {
        case .withResponse: maximumWriteWithResponse
        case .withoutResponse: maximumWriteWithoutResponse
        }
    }

    public var description: String {
        var text = "ATT MTU \(attMTU), write without response ≤ \(maximumWriteWithoutResponse) B"
        if let summary { text += ", \(summary)" }
        return text
    }
}
