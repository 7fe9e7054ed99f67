import Foundation
import OTACore

/// Builds an unsigned application init packet for a raw image, as `nrfutil pkg generate` would
/// without a key: for benchmarks and tests against the simulated bootloader, which does not
/// require signatures. Real devices usually do: ship nrfutil-made packages to them.
public enum InitPacketBuilder {
    /// An unsigned `Packet { command { op_code INIT, init { fw_version, hw_version, sd_req, type
    /// APPLICATION, app_size, hash SHA256 (byte-reversed) } } }`.
    public static func unsignedApplication(
        for image: Data,
        firmwareVersion: UInt32 = 1,
        hardwareVersion: UInt32 = 52,
        softDeviceRequirements: [UInt32] = [0x0100]
    ) -> Data {
        unsignedApplication(
            size: image.count, sha256: Data(SHA256.hash(image)), firmwareVersion: firmwareVersion, hardwareVersion: hardwareVersion,
            softDeviceRequirements: softDeviceRequirements)
    }

    /// The init packet of ``unsignedApplication(for:firmwareVersion:hardwareVersion:softDeviceRequirements:)``
    /// from the image's size and SHA-256 (an image in a file is not read again).
    public static func unsignedApplication(
        size: Int,
        sha256: Data,
        firmwareVersion: UInt32 = 1,
        hardwareVersion: UInt32 = 52,
        softDeviceRequirements: [UInt32] = [0x0100]
    ) -> Data {
        var initCommand = Data()
        initCommand += varintField(1, UInt64(firmwareVersion))
        initCommand += varintField(2, UInt64(hardwareVersion))
        initCommand += lengthDelimited(3, softDeviceRequirements.reduce(into: Data()) { $0 += varint(UInt64($1)) })
        initCommand += varintField(4, UInt64(InitPacket.FirmwareType.application.rawValue))
        initCommand += varintField(7, UInt64(size))
        let hash = varintField(1, UInt64(InitPacket.HashType.sha256.rawValue)) + lengthDelimited(2, Data(sha256.reversed()))
        initCommand += lengthDelimited(8, hash)
        let command = varintField(1, UInt64(InitPacket.OpCode.initialize.rawValue)) + lengthDelimited(2, initCommand)
        return lengthDelimited(1, command)
    }

    private static func varint(_ value: UInt64) -> Data {
        var value = value
        var bytes = Data()
        repeat {
            var byte = UInt8(value & 0x7F)
            value >>= 7
            if value != 0 { byte |= 0x80 }
            bytes.append(byte)
        } while value != 0
        return bytes
    }

    private static func varintField(_ number: UInt64, _ value: UInt64) -> Data {
        varint(number << 3) + varint(value)
    }

    private static func lengthDelimited(_ number: UInt64, _ payload: Data) -> Data {
        varint(number << 3 | 2) + varint(UInt64(payload.count)) + payload
    }
}
