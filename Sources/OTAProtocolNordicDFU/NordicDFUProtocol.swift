import Foundation
import OTACore

/// Nordic Secure DFU for nRF5 SDK bootloaders over BLE, with DFU `.zip` packages (see
/// docs/protocols/nordic-dfu.md).
public enum NordicDFUProtocol {
    /// The name users select it by.
    public static let name = "nordic-dfu"

    /// The protocol's registry entry.
    public static let descriptor = ProtocolDescriptor(
        name: name,
        summary: "Nordic Secure DFU (nRF5 SDK bootloaders): init packet, 4 KiB data objects, receipt notifications, resume; DFU .zip packages",
        configuration: NordicDFUConfiguration.self,
        makeClient: { NordicDFUClient(configuration: $0) },
        // The bootloader's side reads none of the client's settings.
        makeDeviceModel: { _ in NordicBootloaderModel() },
        containerFormat: DFUPackageFormat(),
        rawImagePreparation: UnsignedInitPacketPreparation(),
        parameterVariants: [[prn: "0"], [prn: "12"], [prn: "auto", pipeline: "on"], [prn: "0", pipeline: "on"]],
        defaultFamily: .init(
            name: "nordic-secure-dfu",
            summary: "nRF5 SDK secure bootloader (or an application with buttonless DFU)",
            match: .init(services: [DFUGATTProfile.service]),
            parameters: [prn: "12"],
            configuration: verifyingForAMinute
        ),
        demoDevices: [
            .init(name: "nrf-tracker", hardwareProfile: "nrf52840-mtu244-2m", advertisedName: "DfuTarg", manufacturerData: [0x0059: Data([0x01])], rssi: -58)
        ],
        signatureVerification: DFUSignatureVerification(),
        makeVerifyingDeviceModel: { (_, key) throws(OTAError) in
            guard key.algorithm == .ecdsaP256 else {
                throw OTAError(.invalidParameter, "a Secure DFU bootloader verifies ECDSA P-256 signatures only, not \(key)")
            }
            var configuration = NordicBootloaderModel.Configuration()
            configuration.publicKey = key
            return NordicBootloaderModel(configuration: configuration)
        }
    )

    private static let prn = NordicDFUConfiguration.packetReceiptParameter.spec.name
    private static let pipeline = NordicDFUConfiguration.pipelineParameter.spec.name

    /// The default family's engine settings: a minute for the bootloader to verify and activate.
    private static var verifyingForAMinute: UpdateConfiguration {
        var configuration = UpdateConfiguration()
        configuration.verifyTimeout = .seconds(60)
        return configuration
    }

    /// A DFU `.zip`, or a `.bin` with the `.dat` of the same name beside it; `nil` for anything else.
    static func package(at url: URL) throws(OTAError) -> DFUPackage? {
        switch url.pathExtension.lowercased() {
        case "zip":
            return try DFUPackage(contentsOf: url)
        case "bin":
            guard let initPacket = initPacket(beside: url) else { return nil }
            return try DFUPackage(binary: url, initPacket: initPacket)
        default:
            return nil
        }
    }

    /// The `.dat` of the same name beside a `.bin`, when it exists.
    static func initPacket(beside binary: URL) -> URL? {
        let initPacket = binary.deletingPathExtension().appendingPathExtension("dat")
        return FileManager.default.fileExists(atPath: initPacket.path) ? initPacket : nil
    }
}

/// Nordic's firmware containers: a DFU `.zip`, or a `.bin` with its `.dat` init packet beside it.
public struct DFUPackageFormat: FirmwareContainerFormat {
    /// Creates the format.
    public init() {}

    /// The package's images in transfer order, each with its init packet attached.
    public func load(_ url: URL) throws(OTAError) -> [FirmwareImage]? {
        try NordicDFUProtocol.package(at: url)?.images
    }

    /// The images of a DFU `.zip` already in memory (recognised by its name or its zip
    /// signature).
    public func load(_ bytes: Data, name: String) throws(OTAError) -> [FirmwareImage]? {
        guard name.lowercased().hasSuffix(".zip") || bytes.starts(with: [0x50, 0x4B, 0x03, 0x04]) else { return nil }
        return try DFUPackage(zipData: bytes, name: name).images
    }

    /// The package's parts, manifest and init packets, with what does not fit together.
    public func inspect(_ url: URL) throws(OTAError) -> FirmwareInspection? {
        switch url.pathExtension.lowercased() {
        case "zip":
            return try DFUPackage.inspect(contentsOf: url).firmwareInspection
        case "bin":
            guard let initPacket = NordicDFUProtocol.initPacket(beside: url) else { return nil }
            return try DFUPackage.inspect(binary: url, initPacket: initPacket).firmwareInspection
        default:
            return nil
        }
    }
}

/// Attaches an unsigned application init packet to a raw image, as `nrfutil pkg generate` does
/// without a key.
public struct UnsignedInitPacketPreparation: RawImagePreparation {
    /// Creates the preparation.
    public init() {}

    /// The image with ``NordicDFUClient/initPacketKey`` attached.
    public func prepare(_ image: FirmwareImage) throws(OTAError) -> FirmwareImage {
        image.renamed(
            image.name, attachments: [NordicDFUClient.initPacketKey: InitPacketBuilder.unsignedApplication(size: image.count, sha256: image.sha256)]
        )
    }
}
