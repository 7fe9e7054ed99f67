/// A number on the wire from a small vocabulary (a result, a status, a reason, a schema's enum)
/// that keeps numbers it does not know.
///
/// A conforming type declares its known values as constants and says what each means once, in
/// ``meanings``; ``meaning`` and, unless the type words it otherwise, `description` come from
/// there:
///
/// ```swift
/// public struct FlashStatus: WireCode {
///     public let rawValue: UInt8
///     public init(rawValue: UInt8) { self.rawValue = rawValue }
///     public static let ok = FlashStatus(rawValue: 0x00)
///     public static let busy = FlashStatus(rawValue: 0x01)
///     public static let meanings: [FlashStatus: String] = [.ok: "ok", .busy: "busy"]
///     public static func meaning(ofUnknown rawValue: UInt8) -> String { "unknown status" }
/// }
/// FlashStatus(rawValue: 0x01).meaning   // "busy"
/// ```
public protocol WireCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible
where RawValue: BinaryInteger {
    /// Every value this side knows, with its meaning in a few words.
    static var meanings: [Self: String] { get }

    /// The meaning of a value missing from ``meanings`` ("unknown status", "reason 9").
    static func meaning(ofUnknown rawValue: RawValue) -> String
}

extension WireCode {
    /// The meaning in a few words, from ``meanings``.
    public var meaning: String { Self.meanings[self] ?? Self.meaning(ofUnknown: rawValue) }

    /// The meaning, unless the type words its description otherwise.
    public var description: String { meaning }

    /// The number as two or more upper-case hexadecimal digits after "0x": "0x0B".
    public var hexCode: String { Hex.number(rawValue, digits: 2) }
}
