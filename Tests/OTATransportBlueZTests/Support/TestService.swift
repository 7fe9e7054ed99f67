#if os(Linux)
@testable import OTATransportBlueZ

/// A small service that tests export on one connection and call from another.
enum TestService {
    static let path: DBusObjectPath = "/com/example/Test"
    /// A second object, for calls that never return: an object answers one call at a time.
    static let slowPath: DBusObjectPath = "/com/example/Test/Slow"
    static let interface = "com.example.Test"

    /// The object: `Echo` returns its arguments, `Fail(s name, s message)` replies with that
    /// error, `Sleep` never answers until cancelled, anything else is an unknown method.
    static func object(path: DBusObjectPath = path, interfaces: [String: [String: DBusValue]] = [:]) -> DBusObject {
        DBusObject(path: path, interfaces: interfaces) { call in
            switch call.member {
            case "Echo":
                return call.arguments
            case "Fail":
                let (name, message) = try call.decode(String.self, String.self)
                throw DBusError(name: DBusError.Name(rawValue: name), message: message)
            case "Sleep":
                try await Task.sleep(for: .seconds(3600))
                return []
            default:
                throw DBusError(name: .unknownMethod, message: "no method \(call.member ?? "")")
            }
        }
    }

    /// A call to an object exported by `server`: the test object unless `path` and `interface`
    /// say otherwise.
    static func call(
        _ member: String,
        on server: DBusConnection,
        path: DBusObjectPath = path,
        interface: String = interface,
        _ arguments: [DBusValue] = []
    ) -> DBusMessage {
        .methodCall(
            destination: server.uniqueName,
            path: path,
            interface: interface,
            member: member,
            arguments: arguments
        )
    }
}

/// Values of every kind, for round trips.
enum SampleValues {
    static let named: [(String, DBusValue)] = [
        ("byte", .byte(0xA5)),
        ("bool", .bool(true)),
        ("int16", .int16(-12_345)),
        ("uint16", .uint16(65_000)),
        ("int32", .int32(-2_000_000_000)),
        ("uint32", .uint32(4_000_000_000)),
        ("int64", .int64(-9_000_000_000_000_000_000)),
        ("uint64", .uint64(18_000_000_000_000_000_000)),
        ("double", .double(-1.5e-300)),
        ("string", .string("héllo, wörld ✓")),
        ("empty string", .string("")),
        ("object path", .objectPath("/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF")),
        ("signature", .signature("a{oa{sa{sv}}}")),
        ("bytes, 600", .bytes((0..<600).map { UInt8(truncatingIfNeeded: $0 &* 7) })),
        ("empty bytes", .bytes([])),
        ("empty string array", .strings([])),
        ("string array", .strings(["read", "write-without-response", "notify"])),
        ("empty a{sv}", .variantDictionary([:])),
        ("empty array of structs", .array(element: .structure([.string, .int32]), [])),
        (
            "array of arrays",
            .array(element: .array(.uint16), [.array(element: .uint16, [.uint16(1)]), .array(element: .uint16, [])])
        ),
        ("a{sv}", .variantDictionary(["Name": .string("lamp"), "RSSI": .int16(-60), "Paired": .bool(false)])),
        (
            "a{sa{sv}}",
            .dictionary(
                key: .string,
                value: .dictionary(key: .string, value: .variant),
                entries: [
                    .init(
                        key: .string("org.bluez.Device1"),
                        value: .variantDictionary(["Address": .string("AA:BB:CC:DD:EE:FF")])
                    ),
                    .init(key: .string("org.freedesktop.DBus.Properties"), value: .variantDictionary([:])),
                ]
            )
        ),
        (
            "a{oa{sa{sv}}}",
            .dictionary(
                key: .objectPath,
                value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)),
                entries: [
                    .init(
                        key: .objectPath("/org/bluez/hci0"),
                        value: .dictionary(
                            key: .string,
                            value: .dictionary(key: .string, value: .variant),
                            entries: [
                                .init(
                                    key: .string("org.bluez.Adapter1"),
                                    value: .variantDictionary(["Powered": .bool(true), "UUIDs": .strings(["1800"])])
                                )
                            ]
                        )
                    )
                ]
            )
        ),
        (
            "a{qv} with integer keys",
            .dictionary(
                key: .uint16,
                value: .variant,
                entries: [
                    .init(key: .uint16(0x0059), value: .variant(.bytes([1, 2, 3])))
                ]
            )
        ),
        ("struct", .structure([.string("x"), .int32(7), .array(element: .double, [.double(0.5)])])),
        ("nested struct", .structure([.structure([.byte(1)]), .variant(.structure([.bool(false), .string("")]))])),
        ("variant of string", .variant(.string("v"))),
        ("variant of array", .variant(.bytes([9, 8, 7]))),
        ("variant of empty array", .variant(.array(element: .objectPath, []))),
        ("variant of variant", .variant(.variant(.uint64(1)))),
        ("variant of a{sv}", .variant(.variantDictionary(["k": .variant(.int32(1))]))),
    ]

    static let names = named.map(\.0)

    static func value(_ name: String) -> DBusValue {
        named.first { $0.0 == name }!.1
    }
}
#endif
