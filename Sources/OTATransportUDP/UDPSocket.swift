import Foundation
import OTACore
import Synchronization

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
/// receiving thread that hands each datagram to a handler until the socket closes.
///
/// The thread polls with a short timeout so that ``close()`` ends it without signals.
final class UDPSocket: Sendable {
    /// The largest datagram UDP carries over IPv4 (65535 − 20 − 8).
    static let maximumDatagram = 65_507

    private struct State {
        var descriptor: Int32
        var closed = false
    }

    private let state: Mutex<State>
    private let receiving = Mutex(false)

    private init(descriptor: Int32) {
        state = Mutex(State(descriptor: descriptor))
    }

    /// The system's error text for `errno`.
    static var lastError: String { String(cString: strerror(errno)) }

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

    /// A socket connected to `host`:`port` (the first address that takes it).
    static func connected(host: String, port: UInt16) throws(OTAError) -> UDPSocket {
        var failure = "no address"
        for (family, address) in try resolve(host: host, port: port, passive: false) {
            let descriptor = makeSocket(family: family)
            guard descriptor >= 0 else {
                failure = lastError
                continue
            }
            let result = address.withUnsafeBytes { raw in
                connect(descriptor, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
            }
            if result == 0 { return UDPSocket(descriptor: descriptor) }
            failure = lastError
            _ = SystemClose.close(descriptor)
        }
        throw OTAError(.connectionFailed, "cannot open a UDP socket to \(host):\(port): \(failure)")
    }

    /// A socket bound to `port` on `host` (`nil`: every local address; port 0: any free port).
    static func bound(host: String?, port: UInt16) throws(OTAError) -> UDPSocket {
        var failure = "no address"
        let addresses = try resolve(host: host, port: port, passive: true)
        // IPv4 first when the host is not given, so that 127.0.0.1 reaches the server.
        let ordered = host == nil ? addresses.sorted { ($0.family == AF_INET ? 0 : 1) < ($1.family == AF_INET ? 0 : 1) } : addresses
        for (family, address) in ordered {
            let descriptor = makeSocket(family: family)
            guard descriptor >= 0 else {
                failure = lastError
                continue
            }
            var yes: Int32 = 1
            _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            let result = address.withUnsafeBytes { raw in
                bind(descriptor, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
            }
            if result == 0 { return UDPSocket(descriptor: descriptor) }
            failure = lastError
            _ = SystemClose.close(descriptor)
        }
        throw OTAError(.invalidParameter, "cannot listen on UDP port \(port): \(failure)")
    }

    /// The local port.
    var localPort: UInt16 {
        let descriptor = state.withLock { $0.descriptor }
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
        let descriptor: Int32? = state.withLock { $0.closed ? nil : $0.descriptor }
        guard let descriptor else { return "the socket is closed" }
        let sent = datagram.withUnsafeBytes { bytes -> Int in
            if let peer {
                return peer.storage.withUnsafeBytes { address in
                    sendto(
                        descriptor, bytes.baseAddress, bytes.count, 0, address.baseAddress!.assumingMemoryBound(to: sockaddr.self),
                        socklen_t(address.count))
                }
            }
            return Glue.send(descriptor, bytes.baseAddress, bytes.count)
        }
        return sent == datagram.count ? nil : (sent < 0 ? Self.lastError : "sent \(sent) of \(datagram.count) bytes")
    }

    /// Starts the receiving thread: `handler` gets each datagram with its sender, and `ended`
    /// is called once with the reason when the socket closes (`nil`) or fails.
    func startReceiving(_ handler: @escaping @Sendable (Data, UDPPeer) -> Void, ended: @escaping @Sendable (String?) -> Void) {
        let already = receiving.withLock { started in
            defer { started = true }
            return started
        }
        precondition(!already, "a socket receives on one thread")
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: Self.maximumDatagram)
            while true {
                let (descriptor, closed) = state.withLock { ($0.descriptor, $0.closed) }
                guard !closed else {
                    // The thread owns the descriptor once it runs, so no poll ever sees it reused.
                    _ = SystemClose.close(descriptor)
                    ended(nil)
                    return
                }
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, 100)
                if ready == 0 || (ready < 0 && errno == EINTR) { continue }
                if ready < 0 {
                    ended(Self.lastError)
                    return
                }
                var storage = sockaddr_storage()
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let count = buffer.withUnsafeMutableBytes { bytes in
                    withUnsafeMutablePointer(to: &storage) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(descriptor, bytes.baseAddress, bytes.count, 0, $0, &length) }
                    }
                }
                if count < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    // A connected socket hears ICMP "port unreachable" as ECONNREFUSED.
                    let reason = errno == ECONNREFUSED ? "nothing listens there (connection refused)" : Self.lastError
                    let closed = state.withLock { state in
                        defer { state.closed = true }
                        return state.closed
                    }
                    _ = SystemClose.close(descriptor)
                    ended(closed ? nil : reason)
                    return
                }
                let peer = withUnsafeBytes(of: &storage) { UDPPeer(storage: Data($0.prefix(Int(length)))) }
                handler(Data(buffer[0..<count]), peer)
            }
        }
        thread.name = "ota-udp-receive"
        thread.start()
    }

    /// Closes the socket: at once when nothing receives on it, else by the receiving thread
    /// within its poll interval.
    func close() {
        let descriptor: Int32? = state.withLock { state in
            guard !state.closed else { return nil }
            state.closed = true
            return state.descriptor
        }
        guard let descriptor, !receiving.withLock({ $0 }) else { return }
        _ = SystemClose.close(descriptor)
    }
}

/// The system's `close` and `send`, which `UDPSocket`'s own method names hide.
private enum SystemClose {
    static func close(_ descriptor: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.close(descriptor)
        #else
        Darwin.close(descriptor)
        #endif
    }
}

private enum Glue {
    static func send(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.send(descriptor, bytes, count, 0)
        #else
        Darwin.send(descriptor, bytes, count, 0)
        #endif
    }
}
