#if os(Linux)
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An owned Unix file descriptor, the value of a D-Bus `h` argument.
///
/// The descriptor is closed when the last reference to this object goes away, unless it was
/// taken out with ``take()``. Sending a message duplicates the descriptors it carries, so the
/// sender keeps its own; a received message gives each descriptor to a new instance.
///
/// BlueZ hands out descriptors this way from `AcquireWrite` and `AcquireNotify`.
///
/// Two instances are equal only when they are the same object.
final class DBusFileDescriptor: Hashable, Sendable, CustomStringConvertible {
    private let descriptor: Mutex<Int32>

    /// Takes ownership of `rawValue`: it will be closed with this object.
    init(taking rawValue: Int32) {
        descriptor = Mutex(rawValue)
    }

    /// Duplicates `rawValue`, leaving the caller's descriptor untouched.
    ///
    /// - Throws: ``DBusError`` named ``DBusError/Name/failed`` when `dup` fails.
    convenience init(duplicating rawValue: Int32) throws {
        let duplicate = duplicateDescriptor(rawValue)
        guard duplicate >= 0 else {
            throw DBusError(name: .failed, message: "cannot duplicate file descriptor \(rawValue): errno \(errno)")
        }
        self.init(taking: duplicate)
    }

    deinit {
        let rawValue = descriptor.withLock { $0 }
        closeDescriptor(rawValue)
    }

    /// The descriptor, or -1 once it was taken or closed. Valid while this object is alive.
    var rawValue: Int32 { descriptor.withLock { $0 } }

    /// Hands the descriptor to the caller, who becomes responsible for closing it.
    ///
    /// - Returns: the descriptor, or -1 if it was already taken or closed.
    func take() -> Int32 {
        descriptor.withLock { value in
            defer { value = -1 }
            return value
        }
    }

    /// Closes the descriptor now instead of when this object goes away.
    func close() {
        let rawValue = take()
        closeDescriptor(rawValue)
    }

    var description: String { "fd \(rawValue)" }

    static func == (lhs: DBusFileDescriptor, rhs: DBusFileDescriptor) -> Bool { lhs === rhs }

    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// Closes `rawValue` unless it is negative (a free function, out of reach of `close()` methods).
func closeDescriptor(_ rawValue: Int32) {
    if rawValue >= 0 { _ = close(rawValue) }
}

/// Duplicates `rawValue` with close-on-exec set; returns -1 on failure, with `errno` set.
func duplicateDescriptor(_ rawValue: Int32) -> Int32 {
    fcntl(rawValue, F_DUPFD_CLOEXEC, 0)
}
#endif
