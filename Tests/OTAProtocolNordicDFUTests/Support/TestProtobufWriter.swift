import Foundation

/// Builds protobuf bytes by hand, to craft init packets the generator would never emit.
enum TestProtobuf {
    static func varint(_ value: UInt64) -> [UInt8] {
        var value = value
        var bytes: [UInt8] = []
        repeat {
            var byte = UInt8(value & 0x7F)
            value >>= 7
            if value != 0 { byte |= 0x80 }
            bytes.append(byte)
        } while value != 0
        return bytes
    }

    static func key(_ field: Int, _ wireType: Int) -> [UInt8] {
        varint(UInt64(field << 3 | wireType))
    }

    static func field(_ number: Int, varint value: UInt64) -> [UInt8] {
        key(number, 0) + varint(value)
    }

    static func field(_ number: Int, bytes: [UInt8]) -> [UInt8] {
        key(number, 2) + varint(UInt64(bytes.count)) + bytes
    }

    /// An InitCommand with the given fields, in generator order.
    static func initCommand(
        fwVersion: UInt64? = 1,
        hwVersion: UInt64? = 52,
        sdReq: [UInt64] = [0x0100],
        packedSDReq: Bool = true,
        type: UInt64? = 0,
        sdSize: UInt64? = nil,
        blSize: UInt64? = nil,
        appSize: UInt64? = nil,
        hashType: UInt64 = 3,
        hash: [UInt8]? = nil,
        isDebug: Bool? = false,
        bootValidations: [(UInt64, [UInt8])] = [(1, [])]
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        if let fwVersion { bytes += field(1, varint: fwVersion) }
        if let hwVersion { bytes += field(2, varint: hwVersion) }
        if packedSDReq {
            if !sdReq.isEmpty { bytes += field(3, bytes: sdReq.flatMap(varint)) }
        } else {
            for value in sdReq { bytes += field(3, varint: value) }
        }
        if let type { bytes += field(4, varint: type) }
        if let sdSize { bytes += field(5, varint: sdSize) }
        if let blSize { bytes += field(6, varint: blSize) }
        if let appSize { bytes += field(7, varint: appSize) }
        if let hash { bytes += field(8, bytes: field(1, varint: hashType) + field(2, bytes: hash)) }
        if let isDebug { bytes += field(9, varint: isDebug ? 1 : 0) }
        for (type, data) in bootValidations {
            bytes += field(10, bytes: field(1, varint: type) + field(2, bytes: data))
        }
        return bytes
    }

    /// `Packet{command{op_code INIT, init}}`.
    static func unsignedPacket(_ initCommand: [UInt8]) -> [UInt8] {
        field(1, bytes: field(1, varint: 1) + field(2, bytes: initCommand))
    }

    /// `Packet{signed_command{command{op_code INIT, init}, signature_type, signature}}`.
    static func signedPacket(_ initCommand: [UInt8], signatureType: UInt64 = 0, signature: [UInt8]) -> [UInt8] {
        let command = field(1, varint: 1) + field(2, bytes: initCommand)
        return field(2, bytes: field(1, bytes: command) + field(2, varint: signatureType) + field(3, bytes: signature))
    }
}
