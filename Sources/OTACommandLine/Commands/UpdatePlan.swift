import Foundation
import OTACore
import OTATrust

/// Everything `ota update` decides before connecting: the firmware (raw image or verified
/// package), the device, the protocol and why, its parameters and the engine's settings.
struct UpdatePlan: Sendable {
    /// The device, through the transport that reaches it.
    var device: any TransportDevice
    var descriptor: ProtocolDescriptor
    var client: any UpdateProtocol
    var selection: ProtocolSelection
    /// The images to send, in order: one for most protocols, several for multi-part packages
    /// (Nordic SoftDevice + bootloader, then application).
    var images: [FirmwareImage]
    var package: FirmwarePackage?
    var configuration: UpdateConfiguration
    var mtu: Int
    /// What the signature check found (empty when no key is trusted for the update).
    var signatureNotes: [String] = []
    /// The pairing the device's family asks for (catalog `pairing`), when the command line chose
    /// none (`--pairing`, `--passkey`).
    var pairing: LinkPairing?

    /// Builds the plan from the command line; every refusal is a one-line error.
    ///
    /// - Parameter interactive: whether a person watches the output (the simulator paces itself).
    /// - Parameter askPerson: asks the person at the terminal (the passkey a device shows while
    ///   pairing); `nil` when nobody can answer.
    static func make(
        _ arguments: ParsedArguments, environment: ToolEnvironment, command: String, interactive: Bool = false,
        askPerson: (@Sendable (String) async -> String?)? = nil
    ) async throws -> UpdatePlan {
        let registry = environment.registry
        let explicitParameters = try parameters(arguments, command: command)
        let explicitProtocol = arguments.value("--protocol")
        if let explicitProtocol {
            do { _ = try registry.descriptor(named: explicitProtocol) } catch { throw UsageError(error.message, command: "protocols") }
        }
        // A missing file is the first thing to say: no protocol or device question matters without it.
        let firmwarePath = URL(fileURLWithPath: arguments.positionals[0]).path
        guard FileManager.default.fileExists(atPath: firmwarePath) else {
            throw OTAError(.invalidImage, "\(MessageText.name(firmwarePath)): no such file")
        }
        let device = try await environment.device(
            arguments.value("--device") ?? environment.defaultDevice, arguments: arguments, interactive: interactive, command: command,
            askPerson: askPerson
        )
        let catalog = try environment.catalog(adding: arguments.values["--catalog"] ?? [])

        // The firmware: a verified package or a raw image.
        let input = URL(fileURLWithPath: arguments.positionals[0])
        let package = FirmwarePackage.isPackage(input) ? try FirmwarePackage.open(input) : nil
        if let package { try check(package, registry: registry) }

        // What the device advertises decides which family matches.
        let advertisement = try await device.advertisement(chosenProtocol: explicitProtocol ?? package?.protocolName)
        let family = try advertisement.flatMap { advertisement throws(OTAError) in try catalog.family(for: advertisement, device: device.address) }
        let selection = try ProtocolSelection.decide(
            explicitProtocol: explicitProtocol, explicitParameters: explicitParameters, package: package, family: family, device: device.address
        )
        try package?.checkCompatibility(with: family, device: device.address)
        let descriptor: ProtocolDescriptor
        let client: any UpdateProtocol
        do {
            descriptor = try registry.descriptor(named: selection.protocolName)
            client = try descriptor.makeClient(selection.parameters)
        } catch {
            throw UsageError(error.message, command: "protocols")
        }

        let images = try loadImages(input: input, package: package, descriptor: descriptor, registry: registry)
        for image in images { try client.check(image) }
        let signatureNotes = try verifySignatures(images, arguments: arguments, descriptor: descriptor, family: family)
        try device.check(images)
        var configuration = family?.configuration ?? UpdateConfiguration()
        if let attempts = arguments.value("--resume-attempts") {
            configuration.resume.maximumAttempts = try integer(attempts, option: "--resume-attempts", in: 0...100, command: command)
        }
        if let maxChunk = arguments.value("--max-chunk") {
            configuration.maximumChunkSize = try integer(maxChunk, option: "--max-chunk", in: 1...512, command: command)
        }
        configuration.preflight = try preflightPolicy(
            arguments, family: family, package: package, descriptor: descriptor, client: client, images: images, command: command
        )
        let mtu =
            try arguments.value("--mtu").map { text throws(UsageError) in try integer(text, option: "--mtu", in: 23...517, command: command) }
            ?? family?.preferredMTU ?? 517
        let pairingChosen = arguments.value("--pairing") != nil || arguments.value("--passkey") != nil
        return UpdatePlan(
            device: device, descriptor: descriptor, client: client, selection: selection, images: images, package: package,
            configuration: configuration, mtu: mtu, signatureNotes: signatureNotes, pairing: pairingChosen ? nil : family?.pairing
        )
    }

