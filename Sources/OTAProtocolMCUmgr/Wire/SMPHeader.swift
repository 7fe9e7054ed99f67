import Foundation
import OTACore

/// The 8-byte header of an SMP message, multi-byte fields big-endian:
/// `res:3 ver:2 op:3 | flags | length:16 | group:16 | sequence | command`.
public struct SMPHeader: Sendable, Hashable {
    /// What a message does.
    public struct Operation: WireCode {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// A read request.
        public static let read = Operation(rawValue: 0)
        /// The response to a read.
        public static let readResponse = Operation(rawValue: 1)
        /// A write request.
        public static let write = Operation(rawValue: 2)
        /// The response to a write.
        public static let writeResponse = Operation(rawValue: 3)
        public static let meanings: [Operation: String] = [
            .read: "read", .readResponse: "read response", .write: "write", .writeResponse: "write response",
        ]
        public static func meaning(ofUnknown rawValue: UInt8) -> String { "operation \(rawValue)" }

        /// The operation that answers this one.
        public var response: Operation { Operation(rawValue: rawValue | 1) }
        /// Whether this is a response.
        public var isResponse: Bool { rawValue & 1 == 1 }
    }

    /// The header's length on the wire.
    public static let length = 8

    /// The operation.
    public var operation: Operation
    /// The protocol version: 0 (original), 1 (SMP version 2, errors as group and code).
    public var version: UInt8
    /// Flags (0).
    public var flags: UInt8
    /// The length of the CBOR payload after the header.
    public var payloadLength: UInt16
    /// The management group.
    public var group: UInt16
    /// The sequence number a response echoes.
    public var sequence: UInt8
    /// The command within the group.
    public var command: UInt8

    /// A header.
    public init(operation: Operation, version: UInt8 = 1, flags: UInt8 = 0, payloadLength: UInt16, group: UInt16, sequence: UInt8, command: UInt8) {
        self.operation = operation
        self.version = version
        self.flags = flags
        self.payloadLength = payloadLength
        self.group = group
        self.sequence = sequence
        self.command = command
    }

    /// Reads a header from the first 8 bytes of `bytes`; `nil` when there are fewer.
    public init?(_ bytes: Data) {
        // Read in place: the generic initializer copies the header into an array, and every
        // notification and answer is looked at by its header.
        guard bytes.count >= Self.length else { return nil }
        let b = bytes.withUnsafeBytes { raw in
            (raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7])
        }
        self.init(
            operation: Operation(rawValue: b.0 & 0x07), version: b.0 >> 3 & 0x03, flags: b.1, payloadLength: UInt16(b.2) << 8 | UInt16(b.3),
            group: UInt16(b.4) << 8 | UInt16(b.5), sequence: b.6, command: b.7)
    }

    /// The sequence number of the message `bytes` start with (its header's seventh byte), read
    /// alone; `nil` when they hold fewer than the 8 header bytes.
    public static func sequence(of bytes: Data) -> UInt8? {
        bytes.count >= length ? bytes[bytes.startIndex + 6] : nil
    }

    /// The payload length the header `bytes` start with declares (bytes 3 and 4, big-endian),
    /// read alone; `nil` when they hold fewer than the 8 header bytes.
    public static func payloadLength(of bytes: Data) -> Int? {
        bytes.count >= length ? Int(bytes[bytes.startIndex + 2]) << 8 | Int(bytes[bytes.startIndex + 3]) : nil
    }

    /// Decodes the first eight of `bytes`; `nil` when there are fewer.
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count >= Self.length else { return nil }
        let b = Array(bytes.prefix(Self.length))
        operation = Operation(rawValue: b[0] & 0x07)
        version = b[0] >> 3 & 0x03
        flags = b[1]
        payloadLength = UInt16(b[2]) << 8 | UInt16(b[3])
        group = UInt16(b[4]) << 8 | UInt16(b[5])
        sequence = b[6]
        command = b[7]
    }

    /// The length of the SMP message `bytes` start with, header included; `nil` when they hold
    /// fewer than the 8 header bytes. What a datagram transport (SMP over UDP) joins writes into
    /// messages by.
    @Sendable public static func messageLength(of bytes: Data) -> Int? {
        SMPHeader(bytes).map { length + Int($0.payloadLength) }
    }

    /// The header's 8 bytes.
    public var encoded: Data {
        Data([
            version << 3 & 0x18 | operation.rawValue & 0x07, flags, UInt8(payloadLength >> 8), UInt8(payloadLength & 0xFF),
            UInt8(group >> 8), UInt8(group & 0xFF), sequence, command,
        ])
    }

    /// The header's eight bytes, as a value (no array).
    private var wireBytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) {
        (
            version << 3 & 0x18 | operation.rawValue & 0x07, flags, UInt8(payloadLength >> 8), UInt8(payloadLength & 0xFF),
            UInt8(group >> 8), UInt8(group & 0xFF), sequence, command
        )
    }

    /// Writes the header's eight bytes.
    func write(into writer: inout CBORWriter) {
        withUnsafeBytes(of: wireBytes) { writer.raw($0) }
    }

    /// Appends the header's eight bytes to `out`.
    func appendEncoded(to out: inout Data) {
        withUnsafeBytes(of: wireBytes) { out.append($0.baseAddress!.assumingMemoryBound(to: UInt8.self), count: Self.length) }
    }
}

