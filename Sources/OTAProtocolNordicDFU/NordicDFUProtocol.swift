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
        parameters: [
            ("prn", "packet receipt notification interval, 0...65535; 0 disables (default 12)"),
            ("object-delay-ms", "pause after creating the first data object, 0...5000 (default 400)"),
            ("object-attempts", "sends of an object whose checksum fails before giving up, 1...10 (default 3)"),
        ],
        makeClient: { (parameters) throws(OTAError) in
            NordicDFUClient(configuration: try NordicDFUConfiguration(parameters: parameters))
        },
        makeDeviceModel: { (parameters) throws(OTAError) in
            _ = try NordicDFUConfiguration(parameters: parameters)
            return NordicBootloaderModel()
        },
        loadFirmware: { (url) throws(OTAError) in
            guard let package = try package(at: url) else { return nil }
            return package.images
        },
        inspectFirmware: { (url) throws(OTAError) in
            switch url.pathExtension.lowercased() {
            case "zip":
                return try DFUPackage.inspect(contentsOf: url).firmwareInspection
            case "bin":
                let initPacket = url.deletingPathExtension().appendingPathExtension("dat")
                guard FileManager.default.fileExists(atPath: initPacket.path) else { return nil }
                return try DFUPackage.inspect(binary: url, initPacket: initPacket).firmwareInspection
            default:
                return nil
            }
        },
        prepareRawImage: { (image) throws(OTAError) in
            try FirmwareImage(
                bytes: image.bytes, name: image.name,
                attachments: [NordicDFUClient.initPacketKey: InitPacketBuilder.unsignedApplication(for: image.bytes)]
            )
        },
        benchmarkVariants: [["prn": "0"], ["prn": "12"]]
    )

    /// A DFU `.zip`, or a `.bin` with the `.dat` of the same name beside it; `nil` for anything else.
    static func package(at url: URL) throws(OTAError) -> DFUPackage? {
        switch url.pathExtension.lowercased() {
        case "zip":
            return try DFUPackage(contentsOf: url)
        case "bin":
            let initPacket = url.deletingPathExtension().appendingPathExtension("dat")
            guard FileManager.default.fileExists(atPath: initPacket.path) else { return nil }
            return try DFUPackage(binary: url, initPacket: initPacket)
        default:
            return nil
        }
    }
}