    /// Checks the images' signatures against the keys trusted for this update (`--key`, the
    /// family's `keys`), before anything connects.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` for an unsigned or wrongly signed image, and
    ///   ``OTAError/Code/invalidParameter`` for an unreadable key or a protocol without
    ///   signatures.
    static func verifySignatures(
        _ images: [FirmwareImage], arguments: ParsedArguments, descriptor: ProtocolDescriptor, family: DeviceFamily?
    ) throws(OTAError) -> [String] {
        let files = (arguments.values["--key"] ?? []).map { URL(fileURLWithPath: $0) } + (family?.keyFiles ?? [])
        guard !files.isEmpty else { return [] }
        guard let verification = descriptor.signatureVerification else {
            throw OTAError(
                .invalidParameter,
                "\(descriptor.name) images carry no signature to check against \(files.map(\.lastPathComponent).joined(separator: ", ")); drop the key (--key or the family's keys)"
            )
        }
        var keys: [TrustedKey] = []
        for file in files { keys.append(try TrustedKey(contentsOf: file)) }
        return try verification.verify(images, trusting: keys)
    }

    /// What the preflight checks before the first write: `--min-battery` (else the family's
    /// `minBattery`), the package's `hardware` list and what the container's images declare
    /// (Nordic's `hw_version`), the version installed against the device's (`--allow-downgrade`),
    /// and `--force`.
    static func preflightPolicy(
        _ arguments: ParsedArguments, family: DeviceFamily?, package: FirmwarePackage?, descriptor: ProtocolDescriptor,
        client: any UpdateProtocol, images: [FirmwareImage], command: String
    ) throws(UsageError) -> PreflightPolicy {
        var policy = PreflightPolicy()
        if let text = arguments.value("--min-battery") {
            policy.minimumBattery = .init(percent: try integer(text, option: "--min-battery", in: 0...100, command: command), source: "--min-battery")
        } else if let family, let percent = family.minimumBattery {
            policy.minimumBattery = .init(percent: percent, source: "catalog family '\(family.name)'")
        }
        if let declared = package?.hardwareCompatibility(checkedByFamily: family?.hardware != nil) {
            policy.hardware.append(declared)
        }
        if let declaring = descriptor.containerFormat as? any HardwareCompatibilityDeclaring {
            policy.hardware += images.compactMap { declaring.hardwareCompatibility(of: $0) }
        }
        policy.force = arguments.flag("--force")
        let declaring = [descriptor.containerFormat as? any FirmwareVersionDeclaring, client as? any FirmwareVersionDeclaring].compactMap { $0 }
        let declared: (String, String)? =
            package?.version.map { ($0, "the package manifest") }
            ?? images.first.flatMap { image in declaring.lazy.compactMap { $0.declaredVersion(of: image) }.first.map { ($0, "\(image.name)") } }
        if let (text, source) = declared, let version = FirmwareVersion(text) {
            policy.firmwareVersion = VersionRequirement(version: version, source: source, allowsDowngrade: arguments.flag("--allow-downgrade"))
        }
        return policy
    }

    /// The engine's settings for part `index` of the images: after the first, the preflight
    /// reads and shows but refuses nothing — the checks covered every part before the first
    /// write, and a device half-way through is better off finishing.
    func configuration(forPart index: Int) -> UpdateConfiguration {
        guard index > 0 else { return configuration }
        var later = configuration
        later.preflight.minimumBattery = nil
        later.preflight.hardware = []
        return later
    }

