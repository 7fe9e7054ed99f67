import Testing

@testable import OTACore

@Suite struct RateEstimatorTests {
    @Test func currentRateFollowsTheLastWindow() {
        var estimator = RateEstimator(window: .seconds(1))
        // 1000 B/s for 3 s, then 4000 B/s for 2 s.
        var bytes = 0
        for tenth in 0...50 {
            estimator.record(bytes: bytes, at: .milliseconds(100 * tenth))
            bytes += tenth < 30 ? 100 : 400
        }
        #expect(abs(estimator.current - 4000) < 1)
        #expect(abs(estimator.average - Double(bytes - 400) / 5) < 1)
    }

    @Test func noRateFromOneSample() {
        var estimator = RateEstimator(window: .seconds(1))
        estimator.record(bytes: 100, at: .zero)
        #expect(estimator.current == 0)
        #expect(estimator.average == 0)
    }
}
