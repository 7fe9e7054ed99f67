import Foundation
import OTACore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A serial line (a tty, a USB CDC ACM port, a pseudo-terminal): raw mode at a baud rate, writes
/// in full, and a reading thread that hands bytes to a handler until the port closes.
final class SerialPort: Sendable {
    private struct State {
        var descriptor: Int32
        var closed = false
    }

    private let state: Mutex<State>
    private let receiving = Mutex(false)
    /// Set once the reading thread has let go of the port; who waits for that.
    private let exit = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Whether a hang-up of the other side (a pty whose client closed it) is waited out rather
    /// than the end: a server's port outlives its clients.
    let outlivesHangUp: Bool

    init(descriptor: Int32, outlivesHangUp: Bool = false) {
        state = Mutex(State(descriptor: descriptor))
        self.outlivesHangUp = outlivesHangUp
    }

    static var lastError: String { String(cString: strerror(errno)) }

    /// Opens `path` for reading and writing, in raw mode at `baud` when it is a terminal.
    static func open(_ path: String, baud: Int) throws(OTAError) -> SerialPort {
        let descriptor = Glue.open(path, O_RDWR | O_NOCTTY)
        guard descriptor >= 0 else { throw OTAError(.connectionFailed, "cannot open \(path): \(lastError)") }
        if isatty(descriptor) == 1 {
            var settings = termios()
            guard tcgetattr(descriptor, &settings) == 0 else {
                let reason = lastError
                _ = Glue.close(descriptor)
                throw OTAError(.connectionFailed, "cannot read the settings of \(path): \(reason)")
            }
            cfmakeraw(&settings)
            if let speed = speed(baud) {
                cfsetispeed(&settings, speed)
                cfsetospeed(&settings, speed)
            }
            guard tcsetattr(descriptor, TCSANOW, &settings) == 0 else {
                let reason = lastError
                _ = Glue.close(descriptor)
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
        let descriptor: Int32? = state.withLock { $0.closed ? nil : $0.descriptor }
        guard let descriptor else { return "the port is closed" }
        var position = 0
        while position < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                Glue.write(descriptor, raw.baseAddress!.advanced(by: position), raw.count - position)
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
        let already = receiving.withLock { started in
            defer { started = true }
            return started
        }
        precondition(!already, "a port is read on one thread")
        let report = ended
        let ended: @Sendable (String?) -> Void = { [self] reason in
            report(reason)
            for waiter in exit.withLock({ exit in
                exit.done = true
                defer { exit.waiters = [] }
                return exit.waiters
            }) {
                waiter.resume()
            }
        }
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let (descriptor, closed) = state.withLock { ($0.descriptor, $0.closed) }
                guard !closed else {
                    _ = Glue.close(descriptor)
                    ended(nil)
                    return
                }
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, 20)
                if ready == 0 || (ready < 0 && errno == EINTR) { continue }
                // Closed while polling: the bytes are the next connection's, not this one's.
                if state.withLock({ $0.closed }) { continue }
                let count = ready < 0 ? -1 : buffer.withUnsafeMutableBytes { Glue.read(descriptor, $0.baseAddress, $0.count) }
                if count > 0 {
                    handler(Data(buffer[0..<count]))
                    continue
                }
                if count < 0, errno == EINTR || errno == EAGAIN { continue }
                if outlivesHangUp, count == 0 || errno == EIO {
                    usleep(20_000)
                    continue
                }
                // 0 (end of file) or an error such as EIO when the other end of a pty closed.
                let reason = count == 0 ? "the port closed" : Self.lastError
                let wasClosed = state.withLock { state in
                    defer { state.closed = true }
                    return state.closed
                }
                _ = Glue.close(descriptor)
                ended(wasClosed ? nil : reason)
                return
            }
        }
        thread.name = "ota-serial-read"
        thread.start()
    }

    /// Closes the port and returns once the reading thread has let go of it (within its 20 ms
    /// poll), so that a port opened next on the same device gets every byte.
    func closeAndWait() async {
        close()
        guard receiving.withLock({ $0 }) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = exit.withLock { exit in
                if !exit.done { exit.waiters.append(continuation) }
                return exit.done
            }
            if done { continuation.resume() }
        }
    }

    /// Closes the port: at once when nothing reads it, else by the reading thread.
    func close() {
        let descriptor: Int32? = state.withLock { state in
            guard !state.closed else { return nil }
            state.closed = true
            return state.descriptor
        }
        guard let descriptor, !receiving.withLock({ $0 }) else { return }
        _ = Glue.close(descriptor)
    }
}