    /// What `ota update` checks of a package before anything else, and `ota inspect` too: its
    /// protocol is one this build knows, and it holds the one image every protocol sends.
    static func check(_ package: FirmwarePackage, registry: ProtocolRegistry) throws(OTAError) {
        if let name = package.protocolName {
            do {
                _ = try registry.descriptor(named: name)
            } catch {
                throw OTAError(.invalidManifest, "\(package.source): protocol: \(error.message)")
            }
        }
        _ = try package.singleImage()
    }

    /// The images to send: the package's (the bytes it verified), the protocol's own container
    /// (a Nordic DFU .zip), or the raw file. A protocol that sends raw images refuses another
    /// protocol's container rather than flash the container's bytes as firmware.
    static func loadImages(
        input: URL, package: FirmwarePackage?, descriptor: ProtocolDescriptor, registry: ProtocolRegistry
    ) throws(OTAError) -> [FirmwareImage] {
        let raw: FirmwareImage
        if let image = try package?.singleImage() {
            if let images = try descriptor.containerFormat?.load(image.bytes, name: image.file) { return images }
            raw = try FirmwareImage(bytes: image.bytes, name: image.url.lastPathComponent)
        } else {
            if let images = try descriptor.containerFormat?.load(input) { return images }
            raw = try FirmwareImage(contentsOf: input)
        }
        if descriptor.containerFormat == nil {
            for other in registry.inRegistrationOrder where other.name != descriptor.name {
                guard let format = other.containerFormat else { continue }
                let recognised: Bool
                // A file is never read whole: the other formats see its first block, enough to
                // recognise a container by its signature (a real one that does not fit is
                // unreadable from there, and so still recognised).
                let probe = raw.isFileBacked ? try raw.prefix(FirmwareImageFile.blockSize) : try raw.allBytes()
                do { recognised = try format.load(probe, name: raw.name) != nil } catch { recognised = true }
                if recognised {
                    throw OTAError(
                        .invalidImage,
                        "\(MessageText.name(raw.name)) is a \(other.name) container, but \(descriptor.name) sends an image as it is: use --protocol \(other.name), or send the image inside"
                    )
                }
            }
        }
        return [raw]
    }

    /// The `--param KEY=VALUE` options as protocol parameters.
    static func parameters(_ arguments: ParsedArguments, command: String) throws(UsageError) -> ProtocolParameters {
        var parameters = ProtocolParameters()
        for pair in arguments.values["--param"] ?? [] {
            guard let (key, value) = ArgumentParser.splitAtEquals(pair), !key.isEmpty else {
                throw UsageError("--param '\(pair)' is not KEY=VALUE", command: command)
            }
            parameters[key] = value
        }
        return parameters
    }

    static func integer(_ text: String, option: String, in range: ClosedRange<Int>, command: String) throws(UsageError) -> Int {
        if let problem = ProtocolParameterSpec.integerProblem(text, in: range) {
            throw UsageError("\(option) \(problem)", command: command)
        }
        return Int(text)!
    }

    /// The decision as one JSON object, for `--dry-run --json`: the same facts as
    /// ``explanation``.
    var jsonPlan: [String: JSONValue] {
        var object: [String: JSONValue] = [
            "event": .string("plan"), "time": .number(0), "device": .string(device.address), "deviceSummary": .string(device.summary),
            "protocol": .string(selection.protocolName), "reasons": .array(selection.reasons.map { .string($0) }),
            "attMTU": .number(Double(mtu)), "resumeAttempts": .number(Double(configuration.resume.maximumAttempts)),
            "images": .array(
                images.map { image in
                    .object(["name": .string(image.name), "size": .number(Double(image.count)), "crc32": .string(Hex.number(image.crc32, digits: 8))])
                }),
        ]
        object["signatures"] = .array(signatureNotes.map { .string($0) })
        if let pairing {
            object["pairing"] = .object([
                "source": .string(pairing.source), "passkey": .bool(pairing.passkey != nil), "removesBond": .bool(pairing.removesBondAfterwards),
            ])
        }
        if let package {
            object["package"] = .object([
                "name": .string(package.name ?? package.source), "version": .string(package.version ?? ""),
                "images": .number(Double(package.images.count)),
            ])
        }
        return object
    }

