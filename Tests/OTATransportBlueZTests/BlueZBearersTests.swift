#if os(Linux)
import Foundation
import OTACore
import Testing

@testable import OTATransportBlueZ

/// Whether writes without response may be reordered (EATT), decided without a stack; and the
/// connector's fallback to write requests, against a scripted org.bluez.
struct BlueZBearersTests {
    // MARK: - bluetoothd's [GATT] Channels

    @Test func readsChannelsFromTheGATTGroupOnly() {
        let text = """
            # Channels = 1 in a comment does not count
            [General]
            Channels = 1
            [GATT]
            #Channels = 3
            Cache = always
              Channels =  2
            [AVDTP]
            Channels = 4
            """
        #expect(BluetoothdGATTSettings.channels(inConfiguration: text) == 2)
        #expect(BluetoothdGATTSettings.channels(inConfiguration: "[GATT]\n#Channels = 3\n") == nil)
        #expect(BluetoothdGATTSettings.channels(inConfiguration: "[GATT]\nChannels = many\n") == nil)
        // Clamped as bluetoothd's parse_config does; the last occurrence wins.
        #expect(BluetoothdGATTSettings.channels(inConfiguration: "[GATT]\nChannels = 9\n") == 5)
        #expect(BluetoothdGATTSettings.channels(inConfiguration: "[GATT]\nChannels = 0\n") == 1)
        #expect(BluetoothdGATTSettings.channels(inConfiguration: "[GATT]\nChannels = 3\nChannels = 1\n") == 1)
    }

    @Test func theDefaultDependsOnTheVersion() {
        #expect(BluetoothdGATTSettings.defaultChannels(forVersion: "5.66") == 3)
        #expect(BluetoothdGATTSettings.defaultChannels(forVersion: "5.55") == 3)
        #expect(BluetoothdGATTSettings.defaultChannels(forVersion: "5.67") == 1)
        #expect(BluetoothdGATTSettings.defaultChannels(forVersion: "5.72") == 1)
        #expect(BluetoothdGATTSettings.defaultChannels(forVersion: "6.0") == 1)
        #expect(BluetoothdGATTSettings.defaultChannels(forVersion: "five") == nil)
    }

