/// How a value is written to a characteristic.
public enum WriteKind: Sendable, Hashable, CustomStringConvertible {
    /// ATT Write Request: the device acknowledges each write; errors are reported.
    case withResponse
    /// ATT Write Command: no acknowledgement. The transport still applies back-pressure: the
    /// write returns only once the link has taken the bytes.
    case withoutResponse

    /// The characteristic property that allows this kind of write.
    public var requiredProperty: CharacteristicProperties {
        switch self {
        case .withResponse: .write
        case .withoutResponse: .writeWithoutResponse
        }
    }

    public var description: String {
        switch self {
        case .withResponse: "write with response"
        case .withoutResponse: "write without response"
        }
    }
}
