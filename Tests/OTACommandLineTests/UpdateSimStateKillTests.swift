import Foundation
import OTACore
import OTAProtocolNordicDFU
import OTATestSupport
import OTATransportSimulator
import Testing

@testable import OTACommandLine

/// `ota update --sim-state` killed with SIGKILL mid-transfer and run again with the same
/// arguments (decision 0048): the simulated device is kept as it acknowledges, so the second run
/// resumes where the device last acknowledged (framed: at most one window sent again) and the
/// slot ends byte-identical to the image; a torn journal loads as the keep before it, and a
/// damaged or foreign state file is one line and a non-zero exit.
///
/// Every blocking read of a child's pipe and every wait for a child runs through `offThePool`,
/// on a thread of its own, never on one of the cooperative pool's two threads.
@Suite(.serialized) struct UpdateSimStateKillTests {
    static let executable = HostileCommandTests.executable
    static let profile = "nrf52840-mtu244-2m"
    /// Framed's window on nrf52840-mtu244-2m: 3 batches × 16 chunks × 244-byte writes.
    static let window = 3 * 16 * 244

    struct Scratch {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ota-sim-state-kill-\(UUID().uuidString)")
        var image: URL { directory.appendingPathComponent("image.bin") }
        func state(_ name: String) -> URL { directory.appendingPathComponent(name, isDirectory: true) }
        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    /// 96 KiB of seeded bytes: eight framed windows.
    static func image(in scratch: Scratch, seed: UInt64 = 48, size: Int = 96 * 1024) throws -> Data {
        var random = seed
        let bytes = Data(
            (0..<size).map { _ in
                random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return UInt8(truncatingIfNeeded: random >> 33)
            })
        try FileManager.default.createDirectory(at: scratch.directory, withIntermediateDirectories: true)
        try bytes.write(to: scratch.image)
        return bytes
    }

    static func arguments(_ scratch: Scratch, state: URL, protocolName: String = "framed") -> [String] {
        ["update", scratch.image.path, "--device", "sim:\(profile)", "--protocol", protocolName, "--sim-state", state.path, "--json"]
    }

    /// Runs `ota` to its end: its exit code, standard output and standard error.
    static func run(_ arguments: [String]) async throws -> (code: Int32, out: String, err: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let out = output.fileHandleForReading
        let err = errors.fileHandleForReading
        return await offThePool {
            // Standard error is small (one line); standard output is read first to its end.
            let outText = String(decoding: out.readDataToEndOfFile(), as: UTF8.self)
            let errText = String(decoding: err.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus, outText, errText)
        }
    }

    /// Starts `ota`, and sends it SIGKILL once it printed `progressLines` progress events: the
    /// count read back from the child's own output, so the moment is the same on a loaded machine.
    /// Returns whether the kill landed (the child died of it, rather than ending first).
    static func killed(_ arguments: [String], afterProgressLines progressLines: Int) async throws -> Bool {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let reader = output.fileHandleForReading
        return await offThePool {
            var seen = 0
            var pending = Data()
            while seen < progressLines {
                let chunk = reader.availableData
                guard !chunk.isEmpty else { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    if String(decoding: pending[..<newline], as: UTF8.self).contains("\"event\":\"progress\"") { seen += 1 }
                    pending.removeSubrange(...newline)
                }
            }
            // Sent before the pipe is closed: the child never sees a broken pipe first.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? reader.close()
            return process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
        }
    }

    /// The device's lifetime count of data bytes received (`PROFILE.received`).
    static func received(_ state: URL) throws -> Int {
        let bytes = try Data(contentsOf: state.appendingPathComponent("\(profile).received"))
        return bytes.reversed().reduce(0) { $0 << 8 | Int($1) }
    }

    static func slot(_ state: URL, count: Int) throws -> Data {
        try flash(state, profile: profile).prefix(count)
    }

    /// The slot `PROFILE.flash` in `state` holds.
    static func flash(_ state: URL, profile: String) throws -> Data {
        try simulatedSlot(inFlashFile: state.appendingPathComponent("\(profile).flash"), profile: profile)
    }

