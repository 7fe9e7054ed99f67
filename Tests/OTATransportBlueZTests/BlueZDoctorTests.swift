#if os(Linux)
import Foundation
import OTACore
import Testing

@testable import OTATransportBlueZ

/// What the doctor reports, against a scripted org.bluez and without one.
@Suite(.needsLibDBus) struct BlueZDoctorTests {
    static func controllers(_ names: [String]) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ota-sysfs-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for name in names {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        return directory.path
    }

    @Test func reportsAdaptersAndWhatIsOff() async throws {
        var script = FakeBlueZ.Script()
        script.adapters = [("hci0", "00:AA:01:00:00:00", true), ("hci1", "00:AA:01:01:00:01", false)]
        try await FakeBlueZ.with(script) { bus, _ in
            let sysfs = try Self.controllers(["hci0", "hci1", "hci0:64"])
            defer { try? FileManager.default.removeItem(atPath: sysfs) }
            let report = await BlueZDoctor(
                bus: .address(bus.address), controllerDirectory: sysfs, versionProbe: { "5.66" }
            ).examine()
            #expect(report.isBusReachable)
            #expect(report.isBluetoothdRunning)
            #expect(report.bluezVersion == "5.66")
            #expect(report.kernelControllers == ["hci0", "hci1"])
            #expect(report.adapters.map(\.name) == ["hci0", "hci1"])
            #expect(report.adapters.map(\.address) == ["00:AA:01:00:00:00", "00:AA:01:01:00:01"])
            #expect(report.isReady)
            #expect(
                report.findings == [
                    .init(
                        problem: "hci1 is powered off",
                        fix: "run 'bluetoothctl' and enter 'select 00:AA:01:01:00:01' then 'power on'")
                ])
        }
    }

    @Test func saysBluetoothdIsMissingAndWhy() async throws {
        try await PrivateBus.with { bus in
            let sysfs = try Self.controllers([])
            defer { try? FileManager.default.removeItem(atPath: sysfs) }
            let report = await BlueZDoctor(
                bus: .address(bus.address), controllerDirectory: sysfs, versionProbe: { nil }
            ).examine()
            #expect(report.isBusReachable)
            #expect(!report.isBluetoothdRunning)
            #expect(!report.isReady)
            #expect(
                report.findings.first?.problem
                    == "bluetoothd is not running (org.bluez is not on the D-Bus bus at \(bus.address))")
            #expect(
                report.findings.first?.fix
                    == "install BlueZ ('apt-get install bluez') and start it with 'systemctl start bluetooth'")
            #expect(report.findings.count == 2)
            #expect(report.findings.last?.problem.hasPrefix("the kernel shows no Bluetooth controller") == true)
        }
    }

    @Test func saysWhenTheBusIsUnreachable() async {
        let report = await BlueZDoctor(bus: .address("unix:path=/nonexistent/ota-bus"), versionProbe: { nil }).examine()
        #expect(!report.isBusReachable)
        #expect(report.findings.count == 1)
        #expect(
            report.findings.first?.problem.hasPrefix(
                "the D-Bus bus at unix:path=/nonexistent/ota-bus cannot be reached") == true)
        // The cause once, then one fix: no hint nested inside the problem.
        #expect(
            report.findings.first?.description
                == "the D-Bus bus at unix:path=/nonexistent/ota-bus cannot be reached (Failed to connect to socket /nonexistent/ota-bus: No such file or directory): start D-Bus ('systemctl start dbus'; 'systemctl status dbus' shows why it stopped) or check DBUS_SYSTEM_BUS_ADDRESS"
        )
    }

    @Test func saysWhenThereIsNoAdapter() async throws {
        var script = FakeBlueZ.Script()
        script.adapters = []
        script.deviceKnown = false
        try await FakeBlueZ.with(script) { bus, _ in
            let report = await BlueZDoctor(
                bus: .address(bus.address), controllerDirectory: "/nonexistent", versionProbe: { "5.66" }
            ).examine()
            #expect(report.isBluetoothdRunning)
            #expect(report.kernelControllers == nil)
            #expect(report.findings.map(\.problem) == ["bluetoothd sees no Bluetooth adapter"])
        }
    }

    @Test func saysWhetherEATTIsOnAndWhatItMeansForAConnectedDevice() async throws {
        var script = FakeBlueZ.Script()
        script.serverSupportedFeatures = [0x01]
        try await FakeBlueZ.with(script) { bus, _ in
            let eatt = BluetoothdGATTSettings(
                channels: 3, source: .versionDefault(file: "/etc/bluetooth/main.conf", version: "5.66"))
            let transport = try await FakeBlueZ.connector(on: bus) { $0.bluetoothdSettings = eatt }.connectTransport()
            let sysfs = try Self.controllers(["hci0"])
            defer { try? FileManager.default.removeItem(atPath: sysfs) }
            let report = await BlueZDoctor(
                bus: .address(bus.address), controllerDirectory: sysfs, versionProbe: { "5.66" },
                settingsProbe: { version in
                    #expect(version == "5.66")
                    return eatt
                }
            ).examine()
            #expect(report.gattSettings == eatt)
            #expect(
                report.eattSummary
                    == "EATT on (Channels = 3 (bluetoothd 5.66's default; /etc/bluetooth/main.conf does not set it)): to a device that offers EATT, bluetoothd spreads write commands over up to 3 ATT bearers, which can reorder them; ota then sends writes without response as write requests, one at a time (in order, slower). For full speed set Channels = 1 in [GATT] of /etc/bluetooth/main.conf and restart bluetoothd"
            )
            #expect(report.connectedDevices.map(\.address) == [FakeBlueZ.address])
            #expect(report.connectedDevices.first?.bearers.mayReorder == true)
            await transport.disconnect()
        }
    }

    @Test func saysEATTIsOffWithOneChannel() async throws {
        try await FakeBlueZ.with { bus, _ in
            let sysfs = try Self.controllers(["hci0"])
            defer { try? FileManager.default.removeItem(atPath: sysfs) }
            let report = await BlueZDoctor(
                bus: .address(bus.address), controllerDirectory: sysfs, versionProbe: { "5.66" },
                settingsProbe: { _ in BluetoothdGATTSettings(channels: 1, source: .file("/etc/bluetooth/main.conf")) }
            ).examine()
            #expect(
                report.eattSummary
                    == "EATT off (Channels = 1 (/etc/bluetooth/main.conf)): one ATT bearer per device, so write commands keep their order")
            #expect(report.connectedDevices.isEmpty)
        }
    }

    @Test(
        arguments: [
            ("5.66", "5.66"), ("bluetoothctl: 5.72\n", "5.72"), ("version 5.50 (git)", "5.50"), ("unknown", nil),
        ] as [(String, String?)])
    func parsesVersions(output: String, version: String?) {
        #expect(BlueZDoctor.parseVersion(output) == version)
    }

    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/bluetoothd")
                || FileManager.default.isExecutableFile(atPath: "/usr/bin/bluetoothctl")))
    func findsTheInstalledVersion() async throws {
        let version = try #require(await BlueZDoctor.bluetoothdVersion())
        #expect(version.first?.isNumber == true)
    }
}
#endif
