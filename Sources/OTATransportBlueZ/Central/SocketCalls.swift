#if os(Linux)
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Every C call the central makes on sockets and pipes (socket, poll, send, read, setsockopt,
/// ioctl, close), in one place so that they can be traced or faked, as swift-system's
/// Syscalls.swift.
///
/// All calls are non-blocking except ``waitUntilWritable(_:orReadable:)`` and
/// ``readDatagram(_:maximumLength:)`` on a blocking descriptor, which must run on a thread of
/// their own, never on Swift's cooperative pool.
enum SocketCalls {
    /// The outcome of sending one datagram.
    enum SendResult: Equatable {
        /// The whole datagram was queued.
        case sent
        /// The socket's buffer is full (EAGAIN): wait for writability and try again.
        case wouldBlock
        /// The peer closed its end (EPIPE, ECONNRESET, ECONNREFUSED, ENOTCONN).
        case hangUp(Int32)
        /// Any other failure, with its errno.
        case failed(Int32)
    }

    /// The outcome of waiting for writability.
    enum WaitResult: Equatable {
        /// The socket can take a datagram.
        case writable
        /// The wake-up pipe was poked (and drained).
        case woken
        /// The peer closed its end (POLLHUP or POLLERR).
        case hangUp
        /// `poll` failed, with its errno.
        case failed(Int32)
    }

    /// Sends `data` as one datagram without blocking and without SIGPIPE.
    static func sendDatagram(_ descriptor: Int32, _ data: Data) -> SendResult {
        let flags = Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)
        while true {
            let sent = data.withUnsafeBytes { buffer in
                send(descriptor, buffer.baseAddress, buffer.count, flags)
            }
            if sent == data.count { return .sent }
            if sent >= 0 { return .failed(EMSGSIZE) }
            let error = errno
            switch error {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case EPIPE, ECONNRESET, ECONNREFUSED, ENOTCONN: return .hangUp(error)
            default: return .failed(error)
            }
        }
    }

    /// Blocks until `descriptor` is writable, its peer hangs up, or `wake` becomes readable (then
    /// drains it).
    static func waitUntilWritable(_ descriptor: Int32, orReadable wake: Int32) -> WaitResult {
        var descriptors = [
            pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0),
            pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready = descriptors.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), -1) }
            if ready < 0 {
                let error = errno
                if error == EINTR { continue }
                return .failed(error)
            }
            if descriptors[1].revents != 0 {
                drain(wake)
                return .woken
            }
            let events = descriptors[0].revents
            if events & Int16(POLLOUT) != 0 { return .writable }
            if events & (Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL)) != 0 { return .hangUp }
        }
    }

    /// A pipe for waking a blocked ``waitUntilWritable(_:orReadable:)`` (a stream socket pair,
    /// which sets non-blocking and close-on-exec atomically); `nil` when `socketpair` fails.
    static func makeWakePipe() -> (read: Int32, write: Int32)? {
        var ends: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &ends) == 0 else { return nil }
        return (ends[0], ends[1])
    }

    /// Writes one byte to a wake-up pipe; a full pipe is already awake.
    static func poke(_ descriptor: Int32) {
        var byte: UInt8 = 1
        _ = send(descriptor, &byte, 1, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
    }

    /// Reads everything waiting in a non-blocking pipe.
    static func drain(_ descriptor: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64)
        while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// Sets or clears `O_NONBLOCK`; returns whether it worked.
    @discardableResult
    static func setNonBlocking(_ descriptor: Int32, _ nonBlocking: Bool = true) -> Bool {
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0 else { return false }
        let wanted = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        return fcntl(descriptor, F_SETFL, wanted) == 0
    }

    /// Asks for a send buffer of `bytes` (`SO_SNDBUF`) and returns the size the kernel settled on
    /// (Linux doubles the request, for its bookkeeping, and raises it to a floor of about 4.6 kB);
    /// `nil` when either call fails.
    ///
    /// On an `AF_UNIX` datagram socket the buffer counts every datagram the peer has not read
    /// yet, each with the kernel's overhead (its `truesize`, about 1.3 kB for 510 bytes), and a
    /// send is refused (EAGAIN) once the count reaches the buffer's size.
    static func limitSendBuffer(_ descriptor: Int32, to bytes: Int) -> Int? {
        var requested = Int32(clamping: bytes)
        let length = socklen_t(MemoryLayout<Int32>.size)
        guard setsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &requested, length) == 0 else { return nil }
        return sendBufferSize(descriptor)
    }

    /// The socket's send buffer size (`SO_SNDBUF`, as the kernel reports it); `nil` on failure.
    static func sendBufferSize(_ descriptor: Int32) -> Int? {
        var size: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &size, &length) == 0 else { return nil }
        return Int(size)
    }

    /// What the socket holds that its peer has not read yet (`ioctl(SIOCOUTQ)`), in the kernel's
    /// accounting, which for `AF_UNIX` includes each datagram's overhead; `nil` on failure.
    static func queuedBytes(_ descriptor: Int32) -> Int? {
        var queued: Int32 = 0
        guard ioctl(descriptor, UInt(TIOCOUTQ), &queued) == 0 else { return nil }
        return Int(queued)
    }

    /// Closes a descriptor; negative ones are ignored.
    static func close(_ descriptor: Int32) {
        guard descriptor >= 0 else { return }
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #elseif canImport(Musl)
        _ = Musl.close(descriptor)
        #else
        _ = Darwin.close(descriptor)
        #endif
    }

    /// A connected pair of `AF_UNIX` `SOCK_SEQPACKET` sockets, close-on-exec, as bluetoothd makes
    /// for `AcquireWrite`; `nil` when `socketpair` fails.
    static func seqpacketPair(nonBlocking: Bool) -> (Int32, Int32)? {
        var ends: [Int32] = [-1, -1]
        var type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
        guard socketpair(AF_UNIX, type, 0, &ends) == 0 else { return nil }
        return (ends[0], ends[1])
    }

    /// Reads one datagram of at most `maximumLength` bytes: `nil` at end of stream or on error;
    /// blocks on a blocking descriptor.
    static func readDatagram(_ descriptor: Int32, maximumLength: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: maximumLength)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 { return Array(buffer.prefix(count)) }
            if count < 0, errno == EINTR { continue }
            return nil
        }
    }
}
#endif
