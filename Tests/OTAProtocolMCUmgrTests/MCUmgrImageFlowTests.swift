import Foundation
import OTACore
import Testing

@testable import OTAProtocolMCUmgr

@Suite struct MCUmgrImageFlowTests {
    static let new = Data(repeating: 0xAB, count: 32)
    static let old = Data(repeating: 0x01, count: 32)

    static func flow(_ mode: MCUmgrUpdateMode, reset: Bool = false) -> MCUmgrImageFlow {
        var flow = MCUmgrImageFlow(mode: mode, hash: new, version: "2.0.0")
        flow.resetIssued = reset
        return flow
    }

    static func state(_ slots: ImageSlotState...) -> ImageStateResponse { ImageStateResponse(images: slots) }
    static let factory = ImageSlotState(slot: 0, version: "1.0.0", hash: old, confirmed: true, active: true)

    @Test func nothingInSlotOneMeansUpload() {
        for mode in MCUmgrUpdateMode.allCases {
            guard case .upload = Self.flow(mode).next(after: Self.state(Self.factory)) else { Issue.record("\(mode)"); continue }
        }
    }

    @Test func anUploadedImageIsMarkedAsTheModeSays() {
        let uploaded = Self.state(Self.factory, ImageSlotState(slot: 1, version: "2.0.0", hash: Self.new))
        guard case .done = Self.flow(.upload).next(after: uploaded) else { Issue.record("upload ends there"); return }
        guard case .mark(confirm: false) = Self.flow(.test).next(after: uploaded) else { Issue.record("test marks for a test boot"); return }
        guard case .mark(confirm: true) = Self.flow(.confirm).next(after: uploaded) else { Issue.record("confirm marks permanent"); return }
    }

    @Test func aPendingImageIsReset() {
        let pending = Self.state(Self.factory, ImageSlotState(slot: 1, version: "2.0.0", hash: Self.new, pending: true))
        guard case .reset = Self.flow(.test).next(after: pending) else { Issue.record("reset"); return }
        guard case .reset = Self.flow(.test, reset: true).next(after: pending) else { Issue.record("reset again"); return }
    }

    @Test func aTestBootIsConfirmedAndAConfirmedImageIsDone() {
        let testing = Self.state(
            ImageSlotState(slot: 0, version: "2.0.0", hash: Self.new, active: true), ImageSlotState(slot: 1, version: "1.0.0", hash: Self.old, confirmed: true))
        guard case .confirmRunning = Self.flow(.test, reset: true).next(after: testing) else { Issue.record("confirm"); return }
        let confirmed = Self.state(ImageSlotState(slot: 0, version: "2.0.0", hash: Self.new, confirmed: true, active: true))
        guard case .done = Self.flow(.confirm, reset: true).next(after: confirmed) else { Issue.record("done"); return }
    }

    @Test func aRevertAfterTheResetFailsNamingTheSlots() {
        let reverted = Self.state(Self.factory, ImageSlotState(slot: 1, version: "2.0.0", hash: Self.new))
        guard case .fail(let error) = Self.flow(.test, reset: true).next(after: reverted) else { Issue.record("must fail"); return }
        #expect(error.code == .verificationFailed)
        #expect(error.message.contains("slot 0: 1.0.0 (01010101…) active, confirmed; slot 1: 2.0.0 (abababab…) no flags"))
        #expect(error.message.contains("reverted"))
        #expect(!error.message.contains("\n"))
    }

    @Test func checksAfterEachStepNameWhatIsWrong() {
        let flow = Self.flow(.test)
        let other = Self.state(Self.factory, ImageSlotState(slot: 1, version: "3.0.0", hash: Self.old))
        #expect(flow.verifyUploaded(other)?.message.contains("slot 1 holds hash 0101010101010101…, not this image's abababababababab…") == true)
        #expect(flow.verifyUploaded(Self.state(Self.factory))?.code == .verificationFailed)
        let notPending = Self.state(Self.factory, ImageSlotState(slot: 1, version: "2.0.0", hash: Self.new))
        #expect(flow.verifyMarked(notPending, confirm: false) != nil)
        let pending = Self.state(Self.factory, ImageSlotState(slot: 1, version: "2.0.0", hash: Self.new, pending: true))
        #expect(flow.verifyMarked(pending, confirm: false) == nil)
        #expect(flow.verifyMarked(pending, confirm: true) != nil)
    }
}
