import Foundation
import OTACore
import OTATransportPacketLink

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a datagram came from (or goes to): a socket address as the system keeps it.
public struct UDPPeer: Sendable, Hashable, CustomStringConvertible {
    let storage: Data

    /// "127.0.0.1:50123", "[::1]:50123".
    public var description: String {
        storage.withUnsafeBytes { raw -> String in
            guard let base = raw.baseAddress else { return "?" }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
            let result = getnameinfo(
                base.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count), &host, socklen_t(host.count), &service,
                socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
            guard result == 0 else { return "?" }
            let name = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let port = String(decoding: service.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return name.contains(":") ? "[\(name)]:\(port)" : "\(name):\(port)"
        }
    }
}

/// A UDP socket: connected to one peer (a client) or bound to a port (a server), with a
/// receiving thread that hands each datagram to a handler until the socket closes (within its
/// 100 ms poll).
final class UDPSocket: Sendable {
    /// The largest datagram UDP carries over IPv4 (65535 − 20 − 8).
    static let maximumDatagram = 65_507

    private let descriptor: PolledDescriptor

    private init(descriptor: Int32) {
        self.descriptor = PolledDescriptor(descriptor)
    }

    /// The system's error text for `errno`.
    static var lastError: String { PolledDescriptor.lastError }

    private static func resolve(host: String?, port: UInt16, passive: Bool) throws(OTAError) -> [(family: Int32, address: Data)] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        #else
        hints.ai_socktype = SOCK_DGRAM
        #endif
        hints.ai_flags = passive ? AI_PASSIVE : 0
        var list: UnsafeMutablePointer<addrinfo>?
        let result = getaddrinfo(host, String(port), &hints, &list)
        guard result == 0, let first = list else {
            let reason = String(cString: gai_strerror(result))
            throw OTAError(.connectionFailed, "cannot resolve \(host ?? "the local address"): \(reason)")
        }
        defer { freeaddrinfo(first) }
        var addresses: [(Int32, Data)] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let address = current.pointee.ai_addr {
                addresses.append((current.pointee.ai_family, Data(bytes: address, count: Int(current.pointee.ai_addrlen))))
            }
            entry = current.pointee.ai_next
        }
        return addresses
    }

    private static func makeSocket(family: Int32) -> Int32 {
        #if canImport(Glibc)
        socket(family, Int32(SOCK_DGRAM.rawValue), 0)
        #else
        socket(family, SOCK_DGRAM, 0)
        #endif
    }

    /// A socket on the first of `addresses` that `attach` (connect, bind) takes; `failing` the
    /// system's reason the last one did not.
    private static func first(
        of addresses: [(family: Int32, address: Data)], failing: (String) -> OTAError,
        _ attach: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) throws(OTAError) -> UDPSocket {
        var failure = "no address"
        for (family, address) in addresses {
            let descriptor = makeSocket(family: family)
            guard descriptor >= 0 else {
                failure = lastError
                continue
            }
            let result = address.withUnsafeBytes { raw in
                attach(descriptor, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
            }
            if result == 0 { return UDPSocket(descriptor: descriptor) }
            failure = lastError
            _ = closeDescriptor(descriptor)
        }
        throw failing(failure)
    }

    /// A socket connected to `host`:`port` (the first address that takes it).
    static func connected(host: String, port: UInt16) throws(OTAError) -> UDPSocket {
        try first(
            of: try resolve(host: host, port: port, passive: false),
            failing: { OTAError(.connectionFailed, "cannot open a UDP socket to \(host):\(port): \($0)") }
        ) { descriptor, address, length in connect(descriptor, address, length) }
    }

    /// A socket bound to `port` on `host` (`nil`: every local address; port 0: any free port).
    static func bound(host: String?, port: UInt16) throws(OTAError) -> UDPSocket {
        let addresses = try resolve(host: host, port: port, passive: true)
        // IPv4 first when the host is not given, so that 127.0.0.1 reaches the server.
        let ordered = host == nil ? addresses.sorted { ($0.family == AF_INET ? 0 : 1) < ($1.family == AF_INET ? 0 : 1) } : addresses
        return try first(of: ordered, failing: { OTAError(.invalidParameter, "cannot listen on UDP port \(port): \($0)") }) { descriptor, address, length in
            var yes: Int32 = 1
            _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            return bind(descriptor, address, length)
        }
    }

    /// The local port (0 once closed).
    var localPort: UInt16 {
        guard let descriptor = descriptor.open else { return 0 }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard result == 0 else { return 0 }
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer in
            if family == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }

    /// Sends one datagram to the connected peer, or to `peer`.
    ///
    /// - Returns: `nil`, or the system's reason it was not sent.
    func send(_ datagram: Data, to peer: UDPPeer? = nil) -> String? {
        guard let descriptor = descriptor.open else { return "the socket is closed" }
        let sent = datagram.withUnsafeBytes { bytes -> Int in
            if let peer {
                return peer.storage.withUnsafeBytes { address in
                    sendto(
                        descriptor, bytes.baseAddress, bytes.count, 0, address.baseAddress!.assumingMemoryBound(to: sockaddr.self),
                        socklen_t(address.count))
                }
            }
            return sendDescriptor(descriptor, bytes.baseAddress, bytes.count)
        }
        return sent == datagram.count ? nil : (sent < 0 ? Self.lastError : "sent \(sent) of \(datagram.count) bytes")
    }

    /// Starts the receiving thread: `handler` gets each datagram with its sender, and `ended`
    /// is called once with the reason when the socket closes (`nil`) or fails.
    func startReceiving(_ handler: @escaping @Sendable (Data, UDPPeer) -> Void, ended: @escaping @Sendable (String?) -> Void) {
        descriptor.startReading(
            name: "ota-udp-receive", pollMilliseconds: 100, bufferSize: Self.maximumDatagram,
            { descriptor, buffer in
                var storage = sockaddr_storage()
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let count = withUnsafeMutablePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(descriptor, buffer.baseAddress, buffer.count, 0, $0, &length) }
                }
                if count < 0 {
                    if errno == EINTR || errno == EAGAIN { return .more }
                    // A connected socket hears ICMP "port unreachable" as ECONNREFUSED.
                    return .failed(errno == ECONNREFUSED ? "nothing listens there (connection refused)" : Self.lastError)
                }
                let peer = withUnsafeBytes(of: &storage) { UDPPeer(storage: Data($0.prefix(Int(length)))) }
                handler(Data(bytes: buffer.baseAddress!, count: count), peer)
                return .more
            }, ended: ended)
    }

    /// Closes the socket: at once when nothing receives on it, else by the receiving thread
    /// within its poll interval.
    func close() {
        descriptor.close()
    }
}

// The C library's calls, which `UDPSocket`'s own methods of the same names hide inside it.
private func closeDescriptor(_ descriptor: Int32) -> Int32 { close(descriptor) }
private func sendDescriptor(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int { send(descriptor, bytes, count, 0) }
