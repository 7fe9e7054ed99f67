#if os(Linux)
import Foundation
import OTACore
import Testing

@testable import OTATransportBlueZ

/// Parsing `GetManagedObjects`, link limits and BlueZ error translation: pure, no bus.
@Suite(.needsLibDBus) struct BlueZObjectTreeTests {
    static let objects: BlueZObjectTree.ManagedObjects = [
        "/org/bluez": ["org.bluez.AgentManager1": [:]],
        "/org/bluez/hci10": [
            BlueZ.Interface.adapter: ["Address": .string("00:AA:01:0A:00:00"), "Powered": .bool(true)]
        ],
        "/org/bluez/hci1": [
            BlueZ.Interface.adapter: [
                "Address": .string("00:aa:01:01:00:01"), "Powered": .bool(false), "PowerState": .string("off-blocked"),
            ]
        ],
        "/org/bluez/hci0": [
            BlueZ.Interface.adapter: [
                "Address": .string("00:AA:01:00:00:00"), "Alias": .string("central"), "Powered": .bool(true),
                "Discovering": .bool(true),
            ]
        ],
        FakeBlueZ.devicePath: [
            BlueZ.Interface.device: FakeBlueZ.deviceProperties.merging([
                "Connected": .bool(true), "ServicesResolved": .bool(true), "TxPower": .int16(4),
                "ServiceData": .dictionary(
                    key: .string, value: .variant,
                    entries: [
                        .init(key: .string("0000fe59-0000-1000-8000-00805f9b34fb"), value: .variant(.bytes([9])))
                    ]),
            ]) { $1 },
            BlueZ.Interface.properties: [:],
        ],
        "/org/bluez/hci0/dev_11_22_33_44_55_66": [BlueZ.Interface.device: ["Address": .string("11:22:33:44:55:66")]],
        "/org/bluez/hci0/dev_broken": [BlueZ.Interface.device: ["Name": .string("no address")]],
        FakeBlueZ.servicePath: [
            BlueZ.Interface.gattService: [
                "UUID": .string(FakeBlueZ.serviceUUID.description), "Device": .objectPath(FakeBlueZ.devicePath),
                "Primary": .bool(true),
            ]
        ],
        FakeBlueZ.dataPath: [
            BlueZ.Interface.gattCharacteristic: [
                "UUID": .string(FakeBlueZ.data.characteristic.description),
                "Service": .objectPath(FakeBlueZ.servicePath),
                "Flags": .strings(["write-without-response"]), "MTU": .uint16(517), "WriteAcquired": .bool(false),
            ]
        ],
        FakeBlueZ.controlPath: [
            BlueZ.Interface.gattCharacteristic: [
                "UUID": .string(FakeBlueZ.control.characteristic.description),
                "Service": .objectPath(FakeBlueZ.servicePath),
                "Flags": .strings(["write", "notify", "reliable-write"]), "Notifying": .bool(true),
            ]
        ],
        // The same characteristic UUID again at a higher handle: the first one wins.
        "/org/bluez/hci0/dev_00_AA_01_01_00_01/service000a/char0020": [
            BlueZ.Interface.gattCharacteristic: [
                "UUID": .string(FakeBlueZ.control.characteristic.description),
                "Service": .objectPath(FakeBlueZ.servicePath),
                "Flags": .strings(["indicate"]),
            ]
        ],
        "/org/bluez/hci0/dev_00_AA_01_01_00_01/service000a/char0030": [
            BlueZ.Interface.gattCharacteristic: [
                "UUID": .string("not a uuid"), "Service": .objectPath(FakeBlueZ.servicePath),
            ]
        ],
    ]

