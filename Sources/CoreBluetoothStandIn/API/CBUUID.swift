import Foundation

/// A Bluetooth attribute UUID, as CoreBluetooth's `CBUUID`.
///
/// Stand-in difference: equality and hashing compare the 128-bit value, so `CBUUID(string:
/// "180D")` equals its long form; whether iOS does is unconfirmed, so the transport never relies
/// on it (it normalises to `GATTUUID`).
public final class CBUUID: NSObject, NSCopying {
    private let bytes: [UInt8]
    private static let baseSuffix: [UInt8] = [0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB]

    /// Parses 4 or 8 hex digits (an alias inside the Bluetooth base UUID) or the 36-character
    /// hyphenated form. Like CoreBluetooth, traps on anything else.
    public init(string theString: String) {
        let hex = theString.filter { $0 != "-" }
        var parsed: [UInt8] = []
        var iterator = hex.makeIterator()
        while let high = iterator.next() {
            guard let low = iterator.next(), let byte = UInt8(String([high, low]), radix: 16) else {
                preconditionFailure("CBUUID(string:): '\(theString)' is not a UUID")
            }
            parsed.append(byte)
        }
        guard let expanded = Self.expanded(parsed) else { preconditionFailure("CBUUID(string:): '\(theString)' is not a UUID") }
        bytes = expanded
    }

    /// Takes 2, 4 or 16 bytes, most significant first.
    public init(data theData: Data) {
        guard let expanded = Self.expanded([UInt8](theData)) else { preconditionFailure("CBUUID(data:): \(theData.count) bytes is not a UUID") }
        bytes = expanded
    }

    /// The 16 bytes of a UUID given as 2 or 4 (an alias inside the Bluetooth base UUID) or 16;
    /// `nil` for any other count.
    private static func expanded(_ parsed: [UInt8]) -> [UInt8]? {
        switch parsed.count {
        case 2: [0, 0] + parsed + baseSuffix
        case 4: parsed + baseSuffix
        case 16: parsed
        default: nil
        }
    }

    /// Takes a 128-bit `UUID`.
    public init(nsuuid theUUID: UUID) {
        let u = theUUID.uuid
        bytes = [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15]
    }

    private var isShort: Bool { bytes[0] == 0 && bytes[1] == 0 && Array(bytes[4...]) == Self.baseSuffix }

    /// The UUID's bytes: 2 for a 16-bit alias, 16 otherwise.
    public var data: Data { isShort ? Data(bytes[2..<4]) : Data(bytes) }

    /// Upper-case text: 4 characters for a 16-bit alias (as iOS), the hyphenated form otherwise.
    public var uuidString: String {
        let hex = bytes.map { String(format: "%02X", $0) }
        if isShort { return hex[2] + hex[3] }
        return [0..<4, 4..<6, 6..<8, 8..<10, 10..<16].map { hex[$0].joined() }.joined(separator: "-")
    }

    public override var description: String { uuidString }

    public override func isEqual(_ object: Any?) -> Bool {
        (object as? CBUUID)?.bytes == bytes
    }

    public override var hash: Int { bytes.hashValue }

    public func copy(with zone: NSZone? = nil) -> Any { self }
}
