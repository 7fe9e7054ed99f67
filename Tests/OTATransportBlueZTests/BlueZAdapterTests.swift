#if os(Linux)
import OTACore
import Testing

@testable import OTATransportBlueZ

/// Choosing an adapter, and the one-line errors when there is none to use.
@Suite(.needsLibDBus) struct BlueZAdapterTests {
    static func adapter(_ name: String, powered: Bool, state: String? = nil) -> BlueZAdapter {
        let number = name.dropFirst(3)
        return BlueZAdapter(
            name: name, path: DBusObjectPath("/org/bluez/\(name)")!, address: "00:AA:01:0\(number):00:00",
            isPowered: powered,
            powerState: state)
    }

    @Test func picksTheFirstPoweredAdapterOrTheNamedOne() throws {
        let adapters = [
            Self.adapter("hci10", powered: true), Self.adapter("hci2", powered: true),
            Self.adapter("hci0", powered: false),
        ]
        #expect(try BlueZAdapter.select(nil, from: adapters).name == "hci2")
        #expect(try BlueZAdapter.select("hci10", from: adapters).name == "hci10")
        #expect(try BlueZAdapter.select("00:aa:01:02:00:00", from: adapters).name == "hci2")
    }

    @Test func explainsWhatIsWrong() {
        func message(_ name: String?, _ adapters: [BlueZAdapter]) -> String? {
            do {
                _ = try BlueZAdapter.select(name, from: adapters)
                return nil
            } catch {
                #expect(error.kind == .connectionFailed)
                return error.message
            }
        }
        #expect(message(nil, [])?.hasPrefix("no Bluetooth adapter: bluetoothd runs but sees no controller") == true)
        #expect(
            message(nil, [Self.adapter("hci0", powered: false)]) == "hci0 is powered off: run 'bluetoothctl power on'")
        #expect(
            message("hci0", [Self.adapter("hci0", powered: false)])
                == "hci0 is powered off: run 'bluetoothctl power on'")
        #expect(
            message("hci1", [Self.adapter("hci0", powered: true), Self.adapter("hci1", powered: false)])
                == "hci1 is powered off: run 'bluetoothctl' and enter 'select 00:AA:01:01:00:00' then 'power on'")
        #expect(
            message(nil, [Self.adapter("hci0", powered: false, state: "off-blocked")])
                == "hci0 is blocked by rfkill: run 'rfkill unblock bluetooth', then 'bluetoothctl power on'")
        #expect(
            message("hci7", [Self.adapter("hci0", powered: true), Self.adapter("hci1", powered: true)])
                == "no Bluetooth adapter named 'hci7' (adapters: hci0, hci1); list them with 'bluetoothctl list'")
    }

    @Test func listsAdaptersFromBlueZ() async throws {
        var script = FakeBlueZ.Script()
        script.adapters = [("hci1", "00:AA:01:01:00:01", false), ("hci0", "00:AA:01:00:00:00", true)]
        try await FakeBlueZ.with(script) { bus, _ in
            let adapters = try await BlueZAdapter.list(bus: .address(bus.address))
            #expect(adapters.map(\.name) == ["hci0", "hci1"])
            #expect(adapters.map(\.isPowered) == [true, false])
            #expect(adapters[0].alias == "fake-hci0")
            #expect(try await BlueZAdapter.select(bus: .address(bus.address)).name == "hci0")
            await #expect(
                throws: TransportError(
                    .connectionFailed,
                    "hci1 is powered off: run 'bluetoothctl' and enter 'select 00:AA:01:01:00:01' then 'power on'")
            ) {
                _ = try await BlueZAdapter.select("hci1", bus: .address(bus.address))
            }
        }
    }

    @Test func saysWhenBluetoothdIsNotRunning() async throws {
        try await PrivateBus.with { bus in
            let error = await #expect(throws: TransportError.self) {
                _ = try await BlueZAdapter.list(bus: .address(bus.address))
            }
            #expect(error?.kind == .connectionFailed)
            #expect(
                error?.message
                    == "bluetoothd is not running (org.bluez is not on the D-Bus bus at \(bus.address)): start it with 'systemctl start bluetooth'"
            )
        }
    }

    @Test func saysWhenTheBusIsUnreachable() async {
        let error = await #expect(throws: TransportError.self) {
            _ = try await BlueZAdapter.list(bus: .address("unix:path=/nonexistent/ota-test-bus"))
        }
        #expect(error?.kind == .connectionFailed)
        #expect(error?.message.hasPrefix("cannot reach the D-Bus bus at unix:path=/nonexistent/ota-test-bus (") == true)
        #expect(error?.message.hasSuffix("is dbus running? Check with 'systemctl status dbus'") == true)
    }
}
#endif
