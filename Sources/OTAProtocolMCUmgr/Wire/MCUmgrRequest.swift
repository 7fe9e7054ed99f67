import Foundation
import OTACore

/// The management groups and commands the client and the device model speak.
public struct SMPCommand: Sendable, Hashable, CustomStringConvertible {
    /// The group (0 OS, 1 image).
    public var group: UInt16
    /// The command within the group.
    public var id: UInt8

    /// A command.
    public init(group: UInt16, id: UInt8) {
        self.group = group
        self.id = id
    }

    /// OS group.
    public static let osGroup: UInt16 = 0
    /// Image group.
    public static let imageGroup: UInt16 = 1

    /// OS echo (0, 0).
    public static let echo = Self(group: osGroup, id: 0)
    /// OS reset (0, 5).
    public static let reset = Self(group: osGroup, id: 5)
    /// OS MCUmgr parameters (0, 6).
    public static let parameters = Self(group: osGroup, id: 6)
    /// Image state: read lists the slots, write tests or confirms (1, 0).
    public static let imageState = Self(group: imageGroup, id: 0)
    /// Image upload (1, 1).
    public static let imageUpload = Self(group: imageGroup, id: 1)
    /// Image erase (1, 5).
    public static let imageErase = Self(group: imageGroup, id: 5)

    public var description: String {
        switch self {
        case .echo: "echo"
        case .reset: "reset"
        case .parameters: "MCUmgr parameters"
        case .imageState: "image state"
        case .imageUpload: "image upload"
        case .imageErase: "image erase"
        default: "group \(group) command \(id)"
        }
    }
}

/// An image upload request: a piece of the image at `offset`; the first (offset 0) also says
/// how long the image is, which image it is and its file's SHA-256, so the server can erase
/// the slot, and resume an interrupted upload of the same file.
public struct ImageUploadRequest: Sendable, Hashable {
    /// The image number (0 unless the device has several); sent only with offset 0 when not 0.
    public var image: Int?
    /// The whole image's length; sent with offset 0.
    public var length: Int?
    /// Where `data` goes.
    public var offset: Int
    /// SHA-256 of the whole file being uploaded (not the MCUboot hash TLV); sent with offset 0.
    public var sha: Data?
    /// The bytes.
    public var data: Data
    /// Asks the server to refuse an image that is not newer; sent only when set.
    public var upgrade: Bool?

    /// A request.
    public init(image: Int? = nil, length: Int? = nil, offset: Int, sha: Data? = nil, data: Data, upgrade: Bool? = nil) {
        self.image = image
        self.length = length
        self.offset = offset
        self.sha = sha
        self.data = data
        self.upgrade = upgrade
    }

    /// The CBOR map. `data` is the last entry, so the image bytes are the frame's tail.
    public var payload: CBOR {
        var entries: [CBOR.Entry] = []
        if let image { entries.append(.init(.text("image"), .integer(image))) }
        if let length { entries.append(.init(.text("len"), .integer(length))) }
        entries.append(.init(.text("off"), .integer(offset)))
        if let sha { entries.append(.init(.text("sha"), .bytes(sha))) }
        if let upgrade { entries.append(.init(.text("upgrade"), .bool(upgrade))) }
        entries.append(.init(.text("data"), .bytes(data)))
        return .map(entries)
    }

    /// ``payload``'s encoded length, from the fields (no map built): what a request is sized by
    /// before its data is cut.
    public var payloadLength: Int {
        var total = 1  // the map's head: at most six entries
        if let image { total += CBORWriter.textLength("image") + CBORWriter.integerLength(image) }
        if let length { total += CBORWriter.textLength("len") + CBORWriter.integerLength(length) }
        total += CBORWriter.textLength("off") + CBORWriter.integerLength(offset)
        if let sha { total += CBORWriter.textLength("sha") + CBORWriter.bytesLength(sha) }
        if upgrade != nil { total += CBORWriter.textLength("upgrade") + 1 }
        total += CBORWriter.textLength("data") + CBORWriter.bytesLength(data)
        return total
    }

    /// The SMP frame of this request with `header` (its payload length set here): the same
    /// bytes as the ``payload`` map's encoding after the header, written in place into one buffer
    /// of the frame's size, the image data copied once. Every upload request is encoded so.
    public func frame(header: SMPHeader) -> Data {
        let payloadLength = payloadLength
        var sized = header
        sized.payloadLength = UInt16(clamping: payloadLength)
        // A constant for the closure below: a captured `var` lives in a box whose every access
        // is checked for exclusivity.
        let header = sized
        var frame = Data(count: SMPHeader.length + payloadLength)
        frame.withUnsafeMutableBytes { buffer in
            var writer = CBORWriter(buffer)
            header.write(into: &writer)
            writer.head(5, UInt64(2 + (image == nil ? 0 : 1) + (length == nil ? 0 : 1) + (sha == nil ? 0 : 1) + (upgrade == nil ? 0 : 1)))
            if let image {
                writer.text("image")
                writer.integer(image)
            }
            if let length {
                writer.text("len")
                writer.integer(length)
            }
            writer.text("off")
            writer.integer(offset)
            if let sha {
                writer.text("sha")
                writer.bytes(sha)
            }
            if let upgrade {
                writer.text("upgrade")
                writer.bool(upgrade)
            }
            writer.text("data")
            writer.bytes(data)
            precondition(writer.position == buffer.count, "image upload request encoded to \(writer.position) bytes, sized for \(buffer.count)")
        }
        return frame
    }
}