    @Test(
        "SIGKILL at 6 seeded moments of 'ota update --sim-state' (framed), then the same command: it resumes, at most one window sent again, and the slot holds the image",
        .enabled(if: FileManager.default.isExecutableFile(atPath: executable.path)))
    func killedAndRerunResumes() async throws {
        let scratch = Scratch()
        defer { scratch.remove() }
        let image = try Self.image(in: scratch)

        // What a device never cut off receives for this image: the bar the resumed ones are held to.
        let reference = scratch.state("reference")
        let whole = try await Self.run(Self.arguments(scratch, state: reference))
        #expect(whole.code == 0, "\(whole.err)")
        let once = try Self.received(reference)
        #expect(once >= image.count)
        #expect(try Self.slot(reference, count: image.count) == image)

        var random: UInt64 = 20_261_201
        var landed = 0
        var beyondWindow = 0
        var figures: [String] = []
        for point in 1...6 {
            // One seeded moment in each third of 2...19 of the transfer's 28 progress events, at a
            // pace of half real time (about 70 ms apart): the kill lands mid-transfer, before the
            // last window, on a loaded machine too.
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let after = 2 + 3 * (point - 1) + Int(random >> 33) % 3
            let state = scratch.state("kill-\(point)")
            let arguments = Self.arguments(scratch, state: state)
            let didLand = try await Self.killed(arguments + ["--sim-speed", "0.5"], afterProgressLines: after)
            #expect(didLand, "kill \(point) after \(after) progress events did not land: the update ended first")
            guard didLand else { continue }
            landed += 1
            let beforeRerun = try Self.received(state)
            if beforeRerun > Self.window { beyondWindow += 1 }
            #expect(beforeRerun < once, "kill \(point) landed after the whole image was sent")

            let rerun = try await Self.run(arguments)
            #expect(rerun.code == 0, "kill \(point): \(rerun.err)")
            #expect(try Self.slot(state, count: image.count) == image, "kill \(point): the slot differs from the image")
            let sentAgain = try Self.received(state) - once
            #expect(sentAgain >= 0 && sentAgain <= Self.window, "kill \(point) after \(after) events: \(sentAgain) bytes sent again, over one window")
            figures.append("\(after) events: cut at \(beforeRerun), \(sentAgain) again")
            if beforeRerun > Self.window {
                #expect(rerun.out.contains("continuing at byte"), "kill \(point): the rerun did not resume\n\(rerun.out)")
            }
            // The journal was folded into the files at the run's end.
            #expect(!FileManager.default.fileExists(atPath: state.appendingPathComponent("\(Self.profile).journal").path))
        }
        #expect(landed == 6)
        // A restart from byte 0 would send more than a window again only for these.
        #expect(beyondWindow > 0, "no kill came after a window: a restart from byte 0 would pass")
        print("update kill test: \(landed) kills, \(beyondWindow) past a window; \(figures.joined(separator: "; "))")
    }

    @Test(
        "mcumgr killed at 3 seeded moments of its upload, then the same command: Zephyr's upload outlives the central, so it resumes with at most the requests in flight sent again",
        .enabled(if: FileManager.default.isExecutableFile(atPath: executable.path)))
    func killedMCUmgrResumes() async throws {
        let scratch = Scratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(at: scratch.directory, withIntermediateDirectories: true)
        let fixture = DocumentedCommandsTests.packageRoot.appendingPathComponent("Tests/OTAProtocolMCUmgrTests/Fixtures/unsigned-200KB.bin")
        try FileManager.default.copyItem(at: fixture, to: scratch.image)
        let image = try Data(contentsOf: scratch.image)
        func arguments(_ state: URL) -> [String] {
            // Upload only: slot 1 then holds the file as it was sent.
            ["update", scratch.image.path, "--device", "sim:zephyr-sensor", "--param", "mode=upload", "--sim-state", state.path, "--json"]
        }
        let reference = scratch.state("reference")
        let whole = try await Self.run(arguments(reference))
        #expect(whole.code == 0, "\(whole.err)")
        let once = try Self.received(reference)
        #expect(try Self.slot(reference, count: image.count) == image)
        // The most the device can have been sent and not answered: its 4 buffers of 2,475 bytes.
        let inFlight = 4 * 2_475

        var random: UInt64 = 20_261_202
        var figures: [String] = []
        for point in 1...3 {
            // One seeded moment in each of 10...69 of the upload's 89 progress events.
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let after = 10 + 20 * (point - 1) + Int(random >> 33) % 20
            let state = scratch.state("kill-\(point)")
            #expect(try await Self.killed(arguments(state) + ["--sim-speed", "0.5"], afterProgressLines: after), "kill \(point) did not land")
            let cut = try Self.received(state)
            #expect(cut > inFlight && cut < once, "kill \(point) after \(after) events: cut at \(cut)")
            let rerun = try await Self.run(arguments(state))
            #expect(rerun.code == 0, "kill \(point): \(rerun.err)")
            #expect(try Self.slot(state, count: image.count) == image, "kill \(point): slot 1 differs from the image")
            let sentAgain = try Self.received(state) - once
            figures.append("\(after) events: cut at \(cut), \(sentAgain) again")
            #expect(sentAgain <= inFlight, "kill \(point) after \(after) events: \(sentAgain) bytes sent again")
        }
        print("update kill test (mcumgr): \(figures.joined(separator: "; "))")
    }

