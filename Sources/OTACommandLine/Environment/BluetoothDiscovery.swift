import Foundation
import OTACore
import OTATransportBlueZ

/// Listens for a real device's advertisement, so the catalog can recognise it.
enum BluetoothDiscovery {
    /// The advertisement of `address`, or `nil` when it was not heard within `duration`.
    static func advertisement(of address: String, adapter: String?, duration: Duration) async throws(OTAError) -> Advertisement? {
        let found = try await scan(adapter: adapter, duration: duration) { $0.address == address }
        return found.first?.advertisement
    }

    /// Everything heard for `duration` (stopping early once `stop` accepts a device).
    static func scan(
        adapter: String?,
        duration: Duration,
        stopWhen stop: @escaping @Sendable (BlueZScanner.Discovery) -> Bool = { _ in false }
    ) async throws(OTAError) -> [BlueZScanner.Discovery] {
        let stream: AsyncThrowingStream<BlueZScanner.Discovery, any Error>
        do {
            stream = try await BlueZScanner(adapter: adapter).discoveries()
        } catch {
            throw OTAError(error.otaCode, error.message, underlying: error)
        }
        do {
            return try await withThrowingTaskGroup(of: [BlueZScanner.Discovery]?.self) { group in
                group.addTask {
                    var heard: [String: BlueZScanner.Discovery] = [:]
                    var order: [String] = []
                    for try await discovery in stream {
                        if heard[discovery.address] == nil { order.append(discovery.address) }
                        heard[discovery.address] = discovery
                        if stop(discovery) { return order.compactMap { heard[$0] }.filter(stop) }
                    }
                    return order.compactMap { heard[$0] }
                }
                group.addTask {
                    try await Task.sleep(for: duration)
                    return nil
                }
                // The scan ends when the time is up (the sleeper returns nil) or a device is found.
                var collected: [BlueZScanner.Discovery] = []
                while let next = try await group.next() {
                    if let list = next {
                        collected = list
                        break
                    }
                    group.cancelAll()
                }
                group.cancelAll()
                return collected
            }
        } catch {
            throw OTAError.wrapping(error, context: "scanning")
        }
    }
}
