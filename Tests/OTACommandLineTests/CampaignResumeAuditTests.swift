import Foundation
import OTACore
import OTATestSupport
import Testing

/// The audit the kill tests rely on: a device that resumed passes, one that restarted from byte 0
/// after receiving more than a window is caught.
@Suite struct CampaignResumeAuditTests {
    static let t0 = Date(timeIntervalSince1970: 1_000)

    static func history(resumedFrom: Int) -> [CampaignHistoryEntry] {
        [
            CampaignHistoryEntry(at: t0, device: "clean", event: "completed", attempt: 1, detail: "65536 bytes sent from byte 0 in 1.0 s"),
            CampaignHistoryEntry(at: t0, device: "cut", event: "retry", attempt: 1, detail: CampaignRunner.stoppedDuringAttempt),
            CampaignHistoryEntry(
                at: t0, device: "cut", event: "completed", attempt: 2, detail: "\(65536 - resumedFrom) bytes sent from byte \(resumedFrom) in 0.5 s"),
        ]
    }

    @Test("a device cut off at 40,000 bytes: resuming from 38,000 re-sends 2,000 (within a window); restarting from 0 re-sends 40,000 and is caught")
    func resumedAndRestarted() {
        let clean = 66_000
        // Resumed: it received 40,000 before the cut and 66,000 − 38,000 after.
        let resumed = CampaignResumeAudit(history: Self.history(resumedFrom: 38_000), window: 11_712) { $0 == "cut" ? 40_000 + clean - 38_000 : clean }
        #expect(resumed.devices.map(\.resent) == [2_000])
        #expect(resumed.overWindow.isEmpty && resumed.beyondWindowBeforeLast == 1)
        // Restarted: it received 40,000 before the cut and the whole image after.
        let restarted = CampaignResumeAudit(history: Self.history(resumedFrom: 0), window: 11_712) { $0 == "cut" ? 40_000 + clean : clean }
        #expect(restarted.devices.map(\.resent) == [40_000])
        #expect(restarted.overWindow.count == 1)
        // Cut off within its first window, a restart cannot be told from a resume: the tests
        // require a device cut off past a window.
        let early = CampaignResumeAudit(history: Self.history(resumedFrom: 0), window: 11_712) { $0 == "cut" ? 5_000 + clean : clean }
        #expect(early.overWindow.isEmpty && early.beyondWindowBeforeLast == 0)
    }
}
