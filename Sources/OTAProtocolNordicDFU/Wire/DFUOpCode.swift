/// Control Point request op codes used over BLE (the bootloader's reduced protocol).
public enum DFUOpCode: UInt8, Sendable, Hashable, CustomStringConvertible {
    case create = 0x01
    case setPRN = 0x02
    case calculateChecksum = 0x03
    case execute = 0x04
    case select = 0x06
    case abort = 0x0C
    /// Prefix of every response notification.
    case response = 0x60

    /// The length of the request the op code starts, the op code included: Create carries an
    /// object type and a size, Set PRN a u16, Select an object type, the others nothing; `nil`
    /// for Response, which starts no request.
    var requestLength: Int? {
        switch self {
        case .create: 6
        case .setPRN: 3
        case .select: 2
        case .calculateChecksum, .execute, .abort: 1
        case .response: nil
        }
    }

    public var description: String {
        switch self {
        case .create: "Create"
        case .setPRN: "Set PRN"
        case .calculateChecksum: "Calculate Checksum"
        case .execute: "Execute"
        case .select: "Select"
        case .abort: "Abort"
        case .response: "Response"
        }
    }
}