/// A request the client sends (and the device model decodes).
public enum MCUmgrRequest: Sendable, Hashable, CustomStringConvertible {
    /// OS echo: the server answers with the same text.
    case echo(String)
    /// OS reset: the server answers, then restarts.
    case reset
    /// OS MCUmgr parameters: the server's buffer size and count.
    case parameters
    /// Image state read: the slots.
    case readImageState
    /// Image state write: `confirm` false marks the image with `hash` for one test boot; true
    /// makes it permanent (no hash: the running image).
    case setImageState(hash: Data?, confirm: Bool)
    /// Image upload.
    case upload(ImageUploadRequest)
    /// Image erase of `slot` (the server's default, 1, when `nil`).
    case erase(slot: Int?)

    /// The group and command.
    public var command: SMPCommand {
        switch self {
        case .echo: .echo
        case .reset: .reset
        case .parameters: .parameters
        case .readImageState, .setImageState: .imageState
        case .upload: .imageUpload
        case .erase: .imageErase
        }
    }

    /// Read or write.
    public var operation: SMPHeader.Operation {
        switch self {
        case .parameters, .readImageState: .read
        case .echo, .reset, .setImageState, .upload, .erase: .write
        }
    }

    /// The CBOR map.
    public var payload: CBOR {
        switch self {
        case .echo(let text): return .textMap(["d": .text(text)])
        case .reset, .parameters, .readImageState: return .map([])
        case .setImageState(let hash, let confirm):
            var entries: [CBOR.Entry] = []
            if let hash { entries.append(.init(.text("hash"), .bytes(hash))) }
            entries.append(.init(.text("confirm"), .bool(confirm)))
            return .map(entries)
        case .upload(let request): return request.payload
        case .erase(let slot): return slot.map { .textMap(["slot": .integer($0)]) } ?? .map([])
        }
    }

    /// The request as a message with `sequence`.
    public func message(sequence: UInt8) -> SMPMessage {
        SMPMessage(operation: operation, group: command.group, command: command.id, sequence: sequence, payload: payload)
    }

    /// The request's bytes with `sequence`: header and payload.
    public func encoded(sequence: UInt8) -> Data {
        guard case .upload(let request) = self else { return message(sequence: sequence).encoded }
        return request.frame(
            header: SMPHeader(operation: operation, payloadLength: 0, group: command.group, sequence: sequence, command: command.id))
    }

    /// "image upload at byte 4096", "image state read", "test of image 3a5f…".
    public var description: String {
        switch self {
        case .echo: "echo"
        case .reset: "reset"
        case .parameters: "MCUmgr parameters read"
        case .readImageState: "image state read"
        case .setImageState(let hash, let confirm):
            "\(confirm ? "confirm" : "test") of \(hash.map { "image \(Hex.bytes($0.prefix(8)))…" } ?? "the running image")"
        case .upload(let request): "image upload at byte \(request.offset)"
        case .erase(let slot): "image erase of slot \(slot ?? 1)"
        }
    }

    /// Decodes a request a client sent (the device model's side).
    ///
    /// - Throws: ``MCUmgrWireError`` for a command this side does not know (``MCUmgrWireError/unsupported(_:)``)
    ///   or a payload missing what the command needs.
    public init(decoding message: SMPMessage) throws(MCUmgrWireError) {
        let command = SMPCommand(group: message.header.group, id: message.header.command)
        let operation = message.header.operation
        let payload = message.payload
        guard payload.mapEntries != nil else { throw .malformed("the \(command) request is not a CBOR map") }
        switch (command, operation) {
        case (.echo, .write), (.echo, .read):  // Zephyr's os_mgmt answers echo as either (mcumgr-toolkit reads)
            self = .echo(payload["d"]?.textValue ?? "")
        case (.reset, .write):
            self = .reset
        case (.parameters, .read):
            self = .parameters
        case (.imageState, .read):
            self = .readImageState
        case (.imageState, .write):
            self = .setImageState(hash: payload["hash"]?.bytesValue, confirm: payload["confirm"]?.boolValue ?? false)
        case (.imageErase, .write):
            self = .erase(slot: payload["slot"]?.intValue)
        case (.imageUpload, .write):
            guard let offset = payload["off"]?.intValue, offset >= 0 else { throw .malformed("an image upload request has no 'off'") }
            guard let data = payload["data"]?.bytesValue else { throw .malformed("an image upload request has no 'data'") }
            self = .upload(
                ImageUploadRequest(
                    image: payload["image"]?.intValue, length: payload["len"]?.intValue, offset: offset, sha: payload["sha"]?.bytesValue,
                    data: data, upgrade: payload["upgrade"]?.boolValue
                )
            )
        default:
            throw .unsupported(command)
        }
    }
}
