import Foundation
import OTACore
import Synchronization

/// A lease clock moved by hand, or by the waits made on it (each moves it on at once): leases
/// expire without the test sleeping.
final class ManualLeaseClock: CampaignLeaseClock {
    private let start = Date(timeIntervalSince1970: 1_800_000_000)
    private let offset = Mutex<Double>(0)

    var now: Date { start.addingTimeInterval(offset.withLock { $0 }) }

    /// Seconds moved on since it was made.
    var elapsed: Double { offset.withLock { $0 } }

    func advance(_ seconds: Double) { offset.withLock { $0 += seconds } }

    func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        advance(duration.seconds)
        await Task.yield()
    }
}
