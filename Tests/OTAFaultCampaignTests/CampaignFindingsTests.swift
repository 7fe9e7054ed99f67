import Testing

/// The seeds on which the campaign found a bug, each run on its own: they must complete
/// byte-identically, with no reconnection a fault does not explain. The fix for each is in the
/// protocol, with its own focused test there; docs/fault-campaign.md lists them.
@Suite struct CampaignFindingsTests {
    /// 22: a lost Nordic packet left the client waiting 10 s for a receipt, then reconnecting.
    /// 166, 929: a damaged init packet write failed the Nordic update. 2979: a receipt for a
    /// packet the bootloader refused (`60 03 03`) was taken for the Calculate Checksum answer.
    /// 8702: after such a receipt the client waited 10 s for another, then reconnected.
    @Test(arguments: [22, 166, 929, 2979, 8702] as [UInt64])
    func aSeedThatFoundABugNowCompletes(seed: UInt64) async {
        let plan = FaultPlan.make(seed: seed, protocols: CampaignProtocol.all)
        let result = await CampaignRun.run(plan, verbose: false)
        #expect(result.violations.isEmpty, "\(plan): \(result.violations)")
        #expect(result.outcome == .completed, "\(plan)")
    }
}
