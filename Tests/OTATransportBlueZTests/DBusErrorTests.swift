#if os(Linux)
import OTACore
import Testing

@testable import OTATransportBlueZ

@Suite(.needsLibDBus) struct DBusErrorTests {
    @Test func mapsToTransportErrors() {
        func kind(_ name: String, _ message: String = "") -> TransportError.Kind {
            DBusError(name: DBusError.Name(rawValue: name), message: message).transportError.kind
        }
        #expect(kind("org.bluez.Error.NotPermitted") == .notPermitted)
        #expect(kind("org.bluez.Error.NotAuthorized") == .notPermitted)
        #expect(kind("org.bluez.Error.Failed", "Operation failed with ATT error: 0x0e") == .attError(0x0E))
        #expect(kind("org.bluez.Error.Failed", "Software caused connection abort") == .other)
        #expect(kind("org.freedesktop.DBus.Error.ServiceUnknown") == .connectionFailed)
        #expect(kind("org.freedesktop.DBus.Error.UnknownObject") == .connectionFailed)
        #expect(kind("org.bluez.Error.NotReady") == .connectionFailed)
        #expect(kind("org.freedesktop.DBus.Error.NoReply") == .other)
        #expect(kind("org.bluez.Error.NotConnected") == .disconnected(DisconnectReason("the device is not connected")))
        #expect(
            DBusError.connectionClosed.transportError.kind
                == .disconnected(DisconnectReason(DBusError.connectionClosed.message, isLocal: true))
        )
        #expect(
            DBusError.connectionLost.transportError.kind
                == .disconnected(DisconnectReason(DBusError.connectionLost.message, isLocal: false))
        )
    }

    @Test func keepsTheNameAndMessageInTheDescription() {
        let error = DBusError(name: "org.bluez.Error.InProgress", message: "Operation already in progress")
        #expect(error.description == "org.bluez.Error.InProgress: Operation already in progress")
        #expect(error.transportError.message.contains("org.bluez.Error.InProgress: Operation already in progress"))
        #expect(DBusError(name: .failed, message: "").description == "org.freedesktop.DBus.Error.Failed")
        #expect(OTAError.wrapping(error.transportError, context: "write").code == .transport)
    }
}
#endif