    @Test func settlesFromTheFileThenTheVersionThenAssumes() {
        let path = "/etc/bluetooth/main.conf"
        let set = BluetoothdGATTSettings.settle(configuration: "[GATT]\nChannels = 1\n", path: path, version: "5.66")
        #expect(set == .init(channels: 1, source: .file(path)))
        #expect(!set.isEATTEnabled)
        #expect(set.description == "Channels = 1 (/etc/bluetooth/main.conf)")

        let unset = BluetoothdGATTSettings.settle(configuration: "[GATT]\n", path: path, version: "5.66")
        #expect(unset.channels == 3 && unset.isEATTEnabled)
        #expect(unset.description == "Channels = 3 (bluetoothd 5.66's default; /etc/bluetooth/main.conf does not set it)")

        let newer = BluetoothdGATTSettings.settle(configuration: nil, path: path, version: "5.72")
        #expect(newer.channels == 1)
        #expect(newer.description == "Channels = 1 (bluetoothd 5.72's default)")

        let unknown = BluetoothdGATTSettings.settle(configuration: nil, path: path, version: nil)
        #expect(unknown.channels == 3)
        #expect(
            unknown.description
                == "Channels = 3 assumed (BlueZ 5.66's default; /etc/bluetooth/main.conf cannot be read, bluetoothd's version unknown)")
    }

    @Test func findsTheConfigurationFileOnTheCommandLine() {
        let path = BluetoothdGATTSettings.configurationPath
        #expect(path(["-n"]) == "/etc/bluetooth/main.conf")
        #expect(path(["-n", "-f", "/run/bluetooth-main.conf"]) == "/run/bluetooth-main.conf")
        #expect(path(["-f/tmp/a.conf", "-d"]) == "/tmp/a.conf")
        #expect(path(["--configfile=/tmp/b.conf"]) == "/tmp/b.conf")
        #expect(path(["--configfile", "/tmp/c.conf", "-n"]) == "/tmp/c.conf")
        #expect(path(["-f"]) == "/etc/bluetooth/main.conf")
    }

    @Test func readsTheRunningBluetoothdFromProc() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ota-proc-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        for (pid, name, line) in [
            ("17", "dbus-daemon", "dbus-daemon\0--system\0"), ("42", "bluetoothd", "/usr/libexec/bluetooth/bluetoothd\0-n\0-f\0\(root.path)/main.conf\0"),
        ] {
            let directory = root.appendingPathComponent(pid)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data("\(name)\n".utf8).write(to: directory.appendingPathComponent("comm"))
            try Data(line.utf8).write(to: directory.appendingPathComponent("cmdline"))
        }
        try Data("[GATT]\nChannels = 1\n".utf8).write(to: root.appendingPathComponent("main.conf"))
        #expect(
            BluetoothdGATTSettings.bluetoothdCommandLine(processes: root.path) == ["-n", "-f", "\(root.path)/main.conf"])
        let settings = await BluetoothdGATTSettings.current(version: "5.66", processes: root.path)
        #expect(settings == .init(channels: 1, source: .file("\(root.path)/main.conf")))
    }

    // MARK: - The decision

    @Test func severalBearersNeedEATTOnBothSides() {
        let three = BluetoothdGATTSettings(channels: 3, source: .versionDefault(file: nil, version: "5.66"))
        let one = BluetoothdGATTSettings(channels: 1, source: .file("/etc/bluetooth/main.conf"))

        let both = BlueZBearerAssessment(settings: three, peer: .supported)
        #expect(both.mayReorder)
        #expect(
            both.reason
                == "EATT: bluetoothd opens up to 3 ATT bearers (Channels = 3 (bluetoothd 5.66's default)) and the device offers EATT, so BlueZ hands consecutive write commands to whichever bearer is free and they can arrive out of order"
        )
        let unknown = BlueZBearerAssessment(settings: three, peer: .unknown("the read timed out"))
        #expect(unknown.mayReorder)
        #expect(unknown.reason.contains("whether the device offers EATT is unknown (the read timed out)"))

        let peerless = BlueZBearerAssessment(settings: three, peer: .notSupported("it has no Server Supported Features characteristic"))
        #expect(!peerless.mayReorder)
        #expect(peerless.reason == "one ATT bearer: the device does not offer EATT (it has no Server Supported Features characteristic)")

        let single = BlueZBearerAssessment(settings: one, peer: .supported)
        #expect(!single.mayReorder)
        #expect(single.reason == "one ATT bearer: bluetoothd runs with Channels = 1 (/etc/bluetooth/main.conf)")
    }

    @Test func theEATTBitOfServerSupportedFeatures() {
        #expect(PeerEATTSupport(serverSupportedFeatures: Data([0x01])) == .supported)
        #expect(PeerEATTSupport(serverSupportedFeatures: Data([0x03, 0x00])) == .supported)
        #expect(
            PeerEATTSupport(serverSupportedFeatures: Data([0x00]))
                == .notSupported("its Server Supported Features (0x00) lack the EATT bit"))
        #expect(PeerEATTSupport(serverSupportedFeatures: Data()) == .notSupported("its Server Supported Features value is empty"))
    }
}

/// The connector's choice of write path from the assessment, against a scripted org.bluez.
@Suite(.needsLibDBus) struct BlueZOrderedWritesTests {
    static let eatt = BluetoothdGATTSettings(channels: 3, source: .versionDefault(file: nil, version: "5.66"))

    @Test func writesWithoutResponseBecomeRequestsWhenEATTMayReorderThem() async throws {
        var script = FakeBlueZ.Script()
        script.serverSupportedFeatures = [0x01]
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus) { $0.bluetoothdSettings = Self.eatt }.connectTransport()
            guard case .writeRequest(let reason) = transport.writePaths[FakeBlueZ.data] else {
                Issue.record("expected write requests, got \(String(describing: transport.writePaths))")
                return
            }
            #expect(reason.hasPrefix("EATT: bluetoothd opens up to 3 ATT bearers"))
            #expect(transport.link.summary?.contains("writes without response sent as write requests, one at a time") == true)
            #expect(fake.calls == ["Device1.Connect", "GattCharacteristic1.ReadValue"])  // no AcquireWrite

