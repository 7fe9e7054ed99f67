#if os(Linux)
import Foundation
import OTACore
import Testing

@testable import OTATransportBlueZ

/// The central against a real bluetoothd, inside the real-stack VM (`Tests/RealStack/run-in-vm.sh`),
/// with a GATT peripheral on hci1 that this repository does not ship: service `6e400001-…`, DATA
/// `6e400002-…` (write without response, counts bytes and writes) and CTRL `6e400003-…` (write +
/// notify: `stats` → JSON counters, `reset` → `reset-ok`, anything else → `echo:` + it). Off unless
/// `OTA_BLUEZ_VM_CENTRAL=1`:
///
/// ```sh
/// swift build --build-tests
/// Tests/RealStack/run-in-vm.sh 'PERIPHERAL hci1 > /tmp/peripheral.log 2>&1 & sleep 3; \
///     OTA_BLUEZ_VM_CENTRAL=1 swift test --skip-build --filter BlueZCentralVMTests'
/// ```
@Suite(.needsLibDBus, .enabled(if: ProcessInfo.processInfo.environment["OTA_BLUEZ_VM_CENTRAL"] == "1"), .serialized)
struct BlueZCentralVMTests {
    static let service = GATTUUID("6e400001-b5a3-f393-e0a9-e50e24dc0001")!
    static let data = CharacteristicID(
        service: service, characteristic: GATTUUID("6e400002-b5a3-f393-e0a9-e50e24dc0001")!)
    static let control = CharacteristicID(
        service: service, characteristic: GATTUUID("6e400003-b5a3-f393-e0a9-e50e24dc0001")!)

    /// Sends a control command and returns the notification that answers it.
    static func request(
        _ command: String,
        over transport: BlueZTransport,
        _ notifications: inout AsyncStream<Data>.Iterator
    ) async throws -> String {
        try await transport.write(Data(command.utf8), to: control, kind: .withResponse)
        return String(decoding: try #require(await notifications.next()), as: UTF8.self)
    }

    /// Writes `count` bytes without response in chunks the link allows, then waits until the
    /// peripheral counted them all.
    static func send(
        _ count: Int, over transport: BlueZTransport, _ notifications: inout AsyncStream<Data>.Iterator
    )
        async throws
    {
        #expect(try await request("reset", over: transport, &notifications) == "reset-ok")
        let payload = (0..<count).map { UInt8(truncatingIfNeeded: $0) }
        let chunk = transport.link.maximumWriteWithoutResponse
        for start in stride(from: 0, to: count, by: chunk) {
            try await transport.write(
                Data(payload[start..<min(start + chunk, count)]), to: data, kind: .withoutResponse)
        }
        let deadline = ContinuousClock.now + .seconds(60)
        var received = 0
        while ContinuousClock.now < deadline {
            let stats = try await request("stats", over: transport, &notifications)
            let object = try JSONSerialization.jsonObject(with: Data(stats.utf8)) as? [String: Any]
            received = object?["bytes"] as? Int ?? -1
            if received >= count { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(received == count)
    }

    @Test func doctorScannerConnectorAndTransportAgainstBluetoothd() async throws {
        let report = await BlueZDoctor().examine()
        print("vm: doctor", report.bluezVersion ?? "-", report.adapters, report.findings)
        #expect(report.isReady)
        #expect(report.findings.isEmpty)
        let adapters = try await BlueZAdapter.list()
        let peripheral = try #require(adapters.first { $0.name == "hci1" })

        // Scan on hci0 for the peripheral's service.
        let clock = ContinuousClock()
        var started = clock.now
        let scanner = BlueZScanner(adapter: "hci0", filter: .init(serviceUUIDs: [Self.service]))
        var discovered: BlueZScanner.Discovery?
        for try await discovery in try await scanner.discoveries() where discovery.address == peripheral.address {
            discovered = discovery
            break
        }
        print(
            "vm: scan found", discovered.map { "\($0.address) \($0.advertisement)" } ?? "nothing", "in",
            clock.now - started)
        #expect(discovered?.advertisement.serviceUUIDs.contains(Self.service) == true)

        // Connect through AcquireWrite.
        started = clock.now
        let transport = try await BlueZConnector(address: peripheral.address, adapter: "hci0").connectTransport()
        print("vm: connected in", clock.now - started, transport.link, transport.writePaths)
        #expect(transport.link.attMTU == 517)
        #expect(transport.link.maximumWriteWithoutResponse == 510)
        #expect(transport.link.maximumWriteWithResponse == 512)
        #expect(transport.writePaths[Self.data] == .acquiredSocket(mtu: 517))
        var notifications = try await transport.notifications(from: Self.control).makeAsyncIterator()
        #expect(try await Self.request("hello-ota", over: transport, &notifications) == "echo:hello-ota")
        started = clock.now
        try await Self.send(200 * 1024, over: transport, &notifications)
        print("vm: 200 KB through AcquireWrite in", clock.now - started, transport.statistics)
        let disconnections = transport.disconnections
        await transport.disconnect()
        var reasons = disconnections.makeAsyncIterator()
        #expect(await reasons.next() == .closedByApp)

        // Again, through WriteValue(command).
        var configuration = BlueZConnector.Configuration()
        configuration.usesAcquireWrite = false
        started = clock.now
        let fallback = try await BlueZConnector(
            address: peripheral.address, adapter: "hci0", configuration: configuration
        )
        .connectTransport()
        print("vm: reconnected in", clock.now - started, fallback.link)
        var again = try await fallback.notifications(from: Self.control).makeAsyncIterator()
        started = clock.now
        try await Self.send(50 * 1024, over: fallback, &again)
        print("vm: 50 KB through WriteValue(command) in", clock.now - started, fallback.statistics)
        await fallback.disconnect()
    }
}
#endif