    @Test func parsesAdaptersInNaturalOrder() {
        let tree = BlueZObjectTree(managedObjects: Self.objects)
        #expect(tree.adapters.map(\.name) == ["hci0", "hci1", "hci10"])
        let hci0 = tree.adapters[0]
        #expect(
            hci0
                == BlueZAdapter(
                    name: "hci0", path: "/org/bluez/hci0", address: "00:AA:01:00:00:00", alias: "central",
                    isPowered: true,
                    isDiscovering: true))
        #expect(tree.adapter(named: "hci1")?.address == "00:AA:01:01:00:01")
        #expect(tree.adapter(named: "hci1")?.powerState == "off-blocked")
        #expect(tree.adapter(named: "hci9") == nil)
        #expect(hci0.description == "hci0 00:AA:01:00:00:00 'central' (powered, discovering)")
    }

    @Test func parsesDevicesWithTheirAdvertisement() throws {
        let tree = BlueZObjectTree(managedObjects: Self.objects)
        #expect(tree.devices.map(\.address) == ["00:AA:01:01:00:01", "11:22:33:44:55:66"])
        let device = try #require(tree.device(address: "00:aa:01:01:00:01", adapter: "/org/bluez/hci0"))
        #expect(device.path == FakeBlueZ.devicePath)
        #expect(device.adapterPath == "/org/bluez/hci0")
        #expect(device.addressType == "public")
        #expect(device.isConnected && device.isServicesResolved && !device.isPaired)
        #expect(device.txPower == 4)
        #expect(device.serviceData == [GATTUUID("FE59")!: Data([9])])
        #expect(
            device.advertisement
                == Advertisement(
                    name: "ota-lamp", serviceUUIDs: [FakeBlueZ.serviceUUID],
                    manufacturerData: [0x0059: Data([1, 2, 3])], rssi: -52))
        #expect(tree.device(address: FakeBlueZ.address, adapter: "/org/bluez/hci1") == nil)
        #expect(tree.devices(of: "/org/bluez/hci0").count == 2)
        let bare = try #require(tree.device(address: "11:22:33:44:55:66"))
        #expect(bare.advertisement == Advertisement())
        #expect(!bare.isConnected)
    }

    @Test func mapsCharacteristicsByServiceAndUUID() throws {
        let tree = BlueZObjectTree(managedObjects: Self.objects)
        #expect(tree.services.count == 1)
        #expect(tree.characteristics.count == 3)
        let table = tree.gattCharacteristics(of: FakeBlueZ.devicePath)
        #expect(Set(table.keys) == [FakeBlueZ.data, FakeBlueZ.control])
        let data = try #require(table[FakeBlueZ.data])
        #expect(data.properties == .writeWithoutResponse)
        #expect(data.mtu == 517)
        #expect(data.writeAcquired == false)
        #expect(data.notifyAcquired == nil)
        let control = try #require(table[FakeBlueZ.control])
        #expect(control.path == FakeBlueZ.controlPath)
        #expect(control.properties == [.write, .notify])
        #expect(control.flags == ["write", "notify", "reliable-write"])
        #expect(control.mtu == nil)
        #expect(control.writeAcquired == nil)
        #expect(control.isNotifying)
        #expect(tree.gattCharacteristics(of: "/org/bluez/hci0/dev_11_22_33_44_55_66").isEmpty)
    }

    @Test(
        arguments: [
            (
                ["read", "write", "write-without-response", "notify", "indicate"],
                CharacteristicProperties([.read, .write, .writeWithoutResponse, .notify, .indicate])
            ),
            (["encrypt-read", "secure-write", "authenticated-signed-writes", "extended-properties"], [.read, .write]),
            ([], []),
        ] as [([String], CharacteristicProperties)])
    func translatesFlags(flags: [String], expected: CharacteristicProperties) {
        #expect(BlueZObjectTree.Characteristic.properties(fromFlags: flags) == expected)
    }

    @Test func parsesAGetManagedObjectsReply() throws {
        let reply = DBusMessage(kind: .methodReturn, replySerial: 1, arguments: [Self.objects.dbusValue])
        #expect(try BlueZObjectTree(reply: reply) == BlueZObjectTree(managedObjects: Self.objects))
        #expect(throws: DBusError.self) {
            try BlueZObjectTree(reply: DBusMessage(kind: .methodReturn, replySerial: 1, arguments: [.string("x")]))
        }
    }

    /// The chunk cap: min(MTU − 3, 510) without response (BlueZ 5.66 loses 512 and 514), min(MTU − 3, 512) with.
    @Test(arguments: [
        (23, 510, 20, 20), (185, 510, 182, 182), (247, 510, 244, 244), (512, 510, 509, 509),
        (513, 510, 510, 510), (515, 510, 510, 512), (517, 510, 510, 512), (517, 512, 512, 512), (10, 510, 20, 20),
    ])
    func capsWritesFromTheMTU(mtu: Int, cap: Int, withoutResponse: Int, withResponse: Int) {
        let link = BlueZ.linkParameters(attMTU: mtu, writeWithoutResponseCap: cap)
        #expect(link.maximumWriteWithoutResponse == withoutResponse)
        #expect(link.maximumWriteWithResponse == withResponse)
        #expect(link.attMTU == max(23, mtu))
    }

    @Test func theDefaultCapIsTheMeasuredOne() {
        #expect(BlueZ.bluezPeerWriteWithoutResponseCap == 510)
        #expect(BlueZ.attributeValueCap == 512)
        #expect(BlueZConnector.Configuration().writeWithoutResponseCap == 510)
    }

    @Test(arguments: [
        ("00:AA:01:01:00:01", true), ("00:aa:01:01:00:01", true), ("00:AA:01:01:00", false),
        ("00-AA-01-01-00-01", false), ("00:AA:01:01:00:0G", false), ("", false),
    ])
    func validatesAddresses(text: String, valid: Bool) {
        #expect(BlueZ.isValidAddress(text) == valid)
    }

    @Test func readsTheAddressOfADevicePath() {
        #expect(BlueZScanner.address(fromPath: FakeBlueZ.devicePath) == FakeBlueZ.address)
        #expect(BlueZScanner.address(fromPath: "/org/bluez/hci0") == "")
    }
}