    @Test(
        "nordic-dfu killed at 3 seeded moments, then the same command: the bootloader's progress outlives the central, so it resumes with at most one object sent again",
        .enabled(if: FileManager.default.isExecutableFile(atPath: executable.path)))
    func killedNordicResumes() async throws {
        let scratch = Scratch()
        defer { scratch.remove() }
        let image = try Self.image(in: scratch)
        // A .bin with its .dat beside it: an unsigned application init packet.
        try InitPacketBuilder.unsignedApplication(for: image).write(to: scratch.image.deletingPathExtension().appendingPathExtension("dat"))
        func arguments(_ state: URL) -> [String] {
            ["update", scratch.image.path, "--device", "sim:\(Self.profile)", "--protocol", "nordic-dfu", "--sim-state", state.path, "--json"]
        }
        let reference = scratch.state("reference")
        let whole = try await Self.run(arguments(reference))
        #expect(whole.code == 0, "\(whole.err)")
        let once = try Self.received(reference)
        #expect(try Self.slot(reference, count: image.count) == image)
        let progressEvents = whole.out.split(separator: "\n").filter { $0.contains("\"event\":\"progress\"") }.count
        #expect(progressEvents > 20)
        // One data object: the SDK's 4,096 bytes.
        let object = 4096

        var random: UInt64 = 20_261_203
        var figures: [String] = []
        for point in 1...3 {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let third = max(1, (progressEvents - 6) / 3)
            let after = 3 + third * (point - 1) + Int(random >> 33) % third
            let state = scratch.state("kill-\(point)")
            #expect(try await Self.killed(arguments(state) + ["--sim-speed", "0.5"], afterProgressLines: after), "kill \(point) did not land")
            let cut = try Self.received(state)
            #expect(cut > object && cut < once, "kill \(point) after \(after) events: cut at \(cut)")
            let rerun = try await Self.run(arguments(state))
            #expect(rerun.code == 0, "kill \(point): \(rerun.err)")
            #expect(try Self.slot(state, count: image.count) == image, "kill \(point): the bank differs from the image")
            let sentAgain = try Self.received(state) - once
            figures.append("\(after) events: cut at \(cut), \(sentAgain) again")
            #expect(rerun.out.contains("the bootloader already holds this init packet"), "kill \(point): \(rerun.out)")
            #expect(rerun.out.contains("bytes; continuing"), "kill \(point): the rerun did not resume")
            #expect(sentAgain <= object, "kill \(point) after \(after) events: \(sentAgain) bytes sent again")
        }
        print("update kill test (nordic-dfu, \(progressEvents) progress events): \(figures.joined(separator: "; "))")
    }

    /// A protocol that cannot resume, its device, its image and how to cut it.
    struct StartingOver: Sendable, CustomTestStringConvertible {
        var protocolName: String
        var device: String
        var profile: String
        /// An image in the repository, or nil for 96 KiB of seeded bytes.
        var fixture: String?
        var speed: String
        var killAfter: Int
        var testDescription: String { protocolName }
    }