/// A pseudo-terminal pair: the controlling side's descriptor, and the path of the other side
/// (`/dev/pts/N`), which a client opens as a serial port. For tests, and for serving a device
/// model on a serial line without hardware.
public struct PseudoTerminal: Sendable {
    /// The controlling side.
    public let controller: Int32
    /// The path a serial client opens.
    public let path: String

    /// A new pair in raw mode.
    ///
    /// - Throws: ``OTAError/Code/internal`` when the system has no pseudo-terminals to give.
    public static func open() throws(OTAError) -> PseudoTerminal {
        let controller = PTY.openpt(O_RDWR | O_NOCTTY)
        guard controller >= 0, PTY.grantpt(controller) == 0, PTY.unlockpt(controller) == 0, let name = PTY.ptsname(controller) else {
            throw OTAError(.internal, "cannot open a pseudo-terminal: \(SerialPort.lastError)")
        }
        var settings = termios()
        if tcgetattr(controller, &settings) == 0 {
            cfmakeraw(&settings)
            _ = tcsetattr(controller, TCSANOW, &settings)
        }
        return PseudoTerminal(controller: controller, path: String(cString: name))
    }
}

enum Glue {
    static func open(_ path: String, _ flags: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.open(path, flags)
        #else
        Darwin.open(path, flags)
        #endif
    }
    static func close(_ descriptor: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.close(descriptor)
        #else
        Darwin.close(descriptor)
        #endif
    }
    static func read(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.read(descriptor, buffer, count)
        #else
        Darwin.read(descriptor, buffer, count)
        #endif
    }
    static func write(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.write(descriptor, buffer, count)
        #else
        Darwin.write(descriptor, buffer, count)
        #endif
    }
}

/// posix_openpt, grantpt, unlockpt and ptsname: Glibc's module does not import them (they need
/// _XOPEN_SOURCE), so on Linux they are looked up in the C library, where they always are.
enum PTY {
    #if canImport(Glibc)
    private static func function<T>(_ name: String, as type: T.Type) -> T {
        // RTLD_DEFAULT: the process's own symbols, the C library's among them.
        unsafeBitCast(dlsym(dlopen(nil, RTLD_NOW), name)!, to: type)
    }
    static func openpt(_ flags: Int32) -> Int32 { function("posix_openpt", as: (@convention(c) (Int32) -> Int32).self)(flags) }
    static func grantpt(_ descriptor: Int32) -> Int32 { function("grantpt", as: (@convention(c) (Int32) -> Int32).self)(descriptor) }
    static func unlockpt(_ descriptor: Int32) -> Int32 { function("unlockpt", as: (@convention(c) (Int32) -> Int32).self)(descriptor) }
    static func ptsname(_ descriptor: Int32) -> UnsafeMutablePointer<CChar>? {
        function("ptsname", as: (@convention(c) (Int32) -> UnsafeMutablePointer<CChar>?).self)(descriptor)
    }
    #else
    static func openpt(_ flags: Int32) -> Int32 { posix_openpt(flags) }
    static func grantpt(_ descriptor: Int32) -> Int32 { Darwin.grantpt(descriptor) }
    static func unlockpt(_ descriptor: Int32) -> Int32 { Darwin.unlockpt(descriptor) }
    static func ptsname(_ descriptor: Int32) -> UnsafeMutablePointer<CChar>? { Darwin.ptsname(descriptor) }
    #endif
}
