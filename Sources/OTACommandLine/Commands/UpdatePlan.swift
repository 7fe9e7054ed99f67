import Foundation
import OTACore
import OTATransportSimulator

/// Everything `ota update` decides before connecting: the firmware (raw image or verified
/// package), the device, the protocol and why, its parameters and the engine's settings.
struct UpdatePlan: Sendable {
    var target: SimulatedTarget
    var descriptor: ProtocolDescriptor
    var client: any UpdateProtocol
    var selection: ProtocolSelection
    /// The images to send, in order: one for most protocols, several for multi-part packages
    /// (Nordic SoftDevice + bootloader, then application).
    var images: [FirmwareImage]
    var package: FirmwarePackage?
    /// The simulated device's firmware: its protocol and parameters.
    var firmwareDescriptor: ProtocolDescriptor
    var firmwareParameters: ProtocolParameters
    var configuration: UpdateConfiguration
    var mtu: Int

    /// Builds the plan from the command line; every refusal is a one-line error.
    static func make(_ arguments: ParsedArguments, environment: ToolEnvironment, command: String) throws -> UpdatePlan {
        let registry = environment.registry
        let explicitParameters = try parameters(arguments, command: command)
        let explicitProtocol = arguments.value("--protocol")
        if let explicitProtocol {
            do { _ = try registry.descriptor(named: explicitProtocol) } catch { throw UsageError(error.message, command: "protocols") }
        }
        let target = try SimulatedTarget.resolve(arguments.value("--device") ?? SimulatedTarget.defaultAddress, in: environment, command: command)
        let catalog = try environment.catalog(adding: arguments.values["--catalog"] ?? [])

        // The firmware: a verified package or a raw image.
        let input = URL(fileURLWithPath: arguments.positionals[0])
        let package = FirmwarePackage.isPackage(input) ? try FirmwarePackage.open(input) : nil
        if let package, let name = package.protocolName {
            do {
                _ = try registry.descriptor(named: name)
            } catch {
                throw OTAError(.invalidManifest, "\(package.source): protocol: \(error.message)")
            }
        }

        // The device's firmware decides what it advertises, hence which family matches.
        guard let firmware = target.firmware(chosen: explicitProtocol ?? package?.protocolName) else {
            throw OTAError(
                .selectionFailed,
                "\(target.address) is a bare hardware profile that runs whatever protocol is chosen: pass --protocol NAME, use a package that names one, or pick a device from 'ota scan'"
            )
        }
        let firmwareDescriptor: ProtocolDescriptor
        do {
            firmwareDescriptor = try registry.descriptor(named: firmware.protocolName)
        } catch {
            throw OTAError(.internal, "\(target.address) runs protocol '\(firmware.protocolName)', which this build does not link")
        }
        let advertisement = target.advertisement(running: try firmwareDescriptor.makeDeviceModel(firmware.parameters))
        let family = try catalog.family(for: advertisement, device: target.address)
        let selection = try ProtocolSelection.decide(
            explicitProtocol: explicitProtocol, explicitParameters: explicitParameters, package: package, family: family, device: target.address
        )
        try package?.checkCompatibility(with: family, device: target.address)
        let descriptor: ProtocolDescriptor
        let client: any UpdateProtocol
        do {
            descriptor = try registry.descriptor(named: selection.protocolName)
            client = try descriptor.makeClient(selection.parameters)
        } catch {
            throw UsageError(error.message, command: "protocols")
        }

        let images = try loadImages(input: input, package: package, descriptor: descriptor)
        for image in images where image.count > target.profile.slotSize {
            throw OTAError(
                .imageTooLarge,
                "\(image.name) is \(image.count) bytes, larger than the \(target.profile.slotSize)-byte update slot of \(target.address)"
            )
        }
        var configuration = family?.configuration ?? UpdateConfiguration()
        if let attempts = arguments.value("--resume-attempts") {
            configuration.resume.maximumAttempts = try integer(attempts, option: "--resume-attempts", in: 0...100, command: command)
        }
        let mtu = try arguments.value("--mtu").map { text throws(UsageError) in try integer(text, option: "--mtu", in: 23...517, command: command) }
            ?? family?.preferredMTU ?? 517
        return UpdatePlan(
            target: target, descriptor: descriptor, client: client, selection: selection, images: images, package: package,
            firmwareDescriptor: firmwareDescriptor, firmwareParameters: firmware.parameters, configuration: configuration, mtu: mtu
        )
    }

    /// The images to send: the package's, the protocol's own container (a Nordic DFU .zip), or
    /// the raw file.
    static func loadImages(input: URL, package: FirmwarePackage?, descriptor: ProtocolDescriptor) throws(OTAError) -> [FirmwareImage] {
        let file = try package.map { package throws(OTAError) -> URL in
            guard package.images.count == 1, let image = package.images.first else {
                throw OTAError(.invalidManifest, "\(package.source): images: the package has \(package.images.count) images, but '\(descriptor.name)' sends one file")
            }
            return image.url
        } ?? input
        if let loader = descriptor.loadFirmware, let images = try loader(file) {
            return images
        }
        return [try FirmwareImage(contentsOf: file)]
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
        var lines = ["would update \(target.address) (\(target.profile.summary))"]
        if let package {
            lines.append("firmware: package \(package.name ?? package.source) \(package.version ?? "") — \(package.images.count) image(s) verified (size and SHA-256)")
        }
        for (index, image) in images.enumerated() {
            let part = images.count > 1 ? "part \(index + 1) of \(images.count): " : ""
            lines.append("image: \(part)\(image.name), \(image.count) bytes, CRC-32 \(Wording.hex32(image.crc32))")
        }
        lines += selection.reasons.map { "because: \($0)" }
        lines.append("protocol: \(selection.protocolName)")
        lines.append("ATT MTU offered: \(mtu); resume attempts: \(configuration.resume.maximumAttempts)")
        return lines
    }
}