    @Test(
        "a protocol that cannot resume, killed mid-transfer: the same command starts over and the slot still holds the image",
        .enabled(if: FileManager.default.isExecutableFile(atPath: executable.path)),
        arguments: [
            StartingOver(protocolName: "generic", device: "sim:\(profile)", profile: profile, fixture: nil, speed: "0.5", killAfter: 8),
            // 204 progress events over 24 s of virtual time: four times real time, cut after 40.
            StartingOver(
                protocolName: "esp-ble-ota", device: "sim:esp-lamp", profile: "esp32-mtu185-1m", fixture: "Tests/OTAProtocolEspressifTests/Fixtures/app-c3.bin",
                speed: "4", killAfter: 40),
        ])
    func killedStartsOver(_ case: StartingOver) async throws {
        let scratch = Scratch()
        defer { scratch.remove() }
        var image = try Self.image(in: scratch)
        if let fixture = `case`.fixture {
            image = try Data(contentsOf: DocumentedCommandsTests.packageRoot.appendingPathComponent(fixture))
            try image.write(to: scratch.image)
        }
        let state = scratch.state(`case`.protocolName)
        let arguments = [
            "update", scratch.image.path, "--device", `case`.device, "--protocol", `case`.protocolName, "--sim-state", state.path, "--json",
        ]
        #expect(try await Self.killed(arguments + ["--sim-speed", `case`.speed], afterProgressLines: `case`.killAfter))
        let rerun = try await Self.run(arguments)
        #expect(rerun.code == 0, "\(rerun.err)")
        let flash = try Self.flash(state, profile: `case`.profile)
        #expect(flash.prefix(image.count) == image)
        // The whole image again, from byte 0 (esp-ble-ota writes with response, which the
        // device's count of data writes does not see: the run's own result says it).
        let result = try #require(rerun.out.split(separator: "\n").last { $0.contains("\"event\":\"result\"") })
        #expect(result.contains("\"bytesSent\":\(image.count),") && result.contains("\"resumes\":0"), "\(result)")
        #expect(!rerun.out.contains("continuing"), "\(`case`.protocolName) claims to resume")
    }

    @Test(
        "a journal torn by a kill inside an append loads as the keep before it, and the same command resumes from there",
        .enabled(if: FileManager.default.isExecutableFile(atPath: executable.path)))
    func tornJournalResumes() async throws {
        let scratch = Scratch()
        defer { scratch.remove() }
        let image = try Self.image(in: scratch)
        let state = scratch.state("torn")
        let arguments = Self.arguments(scratch, state: state)
        #expect(try await Self.killed(arguments + ["--sim-speed", "0.5"], afterProgressLines: 12))
        let journal = state.appendingPathComponent("\(Self.profile).journal")
        let kept = try Data(contentsOf: journal)
        // Cut the last group in half: what a kill in the middle of its append leaves.
        let entries = try SimulatedDeviceJournal.groups(kept).joined().count
        #expect(entries > 2)
        let magic = Data("SJG1".utf8)
        let lastGroup = try #require(kept.ranges(of: magic).last).lowerBound
        try kept.prefix(lastGroup + (kept.count - lastGroup) / 2).write(to: journal)
        let rerun = try await Self.run(arguments)
        #expect(rerun.code == 0, "\(rerun.err)")
        #expect(rerun.out.contains("continuing at byte"), "\(rerun.out)")
        #expect(try Self.slot(state, count: image.count) == image)
    }

    @Test(
        "a damaged or foreign state file is one line naming it and a non-zero exit, never a crash or a silently wrong device",
        .enabled(if: FileManager.default.isExecutableFile(atPath: executable.path)))
    func damagedStateFiles() async throws {
        let scratch = Scratch()
        defer { scratch.remove() }
        _ = try Self.image(in: scratch, size: 8 * 1024)
        let cases: [(name: String, file: String, bytes: Data)] = [
            ("a journal that is not one", "journal", Data("not a journal, but long enough to be read as one".utf8)),
            ("a journal damaged before its end", "journal", Data("SJG1".utf8) + Data([4, 0, 0, 0, 1, 2, 3, 4, 9, 9, 9, 9]) + Data("SJG1".utf8)),
            ("a flash file of another size", "flash", Data(repeating: 0xFF, count: 4096)),
            ("a count that is not 8 bytes", "received", Data([1, 2, 3])),
        ]
        for (name, file, bytes) in cases {
            let state = scratch.state(file + "-\(bytes.count)")
            try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
            let path = state.appendingPathComponent("\(Self.profile).\(file)")
            try bytes.write(to: path)
            let result = try await Self.run(Self.arguments(scratch, state: state))
            #expect(result.code != 0 && result.code < 128, "\(name): exit \(result.code)")
            let lines = result.err.split(separator: "\n")
            #expect(lines.count == 1, "\(name): \(result.err)")
            #expect(result.err.contains(path.path) && result.err.contains("delete it"), "\(name): \(result.err)")
            // Nothing was sent to a device that could not be restored.
            #expect(!result.out.contains("\"event\":\"progress\""), "\(name)")
        }
        // A file where the directory should be: a usage error, exit 2.
        let notDirectory = scratch.directory.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: notDirectory)
        let result = try await Self.run(Self.arguments(scratch, state: notDirectory))
        #expect(result.code == 2, "\(result.err)")
        #expect(result.err.contains("is a file"), "\(result.err)")
    }
}
