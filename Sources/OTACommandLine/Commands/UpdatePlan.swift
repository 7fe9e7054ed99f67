import Foundation
import OTACore

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

    /// Builds the plan from the command line; every refusal is a one-line error.
    ///
    /// - Parameter interactive: whether a person watches the output (the simulator paces itself).
    static func make(_ arguments: ParsedArguments, environment: ToolEnvironment, command: String, interactive: Bool = false) async throws -> UpdatePlan {
        let registry = environment.registry
        let explicitParameters = try parameters(arguments, command: command)
        let explicitProtocol = arguments.value("--protocol")
        if let explicitProtocol {
            do { _ = try registry.descriptor(named: explicitProtocol) } catch { throw UsageError(error.message, command: "protocols") }
        }
        let device = try await environment.device(
            arguments.value("--device") ?? environment.defaultDevice, arguments: arguments, interactive: interactive, command: command
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
        try device.check(images)
        var configuration = family?.configuration ?? UpdateConfiguration()
        if let attempts = arguments.value("--resume-attempts") {
            configuration.resume.maximumAttempts = try integer(attempts, option: "--resume-attempts", in: 0...100, command: command)
        }
        if let maxChunk = arguments.value("--max-chunk") {
            configuration.maximumChunkSize = try integer(maxChunk, option: "--max-chunk", in: 1...512, command: command)
        }
        let mtu = try arguments.value("--mtu").map { text throws(UsageError) in try integer(text, option: "--mtu", in: 23...517, command: command) }
            ?? family?.preferredMTU ?? 517
        return UpdatePlan(
            device: device, descriptor: descriptor, client: client, selection: selection, images: images, package: package,
            configuration: configuration, mtu: mtu
        )
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
                do { recognised = try format.load(raw.bytes, name: raw.name) != nil } catch { recognised = true }
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
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw UsageError("--param '\(pair)' is not KEY=VALUE", command: command)
            }
            parameters[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
        }
        return parameters
    }

    static func integer(_ text: String, option: String, in range: ClosedRange<Int>, command: String) throws(UsageError) -> Int {
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("\(option) '\(text)' is not an integer in \(range.lowerBound)...\(range.upperBound)", command: command)
        }
        return number
    }

    /// The decision in words, for `--dry-run`.
    var explanation: [String] {
        var lines = ["would update \(device.summary)"]
        if let package {
            lines.append("firmware: package \(package.name ?? package.source) \(package.version ?? "") — \(package.images.count) image(s) verified (size and SHA-256)")
        }
        for (index, image) in images.enumerated() {
            let part = images.count > 1 ? "part \(index + 1) of \(images.count): " : ""
            lines.append("image: \(part)\(image.name), \(image.count) bytes, CRC-32 \(Hex.number(image.crc32, digits: 8))")
        }
        lines += selection.reasons.map { "because: \($0)" }
        lines.append("protocol: \(selection.protocolName)")
        lines.append("ATT MTU offered: \(mtu); resume attempts: \(configuration.resume.maximumAttempts)")
        return lines
    }
}
