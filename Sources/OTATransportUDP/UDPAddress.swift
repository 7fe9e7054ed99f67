import OTACore

/// A `udp:HOST[:PORT]` address: a host name, an IPv4 address or a bracketed IPv6 address, and a
/// port (default 1337, Zephyr's `CONFIG_MCUMGR_TRANSPORT_UDP_PORT`).
public struct UDPAddress: Sendable, Hashable, CustomStringConvertible {
    /// The scheme, `udp:`.
    public static let scheme = "udp:"
    /// Zephyr's default SMP UDP port.
    public static let defaultPort: UInt16 = 1337

    /// The host, without brackets.
    public var host: String
    /// The port.
    public var port: UInt16

    /// An address.
    public init(host: String, port: UInt16 = UDPAddress.defaultPort) {
        self.host = host
        self.port = port
    }

    /// Parses `udp:HOST`, `udp:HOST:PORT`, `udp:[IPV6]` or `udp:[IPV6]:PORT`.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` naming what is wrong.
    public init(parsing text: String) throws(OTAError) {
        guard text.hasPrefix(Self.scheme) else { throw OTAError(.invalidParameter, "'\(text)' is not a udp:HOST[:PORT] address") }
        let rest = Substring(text.dropFirst(Self.scheme.count))
        var host: Substring
        var port: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw OTAError(.invalidParameter, "'\(text)': an IPv6 address needs its closing ']' (udp:[::1]:1337)")
            }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw OTAError(.invalidParameter, "'\(text)': expected ':PORT' after ']'") }
                port = after.dropFirst()
            }
        } else if rest.filter({ $0 == ":" }).count > 1 {
            throw OTAError(.invalidParameter, "'\(text)': put an IPv6 address in brackets (udp:[::1]:1337)")
        } else if let colon = rest.firstIndex(of: ":") {
            host = rest[..<colon]
            port = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw OTAError(.invalidParameter, "'\(text)' names no host (udp:HOST[:PORT], e.g. udp:192.0.2.1:1337)") }
        self.host = String(host)
        if let port {
            guard let number = UInt16(port), number > 0 else {
                throw OTAError(.invalidParameter, "'\(text)': port '\(port)' is not a number in 1...65535")
            }
            self.port = number
        } else {
            self.port = Self.defaultPort
        }
    }

    /// `udp:HOST:PORT`, brackets around an IPv6 host.
    public var description: String {
        host.contains(":") ? "udp:[\(host)]:\(port)" : "udp:\(host):\(port)"
    }
}