    /// The decision in words, for `--dry-run`.
    var explanation: [String] {
        var lines = ["would update \(device.summary)"]
        if let package {
            lines.append(
                "firmware: package \(package.name ?? package.source) \(package.version ?? "") — \(package.images.count) image(s) verified (size and SHA-256)")
        }
        for (index, image) in images.enumerated() {
            let part = images.count > 1 ? "part \(index + 1) of \(images.count): " : ""
            lines.append("image: \(part)\(image.name), \(image.count) bytes, CRC-32 \(Hex.number(image.crc32, digits: 8))")
        }
        lines += selection.reasons.map { "because: \($0)" }
        lines.append("protocol: \(selection.protocolName)")
        lines.append("ATT MTU offered: \(mtu); resume attempts: \(configuration.resume.maximumAttempts)")
        if signatureNotes.isEmpty {
            if descriptor.signatureVerification != nil {
                lines.append("signature: not checked (no trusted key: --key FILE, or a family's keys); the device checks it itself")
            }
        } else {
            lines += signatureNotes.map { "signature: \($0)" }
        }
        if let pairing { lines.append("pairing: " + Self.pairingExplanation(pairing)) }
        return lines + preflightExplanation
    }

    /// "before the first write, Passkey Entry with the family's passkey, bond removed afterwards
    /// (catalog family 'acme-lock'); …".
    static func pairingExplanation(_ pairing: LinkPairing) -> String {
        let method =
            pairing.passkey != nil
            ? "Passkey Entry with the family's passkey" : "Just Works, or the passkey the device shows, asked at the terminal"
        return "before the first write, \(method), bond \(pairing.removesBondAfterwards ? "removed afterwards" : "kept") (\(pairing.source)); "
            + "--pairing or --passkey overrides it; a transport that cannot pair (the simulator, UDP, serial) ignores it"
    }

    /// "device 1.0.0 (SMP image list, slot 0) → package 1.2.3 (ecdsa.bin)", and what the
    /// preflight will make of it.
    static func versionVerdict(_ reported: ReportedVersion, _ requirement: VersionRequirement) -> String {
        let line = "device \(reported.text) (\(reported.source)) → package \(requirement.version) (\(requirement.source))"
        guard let running = FirmwareVersion(reported.text) else { return line + ": the device's is not a version, so not compared" }
        if requirement.version < running {
            return line + (requirement.allowsDowngrade ? ": a downgrade, installed (--allow-downgrade)" : ": a downgrade, refused without --allow-downgrade")
        }
        return requirement.version.isSameVersion(as: running) ? line + ": the same version, installed again" : line
    }

    /// The preflight in words, for `--dry-run`: what is read on connecting and what is checked.
    var preflightExplanation: [String] {
        let policy = configuration.preflight
        var lines = [
            "preflight: on connecting, before the first write, reads Battery Level and Device Information (manufacturer, model, hardware and firmware revision) when the device has them"
        ]
        if let minimum = policy.minimumBattery {
            lines.append("preflight: refuses a battery below \(minimum.percent)% (\(minimum.source))")
        } else {
            lines.append("preflight: no battery minimum (--min-battery PERCENT or a family's minBattery sets one)")
        }
        for declaration in policy.hardware {
            lines.append("preflight: the device's hardware revision must match \(declaration.declared)")
        }
        if let requirement = policy.firmwareVersion {
            lines.append(
                "preflight: installs \(requirement.version) (\(requirement.source)); "
                    + (requirement.allowsDowngrade
                        ? "--allow-downgrade: an older version than the device's is installed too"
                        : "refused if the device's firmware revision is newer (--allow-downgrade)"))
            if let reported = device.runningVersion(chosenProtocol: selection.protocolName) {
                lines.append("version: " + Self.versionVerdict(reported, requirement))
            }
        }
        if policy.force {
            lines.append("preflight: --force: a refusal is reported and the update goes on")
        }
        return lines
    }
}
