import Foundation
import OTACore

/// Why an SMP exchange went wrong: what the server sent is not a valid answer, or is an error.
/// Each case says its cause in one line; ``otaError`` gives it the right ``OTAError/Code``.
public enum MCUmgrWireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes are not an SMP message (short, wrong length, malformed CBOR).
    case frame(SMPFrameError)
    /// The message is SMP but lacks what its command needs, or is out of turn.
    case malformed(String)
    /// A response whose sequence number matches no request in flight.
    case unknownSequence(UInt8, awaiting: [UInt8])
    /// A response to another command than the request with its sequence number.
    case mismatchedResponse(got: SMPCommand, operation: SMPHeader.Operation, expected: SMPCommand)
    /// A command this side does not implement.
    case unsupported(SMPCommand)
    /// The server answered `request` with an error.
    case device(SMPDeviceError, request: String)
    /// An upload response reporting an offset beyond the image.
    case offsetBeyondImage(offset: Int, length: Int)

    public var description: String {
        switch self {
        case .frame(let error): "malformed SMP response: \(error)"
        case .malformed(let what): "malformed SMP response: \(what)"
        case .unknownSequence(let sequence, let awaiting):
            "SMP response with sequence number \(sequence) answers no request in flight (awaiting \(awaiting.isEmpty ? "none" : awaiting.map(String.init).joined(separator: ", ")))"
        case .mismatchedResponse(let got, let operation, let expected):
            "SMP response is a \(got) \(operation), expected the \(expected) response"
        case .unsupported(let command): "SMP \(command) is not supported"
        case .device(let error, let request): "device rejected \(request): \(error)"
        case .offsetBeyondImage(let offset, let length): "device reported upload offset \(offset), beyond the \(length)-byte image"
        }
    }

    /// The error as the engine reports it: a device error is ``OTAError/Code/deviceRejected``,
    /// everything else ``OTAError/Code/malformedResponse``.
    public var otaError: OTAError {
        switch self {
        case .device: OTAError(.deviceRejected, description, underlying: self)
        default: OTAError(.malformedResponse, description, underlying: self)
        }
    }
}

extension SMPMessage {
    /// Checks that this message answers `request` sent with `sequence`, and returns its payload.
    ///
    /// - Throws: ``MCUmgrWireError`` for another sequence number, a response to another command,
    ///   a request rather than a response, or an error in either form.
    public func payload(answering request: MCUmgrRequest, sequence: UInt8) throws(MCUmgrWireError) -> CBOR {
        guard header.sequence == sequence else { throw .unknownSequence(header.sequence, awaiting: [sequence]) }
        let command = SMPCommand(group: header.group, id: header.command)
        guard command == request.command, header.operation == request.operation.response else {
            throw .mismatchedResponse(got: command, operation: header.operation, expected: request.command)
        }
        guard payload.mapEntries != nil else { throw .malformed("the \(command) response is not a CBOR map") }
        if let error = SMPDeviceError(payload: payload) { throw .device(error, request: request.description) }
        return payload
    }
}

/// The answer to an image upload request.
public struct ImageUploadResponse: Sendable, Hashable {
    /// The offset the server expects next: the bytes it holds.
    public var offset: Int
    /// With the last piece, whether the image matched its `sha` (servers that check).
    public var match: Bool?

    /// A response.
    public init(offset: Int, match: Bool? = nil) {
        self.offset = offset
        self.match = match
    }

    /// Reads `{"off", "match"?}`.
    public init(payload: CBOR) throws(MCUmgrWireError) {
        guard let offset = payload["off"]?.intValue, offset >= 0 else { throw .malformed("the image upload response has no 'off'") }
        self.offset = offset
        match = payload["match"]?.boolValue
    }

    /// The CBOR map.
    public var payload: CBOR {
        var entries = [CBOR.Entry(.text("off"), .integer(offset))]
        if let match { entries.append(.init(.text("match"), .bool(match))) }
        return .map(entries)
    }
}

/// A successful image upload answer read in place from its whole frame, for the shape every
/// answer but the rare one has: a write response of the image upload command whose payload is a
/// map of nothing but `"off"` (an unsigned integer), and optionally `"rc"` 0 and `"match"` (a
/// bool), each once. Anything else (an error, another key, a duplicate, an indefinite string, a
/// length that does not add up) is `nil`, and the caller decodes the frame in full
/// (``SMPMessage/init(decoding:decoder:)``), which says what is wrong; where this reads an
/// answer, the full decoding reads the same (a seeded test compares the two). It saves the CBOR
/// tree, the payload's copy and the request rebuilt to check it against, on every answer.
struct ImageUploadAnswer: Sendable, Hashable {
    /// The sequence number the answer echoes.
    var sequence: UInt8
    /// The answer.
    var response: ImageUploadResponse

