import Foundation
import OTACore
import OTATestSupport

@testable import OTAStorePostgreSQL

/// A private PostgreSQL cluster for one test: made with `initdb` in a temporary directory,
/// listening only on a unix socket there, stopped and deleted by ``stop()``. The server refuses
/// to run as root, so as root (the tests here) its programs run as the `postgres` user.
final class PostgreSQLCluster: Sendable {
    /// The directory of the server's programs (Debian's layout), or nil when none is installed.
    static let binaries: String? = {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted(by: >)
        // 15 first (the machine image's), else the newest.
        for version in versions.contains(15) ? [15] + versions : versions {
            let bin = "\(root)/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: bin + "/initdb"), FileManager.default.isExecutableFile(atPath: bin + "/pg_ctl") {
                return bin
            }
        }
        return nil
    }()

    /// Why the cluster tests cannot run here, or nil when they can.
    static let unavailable: String? = {
        guard binaries != nil else { return "no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin" }
        if getuid() == 0 && (getpwnam("postgres") == nil || !FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")) {
            return "running as root without a postgres user and runuser to start the server as"
        }
        return nil
    }()

    let directory: URL
    private let bin: String

    /// Makes and starts a cluster on a thread of its own (`offThePool`): `initdb` and `pg_ctl`
    /// block for seconds, and on the cooperative pool's two threads here that starved other
    /// suites' tasks past their time limits in full runs.
    static func start() async throws -> PostgreSQLCluster {
        try await offThePool { Result { try PostgreSQLCluster() } }.get()
    }

    /// Makes and starts the cluster, blocking the calling thread; tests call ``start()``.
    private init() throws {
        bin = try requireBinaries()
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("ota-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        if getuid() == 0, let user = getpwnam("postgres") {
            guard chown(directory.path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
                throw ClusterError("cannot give \(directory.path) to the postgres user")
            }
        }
        try Self.run(bin + "/initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
        try Self.run(
            bin + "/pg_ctl",
            [
                "-D", data, "-l", directory.appendingPathComponent("server.log").path, "-w", "-o", "-k \(directory.path) -c listen_addresses='' -c fsync=off",
                "start",
            ])
    }

    private var data: String { directory.appendingPathComponent("data").path }

    /// A URI for database `name` in this cluster.
    func uri(_ name: String) -> String { "postgresql:///\(name)?host=\(directory.path)&user=postgres" }

    /// Creates database `name` and returns its URI.
    func database(_ name: String) throws -> String {
        try PostgreSQLConnection(uri: uri("postgres")).query("CREATE DATABASE \(name)")
        return uri(name)
    }

    /// Stops the server at once and deletes the cluster.
    func stop() {
        try? Self.run(bin + "/pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs one of the server's programs, as the postgres user when this is root, its output to
    /// a file. `posix_spawn` and `waitpid`, not `Process`: the server that `pg_ctl start` leaves
    /// running inherits what `Process` watches for the program's end, which then never comes.
    private static func run(_ program: String, _ arguments: [String]) throws {
        let argv = getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", program] + arguments : [program] + arguments
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("ota-pg-\(UUID().uuidString).out").path
        defer { unlink(log) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else { throw ClusterError("cannot run \(argv[0]): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let exited = (status & 0x7f) == 0
        let code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw ClusterError("\(URL(fileURLWithPath: program).lastPathComponent) failed (status \(status)): \(text)")
        }
    }
}

struct ClusterError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

private func requireBinaries() throws -> String {
    guard let bin = PostgreSQLCluster.binaries else { throw ClusterError(PostgreSQLCluster.unavailable ?? "no server binaries") }
    return bin
}
