import Foundation
import OTACore
import OTAProtocolMCUmgr
import OTATestSupport
import OTATransportUDP
import Testing

/// smpclient and smpmgr (Intercreate's SMP client and CLI, from PyPI) against the MCUmgr device
/// model served over UDP in this process: an imgtool-made image uploaded by them lands
/// byte-identically in the model's slot 1, and the image state they read and write is MCUboot's.
///
/// Needs the virtual environment `Tests/ThirdParty/setup-venv.sh` makes (no network here): its
/// directory in `OTA_THIRD_PARTY_VENV`, else `.build/third-party-venv`. Skipped without it.
@Suite("Third-party SMP clients over UDP")
struct ThirdPartyClientTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let venv = URL(
        fileURLWithPath: ProcessInfo.processInfo.environment["OTA_THIRD_PARTY_VENV"]
            ?? repository.appendingPathComponent(".build/third-party-venv").path)
    static func tool(_ name: String) -> URL { venv.appendingPathComponent("bin/\(name)") }
    static var isInstalled: Bool {
        ["python", "smpmgr", "imgtool"].allSatisfy { FileManager.default.isExecutableFile(atPath: tool($0).path) }
    }
    static let skipReason: Comment = "no smpclient/smpmgr/imgtool virtual environment: run Tests/ThirdParty/setup-venv.sh (needs PyPI)"

    /// Runs a program of the virtual environment; returns its exit status and output.
    /// Runs a program of the virtual environment on a thread of its own (`offThePool`): the
    /// Python clients take seconds, which would hold one of the cooperative pool's threads.
    static func run(_ name: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await offThePool { Result { try blockingRun(name, arguments) } }.get()
    }

    private static func blockingRun(_ name: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = tool(name)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// An imgtool image of `size` payload bytes in a fresh directory.
    static func imgtoolImage(size: Int, version: String) async throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ota-third-party-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let payload = directory.appendingPathComponent("payload.bin")
        try Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 197 &+ 3) }).write(to: payload)
        let image = directory.appendingPathComponent("app.signed.bin")
        let made = try await run(
            "imgtool",
            [
                "create", "--header-size", "0x200", "--pad-header", "--slot-size", "0x80000", "--align", "4", "--version", version, payload.path,
                image.path,
            ])
        try #require(made.status == 0, "imgtool failed: \(made.output)")
        return image
    }

    static func server() throws -> (UDPDeviceServer, MCUmgrDeviceModel) {
        let model = MCUmgrDeviceModel()
        let server = try UDPDeviceServer(
            model: model, characteristic: MCUmgrGATTProfile().smp, flash: NORFlash(capacity: 512 * 1024), host: "127.0.0.1", port: 0,
            packetLength: SMPHeader.messageLength(of:))
        server.start()
        return (server, model)
    }

    @Test(
        "smpclient uploads a 200 KB imgtool image byte-identically, reads image state and marks it for a test boot",
        .enabled(if: isInstalled, skipReason))
    func smpclient() async throws {
        let image = try await Self.imgtoolImage(size: 200 * 1024, version: "2.0.0")
        defer { try? FileManager.default.removeItem(at: image.deletingLastPathComponent()) }
        let bytes = try Data(contentsOf: image)
        let mcuboot = try MCUbootImage(parsing: bytes)
        let (server, model) = try Self.server()
        defer { server.stop() }
        let script = Self.repository.appendingPathComponent("Tests/ThirdParty/smpclient_udp.py").path
        // Upload, state read, test mark; no reset yet, so slot 1 still holds the upload.
        let upload = try await Self.run("python", [script, "127.0.0.1", String(server.port), image.path])
        #expect(upload.status == 0, "\(upload.output)")
        #expect(upload.output.contains("ok: slot 1 holds the image"), "\(upload.output)")
        #expect(server.flash.read(0..<bytes.count) == bytes, "slot 1 differs from the image smpclient sent")
        #expect(model.imageState.slot(1)?.pending == true)
        #expect(model.imageState.slot(1)?.hash == mcuboot.hash)
    }

    @Test("smpclient's test boot: after its reset the image runs unconfirmed in slot 0", .enabled(if: isInstalled, skipReason))
    func smpclientReset() async throws {
        let image = try await Self.imgtoolImage(size: 20_000, version: "2.1.0")
        defer { try? FileManager.default.removeItem(at: image.deletingLastPathComponent()) }
        let mcuboot = try MCUbootImage(parsing: try Data(contentsOf: image))
        let (server, model) = try Self.server()
        defer { server.stop() }
        let script = Self.repository.appendingPathComponent("Tests/ThirdParty/smpclient_udp.py").path
        let run = try await Self.run("python", [script, "127.0.0.1", String(server.port), image.path, "--reset"])
        #expect(run.status == 0, "\(run.output)")
        #expect(server.statistics.reboots == 1)
        #expect(model.isTestBoot)
        #expect(model.imageState.slot(0)?.hash == mcuboot.hash)
    }

    @Test(
        "A failure is seen: a run that finds slot 1 already pending fails the script (its checks have teeth)",
        .enabled(if: isInstalled, skipReason))
    func detectsMismatch() async throws {
        let sent = try await Self.imgtoolImage(size: 8_000, version: "3.0.0")
        defer { try? FileManager.default.removeItem(at: sent.deletingLastPathComponent()) }
        let (server, _) = try Self.server()
        defer { server.stop() }
        let script = Self.repository.appendingPathComponent("Tests/ThirdParty/smpclient_udp.py").path
        let first = try await Self.run("python", [script, "127.0.0.1", String(server.port), sent.path])
        #expect(first.status == 0, "\(first.output)")
        // The first run left slot 1 pending. The device refuses an upload into a pending slot
        // (rc 9, as Zephyr's img_mgmt does), or, if it took it, the second run's check that the
        // slot is not pending before the test mark fails: either way the script must exit non-zero
        // and say why.
        let second = try await Self.run("python", [script, "127.0.0.1", String(server.port), sent.path])
        #expect(second.status != 0, "\(second.output)")
        #expect(
            second.output.contains("FAILED: slot 1 not pending before the test mark")
                || (second.output.contains("SMPUploadError") && second.output.contains("rc=<IMG_MGMT_ERR")),
            "\(second.output)")
    }
}
