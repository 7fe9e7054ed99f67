#if os(Linux)
import Foundation
import Testing

@testable import OTATransportBlueZ

/// A measurement, not a check: the CPU this process spends on `OTA_DBUS_CALL_BENCH` sequential
/// calls between two connections on a private bus (both ends are this process's code).
///
/// ```sh
/// OTA_DBUS_CALL_BENCH=20000 [OTA_DBUS_CALL_BENCH_BYTES=20] swift test --skip-build --filter DBusCallCPUBenchmark
/// ```
@Suite(.needsLibDBus) struct DBusCallCPUBenchmark {
    static let calls = ProcessInfo.processInfo.environment["OTA_DBUS_CALL_BENCH"].flatMap { Int($0) }

    @Test(.enabled(if: calls != nil)) func sequentialCallsCPU() async throws {
        let count = Self.calls ?? 0
        try await PrivateBus.withServerAndClient { bus, server, client in
            let size = ProcessInfo.processInfo.environment["OTA_DBUS_CALL_BENCH_BYTES"].flatMap { Int($0) } ?? 20
            let payload = DBusValue.bytes([UInt8](repeating: 7, count: size))
            let start = Self.cpu()
            let clock = ContinuousClock()
            let began = clock.now
            for _ in 0..<count {
                _ = try await client.call(TestService.call("Echo", on: server, [payload]))
            }
            let elapsed = clock.now - began
            let end = Self.cpu()
            let counts = await (client.createdSourceCounts, server.createdSourceCounts)
            print(
                "DBusCallCPUBenchmark: \(count) calls of \(size) bytes in \(elapsed): user \(end.user - start.user) s, "
                    + "sys \(end.system - start.system) s; watch sources client \(counts.0.watches) "
                    + "server \(counts.1.watches), watch updates client \(await client.watchUpdateCount), timer sources client \(counts.0.timers)"
            )
        }
    }

    /// User and system CPU of this process so far, in seconds.
    static func cpu() -> (user: Double, system: Double) {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return (seconds(usage.ru_utime), seconds(usage.ru_stime))
    }
}
#endif
