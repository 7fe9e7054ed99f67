import Foundation
import OTACore
import OTATransportPacketLink

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A serial line (a tty, a USB CDC ACM port, a pseudo-terminal): raw mode at a baud rate, writes
/// in full, and a reading thread that hands bytes to a handler until the port closes.
final class SerialPort: Sendable {
    private let descriptor: PolledDescriptor

    /// Whether a hang-up of the other side (a pty whose client closed it) is waited out rather
    /// than the end: a server's port outlives its clients.
    let outlivesHangUp: Bool

    init(descriptor: Int32, outlivesHangUp: Bool = false) {
        self.descriptor = PolledDescriptor(descriptor)
        self.outlivesHangUp = outlivesHangUp
    }

    static var lastError: String { PolledDescriptor.lastError }

    /// Opens `path` for reading and writing, in raw mode at `baud` when it is a terminal.
    static func open(_ path: String, baud: Int) throws(OTAError) -> SerialPort {
        let descriptor = openDescriptor(path, O_RDWR | O_NOCTTY)
        guard descriptor >= 0 else { throw OTAError(.connectionFailed, "cannot open \(path): \(lastError)") }
        if isatty(descriptor) == 1 {
            var settings = termios()
            guard tcgetattr(descriptor, &settings) == 0 else {
                let reason = lastError
                _ = closeDescriptor(descriptor)
                throw OTAError(.connectionFailed, "cannot read the settings of \(path): \(reason)")
            }
            cfmakeraw(&settings)
            if let speed = speed(baud) {
                cfsetispeed(&settings, speed)
                cfsetospeed(&settings, speed)
            }
            guard tcsetattr(descriptor, TCSANOW, &settings) == 0 else {
                let reason = lastError
                _ = closeDescriptor(descriptor)
                throw OTAError(.connectionFailed, "cannot set \(path) to raw mode at \(baud) baud: \(reason)")
            }
        }
        return SerialPort(descriptor: descriptor)
    }

    /// The termios constant of a standard rate.
    static func speed(_ baud: Int) -> speed_t? {
        let table: [Int: speed_t] = [
            9600: speed_t(B9600), 19200: speed_t(B19200), 38400: speed_t(B38400), 57600: speed_t(B57600), 115_200: speed_t(B115200),
            230_400: speed_t(B230400),
        ]
        #if canImport(Glibc)
        let more: [Int: speed_t] = [460_800: speed_t(B460800), 921_600: speed_t(B921600), 1_000_000: speed_t(B1000000)]
        return table[baud] ?? more[baud]
        #else
        return table[baud]
        #endif
    }

    /// Writes all of `bytes`; `nil`, or why not.
    func write(_ bytes: Data) -> String? {
        guard let descriptor = descriptor.open else { return "the port is closed" }
        var position = 0
        while position < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                writeDescriptor(descriptor, raw.baseAddress!.advanced(by: position), raw.count - position)
            }
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return Self.lastError
            }
            position += written
        }
        return nil
    }

    /// Starts the reading thread: `handler` gets bytes as they come; `ended` once, with the reason
    /// (`nil` when closed here).
    func startReceiving(_ handler: @escaping @Sendable (Data) -> Void, ended: @escaping @Sendable (String?) -> Void) {
        descriptor.startReading(
            name: "ota-serial-read", pollMilliseconds: 20, bufferSize: 4096,
            { [outlivesHangUp] descriptor, buffer in
                let count = readDescriptor(descriptor, buffer.baseAddress, buffer.count)
                if count > 0 {
                    handler(Data(bytes: buffer.baseAddress!, count: count))
                    return .more
                }
                if count < 0, errno == EINTR || errno == EAGAIN { return .more }
                if outlivesHangUp, count == 0 || errno == EIO {
                    usleep(20_000)
                    return .more
                }
                // 0 (end of file) or an error such as EIO when the other end of a pty closed.
                return .failed(count == 0 ? "the port closed" : Self.lastError)
            }, ended: ended)
    }

    /// Closes the port and returns once the reading thread has let go of it (within its 20 ms
    /// poll), so that a port opened next on the same device gets every byte.
    func closeAndWait() async {
        await descriptor.closeAndWait()
    }

    /// Closes the port: at once when nothing reads it, else by the reading thread.
    func close() {
        descriptor.close()
    }
}

// The C library's calls, which `SerialPort`'s own methods of the same names hide inside it.
private func openDescriptor(_ path: String, _ flags: Int32) -> Int32 { open(path, flags) }
private func closeDescriptor(_ descriptor: Int32) -> Int32 { close(descriptor) }
private func readDescriptor(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(descriptor, buffer, count) }
private func writeDescriptor(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int { write(descriptor, buffer, count) }
