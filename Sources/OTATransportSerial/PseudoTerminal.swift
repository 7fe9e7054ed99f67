import OTACore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
