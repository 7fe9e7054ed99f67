import Foundation
import OTACore
import OTAProtocolMCUmgr
import OTATransportSerial
import OTATransportUDP
import Testing

@testable import OTACommandLine

/// `ota image list|test|confirm|erase` and `ota reset` against the simulated Zephyr device, its
/// slots and MCUboot flags kept between runs by `--sim-state`, and against the device model
/// served over UDP (`--device udp:HOST:PORT`).
@Suite struct ImageCommandTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let fixture = packageRoot.appendingPathComponent("Tests/OTAProtocolMCUmgrTests/Fixtures/ecdsa-p256-4KB.bin")
    static let factoryHash = Hex.bytes(try! MCUbootImage(parsing: MCUmgrDeviceModel.defaultFactoryImage).hash)

    /// The fixture's MCUboot hash, in hex.
    static func fixtureHash() throws -> String {
        Hex.bytes(try MCUbootImage(parsing: try Data(contentsOf: fixture)).hash)
    }

    /// A fresh state directory with the fixture uploaded into slot 1 of sim:zephyr-sensor.
    static func uploaded() async throws -> String {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("ota-image-\(UUID().uuidString)").path
        let (code, streams) = await runTool(["update", fixture.path, "--device", "sim:zephyr-sensor", "--param", "mode=upload", "--sim-state", state])
        try #require(code == 0, "\(streams.standardError)")
        return state
    }

    /// `ota image list --json`: the slots by number.
    static func slots(_ state: String) async throws -> [Int: [String: JSONValue]] {
        let (code, streams) = await runTool(["image", "list", "--sim-state", state, "--json"])
        try #require(code == 0, "\(streams.standardError)")
        return try Self.slots(json: streams.standardOutput)
    }

    static func slots(json text: String) throws -> [Int: [String: JSONValue]] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let images = try #require(object["images"] as? [[String: Any]])
        var slots: [Int: [String: JSONValue]] = [:]
        for image in images {
            let slot = try #require(image["slot"] as? Int)
            var entry: [String: JSONValue] = [:]
            for (key, value) in image {
                switch value {
                case let flag as Bool where key != "slot" && key != "image": entry[key] = .bool(flag)
                case let text as String: entry[key] = .string(text)
                default: break
                }
            }
            slots[slot] = entry
        }
        return slots
    }

    static func run(_ arguments: [String], state: String) async -> (code: Int32, streams: CapturedStreams) {
        await runTool(arguments + ["--sim-state", state])
    }

    @Test("upload, list, test, reset into a test boot, confirm, reset: the image stays")
    func testBootThenConfirm() async throws {
        let state = try await Self.uploaded()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let hash = try Self.fixtureHash()
        var slots = try await Self.slots(state)
        #expect(slots[0]?["hash"] == .string(Self.factoryHash))
        #expect(slots[0]?["active"] == .bool(true) && slots[0]?["confirmed"] == .bool(true))
        #expect(slots[1]?["hash"] == .string(hash) && slots[1]?["pending"] == .bool(false))
        #expect(slots[1]?["version"] == .string("1.2.3"))

        // A prefix of the hash is enough when one slot has it.
        let tested = await Self.run(["image", "test", String(hash.prefix(12))], state: state)
        #expect(tested.code == 0, "\(tested.streams.standardError)")
        #expect(tested.streams.standardOutput.contains("marked image \(hash.prefix(8))… for a test boot"))
        #expect(tested.streams.outputLines.contains { $0.hasPrefix("slot 1  1.2.3  \(hash)  pending") })
        slots = try await Self.slots(state)
        #expect(slots[1]?["pending"] == .bool(true) && slots[1]?["permanent"] == .bool(false))

        let reset = await Self.run(["reset"], state: state)
        #expect(reset.code == 0, "\(reset.streams.standardError)")
        #expect(reset.streams.standardOutput == "reset sim:zephyr-sensor\n")
        slots = try await Self.slots(state)
        #expect(slots[0]?["hash"] == .string(hash))
        #expect(slots[0]?["active"] == .bool(true) && slots[0]?["confirmed"] == .bool(false))
        #expect(slots[1]?["hash"] == .string(Self.factoryHash))

        let confirmed = await Self.run(["image", "confirm"], state: state)
        #expect(confirmed.code == 0, "\(confirmed.streams.standardError)")
        #expect(confirmed.streams.standardOutput.hasPrefix("confirmed the running image\n"))
        _ = await Self.run(["reset"], state: state)
        slots = try await Self.slots(state)
        #expect(slots[0]?["hash"] == .string(hash) && slots[0]?["confirmed"] == .bool(true))
    }

    @Test("a test boot that is not confirmed is reverted at the next reset")
    func unconfirmedTestBootReverts() async throws {
        let state = try await Self.uploaded()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let hash = try Self.fixtureHash()
        #expect(await Self.run(["image", "test", hash], state: state).code == 0)
        #expect(await Self.run(["reset"], state: state).code == 0)
        #expect(try await Self.slots(state)[0]?["hash"] == .string(hash))
        #expect(await Self.run(["reset", "--json"], state: state).streams.standardOutput.contains(#""reset":true"#))
        let slots = try await Self.slots(state)
        #expect(slots[0]?["hash"] == .string(Self.factoryHash) && slots[0]?["confirmed"] == .bool(true))
        #expect(slots[1]?["hash"] == .string(hash) && slots[1]?["pending"] == .bool(false))
    }

    @Test("confirm HASH of slot 1 swaps it in for good; erase clears slot 1")
    func permanentConfirmAndErase() async throws {
        let state = try await Self.uploaded()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let hash = try Self.fixtureHash()
        let confirmed = await Self.run(["image", "confirm", hash, "--json"], state: state)
        #expect(confirmed.code == 0, "\(confirmed.streams.standardError)")
        let marked = try Self.slots(json: confirmed.streams.standardOutput)
        #expect(marked[1]?["pending"] == .bool(true) && marked[1]?["permanent"] == .bool(true))
        // Erasing a pending slot is refused, as MCUboot's img_mgmt does.
        let refused = await Self.run(["image", "erase"], state: state)
        #expect(refused.code == 1)
        #expect(refused.streams.standardError == "ota: error: device rejected image erase of slot 1: image management rc 9 (no free slot)\n")
        _ = await Self.run(["reset"], state: state)
        var slots = try await Self.slots(state)
        #expect(slots[0]?["hash"] == .string(hash) && slots[0]?["confirmed"] == .bool(true))
        let erased = await Self.run(["image", "erase", "--slot", "1"], state: state)
        #expect(erased.code == 0, "\(erased.streams.standardError)")
        #expect(erased.streams.standardOutput == "erased slot 1 of sim:zephyr-sensor\n")
        slots = try await Self.slots(state)
        #expect(slots[1] == nil)
    }

    @Test("bad input: one line on standard error, the right exit code, the device unchanged")
    func badInput() async throws {
        let state = try await Self.uploaded()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let hash = try Self.fixtureHash()
        let cases: [([String], Int32, String)] = [
            (["image", "test", "xyz"], 2, "ota: error: 'xyz' is not an image hash: expected 64 hex digits"),
            (["image", "test", "abc"], 2, "ota: error: 'abc' is not an image hash"),
            (["image", "test", "abcd"], 2, "ota: error: hash prefix 'abcd' is too short: give at least 8 hex digits"),
            (["image", "test", String(repeating: "a", count: 66)], 2, "is not an image hash"),
            (["image", "test"], 2, "ota: error: 'ota image test' needs the HASH of the image to test (see 'ota image --help')"),
            (["image", "list", hash], 2, "ota: error: 'ota image list' takes no HASH"),
            (["image", "list", "--slot", "1"], 2, "ota: error: --slot applies to 'ota image erase'"),
            (["image", "erase", "--slot", "99"], 2, "ota: error: --slot '99' is out of range"),
            (["image", "flash"], 2, "ota: error: unknown action 'flash' (expected list, test, confirm, erase)"),
            (
                ["image", "test", String(repeating: "ab", count: 32)], 1,
                "ota: error: device rejected test of image abababababababab…: image management rc 8 (hash not found)"
            ),
            (["image", "test", "0011223344556677"], 1, "ota: error: no image on the device has a hash starting 0011223344556677 (it lists: slot 0: 1.0.0"),
            (["image", "list", "--device", "sim:bolt-lock"], 4, "ota: error: sim:bolt-lock runs framed, not MCUmgr: it has no SMP service"),
            (["reset", "--device", "sim:bolt-lock"], 4, "ota: error: sim:bolt-lock runs framed, not MCUmgr"),
            (["image", "list", "--param", "window=0"], 2, "ota: error: "),
        ]
        for (arguments, expected, message) in cases {
            let (code, streams) = await Self.run(arguments, state: state)
            #expect(code == expected, "\(arguments): \(streams.standardError)")
            #expect(streams.standardError.hasPrefix(message) || streams.standardError.contains(message), "\(arguments): \(streams.standardError)")
            #expect(streams.standardError.split(separator: "\n").count == 1, "\(arguments): \(streams.standardError)")
            #expect(streams.standardOutput.isEmpty, "\(arguments): \(streams.standardOutput)")
        }
        // None of it changed the device.
        let slots = try await Self.slots(state)
        #expect(slots[1]?["hash"] == .string(hash) && slots[1]?["pending"] == .bool(false))
    }

    @Test("confirming slot 1 while a test of it is pending is refused with MCUboot's code 28")
    func confirmWhilePending() async throws {
        let state = try await Self.uploaded()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let hash = try Self.fixtureHash()
        #expect(await Self.run(["image", "test", hash], state: state).code == 0)
        let (code, streams) = await Self.run(["image", "confirm", hash], state: state)
        #expect(code == 1)
        #expect(streams.standardError.contains("image management rc 28 (image already pending)"), "\(streams.standardError)")
    }

    @Test("a bare profile runs MCUmgr for these commands; the default device is sim:zephyr-sensor")
    func bareProfileAndDefault() async throws {
        let (code, streams) = await runTool(["image", "list", "--device", "sim:nrf52840"])
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.outputLines == ["slot 0  1.0.0  \(Self.factoryHash)  active confirmed bootable"])
        let (defaultCode, defaultStreams) = await runTool(["image", "list"])
        #expect(defaultCode == 0)
        #expect(defaultStreams.standardOutput == streams.standardOutput)
    }

    // MARK: - Over UDP

    static func udpServer() throws -> (UDPDeviceServer, MCUmgrDeviceModel) {
        let model = MCUmgrDeviceModel()
        let server = try UDPDeviceServer(
            model: model, characteristic: MCUmgrGATTProfile().smp, flash: NORFlash(capacity: 256 * 1024), host: "127.0.0.1", port: 0,
            packetLength: SMPHeader.messageLength(of:))
        server.start()
        return (server, model)
    }

    @Test("over udp: ota update picks mcumgr by itself, the image lands byte-identically, then image test and reset")
    func overUDP() async throws {
        let (server, model) = try Self.udpServer()
        defer { server.stop() }
        let device = "udp:127.0.0.1:\(server.port)"
        let bytes = try Data(contentsOf: Self.fixture)
        let hash = try Self.fixtureHash()
        let updated = await runTool(["update", Self.fixture.path, "--device", device, "--param", "mode=upload"])
        #expect(updated.code == 0, "\(updated.streams.standardError)")
        #expect(updated.streams.standardOutput.contains("over mcumgr"))
        #expect(server.flash.read(0..<bytes.count) == bytes)

        let listed = await runTool(["image", "list", "--device", device])
        #expect(listed.code == 0, "\(listed.streams.standardError)")
        #expect(listed.streams.outputLines == ["slot 0  1.0.0  \(Self.factoryHash)  active confirmed bootable", "slot 1  1.2.3  \(hash)  bootable"])
        #expect(await runTool(["image", "test", hash, "--device", device]).code == 0)
        let reset = await runTool(["reset", "--device", device, "--param", "reset-wait-ms=600"])
        #expect(reset.code == 0, "\(reset.streams.standardError)")
        #expect(server.statistics.reboots == 1)
        #expect(model.isTestBoot)
        #expect(Hex.bytes(try #require(model.imageState.slot(0)).hash) == hash)
    }

    @Test("over udp: nothing listening is a one-line link error that says what to check")
    func nothingListeningOverUDP() async throws {
        let (probe, _) = try Self.udpServer()
        let port = probe.port
        probe.stop()
        try await Task.sleep(for: .milliseconds(300))
        let (code, streams) = await runTool(["image", "list", "--device", "udp:127.0.0.1:\(port)"])
        #expect(code == 5)
        #expect(streams.standardError.hasSuffix("(is an SMP server listening at udp:127.0.0.1:\(port)?)\n"), "\(streams.standardError)")
        let malformed = await runTool(["image", "list", "--device", "udp:[::1"])
        #expect(malformed.code == 2)
        #expect(malformed.streams.standardError.contains("closing ']'"), "\(malformed.streams.standardError)")
    }

    // MARK: - Over a serial line

    @Test("over serial: ota update and ota image list through a pseudo-terminal, Zephyr's console framing")
    func overSerial() async throws {
        let pty = try PseudoTerminal.open()
        let model = MCUmgrDeviceModel(settings: .init(bufferSize: 512, bufferCount: 2))
        let server = SerialDeviceServer(
            model: model, characteristic: MCUmgrGATTProfile().smp, flash: NORFlash(capacity: 256 * 1024), descriptor: pty.controller,
            framing: MCUmgrSerial.framing)
        server.start()
        defer { server.stop() }
        let device = "serial:\(pty.path)"
        let bytes = try Data(contentsOf: Self.fixture)
        let updated = await runTool(["update", Self.fixture.path, "--device", device, "--param", "mode=upload"])
        #expect(updated.code == 0, "\(updated.streams.standardError)")
        #expect(server.flash.read(0..<bytes.count) == bytes)
        let listed = await runTool(["image", "list", "--device", device])
        #expect(listed.code == 0, "\(listed.streams.standardError)")
        #expect(listed.streams.outputLines.last == "slot 1  1.2.3  \(try Self.fixtureHash())  bootable")
        let missing = await runTool(["image", "list", "--device", "serial:/dev/nonexistent-ota-port"])
        #expect(missing.code == 4)
        #expect(missing.streams.standardError.contains("cannot open /dev/nonexistent-ota-port"), "\(missing.streams.standardError)")
    }
}
