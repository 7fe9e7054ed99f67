#if os(Linux)
/// A valid D-Bus object path, such as `/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF`.
///
/// A path starts with `/`, its elements are made of `[A-Za-z0-9_]`, and only the root path ends
/// with `/`. Invalid paths cannot be represented, so everything that holds one can send it.
public struct DBusObjectPath: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The path as a string.
    public let rawValue: String

    /// The root path, `/`.
    public static let root = DBusObjectPath(unchecked: "/")

    /// Creates a path, or returns `nil` when `string` is not a valid object path.
    ///
    /// - Note: Given a string literal, `DBusObjectPath("/a")` uses ``init(stringLiteral:)``, as for
    ///   any literal-expressible type.
    public init?(_ string: String) {
        guard Self.isValid(string) else { return nil }
        rawValue = string
    }

    /// Creates a path from a literal.
    ///
    /// - Important: traps when the literal is not a valid object path, as a programming error.
    public init(stringLiteral value: String) {
        guard let path = DBusObjectPath(value) else { preconditionFailure("invalid D-Bus object path '\(value)'") }
        self = path
    }

    /// A path whose validity libdbus already checked.
    init(unchecked string: String) {
        rawValue = string
    }

    public var description: String { rawValue }

    public static func < (lhs: DBusObjectPath, rhs: DBusObjectPath) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The path of a child object, or `nil` when `element` is not a valid path element.
    ///
    /// ```swift
    /// let characteristic = DBusObjectPath("/app")?.appending("service0")?.appending("char0")
    /// ```
    public func appending(_ element: String) -> DBusObjectPath? {
        DBusObjectPath(rawValue == "/" ? "/" + element : rawValue + "/" + element)
    }

    /// Whether `other` lies strictly below this path (`/a/b` is below `/a` and `/`).
    public func isAncestor(of other: DBusObjectPath) -> Bool {
        guard other.rawValue != rawValue else { return false }
        return rawValue == "/" || other.rawValue.hasPrefix(rawValue + "/")
    }

    private static func isValid(_ string: String) -> Bool {
        let bytes = Array(string.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previous = UInt8(ascii: "/")
        for byte in bytes.dropFirst() {
            switch byte {
            case UInt8(ascii: "/"):
                if previous == UInt8(ascii: "/") { return false }
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
                break
            default:
                return false
            }
            previous = byte
        }
        return true
    }
}
#endif
