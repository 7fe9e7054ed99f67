import Foundation
import OTACore
import OTATransportSimulator
import OTATrust

/// The `--sim-*` options shared by commands that talk to simulated devices.
struct SimulatorOptions: Sendable {
    /// Virtual seconds per wall second, or `nil` for as fast as possible.
    var pace: Double?
    /// Seed of the simulation.
    var seed: UInt64 = 1
    /// Data-byte thresholds at which the link drops (absolute bytes, or fractions of the image).
    var disconnects: [Threshold] = []
    /// Data-byte thresholds at which the device reboots.
    var reboots: [Threshold] = []
    /// Where simulated devices keep their flash between runs, if anywhere.
    var stateDirectory: URL?
    /// The battery level the device starts at (`--sim-battery`); `.some(nil)` removes its
    /// Battery service; `nil` keeps the profile's.
    var battery: Int??
    /// The hardware revision its Device Information reports (`--sim-hardware-rev`); `.some(nil)`
    /// removes the characteristic; `nil` keeps the profile's.
    var hardwareRevision: String??
    /// The public key the simulated device is built with (`--sim-key`): its bootloader verifies
    /// signatures with it and refuses what a real one would; `nil` checks none.
    var deviceKey: TrustedKey?

    /// A point in the transfer: a byte count or a percentage of the image.
    enum Threshold: Sendable, Equatable {
        case bytes(Int)
        case percent(Double)

        func bytes(of size: Int) -> Int {
            switch self {
            case .bytes(let count): count
            case .percent(let percent): max(1, Int(Double(size) * percent / 100))
            }
        }
    }

    static let specOptions: [CommandSpec.Option] = [
        .init(name: "--seed", valueName: "N", help: "simulated devices: seed for the link's random losses; default 1"),
        .init(
            name: "--sim-speed", valueName: "FACTOR",
            help: "simulated devices: virtual seconds per real second, or 'max'; default 1 on a terminal, max otherwise"),
        .init(
            name: "--sim-disconnect-at", valueName: "BYTES|N%", help: "simulated devices: drop the link once this much data arrived; repeatable",
            repeatable: true),
        .init(
            name: "--sim-reboot-at", valueName: "BYTES|N%", help: "simulated devices: reboot the device once this much data arrived; repeatable",
            repeatable: true),
        .init(name: "--sim-state", valueName: "DIR", help: "simulated devices: keep each device in DIR as it acknowledges, between runs"),
        .init(
            name: "--sim-battery", valueName: "PERCENT",
            help: "simulated devices: battery level at the start, 0...100, or 'none' for no Battery service; default the profile's"),
        .init(
            name: "--sim-hardware-rev", valueName: "REV", help: "simulated devices: hardware revision in Device Information, or 'none'; default the profile's"),
        .init(
            name: "--sim-key", valueName: "FILE",
            help: "simulated devices: the public key (PEM) their bootloader verifies signatures with, refusing what a real one would; default none"),
    ]

    static func parse(_ arguments: ParsedArguments, command: String, interactive: Bool) throws(UsageError) -> SimulatorOptions {
        try parse(arguments.values, command: command, interactive: interactive)
    }