            try await transport.write(Data([1, 2]), to: FakeBlueZ.data, kind: .withoutResponse)
            try await transport.write(Data([3]), to: FakeBlueZ.data, kind: .withoutResponse)
            #expect(
                fake.writes == [
                    FakeBlueZ.Write(path: FakeBlueZ.dataPath, value: [1, 2], type: "request"),
                    FakeBlueZ.Write(path: FakeBlueZ.dataPath, value: [3], type: "request"),
                ])
            #expect(transport.statistics.orderedWrites == 2)
            #expect(transport.statistics.socketWrites == 0)
            await transport.disconnect()
        }
    }

    @Test func aDeviceWithoutEATTKeepsTheSocket() async throws {
        for features in [nil, [0x00] as [UInt8]] {
            var script = FakeBlueZ.Script()
            script.serverSupportedFeatures = features
            try await FakeBlueZ.with(script) { bus, _ in
                let transport = try await FakeBlueZ.connector(on: bus) { $0.bluetoothdSettings = Self.eatt }.connectTransport()
                #expect(transport.writePaths == [FakeBlueZ.data: .acquiredSocket(mtu: 517)])
                await transport.disconnect()
            }
        }
    }

    @Test func oneChannelKeepsTheSocketWithoutAskingTheDevice() async throws {
        var script = FakeBlueZ.Script()
        script.serverSupportedFeatures = [0x01]
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus) {
                $0.bluetoothdSettings = BluetoothdGATTSettings(channels: 1, source: .file("/run/bluetooth-main.conf"))
            }.connectTransport()
            #expect(transport.writePaths == [FakeBlueZ.data: .acquiredSocket(mtu: 517)])
            #expect(!fake.calls.contains("GattCharacteristic1.ReadValue"))
            await transport.disconnect()
        }
    }

    @Test func commandsCanBeKeptWithAWarning() async throws {
        var script = FakeBlueZ.Script()
        script.serverSupportedFeatures = [0x01]
        script.receiptDescriptor = .answers
        try await FakeBlueZ.with(script) { bus, _ in
            let transport = try await FakeBlueZ.connector(on: bus) {
                $0.bluetoothdSettings = Self.eatt
                $0.writeOrdering = .commands
            }.connectTransport()
            #expect(transport.writePaths == [FakeBlueZ.data: .acquiredSocket(mtu: 517)])
            #expect(transport.link.summary?.contains("write commands kept although they can arrive out of order") == true)
            // A receipt on another bearer would prove nothing: none are read.
            #expect(transport.link.summary?.contains("no delivery receipts (several ATT bearers may carry the writes)") == true)
            #expect(transport.statistics.deliveryWindow == nil)
            await transport.disconnect()
        }
    }

    @Test func requestsCanBeAskedForWithoutEATT() async throws {
        try await FakeBlueZ.with { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus) {
                $0.bluetoothdSettings = BluetoothdGATTSettings(channels: 1, source: .file("/etc/bluetooth/main.conf"))
                $0.writeOrdering = .requests
            }.connectTransport()
            #expect(transport.writePaths == [FakeBlueZ.data: .writeRequest(reason: "write requests were asked for")])
            try await transport.write(Data([9]), to: FakeBlueZ.data, kind: .withoutResponse)
            #expect(fake.writes == [FakeBlueZ.Write(path: FakeBlueZ.dataPath, value: [9], type: "request")])
            await transport.disconnect()
        }
    }

    @Test func aRefusedRequestSaysWhyItWasARequest() {
        let refused = BlueZTransport.orderedWriteFailure(
            TransportError(.attError(0x06), "the device answered with ATT error 0x06, request not supported"), to: FakeBlueZ.data)
        #expect(refused.kind == .attError(0x06))
        #expect(refused.message.contains("a write request sent in place of a write without response"))
        #expect(refused.message.contains("set Channels = 1 in [GATT] of bluetoothd's main.conf"))
        let lost = TransportError.disconnected(DisconnectReason("gone"))
        #expect(BlueZTransport.orderedWriteFailure(lost, to: FakeBlueZ.data) == lost)
    }
}
#endif
