import Foundation
import OTACore
import OTAProtocolMCUmgr

/// `ota image ACTION`: MCUmgr image management on its own — list the slots, test or confirm an
/// image, erase slot 1 — on any transport that carries SMP (`sim:`, `udp:`, Bluetooth).
enum ImageCommand: Command {
    /// The actions, as `ota image ACTION` takes them.
    static let actions = ["list", "test", "confirm", "erase"]

    static let spec = CommandSpec(
        name: "image",
        summary: "MCUmgr devices: list the image slots, mark an image for a test boot, confirm one, erase slot 1.",
        options: MCUmgrCommands.targetOptions + [
            .init(name: "--slot", valueName: "N", help: "erase: the slot to erase, 0...15; default the device's (slot 1)")
        ],
        positionals: [
            .init(name: "ACTION", help: "list, test, confirm or erase"),
            .init(
                name: "HASH", help: "test, confirm: the image's hash (64 hex digits, or a prefix of one the device lists); confirm without: the running image",
                isOptional: true),
        ],
        discussion: """
            'test HASH' marks the image in slot 1 for one test boot: after 'ota reset' MCUboot runs it,
            and reverts it at the next reset unless 'ota image confirm' confirms it. 'confirm HASH'
            of the image in slot 1 makes the swap permanent at the next reset. Hashes are MCUboot's
            (the SHA-256 TLV, as 'ota inspect' and 'ota image list' show them).

            exit codes: 0 done, 1 the device refused (unknown hash, image pending), 2 usage (a
            malformed hash), 4 device unavailable or without SMP, 5 link lost or timed out
            """
    )

    /// The action, hash and slot the arguments give, checked before anything connects.
    static func check(_ arguments: ParsedArguments) throws(UsageError) -> (action: String, hash: HashArgument?, slot: Int?) {
        let action = arguments.positionals[0]
        let hashText = arguments.positionals.count > 1 ? arguments.positionals[1] : nil
        guard actions.contains(action) else {
            throw UsageError("unknown action '\(action)' (expected \(actions.joined(separator: ", ")))", command: "image")
        }
        switch (action, hashText) {
        case ("test", nil): throw UsageError("'ota image test' needs the HASH of the image to test", command: "image")
        case ("list", _?), ("erase", _?): throw UsageError("'ota image \(action)' takes no HASH", command: "image")
        default: break
        }
        let hash = try hashText.map { text throws(UsageError) in try HashArgument(text) }
        let slot = try arguments.value("--slot").map { text throws(UsageError) in try UpdatePlan.integer(text, option: "--slot", in: 0...15, command: "image") }
        if slot != nil, action != "erase" { throw UsageError("--slot applies to 'ota image erase'", command: "image") }
        return (action, hash, slot)
    }

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode {
        let json = arguments.flag("--json")
        let action: String
        let hash: HashArgument?
        let slot: Int?
        do {
            (action, hash, slot) = try check(arguments)
        } catch {
            return UpdateCommand.fail(error, streams: streams)
        }
        return await MCUmgrCommands.withManager(arguments, command: "image", streams: streams, environment: environment) {
            (manager, context, device) throws(OTAError) -> ExitCode in
            switch action {
            case "list":
                let state = try await manager.list(context: context)
                render(state, device: device, json: json, streams: streams)
            case "test":
                let full = try await hash!.resolve(manager: manager, context: context)
                let state = try await manager.test(hash: full, context: context)
                if !json { streams.out("marked image \(Hex.bytes(full.prefix(4)))… for a test boot at the next reset ('ota reset')\n") }
                render(state, device: device, json: json, streams: streams)
            case "confirm":
                let full = try await hash?.resolve(manager: manager, context: context)
                let state = try await manager.confirm(hash: full, context: context)
                if !json {
                    streams.out("confirmed \(full.map { "image \(Hex.bytes($0.prefix(4)))…" } ?? "the running image")\n")
                }
                render(state, device: device, json: json, streams: streams)
            default:
                try await manager.erase(slot: slot, context: context)
                if json {
                    JSONRenderer(streams: streams).emit(["device": .string(device), "erased": .number(Double(slot ?? 1))])
                } else {
                    streams.out("erased slot \(slot ?? 1) of \(device)\n")
                }
            }
            return .success
        }
    }

