/// What a characteristic allows, as declared in its GATT properties.
public struct CharacteristicProperties: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The value can be read.
    public static let read = CharacteristicProperties(rawValue: 0x02)
    /// The value can be written without response (ATT Write Command).
    public static let writeWithoutResponse = CharacteristicProperties(rawValue: 0x04)
    /// The value can be written with response (ATT Write Request).
    public static let write = CharacteristicProperties(rawValue: 0x08)
    /// The characteristic can notify.
    public static let notify = CharacteristicProperties(rawValue: 0x10)
    /// The characteristic can indicate.
    public static let indicate = CharacteristicProperties(rawValue: 0x20)

    public var description: String {
        let names: [(CharacteristicProperties, String)] = [
            (.read, "read"), (.write, "write"), (.writeWithoutResponse, "write-without-response"),
            (.notify, "notify"), (.indicate, "indicate"),
        ]
        return names.filter { contains($0.0) }.map(\.1).joined(separator: ", ")
    }
}
