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
