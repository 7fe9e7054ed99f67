#if os(Linux)
import Testing

@testable import OTATransportBlueZ

/// Marshalling without a bus: values go through libdbus's wire format and its validation.
@Suite(.needsLibDBus) struct DBusValueTests {
    private func roundTrip(_ arguments: [DBusValue]) throws -> DBusMessage {
        let message = DBusMessage.signal(
            path: "/test",
            interface: "com.example.Test",
            member: "Values",
            arguments: arguments
        )
        return try DBusMessage(marshalled: message.marshalled())
    }

    @Test(arguments: SampleValues.names)
    func roundTripsExactly(name: String) throws {
        let value = SampleValues.value(name)
        let decoded = try roundTrip([value])
        #expect(decoded.arguments == [value])
        #expect(decoded.signature == value.type.signature)
    }

    @Test func roundTripsEveryKindInOneMessage() throws {
        let values = SampleValues.named.map(\.1)
        let decoded = try roundTrip(values)
        #expect(decoded.arguments == values)
    }

    @Test func roundTripsTheHeader() throws {
        var message = DBusMessage.methodCall(
            destination: "org.bluez",
            path: "/org/bluez/hci0",
            interface: "org.bluez.Adapter1",
            member: "StartDiscovery"
        )
        message.noReplyExpected = true
        message.serial = 42
        let decoded = try DBusMessage(marshalled: message.marshalled())
        #expect(decoded == message)

        let error = message.makeErrorReply(DBusError(name: "org.bluez.Error.NotReady", message: "Resource Not Ready"))
        let decodedError = try DBusMessage(marshalled: error.marshalled())
        #expect(decodedError.kind == .error)
        #expect(decodedError.replySerial == 42)
        #expect(decodedError.error == DBusError(name: "org.bluez.Error.NotReady", message: "Resource Not Ready"))
    }

    @Test func sixHundredBytesStayBytes() throws {
        let bytes = (0..<600).map { UInt8(truncatingIfNeeded: $0) }
        let decoded = try roundTrip([.bytes(bytes)])
        #expect(decoded.arguments.first?.bytes == bytes)
        #expect(try decoded.decode([UInt8].self) == bytes)
    }

    @Test func accessorsReadTypedValues() {
        let properties = DBusValue.variantDictionary(["Name": .string("lamp"), "MTU": .uint16(247)])
        #expect(properties.variantDictionary == ["Name": .string("lamp"), "MTU": .uint16(247)])
        #expect(DBusValue.string("x").string == "x")
        #expect(DBusValue.string("x").uint16 == nil)
        #expect(DBusValue.strings(["a"]).strings == ["a"])
        #expect(DBusValue.bytes([1]).strings == nil)
        #expect(DBusValue.int32(1).variantDictionary == nil)
    }

    @Test func decodesTypedArguments() throws {
        let objects: [DBusObjectPath: [String: [String: DBusValue]]] = [
            "/org/bluez/hci0": ["org.bluez.Adapter1": ["Powered": .bool(true)]]
        ]
        let message = DBusMessage.signal(
            path: "/test",
            interface: "com.example.Test",
            member: "Typed",
            arguments: [objects.dbusValue, .uint16(23), .string("s")]
        )
        let (decodedObjects, mtu, text) = try message.decode(
            [DBusObjectPath: [String: [String: DBusValue]]].self,
            UInt16.self,
            String.self
        )
        #expect(decodedObjects == objects)
        #expect(mtu == 23)
        #expect(text == "s")
    }

    @Test func aWrongSignatureIsATypedError() throws {
        let message = DBusMessage.signal(
            path: "/test",
            interface: "com.example.Test",
            member: "Typed",
            arguments: [.int32(1)]
        )
        let wrongType = #expect(throws: DBusError.self) { try message.decode(String.self) }
        #expect(wrongType?.name == .invalidArgs)
        #expect(wrongType?.message.contains("expected arguments 's', got 'i'") == true)
        let wrongCount = #expect(throws: DBusError.self) { try message.decode(Int32.self, Int32.self) }
        #expect(wrongCount?.name == .invalidArgs)
        let nested = #expect(throws: DBusError.self) { try Bool(dbusValue: .variant(.bool(true))) }
        #expect(nested?.name == .invalidArgs)
    }

    static let invalidMessages: [(String, DBusMessage)] = [
        (
            "mixed array",
            .signal(path: "/t", interface: "a.b", member: "M", arguments: [.array(element: .string, [.int32(1)])])
        ),
        (
            "dictionary entry of the wrong type",
            .signal(
                path: "/t",
                interface: "a.b",
                member: "M",
                arguments: [
                    .dictionary(
                        key: .string,
                        value: .variant,
                        entries: [.init(key: .string("k"), value: .string("not a variant"))]
                    )
                ]
            )
        ),
        (
            "non-basic key",
            .signal(
                path: "/t",
                interface: "a.b",
                member: "M",
                arguments: [.dictionary(key: .variant, value: .string, entries: [])]
            )
        ),
        ("empty structure", .signal(path: "/t", interface: "a.b", member: "M", arguments: [.structure([])])),
        ("NUL in a string", .signal(path: "/t", interface: "a.b", member: "M", arguments: [.string("a\u{0}b")])),
        (
            "invalid signature value",
            .signal(path: "/t", interface: "a.b", member: "M", arguments: [.signature("a{vs}")])
        ),
        ("invalid member", .signal(path: "/t", interface: "a.b", member: "not-a-member")),
        ("invalid interface", .signal(path: "/t", interface: "nodots", member: "M")),
        ("invalid destination", .methodCall(destination: "no spaces allowed", path: "/t", interface: nil, member: "M")),
        ("invalid error name", DBusMessage(kind: .error, errorName: "bad", replySerial: 1)),
        ("reply without serial", DBusMessage(kind: .methodReturn)),
        (
            "deep variants",
            .signal(
                path: "/t",
                interface: "a.b",
                member: "M",
                arguments: [(0..<70).reduce(DBusValue.byte(0)) { value, _ in .variant(value) }]
            )
        ),
        (
            "arrays nested too deep",
            .signal(
                path: "/t",
                interface: "a.b",
                member: "M",
                arguments: [(0..<33).reduce(DBusValue.bytes([])) { value, _ in .array(element: value.type, [value]) }]
            )
        ),
    ]

    @Test(arguments: invalidMessages.map(\.0))
    func invalidMessagesThrowInsteadOfAborting(name: String) {
        let message = Self.invalidMessages.first { $0.0 == name }!.1
        #expect(throws: DBusError.self) { try message.marshalled() }
    }

    @Test func garbageIsRejected() {
        #expect(throws: DBusError.self) { try DBusMessage(marshalled: [0x6c, 0x04, 0x01, 0x01, 0xff, 0xff]) }
        #expect(throws: DBusError.self) { try DBusMessage(marshalled: []) }
    }
}
#endif
