#if os(Linux)
import Foundation
import Testing

@testable import OTATransportBlueZ

/// A private `dbus-daemon` for one test: its own socket in a temporary directory, a permissive
/// policy, and nothing else on it.
///
/// ```swift
/// try await PrivateBus.with { bus in
///     let server = try await bus.connect()
///     …
/// }
/// ```
final class PrivateBus: Sendable {
    /// The bus's address, as `dbus-daemon` printed it.
    let address: String
    private let process: Process
    private let directory: URL

    private init(address: String, process: Process, directory: URL) {
        self.address = address
        self.process = process
        self.directory = directory
    }

    /// Starts a bus, runs `body`, then stops the bus.
    static func with<Result>(_ body: (PrivateBus) async throws -> Result) async throws -> Result {
        let bus = try start()
        defer { bus.stop() }
        return try await body(bus)
    }

    /// Starts a bus with two connections, a server exporting ``TestService`` at `paths` and a
    /// client, runs `body`, then closes both connections and stops the bus.
    static func withServerAndClient<Result>(
        exporting paths: [DBusObjectPath] = [TestService.path],
        _ body: (_ bus: PrivateBus, _ server: DBusConnection, _ client: DBusConnection) async throws -> Result
    ) async throws -> Result {
        try await with { bus in
            let server = try await bus.connect()
            let client = try await bus.connect()
            for path in paths { try await server.export(TestService.object(path: path)) }
            let result = try await body(bus, server, client)
            await client.close()
            await server.close()
            return result
        }
    }

    /// Opens a new connection to the bus.
    func connect() async throws -> DBusConnection {
        try await DBusConnection.connect(to: .address(address))
    }

    /// Kills the daemon now, as if the bus crashed.
    ///
    /// Returns once the daemon is dead (its sockets closed), without `Process.waitUntilExit`: in
    /// the full parallel suite, with about a hundred daemons started at once, Foundation once
    /// never noticed two of them exit, and the two cooperative threads blocked in it stopped every
    /// other test for good. A dead daemon is a zombie until Foundation reaps it, so the wait reads
    /// its state from `/proc`, for at most 10 s.
    func stop() {
        if process.isRunning {
            let pid = process.processIdentifier
            // SIGKILL, because the daemon inherits the test process's blocked signals, SIGTERM included.
            kill(pid, SIGKILL)
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(10)
            while Self.isAlive(pid), clock.now < deadline { usleep(1000) }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Whether `pid` is a live process: not gone and not a zombie (`/proc/PID/stat`'s state).
    private static func isAlive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return false }
        let state = stat[stat.index(after: end)...].drop(while: { $0 == " " }).first
        return state != "Z" && state != "X"
    }

    /// The number of match rules `name` has on the bus, from the daemon's statistics interface;
    /// `nil` when the daemon was built without it.
    func matchRuleCount(of name: String, askingWith connection: DBusConnection) async -> UInt32? {
        let call = DBusMessage.methodCall(
            destination: "org.freedesktop.DBus",
            path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus.Debug.Stats",
            member: "GetConnectionStats",
            arguments: [.string(name)]
        )
        guard let stats = try? await connection.call(call).decode([String: DBusValue].self) else { return nil }
        return stats["MatchRules"]?.uint32
    }

    private static func start() throws -> PrivateBus {
        // Without a daemon (or without libdbus) the test is skipped, saying why, rather than failed:
        // the README's `swift test` must pass on a machine that has neither.
        guard let daemon = findDaemon() else {
            try Test.cancel("dbus-daemon was not found: install it with `apt-get install dbus` to run the private-bus tests")
        }
        if case .failure(let missing) = LibDBus.shared {
            try Test.cancel("\(missing.description) to run the private-bus tests")
        }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("ota-dbus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = directory.appendingPathComponent("bus.conf")
        try Self.configuration(socket: directory.appendingPathComponent("bus").path)
            .write(to: config, atomically: true, encoding: .utf8)

        let process = Process()
        process.executableURL = daemon
        process.arguments = ["--config-file=\(config.path)", "--print-address", "--nofork"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()

        // The daemon prints its address once it listens.
        var printed = Data()
        while !printed.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            printed.append(chunk)
        }
        let address = String(decoding: printed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard address.hasPrefix("unix:") else {
            kill(process.processIdentifier, SIGKILL)
            throw PrivateBusError("dbus-daemon did not print an address (got '\(address)')")
        }
        return PrivateBus(address: address, process: process, directory: directory)
    }

    private static func findDaemon() -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/bin", "/bin", "/usr/local/bin"]
        return directories.lazy
            .map { URL(fileURLWithPath: $0).appendingPathComponent("dbus-daemon") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    private static func configuration(socket: String) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <limit name="max_replies_per_connection">10000</limit>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """
    }
}

/// Why a private bus could not start.
struct PrivateBusError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Waits until `condition` holds, polling, for at most `timeout`; returns whether it held.
///
/// For effects that cross the real bus and so cannot be awaited directly (a match rule removed
/// after a stream is dropped). The bound is a hang guard, not a speed claim: in the full parallel
/// suite the cooperative pool can be busy with other suites' hashing for tens of seconds, so it
/// is generous; a condition that never holds still fails, only later.
func eventually(within timeout: Duration = .seconds(120), _ condition: () async -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return await condition()
}
#endif

#if os(Linux)
extension Trait where Self == ConditionTrait {
    /// For suites that call libdbus (through a private bus or by marshalling messages): skipped,
    /// saying why, where `libdbus-1.so.3` cannot be loaded, instead of stopping the test process.
    static var needsLibDBus: Self {
        .enabled(
            if: (try? LibDBus.shared.get()) != nil,
            "libdbus-1.so.3 cannot be loaded here (install libdbus-1-3)")
    }
}
#endif
