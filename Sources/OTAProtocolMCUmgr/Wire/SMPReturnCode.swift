import OTACore

/// A generic SMP result (`rc`, Zephyr's `mcumgr_err_t`), as a server sends it in `{"rc", "rsn"}`.
public struct SMPReturnCode: WireCode {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Success.
    public static let ok = Self(rawValue: 0)
    /// An unknown error.
    public static let unknown = Self(rawValue: 1)
    /// Out of memory.
    public static let noMemory = Self(rawValue: 2)
    /// An invalid value in the request.
    public static let invalidValue = Self(rawValue: 3)
    /// The operation timed out.
    public static let timeout = Self(rawValue: 4)
    /// No such entry.
    public static let noEntry = Self(rawValue: 5)
    /// The server is in a state that does not allow the request.
    public static let badState = Self(rawValue: 6)
    /// The response would be too large.
    public static let messageTooLarge = Self(rawValue: 7)
    /// The group or command is not supported.
    public static let notSupported = Self(rawValue: 8)
    /// The request is corrupt.
    public static let corrupt = Self(rawValue: 9)
    /// The server is busy: try again.
    public static let busy = Self(rawValue: 10)
    /// Access denied.
    public static let accessDenied = Self(rawValue: 11)
    /// The request's SMP version is too old for the server.
    public static let protocolTooOld = Self(rawValue: 12)
    /// The request's SMP version is too new for the server.
    public static let protocolTooNew = Self(rawValue: 13)

    public static let meanings: [Self: String] = [
        .ok: "ok", .unknown: "unknown error", .noMemory: "out of memory", .invalidValue: "invalid value",
        .timeout: "timed out", .noEntry: "no such entry", .badState: "bad state", .messageTooLarge: "message too large",
        .notSupported: "not supported", .corrupt: "corrupt request", .busy: "busy", .accessDenied: "access denied",
        .protocolTooOld: "SMP version too old", .protocolTooNew: "SMP version too new",
    ]
    public static func meaning(ofUnknown rawValue: Int) -> String { rawValue >= 256 ? "user-defined error \(rawValue)" : "error \(rawValue)" }
}

/// An image management (group 1) result, Zephyr's `img_mgmt_err_code_t`, as a server sends it
/// in `{"err": {"group": 1, "rc"}}`.
public struct ImageManagementCode: WireCode {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Success.
    public static let ok = Self(rawValue: 0)
    /// The image in the request has no hash the server knows.
    public static let hashNotFound = Self(rawValue: 8)
    /// No slot is free for an upload or an erase (the slot is pending or holds the revert image).
    public static let noFreeSlot = Self(rawValue: 9)
    /// A flash write failed.
    public static let flashWriteFailed = Self(rawValue: 12)
    /// A flash erase failed.
    public static let flashEraseFailed = Self(rawValue: 13)
    /// An invalid offset.
    public static let invalidOffset = Self(rawValue: 20)
    /// An invalid length.
    public static let invalidLength = Self(rawValue: 21)
    /// An invalid image header.
    public static let invalidImageHeader = Self(rawValue: 22)
    /// An invalid image hash.
    public static let invalidHash = Self(rawValue: 24)
    /// Another image is already pending.
    public static let imageAlreadyPending = Self(rawValue: 28)
    /// The image is larger than the slot.
    public static let imageTooLarge = Self(rawValue: 30)
    /// Confirmation denied.
    public static let confirmationDenied = Self(rawValue: 32)
    /// Setting the active image to test denied.
    public static let testingActiveDenied = Self(rawValue: 33)

    public static let meanings: [Self: String] = [
        Self(rawValue: 0): "ok", Self(rawValue: 1): "unknown error", Self(rawValue: 2): "flash configuration query failed",
        Self(rawValue: 3): "no image", Self(rawValue: 4): "no TLVs", Self(rawValue: 5): "invalid TLV",
        Self(rawValue: 6): "multiple hash TLVs", Self(rawValue: 7): "invalid TLV size", .hashNotFound: "hash not found",
        .noFreeSlot: "no free slot", Self(rawValue: 10): "flash open failed", Self(rawValue: 11): "flash read failed",
        .flashWriteFailed: "flash write failed", .flashEraseFailed: "flash erase failed", Self(rawValue: 14): "invalid slot",
        Self(rawValue: 15): "no free memory", Self(rawValue: 16): "flash context already set", Self(rawValue: 17): "flash context not set",
        Self(rawValue: 18): "flash area device null", Self(rawValue: 19): "invalid page offset", .invalidOffset: "invalid offset",
        .invalidLength: "invalid length", .invalidImageHeader: "invalid image header", Self(rawValue: 23): "invalid header magic",
        .invalidHash: "invalid hash", Self(rawValue: 25): "invalid flash address", Self(rawValue: 26): "version get failed",
        Self(rawValue: 27): "current version is newer", .imageAlreadyPending: "image already pending",
        Self(rawValue: 29): "invalid vector table", .imageTooLarge: "image too large", Self(rawValue: 31): "data overrun",
        .confirmationDenied: "confirmation denied", .testingActiveDenied: "setting test to active denied",
    ]
    public static func meaning(ofUnknown rawValue: Int) -> String { "image management error \(rawValue)" }
}

/// An error a server answered with, in either form: SMP version 1's `{"rc": n, "rsn"?: text}`
/// (also used for SMP-level errors in version 2) or version 2's `{"err": {"group", "rc"}}`.
public enum SMPDeviceError: Sendable, Hashable, CustomStringConvertible {
    /// `{"rc", "rsn"}`: a generic result and the server's optional reason.
    case generic(SMPReturnCode, reason: String?)
    /// `{"err": {"group", "rc"}}`: a result of the group's own vocabulary.
    case group(UInt16, code: Int)

    /// The error in `payload`, or `nil` when the payload reports success (no `rc`, `rc` 0, or an
    /// `err` whose `rc` is 0).
    public init?(payload: CBOR) {
        if let err = payload["err"], let code = err["rc"]?.intValue, code != 0 {
            self = .group(UInt16(clamping: err["group"]?.intValue ?? 0), code: code)
        } else if let code = payload["rc"]?.intValue, code != 0 {
            self = .generic(SMPReturnCode(rawValue: code), reason: payload["rsn"]?.textValue)
        } else {
            return nil
        }
    }

    /// The payload a server sends for this error.
    public var payload: CBOR {
        switch self {
        case .generic(let code, let reason):
            var entries = [CBOR.Entry(.text("rc"), .integer(code.rawValue))]
            if let reason { entries.append(.init(.text("rsn"), .text(reason))) }
            return .map(entries)
        case .group(let group, let code):
            return .textMap(["err": .textMap(["group": .unsigned(UInt64(group)), "rc": .integer(code)])])
        }
    }

    /// Whether the server asks to try again later (generic `rc` 10).
    public var isBusy: Bool {
        if case .generic(.busy, _) = self { return true }
        return false
    }

    /// "rc 10 (busy)", "image management rc 28 (image already pending)", "group 9 rc 3".
    public var description: String {
        switch self {
        case .generic(let code, let reason):
            let why = reason.map { ", \"\(MessageText.name($0))\"" } ?? ""
            return "rc \(code.rawValue) (\(code.meaning)\(why))"
        case .group(1, let code):
            return "image management rc \(code) (\(ImageManagementCode(rawValue: code).meaning))"
        case .group(0, let code):
            return "OS management rc \(code) (\(SMPReturnCode(rawValue: code).meaning))"
        case .group(let group, let code):
            return "group \(group) rc \(code)"
        }
    }
}
