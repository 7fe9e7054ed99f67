#if os(Linux)
import Foundation
import OTACore
import Testing

@testable import OTATransportBlueZ

/// A measurement, not a check: what the BlueZ transport costs this process's CPU against the
/// fake bluetoothd on a private bus (both ends are this process; the `dbus-daemon` not counted).
///
/// ```sh
/// OTA_BLUEZ_CPU_BENCH=2000 swift test --skip-build --filter BlueZTransportCPUBenchmark
/// ```
@Suite(.needsLibDBus) struct BlueZTransportCPUBenchmark {
    static let count = ProcessInfo.processInfo.environment["OTA_BLUEZ_CPU_BENCH"].flatMap { Int($0) }

    @Test(.enabled(if: count != nil)) func transportCPU() async throws {
        let count = Self.count ?? 0
        try await FakeBlueZ.with { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            let notifications = try await transport.notifications(from: FakeBlueZ.control)
            var iterator = notifications.makeAsyncIterator()
            fake.startReading()
            let clock = ContinuousClock()

            var start = DBusCallCPUBenchmark.cpu()
            try await clock.sleep(for: .seconds(3))
            var end = DBusCallCPUBenchmark.cpu()
            print("BlueZTransportCPUBenchmark: idle 3 s: user \(end.user - start.user) s, sys \(end.system - start.system) s")

            let chunk = Data(repeating: 0x5A, count: 244)
            start = DBusCallCPUBenchmark.cpu()
            var began = clock.now
            for _ in 0..<count {
                try await transport.write(chunk, to: FakeBlueZ.data, kind: .withoutResponse)
            }
            #expect(await eventually { fake.socketBytes == count * chunk.count })
            end = DBusCallCPUBenchmark.cpu()
            print(
                "BlueZTransportCPUBenchmark: \(count) socket writes in \(clock.now - began): user \(end.user - start.user) s, sys \(end.system - start.system) s"
            )

            start = DBusCallCPUBenchmark.cpu()
            began = clock.now
            for _ in 0..<count / 10 {
                try await transport.write(Data([0x01, 0x02]), to: FakeBlueZ.control, kind: .withResponse)
                _ = await iterator.next()
            }
            end = DBusCallCPUBenchmark.cpu()
            print(
                "BlueZTransportCPUBenchmark: \(count / 10) requests + notifications in \(clock.now - began): user \(end.user - start.user) s, sys \(end.system - start.system) s"
            )
            await transport.disconnect()
        }
    }
}
#endif