/// BlueZ's D-Bus errors as transport errors a person can act on.
@Suite(.needsLibDBus) struct BlueZFailureTests {
    static let context = BlueZFailure.Context(
        operation: "writing to 6e400003", bus: .system, address: "00:AA:01:01:00:01")

    @Test(
        arguments: [
            ("org.bluez.Error.NotPermitted", TransportError.Kind.notPermitted, "close other Bluetooth clients"),
            ("org.bluez.Error.NotAuthorized", .notPermitted, "bluetoothctl pair 00:AA:01:01:00:01"),
            ("org.bluez.Error.AuthenticationFailed", .connectionFailed, "bluetoothctl remove 00:AA:01:01:00:01"),
            ("org.bluez.Error.InProgress", .other, "already in progress"),
            ("org.bluez.Error.NotSupported", .notPermitted, "not supported"),
            ("org.bluez.Error.InvalidValueLength", .attError(0x0D), "smaller chunk size"),
            ("org.bluez.Error.Failed", .other, "writing to 6e400003 failed: boom"),
            (
                "org.bluez.Error.NotConnected", .disconnected(DisconnectReason("the device is not connected")),
                "not connected"
            ),
            ("org.bluez.Error.NotReady", .connectionFailed, "bluetoothctl power on"),
            ("org.freedesktop.DBus.Error.NoReply", .other, "did not answer within 25.0 s"),
            (
                "org.freedesktop.DBus.Error.ServiceUnknown", .connectionFailed,
                "bluetoothd is not running (org.bluez is not on the system bus): start it with 'systemctl start bluetooth'"
            ),
            ("org.freedesktop.DBus.Error.AccessDenied", .notPermitted, "'bluetooth' group"),
            ("org.freedesktop.DBus.Error.UnknownObject", .connectionFailed, "scan and connect again"),
        ] as [(String, TransportError.Kind, String)])
    func translates(name: String, kind: TransportError.Kind, phrase: String) {
        var context = Self.context
        context.timeout = .seconds(25)
        let error = BlueZFailure.translate(DBusError(name: DBusError.Name(rawValue: name), message: "boom"), context)
        #expect(error.kind == kind)
        #expect(error.message.contains(phrase), "\(error.message)")
        #expect(!error.message.contains("\n"))
    }

    @Test func readsATTErrorCodes() {
        let error = BlueZFailure.translate(
            DBusError(name: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0x80"), Self.context)
        #expect(error.kind == .attError(0x80))
        #expect(error.message.hasPrefix("writing to 6e400003: the device answered with an error"))
    }

    @Test func failuresWhileConnectingAreConnectionFailures() {
        var context = Self.context
        context.isConnecting = true
        let error = BlueZFailure.translate(
            DBusError(name: "org.bluez.Error.Failed", message: "le-connection-abort-by-local"), context)
        #expect(error.kind == .connectionFailed)
        #expect(error.message.contains("is the device powered, advertising and in range?"))
    }

    @Test func cancellationAndTransportErrorsPassThrough() {
        #expect(BlueZFailure.translate(CancellationError(), Self.context).message == "writing to 6e400003: cancelled")
        let original = TransportError(.notPermitted, "x")
        #expect(BlueZFailure.translate(original, Self.context) == original)
        #expect(
            BlueZFailure.translate(DBusError.connectionLost, Self.context).kind
                == .disconnected(DisconnectReason("the D-Bus connection to bluetoothd was lost")))
    }
}
#endif
