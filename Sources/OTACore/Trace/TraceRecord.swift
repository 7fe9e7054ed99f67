import Foundation

/// One line of a recorded update (`ota update --trace FILE`): an operation the engine performed
/// on the link, its result, or something the device did. The format is JSON lines, documented in
/// `docs/trace.md`; every field but ``op`` and ``time`` is optional.
///
/// Operations the client performs carry a sequence number (``seq``) that their result repeats;
/// device events (a notification, a lost link) carry none. Bytes the device sent — notifications,
/// read values — are kept whole; of a write without response (the image's chunks, which a support
/// artefact must not leak) only the length and CRC-32 are kept, unless the recorder was asked to
/// keep bytes.
public struct TraceRecord: Sendable, Hashable, Codable {
    /// What happened.
    public enum Operation: String, Sendable, Hashable, Codable, CaseIterable {
        /// The first line: what was recorded (``TraceHeader`` fields).
        case header
        /// The client asked for a connection.
        case connect
        /// The connection is up: link parameters and characteristics.
        case connected
        /// The client subscribed to a characteristic's notifications.
        case subscribe
        /// The client wrote a value.
        case write
        /// The client read a characteristic.
        case read
        /// The client closed the link.
        case disconnect
        /// The result of the operation ``seq``: done (a read's value in ``data``).
        case done
        /// The result of the operation ``seq``: failed with ``error``.
        case failed
        /// The device notified a value.
        case notify
        /// The link went down (``reason``).
        case disconnected
        /// The update's outcome, written by the tool at the end.
        case result
    }

    /// Seconds since the recording started, on the session's clock (virtual for a simulated
    /// device).
    public var time: Double
    /// What happened.
    public var op: Operation
    /// The client operation this line is, or answers.
    public var seq: Int?
    /// The service of the characteristic involved.
    public var service: String?
    /// The characteristic involved.
    public var characteristic: String?
    /// A write's kind: `request` (with response) or `command` (without).
    public var kind: String?
    /// The length of the bytes written, notified or read.
    public var length: Int?
    /// Their CRC-32, as `0x` and eight digits.
    public var crc32: String?
    /// The bytes, in lower-case hexadecimal, when kept.
    public var data: String?
    /// A failure (``failed``, ``result``), or why the link went down (``disconnected``).
    public var error: TraceError?
    /// ``connected``: the link.
    public var link: TraceLink?
    /// ``connected``: the characteristics the device offers.
    public var characteristics: [TraceCharacteristic]?
    /// ``header``: what was recorded.
    public var header: TraceHeader?
    /// ``result``: `completed` or `failed`.
    public var status: String?

    enum CodingKeys: String, CodingKey {
        case time = "t", op, seq, service = "svc", characteristic = "char", kind, length = "len", crc32, data, error, link
        case characteristics = "chars", header, status
    }

    /// A record of `op` at `time`; set the fields it needs.
    public init(time: Double, op: Operation) {
        self.time = time
        self.op = op
    }
}

/// A failure in a trace: the transport's kind and message.
public struct TraceError: Sendable, Hashable, Codable {
    /// `disconnected`, `unknownCharacteristic`, `notPermitted`, `valueTooLong`, `att`,
    /// `connectionFailed`, `other`, or an ``OTAError/Code`` for a result.
    public var kind: String
    /// The ATT error code, for `att`.
    public var att: Int?
    /// The message a person saw.
    public var message: String
    /// For a lost link: whether this side closed it.
    public var local: Bool?
}

extension TraceError {
    /// An update's failure, as the ``TraceRecord/Operation/result`` line records it: its code
    /// and message. (A transport failure has its own `init(_:)`, beside ``TraceRecorder``.)
    public init(_ error: OTAError) {
        self.init(kind: error.code.description, message: error.message)
    }
}

/// The link a ``TraceRecord/Operation/connected`` line describes.
public struct TraceLink: Sendable, Hashable, Codable {
    /// The ATT MTU.
    public var mtu: Int
    /// The largest write without response.
    public var maxWriteWithoutResponse: Int
    /// The largest write with response.
    public var maxWriteWithResponse: Int
    /// The radio link, when known.
    public var summary: String?

    /// The link's parameters.
    public init(_ link: LinkParameters) {
        mtu = link.attMTU
        maxWriteWithoutResponse = link.maximumWriteWithoutResponse
        maxWriteWithResponse = link.maximumWriteWithResponse
        summary = link.summary
    }

    /// As link parameters.
    public var parameters: LinkParameters {
        LinkParameters(attMTU: mtu, maximumWriteWithoutResponse: maxWriteWithoutResponse, maximumWriteWithResponse: maxWriteWithResponse, summary: summary)
    }
}

/// A characteristic a device offered.
public struct TraceCharacteristic: Sendable, Hashable, Codable {
    /// Its service.
    public var service: String
    /// The characteristic.
    public var characteristic: String
    /// Its properties' bits (`CharacteristicProperties`).
    public var properties: Int

    enum CodingKeys: String, CodingKey { case service = "svc", characteristic = "char", properties = "props" }
}

/// The first line of a trace: what was updated, how, with what.
public struct TraceHeader: Sendable, Hashable, Codable {
    /// The format's version, 1.
    public var format: Int
    /// The tool's command line, as typed, with nothing secret in it (no key or token options
    /// exist).
    public var command: String
    /// The device address.
    public var device: String
    /// The protocol used.
    public var protocolName: String
    /// The images sent: name, size and CRC-32 each.
    public var images: [TraceImage]
    /// Whether writes without response kept their bytes.
    public var keepsData: Bool
    /// The seed the update drew its random choices from (``UpdateConfiguration/randomSeed``: a
    /// bootloader's name), so that a replay makes the same; absent in older traces.
    public var randomSeed: UInt64?

    enum CodingKeys: String, CodingKey { case format, command, device, protocolName = "protocol", images, keepsData, randomSeed }

    /// A header.
    public init(command: String, device: String, protocolName: String, images: [TraceImage], keepsData: Bool, randomSeed: UInt64? = nil) {
        format = 1
        self.command = command
        self.device = device
        self.protocolName = protocolName
        self.images = images
        self.keepsData = keepsData
        self.randomSeed = randomSeed
    }
}

/// An image named in a trace's header.
public struct TraceImage: Sendable, Hashable, Codable {
    /// Its name.
    public var name: String
    /// Its size.
    public var size: Int
    /// Its CRC-32, as `0x` and eight digits.
    public var crc32: String
}

extension TraceImage {
    /// How a trace names `image`: the recorder's header and a replay's check of the images given
    /// both describe images this way, so the two compare alike.
    public init(_ image: FirmwareImage) {
        self.init(name: image.name, size: image.count, crc32: Hex.number(image.crc32, digits: 8))
    }
}
