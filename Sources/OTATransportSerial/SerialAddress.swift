import OTACore

/// A `serial:PATH[@BAUD]` address.
public struct SerialAddress: Sendable, Hashable, CustomStringConvertible {
    /// The scheme.
    public static let scheme = "serial:"
    /// The default rate (ignored by USB CDC ACM ports and pseudo-terminals).
    public static let defaultBaud = 115_200
    /// The device path.
    public var path: String
    /// The baud rate.
    public var baud: Int

    /// An address.
    public init(path: String, baud: Int = SerialAddress.defaultBaud) {
        self.path = path
        self.baud = baud
    }

    /// Parses `serial:PATH` or `serial:PATH@BAUD`.
    public init(parsing text: String) throws(OTAError) {
        guard text.hasPrefix(Self.scheme) else { throw OTAError(.invalidParameter, "'\(text)' is not a serial:PATH address") }
        var rest = String(text.dropFirst(Self.scheme.count))
        var baud = Self.defaultBaud
        if let at = rest.lastIndex(of: "@") {
            let rate = rest[rest.index(after: at)...]
            guard let value = Int(rate), SerialPort.speed(value) != nil else {
                throw OTAError(.invalidParameter, "'\(text)': '\(rate)' is not a baud rate (9600, 19200, 38400, 57600, 115200, 230400, …)")
            }
            baud = value
            rest = String(rest[..<at])
        }
        guard rest.hasPrefix("/") else {
            throw OTAError(.invalidParameter, "'\(text)' names no device path (serial:/dev/ttyACM0)")
        }
        path = rest
        self.baud = baud
    }

    public var description: String { baud == Self.defaultBaud ? "serial:\(path)" : "serial:\(path)@\(baud)" }
}