    /// The slots: one line each, or one JSON object.
    static func render(_ state: ImageStateResponse, device: String, json: Bool, streams: any OutputStreams) {
        if json {
            let images: [JSONValue] = state.images.map { slot in
                .object([
                    "image": .number(Double(slot.image)), "slot": .number(Double(slot.slot)), "version": .string(slot.version),
                    "hash": .string(Hex.bytes(slot.hash)), "active": .bool(slot.active), "confirmed": .bool(slot.confirmed),
                    "pending": .bool(slot.pending), "permanent": .bool(slot.permanent), "bootable": .bool(slot.bootable),
                ])
            }
            JSONRenderer(streams: streams).emit(["device": .string(device), "images": .array(images)])
            return
        }
        guard !state.images.isEmpty else {
            streams.out("\(device) lists no images\n")
            return
        }
        for slot in state.images {
            let flags = [
                ("active", slot.active), ("confirmed", slot.confirmed), ("pending", slot.pending), ("permanent", slot.permanent),
                ("bootable", slot.bootable),
            ].filter(\.1).map(\.0)
            let image = state.images.contains { $0.image != 0 } ? "image \(slot.image) " : ""
            streams.out(
                "\(image)slot \(slot.slot)  \(MessageText.name(slot.version))  \(Hex.bytes(slot.hash))  \(flags.isEmpty ? "-" : flags.joined(separator: " "))\n"
            )
        }
    }
}

/// A HASH argument: MCUboot's 32-byte hash in hex, or a prefix of one, to be matched against the
/// slots the device lists.
struct HashArgument: Sendable, Equatable {
    /// The bytes given.
    var bytes: Data
    /// Whether they are a prefix (fewer than 32 bytes).
    var isPrefix: Bool { bytes.count < 32 }

    init(_ text: String) throws(UsageError) {
        // ASCII hex digits counted as UTF-8 bytes: `Character.isHexDigit` also accepts the
        // fullwidth forms (`１２`), which `UInt8(_:radix:)` does not read (decision 0056).
        let utf8 = Array(text.utf8)
        let hex = utf8.count >= 2 && utf8[0] == UInt8(ascii: "0") && (utf8[1] | 0x20) == UInt8(ascii: "x") ? Array(utf8.dropFirst(2)) : utf8
        guard !hex.isEmpty, hex.count % 2 == 0, hex.count <= 64, let bytes = Self.bytes(hex) else {
            throw UsageError(
                "'\(text)' is not an image hash: expected 64 hex digits (or an even number of them, a prefix), as 'ota image list' shows",
                command: "image")
        }
        guard hex.count >= 8 else {
            throw UsageError("hash prefix '\(text)' is too short: give at least 8 hex digits", command: "image")
        }
        self.bytes = bytes
    }