    init(sequence: UInt8, response: ImageUploadResponse) {
        self.sequence = sequence
        self.response = response
    }

    /// Reads `frame`, a whole SMP message; `nil` when it is not of the common shape.
    init?(frame: Data) {
        guard let header = SMPHeader(frame), header.operation == .writeResponse,
            SMPCommand(group: header.group, id: header.command) == .imageUpload,
            frame.count == SMPHeader.length + Int(header.payloadLength),
            let response = frame.withUnsafeBytes({ Self.payload(UnsafeRawBufferPointer(rebasing: $0[SMPHeader.length...])) })
        else { return nil }
        sequence = header.sequence
        self.response = response
    }

    /// The keys read, as their UTF-8 bytes.
    private enum Key {
        case offset, returnCode, match

        init?(_ bytes: UnsafeRawBufferPointer) {
            switch bytes.count {
            case 3 where bytes[0] == 0x6F && bytes[1] == 0x66 && bytes[2] == 0x66: self = .offset  // "off"
            case 2 where bytes[0] == 0x72 && bytes[1] == 0x63: self = .returnCode  // "rc"
            case 5 where bytes.elementsEqual("match".utf8): self = .match
            default: return nil
            }
        }
    }

    private static func payload(_ bytes: UnsafeRawBufferPointer) -> ImageUploadResponse? {
        var position = 0
        /// An unsigned integer's head at `position`, its argument in the following 0–8 bytes.
        func unsigned() -> UInt64? {
            guard position < bytes.count, bytes[position] >> 5 == 0 else { return nil }
            let info = bytes[position] & 0x1F
            position += 1
            let width: Int
            switch info {
            case 0..<24: return UInt64(info)
            case 24: width = 1
            case 25: width = 2
            case 26: width = 4
            case 27: width = 8
            default: return nil
            }
            guard bytes.count - position >= width else { return nil }
            var value: UInt64 = 0
            for index in 0..<width { value = value << 8 | UInt64(bytes[position + index]) }
            position += width
            return value
        }
        guard position < bytes.count, bytes[position] >> 5 == 5 else { return nil }
        let info = bytes[position] & 0x1F
        position += 1
        // A map of fewer than 24 entries, or of indefinite length.
        guard info < 24 || info == 31 else { return nil }
        var remaining = info == 31 ? nil : Int(info)
        var offset: Int?
        var match: Bool?
        var returnCode = false
        while true {
            if let count = remaining {
                if count == 0 { break }
                remaining = count - 1
            } else {
                guard position < bytes.count else { return nil }
                if bytes[position] == 0xFF {
                    position += 1
                    break
                }
            }
            // The key: a definite text string of fewer than 24 bytes.
            guard position < bytes.count, bytes[position] >> 5 == 3, bytes[position] & 0x1F < 24 else { return nil }
            let length = Int(bytes[position] & 0x1F)
            position += 1
            guard bytes.count - position >= length, let key = Key(UnsafeRawBufferPointer(rebasing: bytes[position..<position + length])) else {
                return nil
            }
            position += length
            switch key {
            case .offset:
                guard offset == nil, let value = unsigned(), value <= UInt64(Int.max) else { return nil }
                offset = Int(value)
            case .returnCode:
                guard !returnCode, unsigned() == 0 else { return nil }
                returnCode = true
            case .match:
                guard match == nil, position < bytes.count, bytes[position] == 0xF4 || bytes[position] == 0xF5 else { return nil }
                match = bytes[position] == 0xF5
                position += 1
            }
        }
        guard position == bytes.count, let offset else { return nil }
        return ImageUploadResponse(offset: offset, match: match)
    }
}

/// One slot in an image state list.
public struct ImageSlotState: Sendable, Hashable, CustomStringConvertible {
    /// The image number.
    public var image: Int
    /// The slot: 0 primary (runs), 1 secondary (upload target).
    public var slot: Int
    /// "1.2.3" or "1.2.3.4".
    public var version: String
    /// The MCUboot SHA-256 TLV of the image in the slot.
    public var hash: Data
    /// Whether MCUboot may boot it.
    public var bootable: Bool
    /// Marked to be swapped in at the next reset.
    public var pending: Bool
    /// Confirmed: stays after the next reset.
    public var confirmed: Bool
    /// Running now.
    public var active: Bool
    /// Pending permanently (confirm without a test boot).
    public var permanent: Bool