/// One SMP message: a header and its CBOR payload.
public struct SMPMessage: Sendable, Hashable {
    /// The header; its `payloadLength` is the payload's encoded length.
    public var header: SMPHeader
    /// The payload, a map for every group below 64.
    public var payload: CBOR

    /// A message; the header's length is set from the payload.
    public init(operation: SMPHeader.Operation, group: UInt16, command: UInt8, sequence: UInt8, version: UInt8 = 1, payload: CBOR) {
        self.header = SMPHeader(operation: operation, version: version, payloadLength: 0, group: group, sequence: sequence, command: command)
        self.payload = payload
    }

    /// The message's bytes: header, then payload. A payload longer than 65,535 bytes cannot be
    /// framed; callers size payloads from the device's buffer, which is smaller.
    public var encoded: Data {
        // Header and payload encoded into one buffer of the right size (an upload request's
        // frame is most of a kilobyte of image data, and a concatenation copies it again).
        let length = payload.encodedLength
        var header = header
        header.payloadLength = UInt16(clamping: length)
        var out = Data()
        out.reserveCapacity(SMPHeader.length + length)
        header.appendEncoded(to: &out)
        payload.encode(into: &out)
        return out
    }

    /// Decodes one whole message (header and exactly its payload).
    public init(decoding data: Data, decoder: CBORDecoder = CBORDecoder()) throws(SMPFrameError) {
        guard let header = SMPHeader(data) else { throw .truncatedHeader(data.count) }
        let body = data.dropFirst(SMPHeader.length)
        guard body.count == Int(header.payloadLength) else {
            throw .lengthMismatch(declared: Int(header.payloadLength), actual: body.count)
        }
        self.header = header
        do {
            self.payload = try decoder.decode(Data(body))
        } catch {
            throw .payload(error)
        }
    }
}

/// Why bytes are not an SMP message.
public enum SMPFrameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Fewer than 8 bytes.
    case truncatedHeader(Int)
    /// The header's length disagrees with the bytes that follow it.
    case lengthMismatch(declared: Int, actual: Int)
    /// The payload is not CBOR.
    case payload(CBORError)
    /// A frame longer than the reassembler accepts.
    case tooLong(declared: Int, limit: Int)

    public var description: String {
        switch self {
        case .truncatedHeader(let count): "an SMP message of \(count) bytes is shorter than its 8-byte header"
        case .lengthMismatch(let declared, let actual): "an SMP header declares \(declared) payload bytes but \(actual) follow"
        case .payload(let error): "an SMP payload is \(error)"
        case .tooLong(let declared, let limit): "an SMP message declares \(declared) payload bytes, more than the \(limit) accepted"
        }
    }
}

/// Joins the fragments an SMP transport delivers (notifications of ATT MTU − 3 bytes, or
/// writes a client split) into whole messages, using the header's length: no other framing
/// exists. Several messages may also arrive in one fragment.
public struct SMPReassembler: Sendable {
    /// The longest payload accepted; a header declaring more is refused before anything is kept.
    public var maximumPayload: Int
    /// The bytes of the message being received (and of any after it), kept in an array: a
    /// fragment is appended in place, without `Data`'s per-call overhead.
    private var pending: [UInt8] = []
    /// The length of the message `pending` starts with, header included, once its header is in:
    /// read once per message, not once per fragment.
    private var messageLength: Int?

    /// A reassembler accepting payloads up to `maximumPayload` bytes.
    public init(maximumPayload: Int = Int(UInt16.max)) { self.maximumPayload = maximumPayload }

    /// Whether a message is partly received.
    public var isIdle: Bool { pending.isEmpty }

    /// Whether `fragment` is one whole message with nothing buffered before it (every answer
    /// that fits a notification): ``append(_:)`` would return it alone, as it is. A reader may
    /// take it so without an array.
    public func isWholeMessage(_ fragment: Data) -> Bool {
        guard pending.isEmpty, let payload = SMPHeader.payloadLength(of: fragment) else { return false }
        return payload <= maximumPayload && fragment.count == SMPHeader.length + payload
    }

    /// Takes one fragment and returns the messages it completes, as raw frames (header and
    /// payload). A header declaring too long a payload throws and drops what was buffered.
    public mutating func append(_ fragment: Data) throws(SMPFrameError) -> [Data] {
        // A whole message in one fragment with nothing buffered is that fragment: not copied in
        // and out.
        if isWholeMessage(fragment) { return [fragment] }
        // Through the raw bytes: appending the `Data` itself goes byte by byte.
        fragment.withUnsafeBytes { pending.append(contentsOf: $0) }
        var frames: [Data] = []
        while true {
            if messageLength == nil {
                guard let header = SMPHeader(pending) else { break }
                let payload = Int(header.payloadLength)
                guard payload <= maximumPayload else {
                    reset()
                    throw .tooLong(declared: payload, limit: maximumPayload)
                }
                messageLength = SMPHeader.length + payload
            }
            guard let total = messageLength, pending.count >= total else { break }
            frames.append(Data(pending[..<total]))
            pending.removeFirst(total)
            messageLength = nil
        }
        return frames
    }

    /// Drops a partly received message (after a lost link).
    public mutating func reset() {
        pending.removeAll(keepingCapacity: true)
        messageLength = nil
    }
}