    /// The bytes that ASCII hex digits (an even number) spell, or nil at any other byte.
    private static func bytes(_ hex: [UInt8]) -> Data? {
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes = Data(capacity: hex.count / 2)
        var index = 0
        while index + 1 < hex.count {
            guard let high = value(hex[index]), let low = value(hex[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// The whole hash: as given, or the one slot whose hash starts with the prefix.
    func resolve(manager: MCUmgrImageManager, context: UpdateContext) async throws(OTAError) -> Data {
        guard isPrefix else { return bytes }
        let state = try await manager.list(context: context)
        let matches = Set(state.images.map(\.hash).filter { $0.starts(with: bytes) })
        guard let hash = matches.first, matches.count == 1 else {
            throw OTAError(
                matches.isEmpty ? .deviceRejected : .invalidParameter,
                matches.isEmpty
                    ? "no image on the device has a hash starting \(Hex.bytes(bytes)) (it lists: \(state))"
                    : "hash prefix \(Hex.bytes(bytes)) matches \(matches.count) images; give more digits"
            )
        }
        return hash
    }
}

/// What `ota image` and `ota reset` share: their options, and reaching the device's SMP
/// characteristic through whichever transport its address names.
enum MCUmgrCommands {
    /// `--device`, `--adapter`, `--param`, `--json`, and the simulator's state and seed.
    static let targetOptions: [CommandSpec.Option] =
        [
            .init(
                name: "--device", valueName: "ADDRESS",
                help:
                    "sim:NAME, udp:HOST[:PORT] (SMP over UDP, port 1337 by default), serial:PATH[@BAUD] (SMP on a serial line) or AA:BB:CC:DD:EE:FF (BlueZ); default sim:zephyr-sensor"
            ),
            .init(name: "--adapter", valueName: "NAME", help: "Bluetooth adapter for a real device, e.g. hci0; default the first powered one"),
            .init(
                name: "--param", valueName: "KEY=VALUE", help: "an mcumgr parameter, repeatable (reset-wait-ms, erase-timeout-ms; see 'ota protocols')",
                repeatable: true),
            .init(name: "--json", help: "print the result as one JSON object on standard output"),
        ] + SimulatorOptions.specOptions.filter { $0.name == "--sim-state" || $0.name == "--seed" }

    /// The device these commands use when `--device` is not given: the simulated Zephyr device.
    static let defaultDevice = "sim:zephyr-sensor"

    /// Resolves the device, opens a session, connects with the MCUmgr client's requirements and
    /// runs `body` with a manager; every failure is one line on standard error and its exit code.
    static func withManager(
        _ arguments: ParsedArguments, command: String, streams: any OutputStreams, environment: ToolEnvironment,
        _ body: @escaping @Sendable (MCUmgrImageManager, UpdateContext, String) async throws(OTAError) -> ExitCode
    ) async -> ExitCode {
        let device: any TransportDevice
        let client: MCUmgrClient
        do {
            device = try await environment.device(
                arguments.value("--device") ?? defaultDevice, arguments: arguments, interactive: false, command: command)
            if let running = device.firmwareProtocol, running != MCUmgrProtocol.name {
                throw OTAError(
                    .missingCharacteristic,
                    "\(device.address) runs \(running), not MCUmgr: it has no SMP service; 'ota \(command)' talks to MCUmgr (Zephyr, nRF Connect SDK) devices")
            }
            do {
                client = MCUmgrClient(configuration: try MCUmgrConfiguration(parameters: try UpdatePlan.parameters(arguments, command: command)))
            } catch let error as OTAError {
                throw UsageError(error.message, command: command)
            }
        } catch {
            return UpdateCommand.fail(error, streams: streams)
        }
        do throws(OTAError) {
            return try await device.withSession(SessionRequest(protocolName: MCUmgrProtocol.name)) { (session) throws(OTAError) -> ExitCode in
                let engine = UpdateEngine(clock: session.clock)
                let connector = session.connector
                return try await session.run { () async throws(OTAError) -> ExitCode in
                    do throws(OTAError) {
                        return try await engine.withConnection(using: client, connector: connector) { (context) throws(OTAError) -> ExitCode in
                            try await body(MCUmgrImageManager(configuration: client.configuration), context, device.address)
                        }
                    } catch {
                        guard error.code == .missingCharacteristic else { throw error }
                        throw OTAError(
                            .missingCharacteristic,
                            "\(device.address) has no SMP characteristic (\(client.configuration.profile.smp.characteristic)): it does not run MCUmgr; 'ota \(command)' talks to MCUmgr (Zephyr, nRF Connect SDK) devices"
                        )
                    }
                }
            }
        } catch {
            var message = error.message
            if error.code == .disconnected, device.address.hasPrefix("udp:") {
                message += " (is an SMP server listening at \(device.address)?)"
            }
            streams.err("ota: error: \(message)\n")
            return ExitCode.forError(error)
        }
    }
}

/// `ota reset`: restart an MCUmgr device (MCUboot then swaps in an image marked with
/// `ota image test` or `ota image confirm`).
enum ResetCommand: Command {
    static let spec = CommandSpec(
        name: "reset",
        summary: "MCUmgr devices: restart the device, so that MCUboot swaps in an image marked for test or confirmed.",
        options: MCUmgrCommands.targetOptions,
        discussion: """
            Sends SMP's reset (OS group, command 5), then waits reset-wait-ms (default 1000) so the
            device has restarted when ota exits; 'ota image list' then shows what runs.

            exit codes: 0 reset, 1 the device refused, 4 device unavailable or without SMP, 5 link
            lost or timed out
            """
    )

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode {
        let json = arguments.flag("--json")
        return await MCUmgrCommands.withManager(arguments, command: "reset", streams: streams, environment: environment) {
            (manager, context, device) throws(OTAError) -> ExitCode in
            let answered = try await manager.reset(context: context)
            if json {
                JSONRenderer(streams: streams).emit(["device": .string(device), "reset": .bool(true), "answered": .bool(answered)])
            } else {
                streams.out("reset \(device)\(answered ? "" : " (the link dropped before its answer)")\n")
            }
            return .success
        }
    }
}