    /// A slot state.
    public init(
        image: Int = 0, slot: Int, version: String, hash: Data, bootable: Bool = true, pending: Bool = false, confirmed: Bool = false,
        active: Bool = false, permanent: Bool = false
    ) {
        self.image = image
        self.slot = slot
        self.version = version
        self.hash = hash
        self.bootable = bootable
        self.pending = pending
        self.confirmed = confirmed
        self.active = active
        self.permanent = permanent
    }

    /// Reads one entry of `images`.
    public init(payload: CBOR) throws(MCUmgrWireError) {
        guard let slot = payload["slot"]?.intValue else { throw .malformed("an image state entry has no 'slot'") }
        guard let hash = payload["hash"]?.bytesValue else { throw .malformed("the image state of slot \(slot) has no 'hash'") }
        self.init(
            image: payload["image"]?.intValue ?? 0, slot: slot, version: payload["version"]?.textValue ?? "?", hash: hash,
            bootable: payload["bootable"]?.boolValue ?? false, pending: payload["pending"]?.boolValue ?? false,
            confirmed: payload["confirmed"]?.boolValue ?? false, active: payload["active"]?.boolValue ?? false,
            permanent: payload["permanent"]?.boolValue ?? false
        )
    }

    /// The CBOR map as Zephyr writes it: flags only when true.
    public var payload: CBOR {
        var entries: [CBOR.Entry] = []
        if image != 0 { entries.append(.init(.text("image"), .integer(image))) }
        entries.append(.init(.text("slot"), .integer(slot)))
        entries.append(.init(.text("version"), .text(version)))
        entries.append(.init(.text("hash"), .bytes(hash)))
        for (name, flag) in [("bootable", bootable), ("pending", pending), ("confirmed", confirmed), ("active", active), ("permanent", permanent)]
        where flag {
            entries.append(.init(.text(name), .bool(true)))
        }
        return .map(entries)
    }

    /// The set flags, in words: "active, confirmed".
    public var flags: String {
        let set = [("active", active), ("confirmed", confirmed), ("pending", pending), ("permanent", permanent)].filter(\.1).map(\.0)
        return set.isEmpty ? "no flags" : set.joined(separator: ", ")
    }

    /// "slot 1: 1.2.3 (3a5f09c1…) pending".
    public var description: String {
        "slot \(slot): \(MessageText.name(version)) (\(Hex.bytes(hash.prefix(4)))…) \(flags)"
    }
}

/// The answer to an image state read or write: every slot.
public struct ImageStateResponse: Sendable, Hashable, CustomStringConvertible {
    /// The slots, as listed.
    public var images: [ImageSlotState]

    /// A list.
    public init(images: [ImageSlotState]) { self.images = images }

    /// Reads `{"images": [...]}`.
    public init(payload: CBOR) throws(MCUmgrWireError) {
        guard let list = payload["images"]?.arrayValue else { throw .malformed("the image state response has no 'images' list") }
        var images: [ImageSlotState] = []
        for entry in list { images.append(try ImageSlotState(payload: entry)) }
        self.images = images
    }

    /// The CBOR map.
    public var payload: CBOR { .textMap(["images": .array(images.map(\.payload))]) }

    /// The entry of `slot` of image 0.
    public func slot(_ slot: Int, image: Int = 0) -> ImageSlotState? {
        images.first { $0.slot == slot && $0.image == image }
    }

    /// "slot 0: 1.0.0 (…) active, confirmed; slot 1: 2.0.0 (…) no flags".
    public var description: String {
        images.isEmpty ? "no images" : images.map(\.description).joined(separator: "; ")
    }
}

/// The answer to the MCUmgr parameters read: how large a request the server takes, and how many
/// it buffers.
public struct MCUmgrParameters: Sendable, Hashable {
    /// The largest SMP frame, header included, the server receives.
    public var bufferSize: Int
    /// How many such buffers it has.
    public var bufferCount: Int

    /// Parameters.
    public init(bufferSize: Int, bufferCount: Int) {
        self.bufferSize = bufferSize
        self.bufferCount = bufferCount
    }

    /// Reads `{"buf_size", "buf_count"}`.
    public init(payload: CBOR) throws(MCUmgrWireError) {
        guard let size = payload["buf_size"]?.intValue, size > 0 else { throw .malformed("the MCUmgr parameters response has no 'buf_size'") }
        guard let count = payload["buf_count"]?.intValue, count > 0 else {
            throw .malformed("the MCUmgr parameters response has no 'buf_count'")
        }
        bufferSize = size
        bufferCount = count
    }

    /// The CBOR map.
    public var payload: CBOR { .textMap(["buf_size": .integer(bufferSize), "buf_count": .integer(bufferCount)]) }
}
