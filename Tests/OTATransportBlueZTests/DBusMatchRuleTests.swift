#if os(Linux)
import Testing

@testable import OTATransportBlueZ

@Suite(.needsLibDBus) struct DBusMatchRuleTests {
    @Test func printsTheBusSyntax() {
        let rule = DBusMatchRule(
            sender: "org.bluez",
            path: "/org/bluez/hci0/dev_1",
            interface: "org.freedesktop.DBus.Properties",
            member: "PropertiesChanged",
            arguments: [0: "org.bluez.GattCharacteristic1"]
        )
        #expect(
            rule.description == "type='signal',sender='org.bluez',path='/org/bluez/hci0/dev_1',"
                + "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
                + "arg0='org.bluez.GattCharacteristic1'"
        )
        #expect(DBusMatchRule(kind: nil).description == "")
        #expect(DBusMatchRule(arguments: [1: "it's"]).description == #"type='signal',arg1='it'\''s'"#)
    }

    @Test func matchesMessages() {
        let signal = DBusMessage(
            kind: .signal,
            path: "/org/bluez/hci0/dev_1",
            interface: "org.freedesktop.DBus.Properties",
            member: "PropertiesChanged",
            sender: ":1.7",
            arguments: [.string("org.bluez.Device1")]
        )
        #expect(DBusMatchRule().matches(signal))
        #expect(DBusMatchRule(sender: ":1.7", member: "PropertiesChanged").matches(signal))
        #expect(!DBusMatchRule(sender: ":1.8").matches(signal))
        #expect(DBusMatchRule(sender: "org.bluez").matches(signal), "well-known senders are left to the bus")
        #expect(DBusMatchRule(pathNamespace: "/org/bluez").matches(signal))
        #expect(DBusMatchRule(pathNamespace: "/org/bluez/hci0/dev_1").matches(signal))
        #expect(!DBusMatchRule(pathNamespace: "/org/bluez/hci0/dev_10").matches(signal))
        #expect(!DBusMatchRule(path: "/org/bluez").matches(signal))
        #expect(DBusMatchRule(arguments: [0: "org.bluez.Device1"]).matches(signal))
        #expect(!DBusMatchRule(arguments: [0: "org.bluez.Adapter1"]).matches(signal))
        #expect(!DBusMatchRule(arguments: [3: "x"]).matches(signal))
        #expect(!DBusMatchRule(kind: .methodCall).matches(signal))
        #expect(!DBusMatchRule(interface: "org.bluez.Device1").matches(signal))
    }
}
#endif