    /// Parses the options from their values by name (`"--seed": ["7"]`).
    static func parse(_ values: [String: [String]], command: String?, interactive: Bool) throws(UsageError) -> SimulatorOptions {
        let arguments = ParsedArguments(values: values)
        var options = SimulatorOptions()
        switch arguments.value("--sim-speed") {
        case nil: options.pace = interactive ? 1 : nil
        case "max": options.pace = nil
        case let text?:
            guard let factor = Double(text), factor > 0, factor.isFinite else {
                throw UsageError("--sim-speed '\(text)' is not a positive number or 'max'", command: command)
            }
            options.pace = factor
        }
        if let text = arguments.value("--seed") {
            options.seed = try seed(text, command: command)
        }
        options.disconnects = try (arguments.values["--sim-disconnect-at"] ?? []).map { text throws(UsageError) in
            try threshold(text, option: "--sim-disconnect-at", command: command)
        }
        options.reboots = try (arguments.values["--sim-reboot-at"] ?? []).map { text throws(UsageError) in
            try threshold(text, option: "--sim-reboot-at", command: command)
        }
        switch arguments.value("--sim-battery") {
        case nil: break
        case "none": options.battery = .some(nil)
        case let text?:
            guard let level = Int(text), (0...100).contains(level) else {
                throw UsageError("--sim-battery '\(text)' is not a percentage in 0...100 or 'none'", command: command)
            }
            options.battery = level
        }
        if let revision = arguments.value("--sim-hardware-rev") {
            options.hardwareRevision = .some(revision == "none" ? nil : revision)
        }
        if let path = arguments.value("--sim-key") {
            do {
                options.deviceKey = try TrustedKey(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw UsageError("--sim-key: \(error.message)", command: command)
            }
        }
        if let directory = arguments.value("--sim-state") {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), !isDirectory.boolValue {
                throw UsageError(
                    "--sim-state '\(directory)' is a file; give a directory (created if missing) to keep the simulated devices in", command: command)
            }
            options.stateDirectory = URL(fileURLWithPath: directory, isDirectory: true)
        }
        return options
    }

    /// `--seed N`: 0 or more. "--seed 'x' is not an integer, expected 0 or more", "--seed '-1' is
    /// out of range, expected 0 or more", as other integer options word it.
    static func seed(_ text: String, command: String?) throws(UsageError) -> UInt64 {
        if let seed = UInt64(text) { return seed }
        let problem = Int(text) == nil ? "is not an integer" : "is out of range"
        throw UsageError("--seed '\(text)' \(problem), expected 0 or more", command: command)
    }

    private static func threshold(_ text: String, option: String, command: String?) throws(UsageError) -> Threshold {
        if text.hasSuffix("%"), let percent = Double(text.dropLast()), percent > 0, percent < 100 {
            return .percent(percent)
        }
        if let bytes = Int(text), bytes > 0 { return .bytes(bytes) }
        throw UsageError("\(option) '\(text)' is not a byte count or a percentage between 0% and 100%", command: command)
    }

    /// Makes the simulated device, restoring its flash from the state directory when there is one.
    func makeDevice(
        profile: DeviceProfile, model: any DeviceModel, simulation: Simulation, imageSize: Int, address: String? = nil
    ) throws(OTAError) -> SimulatedDevice {
        var profile = profile
        if let battery { profile.standardServices.batteryLevel = battery }
        if let hardwareRevision { profile.standardServices.hardwareRevision = hardwareRevision }
        let device = SimulatedDevice(profile: profile, model: model, simulation: simulation, address: address)
        var faults = LinkFaults()
        faults.disconnectAtBytes = disconnects.map { $0.bytes(of: imageSize) }.sorted()
        faults.rebootAtBytes = reboots.map { $0.bytes(of: imageSize) }.sorted()
        device.faults = faults
        try files(for: profile)?.restore(device)
        return device
    }

    /// Keeps the device in the state directory as it goes, if there is one
    /// (``SimulatedDeviceFiles/keepAsItGoes(_:)``); end it before ``save(_:)``.
    func keepAsItGoes(_ device: SimulatedDevice) throws(OTAError) -> KeptDevice? {
        try files(for: device.profile)?.keepAsItGoes(device)
    }

    /// Saves the device's flash to the state directory, if there is one.
    func save(_ device: SimulatedDevice) throws(OTAError) {
        try files(for: device.profile)?.save(device)
    }

    /// `PROFILE.flash`, `.state`, `.journal` and `.received` in the state directory, if there is one.
    private func files(for profile: DeviceProfile) -> SimulatedDeviceFiles? {
        stateDirectory.map { directory in
            SimulatedDeviceFiles(
                flash: directory.appendingPathComponent("\(profile.name).flash"), state: directory.appendingPathComponent("\(profile.name).state"),
                code: .invalidParameter)
        }
    }
}
