/// What a DFU object holds.
public enum DFUObjectType: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// The init packet (the `.dat`).
    case command = 0x01
    /// Firmware bytes (the `.bin`).
    case data = 0x02

    public var description: String {
        switch self {
        case .command: "command object"
        case .data: "data object"
        }
    }
}
